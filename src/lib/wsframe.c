/* wsframe.c - strict WebSocket framing (see wsframe.h). */
#include <errno.h>
#include <string.h>

#include "wsframe.h"

static int refuse(int *code, int c, os_error *err, const char *msg)
{
	*code = c;
	return os_error_set(err, EPROTO, "%s", msg);
}

int ws_parse_head(const uint8_t *in, size_t len, bool from_client, struct ws_head *h, int *code,
		  os_error *err)
{
	if (len < 2)
		return 0;
	memset(h, 0, sizeof *h);
	h->fin = in[0] & 0x80;
	h->rsv = in[0] & 0x70;
	h->opcode = in[0] & 0x0f;
	h->masked = in[1] & 0x80;
	uint8_t l7 = in[1] & 0x7f;
	size_t need = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0) + (h->masked ? 4 : 0);
	if (len < need)
		return 0;
	size_t o = 2;
	if (l7 < 126) {
		h->len = l7;
	} else if (l7 == 126) {
		h->len = (uint64_t)in[2] << 8 | in[3];
		o = 4;
		if (h->len < 126)
			return refuse(code, WS_CLOSE_PROTOCOL, err,
				      "websocket frame uses non-minimal 16-bit extended length");
	} else {
		if (in[2] & 0x80)
			return refuse(code, WS_CLOSE_PROTOCOL, err,
				      "websocket frame uses non-canonical 64-bit length");
		for (int i = 0; i < 8; i++)
			h->len = h->len << 8 | in[2 + i];
		o = 10;
		if (h->len <= 0xffff)
			return refuse(code, WS_CLOSE_PROTOCOL, err,
				      "websocket frame uses non-minimal 64-bit extended length");
	}
	if (h->masked)
		memcpy(h->mask, in + o, 4);
	h->head_len = need;
	if (from_client && !h->masked)
		return refuse(code, WS_CLOSE_PROTOCOL, err, "websocket client frame is not masked");
	if (!from_client && h->masked)
		return refuse(code, WS_CLOSE_PROTOCOL, err, "websocket server frame is masked");
	return 1;
}

static bool is_control(uint8_t op)
{
	return op == WS_OP_CLOSE || op == WS_OP_PING || op == WS_OP_PONG;
}

int ws_check_frame(struct ws_stream *s, const struct ws_head *h, int *code, os_error *err)
{
	uint8_t op = h->opcode;
	if (s->close_seen)
		return refuse(code, WS_CLOSE_PROTOCOL, err, "websocket frame received after close");
	if (op != WS_OP_CONT && op != WS_OP_TEXT && op != WS_OP_BINARY && !is_control(op))
		return refuse(code, WS_CLOSE_PROTOCOL, err, "websocket frame uses reserved opcode");
	/* RSV1 (0x40) is permessage-deflate's, on a message's first frame only. */
	if (h->rsv && !(s->deflate && h->rsv == 0x40 && s->frag == WS_IDLE &&
			(op == WS_OP_TEXT || op == WS_OP_BINARY)))
		return refuse(code, WS_CLOSE_PROTOCOL, err,
			      "websocket frame has unsupported RSV bits or extension state");
	if (is_control(op)) {
		if (!h->fin)
			return refuse(code, WS_CLOSE_PROTOCOL, err,
				      "websocket control frame is fragmented");
		if (h->len > WS_CONTROL_MAX)
			return refuse(code, WS_CLOSE_PROTOCOL, err,
				      "websocket control frame exceeds 125 bytes");
		if (op == WS_OP_CLOSE)
			s->close_seen = true;
		return 0;
	}
	if (op == WS_OP_CONT && s->frag == WS_IDLE)
		return refuse(code, WS_CLOSE_PROTOCOL, err,
			      "websocket continuation frame without active fragmented message");
	if (op != WS_OP_CONT && s->frag != WS_IDLE)
		return refuse(code, WS_CLOSE_PROTOCOL, err,
			      "websocket data frame started before previous fragmented message "
			      "completed");
	bool text = op == WS_OP_TEXT || (op == WS_OP_CONT && s->frag == WS_IN_TEXT);
	if (op != WS_OP_CONT) {
		s->compressed = h->rsv == 0x40;
		s->text_len = 0;
	}
	if (text) {
		if (h->len > WS_TEXT_MAX || s->text_len + h->len > WS_TEXT_MAX)
			return refuse(code, WS_CLOSE_TOO_BIG, err,
				      "websocket text message exceeds 1048576 byte limit");
		s->text_len += h->len;
	} else if (h->len > WS_BINARY_FRAME_MAX) {
		return refuse(code, WS_CLOSE_TOO_BIG, err,
			      "websocket binary frame exceeds 16777216 byte relay limit");
	}
	s->frag = h->fin ? WS_IDLE : text ? WS_IN_TEXT : WS_IN_BINARY;
	return 0;
}

size_t ws_put_head(uint8_t *out, uint8_t opcode, uint64_t len, const uint8_t *mask)
{
	size_t n = 0;
	uint8_t m = mask ? 0x80 : 0;
	out[n++] = (uint8_t)(0x80 | opcode);
	if (len < 126) {
		out[n++] = (uint8_t)(m | len);
	} else if (len <= 0xffff) {
		out[n++] = m | 126;
		out[n++] = (uint8_t)(len >> 8);
		out[n++] = (uint8_t)len;
	} else {
		out[n++] = m | 127;
		for (int i = 7; i >= 0; i--)
			out[n++] = (uint8_t)(len >> (8 * i));
	}
	if (mask) {
		memcpy(out + n, mask, 4);
		n += 4;
	}
	return n;
}

void ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		p[i] ^= mask[(off + i) & 3];
}

bool ws_utf8_valid(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		size_t k;
		uint32_t cp, min;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			k = 1, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			k = 2, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			k = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((p[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static bool close_code_ok(unsigned c)
{
	return (c >= 1000 && c <= 1014 && !(c >= 1004 && c <= 1006)) || (c >= 3000 && c <= 4999);
}

int ws_check_close(const uint8_t *p, size_t n, int *code, os_error *err)
{
	if (n == 0)
		return 0;
	if (n == 1)
		return refuse(code, WS_CLOSE_PROTOCOL, err,
			      "websocket close frame payload cannot be exactly one byte");
	if (!close_code_ok((unsigned)p[0] << 8 | p[1]))
		return refuse(code, WS_CLOSE_PROTOCOL, err,
			      "websocket close frame uses invalid close code");
	if (!ws_utf8_valid(p + 2, n - 2))
		return refuse(code, WS_CLOSE_INVALID_DATA, err,
			      "websocket close frame reason is not valid UTF-8");
	return 0;
}
