/* tls_sni.c - reads the server_name of a TLS ClientHello (RFC 8446 4.1.2,
 * RFC 6066 3) from raw tunnel bytes, reassembling a ClientHello split over
 * several records. Strict where servers differ: exactly one host_name, no
 * duplicate extension, nothing after the ClientHello in its records, so no
 * server can read another name than the one checked. Never allocates. */
#include "tls_sni.h"

#include <string.h>

#define REC_HANDSHAKE 0x16
#define REC_HEADER 5
#define REC_PLAINTEXT_MAX 16384 /* RFC 8446 5.1 */
#define HS_CLIENT_HELLO 0x01
#define HS_HEADER 4
#define EXT_SERVER_NAME 0x0000
#define EXT_ECH 0xfe0d /* encrypted_client_hello (RFC 9849) */
#define EXT_ESNI 0xffce /* its predecessor, draft-ietf-tls-esni-02..06 */
#define NAME_HOST 0x00

/* A read-only cursor: every take checks the bytes left first. */
struct cur {
	const uint8_t *p;
	size_t n;
};

static bool take(struct cur *c, size_t k, struct cur *out)
{
	if (k > c->n)
		return false;
	if (out)
		*out = (struct cur){ c->p, k };
	c->p += k;
	c->n -= k;
	return true;
}

static bool take_u8(struct cur *c, size_t *v)
{
	if (c->n < 1)
		return false;
	*v = c->p[0];
	return take(c, 1, NULL);
}

static bool take_u16(struct cur *c, size_t *v)
{
	if (c->n < 2)
		return false;
	*v = (size_t)c->p[0] << 8 | c->p[1];
	return take(c, 2, NULL);
}

/* A vector with a 1- or 2-byte length prefix. */
static bool take_vec(struct cur *c, int prefix, struct cur *out)
{
	size_t k;
	if (!(prefix == 1 ? take_u8(c, &k) : take_u16(c, &k)))
		return false;
	return take(c, k, out);
}

/* server_name: exactly one host_name entry, 1..255 printable bytes. */
static enum tls_sni_result server_name(struct cur ext, char *name, size_t cap)
{
	struct cur list, host;
	size_t type;
	if (!take_vec(&ext, 2, &list) || ext.n != 0 || !take_u8(&list, &type) ||
	    type != NAME_HOST || !take_vec(&list, 2, &host) || list.n != 0)
		return TLS_SNI_MALFORMED;
	if (host.n == 0 || host.n >= cap)
		return TLS_SNI_MALFORMED;
	for (size_t i = 0; i < host.n; i++)
		if (host.p[i] <= 0x20 || host.p[i] >= 0x7f)
			return TLS_SNI_MALFORMED;
	memcpy(name, host.p, host.n);
	name[host.n] = '\0';
	return TLS_SNI_FOUND;
}

/* The ClientHello body: fixed fields skipped, then every extension checked
 * for framing; the first server_name is kept, a second one refused. With
 * ECH the readable server_name is only the outer, public one: the name the
 * server acts on is encrypted inside, so nothing checked here binds it. */
static enum tls_sni_result client_hello(struct cur h, char *name, size_t cap)
{
	struct cur sid, suites, comp, exts;
	if (!take(&h, 2 + 32, NULL) || !take_vec(&h, 1, &sid) || sid.n > 32 ||
	    !take_vec(&h, 2, &suites) || suites.n < 2 || suites.n % 2 || !take_vec(&h, 1, &comp) ||
	    comp.n < 1)
		return TLS_SNI_MALFORMED;
	if (h.n == 0)
		return TLS_SNI_NONE; /* no extensions at all (TLS 1.2 allows it) */
	if (!take_vec(&h, 2, &exts) || h.n != 0)
		return TLS_SNI_MALFORMED;
	enum tls_sni_result r = TLS_SNI_NONE;
	bool encrypted = false;
	while (exts.n > 0) {
		size_t type;
		struct cur body;
		if (!take_u16(&exts, &type) || !take_vec(&exts, 2, &body))
			return TLS_SNI_MALFORMED;
		encrypted |= type == EXT_ECH || type == EXT_ESNI;
		if (type != EXT_SERVER_NAME)
			continue;
		if (r != TLS_SNI_NONE)
			return TLS_SNI_MALFORMED; /* duplicate extension (RFC 8446 4.2) */
		if ((r = server_name(body, name, cap)) != TLS_SNI_FOUND)
			return r;
	}
	return encrypted ? TLS_SNI_ENCRYPTED : r;
}

enum tls_sni_result tls_sni_parse(const uint8_t *data, size_t len, char *name, size_t cap)
{
	uint8_t hs[TLS_SNI_INPUT_MAX];
	size_t hs_len = 0, pos = 0;
	if (cap > 0)
		name[0] = '\0';
	if (len > 0 && data[0] != REC_HANDSHAKE)
		return TLS_SNI_NOT_TLS;
	for (;;) {
		if (len - pos < REC_HEADER)
			return len >= TLS_SNI_INPUT_MAX ? TLS_SNI_TOO_LARGE : TLS_SNI_NEED_MORE;
		const uint8_t *rec = data + pos;
		size_t rl = (size_t)rec[3] << 8 | rec[4];
		/* Only handshake records until the ClientHello is complete. */
		if (rec[0] != REC_HANDSHAKE || rec[1] != 0x03 || rl == 0 || rl > REC_PLAINTEXT_MAX)
			return TLS_SNI_MALFORMED;
		if (pos + REC_HEADER + rl > TLS_SNI_INPUT_MAX)
			return TLS_SNI_TOO_LARGE;
		if (len - pos - REC_HEADER < rl)
			return TLS_SNI_NEED_MORE;
		/* hs_len + rl <= pos + REC_HEADER + rl <= TLS_SNI_INPUT_MAX */
		memcpy(hs + hs_len, rec + REC_HEADER, rl);
		hs_len += rl;
		pos += REC_HEADER + rl;
		if (hs_len < HS_HEADER)
			continue;
		if (hs[0] != HS_CLIENT_HELLO)
			return TLS_SNI_MALFORMED;
		size_t body = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
		if (body > TLS_SNI_INPUT_MAX - HS_HEADER)
			return TLS_SNI_TOO_LARGE;
		if (hs_len < HS_HEADER + body)
			continue;
		if (hs_len != HS_HEADER + body)
			return TLS_SNI_MALFORMED; /* another message after the ClientHello */
		if (cap < 2)
			return TLS_SNI_MALFORMED;
		return client_hello((struct cur){ hs + HS_HEADER, body }, name, cap);
	}
}

const char *tls_sni_result_name(enum tls_sni_result r)
{
	switch (r) {
	case TLS_SNI_NEED_MORE:
		return "need_more";
	case TLS_SNI_NOT_TLS:
		return "not_tls";
	case TLS_SNI_NONE:
		return "no_sni";
	case TLS_SNI_FOUND:
		return "sni";
	case TLS_SNI_MALFORMED:
		return "client_hello_malformed";
	case TLS_SNI_TOO_LARGE:
		return "client_hello_too_large";
	case TLS_SNI_ENCRYPTED:
		return "client_hello_encrypted";
	}
	return "unknown";
}

bool tls_sni_matches(const char *sni, const char *host)
{
	size_t n = strlen(sni), h = strlen(host);
	if (n > 0 && sni[n - 1] == '.')
		n--;
	if (n != h || n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char a = sni[i], b = host[i];
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}
