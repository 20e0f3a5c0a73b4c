/* session_tls.c - TLS to the gateway for the session and the exec relay (see
 * session_tls.h). Every OpenSSL error is cleared where it happens, so one
 * connection's failure never shows up in another's SSL_get_error. */
#include "session_tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "loop.h"
#include "tlsctx.h"

int session_tls_ctx_new(const char *ca_file, SSL_CTX **out, os_error *err)
{
	/* The loop retries from a buffer that shifts. No auto-retry: a record
	 * without data (a key update) returns to the caller's poll instead of
	 * blocking the relay in SSL_read. */
	const struct tls_client_config cfg = {
		.ca_file = ca_file,
		.ca_what = "--gateway-ca",
		.loop_io = true,
		.no_auto_retry = true,
	};
	return tls_ctx_new_client(&cfg, out, err);
}

SSL *session_tls_new(SSL_CTX *ctx, int fd, const char *name, os_error *err)
{
	char why[256];
	SSL *ssl = SSL_new(ctx);
	if (!ssl || SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		os_error_set(err, EINVAL, "TLS to the gateway %s: %s", name,
			     tls_reason(why, sizeof why));
		return NULL;
	}
	if (tls_client_set_host(ssl, name, err) < 0) {
		SSL_free(ssl);
		os_error_prefix(err, "TLS to the gateway");
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
	enum tls_step step = tls_handshake_step(ssl);
	if (step == TLS_STEP_DONE)
		return 0;
	if (step != TLS_STEP_FAILED) {
		*want = step == TLS_STEP_WANT_READ ? LOOP_IN : LOOP_OUT;
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
	tls_reason(why, sizeof why);
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
			     tls_reason(why, sizeof why));
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
