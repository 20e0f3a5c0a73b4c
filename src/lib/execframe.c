/* execframe.c - see execframe.h. */
#include "execframe.h"

#include <errno.h>
#include <string.h>

static int known(uint8_t t)
{
	switch (t) {
	case EXECFRAME_STDIN:
	case EXECFRAME_STDIN_EOF:
	case EXECFRAME_RESIZE:
	case EXECFRAME_STDOUT:
	case EXECFRAME_STDERR:
	case EXECFRAME_EXIT:
	case EXECFRAME_ERROR:
		return 1;
	default:
		return 0;
	}
}

int execframe_put(struct buf *b, uint8_t type, const void *payload, size_t len, os_error *err)
{
	if (len > EXECFRAME_MAX_PAYLOAD)
		return os_error_set(err, EMSGSIZE, "exec frame of %zu bytes (max %u)", len,
				    EXECFRAME_MAX_PAYLOAD);
	uint8_t head[EXECFRAME_HEAD] = { type, (uint8_t)(len >> 24), (uint8_t)(len >> 16),
					 (uint8_t)(len >> 8), (uint8_t)len };
	if (buf_append(b, head, sizeof head, err) < 0 ||
	    (len && buf_append(b, payload, len, err) < 0))
		return -1;
	return 0;
}

int execframe_put_u32(struct buf *b, uint8_t type, uint32_t v, os_error *err)
{
	uint8_t p[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	return execframe_put(b, type, p, sizeof p, err);
}

int execframe_put_resize(struct buf *b, uint16_t rows, uint16_t cols, os_error *err)
{
	uint8_t p[4] = { (uint8_t)(rows >> 8), (uint8_t)rows, (uint8_t)(cols >> 8), (uint8_t)cols };
	return execframe_put(b, EXECFRAME_RESIZE, p, sizeof p, err);
}

long execframe_take(const uint8_t *data, size_t len, struct execframe *f, os_error *err)
{
	if (len < 1)
		return 0;
	if (!known(data[0]))
		return os_error_set(err, EPROTO, "exec stream: unknown frame type 0x%02x", data[0]);
	if (len < EXECFRAME_HEAD)
		return 0;
	uint32_t n = (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 |
		     data[4];
	if (n > EXECFRAME_MAX_PAYLOAD)
		return os_error_set(err, EMSGSIZE, "exec stream: frame of %u bytes (max %u)", n,
				    EXECFRAME_MAX_PAYLOAD);
	if (len - EXECFRAME_HEAD < n)
		return 0;
	f->type = data[0];
	f->payload = data + EXECFRAME_HEAD;
	f->len = n;
	return (long)(EXECFRAME_HEAD + n);
}

int execframe_u32(const struct execframe *f, uint32_t *v)
{
	if (f->len != 4)
		return -1;
	const uint8_t *p = f->payload;
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return 0;
}

int execframe_resize(const struct execframe *f, uint16_t *rows, uint16_t *cols)
{
	if (f->type != EXECFRAME_RESIZE || f->len != 4)
		return -1;
	*rows = (uint16_t)(f->payload[0] << 8 | f->payload[1]);
	*cols = (uint16_t)(f->payload[2] << 8 | f->payload[3]);
	return 0;
}

bool execframe_term_ok(const char *term)
{
	size_t n = term ? strlen(term) : 0;
	return n >= 1 && n <= EXECFRAME_TERM_MAX &&
	       strspn(term, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.+_-") ==
		       n;
}
