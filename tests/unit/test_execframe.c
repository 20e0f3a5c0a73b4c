/* test_execframe.c - the exec stream's frames: round trips, byte-at-a-time
 * arrival, and the rejections (unknown type, oversize length) beside the
 * acceptances they mirror. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "execframe.h"

static void frames_round_trip_in_order(void **state)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	assert_int_equal(execframe_put(&b, EXECFRAME_STDOUT, "hello", 5, NULL), 0);
	assert_int_equal(execframe_put(&b, EXECFRAME_STDIN_EOF, NULL, 0, NULL), 0);
	assert_int_equal(execframe_put_resize(&b, 40, 132, NULL), 0);
	assert_int_equal(execframe_put_u32(&b, EXECFRAME_EXIT, 300, NULL), 0);
	const uint8_t *p = (const uint8_t *)b.data;
	size_t left = b.len;
	struct execframe f;
	long n = execframe_take(p, left, &f, NULL);
	assert_int_equal(n, 10);
	assert_int_equal(f.type, 'o');
	assert_int_equal(f.len, 5);
	assert_memory_equal(f.payload, "hello", 5);
	p += n, left -= (size_t)n;
	assert_int_equal(execframe_take(p, left, &f, NULL), 5);
	assert_int_equal(f.type, EXECFRAME_STDIN_EOF);
	assert_int_equal(f.len, 0);
	p += 5, left -= 5;
	uint16_t rows, cols;
	assert_int_equal(execframe_take(p, left, &f, NULL), 9);
	assert_int_equal(execframe_resize(&f, &rows, &cols), 0);
	assert_int_equal(rows, 40);
	assert_int_equal(cols, 132);
	p += 9, left -= 9;
	uint32_t code;
	assert_int_equal(execframe_take(p, left, &f, NULL), 9);
	assert_int_equal(execframe_u32(&f, &code), 0);
	assert_int_equal(code, 300);
	assert_int_equal(left, 9);
	buf_free(&b);
}

static void partial_frames_need_more_bytes(void **state)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	assert_int_equal(execframe_put(&b, EXECFRAME_STDERR, "abc", 3, NULL), 0);
	struct execframe f;
	for (size_t i = 0; i < b.len; i++)
		assert_int_equal(execframe_take((const uint8_t *)b.data, i, &f, NULL), 0);
	assert_int_equal(execframe_take((const uint8_t *)b.data, b.len, &f, NULL), 8);
	buf_free(&b);
}

static void unknown_types_and_oversize_lengths_are_refused(void **state)
{
	struct execframe f;
	os_error err = { 0 };
	const uint8_t bad_type[] = { 'Z', 0, 0, 0, 0 };
	assert_int_equal(execframe_take(bad_type, sizeof bad_type, &f, &err), -1);
	assert_int_equal(err.code, EPROTO);
	/* Refused at the first byte: a hostile peer cannot make us wait for more. */
	assert_int_equal(execframe_take(bad_type, 1, &f, &err), -1);
	const uint8_t huge[] = { 'o', 0x00, 0x10, 0x00, 0x01 };
	assert_int_equal(execframe_take(huge, sizeof huge, &f, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	/* Positive control: exactly the maximum is a length we wait for. */
	const uint8_t max[] = { 'o', 0x00, 0x10, 0x00, 0x00 };
	assert_int_equal(execframe_take(max, sizeof max, &f, &err), 0);
	struct buf b;
	buf_init(&b, 4u << 20);
	static char big[EXECFRAME_MAX_PAYLOAD + 1];
	assert_int_equal(execframe_put(&b, 'o', big, sizeof big, &err), -1);
	assert_int_equal(execframe_put(&b, 'o', big, sizeof big - 1, &err), 0);
	buf_free(&b);
}

static void payload_helpers_check_lengths(void **state)
{
	struct execframe f = { .type = EXECFRAME_EXIT,
			       .payload = (const uint8_t *)"abc",
			       .len = 3 };
	uint32_t v;
	uint16_t r, c;
	assert_int_equal(execframe_u32(&f, &v), -1);
	assert_int_equal(execframe_resize(&f, &r, &c), -1);
}

static void terminal_types_are_terminfo_names_only(void **state)
{
	assert_true(execframe_term_ok("xterm-256color"));
	assert_true(execframe_term_ok("screen.xterm-256color"));
	assert_true(execframe_term_ok("rxvt-unicode+x_1"));
	char longest[EXECFRAME_TERM_MAX + 2];
	memset(longest, 'x', sizeof longest);
	longest[EXECFRAME_TERM_MAX] = '\0';
	assert_true(execframe_term_ok(longest));
	longest[EXECFRAME_TERM_MAX] = 'x';
	longest[EXECFRAME_TERM_MAX + 1] = '\0';
	assert_false(execframe_term_ok(longest));
	assert_false(execframe_term_ok(NULL));
	assert_false(execframe_term_ok(""));
	assert_false(execframe_term_ok("xterm;rm"));
	assert_false(execframe_term_ok("bad term"));
	assert_false(execframe_term_ok("xterm\n"));
	assert_false(execframe_term_ok("a=b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frames_round_trip_in_order),
		cmocka_unit_test(partial_frames_need_more_bytes),
		cmocka_unit_test(unknown_types_and_oversize_lengths_are_refused),
		cmocka_unit_test(payload_helpers_check_lengths),
		cmocka_unit_test(terminal_types_are_terminfo_names_only),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
