/* http_chunked.c - incremental decoder of chunked bodies (RFC 9112 7.1).
 * Strict: hex size with no padding or sign, at most 16 digits, extensions
 * bounded, CRLF everywhere, trailers under the header-field rules, a body cap.
 * It hands out spans of the input and never copies or allocates. */
#include <string.h>

#include "hex.h"
#include "http.h"
#include "http_internal.h"

enum { CS_SIZE, CS_DATA, CS_DATA_END, CS_TRAILER, CS_DONE, CS_FAILED };

void http_chunked_init(struct http_chunked *c, uint64_t body_max)
{
	memset(c, 0, sizeof(*c));
	c->body_max = body_max;
	c->trailer_max = HTTP_TRAILER_MAX_DEFAULT;
	c->state = CS_SIZE;
}

static int cfail(struct http_chunked *c, enum http_error e, size_t off, os_error *err,
		 const char *detail)
{
	c->error = e;
	c->state = CS_FAILED;
	return http_fail(e, (size_t)c->stream_off + off, err, detail);
}

/* Extensions are skipped, not interpreted: ';' then field bytes up to CR. */
static int scan_ext(struct http_chunked *c, const char *p, size_t avail, size_t off, size_t *i,
		    os_error *err)
{
	size_t start = *i;
	for (; *i < avail && p[*i] != '\r'; (*i)++) {
		unsigned char ch = (unsigned char)p[*i];
		if (*i - start >= HTTP_CHUNK_EXT_MAX)
			return cfail(c, HTTP_E_CHUNK_EXT_TOO_LONG, off + *i, err,
				     "chunk extensions over the limit");
		if (ch == '\0' || ch == '\n')
			return cfail(c, ch ? HTTP_E_BARE_LF : HTTP_E_NUL, off + *i, err,
				     "NUL or LF in chunk extension");
		if (!http_is_field_byte(ch))
			return cfail(c, HTTP_E_BAD_CHUNK_EXT, off + *i, err,
				     "control byte in chunk extension");
	}
	return 0;
}

/* Reads "HEX[;ext]CRLF" at p. 1: complete (*used, *size set); 0: need more. */
static int size_line(struct http_chunked *c, const char *p, size_t avail, size_t off, size_t *used,
		     uint64_t *size, os_error *err)
{
	size_t i = 0;
	uint64_t v = 0;
	int d;
	for (; i < avail && (d = hex_digit_value((unsigned char)p[i])) >= 0; i++) {
		if (i == HTTP_CHUNK_SIZE_DIGITS_MAX)
			return cfail(c, HTTP_E_CHUNK_SIZE_TOO_LARGE, off + i, err,
				     "chunk size has too many hex digits");
		v = v * 16 + (uint64_t)d;
	}
	if (i == avail)
		return 0;
	if (i == 0)
		return cfail(c, p[0] ? HTTP_E_BAD_CHUNK_SIZE : HTTP_E_NUL, off, err,
			     "chunk size must start with a hex digit");
	if (p[i] == ';' && scan_ext(c, p, avail, off, &i, err) < 0)
		return -1;
	if (i == avail)
		return 0;
	if (p[i] != '\r')
		return cfail(c,
			     p[i] == '\n'   ? HTTP_E_BARE_LF
			     : p[i] == '\0' ? HTTP_E_NUL
					    : HTTP_E_BAD_CHUNK_SIZE,
			     off + i, err, "expected ';' or CRLF after the chunk size");
	if (i + 1 == avail)
		return 0;
	if (p[i + 1] != '\n')
		return cfail(c, HTTP_E_BARE_CR, off + i, err, "CR without LF after chunk size");
	*used = i + 2;
	*size = v;
	return 1;
}

static int on_size(struct http_chunked *c, const char *in, size_t len, size_t *off, os_error *err)
{
	size_t used = 0;
	uint64_t size = 0, total;
	int r = size_line(c, in + *off, len - *off, *off, &used, &size, err);
	if (r <= 0)
		return r;
	if (size == 0) {
		c->state = CS_TRAILER;
	} else {
		if (__builtin_add_overflow(c->body_len, size, &total) || total > c->body_max)
			return cfail(c, HTTP_E_BODY_TOO_LARGE, *off, err,
				     "chunked body over the limit");
		c->remaining = size;
		c->state = CS_DATA;
	}
	*off += used;
	return 1;
}

static int on_data_end(struct http_chunked *c, const char *in, size_t len, size_t *off,
		       os_error *err)
{
	if (len - *off >= 1 && in[*off] != '\r')
		return cfail(c, HTTP_E_BAD_CHUNK_END, *off, err, "chunk data not followed by CRLF");
	if (len - *off < 2)
		return 0;
	if (in[*off + 1] != '\n')
		return cfail(c, HTTP_E_BAD_CHUNK_END, *off + 1, err,
			     "chunk data not followed by CRLF");
	*off += 2;
	c->state = CS_SIZE;
	return 1;
}

/* One trailer line; the window is cut at the cap so the outcome does not
 * depend on how the bytes were split. */
static int on_trailer(struct http_chunked *c, const char *in, size_t len, size_t *off,
		      os_error *err)
{
	size_t room = c->trailer_max - c->trailer_len;
	size_t avail = len - *off < room ? len - *off : room;
	const char *p = in + *off;
	size_t line_len, bad;
	enum http_error e;
	int r = http_find_crlf(p, avail, &line_len, &e, &bad);
	if (r < 0)
		return cfail(c, e, *off + bad, err, "bad line ending in trailer");
	if (r == 0)
		return avail == room ? cfail(c, HTTP_E_TRAILER_TOO_LARGE, *off, err,
					     "trailer section over the limit")
				     : 0;
	if (line_len == 0) {
		*off += 2;
		c->state = CS_DONE;
		return 1;
	}
	if (p[0] == ' ' || p[0] == '\t')
		return cfail(c, HTTP_E_OBS_FOLD, *off, err, "obsolete line folding in trailer");
	if (++c->trailers > HTTP_HEADERS_MAX_DEFAULT)
		return cfail(c, HTTP_E_TOO_MANY_HEADERS, *off, err, "too many trailer lines");
	struct http_header h;
	if (http_field_line(p, line_len, &h, &e, &bad) < 0)
		return cfail(c, e, *off + bad, err, "malformed trailer field");
	c->trailer_len += line_len + 2;
	*off += line_len + 2;
	return 1;
}

static int step(struct http_chunked *c, const char *in, size_t len, size_t *off, os_error *err)
{
	switch (c->state) {
	case CS_SIZE:
		return on_size(c, in, len, off, err);
	case CS_DATA_END:
		return on_data_end(c, in, len, off, err);
	case CS_TRAILER:
		return on_trailer(c, in, len, off, err);
	default:
		return 0;
	}
}

int http_chunked_feed(struct http_chunked *c, const char *in, size_t len, size_t *consumed,
		      struct http_slice *data, os_error *err)
{
	size_t off = 0;
	int r = 1;
	*consumed = 0;
	if (c->state == CS_FAILED)
		return http_fail(c->error, (size_t)c->stream_off, err, "decoder already failed");
	while (c->state != CS_DONE && c->state != CS_DATA && r > 0)
		r = step(c, in, len, &off, err);
	if (r < 0)
		return -1;
	if (c->state == CS_DATA && off < len) {
		size_t n = len - off < c->remaining ? len - off : (size_t)c->remaining;
		*data = (struct http_slice){ in + off, n };
		c->remaining -= n;
		c->body_len += n;
		off += n;
		if (c->remaining == 0)
			c->state = CS_DATA_END;
		r = HTTP_PARSE_DATA;
	} else {
		r = c->state == CS_DONE ? HTTP_PARSE_DONE : HTTP_PARSE_NEED_MORE;
	}
	*consumed = off;
	c->stream_off += off;
	return r;
}
