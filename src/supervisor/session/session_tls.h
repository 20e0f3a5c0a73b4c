/* session_tls.h - the supervisor's TLS client to an https:// gateway, shared
 * by the session (non-blocking, on the loop) and the exec relay (blocking,
 * in its own process): one context that verifies the gateway's chain against
 * --gateway-ca (or the system store), and per connection the name or IP the
 * certificate must carry. It never skips verification and never speaks
 * below TLS 1.2: a MITM in the cluster network must not push a policy. */
#ifndef OS_SUPERVISOR_SESSION_TLS_H
#define OS_SUPERVISOR_SESSION_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* ca_file NULL: the system default trust store. The context holds the CA in
 * memory once loaded, so a forked relay that closed every fd can still use it. */
int session_tls_ctx_new(const char *ca_file, SSL_CTX **out, os_error *err);

/* A client SSL on fd (connected or connecting) that checks name: an IP
 * literal against the certificate's IP SANs, a DNS name against its DNS
 * names (and sends it as SNI). */
SSL *session_tls_new(SSL_CTX *ctx, int fd, const char *name, os_error *err);

/* One handshake step: 0 done, 1 must wait for *want (LOOP_IN or LOOP_OUT),
 * -1 failed: err names the gateway and the reason (the certificate
 * verification error when that was it). */
int session_tls_handshake(SSL *ssl, const char *name, unsigned *want, os_error *err);

/* SSL_read/SSL_write with the recv/send convention: bytes, 0 at a clean
 * close (read), or -1 with errno EAGAIN (*want says for what) or EPROTO
 * (err says why). */
ssize_t session_tls_read(SSL *ssl, void *buf, size_t len, unsigned *want, os_error *err);
ssize_t session_tls_write(SSL *ssl, const void *buf, size_t len, unsigned *want, os_error *err);

/* close_notify, best effort, never waits for the peer's. */
void session_tls_close_notify(SSL *ssl);

#endif
