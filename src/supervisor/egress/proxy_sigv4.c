/* proxy_sigv4.c - credential_signing: the proxy signs each request with the
 * AWS keys of the provider its endpoint binds (upstream's names:
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN), so
 * the agent signs with placeholders and never holds a key. As in OpenShell (docs providers/aws-sigv4.mdx, crates/openshell-
 * sandbox/src/sigv4.rs): the agent's Authorization, X-Amz-Date,
 * X-Amz-Security-Token and X-Amz-Content-Sha256 are dropped; host,
 * content-type, content-length and the agent's other x-amz-* headers are
 * signed with the x-amz-* headers the proxy adds; the payload mode follows the agent's x-amz-content-sha256
 * (a hex hash: the body is hashed; UNSIGNED-PAYLOAD or STREAMING-UNSIGNED-
 * PAYLOAD-TRAILER: it is not; absent: hashed when it has a Content-Length)
 * unless the policy fixes it (sigv4:body, sigv4:no_body). Chunk-signed
 * streaming cannot be re-signed and is refused. A hashed body must be
 * whole in the proxy's input buffer: SIGV4_BODY_MAX (upstream: 10 MiB).
 * Signing happens only inside TLS to the upstream. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "credentials.h"
#include "parse.h"
#include "proxy_internal.h"
#include "sigv4.h"

static const char *const agent_signing_headers[] = { "authorization", "x-amz-date",
						     "x-amz-security-token",
						     "x-amz-content-sha256" };

bool proxy_sigv4_drops(const struct conn *c, struct http_slice name)
{
	if (!c->signing)
		return false;
	for (size_t i = 0; i < sizeof agent_signing_headers / sizeof agent_signing_headers[0]; i++)
		if (str_ieq(name.p, name.len, agent_signing_headers[i],
			    strlen(agent_signing_headers[i])))
			return true;
	return false;
}

/* KEY of the endpoint's provider, or NULL. */
static const char *key_of(const struct conn *c, const char *key)
{
	const struct credentials *creds = proxy_cfg(c->proxy)->creds;
	const char *provider = NULL;
	const char *v = creds ? credentials_lookup(creds, key, strlen(key), &provider) : NULL;
	return v && proxy_cred_allowed((void *)c, provider) ? v : NULL;
}

static bool region_for(const struct conn *c, char *out, size_t cap)
{
	if (c->ep->signing_region)
		return snprintf(out, cap, "%s", c->ep->signing_region) < (int)cap;
	return sigv4_region_from_host(c->host, out, cap);
}

static enum rpc_step refuse(struct conn *c, int status, const char *reason, const char *detail)
{
	reply_error(c, status, status == 403 ? "policy_denied" : "bad_request", detail, reason);
	return RPC_ANSWERED;
}

static bool is_hex_hash(struct http_slice v)
{
	if (v.len != SIGV4_HASH_HEX)
		return false;
	for (size_t i = 0; i < v.len; i++)
		if (!((v.p[i] >= '0' && v.p[i] <= '9') || (v.p[i] >= 'a' && v.p[i] <= 'f') ||
		      (v.p[i] >= 'A' && v.p[i] <= 'F')))
			return false;
	return true;
}

/* The payload hash the mode and the agent's header ask for: "" means hash
 * the body; NULL (with *why) means refused. */
static const char *payload_mode(const struct conn *c, const struct http_request *req,
				const char **why)
{
	if (c->ep->signing == POLICY_SIGN_SIGV4_NO_BODY)
		return SIGV4_UNSIGNED_PAYLOAD;
	if (c->ep->signing == POLICY_SIGN_SIGV4_BODY)
		return "";
	const struct http_header *h = http_header_find(&req->headers, "x-amz-content-sha256");
	if (!h)
		return req->framing.chunked ? SIGV4_UNSIGNED_PAYLOAD : "";
	if (is_hex_hash(h->value))
		return "";
	if (str_ieq(h->value.p, h->value.len, SIGV4_UNSIGNED_PAYLOAD,
		    strlen(SIGV4_UNSIGNED_PAYLOAD)))
		return SIGV4_UNSIGNED_PAYLOAD;
	if (str_ieq(h->value.p, h->value.len, SIGV4_STREAMING_UNSIGNED_TRAILER,
		    strlen(SIGV4_STREAMING_UNSIGNED_TRAILER)))
		return SIGV4_STREAMING_UNSIGNED_TRAILER;
	*why = h->value.len > 10 && str_ieq(h->value.p, 10, "STREAMING-", 10)
		       ? "chunk-signed streaming uploads cannot be re-signed by the proxy: use "
			 "credential_signing: sigv4:no_body"
		       : "x-amz-content-sha256 is neither a SHA-256 hex digest, UNSIGNED-PAYLOAD "
			 "nor STREAMING-UNSIGNED-PAYLOAD-TRAILER";
	return NULL;
}

/* The body's hash into c->sig_payload, once the body is all here. */
static enum rpc_step hash_body(struct conn *c, const struct http_request *req, size_t consumed)
{
	if (req->framing.chunked)
		return refuse(c, 411, "signing_body_chunked",
			      "a signed body is hashed whole: send a Content-Length (or use "
			      "credential_signing: sigv4:no_body)");
	if (req->framing.content_length > SIGV4_BODY_MAX) {
		char detail[160];
		snprintf(detail, sizeof detail,
			 "a signed body is hashed whole, up to %u bytes here: use "
			 "credential_signing: sigv4:no_body for larger ones",
			 SIGV4_BODY_MAX);
		return refuse(c, 413, "signing_body_too_large", detail);
	}
	const char *body = c->cin.data + consumed;
	size_t len = (size_t)req->framing.content_length;
	if (c->mw_replaced) {
		body = c->mw_body.data;
		len = c->mw_body.len;
	} else if (c->cin.len < consumed + len) {
		proxy_body_continue(c, req); /* as upstream does for boto3 */
		return RPC_WAIT; /* the head is parsed again when more bytes come */
	}
	sigv4_sha256_hex(len ? body : "", len, c->sig_payload);
	return RPC_FORWARD;
}

enum rpc_step proxy_sigv4_prepare(struct conn *c, const struct http_request *req, size_t consumed)
{
	c->signing = false;
	if (!c->ep || c->ep->signing == POLICY_SIGN_NONE)
		return RPC_FORWARD;
	if (!conn_upstream_is_tls(c))
		return refuse(c, 403, "credential_plaintext",
			      "requests are only signed inside TLS to the upstream");
	char region[64];
	if (!key_of(c, "AWS_ACCESS_KEY_ID") || !key_of(c, "AWS_SECRET_ACCESS_KEY"))
		return refuse(c, 403, "signing_credentials_missing",
			      "the endpoint's provider holds no AWS_ACCESS_KEY_ID and "
			      "AWS_SECRET_ACCESS_KEY to sign with");
	if (!region_for(c, region, sizeof region))
		return refuse(c, 403, "signing_region_unknown",
			      "no AWS region in the host name: set signing_region on the endpoint");
	const char *why = NULL, *mode = payload_mode(c, req, &why);
	if (!mode)
		return refuse(c, 400, "signing_payload_unsupported", why);
	if (*mode) {
		snprintf(c->sig_payload, sizeof c->sig_payload, "%s", mode);
	} else {
		enum rpc_step st = hash_body(c, req, consumed);
		if (st != RPC_FORWARD)
			return st;
	}
	c->signing = true;
	return RPC_FORWARD;
}

/* Which of the agent's headers are signed as forwarded: host, content-type,
 * content-length (a rewritten body's length is the proxy's own), as
 * upstream; and its other x-amz-* headers (x-amz-acl, x-amz-target...),
 * which S3 refuses to take unsigned. */
static bool signs(const struct conn *c, struct http_slice n)
{
	if (str_ieq(n.p, n.len, "host", 4) || str_ieq(n.p, n.len, "content-type", 12))
		return true;
	if (str_ieq(n.p, n.len, "content-length", 14))
		return !c->mw_replaced;
	return n.len > 6 && str_ieq(n.p, 6, "x-amz-", 6) && !proxy_sigv4_drops(c, n);
}

static size_t signed_from_agent(const struct conn *c, const struct http_request *req,
				struct sigv4_header *h, size_t n)
{
	for (size_t i = 0; i < req->headers.n && n < SIGV4_HEADERS_MAX - 4; i++) {
		const struct http_header *x = &req->headers.v[i];
		if (signs(c, x->name))
			h[n++] = (struct sigv4_header){ x->name.p, x->value.p, x->name.len,
							x->value.len };
	}
	return n;
}

int proxy_sigv4_sign(struct conn *c, const struct http_request *req, const char *method,
		     const char *canon, os_error *err)
{
	const char *access = key_of(c, "AWS_ACCESS_KEY_ID");
	const char *secret = key_of(c, "AWS_SECRET_ACCESS_KEY");
	const char *token = key_of(c, "AWS_SESSION_TOKEN");
	char region[64], date[SIGV4_DATE_LEN + 1], length[24];
	if (!access || !secret || !region_for(c, region, sizeof region))
		return os_error_set(err, EINVAL, "sigv4: the signing keys went away");
	sigv4_amz_date(time(NULL), date);
	struct sigv4_header h[SIGV4_HEADERS_MAX];
	size_t n = signed_from_agent(c, req, h, 0);
	if (c->mw_replaced) {
		snprintf(length, sizeof length, "%zu", c->mw_body.len);
		h[n++] = (struct sigv4_header){ "content-length", length, 14, strlen(length) };
	}
	h[n++] = (struct sigv4_header){ "x-amz-date", date, 10, SIGV4_DATE_LEN };
	h[n++] = (struct sigv4_header){ "x-amz-content-sha256", c->sig_payload, 20,
					strlen(c->sig_payload) };
	if (token)
		h[n++] = (struct sigv4_header){ "x-amz-security-token", token, 20, strlen(token) };
	struct sigv4_request r = { .method = method,
				   .path = canon,
				   .path_len = strlen(canon),
				   .query = req->has_query ? req->query.p : "",
				   .query_len = req->has_query ? req->query.len : 0,
				   .headers = h,
				   .n_headers = n,
				   .payload_hash = c->sig_payload,
				   .amz_date = date,
				   .region = region,
				   .service = c->ep->signing_service,
				   .single_encode = strcmp(c->ep->signing_service, "s3") == 0 };
	struct sigv4_keys keys = { access, secret };
	_cleanup_buf_ struct buf auth;
	buf_init(&auth, 4096);
	struct buf *o = &c->uout;
	if (sigv4_authorization(&r, &keys, &auth, err) < 0 ||
	    http_write_header(o, "x-amz-date", date, err) < 0 ||
	    http_write_header(o, "x-amz-content-sha256", c->sig_payload, err) < 0 ||
	    (token && http_write_header(o, "x-amz-security-token", token, err) < 0) ||
	    http_write_header(o, "authorization", auth.data, err) < 0)
		return -1;
	conn_mark_secret_holder(c); /* it now holds the key id (and the session token) */
	return 0;
}
