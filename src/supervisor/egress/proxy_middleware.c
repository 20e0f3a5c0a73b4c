/* proxy_middleware.c - the network_middlewares chain on one request, after
 * the L7 decision and before credentials are injected. The only middleware
 * is OpenShell's in-process openshell/regex: its fixed pattern
 * `sk-[A-Za-z0-9_-]{16,}` is replaced with `[REDACTED]` in a UTF-8 request
 * body (a best-effort text transformation, as upstream says, not a secret
 * scanner). A chunked body is buffered whole (decoded, as upstream does)
 * and, when a middleware changes it, forwarded with a Content-Length
 * instead. A body it cannot evaluate (compressed, not UTF-8, over the cap)
 * fails the middleware: fail_closed refuses the request (it never reaches
 * the upstream), fail_open forwards it unchanged. A CONNECT tunnel
 * the proxy does not open cannot be evaluated either: a fail_closed
 * middleware selecting its host refuses it. */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "proxy_internal.h"
#include "utf8.h"

/* Below the proxy's 256 KiB buffers (upstream: 256 KiB), so the rewritten
 * head and body always fit the upstream buffer. */
#define MW_BODY_MAX (128 * 1024)
/* A chunked body's bytes on the wire: the decoded cap and its framing. */
#define MW_CHUNKED_RAW_MAX (MW_BODY_MAX + 32 * 1024)
#define REDACTED "[REDACTED]"

static bool key_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-';
}

size_t mw_regex_redact(const char *in, size_t len, struct buf *out, os_error *err)
{
	size_t count = 0, i = 0, copied = 0;
	while (i + 3 <= len) {
		size_t run = 0;
		if (!memcmp(in + i, "sk-", 3))
			while (i + 3 + run < len && key_char(in[i + 3 + run]))
				run++;
		if (run < 16) { /* no match here: leftmost-first, as the regex */
			i++;
			continue;
		}
		if (buf_append(out, in + copied, i - copied, err) < 0 ||
		    buf_append_str(out, REDACTED, err) < 0)
			return (size_t)-1;
		count++;
		i += 3 + run; /* greedy: the whole run */
		copied = i;
	}
	if (buf_append(out, in + copied, len - copied, err) < 0)
		return (size_t)-1;
	return count;
}

static const char *unreadable(const struct http_request *req)
{
	const struct http_header *h = http_header_find(&req->headers, "content-encoding");
	if (h && h->value.len && !str_ieq(h->value.p, h->value.len, "identity", 8))
		return "a compressed body cannot be evaluated";
	if (req->framing.content_length > MW_BODY_MAX)
		return "the body is over the middleware's 131072 byte limit";
	return NULL;
}

/* One middleware's failure: refused (answered) unless it fails open. */
static bool failed(struct conn *c, const struct policy_middleware *m, const char *why,
		   const char *path)
{
	char detail[POLICY_DETAIL_MAX];
	snprintf(detail, sizeof detail, "middleware %.64s (openshell/regex): %s", m->name, why);
	if (m->fail_open) {
		audit_decision(c, "middleware", "allow", "middleware_failed_open", NULL, path,
			       detail);
		return true;
	}
	audit_decision(c, "middleware", "deny", "middleware_failed", NULL, path, detail);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "error", "middleware_failed", "detail",
			      detail, "reason", "middleware_failed", "middleware", m->name);
	reply_json(c, 403, o, NULL);
	return false;
}

static enum rpc_step run_one(struct conn *c, const struct policy_middleware *m, const char *body,
			     size_t len, const char *path)
{
	size_t bad;
	if (!utf8_valid(body, len, &bad))
		return failed(c, m, "openshell/regex requires UTF-8 request bodies", path)
			       ? RPC_FORWARD
			       : RPC_ANSWERED;
	struct buf out;
	buf_init(&out, MW_BODY_MAX);
	os_error err = { 0 };
	size_t n = mw_regex_redact(body, len, &out, &err);
	if (n == (size_t)-1) {
		buf_free(&out);
		return failed(c, m, err.msg, path) ? RPC_FORWARD : RPC_ANSWERED;
	}
	if (n) {
		char detail[POLICY_DETAIL_MAX];
		snprintf(detail, sizeof detail,
			 "middleware %.64s (openshell/regex): %zu match%s "
			 "replaced",
			 m->name, n, n == 1 ? "" : "es");
		audit_decision(c, "middleware", "allow", "middleware_redacted", NULL, path, detail);
		buf_free(&c->mw_body);
		c->mw_body = out; /* moves: the body forwarded instead */
		c->mw_replaced = true;
	} else {
		buf_free(&out);
	}
	return RPC_FORWARD;
}

/* A chunked body decoded whole into out, c->mw_raw set to its length on
 * the wire (trailers included): RPC_FORWARD when whole, RPC_WAIT for more
 * bytes, RPC_ANSWERED with *why when it cannot be (over the cap, or not
 * valid chunked framing). */
static enum rpc_step dechunk(struct conn *c, size_t consumed, struct buf *out, const char **why)
{
	struct http_chunked ch;
	http_chunked_init(&ch, MW_BODY_MAX);
	const char *p = c->cin.data + consumed;
	size_t left = c->cin.len - consumed, used;
	buf_reset(out);
	for (;;) {
		struct http_slice data;
		os_error err = { 0 };
		int r = http_chunked_feed(&ch, p, left, &used, &data, &err);
		if (r < 0) {
			*why = ch.error == HTTP_E_BODY_TOO_LARGE
				       ? "the body is over the middleware's 131072 byte limit"
				       : "the chunked body is malformed";
			return RPC_ANSWERED;
		}
		if (r == HTTP_PARSE_DATA && buf_append(out, data.p, data.len, NULL) < 0) {
			*why = "the body is over the middleware's 131072 byte limit";
			return RPC_ANSWERED;
		}
		p += used;
		left -= used;
		if (r == HTTP_PARSE_DONE) {
			c->mw_raw = (size_t)(p - (c->cin.data + consumed));
			return RPC_FORWARD;
		}
		if (r == HTTP_PARSE_NEED_MORE)
			break;
	}
	if (c->cin.len - consumed >= MW_CHUNKED_RAW_MAX) {
		*why = "the body is over the middleware's 131072 byte limit";
		return RPC_ANSWERED;
	}
	return RPC_WAIT; /* the head is parsed again when more bytes come */
}

enum rpc_step proxy_run_middlewares(struct conn *c, const struct http_request *req,
				    const char *path, size_t consumed)
{
	const struct policy_middleware *chain[POLICY_MAX_MIDDLEWARES];
	size_t n = policy_middlewares_for(c->gen, c->host, chain);
	c->mw_replaced = false;
	bool has_body = req->framing.chunked || req->framing.content_length > 0;
	if (!n || !has_body)
		return RPC_FORWARD; /* nothing a body middleware could change */
	const char *why = unreadable(req);
	struct buf plain; /* a chunked body, decoded */
	buf_init(&plain, MW_BODY_MAX);
	const char *body0 = c->cin.data + consumed;
	size_t len0 = (size_t)req->framing.content_length;
	c->mw_raw = len0;
	if (!why && req->framing.chunked) {
		enum rpc_step st = dechunk(c, consumed, &plain, &why);
		if (st == RPC_WAIT) {
			buf_free(&plain);
			return st;
		}
		body0 = plain.data ? plain.data : "";
		len0 = plain.len;
	} else if (!why && c->cin.len < consumed + len0) {
		return RPC_WAIT; /* the head is parsed again when more bytes come */
	}
	enum rpc_step st = RPC_FORWARD;
	for (size_t i = 0; i < n && st == RPC_FORWARD; i++) {
		if (why) {
			st = failed(c, chain[i], why, path) ? RPC_FORWARD : RPC_ANSWERED;
			continue;
		}
		/* Each middleware sees what the one before it produced. */
		const char *body = c->mw_replaced ? c->mw_body.data : body0;
		size_t len = c->mw_replaced ? c->mw_body.len : len0;
		st = run_one(c, chain[i], body, len, path);
	}
	buf_free(&plain);
	return st;
}

int proxy_middleware_commit(struct conn *c, const struct http_request *req, os_error *err)
{
	/* The agent's body leaves the input buffer unsent (a chunked one with
	 * its framing and trailers); ours follows the head. */
	(void)req;
	buf_consume(&c->cin, c->mw_raw);
	int rc = buf_append(&c->uout, c->mw_body.data, c->mw_body.len, err);
	c->req_body.state = BODY_DONE;
	c->mw_replaced = false;
	buf_free(&c->mw_body);
	return rc;
}

bool proxy_middleware_refuses_tunnel(struct conn *c)
{
	const struct policy_middleware *chain[POLICY_MAX_MIDDLEWARES];
	size_t n = policy_middlewares_for(c->gen, c->host, chain);
	for (size_t i = 0; i < n; i++) {
		if (chain[i]->fail_open)
			continue;
		char detail[POLICY_DETAIL_MAX];
		snprintf(detail, sizeof detail,
			 "middleware %.64s selects %.200s, whose traffic is not inspected (an L4 "
			 "tunnel): it cannot be evaluated and fails closed",
			 chain[i]->name, c->host);
		reply_error(c, 403, "policy_denied", detail, "middleware_uninspectable");
		return true;
	}
	return false;
}
