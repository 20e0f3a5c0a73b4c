/* fuzz_sigv4.c - libFuzzer target for the SigV4 canonical request
 * (sigv4.c): the path and query a signed request carries are the agent's.
 * Input: path, NUL, query, NUL, a host name. Checks that the canonical URI
 * and query hold only what SigV4 allows (unreserved bytes, %XX escapes,
 * '/', '=', '&'), that both encodings agree on paths without '%', and that
 * a region found in the host name is one of its labels. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool upper_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static bool allowed(const char *s, size_t n, const char *extra)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n || !upper_hex(s[i + 1]) || !upper_hex(s[i + 2]))
				return false;
			i += 2;
			continue;
		}
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '-' || c == '.' || c == '_' || c == '~' || (c && strchr(extra, c))))
			return false;
	}
	return true;
}

static void canonical(const char *path, size_t pl, const char *query, size_t ql, bool single,
		      struct buf *out)
{
	struct sigv4_header h = { "host", "h", 4, 1 };
	struct sigv4_request r = { .method = "GET",
				   .path = path,
				   .path_len = pl,
				   .query = query,
				   .query_len = ql,
				   .headers = &h,
				   .n_headers = 1,
				   .payload_hash = SIGV4_UNSIGNED_PAYLOAD,
				   .amz_date = "20150830T123600Z",
				   .region = "r",
				   .service = "s",
				   .single_encode = single };
	os_error err = { 0 };
	if (sigv4_canonical_request(&r, out, &err) < 0)
		abort(); /* every byte string has a canonical form */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	const char *z1 = memchr(p, 0, size);
	size_t pl = z1 ? (size_t)(z1 - p) : size;
	const char *q = z1 ? z1 + 1 : end;
	const char *z2 = memchr(q, 0, (size_t)(end - q));
	size_t ql = z2 ? (size_t)(z2 - q) : (size_t)(end - q);
	struct buf a, b;
	buf_init(&a, 1 << 20);
	buf_init(&b, 1 << 20);
	canonical(p, pl, q, ql, false, &a);
	canonical(p, pl, q, ql, true, &b);
	/* "GET\n<uri>\n<query>\n..." */
	const char *u = a.data + 4, *ue = strchr(u, '\n'), *qe = strchr(ue + 1, '\n');
	if (!allowed(u, (size_t)(ue - u), "/") || !allowed(ue + 1, (size_t)(qe - ue - 1), "=&"))
		abort();
	if (!memchr(p, '%', pl) && strcmp(a.data, b.data) != 0)
		abort();
	buf_free(&a);
	buf_free(&b);
	if (z2) {
		char host[256], region[64];
		size_t hl = (size_t)(end - z2 - 1) < sizeof host - 1 ? (size_t)(end - z2 - 1)
								     : sizeof host - 1;
		memcpy(host, z2 + 1, hl);
		host[hl] = '\0';
		if (sigv4_region_from_host(host, region, sizeof region) &&
		    (!strstr(host, region) || !region[0]))
			abort();
	}
	return 0;
}
