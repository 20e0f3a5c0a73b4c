/* splitchan.c - see splitchan.h. Wire format (all integers big-endian):
 *   launcher -> supervisor  HELLO     "OSSPLIT1" | nonce_l[32]
 *   supervisor -> launcher  CHALLENGE nonce_s[32] | proof_s[32]
 *   launcher -> supervisor  PROOF     proof_l[32]
 *   then frames             type[1] | len[4] | payload[len] | tag[32]
 * proof_x = HMAC(K, label_x | nonce_l | nonce_s); per-direction session keys
 * are derived the same way, and tag = HMAC(k_dir, seq[8] | type | len | payload).
 * Never acts on a byte of a frame before its tag has been checked. */
#include "splitchan.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "cleanup.h"
#include "fdutil.h"
#include "hex.h"

#define MAGIC "OSSPLIT1"
#define MAGIC_LEN 8
#define HDR_LEN 5
#define TAG_LEN SHA256_LEN
#define IN_CAP (SPLITCHAN_MAX_PAYLOAD + HDR_LEN + TAG_LEN + 65536)

static const char LABEL_SUP_PROOF[] = "openshell-split v1 supervisor proof";
static const char LABEL_LAU_PROOF[] = "openshell-split v1 launcher proof";
static const char LABEL_S2L[] = "openshell-split v1 supervisor to launcher";
static const char LABEL_L2S[] = "openshell-split v1 launcher to supervisor";

int splitchan_load_key(const char *path, uint8_t key[SPLITCHAN_KEY_LEN], os_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (file_read_all(path, 256, &text, &len, err) < 0)
		return os_error_prefix(err, "key file %s", path);
	if (len == 2 * SPLITCHAN_KEY_LEN + 1 && text[len - 1] == '\n')
		len--;
	int rc = 0;
	if (len != 2 * SPLITCHAN_KEY_LEN)
		rc = os_error_set(err, EINVAL,
				  "key file %s: expected %d hex digits, found %zu bytes", path,
				  2 * SPLITCHAN_KEY_LEN, len);
	if (rc == 0 && hex_decode(text, len, key, SPLITCHAN_KEY_LEN, err) < 0)
		rc = os_error_prefix(err, "key file %s", path);
	secure_zero(text, len);
	if (rc < 0)
		secure_zero(key, SPLITCHAN_KEY_LEN);
	return rc;
}

void splitchan_init(struct splitchan *ch, int fd)
{
	memset(ch, 0, sizeof(*ch));
	ch->fd = fd;
	buf_init(&ch->in, IN_CAP);
}

void splitchan_release(struct splitchan *ch)
{
	secure_zero(ch->key_tx, sizeof(ch->key_tx));
	secure_zero(ch->key_rx, sizeof(ch->key_rx));
	buf_free(&ch->in);
}

static void derive(const uint8_t key[SPLITCHAN_KEY_LEN], const char *label,
		   const uint8_t nonce_l[SPLITCHAN_NONCE_LEN],
		   const uint8_t nonce_s[SPLITCHAN_NONCE_LEN], uint8_t out[SHA256_LEN])
{
	struct hmac_sha256 h;
	hmac_sha256_init(&h, key, SPLITCHAN_KEY_LEN);
	hmac_sha256_update(&h, label, strlen(label) + 1); /* the NUL separates label and nonces */
	hmac_sha256_update(&h, nonce_l, SPLITCHAN_NONCE_LEN);
	hmac_sha256_update(&h, nonce_s, SPLITCHAN_NONCE_LEN);
	hmac_sha256_final(&h, out);
}

void splitchan_mac(const uint8_t key[SHA256_LEN], uint64_t seq, uint8_t type, const void *payload,
		   size_t len, uint8_t out[SHA256_LEN])
{
	uint8_t hdr[8 + HDR_LEN];
	for (int i = 0; i < 8; i++)
		hdr[i] = (uint8_t)(seq >> (56 - 8 * i));
	hdr[8] = type;
	for (int i = 0; i < 4; i++)
		hdr[9 + i] = (uint8_t)((uint32_t)len >> (24 - 8 * i));
	struct hmac_sha256 h;
	hmac_sha256_init(&h, key, SHA256_LEN);
	hmac_sha256_update(&h, hdr, sizeof(hdr));
	hmac_sha256_update(&h, payload, len);
	hmac_sha256_final(&h, out);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int send_all(int fd, const void *data, size_t len, os_error *err)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n =
			send(fd, p, len, MSG_NOSIGNAL); /* a closed peer is an error, not SIGPIPE */
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return os_error_errno(err, "sending on the control channel");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int splitchan_pump(struct splitchan *ch, os_error *err)
{
	char chunk[65536];
	for (;;) {
		ssize_t n = recv(ch->fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return os_error_errno(err, "reading the control channel");
		if (n == 0) {
			ch->eof = 1;
			return 0;
		}
		if (buf_append(&ch->in, chunk, (size_t)n, err) < 0)
			return os_error_prefix(err, "control channel");
		if ((size_t)n < sizeof(chunk))
			return 0;
	}
}

/* Waits until fd is readable or the deadline passes. */
static int wait_readable(struct splitchan *ch, int64_t deadline, os_error *err)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return os_error_set(err, ETIMEDOUT, "the peer did not answer in time");
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return os_error_errno(err, "poll");
		if (n > 0)
			return splitchan_pump(ch, err);
	}
}

/* Raw handshake bytes: exactly n of them, before the deadline. */
static int read_exact(struct splitchan *ch, void *out, size_t n, int64_t deadline, os_error *err)
{
	while (ch->in.len < n) {
		if (ch->eof)
			return os_error_set(err, EPIPE, "the peer closed the channel");
		if (wait_readable(ch, deadline, err) < 0)
			return -1;
	}
	memcpy(out, ch->in.data, n);
	buf_consume(&ch->in, n);
	return 0;
}

static void session_keys(struct splitchan *ch, const uint8_t key[SPLITCHAN_KEY_LEN],
			 const uint8_t nl[SPLITCHAN_NONCE_LEN],
			 const uint8_t ns[SPLITCHAN_NONCE_LEN], int launcher)
{
	derive(key, launcher ? LABEL_L2S : LABEL_S2L, nl, ns, ch->key_tx);
	derive(key, launcher ? LABEL_S2L : LABEL_L2S, nl, ns, ch->key_rx);
	ch->seq_tx = ch->seq_rx = 0;
}

static int random_bytes(uint8_t *out, size_t n, os_error *err)
{
	ssize_t got = getrandom(out, n, 0);
	if (got != (ssize_t)n)
		return os_error_errno(err, "getrandom");
	return 0;
}

int splitchan_handshake_launcher(struct splitchan *ch, const uint8_t key[SPLITCHAN_KEY_LEN],
				 int timeout_ms, os_error *err)
{
	int64_t deadline = now_ms() + timeout_ms;
	uint8_t hello[MAGIC_LEN + SPLITCHAN_NONCE_LEN], chal[SPLITCHAN_NONCE_LEN + SHA256_LEN];
	uint8_t expect[SHA256_LEN], proof[SHA256_LEN];
	const uint8_t *nl = hello + MAGIC_LEN, *ns = chal;
	memcpy(hello, MAGIC, MAGIC_LEN);
	if (random_bytes(hello + MAGIC_LEN, SPLITCHAN_NONCE_LEN, err) < 0 ||
	    send_all(ch->fd, hello, sizeof(hello), err) < 0 ||
	    read_exact(ch, chal, sizeof(chal), deadline, err) < 0)
		return os_error_prefix(err, "handshake");
	derive(key, LABEL_SUP_PROOF, nl, ns, expect);
	if (!ct_equal(expect, chal + SPLITCHAN_NONCE_LEN, SHA256_LEN))
		return os_error_set(err, EACCES,
				    "handshake: the supervisor did not prove knowledge of this "
				    "sandbox's key");
	derive(key, LABEL_LAU_PROOF, nl, ns, proof);
	if (send_all(ch->fd, proof, sizeof(proof), err) < 0)
		return os_error_prefix(err, "handshake");
	session_keys(ch, key, nl, ns, 1);
	return 0;
}

int splitchan_handshake_supervisor(struct splitchan *ch, const uint8_t key[SPLITCHAN_KEY_LEN],
				   int timeout_ms, os_error *err)
{
	int64_t deadline = now_ms() + timeout_ms;
	uint8_t hello[MAGIC_LEN + SPLITCHAN_NONCE_LEN], chal[SPLITCHAN_NONCE_LEN + SHA256_LEN];
	uint8_t expect[SHA256_LEN], proof[SHA256_LEN];
	const uint8_t *nl = hello + MAGIC_LEN, *ns = chal;
	if (read_exact(ch, hello, sizeof(hello), deadline, err) < 0)
		return os_error_prefix(err, "handshake");
	if (memcmp(hello, MAGIC, MAGIC_LEN) != 0)
		return os_error_set(err, EPROTO, "handshake: not an openshell-split launcher");
	if (random_bytes(chal, SPLITCHAN_NONCE_LEN, err) < 0)
		return os_error_prefix(err, "handshake");
	derive(key, LABEL_SUP_PROOF, nl, ns, chal + SPLITCHAN_NONCE_LEN);
	if (send_all(ch->fd, chal, sizeof(chal), err) < 0 ||
	    read_exact(ch, proof, sizeof(proof), deadline, err) < 0)
		return os_error_prefix(err, "handshake");
	derive(key, LABEL_LAU_PROOF, nl, ns, expect);
	if (!ct_equal(expect, proof, SHA256_LEN))
		return os_error_set(err, EACCES,
				    "handshake: the launcher did not prove knowledge of this "
				    "sandbox's key");
	session_keys(ch, key, nl, ns, 0);
	return 0;
}

int splitchan_send(struct splitchan *ch, enum splitchan_type type, const void *payload, size_t len,
		   os_error *err)
{
	if (len > SPLITCHAN_MAX_PAYLOAD)
		return os_error_set(err, EMSGSIZE, "control frame of %zu bytes is over %u", len,
				    SPLITCHAN_MAX_PAYLOAD);
	uint8_t hdr[HDR_LEN] = { (uint8_t)type, (uint8_t)(len >> 24), (uint8_t)(len >> 16),
				 (uint8_t)(len >> 8), (uint8_t)len };
	uint8_t tag[TAG_LEN];
	splitchan_mac(ch->key_tx, ch->seq_tx, (uint8_t)type, payload, len, tag);
	ch->seq_tx++;
	if (send_all(ch->fd, hdr, sizeof(hdr), err) < 0 ||
	    (len && send_all(ch->fd, payload, len, err) < 0) ||
	    send_all(ch->fd, tag, sizeof(tag), err) < 0)
		return -1;
	return 0;
}

int splitchan_send_json(struct splitchan *ch, enum splitchan_type type, const json_t *json,
			os_error *err)
{
	_cleanup_free_ char *text = json_dumps(json, JSON_COMPACT);
	if (!text)
		return os_error_set(err, ENOMEM, "serialising a control frame");
	return splitchan_send(ch, type, text, strlen(text), err);
}

int splitchan_take(struct splitchan *ch, enum splitchan_type *type, char **payload, size_t *len,
		   os_error *err)
{
	const uint8_t *p = (const uint8_t *)ch->in.data;
	if (ch->in.len < HDR_LEN)
		return 0;
	uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
	if (n > SPLITCHAN_MAX_PAYLOAD)
		return os_error_set(err, EMSGSIZE, "control frame %llu: length %u is over %u",
				    (unsigned long long)ch->seq_rx, n, SPLITCHAN_MAX_PAYLOAD);
	if (ch->in.len < HDR_LEN + (size_t)n + TAG_LEN)
		return 0;
	uint8_t tag[TAG_LEN];
	splitchan_mac(ch->key_rx, ch->seq_rx, p[0], p + HDR_LEN, n, tag);
	if (!ct_equal(tag, p + HDR_LEN + n, TAG_LEN))
		return os_error_set(err, EBADMSG,
				    "control frame %llu: authentication tag mismatch (forged, "
				    "replayed or reordered)",
				    (unsigned long long)ch->seq_rx);
	if (p[0] < SPLITCHAN_PROBE || p[0] > SPLITCHAN_EXIT)
		return os_error_set(err, EPROTO, "control frame %llu: unknown type %u",
				    (unsigned long long)ch->seq_rx, p[0]);
	char *out = malloc((size_t)n + 1);
	if (!out)
		return os_error_set(err, ENOMEM, "control frame: out of memory");
	memcpy(out, p + HDR_LEN, n);
	out[n] = '\0';
	*type = (enum splitchan_type)p[0];
	*payload = out;
	*len = n;
	ch->seq_rx++;
	buf_consume(&ch->in, HDR_LEN + (size_t)n + TAG_LEN);
	return 1;
}

int splitchan_recv(struct splitchan *ch, int timeout_ms, enum splitchan_type *type, char **payload,
		   size_t *len, os_error *err)
{
	int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		int got = splitchan_take(ch, type, payload, len, err);
		if (got != 0)
			return got < 0 ? -1 : 0;
		if (ch->eof)
			return os_error_set(err, EPIPE, "the peer closed the control channel");
		if (wait_readable(ch, deadline, err) < 0)
			return -1;
	}
}
