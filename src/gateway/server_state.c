/* server_state.c - the names of a gateway connection's states and the moves
 * allowed between them. Pure tables: no I/O here, so the unit tests can pin
 * the machine. A move outside the table is a gateway bug, never peer input. */
#include "log.h"
#include "server_internal.h"

#define TO(s) (1u << (s))

/* allowed[from] is the set of states `from` may move to. Closing the
 * connection is not a state: any state may end in server_conn_close(). */
static const unsigned allowed[GW_CONN_STATES] = {
	/* a failed handshake answers with its alert, then drains */
	[GW_TLS_HANDSHAKE] = TO(GW_READING) | TO(GW_WRITING),
	/* an exec relay's request goes straight to relaying its client */
	[GW_READING] = TO(GW_WRITING) | TO(GW_STREAMING) | TO(GW_SESSION) | TO(GW_PARKED) |
		       TO(GW_RELAYING),
	[GW_STREAMING] = TO(GW_WRITING), /* the last chunk */
	[GW_SESSION] = 0,
	[GW_PARKED] = TO(GW_RELAYING) | TO(GW_WRITING), /* joined, or timed out */
	[GW_RELAYING] = TO(GW_RELAY_ENDING),
	[GW_RELAY_ENDING] = TO(GW_DRAINING),
	[GW_WRITING] = TO(GW_DRAINING),
	/* a flush while draining shuts down and re-arms the drain timer again */
	[GW_DRAINING] = TO(GW_DRAINING),
};

const char *gw_conn_state_name(enum gw_conn_state s)
{
	static const char *const names[GW_CONN_STATES] = {
		[GW_TLS_HANDSHAKE] = "tls_handshake",
		[GW_READING] = "reading",
		[GW_WRITING] = "writing",
		[GW_STREAMING] = "streaming",
		[GW_SESSION] = "session",
		[GW_PARKED] = "parked",
		[GW_RELAYING] = "relaying",
		[GW_RELAY_ENDING] = "relay_ending",
		[GW_DRAINING] = "draining",
	};
	return (unsigned)s < GW_CONN_STATES ? names[s] : "invalid";
}

bool gw_conn_transition_allowed(enum gw_conn_state from, enum gw_conn_state to)
{
	if ((unsigned)from >= GW_CONN_STATES || (unsigned)to >= GW_CONN_STATES)
		return false;
	return (allowed[from] & TO(to)) != 0;
}

void server_conn_set_state(struct conn *c, enum gw_conn_state to)
{
	if (!gw_conn_transition_allowed(c->state, to))
		/* Logged loudly but still taken: aborting would drop every other
		 * connection; the error line is what shows the bug. */
		log_error("gateway: fd %d: unexpected state change %s -> %s", c->fd,
			  gw_conn_state_name(c->state), gw_conn_state_name(to));
	else
		log_debug("gateway: fd %d: %s -> %s", c->fd, gw_conn_state_name(c->state),
			  gw_conn_state_name(to));
	c->state = to;
}
