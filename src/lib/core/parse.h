/* parse.h - bounded parsing of integers and strings from untrusted text.
 * Replaces atoi/sscanf/strcpy: every function checks range and length and
 * reports exactly what was wrong. */
#ifndef OS_PARSE_H
#define OS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Parses exactly len bytes of decimal digits into [min, max]. No sign, no
 * spaces, no leading '+'; leading zeros allowed. */
int parse_u64(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out, os_error *err);
/* Same for a NUL-terminated string. */
int parse_u64_str(const char *s, uint64_t min, uint64_t max, uint64_t *out, os_error *err);

/* "PORT,PORT,..." (1..65535 each, no duplicates, at most max) into
 * out[0..*n); an empty list, an empty item or a trailing comma is an error
 * naming what was wrong. */
int parse_port_list(const char *s, uint16_t *out, size_t max, size_t *n, os_error *err);
/* Signed decimal with optional leading '-'. */
int parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out, os_error *err);
/* Hexadecimal digits (no 0x prefix) into [0, max]. */
int parse_hex_u64(const char *s, size_t len, uint64_t max, uint64_t *out, os_error *err);

/* Copies src into dst[cap] including the NUL; fails (ENAMETOOLONG) rather
 * than truncating. */
int str_copy(char *dst, size_t cap, const char *src, os_error *err);
/* Joins the strings up to the NULL into dst[cap], cut to cap - 1 bytes as
 * snprintf cuts (NUL-terminated when cap > 0); returns the whole join's
 * length. For per-request text: snprintf's format parsing was a sixth of
 * the proxy's instructions per keep-alive request. */
size_t str_join(char *dst, size_t cap, ...) __attribute__((sentinel));
/* The decimal digits of v and a NUL into out; returns their count. */
size_t str_u64(char out[21], uint64_t v);
/* snprintf that fails instead of truncating. */
int str_format(char *dst, size_t cap, os_error *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* s, or fallback when s is NULL (what GNU `s ?: fallback` says, in ISO C). */
static inline const char *str_or(const char *s, const char *fallback)
{
	return s ? s : fallback;
}
/* Duplicates at most len bytes, NUL-terminating; NULL on ENOMEM. */
char *str_ndup(const char *s, size_t len);
bool str_has_prefix(const char *s, const char *prefix);
bool str_has_suffix(const char *s, const char *suffix);
/* ASCII case-insensitive comparison of two byte ranges. */
bool str_ieq(const char *a, size_t alen, const char *b, size_t blen);

#endif
