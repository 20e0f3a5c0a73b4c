/* test_sse.c - the event-stream parser: events found where a client finds
 * them, whatever the reads' boundaries (every split of every stream below
 * gives the same events), line ends of all three kinds, a CRLF split
 * between reads, a BOM, comments, and the size cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sse.h"

#define MAX_EVENTS 8

struct got {
	size_t n;
	char data[MAX_EVENTS][256];
	char raw[MAX_EVENTS][256];
	bool has_data[MAX_EVENTS];
	char type[MAX_EVENTS][64];
};

/* Feeds s in pieces of at most step bytes (0: whole). */
static void run(const char *s, size_t len, size_t step, struct got *g)
{
	struct sse_parser p;
	sse_init(&p, 4096);
	memset(g, 0, sizeof *g);
	for (size_t off = 0; off < len;) {
		size_t n = step && len - off > step ? step : len - off;
		const char *in = s + off;
		size_t left = n;
		while (left) {
			size_t used = 0;
			struct sse_event ev;
			os_error err = { 0 };
			int r = sse_feed(&p, in, left, &used, &ev, &err);
			assert_true(r >= 0);
			in += used;
			left -= used;
			if (r == SSE_EVENT) {
				assert_true(g->n < MAX_EVENTS);
				snprintf(g->data[g->n], 256, "%.*s", (int)ev.data_len, ev.data);
				snprintf(g->raw[g->n], 256, "%.*s", (int)ev.raw_len, ev.raw);
				snprintf(g->type[g->n], 64, "%s", ev.type);
				g->has_data[g->n++] = ev.has_data;
			}
		}
		off += n;
	}
	sse_free(&p);
}

/* Every split gives the same events; the raw bytes of all events, joined,
 * are a prefix of the stream (nothing reordered, nothing invented). */
static void same_for_every_split(const char *s, struct got *whole)
{
	size_t len = strlen(s);
	run(s, len, 0, whole);
	for (size_t step = 1; step < len; step++) {
		struct got g;
		run(s, len, step, &g);
		assert_int_equal(g.n, whole->n);
		for (size_t i = 0; i < g.n; i++) {
			assert_string_equal(g.data[i], whole->data[i]);
			assert_int_equal(g.has_data[i], whole->has_data[i]);
			assert_string_equal(g.type[i], whole->type[i]);
		}
	}
	char joined[2048] = "";
	for (size_t i = 0; i < whole->n; i++)
		strncat(joined, whole->raw[i], sizeof joined - strlen(joined) - 1);
	assert_memory_equal(joined, s, strlen(joined));
}

static void events_and_fields(void **state)
{
	(void)state;
	struct got g;
	same_for_every_split("data: {\"a\":1}\n\n: comment\n\nevent: message\ndata:x\ndata: y\n"
			     "id: 7\nretry: 10\n\ndata\n\n",
			     &g);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.data[0], "{\"a\":1}");
	assert_false(g.has_data[1]); /* a comment: nothing dispatched */
	assert_string_equal(g.data[2], "x\ny");
	assert_string_equal(g.type[2], "message");
	assert_true(g.has_data[3]);
	assert_string_equal(g.data[3], "");
}

/* CR, LF and CRLF all end lines; CRLF is one end even split between reads
 * (read as CR then an empty line it would end an event early). */
static void line_ends(void **state)
{
	(void)state;
	struct got g;
	same_for_every_split("data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\rdata: e\n\r\n", &g);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.data[0], "a\nb");
	assert_string_equal(g.data[1], "c\nd");
	assert_string_equal(g.data[2], "e");
}

static void bom_and_unfinished_event(void **state)
{
	(void)state;
	struct got g;
	same_for_every_split("\xef\xbb\xbf"
			     "data: first\n\ndata: never ends\n",
			     &g);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.data[0], "first");
	/* a BOM later in the stream is data, not skipped */
	same_for_every_split("data: a\n\n\xef\xbb\xbf"
			     "data: b\n\n",
			     &g);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.data[1], "");
	assert_false(g.has_data[1]); /* the field is named BOM+"data" */
}

static void size_capped(void **state)
{
	(void)state;
	struct sse_parser p;
	sse_init(&p, 16);
	size_t used;
	struct sse_event ev;
	os_error err = { 0 };
	const char *s = "data: 0123456789abcdef\n\n";
	assert_int_equal(sse_feed(&p, s, strlen(s), &used, &ev, &err), -1);
	assert_non_null(strstr(err.msg, "larger than 16"));
	sse_free(&p);
	sse_init(&p, 16);
	s = "data: 0123456\n\n"; /* positive control: 15 bytes */
	assert_int_equal(sse_feed(&p, s, strlen(s), &used, &ev, &err), SSE_EVENT);
	sse_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(events_and_fields),
		cmocka_unit_test(line_ends),
		cmocka_unit_test(bom_and_unfinished_event),
		cmocka_unit_test(size_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
