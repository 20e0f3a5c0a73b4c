/* http_internal.h - helpers shared by the HTTP parser files (not for other
 * modules): one set of rules for field lines, used for heads and trailers
 * alike, so a trailer can never be laxer than a header. */
#ifndef OS_HTTP_INTERNAL_H
#define OS_HTTP_INTERNAL_H

#include <stddef.h>

#include "http.h"

/* Sets err (code EPROTO, or EMSGSIZE for the size caps) to
 * "http <name> at byte OFF: detail" and returns -1. */
int http_fail(enum http_error e, size_t off, os_error *err, const char *detail);

/* Parses one field line (without its CRLF): name ":" OWS value OWS.
 * On failure returns -1 with *e and *bad (offset in line) set. */
int http_field_line(const char *line, size_t len, struct http_header *out, enum http_error *e,
		    size_t *bad);

/* Finds the CRLF ending the line that starts at p. Returns 1 and sets
 * *line_len (without CRLF), 0 when no complete line is in p[0..len), -1 on
 * NUL / bare CR / bare LF with *e and *bad set. */
int http_find_crlf(const char *p, size_t len, size_t *line_len, enum http_error *e, size_t *bad);

#endif
