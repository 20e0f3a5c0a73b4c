/* proxy_ws_deflate.c - permessage-deflate (RFC 7692) as the WebSocket relay
 * can inspect it: each client message must decompress on its own, so the
 * proxy makes the server's answer carry client_no_context_takeover (a client
 * must honour it; a server decompresses such messages with or without its
 * own context). The offer the agent made is checked and passed on with that
 * parameter added; the server's choice is checked strictly. Messages are
 * inflated with a fresh decoder, their decompressed size capped. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "proxy_ws_int.h"
#include "wsframe.h"

#define PMD "permessage-deflate"

/* Trims SP/HT at both ends of s[0..*n). */
static const char *trim(const char *s, size_t *n)
{
	while (*n && (*s == ' ' || *s == '\t'))
		s++, (*n)--;
	while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t'))
		(*n)--;
	return s;
}

/* Names compare exactly, as RFC 7692 spells them and clients match them: a
 * parameter the agent would not recognise must not count as given. */
static bool is(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(s, word, n) == 0;
}

/* One parameter of a permessage-deflate offer or answer: the four RFC 7692
 * defines, window bits 8..15 (a value is required in an answer). */
static bool param_ok(const char *p, size_t n, bool answer, bool *client_nct)
{
	const char *eq = memchr(p, '=', n);
	size_t kl = eq ? (size_t)(eq - p) : n;
	const char *k = trim(p, &kl);
	if (!eq) {
		if (is(k, kl, "client_no_context_takeover"))
			return *client_nct = true;
		return is(k, kl, "server_no_context_takeover") ||
		       (!answer && is(k, kl, "client_max_window_bits"));
	}
	size_t vl = n - (size_t)(eq - p) - 1; /* what follows '=' */
	const char *v = trim(eq + 1, &vl);
	if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"')
		v++, vl -= 2;
	bool bits = vl >= 1 && vl <= 2 && v[0] >= '1' && v[0] <= '9' &&
		    (vl == 1 || (v[1] >= '0' && v[1] <= '9'));
	int b = bits ? (vl == 1 ? v[0] - '0' : (v[0] - '0') * 10 + v[1] - '0') : 0;
	return bits && b >= 8 && b <= 15 &&
	       (is(k, kl, "server_max_window_bits") || is(k, kl, "client_max_window_bits"));
}

/* Checks one extension "name; p; p" is a valid permessage-deflate; true
 * with *client_nct when it asks for client_no_context_takeover. */
static bool pmd_ok(const char *s, size_t n, bool answer, bool *client_nct)
{
	const char *semi = memchr(s, ';', n);
	size_t nl = semi ? (size_t)(semi - s) : n;
	const char *name = trim(s, &nl);
	*client_nct = false;
	if (!is(name, nl, PMD))
		return false;
	while (semi) {
		const char *p = semi + 1;
		size_t left = n - (size_t)(p - s);
		semi = memchr(p, ';', left);
		size_t pl = semi ? (size_t)(semi - p) : left;
		if (!param_ok(p, pl, answer, client_nct))
			return false;
	}
	return true;
}

int ws_deflate_offer(const char *value, size_t len, char *out, size_t cap)
{
	/* The agent's first permessage-deflate offer (other extensions are not
	 * offered on: the proxy could not read their frames). */
	for (size_t i = 0; i < len;) {
		const char *comma = memchr(value + i, ',', len - i);
		size_t n = comma ? (size_t)(comma - (value + i)) : len - i;
		size_t tl = n;
		const char *ext = trim(value + i, &tl);
		bool nct;
		if (pmd_ok(ext, tl, false, &nct)) {
			int w = snprintf(out, cap, "%.*s%s", (int)tl, ext,
					 nct ? "" : "; client_no_context_takeover");
			return w > 0 && (size_t)w < cap ? 1 : -1;
		}
		i += n + 1;
	}
	return 0;
}

int ws_deflate_answer(const char *value, size_t len, char *out, size_t cap, os_error *err)
{
	size_t tl = len;
	const char *ext = trim(value, &tl);
	bool nct;
	if (memchr(ext, ',', tl) || !pmd_ok(ext, tl, true, &nct))
		return os_error_set(err, EPROTO,
				    "the upstream accepted a WebSocket extension the proxy did not "
				    "offer: %.*s",
				    (int)(len < 80 ? len : 80), value); /* value: not NUL-ended */
	int w = snprintf(out, cap, "%.*s%s", (int)tl, ext,
			 nct ? "" : "; client_no_context_takeover");
	if (w < 0 || (size_t)w >= cap)
		return os_error_set(err, EPROTO, "Sec-WebSocket-Extensions too long");
	return 0;
}

int ws_inflate(const struct buf *in, struct buf *out, size_t cap, os_error *err)
{
	static const unsigned char tail[4] = { 0, 0, 0xff, 0xff };
	unsigned char chunk[16384];
	z_stream z = { 0 };
	int rc = -1;
	if (inflateInit2(&z, -15) != Z_OK)
		return os_error_set(err, ENOMEM, "permessage-deflate: no decoder");
	for (int part = 0; part < 2; part++) {
		z.next_in = part ? (unsigned char *)tail : (unsigned char *)in->data;
		z.avail_in = part ? sizeof tail : (unsigned)in->len;
		while (z.avail_in > 0) {
			z.next_out = chunk;
			z.avail_out = sizeof chunk;
			int r = inflate(&z, Z_SYNC_FLUSH);
			size_t got = sizeof chunk - z.avail_out;
			if (out->len + got > cap) {
				os_error_set(
					err, EMSGSIZE,
					"websocket text message exceeds %zu bytes decompressed",
					cap);
				goto out;
			}
			buf_append(out, chunk, got, NULL); /* out's cap is >= cap */
			if (r == Z_STREAM_END) {
				/* a final block: only our own tail may follow */
				if (part == 0 && z.avail_in > 0)
					goto corrupt;
				rc = 0;
				goto out;
			}
			if (r != Z_OK && !(r == Z_BUF_ERROR && got > 0))
				goto corrupt;
		}
	}
	rc = 0;
	goto out;
corrupt:
	os_error_set(err, EPROTO, "permessage-deflate data does not decompress");
out:
	inflateEnd(&z);
	return rc;
}

int ws_deflate(const char *in, size_t len, struct buf *out, os_error *err)
{
	unsigned char chunk[16384];
	z_stream z = { 0 };
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return os_error_set(err, ENOMEM, "permessage-deflate: no encoder");
	z.next_in = (unsigned char *)in;
	z.avail_in = (unsigned)len;
	int rc = 0;
	do { /* Z_SYNC_FLUSH ends the message on a byte boundary: 00 00 ff ff */
		z.next_out = chunk;
		z.avail_out = sizeof chunk;
		if (deflate(&z, Z_SYNC_FLUSH) == Z_STREAM_ERROR ||
		    buf_append(out, chunk, sizeof chunk - z.avail_out, err) < 0) {
			rc = os_error_set(err, EMSGSIZE, "permessage-deflate: message too big");
			break;
		}
	} while (z.avail_out == 0);
	deflateEnd(&z);
	if (rc == 0 && (out->len < 4 || memcmp(out->data + out->len - 4, "\0\0\xff\xff", 4)))
		rc = os_error_set(err, EPROTO, "permessage-deflate: no flush marker");
	if (rc == 0)
		out->data[out->len -= 4] = '\0';
	return rc;
}
