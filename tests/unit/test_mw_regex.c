/* test_mw_regex.c - the openshell/regex middleware's replacement: exactly
 * `sk-[A-Za-z0-9_-]{16,}` (leftmost, greedy) becomes `[REDACTED]`, and
 * everything else is copied byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy_internal.h"

static void redacts(const char *in, const char *want, size_t want_n)
{
	struct buf out;
	buf_init(&out, 1 << 16);
	os_error err = { 0 };
	size_t n = mw_regex_redact(in, strlen(in), &out, &err);
	if (n != want_n || out.len != strlen(want) || memcmp(out.data, want, out.len) != 0)
		fail_msg("%s: got %zu \"%.*s\", want %zu \"%s\"", in, n, (int)out.len, out.data,
			 want_n, want);
	buf_free(&out);
}

static void the_pattern_and_its_edges(void **state)
{
	(void)state;
	redacts("sk-0123456789abcdef", "[REDACTED]", 1); /* exactly 16 */
	redacts("sk-0123456789abcde", "sk-0123456789abcde", 0); /* 15: no match */
	redacts("a sk-0123456789abcdef_-XYZ! b", "a [REDACTED]! b", 1); /* greedy run */
	redacts("ssk-0123456789abcdefsk-0123456789abcdef", "s[REDACTED]", 1); /* one run */
	redacts("sk-0123456789abcdef sk-0123456789abcdef", "[REDACTED] [REDACTED]", 2);
	redacts("SK-0123456789abcdef sk_0123456789abcdef",
		"SK-0123456789abcdef sk_0123456789abcdef", 0); /* case and separator matter */
	redacts("sk-", "sk-", 0);
	redacts("", "", 0);
	redacts("x sk-0123456789abcd\xc3\xa9"
		"ef",
		"x sk-0123456789abcd\xc3\xa9"
		"ef",
		0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_pattern_and_its_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
