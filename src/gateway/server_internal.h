/* server_internal.h - the gateway server's connection, shared by its files:
 * server.c (listeners), server_conn.c (the per-connection state machine and
 * its I/O), server_respond.c (requests, answers, streams), server_state.c
 * (state names and allowed transitions). Nothing outside server*.c sees it. */
#ifndef OS_GATEWAY_SERVER_INTERNAL_H
#define OS_GATEWAY_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "gateway.h"
#include "http.h"
#include "tls.h"

#define OUT_CAP (8u << 20)
/* A log or watch stream looks for news this often. */
#define STREAM_TICK_MS 200

/* fds[], ios[] and the budgets are indexed by listener. */
#define GW_LISTENER_TCP 0
#define GW_LISTENER_UNIX 1

struct server {
	struct gateway *gw;
	int fds[2];
	struct loop_io *ios[2];
	size_t nconns;
	struct conn *conns; /* every open connection, so shutdown frees them */
	/* server_budget.c: unauthenticated connections per listener, oldest
	 * first, and the counts the budgets are checked against. */
	struct conn *pending_head[2], *pending_tail[2];
	size_t npending[2], nlistener[2], nlong, total_max, evictions;
	bool accept_paused; /* out of descriptors: listening resumes at a close */
	SSL_CTX *tls; /* the TCP listener's, or NULL for plain HTTP */
	bool mtls; /* tls asks for client certificates (tls_client_ca_file) */
};

/* A connection's lifecycle. One request per connection: after the answer
 * starts, the state says what the connection still does until it closes. */
enum gw_conn_state {
	GW_TLS_HANDSHAKE, /* TLS first; the idle timer bounds a stalled handshake */
	GW_READING, /* the request head and its Content-Length body */
	GW_WRITING, /* a complete answer is queued: flush it, then drain */
	GW_STREAMING, /* chunked log or watch stream, pumped by the timer */
	GW_SESSION, /* supervisor session: chunks pushed by sessions.c */
	GW_PARKED, /* exec client waiting for its relay (exec.c) */
	GW_RELAYING, /* exec relay after the 101: bytes both ways with c->peer */
	GW_RELAY_ENDING, /* the peer left: flush what it is owed, then drain */
	GW_DRAINING, /* write side shut: discard input until EOF or DRAIN_MS */
};
#define GW_CONN_STATES (GW_DRAINING + 1)

struct conn {
	struct server *srv;
	struct conn *prev, *next; /* srv->conns */
	int fd;
	SSL *ssl; /* TLS on this connection (tls.c), or NULL */
	enum gw_conn_state state; /* changed only by server_conn_set_state() */
	struct loop_io *io;
	struct loop_timer *timer;
	struct http_parser parser;
	struct buf in, out;
	size_t drained;
	size_t consumed; /* bytes of c->in the request used (head + body) */
	struct conn *peer; /* exec relay: the other end, or NULL */
	json_t *watch_seen; /* watch streams: id -> last resource_version sent */
	unsigned watch_failures; /* consecutive ticks the store could not be read */
	uint64_t watch_end_ms; /* loop_now_ms() at which a timed watch ends, or 0 */
	int listener; /* GW_LISTENER_* it came in on */
	uint32_t peer_addr; /* TCP: the IPv4 source address (network order) */
	bool pending; /* no request on it authenticated yet (server_budget.c) */
	bool counted_long; /* an authenticated stream, exec or relay */
	bool head_seen; /* the request head is complete: the head deadline is over */
	struct conn *pprev, *pnext; /* srv->pending_head[listener] */
	struct api_response resp;
};

/* server_state.c */
const char *gw_conn_state_name(enum gw_conn_state s);
bool gw_conn_transition_allowed(enum gw_conn_state from, enum gw_conn_state to);
/* The one way to change c->state: checks the move and logs it (debug). */
void server_conn_set_state(struct conn *c, enum gw_conn_state to);

/* server_budget.c */
void server_budget_init(struct server *s);
/* Makes room for one more connection on listener l from peer (closing the
 * oldest unauthenticated one of a full budget); false: refuse it. */
bool server_budget_admit(struct server *s, int l, uint32_t peer);
/* Counts c as pending on listener l. */
void server_budget_add(struct conn *c, int l, uint32_t peer);
/* A request on c authenticated: it leaves the pending budgets. < 0 when a
 * long-lived admin connection would eat the sessions' reserve (a 503). */
int server_budget_trust(struct conn *c, bool session, bool long_lived);
void server_budget_remove(struct conn *c);
/* server.c: listening again after descriptors ran out. */
void server_resume_accepting(struct server *s);

/* server_conn.c */
/* Takes an accepted socket from listener l (TLS when ctx is set); closes
 * it on failure or when the budgets have no room. */
void server_conn_accept(struct server *s, int fd, SSL_CTX *ctx, int l, uint32_t peer);
/* The request head is complete: from now on the idle timeout applies. */
void server_conn_head_seen(struct conn *c);
/* Writes as much buffered output as the socket takes; once a final answer
 * is out, shuts the write side and drains. May free c. */
void server_conn_flush(struct conn *c);
/* The answer is complete (or the peer left): true from then on. */
bool server_conn_closing(const struct conn *c);

/* server_respond.c */
/* Parses what c->in holds and answers once the request is complete. */
void server_conn_request_bytes(struct conn *c);
/* The stream timer: the next chunk of a log or watch stream. May free c. */
void server_conn_stream_tick(struct conn *c);

#endif
