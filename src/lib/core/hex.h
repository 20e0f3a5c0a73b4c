/* hex.h - hexadecimal digits and byte strings: the one decoder every parser
 * uses (chunk sizes, percent-escapes, TOML escapes, key files). It never
 * accepts anything but [0-9a-fA-F] and never writes past the caller's cap. */
#ifndef OS_HEX_H
#define OS_HEX_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* The value 0..15 of one hex digit, either case; -1 for any other byte. */
int hex_digit_value(unsigned char c);

/* Decodes exactly 2 * out_len hex digits from text[0..len) into out.
 * -1 (EINVAL) when len is not 2 * out_len or a byte is not a hex digit; the
 * message names the offending offset. out may be partly written on error. */
int hex_decode(const char *text, size_t len, uint8_t *out, size_t out_len, os_error *err);

#endif
