/* stream.c - plain/TLS non-blocking I/O behind one interface (see stream.h). */
#include "stream.h"

#include <errno.h>
#include <openssl/err.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop.h"

void stream_init(struct stream *s, int fd)
{
	s->fd = fd;
	s->ssl = NULL;
	s->want = 0;
	s->eof = false;
	s->drained = false;
}

void stream_readable(struct stream *s)
{
	s->drained = false;
}

void stream_set_tls(struct stream *s, SSL *ssl)
{
	/* Partial writes and a moving write buffer: what is written comes from
	 * a struct buf that may be reallocated between a WANT_WRITE and the
	 * retry (a buffer released under memory pressure grows again). */
	SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
				  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	s->ssl = ssl;
}

static ssize_t ssl_result(struct stream *s, int r)
{
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		s->want = LOOP_IN;
		return STREAM_AGAIN;
	case SSL_ERROR_WANT_WRITE:
		s->want = LOOP_OUT;
		return STREAM_AGAIN;
	case SSL_ERROR_ZERO_RETURN:
		s->eof = true;
		return 0;
	default:
		ERR_clear_error();
		return STREAM_ERROR;
	}
}

ssize_t stream_read(struct stream *s, void *buf, size_t len)
{
	if (s->ssl) {
		size_t got = 0;
		int r = SSL_read_ex(s->ssl, buf, len, &got);
		return r == 1 ? (ssize_t)got : ssl_result(s, r);
	}
	if (s->drained) {
		s->drained = false;
		s->want = LOOP_IN;
		return STREAM_AGAIN;
	}
	for (;;) {
		ssize_t n = read(s->fd, buf, len);
		if (n >= 0) {
			if (n == 0)
				s->eof = true;
			/* Saves the read that would only say EAGAIN. */
			s->drained = n > 0 && (size_t)n < len;
			return n;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			s->want = LOOP_IN;
			s->drained = true;
			return STREAM_AGAIN;
		}
		return STREAM_ERROR;
	}
}

ssize_t stream_write(struct stream *s, const void *buf, size_t len)
{
	if (s->ssl) {
		size_t done = 0;
		int r = SSL_write_ex(s->ssl, buf, len, &done);
		return r == 1 ? (ssize_t)done : ssl_result(s, r);
	}
	for (;;) {
		ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			s->want = LOOP_OUT;
			return STREAM_AGAIN;
		}
		return STREAM_ERROR;
	}
}

bool stream_pending(const struct stream *s)
{
	return s->ssl && SSL_pending(s->ssl) > 0;
}

void stream_close(struct stream *s)
{
	if (s->ssl) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
}
