/* exec_sock.c - the exec relay's connection to the gateway (see exec.h): the
 * same few calls whether the bytes go through TLS or straight to the socket,
 * so the pump has one code path. Blocking or not, as the fd is; it never
 * hides decrypted bytes from a caller that asks exec_sock_pending. */
#include "exec.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"
#include "session_tls.h"

ssize_t exec_sock_read(struct exec_sock *s, void *buf, size_t len)
{
	if (!s->ssl)
		return read(s->fd, buf, len);
	unsigned want = 0;
	os_error err = { 0 };
	return session_tls_read(s->ssl, buf, len, &want, &err);
}

static ssize_t write_some(struct exec_sock *s, const void *buf, size_t len, unsigned *want)
{
	*want = LOOP_OUT;
	if (!s->ssl)
		return send(s->fd, buf, len, MSG_NOSIGNAL);
	os_error err = { 0 };
	return session_tls_write(s->ssl, buf, len, want, &err);
}

int exec_sock_write_all(struct exec_sock *s, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		unsigned want = 0;
		ssize_t n = write_some(s, p, len, &want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			/* A non-blocking fd (the attach request) or a TLS record
			 * that had to be read first: wait for what was asked. */
			struct pollfd pf = { .fd = s->fd,
					     .events = want == LOOP_IN ? POLLIN : POLLOUT };
			if (poll(&pf, 1, -1) < 0 && errno != EINTR)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

bool exec_sock_pending(const struct exec_sock *s)
{
	return s->ssl && SSL_pending(s->ssl) > 0;
}

/* How long the end waits for the peer to close after our last frame. */
#define LINGER_MS 2000

void exec_sock_end(struct exec_sock *s)
{
	session_tls_close_notify(s->ssl);
	shutdown(s->fd, SHUT_WR);
	/* Closing with unread input (a client still streaming an upload the
	 * sandbox refused) makes the kernel answer with a reset, which can
	 * destroy the exit frame before the client reads it. So read and
	 * drop what still comes until the peer closes (it does once it has the
	 * status), for a bounded time. Raw bytes: nothing in them matters now. */
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = LINGER_MS - ((now.tv_sec - t0.tv_sec) * 1000L +
					 (now.tv_nsec - t0.tv_nsec) / 1000000L);
		struct pollfd pf = { .fd = s->fd, .events = POLLIN };
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			return;
		char sink[16384];
		ssize_t n = read(s->fd, sink, sizeof sink);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return;
	}
}
