/* tlsctx.c - shared TLS set-up (see tlsctx.h). Every OpenSSL error is read
 * and cleared where it happens, so one connection's failure never shows up
 * in another's SSL_get_error. */
#include "tlsctx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <sys/stat.h>

#define TLS_REASON_MAX 256

const char *tls_reason(char *buf, size_t cap)
{
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, buf, cap);
	else
		snprintf(buf, cap, "the connection was closed");
	ERR_clear_error();
	return buf;
}

/* TLS 1.2 at least, no renegotiation, no compression; the modes an event
 * loop needs when asked for. */
static int ctx_base(const SSL_METHOD *method, bool loop_io, SSL_CTX **out, os_error *err)
{
	char why[TLS_REASON_MAX];
	SSL_CTX *ctx = SSL_CTX_new(method);
	if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		SSL_CTX_free(ctx);
		return os_error_set(err, EIO, "creating the TLS context: %s",
				    tls_reason(why, sizeof why));
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	if (loop_io)
		SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
					      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	*out = ctx;
	return 0;
}

static int load_trust(SSL_CTX *ctx, const struct tls_client_config *cfg, os_error *err)
{
	char why[TLS_REASON_MAX];
	const char *what = cfg->ca_what ? cfg->ca_what : "CA file";
	struct stat st;
	if (cfg->ca_file && stat(cfg->ca_file, &st) < 0)
		return os_error_errno(err, "%s %s", what, cfg->ca_file);
	bool system = (!cfg->ca_file || cfg->ca_adds_to_system) && !cfg->system_later;
	if ((system && SSL_CTX_set_default_verify_paths(ctx) != 1) ||
	    (cfg->ca_file && SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1))
		return os_error_set(err, EINVAL, "%s %s: no PEM CA certificate (%s)", what,
				    cfg->ca_file ? cfg->ca_file : "(system trust store)",
				    tls_reason(why, sizeof why));
	return 0;
}

int tls_ctx_add_system_trust(SSL_CTX *ctx, os_error *err)
{
	char why[TLS_REASON_MAX];
	if (SSL_CTX_set_default_verify_paths(ctx) != 1)
		return os_error_set(err, EINVAL, "loading the system trust store: %s",
				    tls_reason(why, sizeof why));
	return 0;
}

int tls_ctx_new_client(const struct tls_client_config *cfg, SSL_CTX **out, os_error *err)
{
	SSL_CTX *ctx = NULL;
	*out = NULL;
	if (ctx_base(TLS_client_method(), cfg->loop_io, &ctx, err) < 0)
		return -1;
	if (load_trust(ctx, cfg, err) < 0) {
		SSL_CTX_free(ctx);
		return -1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (cfg->no_auto_retry)
		SSL_CTX_clear_mode(ctx, SSL_MODE_AUTO_RETRY);
	*out = ctx;
	return 0;
}

int tls_ctx_new_server(const struct tls_server_config *cfg, SSL_CTX **out, os_error *err)
{
	SSL_CTX *ctx = NULL;
	*out = NULL;
	if (ctx_base(TLS_server_method(), cfg->loop_io, &ctx, err) < 0)
		return -1;
	if (cfg->server_cipher_order)
		SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (cfg->no_resumption) {
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
		SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	}
	*out = ctx;
	return 0;
}

static bool is_ip_literal(const char *name)
{
	unsigned char tmp[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, name, tmp) == 1 || inet_pton(AF_INET6, name, tmp) == 1;
}

int tls_client_set_host(SSL *ssl, const char *host, os_error *err)
{
	char why[TLS_REASON_MAX];
	bool ok =
		is_ip_literal(host)
			? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
			: SSL_set1_host(ssl, host) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1;
	if (!ok)
		return os_error_set(err, EINVAL, "TLS name %s: %s", host,
				    tls_reason(why, sizeof why));
	return 0;
}

enum tls_step tls_handshake_step(SSL *ssl)
{
	ERR_clear_error();
	int r = SSL_do_handshake(ssl);
	if (r == 1)
		return TLS_STEP_DONE;
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return TLS_STEP_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TLS_STEP_WANT_WRITE;
	default:
		return TLS_STEP_FAILED;
	}
}
