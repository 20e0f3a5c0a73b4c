/* audit.c - JSON-lines audit sink (see audit.h). One write() per record so
 * concurrent writers never interleave; a failed write is counted, never fatal. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "parse.h"
#include "utf8.h"

/* The longest record kept whole; fields are bounded upstream (hosts, paths,
 * details), and a record over this is dropped and counted as failed. */
#define AUDIT_LINE_MAX (256u << 10)

struct audit {
	int fd;
	char *sandbox;
	uint64_t written, failed;
	struct buf line; /* the record being written, reused */
};

int audit_open(const char *path, const char *sandbox_id, struct audit **out, os_error *err)
{
	struct audit *a = calloc(1, sizeof *a);
	if (!a || !(a->sandbox = strdup(sandbox_id ? sandbox_id : ""))) {
		free(a);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	a->fd = 2;
	buf_init(&a->line, AUDIT_LINE_MAX);
	if (path) {
		a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (a->fd < 0) {
			free(a->sandbox);
			free(a);
			return os_error_errno(err, "opening audit log %s", path);
		}
	}
	*out = a;
	return 0;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	if (a->fd > 2)
		close(a->fd);
	buf_free(&a->line);
	free(a->sandbox);
	free(a);
}

/* audit_write reserves the worst case of a record first, so the writers
 * below copy into the line without a check or a call per piece (buf_append
 * per piece was a fifth of a record's cost). */
static void put(struct buf *b, const void *s, size_t n)
{
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

static void put_str(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Appends s as a JSON string exactly as jansson's JSON_ENSURE_ASCII dump
 * wrote it before (readers see the same bytes): quotes, backslashes and
 * controls escaped, DEL kept, everything above ASCII as \uXXXX (surrogate
 * pairs above U+FFFF). false for invalid UTF-8, which jansson refused as a
 * string: the caller leaves the key out, as set_str did. Written by hand
 * because building a jansson object per record and dumping it was more
 * than half of the proxy's instructions per keep-alive request. */
static bool put_string(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	if (!utf8_valid(s, n, NULL))
		return false;
	char out[16];
	put(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t run = i;
		while (run < n && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x80 &&
		       s[run] != '"' && s[run] != '\\')
			run++;
		if (run > i) {
			put(b, s + i, run - i);
			i = run;
			continue;
		}
		unsigned char c = (unsigned char)s[i];
		uint32_t cp = c;
		size_t len = 1;
		if (c >= 0xF0) {
			cp = c & 0x07u;
			len = 4;
		} else if (c >= 0xE0) {
			cp = c & 0x0Fu;
			len = 3;
		} else if (c >= 0xC0) {
			cp = c & 0x1Fu;
			len = 2;
		}
		for (size_t k = 1; k < len; k++)
			cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3Fu);
		i += len;
		const char *esc = c == '"'    ? "\\\""
				  : c == '\\' ? "\\\\"
				  : c == '\b' ? "\\b"
				  : c == '\f' ? "\\f"
				  : c == '\n' ? "\\n"
				  : c == '\r' ? "\\r"
				  : c == '\t' ? "\\t"
					      : NULL;
		if (esc) {
			put_str(b, esc);
			continue;
		}
		uint32_t units[2] = { cp, 0 };
		size_t nu = 1;
		if (cp > 0xFFFF) {
			cp -= 0x10000;
			units[0] = 0xD800 | (cp >> 10);
			units[1] = 0xDC00 | (cp & 0x3FF);
			nu = 2;
		}
		for (size_t k = 0; k < nu; k++) {
			out[0] = '\\';
			out[1] = 'u';
			for (int d = 0; d < 4; d++)
				out[2 + d] = hex[(units[k] >> (12 - 4 * d)) & 0xF];
			put(b, out, 6);
		}
	}
	put(b, "\"", 1);
	return true;
}

/* An upper bound of put_string's output for s, quotes left out: a control
 * takes 6 bytes (\u00XX), a quote or backslash 2, a byte of a UTF-8
 * sequence at most 3 (\uXXXX for 2 bytes, two of them for 4). */
static size_t escaped_max(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += *p < 0x20 ? 6 : *p == '"' || *p == '\\' ? 2 : *p >= 0x80 ? 3 : 1;
	return n;
}

static void put_key(struct buf *b, const char *k)
{
	put(b, ",\"", 2);
	put_str(b, k);
	put(b, "\":", 2);
}

static void set_str(struct buf *b, const char *k, const char *v)
{
	if (!v)
		return;
	size_t mark = b->len;
	put_key(b, k);
	if (!put_string(b, v))
		b->len = mark; /* invalid UTF-8: the key is left out */
}

static void set_int(struct buf *b, const char *k, long long v)
{
	char num[22];
	size_t n = 0;
	if (v < 0)
		num[n++] = '-';
	n += str_u64(num + n, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
	put_key(b, k);
	put(b, num, n);
}

/* Seconds since the epoch with 7 fractional digits (what jansson's 17
 * significant digits of a double gave for these dates): "1796193072.0709558". */
static size_t timestamp(char out[40])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	size_t n = str_u64(out, (uint64_t)ts.tv_sec);
	uint64_t frac = (uint64_t)ts.tv_nsec / 100;
	out[n++] = '.';
	for (int d = 6; d >= 0; d--) {
		out[n + (size_t)d] = (char)('0' + frac % 10);
		frac /= 10;
	}
	return n + 7;
}

void audit_write(struct audit *a, const struct audit_record *r)
{
	char num[40];
	size_t tn = timestamp(num);
	/* A record that could outgrow the line is dropped whole, never cut. */
	const char *fields[] = { a->sandbox, r->event,	r->decision, r->reason, r->policy,
				 r->rule,    r->proto,	r->host,     r->dst,	r->method,
				 r->path,    r->binary, r->detail };
	size_t worst = 512;
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
		worst += fields[i] ? escaped_max(fields[i]) + 24 : 0;
	struct buf *b = &a->line;
	if (worst > AUDIT_LINE_MAX || buf_reserve(b, worst, NULL) < 0) {
		a->failed++;
		return;
	}
	buf_reset(b);
	put_str(b, "{\"ts\":");
	put(b, num, tn);
	set_str(b, "sandbox", a->sandbox);
	set_str(b, "event", r->event);
	set_str(b, "decision", r->decision);
	set_str(b, "reason", r->reason);
	set_str(b, "policy", r->policy);
	set_str(b, "rule", r->rule);
	set_str(b, "proto", r->proto);
	set_str(b, "host", r->host);
	set_str(b, "dst", r->dst);
	if (r->port)
		set_int(b, "dport", r->port);
	set_str(b, "method", r->method);
	set_str(b, "path", r->path);
	set_str(b, "binary", r->binary);
	if (r->pid > 0)
		set_int(b, "pid", r->pid);
	if (r->uid >= 0 && (r->pid > 0 || r->uid > 0))
		set_int(b, "uid", r->uid);
	set_str(b, "detail", r->detail);
	if (r->generation)
		set_int(b, "generation", (long long)r->generation);
	put(b, "}\n", 2);
	b->data[b->len] = '\0';
	ssize_t w = write(a->fd, b->data, b->len);
	if (w == (ssize_t)b->len)
		a->written++;
	else
		a->failed++;
}

uint64_t audit_count(const struct audit *a)
{
	return a->written;
}
