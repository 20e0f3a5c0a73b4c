/* session_net.c - non-blocking gateway connections for the session (see
 * session_net.h). Output is buffered under a cap and pumped when the socket
 * is writable; over TLS the handshake runs first, step by step on the loop,
 * and reads drain OpenSSL's buffer, because epoll cannot see bytes that
 * OpenSSL already took off the socket. The owner is told about everything
 * else through one callback. */
#include "session_net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "parse.h"
#include "session_tls.h"

#define OUT_CAP (2u << 20)
#define READ_CHUNK 65536

struct gw_conn {
	int fd;
	struct loop_io *io;
	struct loop_timer *timer;
	struct buf out;
	SSL *ssl; /* https: this connection's TLS, else NULL */
	char name[256]; /* what the gateway's certificate must name */
	bool connected, handshaking;
	bool write_wants_read; /* TLS must read before the pending write can go on */
	bool in_cb, closed; /* closed by the owner inside its callback */
	uint64_t idle_ms;
	gw_conn_fn cb;
	void *user;
};

void gw_conn_close(struct gw_conn *c)
{
	if (!c)
		return;
	if (c->in_cb) { /* notify() frees it once the callback returns */
		c->closed = true;
		return;
	}
	if (c->io)
		loop_io_remove(c->io);
	if (c->timer)
		loop_timer_remove(c->timer);
	if (c->ssl && c->connected && !c->handshaking)
		session_tls_close_notify(c->ssl);
	SSL_free(c->ssl);
	if (c->fd >= 0)
		close(c->fd);
	buf_free(&c->out);
	free(c);
}

/* Tells the owner; false when it closed c (which is then gone). */
static bool notify(struct gw_conn *c, enum gw_conn_event ev, const char *data, size_t len,
		   const os_error *err)
{
	c->in_cb = true;
	c->cb(c, ev, data, len, err, c->user);
	c->in_cb = false;
	if (!c->closed)
		return true;
	gw_conn_close(c);
	return false;
}

static void report_errno(struct gw_conn *c, const char *what, int code)
{
	os_error err = { 0 };
	errno = code;
	os_error_errno(&err, "%s", what);
	notify(c, GW_CONN_ERROR, NULL, 0, &err);
}

static ssize_t conn_send(struct gw_conn *c, unsigned *want, os_error *err)
{
	if (c->ssl)
		return session_tls_write(c->ssl, c->out.data, c->out.len, want, err);
	ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
	if (n < 0)
		os_error_errno(err, "sending to the gateway");
	return n;
}

/* Writes what the socket takes; switches to reading once all is sent. */
static void pump_out(struct gw_conn *c)
{
	while (c->out.len > 0) {
		unsigned want = LOOP_OUT;
		os_error err = { 0 };
		ssize_t n = conn_send(c, &want, &err);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->write_wants_read = want == LOOP_IN;
			loop_io_modify(c->io, want, NULL);
			return;
		}
		if (n <= 0) {
			notify(c, GW_CONN_ERROR, NULL, 0, &err);
			return;
		}
		buf_consume(&c->out, (size_t)n);
	}
	loop_io_modify(c->io, LOOP_IN, NULL);
}

static void handshake(struct gw_conn *c)
{
	unsigned want = 0;
	os_error err = { 0 };
	int r = session_tls_handshake(c->ssl, c->name, &want, &err);
	if (r < 0) {
		notify(c, GW_CONN_ERROR, NULL, 0, &err);
		return;
	}
	if (r > 0) {
		loop_io_modify(c->io, want, NULL);
		return;
	}
	c->handshaking = false;
	pump_out(c);
}

static ssize_t conn_recv(struct gw_conn *c, char *buf, size_t len, unsigned *want, os_error *err)
{
	if (c->ssl)
		return session_tls_read(c->ssl, buf, len, want, err);
	ssize_t n = recv(c->fd, buf, len, 0);
	if (n < 0)
		os_error_errno(err, "reading from the gateway");
	return n;
}

/* Plain: one recv per wake-up (the loop is level-triggered). TLS: on until
 * OpenSSL wants the socket again, so no decrypted byte waits unseen. */
static void read_in(struct gw_conn *c)
{
	char tmp[READ_CHUNK];
	for (;;) {
		unsigned want = LOOP_IN;
		os_error err = { 0 };
		ssize_t n = conn_recv(c, tmp, sizeof(tmp), &want, &err);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (want == LOOP_OUT) /* TLS needs to write before it can read on */
				loop_io_modify(c->io, LOOP_IN | LOOP_OUT, NULL);
			return;
		}
		if (n < 0) {
			notify(c, GW_CONN_ERROR, NULL, 0, &err);
			return;
		}
		if (n == 0) {
			notify(c, GW_CONN_END, NULL, 0, NULL);
			return;
		}
		loop_timer_set(c->timer, c->idle_ms, 0, NULL);
		if (!notify(c, GW_CONN_DATA, tmp, (size_t)n, NULL) || !c->ssl)
			return;
	}
}

static void on_io(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct gw_conn *c = data;
	if (!c->connected && (ev & (LOOP_OUT | LOOP_ERR | LOOP_HUP))) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			soerr = errno;
		if (soerr != 0) {
			report_errno(c, "connecting to the gateway", soerr);
			return;
		}
		c->connected = true;
		c->handshaking = c->ssl != NULL;
	}
	if (!c->connected)
		return;
	if (c->handshaking) {
		handshake(c);
		return;
	}
	if ((ev & LOOP_OUT) || (c->write_wants_read && (ev & LOOP_IN))) {
		c->write_wants_read = false;
		pump_out(c);
		return;
	}
	if (ev & (LOOP_IN | LOOP_HUP | LOOP_ERR))
		read_in(c);
}

static void on_idle(struct loop *l, struct loop_timer *t, void *data)
{
	struct gw_conn *c = data;
	notify(c, GW_CONN_TIMEOUT, NULL, 0, NULL);
}

int gw_conn_open(struct loop *l, const struct gw_endpoint *ep, SSL_CTX *tls, const char *request,
		 size_t request_len, uint64_t idle_ms, gw_conn_fn cb, void *user,
		 struct gw_conn **out, os_error *err)
{
	if (ep->tls != (tls != NULL))
		return os_error_set(err, EINVAL, "gateway connection: TLS context mismatch");
	struct gw_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return os_error_set(err, ENOMEM, "out of memory");
	c->fd = -1;
	c->cb = cb;
	c->user = user;
	c->idle_ms = idle_ms;
	buf_init(&c->out, OUT_CAP);
	if (buf_append(&c->out, request, request_len, err) < 0 ||
	    str_copy(c->name, sizeof(c->name), ep->name, err) < 0)
		goto fail;
	c->fd = socket(ep->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		os_error_errno(err, "socket");
		goto fail;
	}
	if (tls && !(c->ssl = session_tls_new(tls, c->fd, ep->name, err)))
		goto fail;
	if (connect(c->fd, (const struct sockaddr *)&ep->addr, ep->addr_len) < 0 &&
	    errno != EINPROGRESS) {
		os_error_errno(err, "connecting to the gateway");
		goto fail;
	}
	if (loop_io_add(l, c->fd, LOOP_OUT, 0, on_io, c, &c->io, err) < 0 ||
	    loop_timer_add(l, idle_ms, 0, on_idle, c, &c->timer, err) < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	gw_conn_close(c);
	return -1;
}
