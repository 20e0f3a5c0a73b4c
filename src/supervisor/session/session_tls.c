/* session_tls.c - TLS to the gateway for the session and the exec relay (see
 * session_tls.h). Every OpenSSL error is cleared where it happens, so one
 * connection's failure never shows up in another's SSL_get_error. */
#include "session_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "loop.h"

/* The newest OpenSSL reason on this thread's queue, which is then emptied. */
static const char *ssl_reason(char *buf, size_t cap)
{
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, buf, cap);
	else
		snprintf(buf, cap, "the connection was closed");
	ERR_clear_error();
	return buf;
}

int session_tls_ctx_new(const char *ca_file, SSL_CTX **out, os_error *err)
{
	char why[256];
	struct stat st;
	*out = NULL;
	if (ca_file && stat(ca_file, &st) < 0)
		return os_error_errno(err, "--gateway-ca %s", ca_file);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		SSL_CTX_free(ctx);
		return os_error_set(err, EIO, "creating the TLS context: %s",
				    ssl_reason(why, sizeof why));
	}
	if ((ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
		     : SSL_CTX_set_default_verify_paths(ctx)) != 1) {
		SSL_CTX_free(ctx);
		return os_error_set(err, EINVAL, "--gateway-ca %s: no PEM CA certificate (%s)",
				    ca_file ? ca_file : "(system trust store)",
				    ssl_reason(why, sizeof why));
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	/* Partial, moving writes: the loop retries from a buffer that shifts.
	 * No auto-retry: a record without data (a key update) returns to the
	 * caller's poll instead of blocking the relay in SSL_read. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_clear_mode(ctx, SSL_MODE_AUTO_RETRY);
	*out = ctx;
	return 0;
}

static bool is_ip_literal(const char *name)
{
	unsigned char tmp[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, name, tmp) == 1 || inet_pton(AF_INET6, name, tmp) == 1;
}

SSL *session_tls_new(SSL_CTX *ctx, int fd, const char *name, os_error *err)
{
	char why[256];
	SSL *ssl = SSL_new(ctx);
	bool ok = ssl && SSL_set_fd(ssl, fd) == 1;
	/* An IP is matched against IP SANs only and is never sent as SNI (RFC 6066). */
	if (ok && is_ip_literal(name))
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) == 1;
	else if (ok)
		ok = SSL_set1_host(ssl, name) == 1 && SSL_set_tlsext_host_name(ssl, name) == 1;
	if (!ok) {
		SSL_free(ssl);
		os_error_set(err, EINVAL, "TLS to the gateway %s: %s", name,
			     ssl_reason(why, sizeof why));
		return NULL;
	}
	SSL_set_connect_state(ssl);
	return ssl;
}

/* What a failed handshake means, in words the operator can act on. */
static const char *hint(long verify, const char *reason)
{
	if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
		return " (the gateway's certificate does not name the host in --gateway)";
	if (verify != X509_V_OK)
		return " (is --gateway-ca the CA that signed the gateway's certificate?)";
	if (strstr(reason, "wrong version number") || strstr(reason, "packet length too long"))
		return " (the gateway does not speak TLS on that port: use http://)";
	return "";
}

int session_tls_handshake(SSL *ssl, const char *name, unsigned *want, os_error *err)
{
	char why[256];
	ERR_clear_error();
	int r = SSL_do_handshake(ssl);
	if (r == 1)
		return 0;
	int e = SSL_get_error(ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*want = e == SSL_ERROR_WANT_READ ? LOOP_IN : LOOP_OUT;
		return 1;
	}
	long v = SSL_get_verify_result(ssl);
	if (v != X509_V_OK) {
		ERR_clear_error();
		os_error_set(err, EPROTO,
			     "TLS handshake with the gateway %s failed: certificate verify "
			     "failed: %s%s",
			     name, X509_verify_cert_error_string(v), hint(v, ""));
		return -1;
	}
	ssl_reason(why, sizeof why);
	os_error_set(err, EPROTO, "TLS handshake with the gateway %s failed: %s%s", name, why,
		     hint(v, why));
	return -1;
}

/* Maps an SSL result to the errno convention of recv/send. */
static ssize_t ssl_result(SSL *ssl, int r, unsigned *want, const char *what, os_error *err)
{
	char why[256];
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
		*want = LOOP_IN;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*want = LOOP_OUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		ERR_clear_error();
		return 0; /* close_notify: a clean end */
	default:
		os_error_set(err, EPROTO, "%s the gateway over TLS: %s", what,
			     ssl_reason(why, sizeof why));
		errno = EPROTO;
		return -1;
	}
}

ssize_t session_tls_read(SSL *ssl, void *buf, size_t len, unsigned *want, os_error *err)
{
	size_t got = 0;
	ERR_clear_error();
	int r = SSL_read_ex(ssl, buf, len, &got);
	return r == 1 ? (ssize_t)got : ssl_result(ssl, r, want, "reading from", err);
}

ssize_t session_tls_write(SSL *ssl, const void *buf, size_t len, unsigned *want, os_error *err)
{
	size_t done = 0;
	ERR_clear_error();
	int r = SSL_write_ex(ssl, buf, len, &done);
	if (r == 1)
		return (ssize_t)done;
	ssize_t n = ssl_result(ssl, r, want, "writing to", err);
	if (n == 0) { /* the gateway closed: writing on is an error, not "0 bytes" */
		os_error_set(err, EPIPE, "writing to the gateway over TLS: it closed");
		errno = EPIPE;
		return -1;
	}
	return n;
}

void session_tls_close_notify(SSL *ssl)
{
	if (!ssl)
		return;
	ERR_clear_error();
	SSL_shutdown(ssl);
	ERR_clear_error();
}
