/* canon.h - canonicalisation of HTTP request targets for L7 decisions. The
 * canonical path is both what policy is matched against and what is
 * forwarded upstream, so a request can never mean two different things. */
#ifndef OS_POLICY_CANON_H
#define OS_POLICY_CANON_H

#include <stddef.h>

#include "error.h"

enum canon_result {
	CANON_OK = 0,
	CANON_NOT_ABSOLUTE, /* does not start with '/' */
	CANON_ESCAPES_ROOT, /* `..` above the root */
	CANON_ENCODED_SLASH, /* %2F or %5C in the path */
	CANON_CONTROL_BYTE, /* raw or encoded bytes < 0x20, 0x7f, or NUL */
	CANON_BAD_ESCAPE, /* % not followed by two hex digits */
	CANON_BAD_BYTE, /* byte not allowed in a path (space, non-ASCII raw, '\\', ...) */
	CANON_TOO_LONG, /* over out cap */
	CANON_MATRIX_PARAM, /* `;` path parameters such as `..;/` */
	CANON_BAD_UTF8, /* escaped bytes > 0x7F that are not valid UTF-8 (%C0%AE) */
	CANON_DOUBLE_ENCODED, /* %25 escaping '.', '/', '\\', ';' or '%' (%252e) */
};

/* Canonicalises the path part of target (target[0..len); the query, if any,
 * starts at the first '?' and is handed back unchanged: *query_out points into
 * target just past the '?' and *query_len excludes it; NULL and 0 when there
 * is no '?' (a bare "?" gives a non-NULL pointer and length 0). Either query
 * pointer may be NULL. Percent-decodes unreserved bytes (ALPHA DIGIT - . _ ~),
 * upper-cases the hex of other escapes, collapses `//`, resolves `.` and `..`.
 * Writes the canonical path NUL-terminated to out[cap]; on any result other
 * than CANON_OK, out is the empty string (if cap > 0). Decisions: canon.c. */
enum canon_result canon_request_path(const char *target, size_t len, char *out, size_t cap,
				     const char **query_out, size_t *query_len);

/* The same with flags: CANON_ALLOW_ENCODED_SLASH keeps %2F encoded in its
 * segment (OpenShell's allow_encoded_slash) instead of refusing it; a `.` or
 * `..` between encoded slashes is still CANON_ENCODED_SLASH. */
#define CANON_ALLOW_ENCODED_SLASH 1u
enum canon_result canon_request_path_opts(const char *target, size_t len, unsigned flags, char *out,
					  size_t cap, const char **query_out, size_t *query_len);

/* Short stable name of a result, e.g. "escapes_root", for audit records. */
const char *canon_result_name(enum canon_result r);

#endif
