/* proxy_body_scan.c - OpenShell's fail-closed check of request bodies on
 * credential-bound endpoints (its ADR on allow_uninspected_credentials: the
 * proxy "streams every POST body and fail-closes on the first byte matching
 * OpenShell's placeholder syntax" unless the endpoint rewrites placeholders
 * in bodies or sets allow_uninspected_credentials). A placeholder there
 * would reach the upstream unresolved, never as its secret; the request is
 * refused so that nothing is sent that the policy did not say may pass
 * uninspected. The search runs on the body's data (chunk framing removed),
 * across reads: the last BODY_SCAN_TAIL bytes of each read are kept to
 * complete a placeholder split by a read or a chunk boundary. */
#include <string.h>

#include "proxy_internal.h"

bool body_scan_wanted(const struct conn *c)
{
	const struct policy_endpoint *ep = c->ep;
	return ep && ep->credential_provider && !ep->request_body_credential_rewrite &&
	       !ep->allow_uninspected_credentials;
}

void body_scan_feed(struct body *b, const char *p, size_t n)
{
	static const char needle[] = CRED_PLACEHOLDER_PREFIX;
	const size_t k = sizeof needle - 1;
	_Static_assert(sizeof needle - 2 == BODY_SCAN_TAIL, "tail is the prefix minus one byte");
	if (b->found || n == 0)
		return;
	/* Across the boundary: the kept tail and this read's first bytes. */
	char seam[2 * BODY_SCAN_TAIL];
	size_t head = n < BODY_SCAN_TAIL ? n : BODY_SCAN_TAIL;
	memcpy(seam, b->tail, b->tail_len);
	memcpy(seam + b->tail_len, p, head);
	if (memmem(seam, b->tail_len + head, needle, k) || memmem(p, n, needle, k)) {
		b->found = true;
		return;
	}
	/* Keep the last BODY_SCAN_TAIL bytes of tail + p. */
	if (n >= BODY_SCAN_TAIL) {
		memcpy(b->tail, p + n - BODY_SCAN_TAIL, BODY_SCAN_TAIL);
		b->tail_len = BODY_SCAN_TAIL;
		return;
	}
	size_t keep = b->tail_len + n > BODY_SCAN_TAIL ? BODY_SCAN_TAIL - n : b->tail_len;
	memmove(b->tail, b->tail + b->tail_len - keep, keep);
	memcpy(b->tail + keep, p, n);
	b->tail_len = keep + n;
}

void body_scan_ahead(struct conn *c, size_t consumed)
{
	if (c->mw_replaced) {
		body_scan_feed(&c->req_body, c->mw_body.data, c->mw_body.len);
		return;
	}
	if (c->req_body.state != BODY_LENGTH || c->cin.len <= consumed)
		return;
	/* A scratch scan: the body's own state is fed as the bytes are sent. */
	struct body look = { .scan = true };
	size_t n = c->cin.len - consumed;
	if (n > c->req_body.remaining)
		n = (size_t)c->req_body.remaining;
	body_scan_feed(&look, c->cin.data + consumed, n);
	c->req_body.found = look.found;
}

enum step_result body_scan_refuse(struct conn *c)
{
	buf_reset(&c->uout);
	if (c->upstream.fd >= 0)
		upstream_drop(c);
	if (c->resp_head_done) {
		audit_decision(c, "http", "deny", "credential_in_body", NULL, NULL,
			       "a credential placeholder in the request body; the answer had "
			       "begun, the connection is closed");
		conn_close(c);
		return STEP_CLOSED;
	}
	reply_error(c, 403, "policy_denied",
		    "the request body holds a credential placeholder: this endpoint neither "
		    "rewrites placeholders in bodies (request_body_credential_rewrite) nor lets "
		    "them pass uninspected (allow_uninspected_credentials)",
		    "credential_in_body");
	return STEP_PROGRESS;
}
