/* sse.h - an incremental text/event-stream parser (the WHATWG "server-sent
 * events" interpretation, which clients follow): lines end in CRLF, LF or
 * CR (a CRLF split across two reads is still one line end), a blank line
 * ends an event, `data:` values are joined with LF, `:` starts a comment, a
 * leading BOM is skipped. It finds event boundaries exactly where a client
 * would, so the proxy can judge each event and forward or drop it whole:
 * the parser keeps the event's raw bytes. */
#ifndef OS_SSE_H
#define OS_SSE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "error.h"

struct sse_event {
	const char *raw; /* the event's bytes as received, its blank line included */
	size_t raw_len;
	bool has_data; /* some data field: clients dispatch it */
	const char *data; /* the data fields joined by LF (NUL-terminated) */
	size_t data_len;
	const char *type; /* the event field, "" when none ("message") */
};

struct sse_parser {
	size_t event_max; /* raw bytes one event may take */
	struct buf raw, data;
	size_t line_start; /* offset in raw of the line being read */
	size_t bom; /* BOM bytes matched at the stream's start */
	bool started; /* past the stream's first bytes (BOM decided) */
	bool cr; /* the last line ended with CR: an LF next belongs to it */
	bool dispatched; /* the last call returned an event: reset first */
	bool end_pending; /* an event ended in CR at the input's end: its LF may follow */
	bool has_data;
	char type[64];
};

enum { SSE_NEED_MORE = 0, SSE_EVENT = 1 };

void sse_init(struct sse_parser *p, size_t event_max);
void sse_free(struct sse_parser *p);
/* Consumes input up to the end of one event: SSE_EVENT (*used bytes taken,
 * ev valid until the next call), SSE_NEED_MORE (all taken), or -1 when an
 * event grows beyond event_max. */
int sse_feed(struct sse_parser *p, const char *in, size_t len, size_t *used, struct sse_event *ev,
	     os_error *err);
/* Bytes of an unfinished event held (a stream ending here drops them, as
 * clients do). */
size_t sse_pending(const struct sse_parser *p);

#endif
