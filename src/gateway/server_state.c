/* server_state.c - the names of a gateway connection's states and the moves
 * allowed between them (checked by fsm.c). Pure tables: no I/O here, so the
 * unit tests can pin the machine. */
#include "fsm.h"
#include "server_internal.h"

/* allowed[from] is the set of states `from` may move to. Closing the
 * connection is not a state: any state may end in server_conn_close(). */
static const unsigned allowed[GW_CONN_STATES] = {
	/* a failed handshake answers with its alert, then drains */
	[GW_TLS_HANDSHAKE] = FSM_TO(GW_READING) | FSM_TO(GW_WRITING),
	/* an exec relay's request goes straight to relaying its client */
	[GW_READING] = FSM_TO(GW_WRITING) | FSM_TO(GW_STREAMING) | FSM_TO(GW_SESSION) |
		       FSM_TO(GW_PARKED) | FSM_TO(GW_RELAYING),
	[GW_STREAMING] = FSM_TO(GW_WRITING), /* the last chunk */
	[GW_SESSION] = 0,
	[GW_PARKED] = FSM_TO(GW_RELAYING) | FSM_TO(GW_WRITING), /* joined, or timed out */
	[GW_RELAYING] = FSM_TO(GW_RELAY_ENDING),
	[GW_RELAY_ENDING] = FSM_TO(GW_DRAINING),
	[GW_WRITING] = FSM_TO(GW_DRAINING),
	/* a flush while draining shuts down and re-arms the drain timer again */
	[GW_DRAINING] = FSM_TO(GW_DRAINING),
};

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

static const struct fsm machine = { "gateway", GW_CONN_STATES, names, allowed };

const char *gw_conn_state_name(enum gw_conn_state s)
{
	return fsm_name(&machine, (unsigned)s);
}

bool gw_conn_transition_allowed(enum gw_conn_state from, enum gw_conn_state to)
{
	return fsm_allowed(&machine, (unsigned)from, (unsigned)to);
}

void server_conn_set_state(struct conn *c, enum gw_conn_state to)
{
	fsm_log_move(&machine, (unsigned)c->state, (unsigned)to, c->fd);
	c->state = to;
}
