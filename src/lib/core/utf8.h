/* utf8.h - strict UTF-8 validation (no overlong forms, no surrogates,
 * nothing above U+10FFFF) for parsers that must read text exactly as its
 * receiver will. */
#ifndef OS_UTF8_H
#define OS_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..n) is valid UTF-8; otherwise *bad (if non-NULL) is the
 * offset of the first invalid sequence. */
bool utf8_valid(const char *s, size_t n, size_t *bad);

#endif
