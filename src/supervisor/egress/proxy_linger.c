/* Closing after a final answer without resetting it away.
 *
 * A connection refused while the agent is still sending (a body over a
 * cap, a deny before the body was read) holds unread bytes. close() on a
 * socket with unread input sends a RST instead of a FIN, and a RST that
 * reaches the agent before it has read our answer destroys the answer:
 * the client sees "connection reset" where it should see a 403 and its
 * reason. So the proxy half-closes (the answer is followed by a FIN), then
 * reads and discards what the agent still sends, until it closes, for at
 * most LINGER_MS and LINGER_BYTES; then closes for good. A lingering
 * connection holds no buffers and is charged nothing beyond its record. */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <errno.h>

#include "proxy_internal.h"

#define LINGER_MS 2000
#define LINGER_BYTES (4u << 20)

/* Bytes that may still come: unread in our buffer or the kernel's, or a
 * request body we never read to its end. */
static bool input_pending(const struct conn *c)
{
	if (c->client.eof)
		return false;
	int queued = 0;
	if (ioctl(c->client.fd, FIONREAD, &queued) == 0 && queued > 0)
		return true;
	return c->cin.len > 0 || c->req_body.state != BODY_DONE;
}

bool conn_linger_start(struct conn *c)
{
	if (c->lingering)
		return true;
	if (c->client.fd < 0 || !input_pending(c))
		return false;
	if (c->client.ssl)
		(void)SSL_shutdown(c->client.ssl); /* close_notify, best effort */
	if (shutdown(c->client.fd, SHUT_WR) < 0)
		return false;
	c->lingering = true;
	c->linger_read = 0;
	buf_reset(&c->cin);
	if (c->timer)
		loop_timer_set(c->timer, LINGER_MS, 0, NULL);
	return true;
}

/* Discards what arrived; true once the connection should close. The raw
 * socket is read, past TLS: nothing it carries is looked at. */
bool conn_linger_step(struct conn *c)
{
	char sink[16384];
	for (;;) {
		ssize_t n = recv(c->client.fd, sink, sizeof sink, MSG_DONTWAIT);
		if (n > 0) {
			c->linger_read += (size_t)n;
			if (c->linger_read >= LINGER_BYTES)
				return true;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return false;
		return true; /* EOF or a dead peer */
	}
}
