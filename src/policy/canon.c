/* canon.c - canonical form of an HTTP request path (see canon.h). The result
 * is both matched and forwarded, so it must never be something an upstream
 * server could read as a different path: whatever servers disagree on is
 * refused rather than guessed.
 *
 * Decisions:
 * - Only unreserved bytes (ALPHA DIGIT - . _ ~) are decoded; other escapes
 *   stay encoded with upper-case hex, so %25 never becomes a second escape.
 *   A decoded '.' counts: `%2e%2e` is `..` and is resolved like it.
 * - Any ';', raw or as %3B, is CANON_MATRIX_PARAM: servers disagree on path
 *   parameters (Tomcat/Spring strip `;...` from each segment, so
 *   `/a/..;/admin` reaches /admin there while a proxy sees a segment `..;`).
 * - %2F and %5C are CANON_ENCODED_SLASH (a server may decode them into a
 *   separator the policy never saw); a raw '\\' is CANON_BAD_BYTE. With
 *   CANON_ALLOW_ENCODED_SLASH (OpenShell's allow_encoded_slash, for APIs
 *   such as GitLab's `projects/group%2Fname`) %2F stays in the segment as
 *   %2F, but a `.` or `..` between encoded slashes (`a%2F..%2Fb`) is still
 *   refused: a server that decodes them would resolve it out of the path
 *   the policy matched.
 * - Escaped bytes above 0x7F must spell valid UTF-8 (RFC 3629: shortest
 *   form, no surrogates, at most U+10FFFF), else CANON_BAD_UTF8: a lenient
 *   decoder (old IIS, some Java and PHP stacks) reads the overlong
 *   `%C0%AE` as '.', and `%C0%AF` as '/', which the policy never saw.
 * - `%25` followed by an escape of '.', '/', '\\', ';' or '%' is
 *   CANON_DOUBLE_ENCODED: a second decoding (a gateway in front of the
 *   server) turns `%252e%252e` into `..` after the rule matched.
 * - `//` collapses; a trailing '/' is kept (`/a/` and `/a` may differ
 *   upstream), and a trailing `.` or `..` segment leaves one (RFC 3986 5.2.4).
 * - The query is not inspected here; the HTTP parser has already refused
 *   control bytes and spaces anywhere in the request target. */
#include "canon.h"

#include <stdbool.h>
#include <string.h>

#include "hex.h"

struct writer {
	char *out;
	size_t cap, len;
};

static bool put(struct writer *w, char c)
{
	if (w->len + 1 >= w->cap) /* keep room for the NUL */
		return false;
	w->out[w->len++] = c;
	return true;
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 3986 pchar, minus '%' (escapes are handled apart) and ';' (refused). */
static bool is_raw_pchar(unsigned char c)
{
	return is_unreserved(c) || (c != 0 && strchr("!$&'()*+,=:@", c) != NULL);
}

/* Checks one byte value (decoded or raw) for the classes refused anywhere. */
static enum canon_result refuse_byte(unsigned char v, bool encoded, unsigned flags)
{
	if (v < 0x20 || v == 0x7f)
		return CANON_CONTROL_BYTE;
	if (v == ';')
		return CANON_MATRIX_PARAM;
	if (encoded && v == '/' && (flags & CANON_ALLOW_ENCODED_SLASH))
		return CANON_OK;
	if (encoded && (v == '/' || v == '\\'))
		return CANON_ENCODED_SLASH;
	return CANON_OK;
}

/* UTF-8 of escaped bytes, one sequence at a time (RFC 3629 table 3-7). */
struct utf8_state {
	unsigned left; /* continuation bytes still expected */
	unsigned char lo, hi; /* bounds of the next continuation byte */
};

static bool utf8_step(struct utf8_state *u, unsigned char b)
{
	if (u->left) {
		if (b < u->lo || b > u->hi)
			return false;
		u->left--;
		u->lo = 0x80;
		u->hi = 0xBF;
		return true;
	}
	u->lo = 0x80;
	u->hi = 0xBF;
	if (b < 0x80)
		return true;
	if (b >= 0xC2 && b <= 0xDF)
		u->left = 1;
	else if (b >= 0xE0 && b <= 0xEF) {
		u->left = 2;
		if (b == 0xE0)
			u->lo = 0xA0; /* overlong below U+0800 */
		else if (b == 0xED)
			u->hi = 0x9F; /* surrogates */
	} else if (b >= 0xF0 && b <= 0xF4) {
		u->left = 3;
		if (b == 0xF0)
			u->lo = 0x90; /* overlong below U+10000 */
		else if (b == 0xF4)
			u->hi = 0x8F; /* above U+10FFFF */
	} else
		return false; /* C0, C1 (overlong ASCII), F5..FF, a stray continuation */
	return true;
}

/* The canonical bytes out[0..n) hold a `%25` (a literal '%') and two hex
 * digits after it (raw, or decoded from `%32%65`) that a second decoding
 * would make a dot, a separator or a further escape. */
static bool double_encoded(const char *out, size_t n)
{
	for (size_t i = 0; i + 4 < n; i++) {
		if (memcmp(out + i, "%25", 3) != 0)
			continue;
		int hi = hex_digit_value((unsigned char)out[i + 3]);
		int lo = hex_digit_value((unsigned char)out[i + 4]);
		int v = hi << 4 | lo;
		if (hi >= 0 && lo >= 0 && v != 0 && strchr("./\\;%", v) != NULL)
			return true;
	}
	return false;
}

/* The bytes written since `from` are `.` or `..`. */
static bool is_dot_part(const struct writer *w, size_t from)
{
	size_t n = w->len - from;
	return (n == 1 || n == 2) && w->out[from] == '.' && (n == 1 || w->out[from + 1] == '.');
}

/* Appends the canonical bytes of seg[0..n) (no raw '/' inside) to w. */
static enum canon_result put_segment(struct writer *w, const char *seg, size_t n, unsigned flags)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t begin = w->len;
	size_t part = w->len; /* start of the text since the last encoded slash */
	bool split = false;
	struct utf8_state u = { 0 };
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)seg[i];
		bool encoded = c == '%';
		if (encoded) {
			if (i + 2 >= n) /* segment ends before two hex digits */
				return CANON_BAD_ESCAPE;
			int hi = hex_digit_value((unsigned char)seg[i + 1]);
			int lo = hex_digit_value((unsigned char)seg[i + 2]);
			if (hi < 0 || lo < 0)
				return CANON_BAD_ESCAPE;
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
		/* Raw bytes above 0x7F are refused below; a raw byte in the
		 * middle of an escaped sequence breaks it. */
		if (!utf8_step(&u, encoded ? c : 0))
			return CANON_BAD_UTF8;
		enum canon_result r = refuse_byte(c, encoded, flags);
		if (r != CANON_OK)
			return r;
		if (c == '/') { /* encoded, and allowed */
			if (is_dot_part(w, part))
				return CANON_ENCODED_SLASH;
			split = true;
		}
		bool ok;
		if (is_unreserved(c))
			ok = put(w, (char)c);
		else if (encoded)
			ok = put(w, '%') && put(w, hex[c >> 4]) && put(w, hex[c & 15]);
		else if (is_raw_pchar(c))
			ok = put(w, (char)c);
		else
			return CANON_BAD_BYTE;
		if (!ok)
			return CANON_TOO_LONG;
		if (c == '/')
			part = w->len;
	}
	if (u.left) /* a sequence cut by the end of the segment */
		return CANON_BAD_UTF8;
	if (double_encoded(w->out + begin, w->len - begin))
		return CANON_DOUBLE_ENCODED;
	return split && is_dot_part(w, part) ? CANON_ENCODED_SLASH : CANON_OK;
}

/* Resolves the segment just written at w->out[start..]: drops empty and `.`
 * segments, pops one for `..`; a dot segment at the end leaves a '/'. */
static enum canon_result resolve_segment(struct writer *w, size_t start, bool last)
{
	const char *seg = w->out + start + 1;
	size_t n = w->len - start - 1;
	bool dot = n == 1 && seg[0] == '.';
	bool dotdot = n == 2 && seg[0] == '.' && seg[1] == '.';
	if (n == 0 && last)
		return CANON_OK; /* trailing slash kept */
	if (n != 0 && !dot && !dotdot)
		return CANON_OK;
	w->len = start;
	if (dotdot) {
		if (start == 0)
			return CANON_ESCAPES_ROOT;
		const char *slash = memrchr(w->out, '/', start);
		w->len = (size_t)(slash - w->out);
	}
	if ((dot || dotdot) && last && !put(w, '/'))
		return CANON_TOO_LONG;
	return CANON_OK;
}

enum canon_result canon_request_path(const char *target, size_t len, char *out, size_t cap,
				     const char **query_out, size_t *query_len)
{
	return canon_request_path_opts(target, len, 0, out, cap, query_out, query_len);
}

enum canon_result canon_request_path_opts(const char *target, size_t len, unsigned flags, char *out,
					  size_t cap, const char **query_out, size_t *query_len)
{
	const char *q = memchr(target, '?', len);
	size_t plen = q ? (size_t)(q - target) : len;
	if (query_out)
		*query_out = q ? q + 1 : NULL;
	if (query_len)
		*query_len = q ? len - plen - 1 : 0;
	if (cap == 0)
		return CANON_TOO_LONG;
	out[0] = '\0';
	if (plen == 0 || target[0] != '/')
		return CANON_NOT_ABSOLUTE;

	struct writer w = { out, cap, 0 };
	enum canon_result r = CANON_OK;
	size_t i = 1; /* just past a raw '/' */
	for (bool last = false; !last && r == CANON_OK; i++) {
		const char *end = memchr(target + i, '/', plen - i);
		size_t j = end ? (size_t)(end - target) : plen;
		size_t start = w.len;
		last = j == plen;
		r = put(&w, '/') ? put_segment(&w, target + i, j - i, flags) : CANON_TOO_LONG;
		if (r == CANON_OK)
			r = resolve_segment(&w, start, last);
		i = j;
	}
	/* Nothing partial on failure: out is the canonical path or empty. */
	out[r == CANON_OK ? w.len : 0] = '\0';
	return r;
}

const char *canon_result_name(enum canon_result r)
{
	switch (r) {
	case CANON_OK:
		return "ok";
	case CANON_NOT_ABSOLUTE:
		return "not_absolute";
	case CANON_ESCAPES_ROOT:
		return "escapes_root";
	case CANON_ENCODED_SLASH:
		return "encoded_slash";
	case CANON_CONTROL_BYTE:
		return "control_byte";
	case CANON_BAD_ESCAPE:
		return "bad_escape";
	case CANON_BAD_BYTE:
		return "bad_byte";
	case CANON_TOO_LONG:
		return "too_long";
	case CANON_MATRIX_PARAM:
		return "matrix_param";
	case CANON_BAD_UTF8:
		return "bad_utf8";
	case CANON_DOUBLE_ENCODED:
		return "double_encoded";
	}
	return "unknown";
}
