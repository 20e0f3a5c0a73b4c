/* fuzz_http_request.c - libFuzzer target for the HTTP request-head parser.
 * Oracles: no crash or over-read; one buffer and byte-by-byte feeding agree;
 * a parsed head has coherent framing, slices inside the head, and survives a
 * write-then-parse round trip unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http.h"

static struct http_request req_a, req_b;

static int parse(const char *d, size_t n, const struct http_limits *lim, bool bytewise,
		 struct http_request *req, size_t *consumed, enum http_error *e)
{
	struct http_parser p;
	os_error err = { 0 };
	int rc = HTTP_PARSE_NEED_MORE;
	http_parser_init(&p, lim);
	for (size_t i = bytewise ? 0 : n; i <= n; i++) {
		rc = http_parse_request(&p, d, i, req, consumed, &err);
		if (rc != HTTP_PARSE_NEED_MORE)
			break;
	}
	*e = p.error;
	return rc;
}

static bool inside(struct http_slice s, const char *d, size_t n)
{
	return s.len == 0 || (s.p >= d && s.p + s.len <= d + n);
}

static void check_parsed(const struct http_request *r, const char *d, size_t n)
{
	if (r->framing.chunked && r->framing.has_content_length)
		abort();
	if (!inside(r->method, d, n) || !inside(r->target, d, n) || !inside(r->query, d, n))
		abort();
	for (size_t i = 0; i < r->headers.n; i++)
		if (!inside(r->headers.v[i].name, d, n) || !inside(r->headers.v[i].value, d, n))
			abort();
	if (r->version_minor == 1 && !r->has_host)
		abort();
}

/* Writes the parsed head back out and parses it again: what we emit must
 * read the same (HTTP/1.1 only: the writer always says 1.1). */
static void round_trip(const struct http_request *r)
{
	struct buf b;
	os_error err = { 0 };
	char *m = strndup(r->method.p, r->method.len), *t = strndup(r->target.p, r->target.len);
	buf_init(&b, 1 << 20);
	if (!m || !t || http_write_request_line(&b, m, t, &err) < 0)
		abort();
	for (size_t i = 0; i < r->headers.n; i++)
		if (http_write_header_slice(&b, r->headers.v[i].name, r->headers.v[i].value, &err) <
		    0)
			abort();
	if (http_write_head_end(&b, &err) < 0)
		abort();
	size_t consumed;
	enum http_error e;
	if (parse(b.data, b.len, NULL, false, &req_b, &consumed, &e) != HTTP_PARSE_DONE ||
	    consumed != b.len || req_b.headers.n != r->headers.n ||
	    req_b.framing.chunked != r->framing.chunked ||
	    req_b.framing.content_length != r->framing.content_length || req_b.form != r->form ||
	    req_b.host_mismatch != r->host_mismatch)
		abort();
	buf_free(&b);
	free(m);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	struct http_limits tight = { .line_max = 64, .head_max = 256, .headers_max = 4 };
	const struct http_limits *lims[] = { NULL, &tight };
	for (size_t l = 0; l < 2; l++) {
		size_t ca = 0, cb = 0;
		enum http_error ea, eb;
		int ra = parse(d, size, lims[l], false, &req_a, &ca, &ea);
		int rb = parse(d, size, lims[l], true, &req_b, &cb, &eb);
		if (ra != rb || ea != eb || (ra == HTTP_PARSE_DONE && ca != cb))
			abort();
		if (ra == HTTP_PARSE_DONE) {
			check_parsed(&req_a, d, ca);
			if (l == 0 && req_a.version_minor == 1)
				round_trip(&req_a);
		}
	}
	return 0;
}
