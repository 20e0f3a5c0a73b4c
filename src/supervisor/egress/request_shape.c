/* request_shape.c - finds method overrides and bodies on bodyless methods
 * in a parsed request head (see request_shape.h). Reads only the parser's
 * slices; every value is copied bounded and checked before it is kept. */
#include "request_shape.h"

#include <stdio.h>
#include <string.h>

#include "hex.h"
#include "parse.h"

static const char *const override_headers[] = { "X-HTTP-Method-Override", "X-HTTP-Method",
						"X-Method-Override" };

/* A method as the policy reads it: letters, '-', '_'; upper-cased into out. */
static bool method_token(const char *s, size_t len, char *out)
{
	if (len == 0 || len >= SHAPE_METHOD_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 'a' + 'A');
		if (!((ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '_'))
			return false;
		out[i] = ch;
	}
	out[len] = '\0';
	return true;
}

static int add(struct method_overrides *o, const char *source, const char *v, size_t len, char *why,
	       size_t cap)
{
	if (o->n == SHAPE_OVERRIDES_MAX) {
		snprintf(why, cap, "more than %d method overrides", SHAPE_OVERRIDES_MAX);
		return -1;
	}
	if (!method_token(v, len, o->method[o->n])) {
		snprintf(why, cap, "invalid method override in %s", source);
		return -1;
	}
	o->source[o->n++] = source;
	return 0;
}

/* Percent-decodes s[0..len) into out[cap] ('+' stays '+'); false on a bad
 * escape, a decoded NUL or no room. */
static bool decode(const char *s, size_t len, char *out, size_t cap, size_t *olen)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++, o++) {
		if (o + 1 >= cap)
			return false;
		if (s[i] != '%') {
			out[o] = s[i];
			continue;
		}
		int hi = i + 2 < len ? hex_digit_value((unsigned char)s[i + 1]) : -1;
		int lo = i + 2 < len ? hex_digit_value((unsigned char)s[i + 2]) : -1;
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false;
		out[o] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[o] = '\0';
	*olen = o;
	return true;
}

/* One query pair: a `_method` name (any case, escapes decoded) adds its
 * value; a name that cannot be decoded cannot be `_method` to anyone. */
static int query_pair(const char *p, size_t len, struct method_overrides *o, char *why, size_t cap)
{
	const char *eq = memchr(p, '=', len);
	size_t nlen = eq ? (size_t)(eq - p) : len;
	char name[16], val[SHAPE_METHOD_MAX * 3];
	size_t n = 0, v = 0;
	if (!decode(p, nlen, name, sizeof name, &n) || !str_ieq(name, n, "_method", 7))
		return 0;
	if (!eq || !decode(eq + 1, len - nlen - 1, val, sizeof val, &v))
		return add(o, "_method", "", 0, why, cap); /* refused: empty or undecodable */
	return add(o, "_method", val, v, why, cap);
}

static int query_overrides(const struct http_request *req, struct method_overrides *o, char *why,
			   size_t cap)
{
	const char *q = req->query.p;
	size_t len = req->has_query ? req->query.len : 0;
	for (size_t i = 0; i < len;) {
		size_t end = i;
		while (end < len && q[end] != '&' && q[end] != ';')
			end++;
		if (end > i && query_pair(q + i, end - i, o, why, cap) < 0)
			return -1;
		i = end + 1;
	}
	return 0;
}

int request_method_overrides(const struct http_request *req, struct method_overrides *out,
			     char *why, size_t cap)
{
	out->n = 0;
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *h = &req->headers.v[i];
		for (size_t k = 0; k < sizeof override_headers / sizeof override_headers[0]; k++)
			if (str_ieq(h->name.p, h->name.len, override_headers[k],
				    strlen(override_headers[k])) &&
			    add(out, override_headers[k], h->value.p, h->value.len, why, cap) < 0)
				return -1;
	}
	return query_overrides(req, out, why, cap);
}

bool request_body_without_semantics(const char *method, const struct http_request *req)
{
	size_t n = strlen(method);
	if (!str_ieq(method, n, "GET", 3) && !str_ieq(method, n, "HEAD", 4) &&
	    !str_ieq(method, n, "TRACE", 5))
		return false;
	return req->framing.chunked ||
	       (req->framing.has_content_length && req->framing.content_length > 0);
}
