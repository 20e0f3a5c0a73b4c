/* policy_route.c - which endpoint judges one request (OpenShell's route
 * selection, crates/openshell-sandbox/src/l7/relay.rs
 * select_l7_config_for_path and l7/mod.rs endpoint_path_matches).
 *
 * Several endpoints carrying request settings may share a host:port and be
 * told apart by their `path`: a REST API under /repos/ beside a GraphQL one
 * at /graphql, or a credential-bound path beside an unbound one. Each request
 * is judged by the endpoint whose path matches it; when several match, the
 * most specific one (the most bytes that are not `*`) wins, and among equals
 * the first in policy order (the smallest policy name, then document order),
 * which is also the L4 tie-break. That endpoint's settings (protocol,
 * enforcement, credential binding, encoded slashes) apply to that request
 * only; a kept-alive connection chooses again for every request. Its rules
 * judge the request together with the rest/websocket rules of the other
 * matching endpoints (merge_sibling_rules), as upstream's Rego does. */
#include <stdio.h>
#include <string.h>

#include "canon.h"

#include "hostglob.h"
#include "pathglob.h"
#include "policy_gen_int.h"

/* OpenShell: empty, `**` and "/" + `**` match everything; an exact match;
 * a trailing "/" + `**` matches the prefix itself and everything below it;
 * otherwise a glob (the glob crate without require_literal_separator): `*`
 * and `**` both match any run of bytes, '/' included, and a `**` followed
 * by '/' takes that '/' too (so it also matches no component); a `**` that
 * is not a whole component, or three stars, make the pattern invalid there,
 * which matches nothing. (`?` and `[..]` are refused by the loader.) */
bool policy_endpoint_path_match(const char *pattern, const char *path)
{
	if (!pattern || !pattern[0] || !strcmp(pattern, "**") || !strcmp(pattern, "/**"))
		return true;
	if (!strcmp(pattern, path))
		return true;
	size_t n = strlen(pattern);
	if (n >= 3 && !strcmp(pattern + n - 3, "/**") && !memchr(pattern, '*', n - 3)) {
		size_t k = n - 3;
		return !strncmp(path, pattern, k) && (path[k] == '\0' || path[k] == '/');
	}
	char glob[POLICY_MAX_PATH_LEN + 1];
	size_t o = 0;
	if (n > POLICY_MAX_PATH_LEN)
		return false;
	for (size_t i = 0; i < n;) {
		if (pattern[i] != '*') {
			glob[o++] = pattern[i++];
			continue;
		}
		size_t start = i;
		while (i < n && pattern[i] == '*')
			i++;
		if (i - start > 2)
			return false;
		if (i - start == 2) {
			bool whole = (start == 0 || pattern[start - 1] == '/') &&
				     (i == n || pattern[i] == '/');
			if (!whole)
				return false;
			if (i < n)
				i++; /* the '/' after it is the star's too */
		}
		glob[o++] = '*';
	}
	glob[o] = '\0';
	return glob_star_match(glob, path);
}

size_t policy_path_specificity(const char *pattern)
{
	size_t n = 0;
	for (const char *p = pattern; p && *p; p++)
		n += *p != '*';
	return n;
}

struct route_ctx {
	const struct policy_gen *g;
	uint16_t port;
	const char *const *chain;
	size_t n;
	const char *path; /* NULL: only ask whether some candidate needs TLS */
	const struct policy_endpoint *best;
	size_t best_rank;
	bool needs_tls;
};

static bool earlier(const struct policy_endpoint *a, const struct policy_endpoint *b)
{
	return a->policy_index != b->policy_index ? a->policy_index < b->policy_index
						  : a->index < b->index;
}

static bool route_visit(const struct policy_endpoint *ep, void *p)
{
	struct route_ctx *c = p;
	if (!endpoint_has_config(ep) || !endpoint_has_port(ep, c->port))
		return true;
	if (c->chain && !bin_set_match(&c->g->bins[ep->policy_index], c->chain, c->n))
		return true;
	if (ep->tls != POLICY_TLS_SKIP &&
	    (policy_protocol_inspected(ep->protocol) || ep->credential_provider))
		c->needs_tls = true;
	if (!c->path || !policy_endpoint_path_match(ep->path, c->path))
		return true;
	size_t rank = policy_path_specificity(ep->path);
	if (!c->best || rank > c->best_rank || (rank == c->best_rank && earlier(ep, c->best))) {
		c->best = ep;
		c->best_rank = rank;
	}
	return true;
}

/* host is normalised first, as policy_decide_connect does; false when it
 * is not a valid host (no endpoint can then match). */
static bool route(const struct policy_gen *g, const char *host, uint16_t port,
		  const char *const *chain, size_t n, const char *path, struct route_ctx *c)
{
	*c = (struct route_ctx){
		.g = g, .port = port, .chain = n ? chain : NULL, .n = n, .path = path
	};
	char h[HOST_NAME_CAP];
	if (!host || host_normalize(host, strlen(host), h, sizeof h, NULL) < 0)
		return false;
	for_each_host_match(g, h, route_visit, c);
	return true;
}

const struct policy_endpoint *policy_route_request(const struct policy_gen *g,
						   const struct policy_endpoint *admitted,
						   const char *host, uint16_t port,
						   const char *const *chain, size_t n,
						   const char *path)
{
	/* Only plain L4 endpoints admitted the caller: nothing to choose from. */
	if (!admitted || !endpoint_has_config(admitted))
		return admitted;
	struct route_ctx c;
	return route(g, host, port, chain, n, path, &c) ? c.best : NULL;
}

bool policy_route_needs_tls(const struct policy_gen *g, const struct policy_endpoint *admitted,
			    const char *host, uint16_t port, const char *const *chain, size_t n)
{
	if (!admitted || !endpoint_has_config(admitted))
		return false;
	struct route_ctx c;
	return route(g, host, port, chain, n, NULL, &c) && c.needs_tls;
}

/* OpenShell's Rego judges a request by the rules of every endpoint of every
 * policy admitting the caller whose host, port and path match it
 * (allow_request / deny_request: any allow rule allows, any deny rule
 * denies), while the routed endpoint alone supplies the settings. So do we,
 * for rest and websocket rules: the endpoints besides the routed one, in
 * policy order, that say so of this request. */
struct sibling_ctx {
	const struct policy_gen *g;
	const struct policy_endpoint *routed;
	uint16_t port;
	const char *const *chain; /* NULL: any caller (endpoint-only) */
	size_t n;
	bool deny;
	const char *m, *canon, *qs;
	size_t qlen;
	const struct policy_endpoint *found;
	char rule[64];
};

static bool sibling_visit(const struct policy_endpoint *ep, void *p)
{
	struct sibling_ctx *c = p;
	if (ep == c->routed || !endpoint_has_port(ep, c->port) ||
	    (c->chain && !bin_set_match(&c->g->bins[ep->policy_index], c->chain, c->n)))
		return true;
	if (!policy_l7_rules_say(ep, c->deny, c->m, c->canon, c->qs, c->qlen, c->rule,
				 sizeof c->rule))
		return true;
	c->found = ep;
	return false;
}

static void merge_sibling_rules(const struct policy_gen *g, const struct policy_endpoint *ep,
				const char *host, uint16_t port, const char *const *chain, size_t n,
				const char *method, const char *raw_target, const char *canon,
				struct policy_decision *out)
{
	if (!host || !policy_protocol_rest_rules(ep->protocol) ||
	    (out->reason != POLICY_R_ALLOWED && out->reason != POLICY_R_NO_MATCHING_RULE))
		return;
	char m[40], h[HOST_NAME_CAP], path[8192];
	const char *qs = NULL;
	size_t qlen = 0;
	const char *t = raw_target ? raw_target : "";
	/* The query as the routed endpoint's canonicalisation splits it off. */
	if (!policy_l7_method_norm(method, m, sizeof m) ||
	    host_normalize(host, strlen(host), h, sizeof h, NULL) < 0 ||
	    canon_request_path_opts(t, strlen(t),
				    ep->allow_encoded_slash ? CANON_ALLOW_ENCODED_SLASH : 0, path,
				    sizeof path, &qs, &qlen) != CANON_OK)
		return;
	struct sibling_ctx c = { .g = g,
				 .routed = ep,
				 .port = port,
				 .chain = n ? chain : NULL,
				 .n = n,
				 .deny = true,
				 .m = m,
				 .canon = canon,
				 .qs = qs,
				 .qlen = qlen };
	for_each_host_match(g, h, sibling_visit, &c);
	if (!c.found && out->reason == POLICY_R_NO_MATCHING_RULE) {
		c.deny = false;
		for_each_host_match(g, h, sibling_visit, &c);
	}
	if (!c.found)
		return;
	snprintf(out->rule, sizeof out->rule, "%s", c.rule);
	out->policy = g->doc->networks[c.found->policy_index].name;
	policy_l7_finish(out, ep, c.deny, c.deny ? POLICY_R_DENY_RULE : POLICY_R_ALLOWED, m, canon);
}

void policy_decide_routed_request(const struct policy_gen *g,
				  const struct policy_endpoint *admitted, const char *host,
				  uint16_t port, const char *const *chain, size_t n,
				  const char *method, const char *raw_target, char *canon,
				  size_t canon_cap, struct policy_decision *out)
{
	/* Routing reads the path with encoded slashes kept: whether the chosen
	 * endpoint accepts them is its own decision, made below. A target that
	 * does not canonicalise even so stays with `admitted`, which refuses it. */
	char path[8192];
	const char *t = raw_target ? raw_target : "";
	const struct policy_endpoint *ep = admitted;
	if (canon_request_path_opts(t, strlen(t), CANON_ALLOW_ENCODED_SLASH, path, sizeof path,
				    NULL, NULL) == CANON_OK &&
	    !(ep = policy_route_request(g, admitted, host, port, chain, n, path))) {
		memset(out, 0, sizeof *out);
		out->verdict = POLICY_DENY;
		out->reason = POLICY_R_NO_MATCHING_RULE;
		out->policy = g->doc->networks[admitted->policy_index].name;
		snprintf(out->rule, sizeof out->rule, "path");
		snprintf(out->detail, sizeof out->detail,
			 "%.40s %.200s: no L7 endpoint path matched request", method ? method : "",
			 path);
		if (canon && canon_cap)
			snprintf(canon, canon_cap, "%s", path);
		return;
	}
	char local[8192];
	if (!canon || !canon_cap) {
		canon = local;
		canon_cap = sizeof local;
	}
	policy_decide_request(g, ep, method, raw_target, canon, canon_cap, out);
	merge_sibling_rules(g, ep, host, port, n ? chain : NULL, n, method, raw_target, canon, out);
}
