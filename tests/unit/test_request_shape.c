/* test_request_shape.c - request shapes that would let an upstream act on
 * another request than the one judged (src/supervisor/egress/
 * request_shape.c): method-override headers and `_method` query parameters
 * found in every spelling an upstream decodes, invalid values refused, and
 * bodies on GET/HEAD/TRACE flagged, each beside a request that is clean. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "request_shape.h"

static struct http_request req;

static const struct http_request *head(const char *text)
{
	static struct http_parser p;
	size_t consumed = 0;
	http_parser_init(&p, NULL);
	assert_int_equal(http_parse_request(&p, text, strlen(text), &req, &consumed, NULL),
			 HTTP_PARSE_DONE);
	return &req;
}

static int overrides(const char *text, struct method_overrides *o, char *why)
{
	return request_method_overrides(head(text), o, why, 96);
}

static void clean_request_has_no_override(void **state)
{
	(void)state;
	struct method_overrides o;
	char why[96];
	assert_int_equal(overrides("GET /x?method=DELETE&a_method=PUT HTTP/1.1\r\nHost: h\r\n"
				   "X-Method: DELETE\r\n\r\n",
				   &o, why),
			 0);
	assert_int_equal(o.n, 0);
}

static void override_headers_found_in_any_case(void **state)
{
	(void)state;
	struct method_overrides o;
	char why[96];
	assert_int_equal(
		overrides("POST /x HTTP/1.1\r\nHost: h\r\nx-http-method-override: delete\r\n"
			  "X-HTTP-Method: PUT\r\nX-METHOD-OVERRIDE: PATCH\r\n"
			  "X-HTTP-Method: PUT\r\n"
			  /* '_' is '-' to CGI-style servers (HTTP_X_HTTP_METHOD_OVERRIDE) */
			  "X_HTTP_Method_Override: GET\r\nx-http_method: HEAD\r\n"
			  "X-HTTP-Method-Overrides: OPTIONS\r\n\r\n",
			  &o, why),
		0);
	assert_int_equal(o.n, 6);
	assert_string_equal(o.source[4], "X-HTTP-Method-Override");
	assert_string_equal(o.method[5], "HEAD");
	assert_string_equal(o.method[0], "DELETE");
	assert_string_equal(o.source[0], "X-HTTP-Method-Override");
	assert_string_equal(o.method[1], "PUT");
	assert_string_equal(o.source[1], "X-HTTP-Method");
	assert_string_equal(o.method[2], "PATCH");
	assert_string_equal(o.method[3], "PUT");
}

static void path_override_headers_found(void **state)
{
	(void)state;
	assert_string_equal(request_path_override(head("GET /a HTTP/1.1\r\nHost: h\r\n"
						       "x_rewrite_url: /b\r\n\r\n")),
			    "X-Rewrite-URL");
	assert_string_equal(request_path_override(head("GET /a HTTP/1.1\r\nHost: h\r\n"
						       "X-Original-URL: /b\r\n\r\n")),
			    "X-Original-URL");
	/* Controls: a look-alike name and no header at all. */
	assert_null(
		request_path_override(head("GET /a HTTP/1.1\r\nHost: h\r\n"
					   "X-Original-URLs: /b\r\nX-Forwarded-For: x\r\n\r\n")));
	assert_null(request_path_override(head("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")));
}

static void query_method_found_decoded(void **state)
{
	(void)state;
	struct method_overrides o;
	char why[96];
	const char *forms[] = {
		"GET /x?_method=DELETE HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?a=1&_method=delete HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?a=1;_method=DELETE HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?%5Fmethod=DELETE HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?_METHOD=DELETE HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?_method=D%45LETE HTTP/1.1\r\nHost: h\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		assert_int_equal(overrides(forms[i], &o, why), 0);
		assert_int_equal(o.n, 1);
		assert_string_equal(o.method[0], "DELETE");
		assert_string_equal(o.source[0], "_method");
	}
	assert_int_equal(
		overrides("GET /x?_method=PUT&_method=DELETE HTTP/1.1\r\nHost: h\r\n\r\n", &o, why),
		0);
	assert_int_equal(o.n, 2);
}

static void invalid_override_values_refused(void **state)
{
	(void)state;
	struct method_overrides o;
	char why[96];
	const char *bad[] = {
		"POST /x HTTP/1.1\r\nHost: h\r\nX-HTTP-Method-Override: DELETE, PUT\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: h\r\nX-HTTP-Method-Override:\r\n\r\n",
		"POST /x HTTP/1.1\r\nHost: h\r\nX-HTTP-Method: GET/1\r\n\r\n",
		("POST /x HTTP/1.1\r\nHost: h\r\nX-Method-Override: "
		 "AVERYVERYVERYLONGMETHODNAMEOVERTHECAP\r\n\r\n"),
		"GET /x?_method=DEL+ETE HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?_method=DELETE%00 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?_method=%ZZ HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?_method HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /x?_method= HTTP/1.1\r\nHost: h\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(overrides(bad[i], &o, why), -1);
		assert_non_null(strstr(why, "invalid method override"));
	}
	char many[1024];
	size_t n = (size_t)snprintf(many, sizeof many, "GET /x?");
	for (int i = 0; i <= SHAPE_OVERRIDES_MAX; i++)
		n += (size_t)snprintf(many + n, sizeof many - n, "_method=GET&");
	snprintf(many + n, sizeof many - n, " HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_int_equal(overrides(many, &o, why), -1);
	assert_non_null(strstr(why, "more than"));
}

static void bodies_on_bodyless_methods_flagged(void **state)
{
	(void)state;
	assert_true(request_body_without_semantics(
		"GET", head("GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n")));
	assert_true(request_body_without_semantics(
		"head", head("head /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")));
	assert_true(request_body_without_semantics(
		"TRACE", head("TRACE /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n")));
	/* positive controls: no body, an empty one, a method with body semantics */
	assert_false(
		request_body_without_semantics("GET", head("GET /x HTTP/1.1\r\nHost: h\r\n\r\n")));
	assert_false(request_body_without_semantics(
		"GET", head("GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n")));
	assert_false(request_body_without_semantics(
		"POST", head("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n")));
	assert_false(request_body_without_semantics(
		"DELETE", head("DELETE /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n")));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(clean_request_has_no_override),
		cmocka_unit_test(override_headers_found_in_any_case),
		cmocka_unit_test(path_override_headers_found),
		cmocka_unit_test(query_method_found_decoded),
		cmocka_unit_test(invalid_override_values_refused),
		cmocka_unit_test(bodies_on_bodyless_methods_flagged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
