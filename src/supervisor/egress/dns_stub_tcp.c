/* dns_stub_tcp.c - DNS over TCP for the sandbox's stub (RFC 7766 framing:
 * a two-byte length before each message). Resolvers retry a truncated
 * answer over TCP, and some (glibc with `options use-vc`, dig +tcp) use
 * TCP only; the same query core answers both transports.
 *
 * Each connection holds at most one query: its bytes are read exactly (the
 * length, then the message), reading stops while it is answered and the
 * answer written, so pipelined queries wait in the kernel's buffer and are
 * answered in order, and a connection costs two fixed buffers. Bounds:
 * DNS_STUB_TCP_CONNS_MAX connections, DNS_PACKET_MAX bytes a query (a
 * longer one closes the connection: it is no question we answer), and
 * DNS_STUB_TCP_IDLE_MS from accept or the last answer to the next one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dns_stub_internal.h"
#include "log.h"

struct dns_tcp_conn {
	struct dns_tcp *owner;
	struct dns_tcp_conn *prev, *next;
	int fd;
	struct loop_io *io;
	struct loop_timer *idle;
	struct dns_pending *lookup; /* the query's lookup, while one waits */
	bool serving; /* a query is read and not yet answered */
	bool hup; /* the client hung up (perhaps only its sending side) */
	uint8_t in[2 + DNS_PACKET_MAX];
	size_t in_have;
	uint8_t out[2 + DNS_PACKET_MAX];
	size_t out_len, out_sent;
};

struct dns_tcp {
	struct dns_stub *stub;
	struct loop *loop;
	int fd;
	struct loop_io *io;
	struct dns_tcp_conn *conns;
	unsigned n_conns;
};

static void conn_close(struct dns_tcp_conn *c)
{
	struct dns_tcp *t = c->owner;
	if (c->lookup)
		dns_stub_cancel(c->lookup);
	if (c->prev)
		c->prev->next = c->next;
	else
		t->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	t->n_conns--;
	loop_timer_remove(c->idle);
	if (c->io)
		loop_io_remove(c->io);
	close(c->fd);
	free(c);
}

static void on_conn(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data);

/* What the connection waits for. A hang-up is reported whatever we ask
 * for, and again on every turn of the loop: after one, waiting for
 * nothing (a lookup) means no watch at all. false: the connection must
 * be closed. */
static bool conn_watch(struct dns_tcp_conn *c, unsigned events)
{
	os_error err = { 0 };
	if (c->hup && events == 0) {
		if (c->io)
			loop_io_remove(c->io);
		c->io = NULL;
		return true;
	}
	if (!c->io)
		return loop_io_add(c->owner->loop, c->fd, events, 0, on_conn, c, &c->io, &err) == 0;
	return loop_io_events(c->io) == events || loop_io_modify(c->io, events, &err) == 0;
}

/* Writes what is left of the answer; then the connection reads again. */
static void conn_flush(struct dns_tcp_conn *c)
{
	while (c->out_sent < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !c->hup) {
			if (!conn_watch(c, LOOP_OUT))
				conn_close(c);
			return;
		}
		if (n <= 0) { /* gone, or half-closed and not reading what we send */
			conn_close(c);
			return;
		}
		c->out_sent += (size_t)n;
	}
	c->out_len = c->out_sent = 0;
	c->serving = false;
	os_error err = { 0 };
	if (loop_timer_set(c->idle, DNS_STUB_TCP_IDLE_MS, 0, &err) < 0 || !conn_watch(c, LOOP_IN))
		conn_close(c); /* (a hang-up: queries sent before it are still read) */
}

void dns_tcp_answer(struct dns_tcp_conn *c, const uint8_t *pkt, size_t len)
{
	c->lookup = NULL; /* answered: the core frees it */
	c->out[0] = (uint8_t)(len >> 8);
	c->out[1] = (uint8_t)len;
	memcpy(c->out + 2, pkt, len);
	c->out_len = 2 + len;
	c->out_sent = 0;
	if (c->serving) /* else: answered inside dns_stub_serve, conn_read flushes */
		conn_flush(c);
}

/* The message length the two bytes read say, 0 when it is none we read. */
static size_t message_length(const struct dns_tcp_conn *c)
{
	size_t len = (size_t)c->in[0] << 8 | c->in[1];
	return len > DNS_PACKET_MAX || len < 12 ? 0 : len; /* over a query's size, under a header */
}

/* Reads the rest of the current message: its length, then its bytes
 * exactly; a whole one is served. */
static void conn_read(struct dns_tcp_conn *c)
{
	size_t need = c->in_have < 2 ? 2 : 2 + message_length(c);
	ssize_t n = recv(c->fd, c->in + c->in_have, need - c->in_have, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c); /* the client is done (or gone) */
		return;
	}
	c->in_have += (size_t)n;
	if (c->in_have == 2 && need == 2) {
		if (!message_length(c))
			conn_close(c);
		return; /* the loop calls again while bytes wait */
	}
	if (c->in_have < need)
		return;
	c->in_have = 0;
	/* The next query waits in the kernel until this one is answered. */
	if (!conn_watch(c, 0)) {
		conn_close(c);
		return;
	}
	struct dns_peer to = { .conn = c };
	struct dns_pending *p = dns_stub_serve(c->owner->stub, c->in + 2, need - 2, &to);
	c->serving = true;
	c->lookup = p;
	if (!p) /* answered at once, or nothing to answer (an answer was sent to us) */
		conn_flush(c);
}

static void on_conn(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	(void)l;
	(void)w;
	(void)fd;
	struct dns_tcp_conn *c = data;
	if (events & LOOP_ERR) {
		conn_close(c);
		return;
	}
	if (events & LOOP_HUP)
		c->hup = true;
	if (!c->serving)
		conn_read(c); /* (after a hang-up: what was sent before it, then end of file) */
	else if (c->lookup) {
		if (!conn_watch(c,
				0)) /* a hang-up while it is looked up: the answer is still sent */
			conn_close(c);
	} else
		conn_flush(c);
}

static void on_idle(struct loop *l, struct loop_timer *tm, void *data)
{
	(void)l;
	(void)tm;
	struct dns_tcp_conn *c = data;
	log_debug("dns stub: tcp connection idle for %d ms: closed", DNS_STUB_TCP_IDLE_MS);
	conn_close(c);
}

static void on_accept(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	(void)w;
	(void)events;
	struct dns_tcp *t = data;
	for (int i = 0; i < 16; i++) { /* a batch per wake-up */
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		struct dns_tcp_conn *c =
			t->n_conns < DNS_STUB_TCP_CONNS_MAX ? calloc(1, sizeof *c) : NULL;
		if (!c) {
			log_debug("dns stub: tcp connection refused: %u open", t->n_conns);
			close(cfd);
			continue;
		}
		os_error err = { 0 };
		c->owner = t;
		c->fd = cfd;
		if (loop_io_add(l, cfd, LOOP_IN, 0, on_conn, c, &c->io, &err) < 0 ||
		    loop_timer_add(l, DNS_STUB_TCP_IDLE_MS, 0, on_idle, c, &c->idle, &err) < 0) {
			log_debug("dns stub: tcp connection: %s", err.msg);
			if (c->io)
				loop_io_remove(c->io);
			close(cfd);
			free(c);
			continue;
		}
		c->next = t->conns;
		if (t->conns)
			t->conns->prev = c;
		t->conns = c;
		t->n_conns++;
	}
}

int dns_tcp_new(struct dns_stub *s, struct loop *l, int fd, struct dns_tcp **out, os_error *err)
{
	struct dns_tcp *t = calloc(1, sizeof *t);
	if (!t) {
		close(fd);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	t->stub = s;
	t->loop = l;
	t->fd = fd;
	if (loop_io_add(l, fd, LOOP_IN, 0, on_accept, t, &t->io, err) < 0) {
		close(fd);
		free(t);
		return os_error_prefix(err, "watching the DNS TCP listener");
	}
	*out = t;
	return 0;
}

void dns_tcp_free(struct dns_tcp *t)
{
	if (!t)
		return;
	while (t->conns)
		conn_close(t->conns);
	loop_io_remove(t->io);
	close(t->fd);
	free(t);
}
