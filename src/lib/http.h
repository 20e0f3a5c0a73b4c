/* http.h - strict HTTP/1.1 message heads, chunked bodies and head writers,
 * shared by the egress proxy (a security boundary), the gateway API and the
 * Kubernetes client. It must never guess at ambiguous framing: anything two
 * implementations could read differently is rejected with a named error.
 *
 * Ownership: the parsers never allocate and never copy. Every slice they
 * return points into the caller's buffer, which must stay unchanged while the
 * parsed struct is in use. They never read past the length they are given and
 * never write to the input.
 *
 * Incremental use: the caller keeps the not-yet-consumed bytes of the stream
 * in one buffer and calls again, with the same start and a longer length,
 * whenever more arrive. NEED_MORE means "call again with more"; the result
 * (success, error kind, bytes consumed) is the same however the bytes were
 * split. Pipelined messages: after HTTP_PARSE_DONE, *consumed is the length of
 * the head; the body (see http_request_body / http_response_body) follows it,
 * then the next message, parsed after http_parser_reset().
 *
 * Strict choices (documented, tested): an empty line before the start line
 * is refused rather than skipped; duplicate Content-Length headers (or a
 * comma list) are accepted only when every value is the same number;
 * Transfer-Encoding must be one header whose value is exactly "chunked" (any
 * case, OWS allowed around it), never in HTTP/1.0 and never with
 * Content-Length; hosts allow only letters, digits, '-', '.', '_' or an
 * [IPv6] literal (no percent-encoding, no userinfo). Host names are returned
 * as sent: case folding and a trailing dot are the policy matcher's job. */
#ifndef OS_HTTP_H
#define OS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

/* Named caps. The caller maps HTTP_E_LINE_TOO_LONG / HTTP_E_HEAD_TOO_LARGE /
 * HTTP_E_TOO_MANY_HEADERS to 431 (or 414 for a long request line). */
#define HTTP_LINE_MAX_DEFAULT 8192 /* request/status line, CRLF included */
#define HTTP_HEAD_MAX_DEFAULT 8192 /* header block after the start line */
#define HTTP_HEADERS_MAX_DEFAULT 100
#define HTTP_HEADERS_CAP 128 /* storage; headers_max is clamped to this */
#define HTTP_CHUNK_SIZE_DIGITS_MAX 16 /* hex digits of a chunk size */
#define HTTP_CHUNK_EXT_MAX 1024 /* bytes of chunk extensions per chunk line */
#define HTTP_TRAILER_MAX_DEFAULT 8192 /* whole trailer section */

/* Return values of the parsers (errors are < 0, see enum http_error). */
#define HTTP_PARSE_NEED_MORE 0
#define HTTP_PARSE_DONE 1
#define HTTP_PARSE_DATA 2 /* chunked decoder only: a span of body bytes */

/* Every reason a message is refused; http_error_name() gives a stable name
 * for logs and tests. The values are distinct on purpose: the audit log and
 * the tests must tell a smuggling attempt from a plain malformed line. */
enum http_error {
	HTTP_E_NONE = 0,
	HTTP_E_NUL, /* NUL byte anywhere in a head, chunk line or trailer */
	HTTP_E_BARE_LF, /* LF not preceded by CR */
	HTTP_E_BARE_CR, /* CR not followed by LF */
	HTTP_E_OBS_FOLD, /* header line starting with SP or HT */
	HTTP_E_LINE_TOO_LONG, /* request/status line over line_max */
	HTTP_E_HEAD_TOO_LARGE, /* header block over head_max */
	HTTP_E_TOO_MANY_HEADERS, /* more than headers_max header lines */
	HTTP_E_BAD_REQUEST_LINE, /* not "method SP target SP version" */
	HTTP_E_BAD_METHOD, /* method is not a token */
	HTTP_E_BAD_TARGET, /* invalid bytes or shape of the request-target */
	HTTP_E_BAD_VERSION, /* not "HTTP/" DIGIT "." DIGIT */
	HTTP_E_UNSUPPORTED_VERSION, /* well-formed but not HTTP/1.0 or 1.1 */
	HTTP_E_BAD_STATUS_LINE, /* not "version SP 3DIGIT SP reason" */
	HTTP_E_BAD_STATUS_CODE, /* status code outside 100..599 */
	HTTP_E_BAD_HEADER_NAME, /* empty name, non-token byte, or no colon */
	HTTP_E_SPACE_BEFORE_COLON, /* "Name : value" */
	HTTP_E_BAD_HEADER_VALUE, /* CTL (other than HT) or DEL in a value */
	HTTP_E_BAD_CONTENT_LENGTH, /* not digits, sign, overflow, bad list */
	HTTP_E_CONFLICTING_CONTENT_LENGTH, /* several Content-Length, differing */
	HTTP_E_BAD_TRANSFER_ENCODING, /* anything but one "chunked" in 1.1 */
	HTTP_E_CL_AND_TE, /* Content-Length together with Transfer-Encoding */
	HTTP_E_MISSING_HOST, /* HTTP/1.1 request without Host */
	HTTP_E_MULTIPLE_HOST, /* more than one Host header */
	HTTP_E_BAD_HOST, /* Host value is not host[:port] */
	HTTP_E_HOST_MISMATCH, /* absolute-form authority != Host (if rejecting) */
	HTTP_E_BAD_CHUNK_SIZE, /* chunk size not 1+ hex digits then ';' or CRLF */
	HTTP_E_CHUNK_SIZE_TOO_LARGE, /* too many hex digits */
	HTTP_E_CHUNK_EXT_TOO_LONG, /* chunk extensions over HTTP_CHUNK_EXT_MAX */
	HTTP_E_BAD_CHUNK_EXT, /* CTL byte in a chunk extension */
	HTTP_E_BAD_CHUNK_END, /* chunk data not followed by CRLF */
	HTTP_E_BODY_TOO_LARGE, /* decoded body over body_max */
	HTTP_E_TRAILER_TOO_LARGE, /* trailer section over trailer_max */
	HTTP_E__COUNT
};

/* Stable lower-case name of an error ("bare-lf", "cl-and-te", ...). */
const char *http_error_name(enum http_error e);

/* A byte range inside the caller's buffer (or a static string). */
struct http_slice {
	const char *p;
	size_t len;
};

struct http_header {
	struct http_slice name; /* a token, case as sent */
	struct http_slice value; /* leading and trailing SP/HT removed */
};

struct http_headers {
	struct http_header v[HTTP_HEADERS_CAP];
	size_t n;
};

/* host[:port] as found in CONNECT targets, absolute URIs and Host. */
struct http_authority {
	struct http_slice host; /* without the brackets of an IPv6 literal */
	uint16_t port; /* the explicit port, else the scheme default (or 0) */
	bool has_port;
	bool ipv6; /* host was "[v6]" and is a valid IPv6 address */
};

enum http_target_form {
	HTTP_TARGET_ORIGIN, /* "/path?query" */
	HTTP_TARGET_ABSOLUTE, /* "http://authority/path?query" (http/https only) */
	HTTP_TARGET_AUTHORITY, /* "host:port", CONNECT only (and CONNECT needs it) */
	HTTP_TARGET_ASTERISK, /* "*", OPTIONS only */
};

/* Framing derived from the headers. */
struct http_framing {
	bool has_content_length;
	uint64_t content_length; /* <= INT64_MAX */
	bool chunked; /* Transfer-Encoding: chunked (the only one accepted) */
	bool close; /* the connection ends after this message */
	bool upgrade; /* Upgrade header present and "upgrade" in Connection */
	struct http_slice upgrade_value;
};

struct http_request {
	struct http_slice method;
	struct http_slice target; /* raw request-target */
	enum http_target_form form;
	struct http_slice scheme; /* absolute-form: "http" or "https" (any case) */
	bool https;
	struct http_authority authority; /* absolute-form and authority-form */
	struct http_slice path; /* origin/absolute: path ("/" if absent) */
	struct http_slice query; /* after '?', without it */
	bool has_query;
	int version_minor; /* 0 or 1 */
	struct http_headers headers;
	struct http_framing framing;
	bool expect_100; /* Expect: 100-continue */
	bool expect_other; /* an Expect the caller should answer with 417 */
	bool has_host;
	struct http_slice host_value;
	struct http_authority host;
	/* absolute-form whose Host names another authority: the proxy decides
	 * (RFC 9112 3.2.2 says the target wins). Rejected instead when
	 * http_limits.reject_host_mismatch is set. */
	bool host_mismatch;
};

struct http_response {
	int version_minor;
	int status; /* 100..599 */
	struct http_slice reason; /* may be empty */
	struct http_headers headers;
	struct http_framing framing;
};

struct http_limits {
	size_t line_max; /* start line, CRLF included */
	size_t head_max; /* header block after the start line, final CRLF included */
	size_t headers_max; /* header lines; clamped to HTTP_HEADERS_CAP */
	bool reject_host_mismatch;
};

/* Head parser state; the scan position survives NEED_MORE so feeding one
 * byte at a time stays linear. */
struct http_parser {
	struct http_limits lim;
	size_t scanned; /* bytes already checked by the byte scanner */
	size_t line_start; /* offset of the current line */
	size_t start_line_len; /* length of line 1 incl. CRLF, once known */
	size_t lines; /* complete lines so far */
	enum http_error error; /* why the last call failed */
	size_t error_offset; /* byte offset of the problem in the head */
};

void http_limits_default(struct http_limits *lim);
/* lim NULL, or any field 0: the default for it. */
void http_parser_init(struct http_parser *p, const struct http_limits *lim);
/* Forgets the scan position (keeps the limits) to parse the next message. */
void http_parser_reset(struct http_parser *p);

/* Parses a request head from buf[0..len). Returns HTTP_PARSE_DONE and sets
 * *consumed to the head length, HTTP_PARSE_NEED_MORE, or < 0 with p->error and
 * err (code EPROTO, or EMSGSIZE for the three size caps) set. req is only
 * meaningful after HTTP_PARSE_DONE. */
int http_parse_request(struct http_parser *p, const char *buf, size_t len, struct http_request *req,
		       size_t *consumed, os_error *err);
/* Same for a response head. 1xx responses are returned like any other; the
 * caller reads the next head after them. */
int http_parse_response(struct http_parser *p, const char *buf, size_t len,
			struct http_response *resp, size_t *consumed, os_error *err);

/* Case-insensitive lookup of the first header with this name, or NULL. */
const struct http_header *http_header_find(const struct http_headers *h, const char *name);

enum http_body_kind {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH, /* framing.content_length bytes */
	HTTP_BODY_CHUNKED, /* use struct http_chunked */
	HTTP_BODY_UNTIL_CLOSE, /* response without length: read to EOF */
	HTTP_BODY_TUNNEL, /* 2xx to CONNECT or 101: raw bytes both ways */
};
/* Derived from the headers alone, CONNECT included: a proxy that splices
 * after CONNECT should refuse one announcing a body. */
enum http_body_kind http_request_body(const struct http_request *req);
/* The response body depends on the request: HEAD and CONNECT change it. */
enum http_body_kind http_response_body(const struct http_response *resp, bool request_was_head,
				       bool request_was_connect);

/* Parses host[:port] (host: DNS name / IPv4 chars, or [IPv6]); port 1..65535
 * in decimal without leading zeros. default_port applies when none is given;
 * require_port makes a missing port an error (CONNECT). 0 or -1. */
int http_parse_authority(const char *s, size_t len, uint16_t default_port, bool require_port,
			 struct http_authority *out, os_error *err);

/* Incremental chunked-body decoder. Unlike the head parser it consumes: each
 * call reports *consumed bytes the caller drops before the next call (a
 * chunk-size or trailer line is only consumed once complete, so the caller
 * keeps an incomplete line and appends to it).
 *   HTTP_PARSE_DATA: *data is a span of body bytes inside the input;
 *   HTTP_PARSE_DONE: last chunk and trailers read (*consumed ends there, any
 *                    further bytes are the next message);
 *   HTTP_PARSE_NEED_MORE: everything usable was consumed;
 *   < 0: c->error and err set. */
struct http_chunked {
	uint64_t body_max; /* decoded body cap */
	size_t trailer_max; /* trailer section cap */
	uint64_t body_len; /* decoded bytes so far */
	uint64_t remaining; /* data bytes left in the current chunk */
	size_t trailer_len;
	size_t trailers; /* trailer lines so far */
	uint64_t stream_off; /* bytes consumed so far, for error offsets */
	int state;
	enum http_error error;
};
void http_chunked_init(struct http_chunked *c, uint64_t body_max);
int http_chunked_feed(struct http_chunked *c, const char *in, size_t len, size_t *consumed,
		      struct http_slice *data, os_error *err);

/* Writers. Each refuses (EINVAL, nothing appended) a name that is not a
 * token, a value holding CR, LF, NUL or another CTL but HT, a method that is
 * not a token, a target with SP/CTL/non-ASCII bytes and a reason with CTLs,
 * so no caller can inject a header or split a message. */
int http_write_request_line(struct buf *b, const char *method, const char *target, os_error *err);
int http_write_status_line(struct buf *b, int status, const char *reason, os_error *err);
int http_write_header(struct buf *b, const char *name, const char *value, os_error *err);
int http_write_header_slice(struct buf *b, struct http_slice name, struct http_slice value,
			    os_error *err);
/* Appends "Content-Length: N". */
int http_write_content_length(struct buf *b, uint64_t n, os_error *err);
/* Appends the CRLF that ends a head. */
int http_write_head_end(struct buf *b, os_error *err);
/* Appends one chunk (len > 0) as hex size, CRLF, data, CRLF; len 0 is refused
 * because it would end the body: use http_write_last_chunk. */
int http_write_chunk(struct buf *b, const void *data, size_t len, os_error *err);
/* Appends "0\r\n\r\n" (no trailers). */
int http_write_last_chunk(struct buf *b, os_error *err);

/* Byte classes shared by the parser and the writer. */
bool http_is_tchar(unsigned char c);
bool http_is_token(const char *s, size_t len);
/* Field-value bytes: VCHAR, obs-text, SP, HT. */
bool http_is_field_byte(unsigned char c);

#endif
