/* hostglob.c - host name normalisation and endpoint host patterns (see
 * hostglob.h, POLICY.md "Host"). Must never let a glob match the bare domain,
 * nor pass a name a resolver would read as a non-canonical IPv4 number
 * (`127.1`, `0x7f.0.0.1`, `2130706433`): those are refused as hosts. */
#include "hostglob.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "ssrf.h"

#define LABEL_MAX 63
#define NAME_MAX_LEN 253

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

/* WHATWG "ends in a number": the last label is all digits or 0x-hex. Such a
 * name is an IPv4 number to inet_aton-style parsers, never a DNS name (no
 * TLD is numeric), so unless it is a strict dotted quad it is refused. */
static bool ends_in_number(const char *name, size_t len)
{
	const char *dot = memrchr(name, '.', len);
	const char *last = dot ? dot + 1 : name;
	size_t n = len - (size_t)(last - name);
	if (n >= 2 && last[0] == '0' && last[1] == 'x') {
		for (size_t i = 2; i < n; i++) {
			if (!is_hex(last[i]))
				return false;
		}
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(last[i]))
			return false;
	}
	return n > 0;
}

/* IPv6 literal: re-printed by inet_ntop so equal addresses compare equal. */
static int normalize_v6(const char *name, char *out, size_t cap, os_error *err)
{
	struct in6_addr a;
	if (inet_pton(AF_INET6, name, &a) != 1)
		return os_error_set(err, EINVAL, "host \"%.64s\" is not a valid IPv6 address",
				    name);
	if (cap > INT32_MAX)
		cap = INT32_MAX;
	if (!inet_ntop(AF_INET6, &a, out, (socklen_t)cap))
		return os_error_set(err, ENAMETOOLONG, "host \"%.64s\": output too small", name);
	return 0;
}

/* Lower-cases in[0..len) into buf, checking bytes and label lengths. */
static int copy_labels(const char *in, size_t len, char *buf, os_error *err)
{
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c >= 0x80)
			return os_error_set(
				err, EINVAL,
				"host \"%.*s\": non-ASCII byte at offset %zu "
				"(internationalised names must be written as punycode xn--)",
				(int)(len > 64 ? 64 : len), in, i);
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0)
				return os_error_set(err, EINVAL,
						    "host \"%.*s\": empty label at offset %zu",
						    (int)(len > 64 ? 64 : len), in, i);
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || is_digit((char)c) || c == '-' || c == '_') {
			if (++label > LABEL_MAX)
				return os_error_set(err, EINVAL,
						    "host \"%.*s\": label longer than %d bytes",
						    (int)(len > 64 ? 64 : len), in, LABEL_MAX);
		} else {
			return os_error_set(err, EINVAL,
					    "host \"%.*s\": byte 0x%02x at offset %zu is not "
					    "allowed in a host name",
					    (int)(len > 64 ? 64 : len), in, c, i);
		}
		buf[i] = (char)c;
	}
	if (label == 0) /* "a.." arrives here as "a." */
		return os_error_set(err, EINVAL, "host \"%.*s\": empty last label",
				    (int)(len > 64 ? 64 : len), in);
	return 0;
}

int host_normalize(const char *in, size_t len, char *out, size_t cap, os_error *err)
{
	char buf[HOST_NAME_CAP + 1];
	if (len > 0 && in[len - 1] == '.' && memchr(in, ':', len) == NULL)
		len--; /* one trailing dot: the absolute form of the same name */
	if (len == 0)
		return os_error_set(err, EINVAL, "host is empty");
	if (len > NAME_MAX_LEN)
		return os_error_set(err, ENAMETOOLONG, "host \"%.64s...\" is longer than %d bytes",
				    in, NAME_MAX_LEN);
	if (memchr(in, ':', len)) {
		if (memchr(in, '\0', len)) /* inet_pton would stop there */
			return os_error_set(err, EINVAL, "host contains a NUL byte");
		memcpy(buf, in, len);
		buf[len] = '\0';
		return normalize_v6(buf, out, cap, err);
	}
	if (copy_labels(in, len, buf, err) < 0)
		return -1;
	buf[len] = '\0';
	struct ip_addr ip;
	if (ends_in_number(buf, len) && ip_addr_parse(buf, &ip, NULL) < 0)
		return os_error_set(
			err, EINVAL,
			"host \"%s\" looks numeric but is not a strict dotted-quad IPv4 "
			"address (octal, hex, decimal and short forms are refused)",
			buf);
	if (len + 1 > cap)
		return os_error_set(err, ENAMETOOLONG, "host \"%s\": output buffer too small", buf);
	memcpy(out, buf, len + 1);
	return 0;
}

/* Label globs (OpenShell's glob with `.` as the separator): the first label
 * may hold `*` anywhere (`*`, `*-aiplatform`, `api-*`) or be exactly `**`;
 * later labels may be exactly `*`; the labels after the last glob are a
 * literal name of at least two labels. Returns the length of the glob part
 * (up to and including the dot after the last glob label), 0 for none, or
 * -1 with err set. */
static int glob_prefix_len(const char *in, size_t len, os_error *err)
{
	int w = (int)(len > 64 ? 64 : len);
	size_t end = 0, pos = 0;
	for (size_t label = 0; pos < len; label++) {
		const char *dot = memchr(in + pos, '.', len - pos);
		size_t n = dot ? (size_t)(dot - (in + pos)) : len - pos;
		const char *l = in + pos;
		bool star = memchr(l, '*', n) != NULL;
		if (star && !dot)
			return os_error_set(
				err, EINVAL,
				"host pattern \"%.*s\": the last label cannot be a glob", w, in);
		if (star && label == 0 && memmem(l, n, "**", 2) && n != 2)
			return os_error_set(
				err, EINVAL,
				"host pattern \"%.*s\": `**` is only allowed as the whole "
				"first label",
				w, in);
		if (star && label > 0 && n != 1)
			return os_error_set(
				err, EINVAL,
				"host pattern \"%.*s\": after the first label a glob must "
				"be a whole label (`*`)",
				w, in);
		if (star)
			end = pos + n + 1;
		pos += n + (dot ? 1 : 0);
	}
	return (int)end;
}

int host_pattern_normalize(const char *in, size_t len, char *out, size_t cap, os_error *err)
{
	if (len > NAME_MAX_LEN)
		return os_error_set(err, ENAMETOOLONG,
				    "host pattern \"%.64s...\" is longer than %d "
				    "bytes",
				    in, NAME_MAX_LEN);
	int g = glob_prefix_len(in, len, err);
	if (g < 0)
		return -1;
	size_t glob = (size_t)g;
	if (glob == 0)
		return host_normalize(in, len, out, cap, err);

	char base[HOST_NAME_CAP];
	if (host_normalize(in + glob, len - glob, base, sizeof base, err) < 0)
		return os_error_prefix(err, "host pattern \"%.*s\"", (int)(len > 64 ? 64 : len),
				       in);
	if (host_is_ip_literal(base))
		return os_error_set(err, EINVAL, "host pattern \"%.*s\": a glob over an IP address",
				    (int)(len > 64 ? 64 : len), in);
	/* No public suffix list here: fewer than two labels is always a suffix. */
	if (!strchr(base, '.'))
		return os_error_set(
			err, EINVAL,
			"host pattern \"%.*s\": a glob needs at least two labels after it "
			"(`*.com` would match a whole top-level domain)",
			(int)(len > 64 ? 64 : len), in);
	size_t blen = strlen(base);
	if (glob + blen + 1 > cap)
		return os_error_set(err, ENAMETOOLONG, "host pattern \"%.*s\" is too long",
				    (int)(len > 64 ? 64 : len), in);
	/* The glob labels: lower case, host-name bytes and `*` only. */
	char buf[HOST_NAME_CAP];
	size_t label = 0;
	for (size_t i = 0; i < glob; i++) {
		char ch = in[i];
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		bool ok = (ch >= 'a' && ch <= 'z') || is_digit(ch) || ch == '-' || ch == '_' ||
			  ch == '*' || ch == '.';
		if (!ok || (ch == '.' && label == 0) || (ch != '.' && ++label > LABEL_MAX))
			return os_error_set(err, EINVAL,
					    "host pattern \"%.*s\": byte at offset %zu is not "
					    "allowed in a host glob",
					    (int)(len > 64 ? 64 : len), in, i);
		if (ch == '.')
			label = 0;
		buf[i] = ch;
	}
	memcpy(out, buf, glob);
	memcpy(out + glob, base, blen + 1);
	return 0;
}

bool host_pattern_is_glob(const char *pattern)
{
	return pattern && strchr(pattern, '*') != NULL;
}

/* One label against one label glob: `*` is any run of bytes, empty included. */
static bool label_match(const char *p, size_t pn, const char *s, size_t sn)
{
	size_t i = 0, j = 0, star = SIZE_MAX, mark = 0;
	while (j < sn) {
		if (i < pn && p[i] == '*') {
			star = i++;
			mark = j;
		} else if (i < pn && p[i] == s[j]) {
			i++;
			j++;
		} else if (star != SIZE_MAX) {
			i = star + 1;
			j = ++mark;
		} else {
			return false;
		}
	}
	while (i < pn && p[i] == '*')
		i++;
	return i == pn;
}

bool host_pattern_match(const char *pattern, const char *host)
{
	if (!strchr(pattern, '*'))
		return strcmp(pattern, host) == 0;
	/* Label by label from the right; [pb, pe) and [hb, he) are the labels. */
	size_t pe = strlen(pattern), he = strlen(host);
	for (;;) {
		size_t pb = pe, hb = he;
		while (pb > 0 && pattern[pb - 1] != '.')
			pb--;
		while (hb > 0 && host[hb - 1] != '.')
			hb--;
		/* `**` is only ever the whole first label: one or more host labels. */
		if (pb == 0 && pe == 2 && pattern[0] == '*' && pattern[1] == '*')
			return he > 0;
		if (!label_match(pattern + pb, pe - pb, host + hb, he - hb))
			return false;
		if (pb == 0 || hb == 0)
			return pb == 0 && hb == 0;
		pe = pb - 1;
		he = hb - 1;
	}
}

bool host_is_ip_literal(const char *s)
{
	struct ip_addr a;
	return ip_addr_parse(s, &a, NULL) == 0;
}
