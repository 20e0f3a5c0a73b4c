/* http_parse.c - request and response heads: a byte scanner that finds the
 * end of the head under the size caps, then a structural pass over the
 * complete head. It never accepts a head another parser could frame
 * differently, and never copies or allocates. */
#include <string.h>

#include "http.h"
#include "http_framing.h"
#include "http_internal.h"

static const char default_path[] = "/";

void http_limits_default(struct http_limits *lim)
{
	*lim = (struct http_limits){
		.line_max = HTTP_LINE_MAX_DEFAULT,
		.head_max = HTTP_HEAD_MAX_DEFAULT,
		.headers_max = HTTP_HEADERS_MAX_DEFAULT,
	};
}

void http_parser_init(struct http_parser *p, const struct http_limits *lim)
{
	memset(p, 0, sizeof(*p));
	http_limits_default(&p->lim);
	if (lim) {
		/* 0 keeps the default, so a partly filled struct is safe */
		p->lim.line_max = lim->line_max ? lim->line_max : p->lim.line_max;
		p->lim.head_max = lim->head_max ? lim->head_max : p->lim.head_max;
		p->lim.headers_max = lim->headers_max ? lim->headers_max : p->lim.headers_max;
		p->lim.reject_host_mismatch = lim->reject_host_mismatch;
	}
	if (p->lim.headers_max > HTTP_HEADERS_CAP)
		p->lim.headers_max = HTTP_HEADERS_CAP;
}

void http_parser_reset(struct http_parser *p)
{
	struct http_limits lim = p->lim;
	http_parser_init(p, &lim);
}

static int fail(struct http_parser *p, enum http_error e, size_t off, os_error *err,
		const char *detail)
{
	p->error = e;
	p->error_offset = off;
	return http_fail(e, off, err, detail);
}

/* A CRLF ended a line at buf[end-2..end). Returns 1 when it was the empty line
 * ending the head, 0 to go on, -1 on error. */
static int scan_line_end(struct http_parser *p, size_t end, bool response, os_error *err)
{
	size_t line_len = end - p->line_start;
	if (p->lines == 0) {
		if (line_len == 2)
			return fail(p, response ? HTTP_E_BAD_STATUS_LINE : HTTP_E_BAD_REQUEST_LINE,
				    p->line_start, err, "empty start line");
		p->start_line_len = end;
	} else if (line_len == 2) {
		if (end - p->start_line_len > p->lim.head_max)
			return fail(p, HTTP_E_HEAD_TOO_LARGE, p->line_start, err,
				    "header block over the limit");
		return 1;
	} else if (p->lines > p->lim.headers_max) {
		return fail(p, HTTP_E_TOO_MANY_HEADERS, p->line_start, err,
			    "more header lines than allowed");
	}
	p->lines++;
	p->line_start = end;
	return 0;
}

/* Checks one byte that is neither CR nor LF against the caps and fold rule. */
static int scan_byte(struct http_parser *p, const char *buf, size_t i, os_error *err)
{
	if (buf[i] == '\0')
		return fail(p, HTTP_E_NUL, i, err, "NUL byte in head");
	if (p->lines == 0) {
		/* +2: the line must still fit its CRLF. */
		if (i - p->line_start + 1 + 2 > p->lim.line_max)
			return fail(p, HTTP_E_LINE_TOO_LONG, i, err, "start line over the limit");
		return 0;
	}
	if (i == p->line_start && (buf[i] == ' ' || buf[i] == '\t'))
		return fail(p, HTTP_E_OBS_FOLD, i, err, "obsolete line folding");
	if (i - p->start_line_len + 1 + 2 > p->lim.head_max)
		return fail(p, HTTP_E_HEAD_TOO_LARGE, i, err, "header block over the limit");
	return 0;
}

/* Scans buf from where the last call stopped. Returns 1 with *head_len set
 * once the head is complete, 0 for more, -1 on error. */
static int scan_head(struct http_parser *p, const char *buf, size_t len, bool response,
		     size_t *head_len, os_error *err)
{
	size_t i = p->scanned;
	for (; i < len; i++) {
		if (buf[i] == '\n')
			return fail(p, HTTP_E_BARE_LF, i, err, "LF without CR");
		if (buf[i] != '\r') {
			if (scan_byte(p, buf, i, err) < 0)
				return -1;
			continue;
		}
		if (i + 1 == len)
			break; /* CR at the end: decide when the next byte comes */
		if (buf[i + 1] != '\n')
			return fail(p, HTTP_E_BARE_CR, i, err, "CR without LF");
		i++;
		int r = scan_line_end(p, i + 1, response, err);
		if (r != 0) {
			p->scanned = i + 1;
			if (r > 0)
				*head_len = i + 1;
			return r;
		}
	}
	p->scanned = i;
	return 0;
}

static int parse_version(struct http_parser *p, const char *s, size_t len, size_t off, int *minor,
			 os_error *err)
{
	if (len != 8 || memcmp(s, "HTTP/", 5) != 0 || s[5] < '0' || s[5] > '9' || s[6] != '.' ||
	    s[7] < '0' || s[7] > '9')
		return fail(p, HTTP_E_BAD_VERSION, off, err, "malformed HTTP version");
	if (s[5] != '1' || (s[7] != '0' && s[7] != '1'))
		return fail(p, HTTP_E_UNSUPPORTED_VERSION, off, err,
			    "only HTTP/1.0 and HTTP/1.1 are supported");
	*minor = s[7] - '0';
	return 0;
}

/* Splits "path?query" (no fragment allowed: clients never send one). */
static int split_path(struct http_request *req, const char *s, size_t len)
{
	if (memchr(s, '#', len))
		return -1;
	const char *q = memchr(s, '?', len);
	size_t plen = q ? (size_t)(q - s) : len;
	req->path = plen ? (struct http_slice){ s, plen } : (struct http_slice){ default_path, 1 };
	req->has_query = q != NULL;
	req->query = q ? (struct http_slice){ q + 1, len - plen - 1 } : (struct http_slice){ s, 0 };
	return 0;
}

static bool scheme_is(const char *s, size_t len, const char *want)
{
	size_t n = strlen(want);
	if (len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((s[i] | 0x20) != want[i])
			return false;
	return true;
}

/* "http://authority/path?query" and the https twin; nothing else. */
static int parse_absolute(struct http_request *req, const char *t, size_t len, os_error *err)
{
	const char *sep = len >= 3 ? memmem(t, len, "://", 3) : NULL;
	if (!sep)
		return os_error_set(err, 0, "not origin-, absolute- or authority-form");
	size_t slen = (size_t)(sep - t);
	if (!scheme_is(t, slen, "http") && !scheme_is(t, slen, "https"))
		return os_error_set(err, 0, "scheme is neither http nor https");
	req->scheme = (struct http_slice){ t, slen };
	req->https = slen == 5;
	const char *a = sep + 3, *end = t + len;
	const char *stop = a;
	while (stop < end && *stop != '/' && *stop != '?' && *stop != '#')
		stop++;
	if (memchr(a, '@', (size_t)(stop - a)))
		return os_error_set(err, 0, "userinfo in the authority");
	os_error aerr = { 0 };
	if (http_parse_authority(a, (size_t)(stop - a), req->https ? 443 : 80, false,
				 &req->authority, &aerr) < 0)
		return os_error_set(err, 0, "%s", aerr.msg);
	if (split_path(req, stop, (size_t)(end - stop)) < 0)
		return os_error_set(err, 0, "fragment in the request-target");
	return 0;
}

static int classify_target(struct http_parser *p, struct http_request *req, size_t off,
			   os_error *err)
{
	const char *t = req->target.p;
	size_t len = req->target.len;
	os_error terr = { 0 };
	bool connect = req->method.len == 7 && memcmp(req->method.p, "CONNECT", 7) == 0;
	if (connect) {
		req->form = HTTP_TARGET_AUTHORITY;
		if (http_parse_authority(t, len, 0, true, &req->authority, &terr) < 0)
			return fail(p, HTTP_E_BAD_TARGET, off, err, terr.msg);
		return 0;
	}
	if (len == 1 && t[0] == '*') {
		req->form = HTTP_TARGET_ASTERISK;
		if (req->method.len == 7 && memcmp(req->method.p, "OPTIONS", 7) == 0)
			return 0;
		return fail(p, HTTP_E_BAD_TARGET, off, err, "'*' target outside OPTIONS");
	}
	if (t[0] == '/') {
		req->form = HTTP_TARGET_ORIGIN;
		if (split_path(req, t, len) < 0)
			return fail(p, HTTP_E_BAD_TARGET, off, err,
				    "fragment in the request-target");
		return 0;
	}
	req->form = HTTP_TARGET_ABSOLUTE;
	if (parse_absolute(req, t, len, &terr) < 0)
		return fail(p, HTTP_E_BAD_TARGET, off, err, terr.msg);
	return 0;
}

/* method SP request-target SP HTTP-version, exactly one SP each. */
static int parse_request_line(struct http_parser *p, const char *line, size_t len,
			      struct http_request *req, os_error *err)
{
	size_t m = 0;
	while (m < len && http_is_tchar((unsigned char)line[m]))
		m++;
	if (m == 0 || m == len || line[m] != ' ')
		return fail(p, m == 0 || m == len ? HTTP_E_BAD_REQUEST_LINE : HTTP_E_BAD_METHOD, m,
			    err, "expected a method token followed by one space");
	req->method = (struct http_slice){ line, m };
	size_t t = m + 1, te = t;
	while (te < len && line[te] != ' ') {
		unsigned char c = (unsigned char)line[te];
		if (c <= 0x20 || c >= 0x7f)
			return fail(p, HTTP_E_BAD_TARGET, te, err,
				    "control, space or non-ASCII byte in request-target");
		te++;
	}
	if (te == t || te == len)
		return fail(p, HTTP_E_BAD_REQUEST_LINE, te, err,
			    "expected request-target SP HTTP-version");
	if (memchr(line + te + 1, ' ', len - te - 1))
		return fail(p, HTTP_E_BAD_TARGET, te, err, "space in request-target");
	req->target = (struct http_slice){ line + t, te - t };
	if (parse_version(p, line + te + 1, len - te - 1, te + 1, &req->version_minor, err) < 0)
		return -1;
	return classify_target(p, req, t, err);
}

/* HTTP-version SP 3DIGIT [SP reason]; a missing reason is tolerated. */
static int parse_status_line(struct http_parser *p, const char *line, size_t len,
			     struct http_response *resp, os_error *err)
{
	if (len < 12 || line[8] != ' ' || (len > 12 && line[12] != ' '))
		return fail(p, HTTP_E_BAD_STATUS_LINE, 0, err,
			    "expected HTTP-version SP status-code SP reason");
	if (parse_version(p, line, 8, 0, &resp->version_minor, err) < 0)
		return -1;
	int code = 0;
	for (size_t i = 9; i < 12; i++) {
		if (line[i] < '0' || line[i] > '9')
			return fail(p, HTTP_E_BAD_STATUS_LINE, i, err,
				    "status code is not three digits");
		code = code * 10 + (line[i] - '0');
	}
	if (code < 100 || code > 599)
		return fail(p, HTTP_E_BAD_STATUS_CODE, 9, err, "status code outside 100..599");
	resp->status = code;
	size_t r = len > 12 ? 13 : 12;
	for (size_t i = r; i < len; i++)
		if (!http_is_field_byte((unsigned char)line[i]))
			return fail(p, HTTP_E_BAD_STATUS_LINE, i, err, "control byte in reason");
	resp->reason = (struct http_slice){ line + r, len - r };
	return 0;
}

/* Splits the header block (already scanned: every line ends in CRLF) into
 * field lines. */
static int parse_fields(struct http_parser *p, const char *buf, size_t head_len,
			struct http_headers *h, os_error *err)
{
	size_t off = p->start_line_len;
	h->n = 0;
	while (off + 2 < head_len) {
		const char *line = buf + off;
		const char *cr = memchr(line, '\r', head_len - off);
		size_t len = (size_t)(cr - line);
		enum http_error e;
		size_t bad;
		if (http_field_line(line, len, &h->v[h->n], &e, &bad) < 0)
			return fail(p, e, off + bad, err,
				    e == HTTP_E_BAD_HEADER_VALUE ? "control byte in header value"
				    : e == HTTP_E_SPACE_BEFORE_COLON
					    ? "whitespace between header name and colon"
					    : "header name is not a token followed by ':'");
		h->n++;
		off += len + 2;
	}
	return 0;
}

static int fail_framing(struct http_parser *p, const struct http_framing_error *fe, os_error *err)
{
	return fail(p, fe->error, fe->offset, err, fe->detail);
}

int http_parse_request(struct http_parser *p, const char *buf, size_t len, struct http_request *req,
		       size_t *consumed, os_error *err)
{
	size_t head_len = 0;
	if (p->error != HTTP_E_NONE)
		return http_fail(p->error, p->error_offset, err, "parser already failed");
	int r = scan_head(p, buf, len, false, &head_len, err);
	if (r <= 0)
		return r;
	memset(req, 0, sizeof(*req));
	if (parse_request_line(p, buf, p->start_line_len - 2, req, err) < 0 ||
	    parse_fields(p, buf, head_len, &req->headers, err) < 0)
		return -1;
	struct http_framing_error fe = { 0 };
	if (http_request_semantics(req, buf, p->lim.reject_host_mismatch, &fe) < 0)
		return fail_framing(p, &fe, err);
	*consumed = head_len;
	return HTTP_PARSE_DONE;
}

int http_parse_response(struct http_parser *p, const char *buf, size_t len,
			struct http_response *resp, size_t *consumed, os_error *err)
{
	size_t head_len = 0;
	if (p->error != HTTP_E_NONE)
		return http_fail(p->error, p->error_offset, err, "parser already failed");
	int r = scan_head(p, buf, len, true, &head_len, err);
	if (r <= 0)
		return r;
	memset(resp, 0, sizeof(*resp));
	if (parse_status_line(p, buf, p->start_line_len - 2, resp, err) < 0 ||
	    parse_fields(p, buf, head_len, &resp->headers, err) < 0)
		return -1;
	struct http_framing_error fe = { 0 };
	if (http_framing_derive(&resp->headers, resp->version_minor, buf, &resp->framing, &fe) < 0)
		return fail_framing(p, &fe, err);
	*consumed = head_len;
	return HTTP_PARSE_DONE;
}
