/* fuzz_ws_deflate.c - libFuzzer target for the WebSocket relay's
 * permessage-deflate pieces, on bytes an agent or a server controls: the
 * first byte picks the part (offer, answer, message). Oracles: no crash or
 * over-read; an offer or answer passed on is itself accepted again and asks
 * for client_no_context_takeover; inflating never exceeds its cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_ws_int.h"

#define CAP (64 * 1024)

static void asks_nct(const char *s)
{
	if (!strstr(s, "client_no_context_takeover"))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *p = (const char *)data + 1;
	size_t n = size - 1;
	char out[320], again[320];
	os_error err = { 0 };
	switch (data[0] % 3) {
	case 0:
		if (ws_deflate_offer(p, n, out, 256) == 1) {
			asks_nct(out);
			/* what goes upstream is itself a valid offer, unchanged */
			if (ws_deflate_offer(out, strlen(out), again, 256) != 1 ||
			    strcmp(out, again) != 0)
				abort();
		}
		break;
	case 1:
		if (ws_deflate_answer(p, n, out, sizeof out, &err) == 0) {
			asks_nct(out);
			if (ws_deflate_answer(out, strlen(out), again, sizeof again, &err) != 0 ||
			    strcmp(out, again) != 0)
				abort();
		}
		break;
	default: {
		struct buf in, plain;
		buf_init(&in, size);
		buf_init(&plain, CAP);
		buf_append(&in, p, n, NULL);
		if (ws_inflate(&in, &plain, CAP, &err) == 0 && plain.len > CAP)
			abort();
		buf_free(&in);
		buf_free(&plain);
	}
	}
	return 0;
}
