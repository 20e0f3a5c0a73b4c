/* sse.c - incremental text/event-stream parsing (see sse.h). */
#include <errno.h>
#include <string.h>

#include "sse.h"

static const unsigned char BOM[3] = { 0xef, 0xbb, 0xbf };

void sse_init(struct sse_parser *p, size_t event_max)
{
	memset(p, 0, sizeof *p);
	p->event_max = event_max;
	buf_init(&p->raw, event_max + 1);
	buf_init(&p->data, event_max + 1);
}

void sse_free(struct sse_parser *p)
{
	buf_free(&p->raw);
	buf_free(&p->data);
}

size_t sse_pending(const struct sse_parser *p)
{
	return p->dispatched ? 0 : p->raw.len;
}

static void reset_event(struct sse_parser *p)
{
	buf_reset(&p->raw);
	buf_reset(&p->data);
	p->line_start = 0;
	p->has_data = false;
	p->type[0] = '\0';
	p->dispatched = false;
}

/* One complete line (without its end): a field, a comment or the blank line
 * (returns true: the event ends). */
static bool take_line(struct sse_parser *p, const char *line, size_t n, os_error *err, int *rc)
{
	if (n == 0)
		return true;
	if (line[0] == ':')
		return false; /* comment */
	const char *colon = memchr(line, ':', n);
	size_t nl = colon ? (size_t)(colon - line) : n;
	const char *v = colon ? colon + 1 : line + n;
	size_t vl = colon ? n - nl - 1 : 0;
	if (vl && v[0] == ' ') {
		v++;
		vl--;
	}
	if (nl == 4 && !memcmp(line, "data", 4)) {
		if (buf_append(&p->data, v, vl, err) < 0 || buf_append(&p->data, "\n", 1, err) < 0)
			*rc = -1;
		p->has_data = true;
	} else if (nl == 5 && !memcmp(line, "event", 5)) {
		size_t k = vl < sizeof p->type - 1 ? vl : sizeof p->type - 1;
		memcpy(p->type, v, k);
		p->type[k] = '\0';
	} /* id, retry and unknown fields: nothing to judge */
	return false;
}

static int dispatch(struct sse_parser *p, struct sse_event *ev)
{
	if (p->data.len) /* the last data line's LF is not part of the data */
		p->data.data[--p->data.len] = '\0';
	*ev = (struct sse_event){ .raw = p->raw.data,
				  .raw_len = p->raw.len,
				  .has_data = p->has_data,
				  .data = p->data.data ? p->data.data : "",
				  .data_len = p->data.len,
				  .type = p->type };
	p->dispatched = true;
	return SSE_EVENT;
}

int sse_feed(struct sse_parser *p, const char *in, size_t len, size_t *used, struct sse_event *ev,
	     os_error *err)
{
	if (p->dispatched)
		reset_event(p);
	if (p->end_pending) { /* the byte after an event's final CR */
		if (len == 0) {
			*used = 0;
			return SSE_NEED_MORE;
		}
		*used = in[0] == '\n';
		if (*used)
			buf_append(&p->raw, "\n", 1, NULL);
		p->cr = false;
		p->end_pending = false;
		return dispatch(p, ev);
	}
	size_t i = 0;
	int rc = 0;
	while (i < len) {
		unsigned char ch = (unsigned char)in[i++];
		if (p->raw.len >= p->event_max) {
			*used = i;
			return os_error_set(err, EMSGSIZE,
					    "server-sent event larger than %zu bytes",
					    p->event_max);
		}
		buf_append(&p->raw, &ch, 1, NULL); /* fits: raw's cap is event_max + 1 */
		if (!p->started) { /* a BOM opening the stream is not part of a line */
			if (ch == BOM[p->bom]) {
				if (++p->bom == 3) {
					p->started = true;
					p->line_start = p->raw.len;
				}
				continue;
			}
			p->started = true;
		}
		if (p->cr) {
			p->cr = false;
			if (ch == '\n') { /* the LF of a CRLF split across reads */
				p->line_start = p->raw.len;
				continue;
			}
		}
		if (ch != '\n' && ch != '\r')
			continue;
		p->cr = ch == '\r';
		const char *line = p->raw.data + p->line_start;
		size_t n = p->raw.len - 1 - p->line_start;
		bool end = take_line(p, line, n, err, &rc);
		if (rc < 0) {
			*used = i;
			return -1;
		}
		p->line_start = p->raw.len;
		if (!end)
			continue;
		/* An event ending in CR takes the LF that may follow (clients wait
		 * for it before they dispatch): when the CR is the last byte here,
		 * the event waits for the next byte. */
		if (p->cr && i == len) {
			p->end_pending = true;
			break;
		}
		if (p->cr && in[i] == '\n') {
			buf_append(&p->raw, "\n", 1, NULL);
			i++;
		}
		p->cr = false;
		*used = i;
		return dispatch(p, ev);
	}
	*used = i;
	return SSE_NEED_MORE;
}
