/* test_wsframe.c - strict WebSocket framing: every refusal with its close
 * code, beside the valid frame that differs from it by one field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wsframe.h"

/* A client frame head: FIN|RSV|opcode, masked, length encoded as asked
 * (enc: 0 shortest, 16 or 64 forced). */
static size_t head(uint8_t *o, bool fin, uint8_t rsv, uint8_t op, uint64_t len, int enc,
		   bool masked)
{
	size_t n = 0;
	o[n++] = (uint8_t)((fin ? 0x80 : 0) | rsv | op);
	uint8_t m = masked ? 0x80 : 0;
	if (enc == 0 && len < 126) {
		o[n++] = (uint8_t)(m | len);
	} else if (enc == 16 || (enc == 0 && len <= 0xffff)) {
		o[n++] = m | 126;
		o[n++] = (uint8_t)(len >> 8);
		o[n++] = (uint8_t)len;
	} else {
		o[n++] = m | 127;
		for (int i = 7; i >= 0; i--)
			o[n++] = (uint8_t)(len >> (8 * i));
	}
	if (masked)
		for (int i = 0; i < 4; i++)
			o[n++] = (uint8_t)(0x11 * (i + 1));
	return n;
}

static int parse(const uint8_t *b, size_t n, struct ws_head *h, int *code)
{
	os_error err = { 0 };
	*code = 0;
	return ws_parse_head(b, n, true, h, code, &err);
}

static void heads(void **state)
{
	(void)state;
	uint8_t b[WS_HEAD_MAX];
	struct ws_head h;
	int code;
	size_t n = head(b, true, 0, WS_OP_TEXT, 300, 0, true);
	for (size_t k = 0; k < n; k++) /* every prefix: need more */
		assert_int_equal(parse(b, k, &h, &code), 0);
	assert_int_equal(parse(b, n, &h, &code), 1);
	assert_int_equal(h.len, 300);
	assert_int_equal(h.head_len, n);
	n = head(b, true, 0, WS_OP_TEXT, 70000, 0, true);
	assert_int_equal(parse(b, n, &h, &code), 1);
	assert_int_equal(h.len, 70000);
	/* non-minimal lengths */
	n = head(b, true, 0, WS_OP_TEXT, 100, 16, true);
	assert_int_equal(parse(b, n, &h, &code), -1);
	assert_int_equal(code, WS_CLOSE_PROTOCOL);
	n = head(b, true, 0, WS_OP_TEXT, 300, 64, true);
	assert_int_equal(parse(b, n, &h, &code), -1);
	n = head(b, true, 0, WS_OP_BINARY, UINT64_C(1) << 63, 64, true);
	assert_int_equal(parse(b, n, &h, &code), -1);
	/* a client frame must be masked */
	n = head(b, true, 0, WS_OP_TEXT, 5, 0, false);
	assert_int_equal(parse(b, n, &h, &code), -1);
	assert_int_equal(code, WS_CLOSE_PROTOCOL);
}

static int check(struct ws_stream *s, bool fin, uint8_t rsv, uint8_t op, uint64_t len)
{
	struct ws_head h = { .fin = fin, .rsv = rsv, .opcode = op, .masked = true, .len = len };
	os_error err = { 0 };
	int code = 0;
	int r = ws_check_frame(s, &h, &code, &err);
	return r < 0 ? code : 0;
}

static void message_rules(void **state)
{
	(void)state;
	struct ws_stream s = { 0 };
	assert_int_equal(check(&s, false, 0, WS_OP_TEXT, 10), 0); /* fragmented text */
	assert_int_equal(check(&s, true, 0, WS_OP_PING, 4), 0); /* control in between */
	assert_int_equal(check(&s, false, 0, WS_OP_PING, 4), WS_CLOSE_PROTOCOL);
	memset(&s, 0, sizeof s);
	assert_int_equal(check(&s, false, 0, WS_OP_TEXT, 10), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_BINARY, 1), WS_CLOSE_PROTOCOL);
	memset(&s, 0, sizeof s);
	assert_int_equal(check(&s, false, 0, WS_OP_TEXT, 10), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_CONT, 10), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_CONT, 1), WS_CLOSE_PROTOCOL); /* none open */
	memset(&s, 0, sizeof s);
	assert_int_equal(check(&s, true, 0, WS_OP_PING, 125), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_PING, 126), WS_CLOSE_PROTOCOL);
	assert_int_equal(check(&s, true, 0, 0x3, 0), WS_CLOSE_PROTOCOL); /* reserved */
	assert_int_equal(check(&s, true, 0, 0xb, 0), WS_CLOSE_PROTOCOL);
	assert_int_equal(check(&s, true, 0x40, WS_OP_TEXT, 5), WS_CLOSE_PROTOCOL); /* no deflate */
	s.deflate = true;
	assert_int_equal(check(&s, false, 0x40, WS_OP_TEXT, 5), 0);
	assert_int_equal(check(&s, true, 0x40, WS_OP_CONT, 5), WS_CLOSE_PROTOCOL);
	memset(&s, 0, sizeof s);
	s.deflate = true;
	assert_int_equal(check(&s, true, 0x20, WS_OP_TEXT, 5), WS_CLOSE_PROTOCOL); /* RSV2 */
	assert_int_equal(check(&s, true, 0x40, WS_OP_PING, 0), WS_CLOSE_PROTOCOL);
	assert_int_equal(check(&s, true, 0, WS_OP_CLOSE, 2), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_TEXT, 1), WS_CLOSE_PROTOCOL); /* after close */
}

static void sizes(void **state)
{
	(void)state;
	struct ws_stream s = { 0 };
	assert_int_equal(check(&s, true, 0, WS_OP_TEXT, WS_TEXT_MAX), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_TEXT, WS_TEXT_MAX + 1), WS_CLOSE_TOO_BIG);
	memset(&s, 0, sizeof s);
	assert_int_equal(check(&s, false, 0, WS_OP_TEXT, WS_TEXT_MAX - 1), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_CONT, 2), WS_CLOSE_TOO_BIG); /* summed */
	memset(&s, 0, sizeof s);
	assert_int_equal(check(&s, true, 0, WS_OP_BINARY, WS_BINARY_FRAME_MAX), 0);
	assert_int_equal(check(&s, true, 0, WS_OP_BINARY, WS_BINARY_FRAME_MAX + 1),
			 WS_CLOSE_TOO_BIG);
}

static void close_payloads_and_utf8(void **state)
{
	(void)state;
	int code = 0;
	os_error err = { 0 };
	const uint8_t ok[] = { 0x03, 0xe8, 'b', 'y', 'e' }, one[] = { 0x03 };
	const uint8_t reserved[] = { 0x03, 0xed }, bad_utf8[] = { 0x03, 0xe8, 0xc0, 0xaf };
	assert_int_equal(ws_check_close(ok, sizeof ok, &code, &err), 0);
	assert_int_equal(ws_check_close(NULL, 0, &code, &err), 0);
	assert_int_equal(ws_check_close(one, 1, &code, &err), -1);
	assert_int_equal(ws_check_close(reserved, 2, &code, &err), -1); /* 1005 */
	assert_int_equal(code, WS_CLOSE_PROTOCOL);
	assert_int_equal(ws_check_close(bad_utf8, sizeof bad_utf8, &code, &err), -1);
	assert_int_equal(code, WS_CLOSE_INVALID_DATA);
	assert_true(ws_utf8_valid((const uint8_t *)"h\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10));
	assert_false(ws_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3)); /* surrogate */
	assert_false(ws_utf8_valid((const uint8_t *)"\xe0\x80\xaf", 3)); /* overlong */
	assert_false(ws_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_false(ws_utf8_valid((const uint8_t *)"\xe2\x82", 2)); /* truncated */
	uint8_t p[6] = { 'a', 'b', 'c', 'd', 'e', 'f' };
	const uint8_t mask[4] = { 1, 2, 3, 4 };
	ws_unmask(p, 2, mask, 0);
	ws_unmask(p + 2, 4, mask, 2); /* offsets continue across pieces */
	ws_unmask(p, 6, mask, 0);
	assert_memory_equal(p, "abcdef", 6);
}

/* Heads the proxy writes parse back to what was meant, in the minimal form
 * the strict parser demands, masked (toward a server) or not (to a client). */
static void written_heads_parse_back(void **state)
{
	static const uint64_t lens[] = { 0, 125, 126, 65535, 65536, WS_BINARY_FRAME_MAX };
	static const uint8_t mask[4] = { 1, 2, 3, 4 };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
		for (int masked = 0; masked < 2; masked++) {
			uint8_t out[WS_HEAD_MAX];
			struct ws_head h;
			int code = 0;
			os_error err = { 0 };
			size_t n = ws_put_head(out, WS_OP_BINARY, lens[i], masked ? mask : NULL);
			assert_int_equal(ws_parse_head(out, n, masked, &h, &code, &err), 1);
			assert_int_equal(h.head_len, n);
			assert_int_equal(h.len, lens[i]);
			assert_true(h.fin);
			assert_int_equal(h.opcode, WS_OP_BINARY);
			assert_int_equal(h.masked, masked);
			if (masked)
				assert_memory_equal(h.mask, mask, 4);
			/* one byte short is "need more", never a wrong head */
			assert_int_equal(ws_parse_head(out, n - 1, masked, &h, &code, &err), 0);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(heads),
		cmocka_unit_test(message_rules),
		cmocka_unit_test(sizes),
		cmocka_unit_test(close_payloads_and_utf8),
		cmocka_unit_test(written_heads_parse_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
