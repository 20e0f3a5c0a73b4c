/* server_conn.c - one gateway connection's state machine (server_internal.h)
 * and its I/O on the shared loop: TLS handshake, reading the request,
 * flushing buffered output when the socket is writable, exec relays and the
 * drain before close. Never blocks on a slow client. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "execframe.h"
#include "log.h"
#include "loop.h"
#include "server_internal.h"

#define IN_CAP (GW_BODY_MAX + 16384)
#define HEAD_MS 5000 /* from accept to a complete request head (TLS included) */
#define IDLE_MS 30000
#define DRAIN_MS 5000
#define DRAIN_MAX (64u << 20)
#define RELAY_HIGH (1u << 20) /* stop reading one side while the other owes this much */

static void unlink_conn(struct conn *c)
{
	server_budget_remove(c);
	if (c->srv->accept_paused)
		server_resume_accepting(c->srv);
	c->srv->nconns--;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

void server_conn_close(struct conn *c)
{
	if (c->resp.session)
		sessions_detach(c->srv->gw, c);
	if (c->state == GW_PARKED)
		exec_forget(c->srv->gw, c);
	struct conn *peer = c->peer;
	if (peer) {
		/* The other end gets what it is still owed, then closes. */
		peer->peer = NULL;
		c->peer = NULL;
		server_conn_set_state(peer, GW_RELAY_ENDING);
		loop_io_modify(peer->io, LOOP_OUT, NULL);
	}
	if (c->io)
		loop_io_remove(c->io);
	if (c->timer)
		loop_timer_remove(c->timer);
	SSL_free(c->ssl);
	close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	json_decref(c->resp.body);
	json_decref(c->watch_seen);
	unlink_conn(c);
	free(c);
}

bool server_conn_closing(const struct conn *c)
{
	return c->state == GW_WRITING || c->state == GW_RELAY_ENDING || c->state == GW_DRAINING;
}

/* A relay reads while its peer's backlog is small and writes while it owes. */
static void update_interest(struct conn *c)
{
	unsigned ev = c->out.len ? LOOP_OUT : 0;
	if (c->peer && c->peer->out.len < RELAY_HIGH)
		ev |= LOOP_IN;
	loop_io_modify(c->io, ev, NULL);
}

/* Drain what the client still sends (an early 413), so closing with unread
 * bytes does not reset the answer away. */
static void start_drain(struct conn *c)
{
	gw_tls_close_notify(c->ssl);
	shutdown(c->fd, SHUT_WR);
	server_conn_set_state(c, GW_DRAINING);
	loop_io_modify(c->io, LOOP_IN, NULL);
	loop_timer_set(c->timer, DRAIN_MS, 0, NULL);
}

void server_conn_flush(struct conn *c)
{
	while (c->out.len > 0) {
		ssize_t n = gw_conn_send(c->fd, c->ssl, c->out.data, c->out.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* A relay keeps reading while its peer's backlog allows: a
			 * command whose stdin is full may be writing its output,
			 * and not reading it would wedge both directions. */
			if (c->state == GW_RELAYING)
				update_interest(c);
			else
				loop_io_modify(c->io, LOOP_OUT, NULL);
			return;
		}
		if (n <= 0) {
			server_conn_close(c);
			return;
		}
		buf_consume(&c->out, (size_t)n);
	}
	if (server_conn_closing(c)) {
		start_drain(c);
		return;
	}
	if (c->state == GW_RELAYING) {
		update_interest(c);
		if (c->peer)
			update_interest(c->peer); /* it may read again now we drained */
		return;
	}
	/* A session keeps reading: the supervisor's close must be seen at once. */
	loop_io_modify(c->io, c->state == GW_STREAMING ? 0 : LOOP_IN, NULL);
}

static void relay_bytes(struct conn *c)
{
	char tmp[65536];
	ssize_t n = gw_conn_recv(c->fd, c->ssl, tmp, sizeof(tmp));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || !c->peer || buf_append(&c->peer->out, tmp, (size_t)n, NULL) < 0) {
		server_conn_close(c);
		return;
	}
	update_interest(c->peer);
	update_interest(c);
}

/* Bytes after the request (sent before the 101) belong to the peer. */
static int hand_over_rest(struct conn *from, struct conn *to)
{
	size_t rest = from->in.len > from->consumed ? from->in.len - from->consumed : 0;
	int rc = rest ? buf_append(&to->out, from->in.data + from->consumed, rest, NULL) : 0;
	buf_free(&from->in);
	return rc;
}

void server_conn_relay(struct conn *client, struct conn *relay)
{
	static const char head[] = "HTTP/1.1 101 Switching Protocols\r\n"
				   "Upgrade: " EXECFRAME_UPGRADE "\r\n"
				   "Connection: Upgrade\r\n\r\n";
	struct conn *pair[2] = { client, relay };
	for (int i = 0; i < 2; i++) {
		struct conn *c = pair[i];
		server_conn_set_state(c, GW_RELAYING);
		c->peer = pair[1 - i];
		loop_timer_disarm(c->timer); /* an interactive shell may idle for hours */
		buf_append(&c->out, head, sizeof(head) - 1, NULL);
	}
	if (hand_over_rest(client, relay) < 0 || hand_over_rest(relay, client) < 0) {
		server_conn_close(client); /* closes the relay after its 101 */
		return;
	}
	update_interest(client);
	update_interest(relay);
}

int server_conn_send(struct conn *c, const char *data, size_t len)
{
	if (server_conn_closing(c) || http_write_chunk(&c->out, data, len, NULL) < 0)
		return -1;
	return loop_io_modify(c->io, LOOP_OUT, NULL);
}

/* The idle timer armed at accept also bounds a stalled handshake. */
static void handshake(struct conn *c)
{
	os_error err = { 0 };
	unsigned want = 0;
	int r = gw_tls_handshake(c->ssl, c->fd, &want, &err);
	if (r < 0) {
		log_warn("%s", err.msg);
		/* The alert is sent; drain instead of closing at once, which would
		 * reset the connection and lose the alert the client needs to say why. */
		SSL_free(steal_ptr(c->ssl));
		server_conn_set_state(c, GW_WRITING);
		server_conn_flush(c);
		return;
	}
	if (r == 0)
		server_conn_set_state(c, GW_READING);
	loop_io_modify(c->io, r > 0 ? want : LOOP_IN, NULL);
}

/* recv for the states that only watch for the client leaving: the bytes
 * read, with *gone set at EOF or on an error. */
static ssize_t recv_or_gone(struct conn *c, char *tmp, size_t len, bool *gone)
{
	ssize_t d = gw_conn_recv(c->fd, c->ssl, tmp, len);
	*gone = d == 0 || (d < 0 && errno != EAGAIN && errno != EINTR);
	return d;
}

static void on_draining_input(struct conn *c)
{
	char tmp[16384];
	bool gone;
	ssize_t d = recv_or_gone(c, tmp, sizeof(tmp), &gone);
	if (gone || (c->drained += d > 0 ? (size_t)d : 0) > DRAIN_MAX)
		server_conn_close(c);
}

/* Early frames wait in c->in for the relay; EOF means the client left. */
static void on_parked_input(struct conn *c)
{
	char tmp[16384];
	bool gone;
	ssize_t d = recv_or_gone(c, tmp, sizeof(tmp), &gone);
	if (gone || (d > 0 && buf_append(&c->in, tmp, (size_t)d, NULL) < 0))
		server_conn_close(c);
}

/* Nothing is expected from a supervisor on its session: discard. */
static void on_session_input(struct conn *c)
{
	char tmp[16384];
	bool gone;
	recv_or_gone(c, tmp, sizeof(tmp), &gone);
	if (gone)
		server_conn_close(c);
}

static void on_request_input(struct conn *c)
{
	char tmp[16384];
	ssize_t n = gw_conn_recv(c->fd, c->ssl, tmp, sizeof(tmp));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		server_conn_close(c);
		return;
	}
	if (buf_append(&c->in, tmp, (size_t)n, NULL) < 0) {
		server_conn_fail(c, 413, "body_too_large", "request over the size limit");
		return;
	}
	server_conn_request_bytes(c);
}

static void on_io(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct conn *c = data;
	if (c->state == GW_TLS_HANDSHAKE) {
		handshake(c);
		return;
	}
	if (ev & LOOP_OUT) {
		server_conn_flush(c);
		return;
	}
	switch (c->state) {
	case GW_READING:
		on_request_input(c);
		break;
	case GW_WRITING:
	case GW_STREAMING:
		if (ev & (LOOP_HUP | LOOP_ERR))
			server_conn_close(c);
		break;
	case GW_SESSION:
		on_session_input(c);
		break;
	case GW_PARKED:
		on_parked_input(c);
		break;
	case GW_RELAYING:
	case GW_RELAY_ENDING:
		relay_bytes(c);
		break;
	case GW_DRAINING:
		on_draining_input(c);
		break;
	case GW_TLS_HANDSHAKE:
		break;
	}
}

/* The idle timeout, the drain timeout, and a stream's tick. */
static void on_timer(struct loop *l, struct loop_timer *t, void *data)
{
	struct conn *c = data;
	if (c->resp.stream && c->state != GW_DRAINING) {
		server_conn_stream_tick(c);
		return;
	}
	server_conn_close(c);
}

void server_conn_head_seen(struct conn *c)
{
	if (c->head_seen)
		return;
	c->head_seen = true;
	loop_timer_set(c->timer, IDLE_MS, 0, NULL);
}

void server_conn_accept(struct server *s, int fd, SSL_CTX *ctx, int l, uint32_t peer)
{
	struct conn *c = server_budget_admit(s, l, peer) ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		close(fd); /* no budget has room: refuse rather than queue */
		return;
	}
	c->srv = s;
	c->fd = fd;
	buf_init(&c->in, IN_CAP);
	buf_init(&c->out, OUT_CAP);
	http_parser_init(&c->parser, NULL);
	s->nconns++;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	server_budget_add(c, l, peer);
	os_error err = { 0 };
	if (ctx && !(c->ssl = gw_tls_conn_new(ctx, fd, &err))) {
		log_warn("%s", err.msg);
		server_conn_close(c);
		return;
	}
	c->state = c->ssl ? GW_TLS_HANDSHAKE : GW_READING; /* where every connection starts */
	struct loop *loop = s->gw->loop;
	if (loop_io_add(loop, fd, LOOP_IN, 0, on_io, c, &c->io, NULL) < 0 ||
	    loop_timer_add(loop, HEAD_MS, 0, on_timer, c, &c->timer, NULL) < 0)
		server_conn_close(c);
}
