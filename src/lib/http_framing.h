/* http_framing.h - header semantics of a parsed head (internal to the HTTP
 * parser): message framing, Host and Expect. Decides framing or refuses the
 * message; never picks one of two conflicting readings. */
#ifndef OS_HTTP_FRAMING_H
#define OS_HTTP_FRAMING_H

#include <stdbool.h>

#include "http.h"

struct http_framing_error {
	enum http_error error;
	size_t offset; /* of the offending header, relative to base */
	const char *detail; /* static string */
};

/* Content-Length, Transfer-Encoding, Connection, Upgrade. base is the start
 * of the head, for error offsets. */
int http_framing_derive(const struct http_headers *h, int version_minor, const char *base,
			struct http_framing *f, struct http_framing_error *fe);

/* Framing plus Host (presence, uniqueness, syntax, agreement with an
 * absolute-form target) and Expect. */
int http_request_semantics(struct http_request *req, const char *base, bool reject_host_mismatch,
			   struct http_framing_error *fe);

#endif
