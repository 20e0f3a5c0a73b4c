/* tlsctx.h - the TLS set-up every component shares (OpenSSL 3): client and
 * server contexts, the name a server's certificate must carry, one
 * non-blocking handshake step, and the OpenSSL reason for a failure. A
 * client context never skips verification; no context speaks below TLS 1.2
 * nor renegotiates. Callers add their own certificates and policies. */
#ifndef OS_TLSCTX_H
#define OS_TLSCTX_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct tls_client_config {
	const char *ca_file; /* PEM CAs the peer must chain to; NULL: the system store */
	bool ca_adds_to_system; /* ca_file is trusted besides the system store, not instead */
	bool system_later; /* the system store is added by tls_ctx_add_system_trust */
	const char *ca_what; /* names ca_file in errors ("--gateway-ca", "OPENSHELL_TLS_CA") */
	bool loop_io; /* partial writes, retried from a buffer that may move */
	bool no_auto_retry; /* a record without data (a key update) returns to the caller */
};

/* A verifying client context (SSL_VERIFY_PEER). Errors name cfg->ca_what
 * and the file. */
int tls_ctx_new_client(const struct tls_client_config *cfg, SSL_CTX **out, os_error *err);

/* Adds the system trust store to a client context made with system_later,
 * before its first connection (the bundle is parsed now: tens of ms). */
int tls_ctx_add_system_trust(SSL_CTX *ctx, os_error *err);

struct tls_server_config {
	bool loop_io; /* as for a client */
	bool no_resumption; /* no session tickets, no session cache */
	bool server_cipher_order; /* our cipher preference, not the client's */
};

/* A server context without a certificate yet: the caller adds its own. */
int tls_ctx_new_server(const struct tls_server_config *cfg, SSL_CTX **out, os_error *err);

/* The name the server's certificate must carry: an IP literal is checked
 * against IP SANs only and never sent as SNI (RFC 6066); anything else is a
 * DNS name, checked and sent as SNI. */
int tls_client_set_host(SSL *ssl, const char *host, os_error *err);

enum tls_step {
	TLS_STEP_DONE,
	TLS_STEP_WANT_READ,
	TLS_STEP_WANT_WRITE,
	TLS_STEP_FAILED, /* the reason is on OpenSSL's queue and in SSL_get_verify_result */
};

/* One SSL_do_handshake on a non-blocking socket, with the thread's error
 * queue emptied first so an earlier failure is never reported as this one. */
enum tls_step tls_handshake_step(SSL *ssl);

/* The newest OpenSSL reason on this thread's queue ("the connection was
 * closed" when there is none) in buf; the queue is then emptied. */
const char *tls_reason(char *buf, size_t cap);

#endif
