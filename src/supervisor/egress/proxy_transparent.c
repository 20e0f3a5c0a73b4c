/* proxy_transparent.c - connections the sandbox's nat chain redirected to
 * the proxy because the agent ignored its proxy variables. Nothing here
 * trusts the agent's choice of address: the destination name comes from
 * the TLS ClientHello (server_name) or the HTTP Host header, is judged by
 * the same policy, identity and SSRF rules as a CONNECT, and must resolve
 * to the address the agent dialled, to which alone the proxy connects
 * (else one allowed name would carry a connection to any address).
 *
 * The ClientHello is only peeked at (MSG_PEEK, SO_RCVLOWAT while it is
 * incomplete), so the TLS that follows, ours with the sandbox CA or the
 * upstream's through a tunnel, reads it from the socket as sent. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hostglob.h"
#include "proxy_internal.h"
#include "tls_sni.h"

void transparent_accepted(struct conn *c, int fd)
{
	c->transparent = true;
	struct sockaddr_in orig;
	socklen_t len = sizeof orig;
	struct sockaddr_in *local = (struct sockaddr_in *)&c->local;
	/* A connection made to the listener itself was not redirected: it
	 * names no destination (the listener is on loopback, never a target). */
	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &orig, &len) < 0 ||
	    orig.sin_family != AF_INET ||
	    (orig.sin_addr.s_addr == local->sin_addr.s_addr && orig.sin_port == local->sin_port)) {
		c->tp_no_dst = true;
		return;
	}
	c->orig.family = AF_INET;
	c->orig.v4 = orig.sin_addr;
	c->orig_port = ntohs(orig.sin_port);
	ip_addr_format(&c->orig, c->dst, sizeof c->dst); /* every record names it */
	/* The agent's socket names the original destination as its peer:
	 * identity looks it up by that. */
	memcpy(&c->local, &orig, sizeof orig);
}

static enum step_result refuse(struct conn *c, const char *reason, const char *detail)
{
	if (!c->port)
		c->port = c->orig_port;
	audit_decision(c, "connect", "deny", reason, NULL, NULL, detail);
	conn_close(c);
	return STEP_CLOSED;
}

/* Port 443 is TLS, port 80 plain HTTP; another listed port is what its
 * first byte says (a TLS record starts with 22, no HTTP method does). */
static bool wants_tls(const struct conn *c, uint8_t first)
{
	if (c->orig_port == 443)
		return true;
	if (c->orig_port == 80)
		return false;
	return first == 0x16;
}

/* The agent shut its side (peeked bytes stay readable, so a read cannot
 * tell). */
static bool peer_closed(const struct conn *c)
{
	struct pollfd p = { .fd = c->client.fd, .events = POLLRDHUP };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void set_rcvlowat(struct conn *c, int bytes)
{
	setsockopt(c->client.fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes);
}

/* The name the agent's ClientHello asks for becomes the target; without
 * one, the address it dialled (judged as an IP literal). */
static enum step_result take_server_name(struct conn *c, const char *sni, bool found)
{
	char dst[64];
	ip_addr_format(&c->orig, dst, sizeof dst);
	os_error err = { 0 };
	if (!found)
		snprintf(c->host, sizeof c->host, "%s", dst);
	else if (host_normalize(sni, strlen(sni), c->host, sizeof c->host, &err) < 0)
		return refuse(c, "client_hello_malformed", err.msg);
	c->port = c->orig_port;
	c->tp_tls = true;
	c->tp_started = true;
	proxy_open_target(c);
	return c->dead ? STEP_CLOSED : STEP_PROGRESS;
}

static enum step_result peek_client_hello(struct conn *c)
{
	static uint8_t data[TLS_SNI_INPUT_MAX]; /* one loop thread */
	ssize_t n = recv(c->client.fd, data, sizeof data, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		conn_close(c); /* the agent went away before saying anything */
		return STEP_CLOSED;
	}
	if (n < 0)
		return STEP_WAIT;
	if (!wants_tls(c, data[0])) { /* plain HTTP: the request parser takes it from here */
		c->tp_started = true;
		return STEP_PROGRESS;
	}
	char name[TLS_SNI_NAME_MAX], detail[200];
	enum tls_sni_result r = tls_sni_parse(data, (size_t)n, name, sizeof name);
	switch (r) {
	case TLS_SNI_NEED_MORE:
		if (peer_closed(c))
			return refuse(c, "client_hello_incomplete",
				      "the connection ended inside the TLS ClientHello");
		set_rcvlowat(c, (int)n + 1); /* wake when more than this is there */
		return STEP_WAIT;
	case TLS_SNI_FOUND:
	case TLS_SNI_NONE:
		set_rcvlowat(c, 1);
		return take_server_name(c, name, r == TLS_SNI_FOUND);
	case TLS_SNI_NOT_TLS:
		snprintf(detail, sizeof detail,
			 "port %u takes TLS only; the first bytes are not a "
			 "TLS handshake",
			 c->orig_port);
		return refuse(c, "transparent_not_tls", detail);
	default:
		snprintf(detail, sizeof detail, "the TLS ClientHello cannot be read: %s",
			 tls_sni_result_name(r));
		return refuse(c, "client_hello_malformed", detail);
	}
}

enum step_result transparent_first_step(struct conn *c)
{
	if (c->tp_no_dst)
		return refuse(c, "transparent_no_destination",
			      "a connection to the transparent listener that was not redirected");
	return peek_client_hello(c);
}

bool transparent_take_host(struct conn *c, const struct http_request *req)
{
	if (req->form != HTTP_TARGET_ORIGIN || !req->has_host) {
		reply_error(c, 400, "bad_request",
			    "a direct HTTP connection needs an origin-form request with a Host "
			    "header",
			    "transparent_no_host");
		return false;
	}
	os_error err = { 0 };
	if (host_normalize(req->host.host.p, req->host.host.len, c->host, sizeof c->host, &err) <
	    0) {
		reply_error(c, 403, "policy_denied", err.msg, "invalid_host");
		return false;
	}
	c->port = c->orig_port;
	if (req->host.has_port && req->host.port != c->orig_port) {
		reply_error(c, 403, "policy_denied",
			    "Host header names another port than the connection's",
			    "host_mismatch");
		return false;
	}
	return true;
}

static bool same_addr(const struct ip_addr *a, const struct ip_addr *b)
{
	if (a->family != b->family)
		return false;
	return a->family == AF_INET ? a->v4.s_addr == b->v4.s_addr
				    : memcmp(&a->v6, &b->v6, sizeof a->v6) == 0;
}

bool transparent_check_addresses(struct conn *c, const struct ip_addr *addrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (same_addr(&addrs[i], &c->orig))
			return true;
	/* Rotating answers: the address the stub gave the agent for this name. */
	if (proxy_dns_handed_out(c->proxy, c->host, &c->orig))
		return true;
	char dst[64], detail[400];
	ip_addr_format(&c->orig, dst, sizeof dst);
	snprintf(c->dst, sizeof c->dst, "%s", dst);
	snprintf(detail, sizeof detail, "%s does not resolve to %s, the address connected to",
		 c->host, dst);
	reply_error(c, 403, "policy_denied", detail, "transparent_address_mismatch");
	return false;
}

bool transparent_defer_answer(struct conn *c)
{
	if (!c->transparent || !c->tp_tls || c->client.ssl || c->tls_answer)
		return false;
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (c->upstream.fd >= 0)
		upstream_drop(c);
	if (!cfg->ca || !c->host[0] || c->state == ST_CLOSING) {
		buf_reset(&c->cout); /* plain HTTP would be noise to a TLS client */
		conn_set_state(c, ST_CLOSING);
		return true;
	}
	c->tls_answer = malloc(c->cout.len ? c->cout.len : 1);
	if (!c->tls_answer) {
		buf_reset(&c->cout);
		conn_set_state(c, ST_CLOSING);
		return true;
	}
	memcpy(c->tls_answer, c->cout.data, c->cout.len);
	c->tls_answer_len = c->cout.len;
	buf_reset(&c->cout);
	c->mode = MODE_MITM;
	c->sni_pending = false;
	conn_set_state(c, ST_TLS_CLIENT);
	return true;
}
