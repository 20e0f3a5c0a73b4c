/* execframe.h - the byte protocol of `sandbox exec` once the gateway has
 * upgraded both connections (docs/exec.md): frames of one type byte, a
 * 4-byte big-endian length and the payload. The gateway relays the bytes
 * without reading them; the CLI and the supervisor's exec relay speak it.
 * Pure encode/decode: no I/O. */
#ifndef OS_EXECFRAME_H
#define OS_EXECFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

#define EXECFRAME_HEAD 5
#define EXECFRAME_MAX_PAYLOAD (1u << 20)
#define EXECFRAME_UPGRADE "openshell-exec" /* the Upgrade token */

enum execframe_type {
	/* client -> command */
	EXECFRAME_STDIN = 'i', /* bytes for the command's stdin */
	EXECFRAME_STDIN_EOF = 'c', /* stdin is closed (empty payload) */
	EXECFRAME_RESIZE = 'r', /* tty size: rows, cols as two big-endian u16 */
	/* command -> client */
	EXECFRAME_STDOUT = 'o',
	EXECFRAME_STDERR = 'e',
	EXECFRAME_EXIT = 'x', /* exit status as a big-endian u32 (128+N: signal N); last */
	EXECFRAME_ERROR = 'E', /* the command could not be started: UTF-8 text; last */
};

struct execframe {
	uint8_t type;
	const uint8_t *payload; /* points into the buffer given to the decoder */
	uint32_t len;
};

/* Appends one frame to b. */
int execframe_put(struct buf *b, uint8_t type, const void *payload, size_t len, os_error *err);
int execframe_put_u32(struct buf *b, uint8_t type, uint32_t v, os_error *err);
int execframe_put_resize(struct buf *b, uint16_t rows, uint16_t cols, os_error *err);

/* Decodes the first frame of data[0..len). Returns the bytes it spans (> 0),
 * 0 when more bytes are needed, or -1 (err set) for an unknown type or an
 * oversize length: the stream cannot be trusted past that point. */
long execframe_take(const uint8_t *data, size_t len, struct execframe *f, os_error *err);

/* A terminal type the client's TERM may carry into an exec with a tty (a
 * terminfo name: 1..EXECFRAME_TERM_MAX of [A-Za-z0-9.+_-]); the gateway and
 * the supervisor both check it, so nothing else reaches the environment. */
#define EXECFRAME_TERM_MAX 64
bool execframe_term_ok(const char *term);

/* Payload helpers: -1 when the length is wrong for the type. */
int execframe_u32(const struct execframe *f, uint32_t *v);
int execframe_resize(const struct execframe *f, uint16_t *rows, uint16_t *cols);

#endif
