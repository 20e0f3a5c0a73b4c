/* fuzz_canon.c - libFuzzer target for request-path canonicalisation. Beyond
 * memory safety it checks the invariants the proxy relies on: a canonical path
 * is a fixed point, and never contains `//`, `/./`, `/../` or a dot tail. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_CAP 8192

static void check_invariants(const char *out, size_t len)
{
	if (out[0] != '/' || strstr(out, "//") || strstr(out, "/./") || strstr(out, "/../") ||
	    strstr(out, ";"))
		abort();
	if ((len >= 2 && strcmp(out + len - 2, "/.") == 0) ||
	    (len >= 3 && strcmp(out + len - 3, "/..") == 0))
		abort();
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)out[i];
		if (c < 0x21 || c >= 0x7f || c == '\\' || c == '?')
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[OUT_CAP], again[OUT_CAP];
	const char *q = NULL;
	size_t qlen = 0;
	enum canon_result r =
		canon_request_path((const char *)data, size, out, sizeof out, &q, &qlen);
	if (q && (q < (const char *)data || q + qlen != (const char *)data + size || q[-1] != '?'))
		abort();
	if (canon_result_name(r) == NULL)
		abort();
	if (r != CANON_OK) {
		if (out[0] != '\0')
			abort(); /* nothing partial on failure */
		return 0;
	}
	size_t len = strlen(out);
	check_invariants(out, len);
	/* Fixed point: canonicalising the canonical path changes nothing. */
	if (canon_request_path(out, len, again, sizeof again, NULL, NULL) != CANON_OK ||
	    strcmp(out, again) != 0)
		abort();
	return 0;
}
