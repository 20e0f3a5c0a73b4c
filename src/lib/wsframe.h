/* wsframe.h - strict WebSocket framing (RFC 6455) as a proxy reads it from
 * the client: one frame head at a time (minimal length encodings only, a
 * client frame must be masked), checked against the message in progress
 * (fragmentation, control frames unfragmented and at most 125 bytes, RSV1
 * only for permessage-deflate on a message's first frame, nothing after a
 * close, size caps), plus close payloads and UTF-8. Each refusal carries the
 * close code the proxy answers with: 1002 protocol error, 1007 invalid data,
 * 1009 too big. The limits follow OpenShell's WebSocket relay. Building block
 * of `protocol: websocket` (not wired into the proxy yet). */
#ifndef OS_WSFRAME_H
#define OS_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define WS_CONTROL_MAX 125
#define WS_HEAD_MAX 14
#define WS_TEXT_MAX (1024 * 1024) /* one text message, decompressed */
#define WS_BINARY_FRAME_MAX (16 * 1024 * 1024)

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa,
};

enum ws_close_code {
	WS_CLOSE_NORMAL = 1000,
	WS_CLOSE_PROTOCOL = 1002,
	WS_CLOSE_INVALID_DATA = 1007,
	WS_CLOSE_POLICY = 1008,
	WS_CLOSE_TOO_BIG = 1009,
};

struct ws_head {
	bool fin;
	uint8_t rsv; /* the three RSV bits, in place (0x70 mask) */
	uint8_t opcode;
	bool masked;
	uint64_t len;
	uint8_t mask[4];
	size_t head_len; /* bytes of the head, mask included */
};

/* The message in progress on one direction. */
struct ws_stream {
	enum { WS_IDLE, WS_IN_TEXT, WS_IN_BINARY } frag;
	bool compressed; /* the fragmented message started with RSV1 */
	bool close_seen;
	bool deflate; /* permessage-deflate was negotiated */
	uint64_t text_len; /* raw bytes of the text message so far */
};

/* One head from in[0..len): 1 (h filled), 0 (need more bytes) or -1
 * (*code and err set). from_client: the frame must be masked. */
int ws_parse_head(const uint8_t *in, size_t len, bool from_client, struct ws_head *h, int *code,
		  os_error *err);

/* Checks h against the stream and advances it: 0, or -1 (*code, err). */
int ws_check_frame(struct ws_stream *s, const struct ws_head *h, int *code, os_error *err);

/* Writes a frame head (FIN set, minimal length encoding, the mask when
 * given) to out, which holds WS_HEAD_MAX bytes; returns its length. */
size_t ws_put_head(uint8_t *out, uint8_t opcode, uint64_t len, const uint8_t *mask);

/* XORs n payload bytes that start at payload offset off. */
void ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t off);

/* A close frame's payload (unmasked): empty, or a valid code + UTF-8. */
int ws_check_close(const uint8_t *p, size_t n, int *code, os_error *err);

bool ws_utf8_valid(const uint8_t *p, size_t n);

#endif
