/* json_override.c - `_method` members of a streamed JSON body (see
 * json_override.h). A byte-at-a-time state machine over RFC 8259 text: it
 * tracks strings (escapes included, so a quote or bracket inside one never
 * counts), nesting depth, and in the top-level object whether the next
 * string is a member name or a value. Names are decoded (`\u005fmethod` is
 * `_method`) and compared without regard to case; a `_method` value must be
 * a string, decoded, and a method token. */
#include "json_override.h"

#include <string.h>

#include "hex.h"
#include "parse.h"

enum { EXPECT_KEY, EXPECT_COLON, EXPECT_VALUE, EXPECT_AFTER };
enum { ROLE_OTHER, ROLE_KEY, ROLE_METHOD };

#define SOURCE "_method (JSON body)"

void json_override_init(struct json_override *j)
{
	memset(j, 0, sizeof *j);
}

static bool in_top_object(const struct json_override *j)
{
	return j->top_object && j->depth == 1;
}

static void fail(struct json_override *j, const char *why)
{
	if (j->failed)
		return;
	j->failed = true;
	str_join(j->why, sizeof j->why, why, NULL);
}

/* The `_method` member's value is not a string: nobody reads a method from it. */
static void value_not_string(struct json_override *j)
{
	if (in_top_object(j) && j->expect == EXPECT_VALUE && j->matched)
		fail(j, "_method in a JSON body is not a string");
	if (in_top_object(j) && j->expect == EXPECT_VALUE)
		j->expect = EXPECT_AFTER;
}

/* One decoded character of the string being read (0x80: not ASCII). */
static void text_put(struct json_override *j, unsigned char ch)
{
	if (j->role == ROLE_OTHER)
		return;
	if (ch >= 0x80 || j->text_len + 1 >= sizeof j->text) {
		j->text_over = true;
		return;
	}
	j->text[j->text_len++] = (char)ch;
}

static void string_start(struct json_override *j)
{
	j->in_string = true;
	j->text_len = 0;
	j->text_over = false;
	j->role = ROLE_OTHER;
	if (in_top_object(j) && j->expect == EXPECT_KEY)
		j->role = ROLE_KEY;
	else if (in_top_object(j) && j->expect == EXPECT_VALUE && j->matched)
		j->role = ROLE_METHOD;
}

static void string_end(struct json_override *j)
{
	j->in_string = false;
	if (j->role == ROLE_KEY) {
		j->matched = !j->text_over && str_ieq(j->text, j->text_len, "_method", 7);
		j->expect = EXPECT_COLON;
	} else if (j->role == ROLE_METHOD) {
		char why[96];
		if (j->text_over)
			fail(j, "invalid method override in _method (JSON body)");
		else if (method_overrides_add(&j->found, SOURCE, j->text, j->text_len, why,
					      sizeof why) < 0)
			fail(j, why);
		j->expect = EXPECT_AFTER;
	} else if (in_top_object(j) && j->expect == EXPECT_VALUE) {
		j->expect = EXPECT_AFTER;
	}
	j->matched = j->matched && j->role == ROLE_KEY;
}

/* Inside a string: escapes decoded, the closing quote ends it. */
static void string_byte(struct json_override *j, unsigned char ch)
{
	if (j->hex_left) {
		int v = hex_digit_value(ch);
		if (v < 0) { /* no decoder accepts it; count it as not ASCII */
			j->hex_left = 0;
			text_put(j, 0x80);
			return;
		}
		j->code = j->code << 4 | (uint32_t)v;
		if (--j->hex_left == 0)
			text_put(j, j->code < 0x80 ? (unsigned char)j->code : 0x80);
		return;
	}
	if (j->escape) {
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *k = strchr(from, ch);
		j->escape = false;
		if (ch == 'u') {
			j->hex_left = 4;
			j->code = 0;
		} else
			text_put(j, k && ch ? (unsigned char)to[k - from] : 0x80);
		return;
	}
	if (ch == '\\')
		j->escape = true;
	else if (ch == '"')
		string_end(j);
	else
		text_put(j, ch);
}

/* Outside strings: structure. */
static void structure_byte(struct json_override *j, unsigned char ch)
{
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
		return;
	if (!j->started) {
		j->started = true;
		j->top_object = ch == '{';
	}
	switch (ch) {
	case '"':
		string_start(j);
		return;
	case '{':
	case '[':
		value_not_string(j);
		j->depth++;
		if (in_top_object(j))
			j->expect = EXPECT_KEY;
		return;
	case '}':
	case ']':
		if (j->depth > 0)
			j->depth--;
		if (in_top_object(j))
			j->expect = EXPECT_AFTER;
		return;
	case ',':
		if (in_top_object(j)) {
			j->expect = EXPECT_KEY;
			j->matched = false;
		}
		return;
	case ':':
		if (in_top_object(j) && j->expect == EXPECT_COLON)
			j->expect = EXPECT_VALUE;
		return;
	default: /* a number, true, false or null */
		value_not_string(j);
	}
}

void json_override_feed(struct json_override *j, const char *p, size_t n)
{
	for (size_t i = 0; i < n && !j->failed; i++) {
		unsigned char ch = (unsigned char)p[i];
		if (j->in_string)
			string_byte(j, ch);
		else
			structure_byte(j, ch);
	}
}

bool json_override_content_type(const struct http_request *req)
{
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *h = &req->headers.v[i];
		if (str_ieq(h->name.p, h->name.len, "content-type", 12) &&
		    (memmem(h->value.p, h->value.len, "/json", 5) ||
		     memmem(h->value.p, h->value.len, "+json", 5)))
			return true;
	}
	return false;
}
