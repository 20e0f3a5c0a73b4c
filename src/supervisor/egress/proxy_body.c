/* proxy_body.c - a request body inspected whole (json-rpc, mcp, graphql):
 * it must have a Content-Length (a chunked body is not re-framed here),
 * stay within the endpoint's cap, and be all in the agent's input buffer
 * before it is judged. Never lets a body through uninspected. */
#include <stdio.h>

#include "proxy_internal.h"

enum rpc_step proxy_whole_body(struct conn *c, const struct http_request *req,
			       const struct whole_body *w, size_t consumed)
{
	if (req->framing.chunked) {
		char detail[128];
		snprintf(detail, sizeof detail,
			 "%s bodies are inspected whole: send a Content-Length", w->what);
		reply_error(c, 411, "length_required", detail, w->chunked_reason);
		return RPC_ANSWERED;
	}
	if (req->framing.content_length > w->cap) {
		char detail[160];
		snprintf(detail, sizeof detail, "%s body of %llu bytes exceeds %s %llu", w->what,
			 (unsigned long long)req->framing.content_length, w->cap_name,
			 (unsigned long long)w->cap);
		reply_error(c, 413, "payload_too_large", detail, w->too_large_reason);
		return RPC_ANSWERED;
	}
	if (c->cin.len < consumed + (size_t)req->framing.content_length)
		return RPC_WAIT; /* the head is parsed again when more bytes come */
	return RPC_FORWARD;
}

void proxy_body_continue(struct conn *c, const struct http_request *req)
{
	if (!req->expect_100 || c->continue_sent)
		return;
	buf_append_str(&c->cout, "HTTP/1.1 100 Continue\r\n\r\n", NULL);
	c->continue_sent = true;
}
