/* session_net.c - non-blocking gateway connections for the session (see
 * session_net.h). Output is buffered under a cap and pumped when the socket
 * is writable; the owner is told about everything else through one callback. */
#include "session_net.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"

#define OUT_CAP (2u << 20)
#define READ_CHUNK 65536

struct gw_conn {
	int fd;
	struct loop_io *io;
	struct loop_timer *timer;
	struct buf out;
	bool connected;
	uint64_t idle_ms;
	gw_conn_fn cb;
	void *user;
};

void gw_conn_close(struct gw_conn *c)
{
	if (!c)
		return;
	if (c->io)
		loop_io_remove(c->io);
	if (c->timer)
		loop_timer_remove(c->timer);
	if (c->fd >= 0)
		close(c->fd);
	buf_free(&c->out);
	free(c);
}

static void report_errno(struct gw_conn *c, const char *what, int code)
{
	os_error err = { 0 };
	errno = code;
	os_error_errno(&err, "%s", what);
	c->cb(c, GW_CONN_ERROR, NULL, 0, &err, c->user);
}

/* Writes what the socket takes; switches to reading once all is sent. */
static void pump_out(struct gw_conn *c)
{
	while (c->out.len > 0) {
		ssize_t n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0)
			return report_errno(c, "sending to the gateway", errno);
		buf_consume(&c->out, (size_t)n);
	}
	loop_io_modify(c->io, LOOP_IN, NULL);
}

static void on_io(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct gw_conn *c = data;
	if (!c->connected && (ev & (LOOP_OUT | LOOP_ERR | LOOP_HUP))) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			soerr = errno;
		if (soerr != 0)
			return report_errno(c, "connecting to the gateway", soerr);
		c->connected = true;
	}
	if (ev & LOOP_OUT)
		return pump_out(c);
	if (!(ev & (LOOP_IN | LOOP_HUP | LOOP_ERR)))
		return;
	char tmp[READ_CHUNK];
	ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0)
		return report_errno(c, "reading from the gateway", errno);
	if (n == 0)
		return c->cb(c, GW_CONN_END, NULL, 0, NULL, c->user);
	loop_timer_set(c->timer, c->idle_ms, 0, NULL);
	c->cb(c, GW_CONN_DATA, tmp, (size_t)n, NULL, c->user);
}

static void on_idle(struct loop *l, struct loop_timer *t, void *data)
{
	struct gw_conn *c = data;
	c->cb(c, GW_CONN_TIMEOUT, NULL, 0, NULL, c->user);
}

int gw_conn_open(struct loop *l, const struct sockaddr_storage *addr, socklen_t addr_len,
		 const char *request, size_t request_len, uint64_t idle_ms, gw_conn_fn cb,
		 void *user, struct gw_conn **out, os_error *err)
{
	struct gw_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return os_error_set(err, ENOMEM, "out of memory");
	c->fd = -1;
	c->cb = cb;
	c->user = user;
	c->idle_ms = idle_ms;
	buf_init(&c->out, OUT_CAP);
	if (buf_append(&c->out, request, request_len, err) < 0)
		goto fail;
	c->fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		os_error_errno(err, "socket");
		goto fail;
	}
	if (connect(c->fd, (const struct sockaddr *)addr, addr_len) < 0 && errno != EINPROGRESS) {
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
