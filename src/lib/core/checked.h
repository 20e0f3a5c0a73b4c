/* checked.h - checked size arithmetic. Every size computed from untrusted
 * input goes through these; overflow is reported, never wrapped. */
#ifndef OS_CHECKED_H
#define OS_CHECKED_H

#include <stdbool.h>
#include <stddef.h>

/* Each returns true on success and stores the result; false on overflow. */
static inline bool checked_add(size_t a, size_t b, size_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}
static inline bool checked_mul(size_t a, size_t b, size_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}
static inline bool checked_sub(size_t a, size_t b, size_t *out)
{
	return !__builtin_sub_overflow(a, b, out);
}

#endif
