/* tls.h - optional TLS (and mTLS) on the gateway's TCP listener: the server
 * context built from tls_cert_file / tls_key_file / tls_client_ca_file, the
 * non-blocking handshake, and the one pair of functions every byte of a
 * connection goes through, TLS or not. It never accepts TLS below 1.2 nor a
 * private key that others could read (group read only in the Kubernetes
 * fsGroup Secret shape, see tls.c). */
#ifndef OS_GATEWAY_TLS_H
#define OS_GATEWAY_TLS_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

struct gateway_tls_config {
	const char *cert_file; /* PEM chain, leaf first */
	const char *key_file; /* PEM private key, mode 0600 or stricter */
	/* set: client certificates are asked for and verified (mTLS). One that
	 * does not verify fails the handshake; none at all is allowed through,
	 * and the API then lets that connection reach supervisor routes only. */
	const char *client_ca_file;
};

/* Builds the server context; *out stays NULL when neither cert nor key is
 * set (plain HTTP). Errors name the file and the key that was wrong. */
int gw_tls_ctx_new(const struct gateway_tls_config *cfg, SSL_CTX **out, os_error *err);

/* A server-side TLS object on an accepted non-blocking socket. */
SSL *gw_tls_conn_new(SSL_CTX *ctx, int fd, os_error *err);

/* One step of the handshake: 0 when done, 1 when it must wait for *want
 * (LOOP_IN or LOOP_OUT), -1 when it failed (err says why and with whom; the
 * alert is sent, the SSL is done for). A plain HTTP request on the TLS port
 * is answered with a 400 first. */
int gw_tls_handshake(SSL *ssl, int fd, unsigned *want, os_error *err);

/* recv(2)/send(2) for a connection, through SSL_read/SSL_write when ssl is
 * set: -1 with errno EAGAIN when it would block, EPROTO on a TLS failure;
 * 0 from recv at EOF. Reads must offer at least 16 KiB (one TLS record), so
 * nothing stays decrypted where epoll cannot see it. */
ssize_t gw_conn_recv(int fd, SSL *ssl, void *buf, size_t len);
ssize_t gw_conn_send(int fd, SSL *ssl, const void *buf, size_t len);

/* True when the peer presented a client certificate and it verified
 * against tls_client_ca_file. */
bool gw_tls_peer_verified(SSL *ssl);

/* Sends close_notify when ssl is set (best effort, never blocks). */
void gw_tls_close_notify(SSL *ssl);

#endif
