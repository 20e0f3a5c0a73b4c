/* proxy_upstream.c - the way out: resolve, check every address (SSRF),
 * connect to the checked address only, and the TLS handshakes on both sides
 * of a terminated tunnel. Upstream certificates are always verified. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "ssrf.h"
#include "proxy_internal.h"

int conn_add_upstream_watch(struct conn *c, os_error *err);

static enum step_result connect_next(struct conn *c);
static void start_upstream_tls(struct conn *c, const char *name);

static void on_resolved(void *data, int status, const struct ip_addr *addrs, size_t n,
			const char *errmsg)
{
	struct conn *c = data;
	c->query = NULL;
	if (c->dead)
		return;
	if (status != 0) {
		char detail[400];
		snprintf(detail, sizeof detail, "cannot resolve %s: %s", c->host,
			 errmsg ? errmsg : "error");
		reply_error(c, 502, "dns_error", detail, "dns_failure");
		conn_step(c);
		return;
	}
	/* A transparent connection goes to the address the agent dialled or
	 * nowhere: n becomes 1, that address, checked like any other below. */
	const struct ip_addr *orig = &c->orig;
	if (c->transparent && !c->up_host[0]) {
		if (!transparent_check_addresses(c, addrs, n)) {
			conn_step(c);
			return;
		}
		addrs = orig;
		n = 1;
	}
	/* Keep only the addresses this endpoint may reach; remember why not. */
	c->n_addrs = 0;
	struct policy_decision last = { 0 };
	for (size_t i = 0; i < n; i++) {
		struct policy_decision d = { .verdict = POLICY_ALLOW };
		/* Operator-configured inference backends are not agent-chosen. */
		if (!c->up_host[0])
			policy_decide_address(c->ep, &addrs[i], c->port, &d);
		if (d.verdict != POLICY_DENY)
			c->addrs[c->n_addrs++] = addrs[i];
		else
			last = d;
	}
	if (c->n_addrs == 0) {
		ip_addr_format(&addrs[0], c->dst, sizeof c->dst);
		reply_error(c, 403, "ssrf_denied", last.detail, policy_reason_name(last.reason));
		conn_step(c);
		return;
	}
	c->next_addr = 0;
	connect_next(c);
	conn_step(c);
}

void upstream_drop(struct conn *c)
{
	conn_put_upstream(c);
	stream_close(&c->upstream);
	if (c->uio) {
		loop_io_remove(c->uio);
		c->uio = NULL;
	}
	c->conn_host[0] = '\0';
	c->conn_port = 0;
}

void upstream_check_idle(struct conn *c)
{
	if (c->upstream.fd < 0 || c->upstream.ssl)
		return;
	char b;
	ssize_t n = recv(c->upstream.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0 || n > 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		upstream_drop(c);
}

void upstream_start(struct conn *c)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	os_error err = { 0 };
	/* The slot is taken before any DNS or connect work and held until the
	 * upstream is dropped or the connection closes. */
	if (!conn_take_upstream(c)) {
		reply_error(c, 503, "upstream_connection_limit",
			    "concurrent upstream connection limit of this sandbox reached",
			    "upstream_connection_limit");
		return;
	}
	/* A policy may name a metadata endpoint (upstream's SSRF scenarios do):
	 * it is refused as SSRF whatever DNS would say, and no query is sent. */
	if (!c->up_host[0] && c->ep && c->ep->host && host_is_metadata_name(c->ep->host)) {
		char detail[320];
		snprintf(detail, sizeof detail, "%s is a cloud metadata endpoint (always blocked)",
			 c->host);
		reply_error(c, 403, "ssrf_denied", detail,
			    policy_reason_name(POLICY_R_SSRF_ALWAYS_BLOCKED));
		return;
	}
	conn_set_state(c, ST_RESOLVE);
	c->query = resolver_lookup(cfg->resolver, c->up_host[0] ? c->up_host : c->host, on_resolved,
				   c, &err);
	if (!c->query)
		reply_error(c, 502, "dns_error", err.msg, "dns_failure");
}

static int sockaddr_of(const struct ip_addr *a, uint16_t port, struct sockaddr_storage *ss,
		       socklen_t *len)
{
	memset(ss, 0, sizeof *ss);
	if (a->family == AF_INET) {
		struct sockaddr_in *in = (void *)ss;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		in->sin_addr = a->v4;
		*len = sizeof *in;
		return 0;
	}
	struct sockaddr_in6 *in6 = (void *)ss;
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	in6->sin6_addr = a->v6;
	*len = sizeof *in6;
	return 0;
}

/* Starts a connect to the next checked address: STEP_WAIT while one is in
 * flight, STEP_PROGRESS once none is left and the agent is answered. */
static enum step_result connect_next(struct conn *c)
{
	while (c->next_addr < c->n_addrs) {
		const struct ip_addr *a = &c->addrs[c->next_addr++];
		ip_addr_format(a, c->dst, sizeof c->dst);
		struct sockaddr_storage ss;
		socklen_t len;
		sockaddr_of(a, c->up_port ? c->up_port : c->port, &ss, &len);
		int fd = socket(a->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		proxy_cap_socket_buffers(fd);
		if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		stream_close(&c->upstream);
		if (c->uio) {
			loop_io_remove(c->uio);
			c->uio = NULL;
		}
		stream_init(&c->upstream, fd);
		if (conn_add_upstream_watch(c, NULL) < 0) {
			stream_close(&c->upstream);
			continue;
		}
		conn_set_state(c, ST_CONNECT_UPSTREAM);
		return STEP_WAIT;
	}
	char detail[400];
	snprintf(detail, sizeof detail, "cannot connect to %s:%u", c->host, c->port);
	reply_error(c, 502, "upstream_unreachable", detail, "connect_failed");
	return STEP_PROGRESS;
}

static int start_client_tls(struct conn *c)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	os_error err = { 0 };
	SSL_CTX *ctx = tls_ca_server_ctx(cfg->ca, c->host, &err);
	SSL *ssl = ctx ? SSL_new(ctx) : NULL;
	SSL_CTX_free(ctx); /* the SSL keeps its own reference */
	if (!ssl || SSL_set_fd(ssl, c->client.fd) != 1) {
		SSL_free(ssl);
		log_warn("proxy: TLS for %s: %s", c->host, err.msg[0] ? err.msg : tls_last_error());
		conn_close(c);
		return -1;
	}
	SSL_set_accept_state(ssl);
	stream_set_tls(&c->client, ssl);
	return 0;
}

/* The connect finished: what the mode does with the new upstream. */
static enum step_result upstream_connected(struct conn *c)
{
	/* Its bytes could carry a secret back and no one could scrub them. */
	if (c->mode == MODE_TUNNEL && conn_holds_secret(c)) {
		reply_error(c, 403, "policy_denied",
			    "this upstream has received a secret of the sandbox; an uninspected "
			    "tunnel to it is refused",
			    "tunnel_to_secret_holder");
		return STEP_PROGRESS;
	}
	audit_decision(c, "connect", "allow", c->mode == MODE_HTTP ? "http_forward" : "allowed",
		       NULL, NULL, NULL);
	if (c->inference)
		conn_mark_secret_holder(c); /* the backend's key goes there */
	const char *established =
		c->transparent ? "" : "HTTP/1.1 200 Connection Established\r\n\r\n";
	switch (c->mode) {
	case MODE_TUNNEL:
		buf_append_str(&c->cout, established, NULL);
		if (tunnel_start(c) < 0) {
			conn_close(c);
			return STEP_CLOSED;
		}
		return STEP_PROGRESS;
	case MODE_MITM:
		if (c->inference) {
			if (c->up_tls)
				start_upstream_tls(c, c->up_host);
			else
				conn_set_state(c, ST_FORWARD);
			return STEP_PROGRESS;
		}
		buf_append_str(&c->cout, established, NULL);
		conn_set_state(c, ST_TLS_CLIENT);
		return STEP_PROGRESS;
	case MODE_HTTP:
		snprintf(c->conn_host, sizeof c->conn_host, "%s", c->host);
		c->conn_port = c->port;
		conn_set_state(c, ST_FORWARD);
		return STEP_PROGRESS;
	default:
		conn_close(c);
		return STEP_CLOSED;
	}
}

enum step_result upstream_connect_step(struct conn *c)
{
	int soerr = 0;
	socklen_t len = sizeof soerr;
	if (getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr == EINPROGRESS || soerr == EALREADY)
		return STEP_WAIT;
	if (soerr != 0)
		return connect_next(c);
	/* connect() finished? a writable socket with no error is connected */
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getpeername(c->upstream.fd, (struct sockaddr *)&ss, &sl) < 0)
		return STEP_WAIT; /* still in progress */
	return upstream_connected(c);
}

static void start_upstream_tls(struct conn *c, const char *name)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	os_error err = { 0 };
	SSL_CTX *ctx = upstream_trust_ctx(cfg->upstream_trust, &err);
	if (!ctx) {
		log_warn("proxy: %s", err.msg);
		reply_error(c, 502, "upstream_tls", err.msg, "upstream_tls_failed");
		return;
	}
	SSL *u = SSL_new(ctx);
	if (!u || SSL_set_fd(u, c->upstream.fd) != 1 || tls_client_set_host(u, name, &err) < 0) {
		SSL_free(u);
		reply_error(c, 502, "upstream_tls", "cannot set up upstream TLS",
			    "upstream_tls_failed");
		return;
	}
	SSL_set_connect_state(u);
	stream_set_tls(&c->upstream, u);
	conn_set_state(c, ST_TLS_UPSTREAM);
}

enum step_result tls_accept_step(struct conn *c)
{
	if (c->cout.len > 0)
		return STEP_WAIT; /* the 200 must reach the agent before TLS starts */
	if (!c->client.ssl && start_client_tls(c) < 0)
		return STEP_CLOSED;
	int r = SSL_do_handshake(c->client.ssl);
	if (r != 1) {
		int e = SSL_get_error(c->client.ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			c->client.want = e == SSL_ERROR_WANT_READ ? LOOP_IN : LOOP_OUT;
			return STEP_WAIT;
		}
		audit_decision(c, "connect", "deny", "agent_tls_failed", NULL, NULL,
			       "agent TLS handshake failed (does it trust the sandbox CA?)");
		conn_close(c);
		return STEP_CLOSED;
	}
	if (c->tls_answer) { /* a refusal: sent once the agent's request is in */
		conn_set_state(c, ST_READ_HEAD);
		return STEP_PROGRESS;
	}
	const char *sni = SSL_get_servername(c->client.ssl, TLSEXT_NAMETYPE_host_name);
	if (sni && strcasecmp(sni, c->host) != 0) {
		/* TLS is up: answer in it so the agent sees why. */
		c->mode = MODE_MITM;
		reply_error(c, 403, "policy_denied",
			    "TLS server name does not match the CONNECT target", "sni_mismatch");
		return STEP_PROGRESS;
	}
	if (c->inference)
		conn_set_state(c, ST_READ_HEAD);
	else
		start_upstream_tls(c, c->host);
	return STEP_PROGRESS;
}

enum step_result tls_connect_step(struct conn *c)
{
	int r = SSL_do_handshake(c->upstream.ssl);
	if (r == 1) {
		/* inference: the request is already queued; a tunnel waits for one */
		conn_set_state(c, c->inference ? ST_FORWARD : ST_READ_HEAD);
		return STEP_PROGRESS;
	}
	int e = SSL_get_error(c->upstream.ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		c->upstream.want = e == SSL_ERROR_WANT_READ ? LOOP_IN : LOOP_OUT;
		return STEP_WAIT;
	}
	long v = SSL_get_verify_result(c->upstream.ssl);
	char detail[300];
	snprintf(detail, sizeof detail, "upstream TLS handshake with %s failed: %s", c->host,
		 v != X509_V_OK ? X509_verify_cert_error_string(v) : tls_last_error());
	reply_error(c, 502, "upstream_tls", detail,
		    v != X509_V_OK ? "upstream_certificate" : "upstream_tls_failed");
	return STEP_PROGRESS;
}
