/* http_common.c - byte classes, error names, authority (host[:port]) parsing
 * and field-line rules shared by the HTTP parsers and writers. Nothing here
 * allocates; an authority is validated, never "cleaned up". */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "http.h"
#include "http_internal.h"
#include "parse.h"

static const char *const error_names[HTTP_E__COUNT] = {
	[HTTP_E_NONE] = "none",
	[HTTP_E_NUL] = "nul-byte",
	[HTTP_E_BARE_LF] = "bare-lf",
	[HTTP_E_BARE_CR] = "bare-cr",
	[HTTP_E_OBS_FOLD] = "obs-fold",
	[HTTP_E_LINE_TOO_LONG] = "line-too-long",
	[HTTP_E_HEAD_TOO_LARGE] = "head-too-large",
	[HTTP_E_TOO_MANY_HEADERS] = "too-many-headers",
	[HTTP_E_BAD_REQUEST_LINE] = "bad-request-line",
	[HTTP_E_BAD_METHOD] = "bad-method",
	[HTTP_E_BAD_TARGET] = "bad-target",
	[HTTP_E_BAD_VERSION] = "bad-version",
	[HTTP_E_UNSUPPORTED_VERSION] = "unsupported-version",
	[HTTP_E_BAD_STATUS_LINE] = "bad-status-line",
	[HTTP_E_BAD_STATUS_CODE] = "bad-status-code",
	[HTTP_E_BAD_HEADER_NAME] = "bad-header-name",
	[HTTP_E_SPACE_BEFORE_COLON] = "space-before-colon",
	[HTTP_E_BAD_HEADER_VALUE] = "bad-header-value",
	[HTTP_E_BAD_CONTENT_LENGTH] = "bad-content-length",
	[HTTP_E_CONFLICTING_CONTENT_LENGTH] = "conflicting-content-length",
	[HTTP_E_BAD_TRANSFER_ENCODING] = "bad-transfer-encoding",
	[HTTP_E_CL_AND_TE] = "cl-and-te",
	[HTTP_E_MISSING_HOST] = "missing-host",
	[HTTP_E_MULTIPLE_HOST] = "multiple-host",
	[HTTP_E_BAD_HOST] = "bad-host",
	[HTTP_E_HOST_MISMATCH] = "host-mismatch",
	[HTTP_E_BAD_CHUNK_SIZE] = "bad-chunk-size",
	[HTTP_E_CHUNK_SIZE_TOO_LARGE] = "chunk-size-too-large",
	[HTTP_E_CHUNK_EXT_TOO_LONG] = "chunk-ext-too-long",
	[HTTP_E_BAD_CHUNK_EXT] = "bad-chunk-ext",
	[HTTP_E_BAD_CHUNK_END] = "bad-chunk-end",
	[HTTP_E_BODY_TOO_LARGE] = "body-too-large",
	[HTTP_E_TRAILER_TOO_LARGE] = "trailer-too-large",
};

const char *http_error_name(enum http_error e)
{
	if ((unsigned)e >= HTTP_E__COUNT || !error_names[e])
		return "unknown";
	return error_names[e];
}

int http_fail(enum http_error e, size_t off, os_error *err, const char *detail)
{
	bool size_cap = e == HTTP_E_LINE_TOO_LONG || e == HTTP_E_HEAD_TOO_LARGE ||
			e == HTTP_E_TOO_MANY_HEADERS || e == HTTP_E_BODY_TOO_LARGE ||
			e == HTTP_E_TRAILER_TOO_LARGE || e == HTTP_E_CHUNK_EXT_TOO_LONG;
	return os_error_set(err, size_cap ? EMSGSIZE : EPROTO, "http %s at byte %zu: %s",
			    http_error_name(e), off, detail);
}

bool http_is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool http_is_token(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!http_is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

bool http_is_field_byte(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

int http_field_line(const char *line, size_t len, struct http_header *out, enum http_error *e,
		    size_t *bad)
{
	size_t i = 0;
	while (i < len && http_is_tchar((unsigned char)line[i]))
		i++;
	if (i == len || line[i] != ':') {
		/* "Name : v" is the classic smuggling shape; name it apart. */
		*e = (i > 0 && i < len && (line[i] == ' ' || line[i] == '\t'))
			     ? HTTP_E_SPACE_BEFORE_COLON
			     : HTTP_E_BAD_HEADER_NAME;
		*bad = i;
		return -1;
	}
	if (i == 0) {
		*e = HTTP_E_BAD_HEADER_NAME;
		*bad = 0;
		return -1;
	}
	out->name = (struct http_slice){ line, i };
	size_t v = i + 1, end = len;
	while (v < end && (line[v] == ' ' || line[v] == '\t'))
		v++;
	while (end > v && (line[end - 1] == ' ' || line[end - 1] == '\t'))
		end--;
	for (size_t k = v; k < end; k++) {
		if (!http_is_field_byte((unsigned char)line[k])) {
			*e = HTTP_E_BAD_HEADER_VALUE;
			*bad = k;
			return -1;
		}
	}
	out->value = (struct http_slice){ line + v, end - v };
	return 0;
}

int http_find_crlf(const char *p, size_t len, size_t *line_len, enum http_error *e, size_t *bad)
{
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\0' || p[i] == '\n') {
			*e = p[i] == '\0' ? HTTP_E_NUL : HTTP_E_BARE_LF;
			*bad = i;
			return -1;
		}
		if (p[i] != '\r')
			continue;
		if (i + 1 == len)
			return 0;
		if (p[i + 1] != '\n') {
			*e = HTTP_E_BARE_CR;
			*bad = i;
			return -1;
		}
		*line_len = i;
		return 1;
	}
	return 0;
}

const struct http_header *http_header_find(const struct http_headers *h, const char *name)
{
	size_t nlen = strlen(name);
	for (size_t i = 0; i < h->n; i++)
		if (str_ieq(h->v[i].name.p, h->v[i].name.len, name, nlen))
			return &h->v[i];
	return NULL;
}

/* Port: 1..65535, decimal, no sign, no leading zero (":080" could be read as
 * 80 by one side and rejected by the other). */
static int parse_port(const char *s, size_t len, uint16_t *out, os_error *err)
{
	if (len == 0 || len > 5 || s[0] == '0')
		return os_error_set(err, EINVAL, "invalid port \"%.*s\"", (int)len, s);
	uint64_t v;
	if (parse_u64(s, len, 1, 65535, &v, err) < 0)
		return os_error_prefix(err, "invalid port");
	*out = (uint16_t)v;
	return 0;
}

static int parse_ipv6_literal(const char *s, size_t len, os_error *err)
{
	char tmp[INET6_ADDRSTRLEN + 1];
	struct in6_addr a;
	if (len == 0 || len >= sizeof(tmp))
		return os_error_set(err, EINVAL, "invalid IPv6 literal");
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET6, tmp, &a) != 1)
		return os_error_set(err, EINVAL, "invalid IPv6 literal \"%.*s\"", (int)len, s);
	return 0;
}

/* Registered names and IPv4 literals: letters, digits, '-', '.', '_'.
 * Percent-encoding and other sub-delims are refused: no DNS name needs them
 * and each is a way to make the proxy and the upstream see different hosts. */
static int check_reg_name(const char *s, size_t len, os_error *err)
{
	if (len == 0)
		return os_error_set(err, EINVAL, "empty host");
	if (len > 253)
		return os_error_set(err, EINVAL, "host name longer than 253 bytes");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
		if (!ok)
			return os_error_set(err, EINVAL, "invalid byte 0x%02x in host \"%.*s\"", c,
					    (int)(len > 64 ? 64 : len), s);
	}
	return 0;
}

int http_parse_authority(const char *s, size_t len, uint16_t default_port, bool require_port,
			 struct http_authority *out, os_error *err)
{
	struct http_authority a = { 0 };
	size_t host_end; /* index just past the host (incl. ']') */
	if (len > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return os_error_set(err, EINVAL, "IPv6 literal without ']'");
		host_end = (size_t)(close - s) + 1;
		if (parse_ipv6_literal(s + 1, host_end - 2, err) < 0)
			return -1;
		a.host = (struct http_slice){ s + 1, host_end - 2 };
		a.ipv6 = true;
	} else {
		const char *colon = memchr(s, ':', len);
		host_end = colon ? (size_t)(colon - s) : len;
		if (check_reg_name(s, host_end, err) < 0)
			return -1;
		a.host = (struct http_slice){ s, host_end };
	}
	if (host_end < len) {
		if (s[host_end] != ':')
			return os_error_set(err, EINVAL, "unexpected byte after IPv6 literal");
		if (parse_port(s + host_end + 1, len - host_end - 1, &a.port, err) < 0)
			return -1;
		a.has_port = true;
	} else if (require_port) {
		return os_error_set(err, EINVAL, "missing port in \"%.*s\"",
				    (int)(len > 64 ? 64 : len), s);
	} else {
		a.port = default_port;
	}
	*out = a;
	return 0;
}
