/* tls.c - the gateway's TLS listener pieces (see tls.h). The context is
 * strict (TLS 1.2+, no renegotiation, no session tickets) and every OpenSSL
 * error is cleared where it happens, so one connection's failure never leaks
 * into the next call's SSL_get_error. */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "loop.h"
#include "secret.h"
#include "tlsctx.h"

/* The newest OpenSSL reason on this thread's queue, which is then emptied. */
static const char *ssl_reason(void)
{
	static __thread char text[256];
	return tls_reason(text, sizeof text);
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return 0; /* an encrypted key cannot be unlocked unattended: fail instead of prompting */
}

/* Opens the key once and checks the mode of what was opened, so the file
 * that is checked is the file that is read. */
static EVP_PKEY *load_key(const char *path, os_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return os_error_errno(err, "tls_key_file %s", path), NULL;
	if (!S_ISREG(st.st_mode))
		return os_error_set(err, EINVAL, "tls_key_file %s: not a regular file", path), NULL;
	if (!secret_file_private(&st))
		return os_error_set(err, EPERM,
				    "tls_key_file %s is open to group or others (mode %04o): "
				    "chmod 600 it (a Kubernetes Secret mounted with fsGroup, "
				    "root-owned 0440, is accepted too)",
				    path, (unsigned)(st.st_mode & 07777)),
		       NULL;
	BIO *b = BIO_new_fd(fd, BIO_NOCLOSE);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (!k)
		os_error_set(err, EINVAL,
			     "tls_key_file %s: no unencrypted PEM private key could be read (%s)",
			     path, ssl_reason());
	return k;
}

static int use_cert_and_key(SSL_CTX *ctx, const struct gateway_tls_config *cfg, os_error *err)
{
	struct stat st;
	if (stat(cfg->cert_file, &st) < 0)
		return os_error_errno(err, "tls_cert_file %s", cfg->cert_file);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1)
		return os_error_set(err, EINVAL,
				    "tls_cert_file %s: not a PEM certificate chain (%s)",
				    cfg->cert_file, ssl_reason());
	EVP_PKEY *k = load_key(cfg->key_file, err);
	if (!k)
		return -1;
	int ok = SSL_CTX_use_PrivateKey(ctx, k) == 1 && SSL_CTX_check_private_key(ctx) == 1;
	EVP_PKEY_free(k);
	if (!ok)
		return os_error_set(err, EINVAL,
				    "tls_key_file %s is not the key of tls_cert_file %s (%s)",
				    cfg->key_file, cfg->cert_file, ssl_reason());
	return 0;
}

/* mTLS: a client certificate is asked for and must chain to this CA when
 * one is presented. It is not required in the handshake: supervisors hold a
 * sandbox token, not a certificate, and the API refuses admin routes to a
 * connection without one (api.c). */
static int request_client_certs(SSL_CTX *ctx, const char *ca, os_error *err)
{
	struct stat st;
	if (stat(ca, &st) < 0)
		return os_error_errno(err, "tls_client_ca_file %s", ca);
	STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
	if (!names || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
		sk_X509_NAME_pop_free(names, X509_NAME_free);
		return os_error_set(err, EINVAL,
				    "tls_client_ca_file %s: no PEM CA certificate (%s)", ca,
				    ssl_reason());
	}
	SSL_CTX_set_client_CA_list(ctx, names); /* takes ownership */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return 0;
}

static int check_keys_given(const struct gateway_tls_config *cfg, os_error *err)
{
	if (!cfg->cert_file != !cfg->key_file)
		return os_error_set(err, EINVAL,
				    "%s is set but %s is not: set both (TLS on the TCP listener) "
				    "or neither",
				    cfg->cert_file ? "tls_cert_file" : "tls_key_file",
				    cfg->cert_file ? "tls_key_file" : "tls_cert_file");
	if (cfg->client_ca_file && !cfg->cert_file)
		return os_error_set(err, EINVAL,
				    "tls_client_ca_file %s needs tls_cert_file and tls_key_file "
				    "(client certificates are checked only over TLS)",
				    cfg->client_ca_file);
	return 0;
}

int gw_tls_ctx_new(const struct gateway_tls_config *cfg, SSL_CTX **out, os_error *err)
{
	*out = NULL;
	if (check_keys_given(cfg, err) < 0)
		return -1;
	if (!cfg->cert_file)
		return 0;
	/* flush() retries from a buffer that may move and takes partial writes. */
	const struct tls_server_config tcfg = {
		.loop_io = true,
		.no_resumption = true,
		.server_cipher_order = true,
	};
	SSL_CTX *ctx = NULL;
	if (tls_ctx_new_server(&tcfg, &ctx, err) < 0)
		return -1;
	if (use_cert_and_key(ctx, cfg, err) < 0 ||
	    (cfg->client_ca_file && request_client_certs(ctx, cfg->client_ca_file, err) < 0)) {
		SSL_CTX_free(ctx);
		return -1;
	}
	*out = ctx;
	return 0;
}

SSL *gw_tls_conn_new(SSL_CTX *ctx, int fd, os_error *err)
{
	SSL *ssl = SSL_new(ctx);
	if (!ssl || SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		os_error_set(err, ENOMEM, "TLS connection: %s", ssl_reason());
		return NULL;
	}
	SSL_set_accept_state(ssl);
	return ssl;
}

static void peer_name(int fd, char *out, size_t cap)
{
	struct sockaddr_in sin = { 0 };
	socklen_t len = sizeof sin;
	char ip[INET_ADDRSTRLEN] = "?";
	if (getpeername(fd, (struct sockaddr *)&sin, &len) == 0 && sin.sin_family == AF_INET)
		inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof ip);
	snprintf(out, cap, "%s:%u", ip, (unsigned)ntohs(sin.sin_port));
}

/* A client that spoke plain HTTP to the TLS port learns what to do; one
 * small write to a fresh socket, so a short write only loses the hint. The
 * server then closes the connection as after any failed handshake. */
static void answer_plain_http(int fd)
{
	static const char body[] = "{\"error\":\"tls_required\",\"message\":\"this gateway port "
				   "speaks TLS: use https://\"}\n";
	char resp[512];
	int n = snprintf(resp, sizeof resp,
			 "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 sizeof body - 1, body);
	if (n > 0 && (size_t)n < sizeof resp)
		(void)!send(fd, resp, (size_t)n, MSG_NOSIGNAL);
}

int gw_tls_handshake(SSL *ssl, int fd, unsigned *want, os_error *err)
{
	enum tls_step step = tls_handshake_step(ssl);
	if (step == TLS_STEP_DONE)
		return 0;
	if (step != TLS_STEP_FAILED) {
		*want = step == TLS_STEP_WANT_READ ? LOOP_IN : LOOP_OUT;
		return 1;
	}
	char peer[64];
	peer_name(fd, peer, sizeof peer);
	if (ERR_GET_REASON(ERR_peek_last_error()) == SSL_R_HTTP_REQUEST)
		answer_plain_http(fd);
	long v = SSL_get_verify_result(ssl); /* a client certificate that did not verify */
	os_error_set(err, EPROTO, "TLS handshake with %s failed: %s%s%s", peer, ssl_reason(),
		     v != X509_V_OK ? ": " : "",
		     v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
	return -1;
}

/* Maps an SSL result to the errno convention of recv/send. */
static ssize_t ssl_errno(SSL *ssl, int r)
{
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0; /* close_notify: a clean EOF */
	default:
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
}

ssize_t gw_conn_recv(int fd, SSL *ssl, void *buf, size_t len)
{
	if (!ssl)
		return recv(fd, buf, len, 0);
	size_t got = 0;
	ERR_clear_error();
	int r = SSL_read_ex(ssl, buf, len, &got);
	return r == 1 ? (ssize_t)got : ssl_errno(ssl, r);
}

ssize_t gw_conn_send(int fd, SSL *ssl, const void *buf, size_t len)
{
	if (!ssl)
		return send(fd, buf, len, MSG_NOSIGNAL);
	size_t done = 0;
	ERR_clear_error();
	int r = SSL_write_ex(ssl, buf, len, &done);
	if (r == 1)
		return (ssize_t)done;
	ssize_t n = ssl_errno(ssl, r);
	if (n == 0)
		errno = EPIPE; /* the peer closed: writing on is an error, not "0 bytes" */
	return -1;
}

bool gw_tls_peer_verified(SSL *ssl)
{
	/* With SSL_VERIFY_PEER a presented certificate that fails verification
	 * already failed the handshake; the result is checked again anyway. */
	return ssl && SSL_get0_peer_certificate(ssl) && SSL_get_verify_result(ssl) == X509_V_OK;
}

void gw_tls_close_notify(SSL *ssl)
{
	if (!ssl)
		return;
	ERR_clear_error();
	SSL_shutdown(ssl); /* one try: the drain that follows never waits for the peer's */
	ERR_clear_error();
}
