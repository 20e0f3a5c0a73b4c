/* fuzz_http_response.c - libFuzzer target for the HTTP response-head parser
 * (what the proxy reads from upstreams and the Kubernetes client from the
 * apiserver). Oracles: no crash or over-read; one buffer and byte-by-byte
 * feeding agree; framing is coherent; write-then-parse keeps the head. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http.h"

static struct http_response resp_a, resp_b;

static int parse(const char *d, size_t n, bool bytewise, struct http_response *resp,
		 size_t *consumed, enum http_error *e)
{
	struct http_parser p;
	os_error err = { 0 };
	int rc = HTTP_PARSE_NEED_MORE;
	http_parser_init(&p, NULL);
	for (size_t i = bytewise ? 0 : n; i <= n; i++) {
		rc = http_parse_response(&p, d, i, resp, consumed, &err);
		if (rc != HTTP_PARSE_NEED_MORE)
			break;
	}
	*e = p.error;
	return rc;
}

static void round_trip(const struct http_response *r)
{
	struct buf b;
	os_error err = { 0 };
	char *reason = strndup(r->reason.p, r->reason.len);
	buf_init(&b, 1 << 20);
	if (!reason || http_write_status_line(&b, r->status, reason, &err) < 0)
		abort();
	for (size_t i = 0; i < r->headers.n; i++)
		if (http_write_header_slice(&b, r->headers.v[i].name, r->headers.v[i].value, &err) <
		    0)
			abort();
	if (http_write_head_end(&b, &err) < 0)
		abort();
	size_t consumed;
	enum http_error e;
	if (parse(b.data, b.len, false, &resp_b, &consumed, &e) != HTTP_PARSE_DONE ||
	    consumed != b.len || resp_b.status != r->status || resp_b.headers.n != r->headers.n ||
	    resp_b.framing.chunked != r->framing.chunked ||
	    resp_b.framing.content_length != r->framing.content_length ||
	    http_response_body(&resp_b, false, false) != http_response_body(r, false, false))
		abort();
	buf_free(&b);
	free(reason);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data;
	size_t ca = 0, cb = 0;
	enum http_error ea, eb;
	int ra = parse(d, size, false, &resp_a, &ca, &ea);
	int rb = parse(d, size, true, &resp_b, &cb, &eb);
	if (ra != rb || ea != eb || (ra == HTTP_PARSE_DONE && ca != cb))
		abort();
	if (ra != HTTP_PARSE_DONE)
		return 0;
	if (resp_a.framing.chunked && resp_a.framing.has_content_length)
		abort();
	if (resp_a.status < 100 || resp_a.status > 599)
		abort();
	if (resp_a.version_minor == 1 && !resp_a.framing.close)
		round_trip(&resp_a);
	return 0;
}
