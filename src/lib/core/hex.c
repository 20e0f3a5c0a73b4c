/* hex.c - hexadecimal decoding (see hex.h). No locale, no strtol: a digit is
 * one of 22 bytes, everything else is refused. */
#include "hex.h"

#include <errno.h>

int hex_digit_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hex_decode(const char *text, size_t len, uint8_t *out, size_t out_len, os_error *err)
{
	if (out_len > SIZE_MAX / 2 || len != 2 * out_len)
		return os_error_set(err, EINVAL, "expected %zu hex digits, found %zu bytes",
				    out_len > SIZE_MAX / 2 ? SIZE_MAX : 2 * out_len, len);
	for (size_t i = 0; i < out_len; i++) {
		int hi = hex_digit_value((unsigned char)text[2 * i]);
		int lo = hex_digit_value((unsigned char)text[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return os_error_set(err, EINVAL, "byte %zu is not a hex digit",
					    hi < 0 ? 2 * i : 2 * i + 1);
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
