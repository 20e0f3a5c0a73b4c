/* tls_client.c - the CLI's TLS settings, failure explanations and the
 * OpenSSL stream every connection to an https:// gateway uses (API calls in
 * gw_http.c and the upgraded `sandbox exec` connection; see tls_client.h). */
#include "tls_client.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"
#include "tlsctx.h"

static int env_file(const char *var, const char **out, os_error *err)
{
	const char *v = getenv(var);
	*out = NULL;
	if (!v || !*v)
		return 0;
	if (access(v, R_OK) < 0)
		return os_error_errno(err, "%s=%s", var, v);
	*out = v;
	return 0;
}

int tls_settings_from_env(struct tls_settings *t, os_error *err)
{
	if (env_file("OPENSHELL_TLS_CA", &t->ca, err) < 0 ||
	    env_file("OPENSHELL_TLS_CERT", &t->cert, err) < 0 ||
	    env_file("OPENSHELL_TLS_KEY", &t->key, err) < 0)
		return -1;
	if (!t->cert != !t->key)
		return os_error_set(err, EINVAL,
				    "%s is set but %s is not: a client certificate needs both",
				    t->cert ? "OPENSHELL_TLS_CERT" : "OPENSHELL_TLS_KEY",
				    t->cert ? "OPENSHELL_TLS_KEY" : "OPENSHELL_TLS_CERT");
	return 0;
}

static bool has(const char *detail, const char *what)
{
	return strcasestr(detail, what) != NULL;
}

/* What OpenSSL's reason strings mean for the user. */
static const char *explain(const struct tls_settings *t, const char *d)
{
	if (has(d, "certificate required") || (!t->cert && has(d, "handshake failure")))
		return t->cert ? "the gateway did not accept the client certificate "
				 "(OPENSHELL_TLS_CERT)"
			       : "the gateway requires a client certificate (mTLS): set "
				 "OPENSHELL_TLS_CERT and OPENSHELL_TLS_KEY";
	if (has(d, "unknown ca") || has(d, "bad certificate") || has(d, "certificate unknown") ||
	    has(d, "unsupported certificate") || has(d, "certificate expired"))
		return "the gateway refused the client certificate (OPENSHELL_TLS_CERT): it must "
		       "be signed by the CA in the gateway's tls_client_ca_file";
	if (has(d, "mismatch") || has(d, "subject name"))
		return "the gateway's certificate does not name the host in OPENSHELL_GATEWAY";
	if (has(d, "verify failed") || has(d, "certificate problem") || has(d, "issuer") ||
	    has(d, "self-signed") || has(d, "self signed"))
		return t->ca ? "the gateway's certificate is not signed by OPENSHELL_TLS_CA"
			     : "the gateway's certificate is not signed by a CA this machine "
			       "trusts: set OPENSHELL_TLS_CA to the CA file that signed it";
	if (has(d, "wrong version number") || has(d, "packet length too long"))
		return "the gateway does not speak TLS on that port: use http://";
	return NULL;
}

int tls_error(os_error *err, const struct tls_settings *t, const char *url, const char *detail)
{
	const char *why = explain(t, detail);
	if (why)
		return os_error_set(err, EPROTO, "%s (TLS with %s: %s)", why, url, detail);
	return os_error_set(err, EIO, "talking to the gateway at %s: %s", url, detail);
}

/* The newest OpenSSL reason, or the verification result when that failed. */
static const char *ssl_detail(SSL *ssl, char *buf, size_t cap)
{
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e = ERR_peek_last_error();
	if (v != X509_V_OK)
		snprintf(buf, cap, "certificate verify failed: %s",
			 X509_verify_cert_error_string(v));
	else if (e)
		ERR_error_string_n(e, buf, cap);
	else
		snprintf(buf, cap, "the connection was closed during TLS");
	ERR_clear_error();
	return buf;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return 0; /* never prompt: an encrypted key fails with a message instead */
}

static SSL_CTX *client_ctx(const struct tls_settings *t, os_error *err)
{
	char why[256];
	/* A record without data (a key update) returns to pump()'s poll
	 * instead of blocking in SSL_read while stdin waits. */
	const struct tls_client_config cfg = {
		.ca_file = t->ca,
		.ca_what = "OPENSHELL_TLS_CA",
		.no_auto_retry = true,
	};
	SSL_CTX *ctx = NULL;
	if (tls_ctx_new_client(&cfg, &ctx, err) < 0)
		return NULL;
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	if (t->cert && (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1 ||
			SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1 ||
			SSL_CTX_check_private_key(ctx) != 1)) {
		SSL_CTX_free(ctx);
		os_error_set(err, EINVAL, "OPENSHELL_TLS_CERT %s / OPENSHELL_TLS_KEY %s: %s",
			     t->cert, t->key, ssl_detail(NULL, why, sizeof why));
		return NULL;
	}
	return ctx;
}

int tls_stream_start(struct tls_stream *s, int fd, const struct tls_settings *t, const char *host,
		     os_error *err)
{
	char why[512];
	s->fd = fd;
	s->ssl = NULL;
	s->settings = t;
	SSL_CTX *ctx = client_ctx(t, err);
	SSL *ssl = ctx ? SSL_new(ctx) : NULL;
	SSL_CTX_free(ctx); /* the SSL holds its own reference */
	if (!ssl)
		return ctx ? os_error_set(err, ENOMEM, "TLS: out of memory") : -1;
	if (SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return os_error_set(err, EINVAL, "TLS: gateway host %s: %s", host,
				    ssl_detail(NULL, why, sizeof why));
	}
	if (tls_client_set_host(ssl, host, err) < 0) {
		SSL_free(ssl);
		return os_error_prefix(err, "TLS: gateway host");
	}
	if (SSL_connect(ssl) != 1) {
		ssl_detail(ssl, why, sizeof why);
		SSL_free(ssl);
		return tls_error(err, t, host, why);
	}
	s->ssl = ssl;
	return 0;
}

ssize_t tls_stream_read(struct tls_stream *s, void *buf, size_t len, os_error *err)
{
	char why[512];
	if (!s->ssl) {
		ssize_t n = read(s->fd, buf, len);
		return n < 0 ? os_error_errno(err, "reading from the gateway") : n;
	}
	size_t got = 0;
	ERR_clear_error();
	int r = SSL_read_ex(s->ssl, buf, len, &got);
	if (r == 1)
		return (ssize_t)got;
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return os_error_set(err, EAGAIN, "no data in this TLS record");
	default:
		return tls_error(err, s->settings, "the gateway",
				 ssl_detail(NULL, why, sizeof why));
	}
}

int tls_stream_write_all(struct tls_stream *s, const void *buf, size_t len, os_error *err)
{
	char why[512];
	if (!s->ssl)
		return fd_write_all(s->fd, buf, len, err);
	const char *p = buf;
	while (len > 0) {
		size_t done = 0;
		ERR_clear_error();
		int r = SSL_write_ex(s->ssl, p, len, &done);
		if (r != 1) {
			int e = SSL_get_error(s->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				continue; /* blocking socket: only a record without data got in the way */
			return tls_error(err, s->settings, "the gateway",
					 ssl_detail(NULL, why, sizeof why));
		}
		p += done;
		len -= done;
	}
	return 0;
}

ssize_t tls_stream_write_some(struct tls_stream *s, const void *buf, size_t len, os_error *err)
{
	char why[512];
	if (!s->ssl) {
		ssize_t n = write(s->fd, buf, len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return n < 0 ? os_error_errno(err, "writing to the gateway") : n;
	}
	/* The caller's buffer moves as it is consumed; what was refused is
	 * offered again from its new place. */
	SSL_set_mode(s->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	size_t done = 0;
	ERR_clear_error();
	int r = SSL_write_ex(s->ssl, buf, len, &done);
	if (r == 1)
		return (ssize_t)done;
	int e = SSL_get_error(s->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	return tls_error(err, s->settings, "the gateway", ssl_detail(NULL, why, sizeof why));
}

bool tls_stream_pending(const struct tls_stream *s)
{
	return s->ssl && SSL_pending(s->ssl) > 0;
}

void tls_stream_end(struct tls_stream *s)
{
	if (!s->ssl)
		return;
	SSL_shutdown(s->ssl);
	ERR_clear_error();
	SSL_free(s->ssl);
	s->ssl = NULL;
}
