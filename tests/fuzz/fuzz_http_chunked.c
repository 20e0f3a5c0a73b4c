/* fuzz_http_chunked.c - libFuzzer target for the chunked-body decoder.
 * Oracles: no crash or over-read; the decoded body, result and error do not
 * depend on how the input is split; the body cap holds; a decoded body
 * re-encoded by the writer decodes to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http.h"

struct result {
	int rc;
	enum http_error error;
	size_t out_len, consumed;
};

/* Feeds in[0..n) in pieces of the sizes drawn from steps (cycled), keeping
 * unconsumed bytes as a caller would; decoded bytes go to out. */
static struct result decode(const char *in, size_t n, uint64_t cap, const uint8_t *steps,
			    size_t nsteps, char *out, char *pending)
{
	struct result r = { 0 };
	struct http_chunked c;
	os_error err = { 0 };
	size_t plen = 0, fed = 0, k = 0;
	http_chunked_init(&c, cap);
	for (;;) {
		size_t add = nsteps ? (size_t)steps[k++ % nsteps] % 8 + 1 : n;
		if (add > n - fed)
			add = n - fed;
		memcpy(pending + plen, in + fed, add);
		plen += add;
		fed += add;
		size_t used = 0;
		struct http_slice d;
		r.rc = http_chunked_feed(&c, pending, plen, &used, &d, &err);
		r.error = c.error;
		if (used > plen)
			abort();
		if (r.rc == HTTP_PARSE_DATA) {
			if (d.p < pending || d.p + d.len > pending + plen || d.len == 0)
				abort();
			memcpy(out + r.out_len, d.p, d.len);
			r.out_len += d.len;
		}
		memmove(pending, pending + used, plen - used);
		plen -= used;
		r.consumed += used;
		if (r.rc < 0 || r.rc == HTTP_PARSE_DONE ||
		    (r.rc == HTTP_PARSE_NEED_MORE && fed == n))
			return r;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* byte 0: body cap; byte 1: how many split-pattern bytes follow */
	uint64_t cap = data[0] < 128 ? data[0] : UINT64_MAX;
	size_t nsteps = data[1] % 16;
	if (2 + nsteps > size)
		return 0;
	static const uint8_t one_byte[] = { 0 };
	const uint8_t *steps = nsteps ? data + 2 : one_byte;
	const char *in = (const char *)data + 2 + nsteps;
	size_t n = size - 2 - nsteps;
	char *out_a = malloc(n + 1), *out_b = malloc(n + 1), *pending = malloc(n + 1);
	if (!out_a || !out_b || !pending)
		abort();
	struct result a = decode(in, n, cap, NULL, 0, out_a, pending);
	struct result b = decode(in, n, cap, steps, nsteps ? nsteps : 1, out_b, pending);
	if (a.rc != b.rc || a.error != b.error || a.out_len != b.out_len ||
	    memcmp(out_a, out_b, a.out_len) != 0 || a.out_len > cap)
		abort();
	if (a.rc >= 0 && a.consumed != b.consumed)
		abort();
	if (a.rc == HTTP_PARSE_DONE && a.out_len > 0) {
		struct buf enc;
		os_error err = { 0 };
		buf_init(&enc, 2 * n + 64);
		if (http_write_chunk(&enc, out_a, a.out_len, &err) < 0 ||
		    http_write_last_chunk(&enc, &err) < 0)
			abort();
		char *pend2 = malloc(enc.len + 1);
		if (!pend2)
			abort();
		struct result c = decode(enc.data, enc.len, cap, NULL, 0, out_b, pend2);
		if (c.rc != HTTP_PARSE_DONE || c.out_len != a.out_len ||
		    memcmp(out_a, out_b, a.out_len) != 0)
			abort();
		free(pend2);
		buf_free(&enc);
	}
	free(out_a);
	free(out_b);
	free(pending);
	return 0;
}
