/* http_write.c - serialises message heads and chunks into a capped buf.
 * Every caller-supplied string is validated first, so a name or value can
 * never inject a header or split a message; on refusal nothing is appended. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "http.h"

static bool target_ok(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f)
			return false;
	}
	return true;
}

static bool value_ok(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!http_is_field_byte((unsigned char)s[i]))
			return false;
	/* Leading/trailing OWS would be stripped by the reader: refuse it so
	 * what we write is what is read. */
	return len == 0 || (s[0] != ' ' && s[0] != '\t' && s[len - 1] != ' ' && s[len - 1] != '\t');
}

/* Appends all parts or, on failure, nothing. */
static int append_all(struct buf *b, const struct http_slice *parts, size_t n, os_error *err)
{
	size_t before = b->len;
	for (size_t i = 0; i < n; i++) {
		if (buf_append(b, parts[i].p, parts[i].len, err) < 0) {
			b->len = before;
			if (b->data)
				b->data[before] = '\0';
			return -1;
		}
	}
	return 0;
}

#define S(str) ((struct http_slice){ (str), strlen(str) })

int http_write_request_line(struct buf *b, const char *method, const char *target, os_error *err)
{
	if (!http_is_token(method, strlen(method)))
		return os_error_set(err, EINVAL, "HTTP method is not a token");
	if (!target_ok(target, strlen(target)))
		return os_error_set(
			err, EINVAL,
			"request-target is empty or has space, control or non-ASCII bytes");
	struct http_slice parts[] = { S(method), S(" "), S(target), S(" HTTP/1.1\r\n") };
	return append_all(b, parts, 4, err);
}

int http_write_status_line(struct buf *b, int status, const char *reason, os_error *err)
{
	if (status < 100 || status > 599)
		return os_error_set(err, EINVAL, "status code %d outside 100..599", status);
	size_t rlen = strlen(reason);
	for (size_t i = 0; i < rlen; i++)
		if (!http_is_field_byte((unsigned char)reason[i]))
			return os_error_set(err, EINVAL, "control byte in reason phrase");
	char code[4] = { (char)('0' + status / 100), (char)('0' + status / 10 % 10),
			 (char)('0' + status % 10), '\0' };
	struct http_slice parts[] = { S("HTTP/1.1 "), S(code), S(" "), S(reason), S("\r\n") };
	return append_all(b, parts, 5, err);
}

int http_write_header_slice(struct buf *b, struct http_slice name, struct http_slice value,
			    os_error *err)
{
	if (!http_is_token(name.p, name.len))
		return os_error_set(err, EINVAL, "header name \"%.*s\" is not a token",
				    (int)(name.len > 64 ? 64 : name.len), name.p);
	if (!value_ok(value.p, value.len))
		return os_error_set(err, EINVAL,
				    "value of header %.*s has CR, LF, NUL, a control byte or "
				    "surrounding whitespace",
				    (int)(name.len > 64 ? 64 : name.len), name.p);
	struct http_slice parts[] = { name, S(": "), value, S("\r\n") };
	return append_all(b, parts, 4, err);
}

int http_write_header(struct buf *b, const char *name, const char *value, os_error *err)
{
	return http_write_header_slice(b, S(name), S(value), err);
}

int http_write_content_length(struct buf *b, uint64_t n, os_error *err)
{
	char num[24];
	int len = snprintf(num, sizeof(num), "%" PRIu64, n);
	return http_write_header_slice(b, S("Content-Length"),
				       (struct http_slice){ num, (size_t)len }, err);
}

int http_write_head_end(struct buf *b, os_error *err)
{
	return buf_append(b, "\r\n", 2, err);
}

int http_write_chunk(struct buf *b, const void *data, size_t len, os_error *err)
{
	if (len == 0)
		return os_error_set(err, EINVAL,
				    "an empty chunk would end the body: use http_write_last_chunk");
	char size[20];
	int n = snprintf(size, sizeof(size), "%zx\r\n", len);
	struct http_slice parts[] = { { size, (size_t)n }, { data, len }, S("\r\n") };
	return append_all(b, parts, 3, err);
}

int http_write_last_chunk(struct buf *b, os_error *err)
{
	return buf_append(b, "0\r\n\r\n", 5, err);
}
