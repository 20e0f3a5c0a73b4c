/* proxy_request.c - one request head from the agent: parse strictly, find
 * out who is asking, judge it under the current policy generation, and
 * either answer (deny, error) or prepare the upstream side. A request is
 * never forwarded before it has been judged. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "denials.h"
#include "hostglob.h"
#include "inference.h"
#include "log.h"
#include "secret_echo.h"
#include "parse.h"
#include "proxy_internal.h"

#define METHOD_MAX 32
#define TARGET_MAX 8192

static bool read_client(struct conn *c)
{
	char chunk[16384];
	size_t room = c->cin.cap - c->cin.len;
	if (room == 0)
		return false;
	ssize_t n = stream_read(&c->client, chunk, room < sizeof chunk ? room : sizeof chunk);
	if (n == STREAM_AGAIN)
		return false;
	if (n <= 0) {
		conn_close(c);
		return false;
	}
	buf_append(&c->cin, chunk, (size_t)n, NULL);
	return true;
}

/* Keeps the resolved chain in one small allocation. */
static bool keep_chain(struct conn *c, const struct identity *id)
{
	size_t total = 0;
	for (size_t i = 0; i < id->n_chain; i++)
		total += strlen(id->chain[i]) + 1;
	c->chain_store = malloc(total ? total : 1);
	if (!c->chain_store)
		return false;
	char *p = c->chain_store;
	for (size_t i = 0; i < id->n_chain; i++) {
		size_t n = strlen(id->chain[i]) + 1;
		memcpy(p, id->chain[i], n);
		c->chain[i] = p;
		p += n;
	}
	c->n_chain = id->n_chain;
	c->id_pid = id->pid;
	c->id_uid = id->uid;
	c->identified = true;
	return true;
}

/* One kernel lookup of the caller. The identity is large (its chain holds
 * IDENTITY_CHAIN_MAX paths) and every connection is looked up twice, so
 * one scratch copy serves every lookup of the proxy's single loop thread:
 * valid until the next lookup. */
static struct identity *lookup_caller(const struct conn *c, enum identity_failure *f, os_error *err)
{
	static struct identity scratch;
	*f = identity_resolve(proxy_cfg(c->proxy)->identity, (void *)&c->peer, (void *)&c->local,
			      &scratch, err);
	return &scratch;
}

void proxy_identify_at_accept(struct conn *c)
{
	if (!proxy_cfg(c->proxy)->identity)
		return;
	enum identity_failure f;
	os_error err = { 0 };
	struct identity *id = lookup_caller(c, &f, &err);
	c->accept_checked = true;
	if (f == IDENTITY_OK) {
		identity_digest(id, c->accept_digest);
	} else {
		c->accept_failure = identity_failure_name(f);
		log_debug("proxy: identity at accept: %s", err.msg);
	}
}

/* The second lookup must name what the first did. */
static enum identity_failure agrees_with_accept(const struct conn *c, const struct identity *id)
{
	uint8_t digest[SHA256_LEN];
	if (!c->accept_checked)
		return IDENTITY_OK;
	if (c->accept_failure)
		return IDENTITY_CHANGED;
	identity_digest(id, digest);
	return ct_equal(digest, c->accept_digest, sizeof digest) ? IDENTITY_OK : IDENTITY_CHANGED;
}

/* Who is calling: resolved from the kernel at the first request (or
 * CONNECT, before any tunnel opens) and compared with the lookup at accept. */
static void identify(struct conn *c)
{
	if (c->identified || c->id_failed)
		return;
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (!cfg->identity) {
		c->id_failed = true;
		c->id_reason = "identity_disabled";
		return;
	}
	enum identity_failure f;
	os_error err = { 0 };
	struct identity *id = lookup_caller(c, &f, &err);
	if (f == IDENTITY_OK && (f = agrees_with_accept(c, id)) != IDENTITY_OK)
		os_error_set(&err, EPERM, "the socket's holder changed since accept (%s)",
			     c->accept_failure ? c->accept_failure : "another ancestry");
	if (f != IDENTITY_OK || !keep_chain(c, id)) {
		c->id_failed = true;
		c->id_reason = identity_failure_name(f);
		log_debug("proxy: identity: %s", err.msg);
	}
}

static int copy_slice(char *dst, size_t cap, struct http_slice s)
{
	if (s.len >= cap)
		return -1;
	memcpy(dst, s.p, s.len);
	dst[s.len] = '\0';
	return 0;
}

/* Normalises the requested authority into c->host / c->port. */
static bool take_authority(struct conn *c, const struct http_authority *a)
{
	os_error err = { 0 };
	if (host_normalize(a->host.p, a->host.len, c->host, sizeof c->host, &err) < 0) {
		snprintf(c->host, sizeof c->host, "%.*s",
			 (int)(a->host.len > 200 ? 200 : a->host.len), a->host.p);
		reply_error(c, 403, "policy_denied", err.msg, "invalid_host");
		return false;
	}
	c->port = a->port;
	return true;
}

bool proxy_any_caller(const struct conn *c, const struct policy_gen *g)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	/* Without any identity source (the split backend: the caller is in
	 * another Pod) a policy that names no binaries can only mean "by
	 * endpoint", which is what the gateway admits there; one that names
	 * binaries stays unenforceable, so denied, unless the operator chose
	 * endpoint-only. */
	return !c->identified &&
	       (cfg->endpoint_only || (!cfg->identity && !policy_restricts_binaries(g)));
}

void proxy_decide_connect(const struct conn *c, const struct policy_gen *g,
			  struct policy_decision *d)
{
	if (proxy_any_caller(c, g))
		policy_decide_connect_endpoint_only(g, c->host, c->port, d);
	else
		policy_decide_connect(g, c->host, c->port, c->chain, c->n_chain, d);
}

/* L4 judgement of c->host:c->port for this caller; answers on deny. */
static bool judge_connect(struct conn *c)
{
	identify(c);
	if (c->gen)
		policy_unref(c->gen);
	c->gen = proxy_current(c->proxy, &c->gen_serial);
	struct policy_decision d;
	c->any_caller = proxy_any_caller(c, c->gen);
	proxy_decide_connect(c, c->gen, &d);
	if (d.verdict == POLICY_DENY) {
		if (c->id_failed && (d.reason == POLICY_R_BINARY_NOT_ALLOWED ||
				     d.reason == POLICY_R_BINARY_UNKNOWN)) {
			/* Say why the caller is unknown (e.g. binary_hash_mismatch). */
			d.reason = POLICY_R_BINARY_UNKNOWN;
			snprintf(d.detail, sizeof d.detail, "caller identity unavailable: %s",
				 c->id_reason ? c->id_reason : "unknown");
		}
		reply_policy_denied(c, &d, NULL, NULL);
		return false;
	}
	c->ep = d.endpoint;
	str_join(c->policy_name, sizeof c->policy_name, d.policy ? d.policy : "", NULL);
	return true;
}

/* TLS is terminated when any endpoint that may judge a request on this
 * connection inspects it or binds credentials (requests are routed to
 * endpoints by path, policy_route_request). */
static bool connection_needs_tls(const struct conn *c)
{
	const struct policy_endpoint *ep = c->ep;
	if (ep->tls != POLICY_TLS_SKIP &&
	    (policy_protocol_inspected(ep->protocol) || ep->credential_provider))
		return true;
	return policy_route_needs_tls(c->gen, ep, c->host, c->port, c->any_caller ? NULL : c->chain,
				      c->any_caller ? 0 : c->n_chain);
}

static void handle_connect(struct conn *c, const struct http_request *req, size_t consumed)
{
	if (!take_authority(c, &req->authority))
		return;
	buf_consume(&c->cin, consumed);
	if (c->cin.len > 0) { /* bytes before our 200: the agent did not wait */
		reply_error(c, 400, "bad_request", "data sent before the CONNECT was answered",
			    "pipelined_connect");
		return;
	}
	proxy_open_target(c);
}

/* The CONNECT's answer: a transparent connection's agent asked for none. */
static void connect_established(struct conn *c)
{
	if (!c->transparent)
		buf_append_str(&c->cout, "HTTP/1.1 200 Connection Established\r\n\r\n", NULL);
}

void proxy_open_target(struct conn *c)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (strcmp(c->host, INFERENCE_HOST) == 0) {
		identify(c);
		if (!cfg->inference || !cfg->ca) {
			reply_error(c, 403, "policy_denied", "inference routing is not configured",
				    "inference_not_configured");
			return;
		}
		c->inference = true;
		c->mode = MODE_MITM;
		snprintf(c->policy_name, sizeof c->policy_name, "inference");
		connect_established(c);
		conn_set_state(c, ST_TLS_CLIENT);
		audit_decision(c, "connect", "allow", "inference", NULL, NULL, NULL);
		return;
	}
	if (!judge_connect(c))
		return;
	if (connection_needs_tls(c)) {
		if (!cfg->ca) {
			reply_error(c, 403, "policy_denied",
				    "L7 inspection unavailable: no sandbox CA", "tls_unavailable");
			return;
		}
		c->mode = MODE_MITM;
	} else {
		if (proxy_middleware_refuses_tunnel(c))
			return;
		c->mode = MODE_TUNNEL;
		/* One allowed name must not front another at the same address. */
		c->sni_pending = !cfg->allow_sni_mismatch && !host_is_ip_literal(c->host);
	}
	upstream_start(c);
}

/* A secret goes only where the endpoint that admitted this very request
 * binds its provider: another endpoint on the same host:port (another
 * policy, another binary) binding it is no licence. */
bool proxy_cred_allowed(void *conn, const char *provider)
{
	const struct conn *c = conn;
	return c->ep && c->ep->credential_provider && provider &&
	       strcmp(c->ep->credential_provider, provider) == 0;
}

/* ...and only inside TLS to the upstream: over plain HTTP it would cross
 * the wire in clear text. */
bool conn_upstream_is_tls(const struct conn *c)
{
	return c->mode == MODE_MITM && !c->inference && c->upstream.ssl != NULL;
}

static bool is_hop_header(struct http_slice n)
{
	static const char *const hop[] = { "connection",
					   "proxy-connection",
					   "keep-alive",
					   "proxy-authorization",
					   "proxy-authenticate",
					   "te",
					   "trailer",
					   "upgrade" };
	for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
		if (str_ieq(n.p, n.len, hop[i], strlen(hop[i])))
			return true;
	return false;
}

/* An HTTP/1.0 request may come without Host; forwarded as HTTP/1.1 it
 * names the host it was judged for, or a server at a shared address would
 * answer from its default site, whatever name that is. */
static int write_judged_host(const struct conn *c, struct buf *o, os_error *err)
{
	bool v6 = strchr(c->host, ':') != NULL;
	uint16_t dflt = c->mode == MODE_MITM ? 443 : 80;
	if (c->port == dflt)
		return buf_printf(o, err, "Host: %s%s%s\r\n", v6 ? "[" : "", c->host,
				  v6 ? "]" : "");
	return buf_printf(o, err, "Host: %s%s%s:%u\r\n", v6 ? "[" : "", c->host, v6 ? "]" : "",
			  (unsigned)c->port);
}

/* Appends the request head as forwarded upstream: origin-form canonical
 * target, hop-by-hop headers dropped, credential placeholders resolved (or
 * the request signed, proxy_sigv4.c). */
static int build_upstream_head(struct conn *c, const struct http_request *req, const char *method,
			       const char *canon, const char **deny_reason)
{
	os_error err = { 0 };
	struct buf *o = &c->uout;
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (buf_append_str(o, method, &err) < 0 || buf_append(o, " ", 1, &err) < 0 ||
	    buf_append_str(o, canon, &err) < 0 ||
	    (req->has_query && (buf_append(o, "?", 1, &err) < 0 ||
				buf_append(o, req->query.p, req->query.len, &err) < 0)) ||
	    buf_append(o, " HTTP/1.1\r\n", 11, &err) < 0)
		return -1;
	struct buf val;
	buf_init(&val, 16384);
	int rc = 0;
	for (size_t i = 0; i < req->headers.n && rc == 0; i++) {
		const struct http_header *h = &req->headers.v[i];
		if ((is_hop_header(h->name) && !proxy_ws_hop_kept(c, h->name)) ||
		    proxy_ws_header_dropped(c, h->name) || proxy_sigv4_drops(c, h->name) ||
		    (c->mw_replaced &&
		     (str_ieq(h->name.p, h->name.len, "content-length", 14) ||
		      str_ieq(h->name.p, h->name.len, "transfer-encoding", 17))) ||
		    (c->continue_sent && str_ieq(h->name.p, h->name.len, "expect", 6)))
			continue; /* a rewritten body has its own length (below) */
		/* Toward a credential-bound endpoint, or an upstream that ever
		 * received a secret, the answer must be readable to be scrubbed
		 * of secrets: no compression. */
		if (((c->ep && c->ep->credential_provider) || conn_holds_secret(c)) &&
		    str_ieq(h->name.p, h->name.len, "accept-encoding", 15))
			continue;
		buf_reset(&val);
		const char *provider = NULL;
		enum cred_result r =
			credentials_rewrite_value(cfg->creds, h->value.p, h->value.len,
						  proxy_cred_allowed, c, &val, &provider, &err);
		if (r == CRED_OK && !conn_upstream_is_tls(c)) {
			*deny_reason = "credential_plaintext";
			rc = -1;
			break;
		}
		if (r == CRED_OK && c->signing) { /* its keys sign; they are never sent */
			*deny_reason = "credential_signing_only";
			rc = -1;
			break;
		}
		if (r == CRED_ENDPOINT_MISMATCH || r == CRED_UNKNOWN_KEY || r == CRED_ERROR) {
			*deny_reason = r == CRED_ENDPOINT_MISMATCH ? "credential_endpoint_mismatch"
				       : r == CRED_UNKNOWN_KEY	   ? "credential_unknown"
								   : "credential_error";
			rc = -1;
			break;
		}
		if (r == CRED_OK) {
			c->injected = true;
			conn_mark_secret_holder(c);
		}
		rc = http_write_header_slice(o, h->name, (struct http_slice){ val.data, val.len },
					     &err);
	}
	if (val.data)
		memset(val.data, 0, val.alloc); /* may have held a secret */
	buf_free(&val);
	if (rc == 0 && !req->has_host)
		rc = write_judged_host(c, o, &err);
	if (rc == 0 && c->mw_replaced)
		rc = buf_printf(o, &err, "Content-Length: %zu\r\n", c->mw_body.len);
	if (rc == 0 && c->signing && (rc = proxy_sigv4_sign(c, req, method, canon, &err)) == 0)
		c->injected = true;
	if (rc == 0 && c->ws_upgrade) {
		rc = http_write_header(o, "Connection", "Upgrade", &err);
		if (rc == 0 && proxy_ws_offer(c))
			rc = http_write_header(o, "Sec-WebSocket-Extensions", proxy_ws_offer(c),
					       &err);
	} else if (rc == 0 && c->client_close)
		rc = http_write_header(o, "Connection", "close", &err);
	if (rc == 0)
		rc = buf_append_str(o, "\r\n", &err);
	return rc;
}

/* L7 judgement and forwarding set-up for one request (MITM or plain HTTP). */
static void handle_exchange(struct conn *c, const struct http_request *req, size_t consumed)
{
	char method[METHOD_MAX], canon[TARGET_MAX];
	if (copy_slice(method, sizeof method, req->method) < 0) {
		reply_error(c, 400, "bad_request", "method too long", "bad_method");
		return;
	}
	/* The policy judges the method upper-cased; it is forwarded as judged.
	 * Sent on as `post`, an upstream that upper-cases it (Symfony) acted on
	 * a form `_method` that only POST's check looks for, and a `head`
	 * answered with a Content-Length desynchronised the answers' framing. */
	for (char *m = method; *m; m++)
		if (*m >= 'a' && *m <= 'z')
			*m = (char)(*m - 'a' + 'A');
	char raw[TARGET_MAX];
	struct http_slice path = req->path;
	if (path.len + 1 >= sizeof raw) {
		reply_error(c, 414, "uri_too_long", "request target too long", "target_too_long");
		return;
	}
	/* The decision sees path (+ query): canonicalisation needs the raw target. */
	memcpy(raw, path.p, path.len);
	size_t rl = path.len;
	if (req->has_query && rl + 1 + req->query.len < sizeof raw) {
		raw[rl++] = '?';
		memcpy(raw + rl, req->query.p, req->query.len);
		rl += req->query.len;
	}
	raw[rl] = '\0';
	/* The endpoint whose path matches judges this request, and only its
	 * settings (rules, protocol, credential binding) apply to it. */
	struct policy_decision d;
	policy_decide_routed_request(
		c->gen, c->ep, c->host, c->port, c->any_caller ? NULL : c->chain,
		c->any_caller ? 0 : c->n_chain, method, raw, canon, sizeof canon, &d);
	if (d.endpoint && d.endpoint != c->ep) {
		c->ep = d.endpoint;
		snprintf(c->policy_name, sizeof c->policy_name, "%s", d.policy);
	}
	/* Logged paths never carry the query. */
	char logged[TARGET_MAX];
	str_join(logged, sizeof logged, canon[0] ? canon : "(rejected)", NULL);
	if (d.verdict == POLICY_DENY) {
		reply_policy_denied(c, &d, method, logged);
		return;
	}
	if (!proxy_judge_shape(c, req, method, raw, logged, &d))
		return;
	enum rpc_step rs = proxy_judge_form(c, req, method, raw, logged, consumed, &d);
	if (rs == RPC_FORWARD)
		rs = proxy_judge_rpc(c, req, method, logged, consumed);
	if (rs == RPC_FORWARD)
		rs = proxy_judge_graphql(c, req, method, logged, consumed);
	c->injected = false;
	if (rs == RPC_FORWARD) /* after the L7 decision, before credentials */
		rs = proxy_run_middlewares(c, req, logged, consumed);
	if (rs == RPC_FORWARD)
		rs = proxy_body_credentials(c, req, logged, consumed);
	if (rs == RPC_FORWARD)
		rs = proxy_sigv4_prepare(c, req, consumed);
	if (rs != RPC_FORWARD)
		return; /* answered, or waiting for the rest of the body */
	if (!proxy_ws_check_upgrade(c, req, raw, logged))
		return;
	audit_decision(c, "http", d.verdict == POLICY_AUDIT ? "audit" : "allow",
		       policy_reason_name(d.reason), method, logged, NULL);
	c->req_is_head = strcmp(method, "HEAD") == 0;
	c->client_close = req->framing.close;
	os_error err = { 0 };
	if (body_init_request(&c->req_body, req, &err) < 0) {
		reply_error(c, 400, "bad_request", err.msg, "bad_body");
		return;
	}
	if ((c->req_body.scan = body_scan_wanted(c)))
		body_scan_ahead(c, consumed);
	if (!proxy_json_watch_start(c, req, method, raw, logged))
		return;
	c->resp_head_done = false; /* this exchange's answer has not begun */
	if (c->req_body.found) { /* nothing was sent yet */
		body_scan_refuse(c);
		return;
	}
	const char *deny = NULL;
	buf_reset(&c->uout);
	int built = build_upstream_head(c, req, method, canon, &deny);
	c->continue_sent = false;
	if (built < 0) {
		buf_reset(&c->uout);
		if (deny)
			reply_error(
				c, 403, deny,
				strcmp(deny, "credential_plaintext") == 0
					? "credentials are only sent inside TLS to the upstream"
				: strcmp(deny, "credential_signing_only") == 0
					? "this endpoint's credentials only sign requests: no "
					  "placeholder is replaced in them"
					: "credential placeholder not allowed for this endpoint",
				deny);
		else
			reply_error(c, 400, "bad_request", "request head could not be forwarded",
				    "bad_header");
		return;
	}
	buf_consume(&c->cin, consumed);
	if (c->mw_replaced && proxy_middleware_commit(c, req, &err) < 0) {
		buf_reset(&c->uout);
		reply_error(c, 500, "internal_error", err.msg, "middleware_failed");
		return;
	}
	c->resp_head_done = false;
	c->resp_body.state = BODY_DONE;
	http_parser_reset(&c->rparser);
	if (c->mode == MODE_MITM || (c->mode == MODE_HTTP && c->upstream.fd >= 0)) {
		conn_set_state(c, ST_FORWARD);
		return;
	}
	upstream_start(c);
}

/* The host of a plain request: the absolute URI's through the proxy, the
 * Host header's on the transparent path. */
static bool http_target(struct conn *c, const struct http_request *req)
{
	if (c->transparent) {
		c->mode = MODE_HTTP;
		return transparent_take_host(c, req);
	}
	if (req->form != HTTP_TARGET_ABSOLUTE) {
		reply_error(c, 400, "bad_request",
			    "proxy requests must use CONNECT or an absolute http:// URI",
			    "bad_target_form");
		return false;
	}
	if (req->https) {
		reply_error(c, 400, "bad_request", "use CONNECT for https", "https_absolute_form");
		return false;
	}
	if (req->host_mismatch) {
		reply_error(c, 400, "bad_request", "Host header disagrees with the request URI",
			    "host_mismatch");
		return false;
	}
	c->mode = MODE_HTTP;
	return take_authority(c, &req->authority);
}

static void handle_http(struct conn *c, const struct http_request *req, size_t consumed)
{
	if (!http_target(c, req))
		return;
	if (strcmp(c->host, DENIALS_HOST) == 0) {
		proxy_serve_local(c, req);
		return;
	}
	if (!judge_connect(c))
		return;
	/* Keep-alive upstream: reused only for the same host:port (each request
	 * is still judged above); anything else gets a fresh, checked connection. */
	if (c->upstream.fd >= 0 && (strcmp(c->conn_host, c->host) != 0 || c->conn_port != c->port))
		upstream_drop(c);
	handle_exchange(c, req, consumed);
}

static void handle_mitm(struct conn *c, const struct http_request *req, size_t consumed)
{
	if (req->form != HTTP_TARGET_ORIGIN) {
		reply_error(c, 400, "bad_request",
			    "expected an origin-form request inside the tunnel", "bad_target_form");
		return;
	}
	char host[256];
	os_error err = { 0 };
	if (!req->has_host ||
	    host_normalize(req->host.host.p, req->host.host.len, host, sizeof host, &err) < 0 ||
	    strcmp(host, c->host) != 0 || (req->host.has_port && req->host.port != c->port)) {
		reply_error(c, 403, "policy_denied",
			    "Host header does not match the CONNECT target", "host_mismatch");
		return;
	}
	if (c->inference) {
		inference_handle(c, req, consumed);
		return;
	}
	/* Kept-alive tunnels judge each request by the generation current now. */
	if (!judge_connect(c))
		return;
	handle_exchange(c, req, consumed);
}

static int status_for(enum http_error e)
{
	switch (e) {
	case HTTP_E_LINE_TOO_LONG:
		return 414;
	case HTTP_E_HEAD_TOO_LARGE:
	case HTTP_E_TOO_MANY_HEADERS:
		return 431;
	default:
		return 400;
	}
}

/* Dispatches one parsed request by the connection's mode. */
static void handle_request(struct conn *c, const struct http_request *req, size_t consumed)
{
	bool is_connect = str_ieq(req->method.p, req->method.len, "CONNECT", 7);
	if (c->tls_answer) { /* a refusal that waited for our TLS and a request */
		buf_consume(&c->cin, consumed);
		buf_append(&c->cout, c->tls_answer, c->tls_answer_len, NULL);
		free(c->tls_answer);
		c->tls_answer = NULL;
		conn_set_state(c, ST_CLOSING);
	} else if (c->transparent && is_connect)
		reply_error(c, 400, "bad_request", "CONNECT on a direct connection", "bad_method");
	else if (c->mode == MODE_NONE && is_connect)
		handle_connect(c, req, consumed);
	else if (c->mode == MODE_MITM)
		handle_mitm(c, req, consumed);
	else if (!is_connect)
		handle_http(c, req, consumed);
	else
		reply_error(c, 400, "bad_request", "CONNECT after a plain request", "bad_method");
}

enum step_result request_head_step(struct conn *c)
{
	if (c->transparent && !c->tp_started)
		return transparent_first_step(c);
	if (c->mode == MODE_HTTP)
		upstream_check_idle(c);
	bool got = false;
	while (read_client(c))
		got = true;
	if (c->dead)
		return STEP_CLOSED;
	if (c->cin.len == 0)
		return got ? STEP_PROGRESS : STEP_WAIT;
	struct http_request req;
	size_t consumed = 0;
	os_error err = { 0 };
	int r = http_parse_request(&c->parser, c->cin.data, c->cin.len, &req, &consumed, &err);
	if (r == HTTP_PARSE_NEED_MORE) {
		if (!c->client.eof)
			return got ? STEP_PROGRESS : STEP_WAIT;
		conn_close(c);
		return STEP_CLOSED;
	}
	if (r < 0) {
		reply_error(c, status_for(c->parser.error), "bad_request", err.msg,
			    http_error_name(c->parser.error));
		return STEP_PROGRESS;
	}
	http_parser_reset(&c->parser);
	handle_request(c, &req, consumed);
	if (c->dead)
		return STEP_CLOSED;
	/* Every handler answers or moves on, except an inference request that
	 * waits for the rest of its body (its head is parsed again then). */
	return got || c->state != ST_READ_HEAD ? STEP_PROGRESS : STEP_WAIT;
}
