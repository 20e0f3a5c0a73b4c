/* nb_ws.c - netbench's WebSocket pair: `serve-ws` (an echo server: the
 * RFC 6455 handshake, then every client message sent back unmasked) and `ws`
 * (one connection, direct or through the proxy's plain-HTTP side, sending N
 * text messages with a window of them in flight; prints messages/s). Frames
 * are read with the product's own parser (wsframe.h). Both serve or reach
 * only the literal addresses given; one connection at a time. */
#include <errno.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "netbench.h"
#include "wsframe.h"

#define NB_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define NB_WS_BUF (1024 * 1024)
#define NB_WS_WINDOW 32 /* messages in flight */
#define NB_WS_TIMEOUT_S 30

/* Sec-WebSocket-Accept for key (RFC 6455 4.2.2). */
static int accept_for(const char *key, size_t klen, char out[32], os_error *err)
{
	char in[128];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (klen > 64)
		return os_error_set(err, EPROTO, "Sec-WebSocket-Key too long");
	memcpy(in, key, klen);
	memcpy(in + klen, NB_WS_GUID, sizeof NB_WS_GUID - 1);
	if (!EVP_Digest(in, klen + sizeof NB_WS_GUID - 1, md, &mdlen, EVP_sha1(), NULL))
		return os_error_set(err, EIO, "SHA-1 unavailable");
	EVP_EncodeBlock((unsigned char *)out, md, (int)mdlen);
	return 0;
}

static int send_all(int fd, const void *p, size_t n, os_error *err)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return os_error_errno(err, "send");
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads until the head's blank line; what follows stays in buf. */
static ssize_t read_head(int fd, char *buf, size_t cap, size_t *len, os_error *err)
{
	for (;;) {
		char *end = memmem(buf, *len, "\r\n\r\n", 4);
		if (end)
			return end + 4 - buf;
		if (*len == cap)
			return os_error_set(err, EPROTO, "handshake head too large");
		ssize_t r = read(fd, buf + *len, cap - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return os_error_set(err, EPROTO, "connection closed during the handshake");
		*len += (size_t)r;
	}
}

/* The value of header name (lower case, with ": ") in a head, found case-
 * insensitively; the value itself is returned as sent. NULL if absent. */
static const char *header(const char *head, size_t n, const char *name, size_t *vlen)
{
	char lower[8192];
	if (n > sizeof lower)
		return NULL;
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)(head[i] >= 'A' && head[i] <= 'Z' ? head[i] + 32 : head[i]);
	const char *v = memmem(lower, n, name, strlen(name));
	if (!v)
		return NULL;
	size_t at = (size_t)(v - lower) + strlen(name);
	const char *e = memmem(head + at, n - at, "\r\n", 2);
	*vlen = e ? (size_t)(e - (head + at)) : 0;
	return head + at;
}

/* One frame from buf[0..*len) (reading more as needed): its head, and the
 * payload unmasked in place at buf + h->head_len. */
static int read_frame(int fd, uint8_t *buf, size_t *len, bool from_client, struct ws_head *h,
		      os_error *err)
{
	for (;;) {
		int code;
		int r = ws_parse_head(buf, *len, from_client, h, &code, err);
		if (r < 0)
			return -1;
		if (r > 0 && h->head_len + h->len > NB_WS_BUF)
			return os_error_set(err, EMSGSIZE, "frame larger than the buffer");
		if (r > 0 && *len >= h->head_len + h->len) {
			if (h->masked)
				ws_unmask(buf + h->head_len, (size_t)h->len, h->mask, 0);
			return 0;
		}
		ssize_t n = read(fd, buf + *len, NB_WS_BUF - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? os_error_set(err, EPIPE, "connection closed")
				      : os_error_errno(err, "read");
		*len += (size_t)n;
	}
}

static void drop_frame(uint8_t *buf, size_t *len, const struct ws_head *h)
{
	size_t n = h->head_len + (size_t)h->len;
	memmove(buf, buf + n, *len - n);
	*len -= n;
}

static int serve_one(int fd, uint8_t *buf, os_error *err)
{
	size_t len = 0, klen;
	ssize_t hl = read_head(fd, (char *)buf, NB_WS_BUF, &len, err);
	if (hl < 0)
		return -1;
	const char *key = header((char *)buf, (size_t)hl, "\r\nsec-websocket-key: ", &klen);
	char acc[32], resp[256];
	if (!key || accept_for(key, klen, acc, err) < 0)
		return os_error_set(err, EPROTO, "not a WebSocket upgrade");
	int n = snprintf(resp, sizeof resp,
			 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
			 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			 acc);
	if (send_all(fd, resp, (size_t)n, err) < 0)
		return -1;
	memmove(buf, buf + hl, len - (size_t)hl);
	len -= (size_t)hl;
	for (;;) {
		struct ws_head h;
		uint8_t head[WS_HEAD_MAX];
		if (read_frame(fd, buf, &len, true, &h, err) < 0)
			return err->code == EPIPE ? 0 : -1;
		size_t hn = ws_put_head(head, h.opcode == WS_OP_PING ? WS_OP_PONG : h.opcode,
					(size_t)h.len, NULL);
		if (send_all(fd, head, hn, err) < 0 ||
		    send_all(fd, buf + h.head_len, (size_t)h.len, err) < 0)
			return -1;
		bool closing = h.opcode == WS_OP_CLOSE;
		drop_frame(buf, &len, &h);
		if (closing)
			return 0;
	}
}

int nb_serve_ws(const struct nb_addr *a, os_error *err)
{
	_cleanup_close_ int lfd = nb_listen(a, err);
	_cleanup_free_ uint8_t *buf = malloc(NB_WS_BUF);
	if (lfd < 0)
		return -1;
	if (!buf)
		return os_error_set(err, ENOMEM, "buffer");
	printf("listening on %s\n", a->text);
	fflush(stdout);
	for (;;) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN }; /* lfd is non-blocking */
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return os_error_errno(err, "poll");
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return os_error_errno(err, "accept");
		}
		os_error e = { 0 };
		if (serve_one(fd, buf, &e) < 0)
			fprintf(stderr, "netbench serve-ws: %s\n", e.msg);
		close(fd);
	}
}

static int handshake(int fd, const struct nb_addr *target, bool proxied, uint8_t *buf, size_t *len,
		     os_error *err)
{
	uint8_t raw[16];
	char key[32], want[32], req[512];
	size_t vlen;
	if (getrandom(raw, sizeof raw, 0) != sizeof raw)
		return os_error_errno(err, "getrandom");
	EVP_EncodeBlock((unsigned char *)key, raw, sizeof raw);
	if (accept_for(key, strlen(key), want, err) < 0)
		return -1;
	int n = snprintf(req, sizeof req,
			 "GET %s%s/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
			 "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
			 "Sec-WebSocket-Version: 13\r\n\r\n",
			 proxied ? "http://" : "", proxied ? target->text : "", target->text, key);
	if (send_all(fd, req, (size_t)n, err) < 0)
		return -1;
	ssize_t hl = read_head(fd, (char *)buf, NB_WS_BUF, len, err);
	if (hl < 0)
		return -1;
	if (memcmp(buf, "HTTP/1.1 101", 12) != 0)
		return os_error_set(err, EPROTO, "upgrade answered: %.40s", (char *)buf);
	const char *acc = header((char *)buf, (size_t)hl, "\r\nsec-websocket-accept: ", &vlen);
	if (!acc || vlen != strlen(want) || memcmp(acc, want, vlen) != 0)
		return os_error_set(err, EPROTO, "wrong Sec-WebSocket-Accept");
	memmove(buf, buf + hl, *len - (size_t)hl);
	*len -= (size_t)hl;
	return 0;
}

int nb_ws(const struct nb_addr *target, const struct nb_addr *proxy, uint64_t count, os_error *err)
{
	if (!proxy && target->sin.sin_family != AF_INET)
		return os_error_set(err, EINVAL, "a direct target must be an IPv4 literal");
	_cleanup_close_ int fd = nb_connect(proxy ? proxy : target, NB_WS_TIMEOUT_S, err);
	_cleanup_free_ uint8_t *buf = malloc(NB_WS_BUF);
	size_t len = 0;
	if (fd < 0)
		return -1;
	if (!buf)
		return os_error_set(err, ENOMEM, "buffer");
	if (handshake(fd, target, proxy != NULL, buf, &len, err) < 0)
		return -1;
	static const char msg[] =
		"{\"op\":\"report.list\",\"args\":{\"scope\":\"main\",\"page\":1}}";
	uint8_t out[WS_HEAD_MAX + sizeof msg], mask[4] = { 0x5a, 0xc3, 0x11, 0x7e };
	size_t hn = ws_put_head(out, WS_OP_TEXT, sizeof msg - 1, mask);
	memcpy(out + hn, msg, sizeof msg - 1);
	ws_unmask(out + hn, sizeof msg - 1, mask, 0);
	uint64_t sent = 0, got = 0;
	double t0 = nb_now();
	while (got < count) {
		while (sent < count && sent - got < NB_WS_WINDOW) {
			if (send_all(fd, out, hn + sizeof msg - 1, err) < 0)
				return -1;
			sent++;
		}
		struct ws_head h;
		if (read_frame(fd, buf, &len, false, &h, err) < 0)
			return os_error_prefix(err, "after %llu of %llu answers",
					       (unsigned long long)got, (unsigned long long)count);
		if (h.opcode != WS_OP_TEXT || h.len != sizeof msg - 1 ||
		    memcmp(buf + h.head_len, msg, sizeof msg - 1) != 0)
			return os_error_set(err, EPROTO, "answer %llu is not the echo (opcode %u)",
					    (unsigned long long)got, h.opcode);
		drop_frame(buf, &len, &h);
		got++;
	}
	double secs = nb_now() - t0;
	printf("%.0f\n", (double)count / (secs > 0 ? secs : 1e-9));
	return 0;
}
