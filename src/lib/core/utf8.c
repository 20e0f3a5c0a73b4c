/* utf8.c - strict UTF-8 validation (see utf8.h). */
#include "utf8.h"

/* Length of the sequence at p (1..4), or 0 when it is not a valid one. */
static size_t seq_len(const unsigned char *p, const unsigned char *end)
{
	if (p[0] < 0x80)
		return 1;
	size_t n = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
	if (!n || p[0] > 0xF4 || (size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	if (n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0)))
		return 0; /* overlong, or a surrogate */
	if (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90)))
		return 0; /* overlong, or above U+10FFFF */
	return n;
}

bool utf8_valid(const char *s, size_t n, size_t *bad)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	while (p < end) {
		size_t l = seq_len(p, end);
		if (!l) {
			if (bad)
				*bad = (size_t)(p - (const unsigned char *)s);
			return false;
		}
		p += l;
	}
	return true;
}
