/* proxy_body_creds.c - request_body_credential_rewrite: credential
 * placeholders in a request body are replaced by their secrets, as
 * OpenShell does for "UTF-8 JSON, form, and text bodies" (docs
 * how-it-works/policies/schema.mdx; the Slack form-body case of issue
 * #459). The same rules as for headers hold: only a provider the endpoint
 * that admitted this request binds, only inside TLS to the upstream.
 *
 * A body is read whole before it is sent (a placeholder split across
 * reads, TCP segments or chunks is still one placeholder), chunked framing
 * decoded (trailers are dropped), and the result sent with its own
 * Content-Length. Bodies that are not text (another media type, a
 * Content-Encoding, not UTF-8) are forwarded untouched: their placeholders
 * stay harmless literals. A text body over BODY_CREDS_MAX (upstream: 256
 * KiB; here the body must fit the proxy's 256 KiB buffers beside its head)
 * is refused with 413 rather than sent with placeholders unresolved. */
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "proxy_internal.h"
#include "utf8.h"

/* JSON (+json), a form, or text/...; no Content-Type at all counts as text
 * (a POST without one is read as a form, see request_shape.c). Every
 * Content-Type header must say so: an upstream may read any of them. */
static bool media_is_text(struct http_slice v)
{
	static const char *const exact[] = { "application/json",
					     "application/x-www-form-urlencoded" };
	size_t e = 0;
	while (e < v.len && v.p[e] != ';' && v.p[e] != ' ' && v.p[e] != '\t')
		e++;
	for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
		if (str_ieq(v.p, e, exact[i], strlen(exact[i])))
			return true;
	if (e > 5 && str_ieq(v.p + e - 5, 5, "+json", 5))
		return true;
	return e > 5 && str_ieq(v.p, 5, "text/", 5);
}

static bool body_is_text(const struct http_request *req)
{
	for (size_t i = 0; i < req->headers.n; i++) {
		const struct http_header *h = &req->headers.v[i];
		if (str_ieq(h->name.p, h->name.len, "content-type", 12) && !media_is_text(h->value))
			return false;
		if (str_ieq(h->name.p, h->name.len, "content-encoding", 16) &&
		    !str_ieq(h->value.p, h->value.len, "identity", 8))
			return false;
		/* A transfer coding under the chunking (gzip, chunked) is compression. */
		if (str_ieq(h->name.p, h->name.len, "transfer-encoding", 17) &&
		    !str_ieq(h->value.p, h->value.len, "chunked", 7))
			return false;
	}
	return true;
}

static enum rpc_step too_large(struct conn *c, const char *path)
{
	char detail[160];
	snprintf(detail, sizeof detail,
		 "request_body_credential_rewrite reads text bodies of up to %u bytes; this one "
		 "is larger",
		 BODY_CREDS_MAX);
	(void)path;
	reply_error(c, 413, "payload_too_large", detail, "request_body_too_large");
	return RPC_ANSWERED;
}

/* The whole chunked body decoded into out: RPC_FORWARD with *wire (its
 * framed length), RPC_WAIT, or answered. */
static enum rpc_step dechunk(struct conn *c, const struct http_request *req, size_t consumed,
			     const char *path, struct buf *out, size_t *wire)
{
	struct http_chunked ch;
	http_chunked_init(&ch, BODY_CREDS_MAX);
	const char *p = c->cin.data + consumed;
	size_t left = c->cin.len - consumed, used = 0;
	for (;;) {
		size_t n = 0;
		struct http_slice data = { 0 };
		os_error err = { 0 };
		int r = http_chunked_feed(&ch, p + used, left - used, &n, &data, &err);
		if (r < 0) {
			if (ch.error == HTTP_E_BODY_TOO_LARGE)
				return too_large(c, path);
			reply_error(c, 400, "bad_request", err.msg, "bad_chunked_body");
			return RPC_ANSWERED;
		}
		if (r == HTTP_PARSE_DATA && buf_append(out, data.p, data.len, &err) < 0)
			return too_large(c, path);
		used += n;
		if (r == HTTP_PARSE_DONE) {
			*wire = used;
			return RPC_FORWARD;
		}
		if (r == HTTP_PARSE_NEED_MORE && c->cin.len >= c->cin.cap)
			return too_large(c, path); /* the whole body must fit the input buffer */
		if (r == HTTP_PARSE_NEED_MORE) {
			proxy_body_continue(c, req);
			return RPC_WAIT;
		}
	}
}

enum rpc_step proxy_body_credentials(struct conn *c, const struct http_request *req,
				     const char *path, size_t consumed)
{
	if (!c->ep || !c->ep->request_body_credential_rewrite || !body_is_text(req))
		return RPC_FORWARD;
	if (!req->framing.chunked && req->framing.content_length == 0)
		return RPC_FORWARD;
	_cleanup_buf_ struct buf decoded;
	buf_init(&decoded, BODY_CREDS_MAX);
	const char *body;
	size_t len, wire = 0;
	if (c->mw_replaced) { /* a middleware's output, already whole */
		body = c->mw_body.data;
		len = c->mw_body.len;
	} else if (req->framing.chunked) {
		enum rpc_step st = dechunk(c, req, consumed, path, &decoded, &wire);
		if (st != RPC_FORWARD)
			return st;
		body = decoded.data ? decoded.data : "";
		len = decoded.len;
	} else {
		if (req->framing.content_length > BODY_CREDS_MAX)
			return too_large(c, path);
		if (c->cin.len < consumed + (size_t)req->framing.content_length) {
			proxy_body_continue(c, req);
			return RPC_WAIT; /* the head is parsed again when more bytes come */
		}
		body = c->cin.data + consumed;
		len = (size_t)req->framing.content_length;
	}
	size_t bad;
	if (!proxy_ws_has_placeholder(body, len) || !utf8_valid(body, len, &bad))
		return RPC_FORWARD; /* nothing to resolve, or not text: sent as it is */
	struct buf out;
	buf_init(&out, BODY_CREDS_MAX + 64 * 1024);
	const char *why = proxy_text_rewrite(c, body, len, &out, "request_body_too_large");
	if (why) {
		if (out.data)
			memset(out.data, 0, out.alloc); /* may hold a secret already */
		buf_free(&out);
		reply_error(
			c, strcmp(why, "request_body_too_large") == 0 ? 413 : 403, why,
			strcmp(why, "credential_plaintext") == 0
				? "credentials are only sent inside TLS to the upstream"
				: "the request body's credential placeholder cannot be resolved "
				  "for this endpoint",
			why);
		return RPC_ANSWERED;
	}
	if (c->mw_replaced)
		buf_free(&c->mw_body);
	c->mw_body = out; /* moves: sent instead of the agent's body */
	if (!c->mw_replaced) /* else the middleware measured it already */
		c->mw_raw = req->framing.chunked ? wire : (size_t)req->framing.content_length;
	c->mw_replaced = true;
	c->injected = true; /* its answer is scrubbed of every secret */
	conn_mark_secret_holder(c);
	return RPC_FORWARD;
}
