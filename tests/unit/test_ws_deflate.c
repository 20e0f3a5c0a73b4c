/* test_ws_deflate.c - the WebSocket relay's permessage-deflate pieces: the
 * offer passed on asks for client_no_context_takeover, the server's answer
 * is checked strictly, and messages inflate on their own within the cap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>
#include <cmocka.h>

#include "proxy_ws_int.h"

static void offers(void **state)
{
	char out[256];
	assert_int_equal(ws_deflate_offer("permessage-deflate", 18, out, sizeof out), 1);
	assert_string_equal(out, "permessage-deflate; client_no_context_takeover");
	const char *two = "x-webkit-deflate-frame, permessage-deflate; client_max_window_bits,"
			  " permessage-deflate";
	assert_int_equal(ws_deflate_offer(two, strlen(two), out, sizeof out), 1);
	assert_string_equal(out, "permessage-deflate; client_max_window_bits; "
				 "client_no_context_takeover");
	const char *nct = "permessage-deflate; client_no_context_takeover";
	assert_int_equal(ws_deflate_offer(nct, strlen(nct), out, sizeof out), 1);
	assert_string_equal(out, nct); /* not asked twice */
	/* nothing inspectable offered: no offer passed on */
	const char *bad[] = { "x-webkit-deflate-frame", "permessage-deflate; level=9",
			      "permessage-deflate; server_max_window_bits=16", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(ws_deflate_offer(bad[i], strlen(bad[i]), out, sizeof out), 0);
	assert_int_equal(ws_deflate_offer("permessage-deflate", 18, out, 20), -1);
}

static void answers(void **state)
{
	char out[320];
	os_error err = { 0 };
	const char *ok = "permessage-deflate; server_max_window_bits=12";
	assert_int_equal(ws_deflate_answer(ok, strlen(ok), out, sizeof out, &err), 0);
	assert_string_equal(out, "permessage-deflate; server_max_window_bits=12; "
				 "client_no_context_takeover");
	const char *spaced = "permessage-deflate; server_max_window_bits = 10 ";
	assert_int_equal(ws_deflate_answer(spaced, strlen(spaced), out, sizeof out, &err), 0);
	/* found by fuzz_ws_deflate: a name the agent would not recognise is not
	 * taken for client_no_context_takeover; quoted values are bounded */
	const char *bad[] = { "permessage-deflate, permessage-deflate",
			      "x-other",
			      "permessage-deflate; client_max_window_bits", /* needs a value */
			      "permessage-deflate; bogus",
			      "permessage-deflate; client_no_context_taKeover",
			      "permessage-deflate; client_max_window_bits=\"30\"",
			      "Permessage-Deflate" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(ws_deflate_answer(bad[i], strlen(bad[i]), out, sizeof out, &err),
				 -1);
}

/* A message compressed on its own, as a client with no context takeover
 * sends it (sync flush, the trailing 00 00 ff ff left out). */
static void deflated(const char *s, size_t n, struct buf *out)
{
	unsigned char z[1 << 16];
	z_stream zs = { 0 };
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (unsigned char *)s;
	zs.avail_in = (unsigned)n;
	zs.next_out = z;
	zs.avail_out = sizeof z;
	assert_int_equal(deflate(&zs, Z_SYNC_FLUSH), Z_OK);
	assert_int_equal(zs.avail_in, 0);
	assert_int_equal(buf_append(out, z, sizeof z - zs.avail_out - 4, NULL), 0);
	deflateEnd(&zs);
}

static void inflating(void **state)
{
	struct buf in, out;
	os_error err = { 0 };
	buf_init(&in, 1 << 20);
	buf_init(&out, 1 << 20);
	deflated("hello", 5, &in);
	assert_int_equal(ws_inflate(&in, &out, 1 << 20, &err), 0);
	assert_int_equal(out.len, 5);
	assert_memory_equal(out.data, "hello", 5);
	/* a bomb stops at the cap */
	static char zeros[4 << 20];
	buf_reset(&in);
	buf_reset(&out);
	deflated(zeros, sizeof zeros, &in);
	assert_true(in.len < 16384);
	assert_int_equal(ws_inflate(&in, &out, 1 << 20, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	/* garbage */
	buf_reset(&in);
	buf_reset(&out);
	buf_append(&in, "\xff\xff\xff\xff", 4, NULL);
	assert_int_equal(ws_inflate(&in, &out, 1 << 20, &err), -1);
	assert_int_equal(err.code, EPROTO);
	buf_free(&in);
	buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(offers),
		cmocka_unit_test(answers),
		cmocka_unit_test(inflating),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
