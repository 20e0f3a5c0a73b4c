/* proxy_local.c - the proxy's own answers to the agent at
 * http://policy.local: today `GET /v1/denials[?last=N]` (default 10, at most
 * 100, as upstream), the sandbox's recent denials (denials.h), so that an
 * agent whose HTTPS request failed with an opaque "tunnel failed" can find
 * out why and ask for a policy change. Nothing is
 * forwarded and nothing here needs a policy rule: what it reveals is what
 * the agent's own processes were refused. */
#include <stdio.h>
#include <string.h>

#include "denials.h"
#include "proxy_internal.h"

static bool slice_is(struct http_slice s, const char *want)
{
	return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

/* `last=N` in the query (upstream's name), clamped to 1..DENIALS_KEPT;
 * absent, empty or not a number: the default. */
static size_t last_param(const struct http_request *req)
{
	const char *p = req->has_query ? req->query.p : NULL;
	const char *end = p ? p + req->query.len : NULL;
	while (p && p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		if (stop - p > 5 && memcmp(p, "last=", 5) == 0) {
			size_t n = 0;
			const char *q;
			for (q = p + 5; q < stop && *q >= '0' && *q <= '9'; q++)
				if (n <= DENIALS_KEPT) /* saturates: no overflow */
					n = n * 10 + (size_t)(*q - '0');
			if (q != stop)
				return DENIALS_DEFAULT_LAST;
			return n < 1 ? 1 : n > DENIALS_KEPT ? DENIALS_KEPT : n;
		}
		p = stop + 1;
	}
	return DENIALS_DEFAULT_LAST;
}

void proxy_serve_local(struct conn *c, const struct http_request *req)
{
	if (!slice_is(req->path, "/v1/denials")) {
		char detail[200];
		snprintf(detail, sizeof detail, "policy.local route not found: %.*s %.*s",
			 (int)(req->method.len > 16 ? 16 : req->method.len), req->method.p,
			 (int)(req->path.len > 120 ? 120 : req->path.len), req->path.p);
		reply_local_json(c, 404,
				 json_pack("{s:s, s:s}", "error", "not_found", "detail", detail));
		return;
	}
	if (!slice_is(req->method, "GET")) {
		reply_local_json(c, 405,
				 json_pack("{s:s, s:s}", "error", "method_not_allowed", "detail",
					   "/v1/denials is read with GET"));
		return;
	}
	json_t *body = denials_json(proxy_denials(c->proxy), last_param(req));
	if (!body) {
		reply_local_json(c, 503,
				 json_pack("{s:s, s:s}", "error", "out_of_memory", "detail",
					   "cannot list denials now"));
		return;
	}
	reply_local_json(c, 200, body);
}
