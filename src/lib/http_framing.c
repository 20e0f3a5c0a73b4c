/* http_framing.c - turns parsed header fields into message framing (RFC 9112
 * section 6) under the strict reading: one Transfer-Encoding, exactly
 * "chunked"; Content-Length only as identical digits; never both. It must
 * never resolve a conflict by picking a winner: conflicts are errors. */
#include <string.h>

#include "http_framing.h"
#include "parse.h"

static int ffail(struct http_framing_error *fe, enum http_error e, const char *base,
		 const struct http_header *h, const char *detail)
{
	fe->error = e;
	fe->offset = (size_t)(h->name.p - base);
	fe->detail = detail;
	return -1;
}

static bool name_is(const struct http_header *h, const char *name)
{
	return str_ieq(h->name.p, h->name.len, name, strlen(name));
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Content-Length = 1*DIGIT, or a list of identical ones ("5, 5", which RFC
 * 9112 6.3 lets a recipient collapse). Returns 0, -1 (malformed or
 * overflow) or -2 (list of differing values). */
static int parse_content_length(struct http_slice v, uint64_t *out)
{
	size_t i = 0;
	bool have = false;
	for (;;) {
		while (i < v.len && is_ows(v.p[i]))
			i++;
		size_t start = i;
		while (i < v.len && v.p[i] >= '0' && v.p[i] <= '9')
			i++;
		uint64_t n;
		if (i == start || parse_u64(v.p + start, i - start, 0, INT64_MAX, &n, NULL) < 0)
			return -1;
		if (have && n != *out)
			return -2;
		*out = n;
		have = true;
		while (i < v.len && is_ows(v.p[i]))
			i++;
		if (i == v.len)
			return 0;
		if (v.p[i] != ',')
			return -1;
		i++;
	}
}

static int on_content_length(const struct http_header *h, const char *base, struct http_framing *f,
			     struct http_framing_error *fe)
{
	uint64_t n = 0;
	int r = parse_content_length(h->value, &n);
	if (r == -2)
		return ffail(fe, HTTP_E_BAD_CONTENT_LENGTH, base, h,
			     "Content-Length list with differing values");
	if (r < 0)
		return ffail(fe, HTTP_E_BAD_CONTENT_LENGTH, base, h,
			     "Content-Length is not a decimal number up to 2^63-1");
	/* Identical duplicates are accepted (same reading everywhere); any
	 * difference is a smuggling attempt or a broken peer. */
	if (f->has_content_length && f->content_length != n)
		return ffail(fe, HTTP_E_CONFLICTING_CONTENT_LENGTH, base, h,
			     "several Content-Length headers with differing values");
	f->has_content_length = true;
	f->content_length = n;
	return 0;
}

/* Only a single "chunked" is accepted: every other coding (or list) would
 * need a decoder here and is where TE.TE smuggling hides. */
static int on_transfer_encoding(const struct http_header *h, int version_minor, const char *base,
				struct http_framing *f, struct http_framing_error *fe)
{
	if (version_minor == 0)
		return ffail(fe, HTTP_E_BAD_TRANSFER_ENCODING, base, h,
			     "Transfer-Encoding in an HTTP/1.0 message");
	if (f->chunked)
		return ffail(fe, HTTP_E_BAD_TRANSFER_ENCODING, base, h,
			     "more than one Transfer-Encoding header");
	if (!str_ieq(h->value.p, h->value.len, "chunked", 7))
		return ffail(fe, HTTP_E_BAD_TRANSFER_ENCODING, base, h,
			     "Transfer-Encoding other than exactly \"chunked\"");
	f->chunked = true;
	return 0;
}

struct conn_tokens {
	bool close, keep_alive, upgrade;
};

static void on_connection(const struct http_header *h, struct conn_tokens *ct)
{
	const char *p = h->value.p, *end = p + h->value.len;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		const char *s = p;
		while (s < e && is_ows(*s))
			s++;
		const char *t = e;
		while (t > s && is_ows(t[-1]))
			t--;
		size_t n = (size_t)(t - s);
		ct->close |= str_ieq(s, n, "close", 5);
		ct->keep_alive |= str_ieq(s, n, "keep-alive", 10);
		ct->upgrade |= str_ieq(s, n, "upgrade", 7);
		p = comma ? comma + 1 : end;
	}
}

int http_framing_derive(const struct http_headers *hs, int version_minor, const char *base,
			struct http_framing *f, struct http_framing_error *fe)
{
	struct conn_tokens ct = { 0 };
	const struct http_header *te = NULL, *cl = NULL, *up = NULL;
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < hs->n; i++) {
		const struct http_header *h = &hs->v[i];
		if (name_is(h, "content-length")) {
			if (on_content_length(h, base, f, fe) < 0)
				return -1;
			cl = cl ? cl : h;
		} else if (name_is(h, "transfer-encoding")) {
			if (on_transfer_encoding(h, version_minor, base, f, fe) < 0)
				return -1;
			te = te ? te : h;
		} else if (name_is(h, "connection")) {
			on_connection(h, &ct);
		} else if (name_is(h, "upgrade") && !up) {
			up = h;
		}
	}
	if (te && cl)
		return ffail(fe, HTTP_E_CL_AND_TE, base, te->name.p > cl->name.p ? te : cl,
			     "both Content-Length and Transfer-Encoding");
	f->close = ct.close || (version_minor == 0 && !ct.keep_alive);
	if (up && ct.upgrade) {
		f->upgrade = true;
		f->upgrade_value = up->value;
	}
	return 0;
}

static bool authority_eq(const struct http_authority *a, const struct http_authority *b)
{
	return a->port == b->port && str_ieq(a->host.p, a->host.len, b->host.p, b->host.len);
}

static int on_host(struct http_request *req, const struct http_header *h, const char *base,
		   struct http_framing_error *fe)
{
	if (req->has_host)
		return ffail(fe, HTTP_E_MULTIPLE_HOST, base, h, "more than one Host header");
	req->has_host = true;
	req->host_value = h->value;
	uint16_t def = req->form == HTTP_TARGET_ABSOLUTE && req->https ? 443 : 80;
	if (http_parse_authority(h->value.p, h->value.len, def, false, &req->host, NULL) < 0)
		return ffail(fe, HTTP_E_BAD_HOST, base, h, "Host is not host[:port]");
	return 0;
}

int http_request_semantics(struct http_request *req, const char *base, bool reject_host_mismatch,
			   struct http_framing_error *fe)
{
	if (http_framing_derive(&req->headers, req->version_minor, base, &req->framing, fe) < 0)
		return -1;
	const struct http_header *host = NULL;
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *h = &req->headers.v[i];
		if (name_is(h, "host")) {
			if (on_host(req, h, base, fe) < 0)
				return -1;
			host = h;
		} else if (name_is(h, "expect")) {
			bool c100 = str_ieq(h->value.p, h->value.len, "100-continue", 12);
			req->expect_100 |= c100;
			req->expect_other |= !c100;
		}
	}
	if (!host && req->version_minor == 1) {
		fe->error = HTTP_E_MISSING_HOST;
		fe->offset = 0;
		fe->detail = "HTTP/1.1 request without Host";
		return -1;
	}
	if (host && req->form == HTTP_TARGET_ABSOLUTE) {
		req->host_mismatch = !authority_eq(&req->host, &req->authority);
		if (req->host_mismatch && reject_host_mismatch)
			return ffail(fe, HTTP_E_HOST_MISMATCH, base, host,
				     "Host names another authority than the request-target");
	}
	return 0;
}

enum http_body_kind http_request_body(const struct http_request *req)
{
	/* Requests never read to EOF (RFC 9112 6.3 rule 7): no length, no body. */
	if (req->framing.chunked)
		return HTTP_BODY_CHUNKED;
	if (req->framing.has_content_length && req->framing.content_length > 0)
		return HTTP_BODY_LENGTH;
	return HTTP_BODY_NONE;
}

enum http_body_kind http_response_body(const struct http_response *resp, bool request_was_head,
				       bool request_was_connect)
{
	int s = resp->status;
	if (s == 101)
		return HTTP_BODY_TUNNEL;
	if (s < 200)
		return HTTP_BODY_NONE;
	if (request_was_connect && s < 300)
		return HTTP_BODY_TUNNEL;
	if (request_was_head || s == 204 || s == 304)
		return HTTP_BODY_NONE;
	if (resp->framing.chunked)
		return HTTP_BODY_CHUNKED;
	if (resp->framing.has_content_length)
		return resp->framing.content_length > 0 ? HTTP_BODY_LENGTH : HTTP_BODY_NONE;
	return HTTP_BODY_UNTIL_CLOSE;
}
