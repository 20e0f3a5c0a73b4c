/* fuzz_sse.c - libFuzzer target for the event-stream parser. The first
 * input byte draws the read sizes. Oracles: no crash or over-read; the
 * events (data, type, whether dispatched) and the error do not depend on
 * how the stream is split; the raw bytes of the events, joined, are a
 * prefix of the stream (the proxy forwards exactly what it judged). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

#define EVENT_MAX 512

struct trace {
	uint64_t hash; /* over every event's fields, in order */
	size_t events, raw_total;
	int rc;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h ^ n;
}

static struct trace run(const uint8_t *s, size_t len, unsigned step_seed)
{
	struct trace t = { .hash = 1469598103934665603ull };
	struct sse_parser p;
	sse_init(&p, EVENT_MAX);
	size_t off = 0;
	unsigned k = step_seed;
	while (off < len && t.rc >= 0) {
		size_t n = step_seed ? (k = k * 1103515245u + 12345u) % 7 + 1 : len - off;
		if (n > len - off)
			n = len - off;
		const char *in = (const char *)s + off;
		size_t left = n;
		while (left) {
			size_t used = 0;
			struct sse_event ev;
			os_error err = { 0 };
			int r = sse_feed(&p, in, left, &used, &ev, &err);
			if (used > left)
				abort();
			if (r < 0) {
				t.rc = -1;
				break;
			}
			in += used;
			left -= used;
			if (r == SSE_EVENT) {
				if (ev.raw_len > EVENT_MAX ||
				    memcmp(ev.raw, s + t.raw_total, ev.raw_len) != 0)
					abort();
				t.raw_total += ev.raw_len;
				t.events++;
				t.hash = mix(t.hash, ev.data, ev.data_len);
				t.hash = mix(t.hash, ev.type, strlen(ev.type));
				t.hash = mix(t.hash, &ev.has_data, 1);
			} else if (left != 0) {
				abort(); /* NEED_MORE consumes everything */
			}
		}
		off += n;
	}
	sse_free(&p);
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct trace whole = run(data + 1, size - 1, 0);
	struct trace split = run(data + 1, size - 1, data[0] | 1u);
	if (whole.rc != split.rc ||
	    (whole.rc == 0 && (whole.hash != split.hash || whole.events != split.events ||
			       whole.raw_total != split.raw_total)))
		abort();
	return 0;
}
