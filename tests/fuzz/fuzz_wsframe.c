/* fuzz_wsframe.c - libFuzzer target for the WebSocket framing checks, fed
 * as a client's byte stream (the first byte picks whether permessage-deflate
 * was negotiated). Oracles: no crash or over-read; a head is at most 14 bytes
 * and every shorter prefix of it asks for more; every refusal carries 1002,
 * 1007 or 1009; the stream state never allows a frame after close; masking
 * twice is the identity. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wsframe.h"

static void valid_code(int code)
{
	if (code != WS_CLOSE_PROTOCOL && code != WS_CLOSE_INVALID_DATA && code != WS_CLOSE_TOO_BIG)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct ws_stream s = { .deflate = data[0] & 1 };
	const uint8_t *p = data + 1;
	size_t left = size - 1;
	static uint8_t payload[1 << 16], copy[1 << 16];
	while (left) {
		struct ws_head h;
		int code = 0;
		os_error err = { 0 };
		int r = ws_parse_head(p, left, true, &h, &code, &err);
		if (r == 0)
			break;
		if (r < 0) {
			valid_code(code);
			break;
		}
		if (h.head_len > WS_HEAD_MAX || h.head_len > left)
			abort();
		for (size_t k = 0; k < h.head_len; k++) {
			struct ws_head h2;
			if (ws_parse_head(p, k, true, &h2, &code, &err) != 0)
				abort();
		}
		bool was_closed = s.close_seen;
		if (ws_check_frame(&s, &h, &code, &err) < 0) {
			valid_code(code);
			break;
		}
		if (was_closed)
			abort(); /* a frame after close was accepted */
		p += h.head_len;
		left -= h.head_len;
		size_t n = h.len < left ? (size_t)h.len : left;
		if (n > sizeof payload)
			n = sizeof payload;
		memcpy(payload, p, n);
		memcpy(copy, p, n);
		ws_unmask(payload, n, h.mask, 0);
		if (h.opcode == WS_OP_CLOSE && n == h.len &&
		    ws_check_close(payload, n, &code, &err) < 0)
			valid_code(code);
		if (h.opcode == WS_OP_TEXT && h.fin && n == h.len)
			(void)ws_utf8_valid(payload, n);
		ws_unmask(payload, n, h.mask, 0);
		if (memcmp(payload, copy, n) != 0)
			abort();
		if (h.len > left)
			break;
		p += h.len;
		left -= (size_t)h.len;
	}
	return 0;
}
