/* toml_scan.c - the lexical layer of the TOML parser: UTF-8 validation,
 * whitespace, comments, line ends, the four string kinds and keys.
 * Never accepts a control character the specification forbids. */
#include "toml_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cleanup.h"
#include "hex.h"

int toml_fail_at(struct toml_cur *c, struct toml_pos pos, const char *fmt, ...)
{
	char msg[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return os_error_set(c->err, EINVAL, "%s:%u:%u: %s", c->file, pos.line, pos.col, msg);
}

int toml_fail(struct toml_cur *c, const char *fmt, ...)
{
	char msg[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return toml_fail_at(c, cur_pos(c), "%s", msg);
}

/* Length of the UTF-8 sequence at p[0..avail), or 0 if it is not valid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *p, size_t avail)
{
	unsigned char b = p[0];
	size_t n;
	uint32_t cp;
	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF) {
		n = 2;
		cp = b & 0x1F;
	} else if (b >= 0xE0 && b <= 0xEF) {
		n = 3;
		cp = b & 0x0F;
	} else if (b >= 0xF0 && b <= 0xF4) {
		n = 4;
		cp = b & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

int toml_check_utf8(struct toml_cur *c)
{
	/* Walk a copy so that an error carries the right line and column. */
	struct toml_cur w = *c;
	while (!cur_eof(&w)) {
		const unsigned char *p = (const unsigned char *)w.p + w.i;
		size_t n = utf8_len(p, w.len - w.i);
		if (n == 0)
			return toml_fail(&w, "invalid UTF-8 byte 0x%02X", p[0]);
		if (p[0] == '\r' && cur_at(&w, 1) != '\n')
			return toml_fail(&w, "carriage return not followed by a line feed");
		while (n--)
			cur_next(&w);
	}
	return 0;
}

static bool is_control(unsigned char ch)
{
	return (ch < 0x20 && ch != '\t') || ch == 0x7F;
}

void toml_skip_ws(struct toml_cur *c)
{
	while (cur_at(c, 0) == ' ' || cur_at(c, 0) == '\t')
		c->i++;
}

/* Skips a comment starting at '#', up to (not including) the line end. */
static int skip_comment(struct toml_cur *c)
{
	c->i++;
	while (!cur_eof(c)) {
		unsigned char ch = cur_at(c, 0);
		if (ch == '\n' || ch == '\r') /* a CR is always part of CRLF here */
			return 0;
		if (is_control(ch))
			return toml_fail(c, "control character U+%04X in comment", ch);
		c->i++;
	}
	return 0;
}

/* Consumes "\n" or "\r\n" if present; true if it did. */
static bool skip_newline(struct toml_cur *c)
{
	if (cur_at(c, 0) == '\r' && cur_at(c, 1) == '\n')
		c->i++;
	if (cur_at(c, 0) != '\n')
		return false;
	cur_next(c);
	return true;
}

int toml_skip_ws_comments_newlines(struct toml_cur *c)
{
	for (;;) {
		toml_skip_ws(c);
		if (cur_at(c, 0) == '#') {
			if (skip_comment(c) < 0)
				return -1;
		} else if (!skip_newline(c)) {
			return 0;
		}
	}
}

const char *toml_describe(const struct toml_cur *c, char *tmp, size_t cap)
{
	unsigned char ch = cur_at(c, 0);
	if (cur_eof(c))
		return "end of input";
	if (ch == '\n' || ch == '\r')
		return "end of line";
	if (ch > 0x20 && ch < 0x7F)
		snprintf(tmp, cap, "'%c'", ch);
	else
		snprintf(tmp, cap, "byte 0x%02X", ch);
	return tmp;
}

int toml_expect_eol(struct toml_cur *c)
{
	char tmp[16];
	toml_skip_ws(c);
	if (cur_at(c, 0) == '#' && skip_comment(c) < 0)
		return -1;
	if (cur_eof(c) || skip_newline(c))
		return 0;
	return toml_fail(c, "expected end of line, found %s", toml_describe(c, tmp, sizeof tmp));
}

static int put_utf8(struct buf *b, uint32_t cp, os_error *err)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return buf_append(b, u, n, err);
}

static int scan_unicode_escape(struct toml_cur *c, size_t digits, struct buf *b)
{
	struct toml_pos pos = cur_pos(c);
	uint32_t cp = 0;
	c->i += 2; /* backslash and u/U */
	for (size_t k = 0; k < digits; k++) {
		int d = hex_digit_value(cur_at(c, 0));
		if (d < 0)
			return toml_fail_at(c, pos, "\\%c escape needs %zu hex digits",
					    digits == 4 ? 'u' : 'U', digits);
		cp = (cp << 4) | (uint32_t)d;
		c->i++;
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return toml_fail_at(c, pos, "escape \\%c%0*X is not a Unicode scalar value",
				    digits == 4 ? 'u' : 'U', (int)digits, cp);
	return put_utf8(b, cp, c->err);
}

static int scan_escape(struct toml_cur *c, struct buf *b)
{
	unsigned char e = cur_at(c, 1);
	char out;
	switch (e) {
	case 'b':
		out = '\b';
		break;
	case 't':
		out = '\t';
		break;
	case 'n':
		out = '\n';
		break;
	case 'f':
		out = '\f';
		break;
	case 'r':
		out = '\r';
		break;
	case '"':
		out = '"';
		break;
	case '\\':
		out = '\\';
		break;
	case 'u':
		return scan_unicode_escape(c, 4, b);
	case 'U':
		return scan_unicode_escape(c, 8, b);
	default:
		if (e > 0x20 && e < 0x7F)
			return toml_fail(c, "invalid escape sequence \\%c", e);
		return toml_fail(c, "invalid escape sequence (backslash before byte 0x%02X)", e);
	}
	c->i += 2;
	return buf_append(b, &out, 1, c->err);
}

/* A backslash that ends a line in a multi-line basic string: trims the line
 * end and all whitespace and newlines after it. */
static bool skip_line_ending_backslash(struct toml_cur *c)
{
	size_t j = c->i + 1;
	while (j < c->len && (c->p[j] == ' ' || c->p[j] == '\t'))
		j++;
	if (j >= c->len || (c->p[j] != '\n' && c->p[j] != '\r'))
		return false;
	c->i = j;
	while (!cur_eof(c)) {
		unsigned char ch = cur_at(c, 0);
		if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
			cur_next(c);
		else
			break;
	}
	return true;
}

/* At a quote inside a multi-line string: true (and consumed) if it closes the
 * string; up to two quotes right before the delimiter belong to the content. */
static int ml_quotes(struct toml_cur *c, unsigned char q, struct buf *b, bool *closed)
{
	size_t n = 0;
	while (cur_at(c, n) == q)
		n++;
	if (n > 5)
		return toml_fail(c, "too many quotes at the end of a multi-line string");
	size_t content = n >= 3 ? n - 3 : n;
	for (size_t k = 0; k < content; k++)
		if (buf_append(b, &q, 1, c->err) < 0)
			return -1;
	c->i += n;
	*closed = n >= 3;
	return 0;
}

static int scan_body(struct toml_cur *c, unsigned char q, bool multi, struct buf *b)
{
	struct toml_pos start = cur_pos(c);
	c->i += multi ? 3 : 1;
	if (multi)
		skip_newline(c); /* a newline right after the delimiter is trimmed */
	for (;;) {
		unsigned char ch = cur_at(c, 0);
		bool closed = false;
		if (cur_eof(c))
			return toml_fail_at(c, start, "unterminated string");
		if (ch == q && !multi) {
			c->i++;
			return 0;
		}
		if (ch == q) {
			if (ml_quotes(c, q, b, &closed) < 0)
				return -1;
			if (closed)
				return 0;
			continue;
		}
		if (ch == '\\' && q == '"') {
			if (multi && skip_line_ending_backslash(c))
				continue;
			if (scan_escape(c, b) < 0)
				return -1;
			continue;
		}
		if ((ch == '\n' || ch == '\r') && !multi)
			return toml_fail(c, "newline in a single-line string");
		if (is_control(ch) && ch != '\n' && ch != '\r')
			return toml_fail(c, "control character U+%04X in string", ch);
		if (buf_append(b, &c->p[c->i], 1, c->err) < 0)
			return -1;
		cur_next(c);
	}
}

int toml_scan_string(struct toml_cur *c, bool allow_multi, char **out, size_t *out_len)
{
	unsigned char q = cur_at(c, 0);
	bool multi = cur_at(c, 1) == q && cur_at(c, 2) == q;
	_cleanup_buf_ struct buf b;
	buf_init(&b, TOML_MAX_INPUT);
	if (multi && !allow_multi)
		return toml_fail(c, "a multi-line string cannot be used here");
	if (scan_body(c, q, multi, &b) < 0)
		return -1;
	if (buf_append(&b, "", 0, c->err) < 0) /* makes data non-NULL */
		return -1;
	*out_len = b.len;
	*out = buf_steal(&b);
	return 0;
}

static bool is_bare(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_';
}

void toml_key_free(struct toml_key *key)
{
	for (size_t i = 0; i < key->n; i++)
		free(key->seg[i].s);
	key->n = 0;
}

static int scan_key_part(struct toml_cur *c, struct toml_key_seg *seg)
{
	char tmp[16];
	unsigned char ch = cur_at(c, 0);
	seg->pos = cur_pos(c);
	if (ch == '"' || ch == '\'')
		return toml_scan_string(c, false, &seg->s, &seg->len);
	size_t start = c->i;
	while (is_bare(cur_at(c, 0)))
		c->i++;
	if (c->i == start)
		return toml_fail(c, "expected a key, found %s", toml_describe(c, tmp, sizeof tmp));
	seg->len = c->i - start;
	seg->s = strndup(c->p + start, seg->len);
	if (!seg->s)
		return os_error_set(c->err, ENOMEM, "out of memory");
	return 0;
}

int toml_scan_key(struct toml_cur *c, struct toml_key *key)
{
	key->n = 0;
	for (;;) {
		toml_skip_ws(c);
		if (key->n == TOML_MAX_DEPTH) {
			toml_key_free(key);
			return toml_fail(c, "key has more than %d parts", TOML_MAX_DEPTH);
		}
		if (scan_key_part(c, &key->seg[key->n]) < 0) {
			toml_key_free(key);
			return -1;
		}
		key->n++;
		toml_skip_ws(c);
		if (cur_at(c, 0) != '.')
			return 0;
		c->i++;
	}
}
