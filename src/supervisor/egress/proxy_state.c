/* proxy_state.c - the names of a proxy connection's states and the moves
 * allowed between them (checked by fsm.c). Pure tables: no I/O here, so the
 * unit tests can pin the machine. */
#include "fsm.h"
#include "proxy_internal.h"

/* allowed[from] is the set of states `from` may move to. Every state but a
 * tunnel may end with an error answer (ST_CLOSING): a tunnel is opaque, so it
 * is only ever closed. */
static const unsigned allowed[PROXY_CONN_STATES] = {
	[ST_READ_HEAD] = FSM_TO(ST_RESOLVE) | FSM_TO(ST_TLS_CLIENT) | FSM_TO(ST_FORWARD) |
			 FSM_TO(ST_CLOSING),
	/* ST_TLS_CLIENT: a transparent TLS connection refused after DNS is
	 * answered inside our TLS (proxy_transparent.c). */
	[ST_RESOLVE] = FSM_TO(ST_CONNECT_UPSTREAM) | FSM_TO(ST_TLS_CLIENT) | FSM_TO(ST_CLOSING),
	/* ST_CONNECT_UPSTREAM again: the next resolved address is tried. */
	[ST_CONNECT_UPSTREAM] = FSM_TO(ST_CONNECT_UPSTREAM) | FSM_TO(ST_TLS_CLIENT) |
				FSM_TO(ST_TLS_UPSTREAM) | FSM_TO(ST_TUNNEL) | FSM_TO(ST_FORWARD) |
				FSM_TO(ST_CLOSING),
	[ST_TLS_CLIENT] = FSM_TO(ST_TLS_UPSTREAM) | FSM_TO(ST_READ_HEAD) | FSM_TO(ST_CLOSING),
	[ST_TLS_UPSTREAM] = FSM_TO(ST_READ_HEAD) | FSM_TO(ST_FORWARD) | FSM_TO(ST_CLOSING),
	[ST_TUNNEL] = 0,
	[ST_FORWARD] = FSM_TO(ST_READ_HEAD) | FSM_TO(ST_WEBSOCKET) | FSM_TO(ST_CLOSING),
	/* An upgraded connection stays one until it closes. */
	[ST_WEBSOCKET] = FSM_TO(ST_CLOSING),
	/* A second error answer replaces the first. */
	[ST_CLOSING] = FSM_TO(ST_CLOSING),
};

static const char *const names[PROXY_CONN_STATES] = {
	[ST_READ_HEAD] = "read_head",
	[ST_RESOLVE] = "resolve",
	[ST_CONNECT_UPSTREAM] = "connect_upstream",
	[ST_TLS_CLIENT] = "tls_client",
	[ST_TLS_UPSTREAM] = "tls_upstream",
	[ST_TUNNEL] = "tunnel",
	[ST_FORWARD] = "forward",
	[ST_WEBSOCKET] = "websocket",
	[ST_CLOSING] = "closing",
};

static const struct fsm machine = { "proxy", PROXY_CONN_STATES, names, allowed };

const char *proxy_conn_state_name(enum proxy_conn_state s)
{
	return fsm_name(&machine, (unsigned)s);
}

bool proxy_conn_transition_allowed(enum proxy_conn_state from, enum proxy_conn_state to)
{
	return fsm_allowed(&machine, (unsigned)from, (unsigned)to);
}

void conn_set_state(struct conn *c, enum proxy_conn_state to)
{
	fsm_log_move(&machine, (unsigned)c->state, (unsigned)to, c->client.fd);
	c->state = to;
}
