/* proxy_local.c - the proxy's own answers to the agent at
 * http://policy.local (upstream's routes and shapes):
 * - `GET /v1/denials[?last=N]` (default 10, at most 100): the sandbox's
 *   recent denials (denials.h), so that an agent whose HTTPS request failed
 *   with an opaque "tunnel failed" can find out why;
 * - `GET /v1/policy/current`: the policy in force, so that it can see what
 *   is allowed and ask for a change that fits.
 * Nothing is forwarded and nothing here needs a policy rule: what it
 * reveals is what the agent's own processes were refused and the rules
 * they run under. */
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

/* The text the generation in force was compiled from, comments and all
 * (upstream re-serialises its policy object; the text is what the
 * operator wrote and what `openshell policy get` shows). */
static void serve_policy_current(struct conn *c, const struct http_request *req)
{
	(void)req;
	struct policy_gen *g = proxy_current(c->proxy, NULL);
	const struct policy_doc *doc = policy_gen_doc(g);
	json_t *text = json_stringn(doc->source, doc->source_len);
	policy_unref(g);
	if (!text) {
		reply_local_json(c, 500,
				 json_pack("{s:s, s:s}", "error", "policy_serialize_failed",
					   "detail",
					   "the policy text is not UTF-8, or memory ran out"));
		return;
	}
	reply_local_json(c, 200, json_pack("{s:s, s:o}", "format", "yaml", "policy_yaml", text));
}

static void serve_denials(struct conn *c, const struct http_request *req)
{
	json_t *body = denials_json(proxy_denials(c->proxy), last_param(req));
	if (!body) {
		reply_local_json(c, 503,
				 json_pack("{s:s, s:s}", "error", "out_of_memory", "detail",
					   "cannot list denials now"));
		return;
	}
	reply_local_json(c, 200, body);
}

void proxy_serve_local(struct conn *c, const struct http_request *req)
{
	static const struct {
		const char *path;
		void (*serve)(struct conn *c, const struct http_request *req);
	} routes[] = {
		{ "/v1/denials", serve_denials },
		{ "/v1/policy/current", serve_policy_current },
	};
	size_t i = 0;
	while (i < sizeof routes / sizeof routes[0] && !slice_is(req->path, routes[i].path))
		i++;
	if (i == sizeof routes / sizeof routes[0]) {
		char detail[200];
		snprintf(detail, sizeof detail, "policy.local route not found: %.*s %.*s",
			 (int)(req->method.len > 16 ? 16 : req->method.len), req->method.p,
			 (int)(req->path.len > 120 ? 120 : req->path.len), req->path.p);
		reply_local_json(c, 404,
				 json_pack("{s:s, s:s}", "error", "not_found", "detail", detail));
		return;
	}
	if (!slice_is(req->method, "GET")) {
		char detail[80];
		snprintf(detail, sizeof detail, "%s is read with GET", routes[i].path);
		reply_local_json(
			c, 405,
			json_pack("{s:s, s:s}", "error", "method_not_allowed", "detail", detail));
		return;
	}
	routes[i].serve(c, req);
}
