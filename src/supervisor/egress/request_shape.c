/* request_shape.c - finds method overrides and bodies on bodyless methods
 * in a parsed request head (see request_shape.h). Reads only the parser's
 * slices; every value is copied bounded and checked before it is kept. */
#include "request_shape.h"

#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "hex.h"
#include "parse.h"

static const char *const override_headers[] = { "X-HTTP-Method-Override", "X-HTTP-Method",
						"X-Method-Override" };
/* Headers that make an upstream route another path than the request line's
 * (Symfony before 3.4.14, Zend, IIS URL Rewrite). */
static const char *const path_override_headers[] = { "X-Original-URL", "X-Rewrite-URL",
						     "X-Original-URI" };

/* The header's name is `want` as a CGI-style server sees it: any case, and
 * '_' the same as '-' (gateways and PHP, WSGI or Rack servers that map both
 * to HTTP_X_HTTP_METHOD_OVERRIDE let `X_HTTP_Method_Override` through). */
static bool header_name_is(struct http_slice name, const char *want)
{
	char dashed[32];
	size_t n = strlen(want);
	if (name.len != n || n > sizeof dashed)
		return false;
	for (size_t i = 0; i < n; i++)
		dashed[i] = name.p[i] == '_' ? '-' : name.p[i];
	return str_ieq(dashed, n, want, n);
}

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

int method_overrides_add(struct method_overrides *o, const char *source, const char *v, size_t len,
			 char *why, size_t cap)
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

/* A parameter name some framework reads as `_method`: any case, escapes
 * decoded when `escaped` ('+' as a space), and as PHP registers names:
 * leading spaces dropped, then '.', ' ' and '[' read as '_' (`.method`,
 * `[method` and ` _method` are `_method` to Laravel and Symfony). A name
 * that cannot be decoded is nobody's `_method`. */
static bool name_is_method(const char *p, size_t len, bool escaped)
{
	char out[7];
	size_t o = 0;
	bool leading = true;
	for (size_t i = 0; i < len; i++) {
		int ch = (unsigned char)p[i];
		if (escaped && ch == '%') {
			int hi = i + 2 < len ? hex_digit_value((unsigned char)p[i + 1]) : -1;
			int lo = i + 2 < len ? hex_digit_value((unsigned char)p[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return false;
			ch = hi << 4 | lo;
			i += 2;
		} else if (escaped && ch == '+') {
			ch = ' ';
		}
		if (leading && ch == ' ')
			continue;
		leading = false;
		if (ch == '.' || ch == ' ' || ch == '[')
			ch = '_';
		if (o == sizeof out)
			return false;
		out[o++] = (char)ch;
	}
	return str_ieq(out, o, "_method", 7);
}

/* One query pair: a `_method` name (see name_is_method) adds its value. */
static int query_pair(const char *p, size_t len, struct method_overrides *o, char *why, size_t cap)
{
	const char *eq = memchr(p, '=', len);
	size_t nlen = eq ? (size_t)(eq - p) : len;
	char val[SHAPE_METHOD_MAX * 3];
	size_t v = 0;
	if (!name_is_method(p, nlen, true))
		return 0;
	if (!eq || !decode(eq + 1, len - nlen - 1, val, sizeof val, &v))
		return method_overrides_add(o, "_method", "", 0, why,
					    cap); /* refused: empty or undecodable */
	return method_overrides_add(o, "_method", val, v, why, cap);
}

/* `&`/`;` separated pairs (a query string or a urlencoded form body). */
static int pairs_overrides(const char *q, size_t len, struct method_overrides *o, char *why,
			   size_t cap)
{
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

static int query_overrides(const struct http_request *req, struct method_overrides *o, char *why,
			   size_t cap)
{
	return pairs_overrides(req->query.p, req->has_query ? req->query.len : 0, o, why, cap);
}

int request_method_overrides(const struct http_request *req, struct method_overrides *out,
			     char *why, size_t cap)
{
	out->n = 0;
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *h = &req->headers.v[i];
		for (size_t k = 0; k < ARRAY_SIZE(override_headers); k++)
			if (header_name_is(h->name, override_headers[k]) &&
			    method_overrides_add(out, override_headers[k], h->value.p, h->value.len,
						 why, cap) < 0)
				return -1;
	}
	return query_overrides(req, out, why, cap);
}

const char *request_path_override(const struct http_request *req)
{
	for (size_t i = 0; i < req->headers.n; i++)
		for (size_t k = 0; k < ARRAY_SIZE(path_override_headers); k++)
			if (header_name_is(req->headers.v[i].name, path_override_headers[k]))
				return path_override_headers[k];
	return NULL;
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

/* The value of parameter `name` in a header value's `; k=v` list (token or
 * quoted string, no escapes inside quotes); false when absent or invalid. */
static bool header_param(const char *v, size_t len, const char *name, const char **out,
			 size_t *olen)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < len; i++) {
		if (v[i] != ';')
			continue;
		size_t k = i + 1;
		while (k < len && (v[k] == ' ' || v[k] == '\t'))
			k++;
		if (k + nl + 1 > len || !str_ieq(v + k, nl, name, nl) || v[k + nl] != '=')
			continue;
		k += nl + 1;
		if (k < len && v[k] == '"') {
			const char *q = memchr(v + k + 1, '"', len - k - 1);
			if (!q)
				return false;
			*out = v + k + 1;
			*olen = (size_t)(q - (v + k + 1));
		} else {
			size_t e = k;
			while (e < len && v[e] != ';' && v[e] != ' ' && v[e] != '\t')
				e++;
			*out = v + k;
			*olen = e - k;
		}
		return *olen > 0;
	}
	return false;
}

static bool media_type_is(const struct http_slice v, const char *type)
{
	size_t n = strlen(type), e = 0;
	while (e < v.len && v.p[e] != ';' && v.p[e] != ' ' && v.p[e] != '\t')
		e++;
	return e == n && str_ieq(v.p, n, type, n);
}

enum form_kind request_form_kind(const struct http_request *req, char *boundary, size_t cap)
{
	/* Rack reads a POST without a Content-Type as a urlencoded form; with
	 * several Content-Type headers, any form one counts (an upstream may
	 * take another than we would). */
	const struct http_header *h = NULL;
	bool any = false;
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *c = &req->headers.v[i];
		if (!str_ieq(c->name.p, c->name.len, "content-type", 12))
			continue;
		any = true;
		if (media_type_is(c->value, "multipart/form-data"))
			h = c;
		else if (media_type_is(c->value, "application/x-www-form-urlencoded") && !h)
			return FORM_URLENCODED;
	}
	if (!any)
		return FORM_URLENCODED;
	if (!h)
		return FORM_NONE;
	const char *b;
	size_t bl;
	if (!header_param(h->value.p, h->value.len, "boundary", &b, &bl) || bl + 1 > cap || bl > 70)
		return FORM_MULTIPART_INVALID; /* RFC 2046: 1..70 characters */
	memcpy(boundary, b, bl);
	boundary[bl] = '\0';
	return FORM_MULTIPART;
}

static const char *find(const char *h, size_t hl, const char *n, size_t nl)
{
	return nl && hl >= nl ? memmem(h, hl, n, nl) : NULL;
}

/* One part's headers [p, end): is it the form field `_method`? */
static bool part_is_method(const char *p, size_t len)
{
	for (size_t i = 0; i < len;) {
		const char *eol = find(p + i, len - i, "\r\n", 2);
		size_t ll = eol ? (size_t)(eol - (p + i)) : len - i;
		const char *line = p + i;
		if (ll > 20 && str_ieq(line, 20, "content-disposition:", 20)) {
			const char *name;
			size_t nl;
			if (!header_param(line + 20, ll - 20, "name", &name, &nl))
				return false;
			return name_is_method(name, nl, false);
		}
		i += ll + 2;
	}
	return false;
}

static int multipart_overrides(const char *body, size_t len, const char *boundary,
			       struct method_overrides *o, char *why, size_t cap)
{
	char delim[80];
	int dl = snprintf(delim, sizeof delim, "\r\n--%s", boundary);
	/* The first delimiter may open the body (no preamble, no CRLF before). */
	const char *p;
	if (len >= (size_t)dl - 2 && memcmp(body, delim + 2, (size_t)dl - 2) == 0)
		p = body + dl - 2;
	else if ((p = find(body, len, delim, (size_t)dl)))
		p += dl;
	else {
		snprintf(why, cap, "multipart body without its boundary");
		return -1;
	}
	const char *end = body + len;
	for (;;) {
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return 0; /* the close delimiter */
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
			snprintf(why, cap, "malformed multipart delimiter line");
			return -1;
		}
		p += 2;
		const char *hend = find(p, (size_t)(end - p), "\r\n\r\n", 4);
		const char *next = find(p, (size_t)(end - p), delim, (size_t)dl);
		if (!hend || !next || hend > next) {
			snprintf(why, cap, "malformed or unterminated multipart part");
			return -1;
		}
		const char *val = hend + 4;
		if (part_is_method(p, (size_t)(hend - p)) &&
		    method_overrides_add(o, "_method (form body)", val, (size_t)(next - val), why,
					 cap) < 0)
			return -1;
		p = next + dl;
	}
}

int request_form_overrides(enum form_kind kind, const char *boundary, const char *body, size_t len,
			   struct method_overrides *out, char *why, size_t cap)
{
	if (kind == FORM_URLENCODED)
		return pairs_overrides(body, len, out, why, cap);
	if (kind == FORM_MULTIPART)
		return multipart_overrides(body, len, boundary, out, why, cap);
	if (kind == FORM_MULTIPART_INVALID) {
		snprintf(why, cap, "multipart/form-data without a valid boundary");
		return -1;
	}
	return 0;
}
