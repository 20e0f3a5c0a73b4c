/* test_tls_ca.c - the per-sandbox CA: a client that trusts the written CA
 * bundle completes a real TLS handshake with a minted leaf for the right
 * name and refuses it for any other name; the leaf cache returns the same
 * context for the same host. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>

#include "tls_ca.h"
#include "upstream_trust.h"

static char dir[64];
static char ca_path[128], bundle_path[128];

static int setup(void **state)
{
	snprintf(dir, sizeof dir, "/tmp/tlsca-test-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(ca_path, sizeof ca_path, "%s/ca.pem", dir);
	snprintf(bundle_path, sizeof bundle_path, "%s/bundle.pem", dir);
	return 0;
}

static int teardown(void **state)
{
	unlink(ca_path);
	unlink(bundle_path);
	rmdir(dir);
	return 0;
}

/* Runs both handshakes over an in-memory BIO pair; returns the client's
 * verify result, or -1 if the handshake failed. */
static long handshake(SSL_CTX *server_ctx, const char *client_name)
{
	os_error err = { 0 };
	struct upstream_trust *trust = NULL;
	assert_int_equal(upstream_trust_get(ca_path, &trust, &err), 0);
	SSL_CTX *cctx = upstream_trust_ctx(trust, &err);
	assert_non_null(cctx);
	SSL *c = SSL_new(cctx), *s = SSL_new(server_ctx);
	BIO *cb, *sb;
	assert_int_equal(BIO_new_bio_pair(&cb, 0, &sb, 0), 1);
	SSL_set_bio(c, cb, cb);
	SSL_set_bio(s, sb, sb);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	assert_int_equal(tls_client_set_host(c, client_name, &err), 0);
	int cdone = 0, sdone = 0, failed = 0;
	for (int i = 0; i < 100 && !(cdone && sdone) && !failed; i++) {
		if (!cdone) {
			int r = SSL_do_handshake(c);
			if (r == 1)
				cdone = 1;
			else if (SSL_get_error(c, r) != SSL_ERROR_WANT_READ)
				failed = 1;
		}
		if (!sdone && !failed) {
			int r = SSL_do_handshake(s);
			if (r == 1)
				sdone = 1;
			else if (SSL_get_error(s, r) != SSL_ERROR_WANT_READ)
				failed = 1;
		}
	}
	long verify = failed ? -1 : SSL_get_verify_result(c);
	ERR_clear_error();
	SSL_free(c);
	SSL_free(s);
	upstream_trust_put(trust);
	return verify;
}

static void minted_leaf_verifies_only_for_its_host(void **state)
{
	struct tls_ca *ca;
	os_error err = { 0 };
	assert_int_equal(tls_ca_new("sbx-1", &ca, &err), 0);
	assert_int_equal(tls_ca_write_files(ca, ca_path, bundle_path, NULL, &err), 0);
	assert_non_null(strstr(tls_ca_cert_pem(ca), "BEGIN CERTIFICATE"));
	SSL_CTX *sctx = tls_ca_server_ctx(ca, "api.example.test", &err);
	assert_non_null(sctx);
	assert_int_equal(handshake(sctx, "api.example.test"), X509_V_OK);
	assert_int_equal(handshake(sctx, "other.example.test"), -1);
	SSL_CTX *again = tls_ca_server_ctx(ca, "api.example.test", &err);
	assert_ptr_equal(again, sctx);
	SSL_CTX_free(again);
	SSL_CTX_free(sctx);
	tls_ca_free(ca);
}

static void ip_literal_leaf_and_foreign_ca(void **state)
{
	struct tls_ca *ca, *other;
	os_error err = { 0 };
	assert_int_equal(tls_ca_new("sbx-2", &ca, &err), 0);
	assert_int_equal(tls_ca_new("sbx-3", &other, &err), 0);
	assert_int_equal(tls_ca_write_files(ca, ca_path, bundle_path, NULL, &err), 0);
	SSL_CTX *ip = tls_ca_server_ctx(ca, "192.0.2.10", &err);
	assert_int_equal(handshake(ip, "192.0.2.10"), X509_V_OK);
	/* A leaf from another sandbox's CA is not trusted by this bundle. */
	SSL_CTX *foreign = tls_ca_server_ctx(other, "192.0.2.10", &err);
	assert_int_equal(handshake(foreign, "192.0.2.10"), -1);
	SSL_CTX_free(ip);
	SSL_CTX_free(foreign);
	tls_ca_free(ca);
	tls_ca_free(other);
}

static int store_objects(SSL_CTX *ctx)
{
	return sk_X509_OBJECT_num(X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx)));
}

/* The upstream trust: the operator's file checked at once, the system roots
 * only at the first upstream connection, one object per file per process. */
static void upstream_trust_is_shared_and_loaded_at_first_use(void **state)
{
	os_error err = { 0 };
	struct upstream_trust *a = NULL, *b = NULL, *bad = NULL;
	assert_int_equal(upstream_trust_get("/nonexistent/ca.pem", &bad, &err), -1);
	assert_non_null(strstr(err.msg, "--upstream-ca /nonexistent/ca.pem"));
	assert_int_equal(upstream_trust_get(ca_path, &a, &err), 0);
	assert_int_equal(upstream_trust_get(ca_path, &b, &err), 0);
	assert_ptr_equal(a, b); /* shared by every proxy of the process */
	assert_false(upstream_trust_loaded(a));
	upstream_trust_put(b);
	SSL_CTX *ctx = upstream_trust_ctx(a, &err);
	assert_non_null(ctx);
	assert_true(upstream_trust_loaded(a));
	/* The system roots came in beside our one CA (Debian's bundle: ~140). */
	assert_true(store_objects(ctx) > 1);
	assert_ptr_equal(upstream_trust_ctx(a, &err), ctx); /* loaded once */
	upstream_trust_put(a);
	/* The last release frees it: the next get starts unloaded again. */
	assert_int_equal(upstream_trust_get(ca_path, &b, &err), 0);
	assert_false(upstream_trust_loaded(b));
	upstream_trust_put(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(minted_leaf_verifies_only_for_its_host),
		cmocka_unit_test(ip_literal_leaf_and_foreign_ca),
		cmocka_unit_test(upstream_trust_is_shared_and_loaded_at_first_use),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
