/* test_tlsctx.c - the shared TLS set-up (src/lib/tlsctx.c): CA files that
 * are missing or not PEM are refused with the caller's name for them, the
 * contexts carry TLS 1.2+ and verification, an IP literal is never sent as
 * SNI while a DNS name is, and the handshake step reports want-read on a
 * quiet peer and failure on a peer that does not speak TLS. (Full
 * handshakes with real certificates: test_tls_ca.c.) */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>

#include "tlsctx.h"

static void client_ctx_names_a_bad_ca_file(void **state)
{
	(void)state;
	SSL_CTX *ctx = (SSL_CTX *)1;
	os_error err = { 0 };
	struct tls_client_config cfg = { .ca_file = "/nonexistent/ca.pem", .ca_what = "--test-ca" };
	assert_int_equal(tls_ctx_new_client(&cfg, &ctx, &err), -1);
	assert_null(ctx);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, "--test-ca /nonexistent/ca.pem"));
	char path[] = "/tmp/tlsctx-test-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not a certificate\n", 18), 18);
	close(fd);
	cfg.ca_file = path;
	cfg.ca_adds_to_system = true;
	assert_int_equal(tls_ctx_new_client(&cfg, &ctx, &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, "no PEM CA certificate"));
	assert_int_equal(ERR_peek_error(), 0); /* nothing left for the next caller */
	unlink(path);
	/* Positive control: the system store loads. */
	cfg = (struct tls_client_config){ .ca_what = "--test-ca", .no_auto_retry = true };
	assert_int_equal(tls_ctx_new_client(&cfg, &ctx, &err), 0);
	assert_int_equal(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER);
	assert_int_equal(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
	assert_int_equal(SSL_CTX_get_mode(ctx) & SSL_MODE_AUTO_RETRY, 0);
	assert_true(SSL_CTX_get_options(ctx) & SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_free(ctx);
}

static void server_ctx_options(void **state)
{
	(void)state;
	SSL_CTX *ctx = NULL;
	os_error err = { 0 };
	const struct tls_server_config strict = { .loop_io = true, .no_resumption = true };
	assert_int_equal(tls_ctx_new_server(&strict, &ctx, &err), 0);
	assert_int_equal(SSL_CTX_get_min_proto_version(ctx), TLS1_2_VERSION);
	assert_true(SSL_CTX_get_options(ctx) & SSL_OP_NO_TICKET);
	assert_int_equal(SSL_CTX_get_num_tickets(ctx), 0);
	assert_true(SSL_CTX_get_mode(ctx) & SSL_MODE_ENABLE_PARTIAL_WRITE);
	SSL_CTX_free(ctx);
	const struct tls_server_config plain = { 0 };
	assert_int_equal(tls_ctx_new_server(&plain, &ctx, &err), 0);
	assert_false(SSL_CTX_get_options(ctx) & SSL_OP_NO_TICKET);
	SSL_CTX_free(ctx);
}

static SSL_CTX *system_client(void)
{
	SSL_CTX *ctx = NULL;
	const struct tls_client_config cfg = { .ca_what = "test" };
	assert_int_equal(tls_ctx_new_client(&cfg, &ctx, NULL), 0);
	return ctx;
}

static void ip_literals_are_not_sni(void **state)
{
	(void)state;
	SSL_CTX *ctx = system_client();
	const struct {
		const char *name;
		bool sni;
	} cases[] = { { "192.0.2.1", false },
		      { "::1", false },
		      { "2001:db8::5", false },
		      { "gateway.example.test", true },
		      { "localhost", true } };
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		SSL *ssl = SSL_new(ctx);
		os_error err = { 0 };
		assert_int_equal(tls_client_set_host(ssl, cases[i].name, &err), 0);
		const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
		if (cases[i].sni)
			assert_string_equal(sni, cases[i].name);
		else
			assert_null(sni);
		SSL_free(ssl);
	}
	SSL_CTX_free(ctx);
}

static void handshake_step_wants_then_fails_on_plain_text(void **state)
{
	(void)state;
	SSL_CTX *ctx = system_client();
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	SSL *ssl = SSL_new(ctx);
	assert_int_equal(SSL_set_fd(ssl, sv[0]), 1);
	assert_int_equal(tls_client_set_host(ssl, "gateway.example.test", NULL), 0);
	SSL_set_connect_state(ssl);
	assert_int_equal(tls_handshake_step(ssl), TLS_STEP_WANT_READ); /* hello sent */
	char hello[4096];
	assert_true(read(sv[1], hello, sizeof hello) > 0);
	assert_int_equal(hello[0], 0x16); /* a TLS handshake record */
	assert_int_equal(tls_handshake_step(ssl), TLS_STEP_WANT_READ); /* still quiet */
	static const char plain[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
	assert_int_equal(write(sv[1], plain, sizeof plain - 1), (ssize_t)sizeof plain - 1);
	assert_int_equal(tls_handshake_step(ssl), TLS_STEP_FAILED);
	char why[256];
	assert_string_not_equal(tls_reason(why, sizeof why), "the connection was closed");
	assert_int_equal(ERR_peek_error(), 0);
	assert_string_equal(tls_reason(why, sizeof why), "the connection was closed");
	SSL_free(ssl);
	close(sv[0]);
	close(sv[1]);
	SSL_CTX_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(client_ctx_names_a_bad_ca_file),
		cmocka_unit_test(server_ctx_options),
		cmocka_unit_test(ip_literals_are_not_sni),
		cmocka_unit_test(handshake_step_wants_then_fails_on_plain_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
