/* test_http.c - unit tests of the strict HTTP/1.1 parser, chunked decoder
 * and head writer: request-smuggling shapes are refused with their own error,
 * each beside a positive control, and byte-by-byte feeding gives the same
 * answer as one buffer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "cleanup.h"
#include "http.h"

/* ---- helpers: run a parser all at once and byte by byte ---- */

struct outcome {
	int rc;
	enum http_error error;
	size_t consumed;
};

static struct http_request g_req;
static struct http_response g_resp;

static struct outcome run_request(const char *raw, size_t len, const struct http_limits *lim,
				  bool bytewise)
{
	struct http_parser p;
	os_error err = { 0 };
	struct outcome o = { 0 };
	http_parser_init(&p, lim);
	/* An exact-size heap copy lets ASan catch any read past len. */
	char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, raw, len);
	for (size_t n = bytewise ? 1 : len; n <= len; n++) {
		o.rc = http_parse_request(&p, copy, n, &g_req, &o.consumed, &err);
		if (o.rc != HTTP_PARSE_NEED_MORE)
			break;
	}
	o.error = p.error;
	if (o.rc < 0)
		assert_true(err.msg[0] != '\0');
	free(copy);
	return o;
}

static struct outcome run_response(const char *raw, size_t len, bool bytewise)
{
	struct http_parser p;
	os_error err = { 0 };
	struct outcome o = { 0 };
	http_parser_init(&p, NULL);
	char *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	memcpy(copy, raw, len);
	for (size_t n = bytewise ? 1 : len; n <= len; n++) {
		o.rc = http_parse_response(&p, copy, n, &g_resp, &o.consumed, &err);
		if (o.rc != HTTP_PARSE_NEED_MORE)
			break;
	}
	o.error = p.error;
	free(copy);
	return o;
}

/* Both feeding modes must agree; returns the (bytewise) outcome, leaving
 * g_req parsed from a buffer that is gone, so callers use req_ok instead
 * when they inspect fields. */
static struct outcome req_both(const char *raw, const struct http_limits *lim)
{
	size_t len = strlen(raw);
	struct outcome a = run_request(raw, len, lim, false);
	struct outcome b = run_request(raw, len, lim, true);
	assert_int_equal(a.rc, b.rc);
	assert_int_equal(a.error, b.error);
	if (a.rc == HTTP_PARSE_DONE)
		if (a.rc >= 0) /* after an error, what was consumed is moot */
			assert_int_equal(a.consumed, b.consumed);
	return a;
}

static void req_err(const char *raw, enum http_error want)
{
	struct outcome o = req_both(raw, NULL);
	if (o.rc >= 0 || o.error != want)
		fail_msg("expected %s for %s, got rc=%d %s", http_error_name(want), raw, o.rc,
			 http_error_name(o.error));
}

/* Parses raw (which must outlive the use of g_req) and checks success. */
static struct http_request *req_ok_lim(const char *raw, const struct http_limits *lim)
{
	(void)req_both(raw, lim);
	struct http_parser p;
	os_error err = { 0 };
	size_t consumed = 0;
	http_parser_init(&p, lim);
	int rc = http_parse_request(&p, raw, strlen(raw), &g_req, &consumed, &err);
	if (rc != HTTP_PARSE_DONE)
		fail_msg("expected success for %s, got rc=%d: %s", raw, rc, err.msg);
	assert_int_equal(consumed, strlen(raw));
	return &g_req;
}

static struct http_request *req_ok(const char *raw)
{
	return req_ok_lim(raw, NULL);
}

static void resp_err(const char *raw, enum http_error want)
{
	struct outcome a = run_response(raw, strlen(raw), false);
	struct outcome b = run_response(raw, strlen(raw), true);
	assert_int_equal(a.rc, b.rc);
	assert_int_equal(a.error, b.error);
	if (a.rc >= 0 || a.error != want)
		fail_msg("expected %s for %s, got rc=%d %s", http_error_name(want), raw, a.rc,
			 http_error_name(a.error));
}

static struct http_response *resp_ok(const char *raw)
{
	struct outcome b = run_response(raw, strlen(raw), true);
	assert_int_equal(b.rc, HTTP_PARSE_DONE);
	struct http_parser p;
	os_error err = { 0 };
	size_t consumed = 0;
	http_parser_init(&p, NULL);
	int rc = http_parse_response(&p, raw, strlen(raw), &g_resp, &consumed, &err);
	if (rc != HTTP_PARSE_DONE)
		fail_msg("expected success for %s, got rc=%d: %s", raw, rc, err.msg);
	assert_int_equal(consumed, b.consumed);
	return &g_resp;
}

static bool slice_is(struct http_slice s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

#define assert_slice(s, want)                                                                      \
	do {                                                                                       \
		if (!slice_is((s), (want)))                                                        \
			fail_msg("slice \"%.*s\" != \"%s\"", (int)(s).len, (s).p, (want));         \
	} while (0)

#define H "Host: example.com\r\n"

/* ---- requests: shape ---- */

static void request_simple_get_is_parsed(void **state)
{
	struct http_request *r =
		req_ok("GET /a/b?x=1&y HTTP/1.1\r\n" H "Accept:  \t*/* \t\r\nX-Empty:\r\n\r\n");
	assert_slice(r->method, "GET");
	assert_slice(r->target, "/a/b?x=1&y");
	assert_int_equal(r->form, HTTP_TARGET_ORIGIN);
	assert_slice(r->path, "/a/b");
	assert_true(r->has_query);
	assert_slice(r->query, "x=1&y");
	assert_int_equal(r->version_minor, 1);
	assert_int_equal(r->headers.n, 3);
	assert_slice(r->headers.v[1].name, "Accept");
	assert_slice(r->headers.v[1].value, "*/*"); /* OWS trimmed both sides */
	assert_slice(r->headers.v[2].value, "");
	assert_true(r->has_host);
	assert_slice(r->host.host, "example.com");
	assert_int_equal(r->host.port, 80);
	assert_false(r->framing.close);
	assert_false(r->framing.chunked);
	assert_int_equal(http_request_body(r), HTTP_BODY_NONE);
	const struct http_header *h = http_header_find(&r->headers, "aCCept");
	assert_non_null(h);
	assert_null(http_header_find(&r->headers, "Accept-Encoding"));
}

static void request_partial_head_needs_more(void **state)
{
	const char *full = "GET / HTTP/1.1\r\n" H "\r\n";
	struct http_parser p;
	os_error err = { 0 };
	size_t consumed = 0;
	http_parser_init(&p, NULL);
	size_t len = strlen(full);
	/* every proper prefix, including one ending in a lone CR, asks for more */
	for (size_t n = 0; n < len; n++)
		assert_int_equal(http_parse_request(&p, full, n, &g_req, &consumed, &err),
				 HTTP_PARSE_NEED_MORE);
	assert_int_equal(http_parse_request(&p, full, len, &g_req, &consumed, &err),
			 HTTP_PARSE_DONE);
	assert_int_equal(consumed, len);
}

static void request_pipelined_reports_consumed(void **state)
{
	const char *s = "POST /a HTTP/1.1\r\n" H "Content-Length: 3\r\n\r\nabc"
			"GET /b HTTP/1.1\r\n" H "\r\nextra";
	struct http_parser p;
	os_error err = { 0 };
	size_t c1 = 0, c2 = 0;
	http_parser_init(&p, NULL);
	assert_int_equal(http_parse_request(&p, s, strlen(s), &g_req, &c1, &err), HTTP_PARSE_DONE);
	assert_slice(g_req.path, "/a");
	assert_int_equal(http_request_body(&g_req), HTTP_BODY_LENGTH);
	assert_int_equal(g_req.framing.content_length, 3);
	assert_memory_equal(s + c1, "abc", 3);
	size_t next = c1 + g_req.framing.content_length;
	http_parser_reset(&p);
	assert_int_equal(http_parse_request(&p, s + next, strlen(s) - next, &g_req, &c2, &err),
			 HTTP_PARSE_DONE);
	assert_slice(g_req.path, "/b");
	assert_string_equal(s + next + c2, "extra");
}

static void request_line_errors_are_named(void **state)
{
	req_ok("DELETE /x HTTP/1.1\r\n" H "\r\n");
	req_err("G(T /x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_METHOD);
	req_err("GET  /x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_REQUEST_LINE);
	req_err(" GET /x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_REQUEST_LINE);
	req_err("GET /x\r\n" H "\r\n", HTTP_E_BAD_REQUEST_LINE);
	req_err("\r\nGET /x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_REQUEST_LINE);
	req_err("GET /a b HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET /a\tb HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET /caf\xc3\xa9 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET /a\x7f HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET /a#frag HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_ok("GET /caf%C3%A9 HTTP/1.1\r\n" H "\r\n");
}

static void request_version_must_be_1x(void **state)
{
	req_ok("GET / HTTP/1.0\r\n\r\n");
	assert_int_equal(g_req.version_minor, 0);
	req_err("GET / HTTP/2.0\r\n" H "\r\n", HTTP_E_UNSUPPORTED_VERSION);
	req_err("GET / HTTP/1.2\r\n" H "\r\n", HTTP_E_UNSUPPORTED_VERSION);
	req_err("GET / HTTP/0.9\r\n" H "\r\n", HTTP_E_UNSUPPORTED_VERSION);
	req_err("GET / HTTP/1.10\r\n" H "\r\n", HTTP_E_BAD_VERSION);
	req_err("GET / http/1.1\r\n" H "\r\n", HTTP_E_BAD_VERSION);
	req_err("GET / HTTP/1\r\n" H "\r\n", HTTP_E_BAD_VERSION);
}

/* ---- line endings, NUL, folding ---- */

static void request_line_endings_must_be_crlf(void **state)
{
	req_ok("GET / HTTP/1.1\r\n" H "X: y\r\n\r\n");
	req_err("GET / HTTP/1.1\n" H "\r\n", HTTP_E_BARE_LF);
	req_err("GET / HTTP/1.1\r\n" H "X: y\n\r\n", HTTP_E_BARE_LF);
	req_err("GET / HTTP/1.1\r\n" H "X: y\r\n\n", HTTP_E_BARE_LF);
	req_err("GET / HTTP/1.1\r\n" H "X: a\rb\r\n\r\n", HTTP_E_BARE_CR);
	req_err("GET / HTTP/1.1\r\n" H "X: y\r\r\n\r\n", HTTP_E_BARE_CR);
}

static void request_nul_anywhere_is_refused(void **state)
{
#define LIT(s)                                                                                     \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}
	static const struct http_slice shapes[] = {
		LIT("GET /a\0b HTTP/1.1\r\nHost: h\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"),
		LIT("GET / HTTP/1.1\r\nHost: h\r\nX\0: v\r\n\r\n"),
		LIT("G\0T / HTTP/1.1\r\nHost: h\r\n\r\n"),
	};
#undef LIT
	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++) {
		for (int bw = 0; bw < 2; bw++) {
			struct outcome o = run_request(shapes[i].p, shapes[i].len, NULL, bw);
			assert_int_equal(o.rc, -1);
			assert_int_equal(o.error, HTTP_E_NUL);
		}
	}
	/* control: the same lengths without the NUL parse */
	struct outcome o = run_request("GET /a_b HTTP/1.1\r\nHost: h\r\n\r\n", 30, NULL, true);
	assert_int_equal(o.rc, HTTP_PARSE_DONE);
}

static void request_obs_fold_is_refused(void **state)
{
	req_ok("GET / HTTP/1.1\r\n" H "X-A: one two\r\n\r\n");
	req_err("GET / HTTP/1.1\r\n" H "X-A: one\r\n two\r\n\r\n", HTTP_E_OBS_FOLD);
	req_err("GET / HTTP/1.1\r\n" H "X-A: one\r\n\ttwo\r\n\r\n", HTTP_E_OBS_FOLD);
	req_err("GET / HTTP/1.1\r\n Host: example.com\r\n\r\n", HTTP_E_OBS_FOLD);
	req_err("POST / HTTP/1.1\r\n" H "X: y\r\n Transfer-Encoding: chunked\r\n\r\n",
		HTTP_E_OBS_FOLD);
}

/* ---- header syntax ---- */

static void request_header_syntax_is_strict(void **state)
{
	req_ok("GET / HTTP/1.1\r\n" H "X-Ok_1!#$%&'*+.^`|~: v\r\n\r\n");
	req_err("GET / HTTP/1.1\r\n" H "X(y): v\r\n\r\n", HTTP_E_BAD_HEADER_NAME);
	req_err("GET / HTTP/1.1\r\n" H ": v\r\n\r\n", HTTP_E_BAD_HEADER_NAME);
	req_err("GET / HTTP/1.1\r\n" H "NoColon\r\n\r\n", HTTP_E_BAD_HEADER_NAME);
	req_err("GET / HTTP/1.1\r\n" H "X\xc3\xa9: v\r\n\r\n", HTTP_E_BAD_HEADER_NAME);
	req_err("GET / HTTP/1.1\r\n" H "X-A : v\r\n\r\n", HTTP_E_SPACE_BEFORE_COLON);
	req_err("GET / HTTP/1.1\r\n" H "X-A\t: v\r\n\r\n", HTTP_E_SPACE_BEFORE_COLON);
	/* values: obs-text and HT are allowed, other CTLs and DEL are not */
	req_ok("GET / HTTP/1.1\r\n" H "X: caf\xc3\xa9\tx\r\n\r\n");
	req_err("GET / HTTP/1.1\r\n" H "X: a\x01"
		"b\r\n\r\n",
		HTTP_E_BAD_HEADER_VALUE);
	req_err("GET / HTTP/1.1\r\n" H "X: a\x7f\r\n\r\n", HTTP_E_BAD_HEADER_VALUE);
	req_err("GET / HTTP/1.1\r\n" H "X: \x0b"
		"b\r\n\r\n",
		HTTP_E_BAD_HEADER_VALUE);
}

/* ---- framing: the smuggling shapes ---- */

#define POST "POST / HTTP/1.1\r\n" H

static void request_transfer_encoding_must_be_exactly_chunked(void **state)
{
	struct http_request *r = req_ok(POST "Transfer-Encoding: chunked\r\n\r\n");
	assert_true(r->framing.chunked);
	assert_int_equal(http_request_body(r), HTTP_BODY_CHUNKED);
	/* OWS (SP or HT) around the value is allowed and trimmed */
	assert_true(req_ok(POST "Transfer-Encoding:\tchunked\r\n\r\n")->framing.chunked);
	assert_true(req_ok(POST "Transfer-Encoding:  chunked \t\r\n\r\n")->framing.chunked);
	assert_true(req_ok(POST "transfer-encoding: Chunked\r\n\r\n")->framing.chunked);
	req_err(POST "Transfer-Encoding : chunked\r\n\r\n", HTTP_E_SPACE_BEFORE_COLON);
	req_err(POST "Transfer-Encoding: xchunked\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: chunkedx\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: gzip, chunked\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: chunked, chunked\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: chunked;x\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: identity\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: \"chunked\"\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding:\r\n\r\n", HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding:\x0b"
		     "chunked\r\n\r\n",
		HTTP_E_BAD_HEADER_VALUE);
	req_err(POST "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		HTTP_E_BAD_TRANSFER_ENCODING);
	req_err(POST "Transfer-Encoding: chunked\r\nTransfer-encoding: identity\r\n\r\n",
		HTTP_E_BAD_TRANSFER_ENCODING);
	req_err("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		HTTP_E_BAD_TRANSFER_ENCODING);
}

static void request_cl_with_te_is_refused(void **state)
{
	/* CL.TE and TE.CL: whichever comes first */
	req_err(POST "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_E_CL_AND_TE);
	req_err(POST "Transfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n", HTTP_E_CL_AND_TE);
	req_err(POST "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n", HTTP_E_CL_AND_TE);
	/* controls: each alone is fine */
	req_ok(POST "Content-Length: 6\r\n\r\n");
	req_ok(POST "Transfer-Encoding: chunked\r\n\r\n");
}

static void request_content_length_is_strict(void **state)
{
	struct http_request *r = req_ok(POST "Content-Length: 5\r\n\r\n");
	assert_true(r->framing.has_content_length);
	assert_int_equal(r->framing.content_length, 5);
	/* identical duplicates and identical lists collapse (documented choice) */
	r = req_ok(POST "Content-Length: 5\r\nContent-Length: 5\r\n\r\n");
	assert_int_equal(r->framing.content_length, 5);
	r = req_ok(POST "Content-Length: 5, 5 ,5\r\n\r\n");
	assert_int_equal(r->framing.content_length, 5);
	r = req_ok(POST "Content-Length: 9223372036854775807\r\n\r\n");
	assert_int_equal(r->framing.content_length, INT64_MAX);
	r = req_ok(POST "Content-Length: 0\r\n\r\n");
	assert_int_equal(http_request_body(r), HTTP_BODY_NONE);
	req_err(POST "Content-Length: 5\r\nContent-Length: 6\r\n\r\n",
		HTTP_E_CONFLICTING_CONTENT_LENGTH);
	req_err(POST "Content-Length: 5, 6\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: +5\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: -5\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: 5a\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: 0x5\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: 5 5\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: 5,\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: ,5\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length:\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: 9223372036854775808\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
	req_err(POST "Content-Length: 99999999999999999999999\r\n\r\n", HTTP_E_BAD_CONTENT_LENGTH);
}

/* ---- Host ---- */

static void request_host_rules(void **state)
{
	req_ok("GET / HTTP/1.0\r\n\r\n"); /* 1.0 needs no Host */
	req_err("GET / HTTP/1.1\r\n\r\n", HTTP_E_MISSING_HOST);
	req_err("GET / HTTP/1.1\r\n" H H "\r\n", HTTP_E_MULTIPLE_HOST);
	req_err("GET / HTTP/1.1\r\n" H "host: other\r\n\r\n", HTTP_E_MULTIPLE_HOST);
	req_err("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost:\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost: h:0\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost: h:65536\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost: u@h\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost: h%2e\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", HTTP_E_BAD_HOST);
	req_err("GET / HTTP/1.1\r\nHost: [zz::1]\r\n\r\n", HTTP_E_BAD_HOST);
	struct http_request *r = req_ok("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
	assert_true(r->host.ipv6);
	assert_slice(r->host.host, "::1");
	assert_int_equal(r->host.port, 8080);
	r = req_ok("GET / HTTP/1.1\r\nHost: h:65535\r\n\r\n");
	assert_int_equal(r->host.port, 65535);
}

/* ---- request-target forms ---- */

static void request_connect_needs_authority_form(void **state)
{
	struct http_request *r = req_ok("CONNECT example.com:443 HTTP/1.1\r\n" H "\r\n");
	assert_int_equal(r->form, HTTP_TARGET_AUTHORITY);
	assert_slice(r->authority.host, "example.com");
	assert_int_equal(r->authority.port, 443);
	r = req_ok("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n" H "\r\n");
	assert_true(r->authority.ipv6);
	assert_slice(r->authority.host, "2001:db8::1");
	r = req_ok("CONNECT 10.0.0.1:1 HTTP/1.1\r\n" H "\r\n");
	assert_int_equal(r->authority.port, 1);
	req_err("CONNECT example.com HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT example.com: HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT example.com:0 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT example.com:65536 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT example.com:0443 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT example.com:443x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT example.com:+443 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT a:1:2 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT [::1] HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT [::1]x:443 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT /path HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("CONNECT user@h:443 HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
}

static void request_absolute_form_is_split(void **state)
{
	struct http_request *r = req_ok(
		"GET http://Example.com:8080/a/b?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n");
	assert_int_equal(r->form, HTTP_TARGET_ABSOLUTE);
	assert_slice(r->scheme, "http");
	assert_false(r->https);
	assert_slice(r->authority.host, "Example.com");
	assert_int_equal(r->authority.port, 8080);
	assert_slice(r->path, "/a/b");
	assert_slice(r->query, "x=1");
	assert_false(r->host_mismatch);
	r = req_ok("GET HTTPS://example.com HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
	assert_true(r->https);
	assert_int_equal(r->authority.port, 443);
	assert_slice(r->path, "/");
	assert_false(r->has_query);
	assert_false(r->host_mismatch);
	r = req_ok("GET http://example.com?q HTTP/1.1\r\n" H "\r\n");
	assert_slice(r->path, "/");
	assert_slice(r->query, "q");
	req_err("GET ftp://example.com/ HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET http://user:pw@example.com/ HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET http:///x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET http://example.com/#f HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
	req_err("GET example.com/x HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
}

static void request_absolute_host_mismatch_is_reported(void **state)
{
	const char *raw = "GET http://example.com/ HTTP/1.1\r\nHost: evil.test\r\n\r\n";
	struct http_request *r = req_ok(raw);
	assert_true(r->host_mismatch);
	r = req_ok("GET http://example.com/ HTTP/1.1\r\nHost: example.com:81\r\n\r\n");
	assert_true(r->host_mismatch); /* same name, other port */
	struct http_limits lim;
	http_limits_default(&lim);
	lim.reject_host_mismatch = true;
	lim.line_max = 0; /* 0 means the default, not "nothing fits" */
	struct outcome o = req_both(raw, &lim);
	assert_int_equal(o.rc, -1);
	assert_int_equal(o.error, HTTP_E_HOST_MISMATCH);
	/* control: agreeing Host passes under the rejecting option */
	r = req_ok_lim("GET http://example.com/ HTTP/1.1\r\nHost: EXAMPLE.com:80\r\n\r\n", &lim);
	assert_false(r->host_mismatch);
}

static void request_asterisk_only_for_options(void **state)
{
	struct http_request *r = req_ok("OPTIONS * HTTP/1.1\r\n" H "\r\n");
	assert_int_equal(r->form, HTTP_TARGET_ASTERISK);
	req_err("GET * HTTP/1.1\r\n" H "\r\n", HTTP_E_BAD_TARGET);
}

/* ---- connection semantics ---- */

static void request_connection_expect_upgrade(void **state)
{
	assert_true(req_ok("GET / HTTP/1.1\r\n" H "Connection: close\r\n\r\n")->framing.close);
	assert_false(
		req_ok("GET / HTTP/1.1\r\n" H "Connection: keep-alive\r\n\r\n")->framing.close);
	assert_true(req_ok("GET / HTTP/1.0\r\n\r\n")->framing.close);
	assert_false(req_ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")->framing.close);
	assert_true(req_ok("GET / HTTP/1.1\r\n" H "Connection: x, CLOSE\r\n\r\n")->framing.close);
	struct http_request *r = req_ok("GET / HTTP/1.1\r\n" H "Connection: keep-alive, Upgrade\r\n"
					"Upgrade: websocket\r\n\r\n");
	assert_true(r->framing.upgrade);
	assert_slice(r->framing.upgrade_value, "websocket");
	/* Upgrade without the Connection token is not an upgrade */
	assert_false(req_ok("GET / HTTP/1.1\r\n" H "Upgrade: websocket\r\n\r\n")->framing.upgrade);
	r = req_ok(POST "Expect: 100-Continue\r\nContent-Length: 1\r\n\r\n");
	assert_true(r->expect_100);
	assert_false(r->expect_other);
	r = req_ok(POST "Expect: something\r\n\r\n");
	assert_false(r->expect_100);
	assert_true(r->expect_other);
}

/* ---- limits ---- */

static void request_limits_are_enforced(void **state)
{
	struct http_limits lim = { .line_max = 20, .head_max = 40, .headers_max = 2 };
	/* "GET /1234 HTTP/1.1\r\n" is exactly 20 bytes: fits */
	req_ok_lim("GET /1234 HTTP/1.1\r\nHost: h\r\n\r\n", &lim);
	struct outcome o = req_both("GET /12345 HTTP/1.1\r\nHost: h\r\n\r\n", &lim);
	assert_int_equal(o.error, HTTP_E_LINE_TOO_LONG);
	/* header block exactly 40 bytes incl. the final CRLF: fits */
	req_ok_lim("GET / HTTP/1.1\r\nHost: h\r\nX: 123456789012345678901234\r\n\r\n", &lim);
	o = req_both("GET / HTTP/1.1\r\nHost: h\r\nX: 1234567890123456789012345\r\n\r\n", &lim);
	assert_int_equal(o.error, HTTP_E_HEAD_TOO_LARGE);
	req_ok_lim("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\n\r\n", &lim);
	o = req_both("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n", &lim);
	assert_int_equal(o.error, HTTP_E_TOO_MANY_HEADERS);
}

static void request_oversize_head_fails_before_it_ends(void **state)
{
	/* An endless header must be refused as soon as it passes the cap, not
	 * buffered forever waiting for CRLFCRLF. */
	size_t n = HTTP_HEAD_MAX_DEFAULT + 100;
	char *s = malloc(n);
	assert_non_null(s);
	memcpy(s, "GET / HTTP/1.1\r\nX: ", 19);
	memset(s + 19, 'a', n - 19);
	struct http_parser p;
	os_error err = { 0 };
	size_t c;
	http_parser_init(&p, NULL);
	assert_int_equal(http_parse_request(&p, s, n, &g_req, &c, &err), -1);
	assert_int_equal(p.error, HTTP_E_HEAD_TOO_LARGE);
	assert_int_equal(err.code, EMSGSIZE);
	assert_non_null(strstr(err.msg, "head-too-large"));
	free(s);
}

/* ---- responses ---- */

static void response_heads_are_parsed(void **state)
{
	struct http_response *r = resp_ok("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
	assert_int_equal(r->status, 200);
	assert_slice(r->reason, "OK");
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_LENGTH);
	assert_int_equal(http_response_body(r, true, false), HTTP_BODY_NONE);
	r = resp_ok("HTTP/1.1 204\r\n\r\n");
	assert_slice(r->reason, "");
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_NONE);
	r = resp_ok("HTTP/1.0 404 Not Found\r\n\r\n");
	assert_slice(r->reason, "Not Found");
	assert_true(r->framing.close);
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_UNTIL_CLOSE);
	r = resp_ok("HTTP/1.1 200 Connection established\r\n\r\n");
	assert_int_equal(http_response_body(r, false, true), HTTP_BODY_TUNNEL);
	r = resp_ok(
		"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n");
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_TUNNEL);
	r = resp_ok("HTTP/1.1 100 Continue\r\n\r\n");
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_NONE);
	r = resp_ok("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n");
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_NONE);
	r = resp_ok("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	assert_int_equal(http_response_body(r, false, false), HTTP_BODY_CHUNKED);
}

static void response_errors_are_named(void **state)
{
	resp_err("HTTP/1.1 600 Weird\r\n\r\n", HTTP_E_BAD_STATUS_CODE);
	resp_err("HTTP/1.1 099 Low\r\n\r\n", HTTP_E_BAD_STATUS_CODE);
	resp_err("HTTP/1.1 20 OK\r\n\r\n", HTTP_E_BAD_STATUS_LINE);
	resp_err("HTTP/1.1 2000 OK\r\n\r\n", HTTP_E_BAD_STATUS_LINE);
	resp_err("HTTP/1.1 2x0 OK\r\n\r\n", HTTP_E_BAD_STATUS_LINE);
	resp_err("HTTP/2 200 OK\r\n\r\n", HTTP_E_BAD_STATUS_LINE);
	resp_err("HTTP/2.0 200 OK\r\n\r\n", HTTP_E_UNSUPPORTED_VERSION);
	resp_err("HTTP/1.1 200 O\x01K\r\n\r\n", HTTP_E_BAD_STATUS_LINE);
	resp_err("HTTP/1.1 200 OK\n\r\n", HTTP_E_BARE_LF);
	resp_err("\r\n", HTTP_E_BAD_STATUS_LINE);
	resp_err("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		 HTTP_E_CL_AND_TE);
	resp_err("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
		 HTTP_E_CONFLICTING_CONTENT_LENGTH);
	resp_err("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		 HTTP_E_BAD_TRANSFER_ENCODING);
	resp_err("HTTP/1.1 200 OK\r\nX : y\r\n\r\n", HTTP_E_SPACE_BEFORE_COLON);
	resp_err("HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n", HTTP_E_OBS_FOLD);
	/* responses do not need Host */
	resp_ok("HTTP/1.1 200 OK\r\nX: y\r\n\r\n");
}

/* ---- chunked bodies ---- */

struct chunk_result {
	int rc;
	enum http_error error;
	char out[256];
	size_t out_len;
	size_t consumed; /* total input consumed */
};

/* Decodes in[0..len) either in one buffer or as a caller would: appending
 * one byte at a time to a pending buffer and dropping what was consumed. */
static struct chunk_result decode(const char *in, size_t len, uint64_t body_max, bool bytewise)
{
	struct chunk_result r = { 0 };
	struct http_chunked c;
	os_error err = { 0 };
	char pending[4096];
	size_t plen = 0, fed = 0;
	http_chunked_init(&c, body_max);
	for (;;) {
		size_t add = bytewise ? (fed < len ? 1 : 0) : len - fed;
		assert_true(plen + add <= sizeof(pending));
		memcpy(pending + plen, in + fed, add);
		plen += add;
		fed += add;
		size_t used = 0;
		struct http_slice d;
		r.rc = http_chunked_feed(&c, pending, plen, &used, &d, &err);
		r.error = c.error;
		if (r.rc == HTTP_PARSE_DATA) {
			assert_true(r.out_len + d.len <= sizeof(r.out));
			memcpy(r.out + r.out_len, d.p, d.len);
			r.out_len += d.len;
		}
		memmove(pending, pending + used, plen - used);
		plen -= used;
		r.consumed += used;
		if (r.rc < 0 || r.rc == HTTP_PARSE_DONE)
			return r;
		if (r.rc == HTTP_PARSE_NEED_MORE && fed == len)
			return r;
	}
}

static struct chunk_result decode_both(const char *in, size_t len, uint64_t body_max)
{
	struct chunk_result a = decode(in, len, body_max, false);
	struct chunk_result b = decode(in, len, body_max, true);
	assert_int_equal(a.rc, b.rc);
	assert_int_equal(a.error, b.error);
	assert_int_equal(a.out_len, b.out_len);
	assert_memory_equal(a.out, b.out, a.out_len);
	if (a.rc >= 0) /* after an error, what was consumed is moot */
		assert_int_equal(a.consumed, b.consumed);
	return a;
}

static void chunk_err(const char *in, enum http_error want)
{
	struct chunk_result r = decode_both(in, strlen(in), 1 << 20);
	if (r.rc >= 0 || r.error != want)
		fail_msg("expected %s for chunked %s, got rc=%d %s", http_error_name(want), in,
			 r.rc, http_error_name(r.error));
}

static void chunked_body_is_decoded(void **state)
{
	const char *in = "5\r\nhello\r\n6;name=val;x\r\n world\r\nA\r\n0123456789\r\n"
			 "0\r\nX-Trailer: v\r\nY:\r\n\r\nNEXT";
	struct chunk_result r = decode_both(in, strlen(in), 1 << 20);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
	assert_int_equal(r.out_len, 21);
	assert_memory_equal(r.out, "hello world0123456789", 21);
	assert_int_equal(r.consumed, strlen(in) - 4); /* stops before the next message */
	r = decode_both("0\r\n\r\n", strlen("0\r\n\r\n"), 0);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
	assert_int_equal(r.out_len, 0);
	r = decode_both("fF\r\n", strlen("fF\r\n"), 1 << 20); /* hex in either case; wants data */
	assert_int_equal(r.rc, HTTP_PARSE_NEED_MORE);
	r = decode_both("3\r\nab", strlen("3\r\nab"), 1 << 20);
	assert_int_equal(r.rc, HTTP_PARSE_NEED_MORE);
	assert_int_equal(r.out_len, 2);
}

static void chunked_size_is_strict(void **state)
{
	chunk_err(" 5\r\nhello\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("5 \r\nhello\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("+5\r\nhello\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("-5\r\nhello\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("0x5\r\nhello\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("5g\r\nhello\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("\r\n", HTTP_E_BAD_CHUNK_SIZE);
	chunk_err("5\nhello\r\n0\r\n\r\n", HTTP_E_BARE_LF);
	chunk_err("5\rhello\r\n0\r\n\r\n", HTTP_E_BARE_CR);
	struct chunk_result nul = decode_both("5\0\r\nhello", 9, 100);
	assert_int_equal(nul.error, HTTP_E_NUL);
	/* 17 hex digits would overflow after 16: refused by digit count */
	chunk_err("10000000000000000\r\n", HTTP_E_CHUNK_SIZE_TOO_LARGE);
	chunk_err("00000000000000005\r\nhello\r\n", HTTP_E_CHUNK_SIZE_TOO_LARGE);
	/* 16 digits parse, then meet the body cap */
	chunk_err("ffffffffffffffff\r\n", HTTP_E_BODY_TOO_LARGE);
	struct chunk_result r = decode_both("0000000000000005\r\nhello\r\n0\r\n\r\n",
					    strlen("0000000000000005\r\nhello\r\n0\r\n\r\n"), 5);
	assert_int_equal(r.rc, HTTP_PARSE_DONE); /* control: 16 digits, at the cap */
}

static void chunked_body_cap_is_exact(void **state)
{
	const char *in = "3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
	struct chunk_result r = decode_both(in, strlen(in), 6);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
	r = decode_both(in, strlen(in), 5);
	assert_int_equal(r.rc, -1);
	assert_int_equal(r.error, HTTP_E_BODY_TOO_LARGE);
	assert_int_equal(r.out_len, 3); /* the first chunk was within the cap */
}

static void chunked_data_must_end_in_crlf(void **state)
{
	chunk_err("5\r\nhelloX\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_END);
	chunk_err("5\r\nhello\n0\r\n\r\n", HTTP_E_BAD_CHUNK_END);
	chunk_err("5\r\nhello\rX0\r\n\r\n", HTTP_E_BAD_CHUNK_END);
	chunk_err("5\r\nhello world\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_END);
}

static void chunked_extensions_are_bounded(void **state)
{
	char in[HTTP_CHUNK_EXT_MAX + 64];
	/* "1" + ';' + (cap - 1) bytes: extensions exactly at the cap */
	size_t n = 0;
	in[n++] = '1';
	in[n++] = ';';
	memset(in + n, 'e', HTTP_CHUNK_EXT_MAX - 1);
	n += HTTP_CHUNK_EXT_MAX - 1;
	memcpy(in + n, "\r\nx\r\n0\r\n\r\n", 10);
	struct chunk_result r = decode_both(in, n + 10, 100);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
	/* one byte more is refused */
	memset(in + 2, 'e', HTTP_CHUNK_EXT_MAX);
	n = 2 + HTTP_CHUNK_EXT_MAX;
	memcpy(in + n, "\r\nx\r\n0\r\n\r\n", 10);
	r = decode_both(in, n + 10, 100);
	assert_int_equal(r.rc, -1);
	assert_int_equal(r.error, HTTP_E_CHUNK_EXT_TOO_LONG);
	chunk_err("1;a\x01\r\nx\r\n0\r\n\r\n", HTTP_E_BAD_CHUNK_EXT);
	chunk_err("1;a\nb\r\nx\r\n0\r\n\r\n", HTTP_E_BARE_LF);
	r = decode_both("1;a=\"q\"\t;b\r\nx\r\n0;last\r\n\r\n",
			strlen("1;a=\"q\"\t;b\r\nx\r\n0;last\r\n\r\n"), 100);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
}

static void chunked_trailers_follow_header_rules(void **state)
{
	chunk_err("0\r\nX : v\r\n\r\n", HTTP_E_SPACE_BEFORE_COLON);
	chunk_err("0\r\nX: v\r\n w\r\n\r\n", HTTP_E_OBS_FOLD);
	chunk_err("0\r\nX: a\x01\r\n\r\n", HTTP_E_BAD_HEADER_VALUE);
	chunk_err("0\r\nNoColon\r\n\r\n", HTTP_E_BAD_HEADER_NAME);
	chunk_err("0\r\nX: v\n\r\n", HTTP_E_BARE_LF);
	chunk_err("0\r\nX: v\r\r\n", HTTP_E_BARE_CR);
	chunk_err("0\r\nX: v\r\n\n", HTTP_E_BARE_LF);
	struct chunk_result r = decode_both("0\r\nX: v\r\n\r\n", strlen("0\r\nX: v\r\n\r\n"), 0);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
	/* the trailer section is capped, even without a line end in sight */
	size_t n = HTTP_TRAILER_MAX_DEFAULT + 16;
	char *big = malloc(n);
	assert_non_null(big);
	memcpy(big, "0\r\nX: ", 6);
	memset(big + 6, 'v', n - 6);
	struct http_chunked c;
	os_error err = { 0 };
	size_t used;
	struct http_slice d;
	http_chunked_init(&c, 0);
	assert_int_equal(http_chunked_feed(&c, big, n, &used, &d, &err), -1);
	assert_int_equal(c.error, HTTP_E_TRAILER_TOO_LARGE);
	free(big);
}

/* ---- writer ---- */

static void writer_round_trips_through_parser(void **state)
{
	_cleanup_buf_ struct buf b;
	os_error err = { 0 };
	buf_init(&b, 4096);
	assert_int_equal(http_write_request_line(&b, "POST", "/v1/x?y=1", &err), 0);
	assert_int_equal(http_write_header(&b, "Host", "api.test:8443", &err), 0);
	assert_int_equal(http_write_content_length(&b, 12345, &err), 0);
	assert_int_equal(http_write_head_end(&b, &err), 0);
	size_t consumed;
	struct http_parser p;
	http_parser_init(&p, NULL);
	assert_int_equal(http_parse_request(&p, b.data, b.len, &g_req, &consumed, &err),
			 HTTP_PARSE_DONE);
	assert_int_equal(consumed, b.len);
	assert_slice(g_req.path, "/v1/x");
	assert_int_equal(g_req.host.port, 8443);
	assert_int_equal(g_req.framing.content_length, 12345);

	buf_reset(&b);
	assert_int_equal(http_write_status_line(&b, 201, "Created", &err), 0);
	assert_int_equal(http_write_header(&b, "Transfer-Encoding", "chunked", &err), 0);
	assert_int_equal(http_write_head_end(&b, &err), 0);
	assert_string_equal(b.data, "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n");
	size_t head = b.len;
	assert_int_equal(http_write_chunk(&b, "hello world, this is chunked", 28, &err), 0);
	assert_int_equal(http_write_last_chunk(&b, &err), 0);
	assert_string_equal(b.data + head, "1c\r\nhello world, this is chunked\r\n0\r\n\r\n");
	struct chunk_result r = decode_both(b.data + head, b.len - head, 100);
	assert_int_equal(r.rc, HTTP_PARSE_DONE);
	assert_int_equal(r.out_len, 28);
}

static void writer_refuses_injection(void **state)
{
	_cleanup_buf_ struct buf b;
	os_error err = { 0 };
	buf_init(&b, 4096);
	assert_int_equal(http_write_header(&b, "X-Ok", "fine value", &err), 0);
	size_t before = b.len;
	assert_int_equal(http_write_header(&b, "X-A", "v\r\nInjected: 1", &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_int_equal(http_write_header(&b, "X-A", "v\nInjected: 1", &err), -1);
	assert_int_equal(http_write_header(&b, "X-A", "v\r", &err), -1);
	assert_int_equal(http_write_header(&b, "X-A\r\nY", "v", &err), -1);
	assert_int_equal(http_write_header(&b, "X A", "v", &err), -1);
	assert_int_equal(http_write_header(&b, "X:A", "v", &err), -1);
	assert_int_equal(http_write_header(&b, "", "v", &err), -1);
	assert_int_equal(http_write_header(&b, "X-A", " padded", &err), -1);
	assert_int_equal(http_write_header(&b, "X-A", "a\x7f", &err), -1);
	struct http_slice nul_value = { "a\0b", 3 };
	assert_int_equal(
		http_write_header_slice(&b, (struct http_slice){ "X", 1 }, nul_value, &err), -1);
	assert_int_equal(http_write_request_line(&b, "GET /", "/", &err), -1);
	assert_int_equal(http_write_request_line(&b, "GET", "/a b", &err), -1);
	assert_int_equal(http_write_request_line(&b, "GET", "/a\r\nX: y", &err), -1);
	assert_int_equal(http_write_request_line(&b, "GET", "", &err), -1);
	assert_int_equal(http_write_status_line(&b, 200, "OK\r\nX: y", &err), -1);
	assert_int_equal(http_write_status_line(&b, 99, "Low", &err), -1);
	assert_int_equal(http_write_status_line(&b, 600, "High", &err), -1);
	assert_int_equal(http_write_chunk(&b, "", 0, &err), -1);
	assert_int_equal(b.len, before); /* nothing was appended by any refusal */
}

static void writer_is_all_or_nothing_at_the_cap(void **state)
{
	_cleanup_buf_ struct buf b;
	os_error err = { 0 };
	buf_init(&b, 20);
	assert_int_equal(http_write_header(&b, "A", "1", &err), 0); /* 6 bytes */
	assert_int_equal(http_write_header(&b, "Long-Name", "long value", &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	assert_int_equal(b.len, 6);
	assert_string_equal(b.data, "A: 1\r\n");
}

static void error_names_are_distinct(void **state)
{
	for (int i = 0; i < HTTP_E__COUNT; i++) {
		assert_string_not_equal(http_error_name((enum http_error)i), "unknown");
		for (int j = 0; j < i; j++)
			assert_string_not_equal(http_error_name((enum http_error)i),
						http_error_name((enum http_error)j));
	}
	assert_string_equal(http_error_name(HTTP_E__COUNT), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_simple_get_is_parsed),
		cmocka_unit_test(request_partial_head_needs_more),
		cmocka_unit_test(request_pipelined_reports_consumed),
		cmocka_unit_test(request_line_errors_are_named),
		cmocka_unit_test(request_version_must_be_1x),
		cmocka_unit_test(request_line_endings_must_be_crlf),
		cmocka_unit_test(request_nul_anywhere_is_refused),
		cmocka_unit_test(request_obs_fold_is_refused),
		cmocka_unit_test(request_header_syntax_is_strict),
		cmocka_unit_test(request_transfer_encoding_must_be_exactly_chunked),
		cmocka_unit_test(request_cl_with_te_is_refused),
		cmocka_unit_test(request_content_length_is_strict),
		cmocka_unit_test(request_host_rules),
		cmocka_unit_test(request_connect_needs_authority_form),
		cmocka_unit_test(request_absolute_form_is_split),
		cmocka_unit_test(request_absolute_host_mismatch_is_reported),
		cmocka_unit_test(request_asterisk_only_for_options),
		cmocka_unit_test(request_connection_expect_upgrade),
		cmocka_unit_test(request_limits_are_enforced),
		cmocka_unit_test(request_oversize_head_fails_before_it_ends),
		cmocka_unit_test(response_heads_are_parsed),
		cmocka_unit_test(response_errors_are_named),
		cmocka_unit_test(chunked_body_is_decoded),
		cmocka_unit_test(chunked_size_is_strict),
		cmocka_unit_test(chunked_body_cap_is_exact),
		cmocka_unit_test(chunked_data_must_end_in_crlf),
		cmocka_unit_test(chunked_extensions_are_bounded),
		cmocka_unit_test(chunked_trailers_follow_header_rules),
		cmocka_unit_test(writer_round_trips_through_parser),
		cmocka_unit_test(writer_refuses_injection),
		cmocka_unit_test(writer_is_all_or_nothing_at_the_cap),
		cmocka_unit_test(error_names_are_distinct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
