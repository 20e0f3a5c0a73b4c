/* graphql_lex.c - GraphQL's lexical grammar (spec section 2.1): ignored
 * tokens (BOM, white space, line terminators, comments, commas),
 * punctuators, names, numbers, strings and block strings. Every malformed
 * token is an error with its position; nothing is guessed. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "graphql.h"
#include "graphql_internal.h"
#include "utf8.h"

int gq_fail(const struct gq_lexer *l, const struct gq_token *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	unsigned col = 1;
	for (const char *q = t->line_start; q < t->p && q < l->end; q++)
		col += ((unsigned char)*q & 0xC0) != 0x80; /* characters, not bytes */
	return os_error_set(l->err, EINVAL, "line %u, column %u: %s", t->line, col, msg);
}

/* The whole source is UTF-8 and free of the control characters GraphQL
 * forbids (all but tab, LF and CR); positions are reported per character. */
static int check_source(struct gq_lexer *l)
{
	size_t bad = 0, len = (size_t)(l->end - l->s);
	bool utf8 = utf8_valid(l->s, len, &bad);
	struct gq_token at = { .line = 1, .line_start = l->s };
	for (size_t i = 0; i < (utf8 ? len : bad + 1); i++) {
		unsigned char ch = (unsigned char)l->s[i];
		at.p = l->s + i;
		if (!utf8 && i == bad)
			return gq_fail(l, &at, "the document is not valid UTF-8");
		if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
			return gq_fail(l, &at, "control character U+%04X is not allowed", ch);
		if (ch == '\n' || (ch == '\r' && (i + 1 == len || l->s[i + 1] != '\n'))) {
			at.line++;
			at.line_start = l->s + i + 1;
		}
	}
	return 0;
}

static void newline(struct gq_lexer *l, const char *after)
{
	l->line++;
	l->line_start = after;
}

/* White space, line terminators, comments, commas and the BOM. */
static void skip_ignored(struct gq_lexer *l)
{
	while (l->s < l->end) {
		char c = *l->s;
		if (c == ' ' || c == '\t' || c == ',') {
			l->s++;
		} else if (c == '\n') {
			newline(l, ++l->s);
		} else if (c == '\r') {
			l->s += l->s + 1 < l->end && l->s[1] == '\n' ? 2 : 1;
			newline(l, l->s);
		} else if (c == '#') {
			while (l->s < l->end && *l->s != '\n' && *l->s != '\r')
				l->s++;
		} else if ((size_t)(l->end - l->s) >= 3 && !memcmp(l->s, "\xEF\xBB\xBF", 3)) {
			l->s += 3;
		} else {
			return;
		}
	}
}

static bool name_start(char c)
{
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool hexdig(char c)
{
	return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int lex_number(struct gq_lexer *l, struct gq_token *t)
{
	const char *q = l->s;
	if (*q == '-')
		q++;
	if (q == l->end || !digit(*q))
		return gq_fail(l, t, "a number needs a digit after '-'");
	if (*q == '0' && q + 1 < l->end && digit(q[1]))
		return gq_fail(l, t, "a number cannot have a leading zero");
	while (q < l->end && digit(*q))
		q++;
	t->kind = GQ_INT;
	if (q < l->end && *q == '.') {
		if (++q == l->end || !digit(*q))
			return gq_fail(l, t, "a fractional part needs digits after '.'");
		while (q < l->end && digit(*q))
			q++;
		t->kind = GQ_FLOAT;
	}
	if (q < l->end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < l->end && (*q == '+' || *q == '-'))
			q++;
		if (q == l->end || !digit(*q))
			return gq_fail(l, t, "an exponent needs digits");
		while (q < l->end && digit(*q))
			q++;
		t->kind = GQ_FLOAT;
	}
	if (q < l->end && (*q == '.' || name_start(*q)))
		return gq_fail(l, t, "a number cannot be followed by '%c'", *q);
	l->s = q;
	return 0;
}

/* \u escapes: four hex digits, or {1-6 hex digits} up to U+10FFFF. */
static int lex_unicode_escape(struct gq_lexer *l, struct gq_token *t, const char **qp)
{
	const char *q = *qp;
	if (q < l->end && *q == '{') {
		uint32_t v = 0;
		size_t n = 0;
		for (q++; q < l->end && hexdig(*q) && n < 7; q++, n++)
			v = v * 16 + (uint32_t)(digit(*q) ? *q - '0' : (*q | 0x20) - 'a' + 10);
		if (!n || n > 6 || q == l->end || *q != '}' || v > 0x10FFFF ||
		    (v >= 0xD800 && v <= 0xDFFF))
			return gq_fail(l, t, "invalid \\u{...} escape in a string");
		*qp = q + 1;
		return 0;
	}
	for (int i = 0; i < 4; i++, q++)
		if (q == l->end || !hexdig(*q))
			return gq_fail(l, t, "\\u needs four hex digits in a string");
	*qp = q;
	return 0;
}

static int lex_string(struct gq_lexer *l, struct gq_token *t)
{
	const char *q = l->s + 1;
	while (q < l->end && *q != '"') {
		if (*q == '\n' || *q == '\r')
			return gq_fail(l, t, "unterminated string (line break inside \"...\")");
		if (*q != '\\') {
			q++;
			continue;
		}
		q++;
		if (q == l->end)
			break;
		if (*q == 'u') {
			q++;
			if (lex_unicode_escape(l, t, &q) < 0)
				return -1;
		} else if (strchr("\"\\/bfnrt", *q) && *q) {
			q++;
		} else {
			return gq_fail(l, t, "invalid escape '\\%c' in a string", *q);
		}
	}
	if (q == l->end)
		return gq_fail(l, t, "unterminated string");
	l->s = q + 1;
	return 0;
}

static int lex_block_string(struct gq_lexer *l, struct gq_token *t)
{
	const char *q = l->s + 3;
	for (;;) {
		if ((size_t)(l->end - q) < 3)
			return gq_fail(l, t, "unterminated block string");
		if (!memcmp(q, "\"\"\"", 3))
			break;
		if (*q == '\\' && (size_t)(l->end - q) >= 4 && !memcmp(q + 1, "\"\"\"", 3)) {
			q += 4;
		} else if (*q == '\n') {
			newline(l, ++q);
		} else if (*q == '\r') {
			q += q + 1 < l->end && q[1] == '\n' ? 2 : 1;
			newline(l, q);
		} else {
			q++;
		}
	}
	l->s = q + 3;
	return 0;
}

static int lex_token(struct gq_lexer *l, struct gq_token *t)
{
	char c = *l->s;
	if (strchr("!$&():=@[]{|}", c)) {
		t->kind = GQ_PUNCT;
		t->punct = c;
		l->s++;
	} else if (c == '.') {
		if ((size_t)(l->end - l->s) < 3 || memcmp(l->s, "...", 3) != 0)
			return gq_fail(l, t, "'.' is only valid as the spread '...'");
		t->kind = GQ_SPREAD;
		l->s += 3;
	} else if (name_start(c)) {
		t->kind = GQ_NAME;
		while (l->s < l->end && (name_start(*l->s) || digit(*l->s)))
			l->s++;
	} else if (c == '-' || digit(c)) {
		return lex_number(l, t);
	} else if (c == '"') {
		t->kind = GQ_STRING;
		if ((size_t)(l->end - l->s) >= 3 && !memcmp(l->s, "\"\"\"", 3))
			return lex_block_string(l, t);
		return lex_string(l, t);
	} else {
		return gq_fail(l, t, "unexpected character '%c'", c);
	}
	return 0;
}

int gq_next(struct gq_lexer *l)
{
	skip_ignored(l);
	struct gq_token *t = &l->cur;
	*t = (struct gq_token){ .p = l->s, .line = l->line, .line_start = l->line_start };
	if (l->s == l->end)
		return 0; /* GQ_EOF */
	if (++l->ntok > GRAPHQL_TOKEN_MAX)
		return gq_fail(l, t, "the document has more than %d tokens", GRAPHQL_TOKEN_MAX);
	if (lex_token(l, t) < 0)
		return -1;
	t->len = (size_t)(l->s - t->p);
	return 0;
}

int gq_lex_init(struct gq_lexer *l, const char *s, size_t len, os_error *err)
{
	*l = (struct gq_lexer){ .s = s, .end = s + len, .line_start = s, .line = 1, .err = err };
	if (check_source(l) < 0)
		return -1;
	return gq_next(l);
}
