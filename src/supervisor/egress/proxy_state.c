/* proxy_state.c - the names of a proxy connection's states and the moves
 * allowed between them. Pure tables: no I/O here, so the unit tests can pin
 * the machine. A move outside the table is a proxy bug, never peer input. */
#include "log.h"
#include "proxy_internal.h"

#define TO(s) (1u << (s))

/* allowed[from] is the set of states `from` may move to. Every state but a
 * tunnel may end with an error answer (ST_CLOSING): a tunnel is opaque, so it
 * is only ever closed. */
static const unsigned allowed[PROXY_CONN_STATES] = {
	[ST_READ_HEAD] = TO(ST_RESOLVE) | TO(ST_TLS_CLIENT) | TO(ST_FORWARD) | TO(ST_CLOSING),
	[ST_RESOLVE] = TO(ST_CONNECT_UPSTREAM) | TO(ST_CLOSING),
	/* ST_CONNECT_UPSTREAM again: the next resolved address is tried. */
	[ST_CONNECT_UPSTREAM] = TO(ST_CONNECT_UPSTREAM) | TO(ST_TLS_CLIENT) | TO(ST_TLS_UPSTREAM) |
				TO(ST_TUNNEL) | TO(ST_FORWARD) | TO(ST_CLOSING),
	[ST_TLS_CLIENT] = TO(ST_TLS_UPSTREAM) | TO(ST_READ_HEAD) | TO(ST_CLOSING),
	[ST_TLS_UPSTREAM] = TO(ST_READ_HEAD) | TO(ST_FORWARD) | TO(ST_CLOSING),
	[ST_TUNNEL] = 0,
	[ST_FORWARD] = TO(ST_READ_HEAD) | TO(ST_CLOSING),
	/* A second error answer replaces the first. */
	[ST_CLOSING] = TO(ST_CLOSING),
};

const char *proxy_conn_state_name(enum proxy_conn_state s)
{
	static const char *const names[PROXY_CONN_STATES] = {
		[ST_READ_HEAD] = "read_head",
		[ST_RESOLVE] = "resolve",
		[ST_CONNECT_UPSTREAM] = "connect_upstream",
		[ST_TLS_CLIENT] = "tls_client",
		[ST_TLS_UPSTREAM] = "tls_upstream",
		[ST_TUNNEL] = "tunnel",
		[ST_FORWARD] = "forward",
		[ST_CLOSING] = "closing",
	};
	return (unsigned)s < PROXY_CONN_STATES ? names[s] : "invalid";
}

bool proxy_conn_transition_allowed(enum proxy_conn_state from, enum proxy_conn_state to)
{
	if ((unsigned)from >= PROXY_CONN_STATES || (unsigned)to >= PROXY_CONN_STATES)
		return false;
	return (allowed[from] & TO(to)) != 0;
}

void conn_set_state(struct conn *c, enum proxy_conn_state to)
{
	if (!proxy_conn_transition_allowed(c->state, to))
		/* Logged loudly but still taken: aborting would drop every other
		 * connection of the sandbox, and the tests look for this line. */
		log_error("proxy: fd %d: unexpected state change %s -> %s", c->client.fd,
			  proxy_conn_state_name(c->state), proxy_conn_state_name(to));
	else
		log_debug("proxy: fd %d: %s -> %s", c->client.fd, proxy_conn_state_name(c->state),
			  proxy_conn_state_name(to));
	c->state = to;
}
