/* parse.c - bounded integer and string helpers (see parse.h). */
#include "parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hex.h"

int parse_u64(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out, os_error *err)
{
	if (len == 0)
		return os_error_set(err, EINVAL, "expected a number, got an empty string");
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < '0' || c > '9')
			return os_error_set(err, EINVAL, "expected a decimal number, got \"%.*s\"",
					    (int)(len > 64 ? 64 : len), s);
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v))
			return os_error_set(err, ERANGE, "number \"%.*s\" is too large",
					    (int)(len > 64 ? 64 : len), s);
	}
	if (v < min || v > max)
		return os_error_set(err, ERANGE, "expected a number %llu..%llu, got %llu",
				    (unsigned long long)min, (unsigned long long)max,
				    (unsigned long long)v);
	*out = v;
	return 0;
}

int parse_u64_str(const char *s, uint64_t min, uint64_t max, uint64_t *out, os_error *err)
{
	return parse_u64(s, strlen(s), min, max, out, err);
}

int parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out, os_error *err)
{
	bool neg = len > 0 && s[0] == '-';
	uint64_t mag;
	if (parse_u64(s + neg, len - neg, 0, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX,
		      &mag, err) < 0)
		return -1;
	int64_t v =
		neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
	if (v < min || v > max)
		return os_error_set(err, ERANGE, "expected a number %lld..%lld, got %lld",
				    (long long)min, (long long)max, (long long)v);
	*out = v;
	return 0;
}

int parse_hex_u64(const char *s, size_t len, uint64_t max, uint64_t *out, os_error *err)
{
	if (len == 0)
		return os_error_set(err, EINVAL,
				    "expected a hexadecimal number, got an empty string");
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		int d = hex_digit_value((unsigned char)s[i]);
		if (d < 0)
			return os_error_set(err, EINVAL, "invalid hexadecimal digit in \"%.*s\"",
					    (int)(len > 64 ? 64 : len), s);
		if (v > (UINT64_MAX >> 4))
			return os_error_set(err, ERANGE, "hexadecimal number too large");
		v = (v << 4) | (unsigned)d;
	}
	if (v > max)
		return os_error_set(err, ERANGE, "hexadecimal number over %llu",
				    (unsigned long long)max);
	*out = v;
	return 0;
}

int str_copy(char *dst, size_t cap, const char *src, os_error *err)
{
	size_t n = strlen(src);
	if (n >= cap)
		return os_error_set(err, ENAMETOOLONG, "string of %zu bytes exceeds limit of %zu",
				    n, cap ? cap - 1 : 0);
	memcpy(dst, src, n + 1);
	return 0;
}

int str_format(char *dst, size_t cap, os_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(dst, cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap)
		return os_error_set(err, ENAMETOOLONG, "formatted string exceeds %zu bytes", cap);
	return 0;
}

char *str_ndup(const char *s, size_t len)
{
	char *p = malloc(len + 1);
	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

bool str_ieq(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
		if (x >= 'A' && x <= 'Z')
			x += 32;
		if (y >= 'A' && y <= 'Z')
			y += 32;
		if (x != y)
			return false;
	}
	return true;
}

int parse_port_list(const char *s, uint16_t *out, size_t max, size_t *n, os_error *err)
{
	*n = 0;
	const char *p = s;
	do {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char one[8];
		uint64_t v = 0;
		if (len == 0 || len >= sizeof one)
			return os_error_set(err, EINVAL, "expected PORT,PORT..., got \"%s\"", s);
		memcpy(one, p, len);
		one[len] = '\0';
		if (parse_u64_str(one, 1, 65535, &v, err) < 0)
			return -1;
		for (size_t i = 0; i < *n; i++)
			if (out[i] == v)
				return os_error_set(err, EINVAL, "port %s listed twice", one);
		if (*n == max)
			return os_error_set(err, EINVAL, "at most %zu ports", max);
		out[(*n)++] = (uint16_t)v;
		p = end ? end + 1 : NULL;
	} while (p);
	return 0;
}

size_t str_join(char *dst, size_t cap, ...)
{
	va_list ap;
	size_t total = 0;
	va_start(ap, cap);
	for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *)) {
		size_t n = strlen(s);
		if (cap && total < cap - 1) {
			size_t room = cap - 1 - total;
			memcpy(dst + total, s, n < room ? n : room);
		}
		total += n;
	}
	va_end(ap);
	if (cap)
		dst[total < cap - 1 ? total : cap - 1] = '\0';
	return total;
}

size_t str_u64(char out[21], uint64_t v)
{
	char rev[20];
	size_t n = 0;
	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = rev[n - 1 - i];
	out[n] = '\0';
	return n;
}
