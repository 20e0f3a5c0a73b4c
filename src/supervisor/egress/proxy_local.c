/* proxy_local.c - the proxy's own answers to the agent at
 * http://policy.local: today `GET /v1/denials`, the sandbox's recent denials
 * (denials.h), so that an agent whose HTTPS request failed with an opaque
 * "tunnel failed" can find out why and ask for a policy change. Nothing is
 * forwarded and nothing here needs a policy rule: what it reveals is what
 * the agent's own processes were refused. */
#include <string.h>

#include "denials.h"
#include "proxy_internal.h"

static bool slice_is(struct http_slice s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

void proxy_serve_local(struct conn *c, const struct http_request *req)
{
	if (!slice_is(req->path, "/v1/denials")) {
		reply_local_json(c, 404,
				 json_pack("{s:s, s:s}", "error", "not_found", "detail",
					   "policy.local serves GET /v1/denials"));
		return;
	}
	if (!slice_is(req->method, "GET")) {
		reply_local_json(c, 405,
				 json_pack("{s:s, s:s}", "error", "method_not_allowed", "detail",
					   "/v1/denials is read with GET"));
		return;
	}
	json_t *body = denials_json(proxy_denials(c->proxy));
	if (!body) {
		reply_local_json(c, 503,
				 json_pack("{s:s, s:s}", "error", "out_of_memory", "detail",
					   "cannot list denials now"));
		return;
	}
	reply_local_json(c, 200, body);
}
