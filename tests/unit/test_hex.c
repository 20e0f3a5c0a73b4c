/* test_hex.c - the shared hex decoder (src/lib/core/hex.c): every byte value
 * classified, both cases accepted, odd lengths, non-digits and the exact
 * length contract refused, with the offending offset named. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hex.h"

static void digit_value_covers_every_byte(void **state)
{
	(void)state;
	int digits = 0;
	for (int c = 0; c < 256; c++) {
		int v = hex_digit_value((unsigned char)c);
		if (c >= '0' && c <= '9')
			assert_int_equal(v, c - '0');
		else if (c >= 'a' && c <= 'f')
			assert_int_equal(v, c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			assert_int_equal(v, c - 'A' + 10);
		else
			assert_int_equal(v, -1);
		digits += v >= 0;
	}
	assert_int_equal(digits, 22);
	/* Neighbours of the ranges and bytes with the high bit set. */
	const unsigned char not_hex[] = {
		'/', ':', '@', 'G', '`', 'g', 0x00, 0x80, 0xb0, 0xe6, 0xff
	};
	for (size_t i = 0; i < sizeof not_hex; i++)
		assert_int_equal(hex_digit_value(not_hex[i]), -1);
}

static void decode_accepts_both_cases(void **state)
{
	(void)state;
	uint8_t out[4] = { 0 };
	os_error err = { 0 };
	assert_int_equal(hex_decode("00fFa5Zz", 6, out, 3, &err), 0);
	assert_int_equal(out[0], 0x00);
	assert_int_equal(out[1], 0xff);
	assert_int_equal(out[2], 0xa5);
	assert_int_equal(out[3], 0); /* nothing written past out_len */
	assert_int_equal(hex_decode("", 0, out, 0, &err), 0);
}

static void decode_refuses_wrong_length(void **state)
{
	(void)state;
	uint8_t out[2];
	os_error err = { 0 };
	assert_int_equal(hex_decode("abc", 3, out, 2, &err), -1); /* odd, short */
	assert_int_equal(err.code, EINVAL);
	assert_non_null(strstr(err.msg, "expected 4 hex digits"));
	assert_int_equal(hex_decode("abcdef", 6, out, 2, &err), -1); /* too long */
	assert_int_equal(hex_decode("ab", 2, out, 2, &err), -1);
	assert_int_equal(hex_decode("abcd", 4, out, SIZE_MAX, &err), -1); /* no overflow */
	assert_int_equal(err.code, EINVAL);
}

static void decode_names_the_bad_byte(void **state)
{
	(void)state;
	uint8_t out[2];
	os_error err = { 0 };
	assert_int_equal(hex_decode("ab0g", 4, out, 2, &err), -1);
	assert_string_equal(err.msg, "byte 3 is not a hex digit");
	assert_int_equal(hex_decode("x0", 2, out, 1, &err), -1);
	assert_string_equal(err.msg, "byte 0 is not a hex digit");
	/* An embedded NUL inside the stated length is not a digit either. */
	assert_int_equal(hex_decode("a\0", 2, out, 1, &err), -1);
	assert_string_equal(err.msg, "byte 1 is not a hex digit");
	/* Signs, spaces and 0x prefixes are what strtol would have taken. */
	assert_int_equal(hex_decode("+1", 2, out, 1, &err), -1);
	assert_int_equal(hex_decode(" 1", 2, out, 1, &err), -1);
	assert_int_equal(hex_decode("0x", 2, out, 1, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(digit_value_covers_every_byte),
		cmocka_unit_test(decode_accepts_both_cases),
		cmocka_unit_test(decode_refuses_wrong_length),
		cmocka_unit_test(decode_names_the_bad_byte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
