/* request_shape.h - request shapes that make an upstream act on another
 * request than the one the policy judged: method overrides (headers and the
 * `_method` query parameter that frameworks honour) and bodies on methods
 * whose bodies upstreams may ignore (the body is then read as a second,
 * unjudged request). Pure functions of a parsed head; no I/O. */
#ifndef OS_REQUEST_SHAPE_H
#define OS_REQUEST_SHAPE_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

#define SHAPE_OVERRIDES_MAX 8 /* more overrides than this in one request: refused */
#define SHAPE_METHOD_MAX 32 /* bytes of an override value, NUL included */

struct method_overrides {
	size_t n;
	char method[SHAPE_OVERRIDES_MAX][SHAPE_METHOD_MAX]; /* upper-cased */
	const char *source[SHAPE_OVERRIDES_MAX]; /* "X-HTTP-Method-Override", "_method", ... */
};

/* Appends value v[0..len) from source (a static string) to o: 0, or -1
 * with why[cap] when it is not a method token or o is full. */
int method_overrides_add(struct method_overrides *o, const char *source, const char *v, size_t len,
			 char *why, size_t cap);

/* Collects every override the request carries: the X-HTTP-Method-Override,
 * X-HTTP-Method and X-Method-Override headers (any case, '_' read as '-',
 * each occurrence)
 * and `_method` query parameters (percent-decoded, `&` or `;` separated).
 * 0, or -1 with why[cap] saying what is wrong ("invalid method override
 * in X-HTTP-Method") when a value is not a method token (letters, '-', '_',
 * as the policy reads methods) or there are too many. */
int request_method_overrides(const struct http_request *req, struct method_overrides *out,
			     char *why, size_t cap);

/* The first header that names another path for the upstream to route
 * (X-Original-URL, X-Rewrite-URL, X-Original-URI; '_' read as '-'), or NULL. */
const char *request_path_override(const struct http_request *req);

/* GET, HEAD and TRACE announcing a body (any Content-Length > 0 or
 * Transfer-Encoding): content without defined semantics (RFC 9110 9.3.1,
 * 9.3.2; TRACE must not carry any, 9.3.8). */
bool request_body_without_semantics(const char *method, const struct http_request *req);

/* Form bodies, where Rack (Rails) and Laravel also read `_method` on a POST. */
enum form_kind { FORM_NONE, FORM_URLENCODED, FORM_MULTIPART, FORM_MULTIPART_INVALID };
/* From Content-Type; boundary[cap] receives a multipart boundary. */
enum form_kind request_form_kind(const struct http_request *req, char *boundary, size_t cap);
/* Adds every `_method` field of the whole body to out (urlencoded pairs as
 * in a query; multipart parts named `_method`, CRLF framing as RFC 7578).
 * -1 with why when a value is not a method, or a multipart body cannot be
 * read (an upstream might read it, so it is refused rather than passed). */
int request_form_overrides(enum form_kind kind, const char *boundary, const char *body, size_t len,
			   struct method_overrides *out, char *why, size_t cap);

#endif
