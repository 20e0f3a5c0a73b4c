/* json_override.h - finds `_method` members of a JSON request body as it
 * streams past, for upstreams that read a method override there: Laravel
 * replaces a JSON request's form parameters with the decoded body, and
 * Symfony's getMethod() then takes `_method` from them on a POST. Only the
 * top-level object's members count (that is what those parameters are).
 *
 * Incremental and bounded: a few dozen bytes of state whatever the body's
 * size, fed in any splits with the same result, so bodies of any length are
 * inspected without being held. For JSON that a decoder accepts the
 * member structure is exact (strings, escapes, nesting); what no decoder
 * accepts yields no parameters upstream, so nothing there is looked for. */
#ifndef OS_JSON_OVERRIDE_H
#define OS_JSON_OVERRIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request_shape.h"

struct json_override {
	uint32_t depth; /* containers open */
	bool top_object; /* the body is an object (its first container) */
	bool started; /* the first non-space byte was seen */
	uint8_t expect; /* in the top object: key, colon, value or after it */
	uint8_t role; /* of the string being read: key, `_method`'s value, other */
	bool in_string, escape, matched, bad_value;
	uint8_t hex_left; /* digits of a \uXXXX still to come */
	uint32_t code;
	char text[SHAPE_METHOD_MAX]; /* the key or value being decoded */
	size_t text_len;
	bool text_over; /* longer than text, or held a non-ASCII character */
	struct method_overrides found; /* every `_method` value, in order */
	bool failed; /* a value that is not a method token, or too many */
	char why[96];
};

void json_override_init(struct json_override *j);

/* Feeds the next n body bytes. Afterwards j->found holds every `_method`
 * value whose string has closed so far; j->failed is set (why says what)
 * for a `_method` that is not a string holding a method token, or more than
 * SHAPE_OVERRIDES_MAX of them. */
void json_override_feed(struct json_override *j, const char *p, size_t n);

/* The Content-Type says JSON as Laravel's isJson() reads it: "/json" or
 * "+json" anywhere in any Content-Type header. */
bool json_override_content_type(const struct http_request *req);

#endif
