/* stream.h - one side of a proxied connection: a non-blocking socket, with
 * or without TLS on top. The proxy's HTTP code reads and writes through this
 * so plain HTTP and TLS-terminated HTTPS share one implementation. */
#ifndef OS_PROXY_STREAM_H
#define OS_PROXY_STREAM_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <sys/types.h>

#define STREAM_AGAIN (-2) /* would block: see stream.want */
#define STREAM_ERROR (-1)

struct stream {
	int fd;
	SSL *ssl; /* NULL for plain TCP */
	unsigned want; /* LOOP_IN / LOOP_OUT the last AGAIN waits for */
	bool eof;
	/* Plain TCP: the last read was short or said EAGAIN, and epoll has not
	 * reported the socket readable since (stream_readable): a read answers
	 * STREAM_AGAIN without the syscall. Safe because the proxy's epoll is
	 * level-triggered: bytes that arrived meanwhile are reported at the
	 * next wait, or as soon as read interest is turned on again. Saves the
	 * reads that only said EAGAIN: two of a keep-alive request's ten
	 * syscalls. */
	bool drained;
};

void stream_init(struct stream *s, int fd);
/* Puts TLS on the stream (it owns ssl from now on). OpenSSL's record
 * buffers are released whenever they are empty: thousands of idle or
 * paused TLS connections then hold their state only. Writes may be
 * partial and retried from a moved buffer. */
void stream_set_tls(struct stream *s, SSL *ssl);
/* epoll reported the socket readable (or hung up): the next read is real. */
void stream_readable(struct stream *s);
/* > 0 bytes, 0 at EOF, STREAM_AGAIN or STREAM_ERROR. */
ssize_t stream_read(struct stream *s, void *buf, size_t len);
ssize_t stream_write(struct stream *s, const void *buf, size_t len);
/* Bytes TLS has decrypted but not yet handed out (epoll cannot see them). */
bool stream_pending(const struct stream *s);
/* Frees the SSL and closes the fd. */
void stream_close(struct stream *s);

#endif
