/* decimal_arg.h - whole-string decimal in [min, max] for the test helpers
 * (sandbox-probe, sandbox-deny). They link no project library (they are
 * never sanitized, see src/sandbox/meson.build), so this stands alone. */
#ifndef OS_SANDBOX_TEST_DECIMAL_ARG_H
#define OS_SANDBOX_TEST_DECIMAL_ARG_H

#include <errno.h>
#include <stdlib.h>

static inline int decimal_arg(const char *s, long long min, long long max, long long *out)
{
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

#endif
