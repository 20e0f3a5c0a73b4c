/* nb_server.c - netbench's upstream servers, one epoll loop for both:
 * serve-bulk (a "N\n" header, then N bytes as fast as the socket takes them)
 * serve-http (keep-alive GET answered with a small fixed body) and serve-rpc
 * (keep-alive JSON-RPC: a POST with a Content-Length body answered with a
 * small JSON-RPC result). Every
 * buffer is capped; a request it does not understand is answered and closed,
 * never guessed at. It serves only the address it was told to listen on. */
#include <errno.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "netbench.h"
#include "parse.h"

#define NB_IN_MAX 8192 /* request head / bulk header cap */
#define NB_OUT_MAX 16384 /* queued HTTP answers before reading pauses */
#define NB_BULK_CHUNK (256 * 1024)
#define NB_BULK_MAX (UINT64_C(1) << 40)

enum nb_mode { NB_BULK, NB_HTTP, NB_RPC };

struct conn {
	int fd;
	bool want_out; /* epoll waits for EPOLLOUT (else EPOLLIN) */
	bool close_after; /* http: close once out is flushed */
	uint64_t remaining; /* bulk bytes left */
	size_t in_len, out_off, out_len;
	char in[NB_IN_MAX];
	char out[NB_OUT_MAX];
};

struct server {
	enum nb_mode mode;
	int ep, lfd;
	unsigned nconns;
};

static const char zeros[NB_BULK_CHUNK];
static const char body[] = "hello, world\n";
static const char rpc_body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"ok\"}";

static void conn_close(struct server *s, struct conn *c)
{
	close(c->fd); /* also removes it from the epoll set */
	free(c);
	s->nconns--;
}

/* Switches between waiting for input and waiting for room to write; a
 * syscall only when the interest changes (once per request would be the
 * benchmark's hottest cost). */
static int conn_want(struct server *s, struct conn *c, bool out)
{
	struct epoll_event ev = { .events = out ? EPOLLOUT : EPOLLIN, .data.ptr = c };
	if (c->want_out == out)
		return 0;
	c->want_out = out;
	return epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void accept_all(struct server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), one = 1;
		if (fd < 0)
			return; /* EAGAIN, or a transient error: the listener stays armed */
		struct conn *c = s->nconns < NB_MAX_CONNS ? calloc(1, sizeof *c) : NULL;
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (!c || (c->fd = fd, epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0)) {
			free(c);
			close(fd);
			continue;
		}
		s->nconns++;
	}
}

/* Bulk: returns false when the connection is finished or broken. */
static bool bulk_send(struct conn *c)
{
	while (c->remaining > 0) {
		size_t n = c->remaining < sizeof zeros ? (size_t)c->remaining : sizeof zeros;
		ssize_t w = send(c->fd, zeros, n, MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		c->remaining -= (uint64_t)w;
	}
	return false;
}

static bool bulk_header(struct server *s, struct conn *c)
{
	char *nl = memchr(c->in, '\n', c->in_len);
	uint64_t n;
	if (!nl)
		return c->in_len < 32; /* a byte count never needs more */
	if (parse_u64(c->in, (size_t)(nl - c->in), 1, NB_BULK_MAX, &n, NULL) < 0)
		return false;
	c->remaining = n;
	return conn_want(s, c, true) == 0 && bulk_send(c);
}

/* True when the (lower-cased) head contains the header line "name: value". */
static bool head_has(const char *lower, size_t len, const char *line)
{
	return memmem(lower, len, line, strlen(line)) != NULL;
}

/* Queues the answer to one request head; false = answer queued, then close. */
static bool http_answer(struct conn *c, const char *head, size_t len)
{
	char lower[NB_IN_MAX];
	bool get = len > 4 && (!memcmp(head, "GET ", 4) || !memcmp(head, "HEAD ", 5));
	bool v10 = memmem(head, len, " HTTP/1.0\r\n", 11) != NULL;
	for (size_t i = 0; i < len; i++)
		lower[i] = (char)(head[i] >= 'A' && head[i] <= 'Z' ? head[i] + 32 : head[i]);
	bool has_body = head_has(lower, len, "\r\ncontent-length:") ||
			head_has(lower, len, "\r\ntransfer-encoding:");
	bool keep = v10 ? head_has(lower, len, "\r\nconnection: keep-alive")
			: !head_has(lower, len, "\r\nconnection: close");
	const char *status = !get ? "405 Method Not Allowed" : has_body ? "400 Bad Request" : NULL;
	int n = snprintf(
		c->out + c->out_len, NB_OUT_MAX - c->out_len,
		"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n%s",
		status ? status : "200 OK", status ? (size_t)0 : sizeof body - 1,
		keep && !status ? "" : "Connection: close\r\n", status ? "" : body);
	c->out_len += (size_t)n; /* the caller leaves room for the longest answer */
	return keep && !status;
}

/* serve-rpc: the body length of a POST head (lower-cased), or -1 when the
 * request is not one it serves. */
static long rpc_body_len(const char *head, size_t len)
{
	char lower[NB_IN_MAX];
	for (size_t i = 0; i < len; i++)
		lower[i] = (char)(head[i] >= 'A' && head[i] <= 'Z' ? head[i] + 32 : head[i]);
	const char *cl = memmem(lower, len, "\r\ncontent-length:", 17);
	uint64_t n;
	if (len < 5 || memcmp(head, "POST ", 5) != 0 || !cl)
		return -1;
	cl += 17;
	while (*cl == ' ')
		cl++;
	size_t digits = strspn(cl, "0123456789");
	if (parse_u64(cl, digits, 0, NB_IN_MAX / 2, &n, NULL) < 0)
		return -1;
	return (long)n;
}

static bool rpc_answer(struct conn *c, long body_len)
{
	int n = snprintf(c->out + c->out_len, NB_OUT_MAX - c->out_len,
			 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "%s\r\n%s",
			 body_len < 0 ? "400 Bad Request" : "200 OK",
			 body_len < 0 ? (size_t)0 : sizeof rpc_body - 1,
			 body_len < 0 ? "Connection: close\r\n" : "", body_len < 0 ? "" : rpc_body);
	c->out_len += (size_t)n;
	return body_len >= 0;
}

/* Answers complete requests while answers fit; false once an answer that
 * ends the connection was queued. */
static bool http_parse(struct conn *c, bool rpc)
{
	size_t off = 0;
	bool keep = true;
	while (keep && NB_OUT_MAX - c->out_len >= 256) {
		char *end = memmem(c->in + off, c->in_len - off, "\r\n\r\n", 4);
		if (!end)
			break;
		size_t hlen = (size_t)(end - (c->in + off)) + 4;
		if (!rpc) {
			keep = http_answer(c, c->in + off, hlen);
			off += hlen;
			continue;
		}
		long blen = rpc_body_len(c->in + off, hlen);
		if (blen >= 0 && off + hlen + (size_t)blen > c->in_len)
			break; /* the body is not all here yet */
		keep = rpc_answer(c, blen);
		off += hlen + (blen > 0 ? (size_t)blen : 0);
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	return keep;
}

/* Answers and writes until the socket is full or the input holds no complete
 * request; false when the connection is finished or broken. */
static bool http_progress(struct server *s, struct conn *c)
{
	for (;;) {
		size_t before = c->in_len;
		if (!c->close_after && !http_parse(c, s->mode == NB_RPC))
			c->close_after = true;
		while (c->out_off < c->out_len) {
			ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
					 MSG_NOSIGNAL);
			if (w < 0 && errno == EAGAIN)
				return conn_want(s, c, true) == 0;
			if (w < 0 && errno != EINTR)
				return false;
			c->out_off += w > 0 ? (size_t)w : 0;
		}
		c->out_off = c->out_len = 0;
		if (c->close_after)
			return false;
		if (c->in_len == before)
			break;
	}
	/* A full buffer without one complete head: over the head cap. */
	return c->in_len < NB_IN_MAX && conn_want(s, c, false) == 0;
}

static bool on_readable(struct server *s, struct conn *c)
{
	ssize_t r = read(c->fd, c->in + c->in_len, NB_IN_MAX - c->in_len);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR;
	if (r == 0)
		return false;
	c->in_len += (size_t)r;
	return s->mode == NB_BULK ? bulk_header(s, c) : http_progress(s, c);
}

static bool on_event(struct server *s, struct conn *c, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN))
		return false;
	if (events & EPOLLOUT)
		return s->mode == NB_BULK ? bulk_send(c) : http_progress(s, c);
	return on_readable(s, c);
}

static int serve(enum nb_mode mode, const struct nb_addr *a, os_error *err)
{
	struct server s = { .mode = mode };
	_cleanup_close_ int lfd = nb_listen(a, err), ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL }, evs[256];
	if (lfd < 0)
		return -1;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
		return os_error_errno(err, "epoll");
	s.ep = ep;
	s.lfd = lfd;
	nb_raise_fd_limit();
	printf("listening on %s\n", a->text);
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(ep, evs, (int)ARRAY_SIZE(evs), -1);
		if (n < 0 && errno != EINTR)
			return os_error_errno(err, "epoll_wait");
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (!c)
				accept_all(&s);
			else if (!on_event(&s, c, evs[i].events))
				conn_close(&s, c);
		}
	}
}

int nb_serve_bulk(const struct nb_addr *a, os_error *err)
{
	return serve(NB_BULK, a, err);
}

int nb_serve_http(const struct nb_addr *a, os_error *err)
{
	return serve(NB_HTTP, a, err);
}

int nb_serve_rpc(const struct nb_addr *a, os_error *err)
{
	return serve(NB_RPC, a, err);
}
