/* policy_overlap.c - load-time check that endpoints able to match the same
 * host:port agree on what OpenShell calls connection metadata (explicit tcp,
 * tls, allowed_ips) and, when both carry request settings, on those
 * (protocol, enforcement, credential binding, ...), so a connection never has
 * two meanings. A plain L4 endpoint and an L7 one do not compete. Must stay
 * near O(n log n) for exact and `*.`/`**.` hosts; other globs and hostless
 * endpoints (rare) are compared with every endpoint. */
#include <stdlib.h>
#include <string.h>

#include "policy_load_int.h"

struct eref {
	struct policy_endpoint *ep;
	const char *name; /* exact host, or the domain after `*.` / `**.` */
	int kind; /* 0 exact, 1 `*.`, 2 `**.`, 3 other glob or hostless */
	size_t ord; /* document order */
	bool reported;
};

static int eref_cmp(const void *a, const void *b)
{
	const struct eref *x = *(struct eref *const *)a, *y = *(struct eref *const *)b;
	int c = strcmp(x->name, y->name);
	return c ? c : x->kind - y->kind;
}

static bool ports_meet(const struct policy_endpoint *a, const struct policy_endpoint *b,
		       uint16_t *port)
{
	for (size_t i = 0; i < a->n_ports; i++)
		for (size_t j = 0; j < b->n_ports; j++)
			if (a->ports[i] == b->ports[j]) {
				*port = a->ports[i];
				return true;
			}
	return false;
}

static bool ips_subset(const struct policy_endpoint *x, const struct policy_endpoint *y)
{
	for (size_t i = 0; i < x->n_allowed; i++) {
		bool found = false;
		for (size_t j = 0; j < y->n_allowed && !found; j++)
			found = x->allowed_ips[i].prefix == y->allowed_ips[j].prefix &&
				cidr_contains(&y->allowed_ips[j], &x->allowed_ips[i].addr);
		if (!found)
			return false;
	}
	return true;
}

/* allowed_ips compared as sets (order and duplicates do not matter). */
static bool same_ips(const struct policy_endpoint *a, const struct policy_endpoint *b)
{
	return ips_subset(a, b) && ips_subset(b, a);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Upstream's endpoint_contributes_request_pipeline_metadata: any protocol
 * but tcp (sql included: two endpoints that would parse one request as SQL
 * and as REST disagree), allowed_ips, an explicit tls, a credential binding. */
static bool has_request_config(const struct policy_endpoint *e)
{
	return policy_protocol_inspected(e->protocol) || e->protocol == POLICY_PROTO_SQL ||
	       e->n_allowed || e->tls_explicit || e->credential_provider;
}

/* Could one request be routed to either endpoint as a tie? Each request
 * goes to the most specific matching path (policy_route.c), so paths of
 * different specificity never tie, nor do two different literal paths
 * (each matches only itself). */
static bool paths_may_tie(const char *a, const char *b)
{
	if (policy_path_specificity(a) != policy_path_specificity(b))
		return false;
	if (a && b && !strchr(a, '*') && !strchr(b, '*'))
		return !strcmp(a, b);
	return true;
}

/* The first field two overlapping endpoints disagree on, or NULL. */
static const char *disagreement(const struct policy_endpoint *a, const struct policy_endpoint *b)
{
	if ((a->protocol == POLICY_PROTO_TCP) != (b->protocol == POLICY_PROTO_TCP))
		return "protocol (tcp)";
	if (a->tls != b->tls)
		return "tls";
	if (!same_ips(a, b))
		return "allowed_ips";
	if (!has_request_config(a) || !has_request_config(b) || !paths_may_tie(a->path, b->path))
		return NULL;
	if (a->protocol != b->protocol)
		return "protocol";
	if (a->enforcement != b->enforcement)
		return "enforcement";
	if (!str_eq(a->credential_provider, b->credential_provider))
		return "credential_binding.provider";
	if (a->allow_encoded_slash != b->allow_encoded_slash)
		return "allow_encoded_slash";
	if (a->request_body_credential_rewrite != b->request_body_credential_rewrite)
		return "request_body_credential_rewrite";
	if (a->signing != b->signing || !str_eq(a->signing_service, b->signing_service) ||
	    !str_eq(a->signing_region, b->signing_region))
		return "credential_signing";
	if (a->json_rpc_max_body_bytes != b->json_rpc_max_body_bytes)
		return "json_rpc.max_body_bytes";
	if (a->mcp_strict_tool_names != b->mcp_strict_tool_names)
		return "mcp.strict_tool_names";
	if (a->mcp_allow_all_known_methods != b->mcp_allow_all_known_methods)
		return "mcp.allow_all_known_mcp_methods";
	if (a->graphql_max_body_bytes != b->graphql_max_body_bytes)
		return "graphql_max_body_bytes";
	if (a->graphql_allow_registered != b->graphql_allow_registered)
		return "persisted_queries";
	if (a->websocket_credential_rewrite != b->websocket_credential_rewrite)
		return "websocket_credential_rewrite";
	return NULL;
}

static void conflict(struct lctx *c, struct eref *x, struct eref *y)
{
	uint16_t port;
	const char *field = disagreement(x->ep, y->ep);
	if (!field || !ports_meet(x->ep, y->ep, &port))
		return;
	struct eref *later = x->ord > y->ord ? x : y, *earlier = later == x ? y : x;
	if (later->reported)
		return;
	later->reported = true;
	const struct policy_network *nets = c->doc->networks;
	struct ynode at = { .line = later->ep->line, .col = later->ep->col };
	size_t old = kp_push(c, "network_policies.%s.endpoints[%zu]",
			     nets[later->ep->policy_index].name, later->ep->index);
	lerr(c, &at,
	     "overlaps network_policies.%s.endpoints[%zu] (%s:%u:%u) on port %u but disagrees "
	     "on %s (endpoints that can match the same host:port must agree, as in OpenShell)",
	     nets[earlier->ep->policy_index].name, earlier->ep->index, c->file, earlier->ep->line,
	     earlier->ep->col, (unsigned)port, field);
	kp_pop(c, old);
}

/* Could one host match both label globs? `*` is any run within a label. */
static bool label_meet(const char *p, size_t pn, const char *q, size_t qn)
{
	/* reach[i][j]: p[0..i) and q[0..j) can produce the same string. */
	static _Thread_local bool reach[64][64];
	if (pn > 63 || qn > 63)
		return true;
	for (size_t i = 0; i <= pn; i++)
		for (size_t j = 0; j <= qn; j++) {
			bool r = i == 0 && j == 0;
			if (!r && i > 0 && p[i - 1] == '*')
				r = reach[i - 1][j] || (j > 0 && reach[i][j - 1]);
			if (!r && j > 0 && q[j - 1] == '*')
				r = reach[i][j - 1] || (i > 0 && reach[i - 1][j]);
			if (!r && i > 0 && j > 0 && p[i - 1] == q[j - 1])
				r = reach[i - 1][j - 1];
			reach[i][j] = r;
		}
	return reach[pn][qn];
}

/* Could one host match both patterns (NULL: hostless, matches any)? */
static bool hosts_meet(const char *a, const char *b)
{
	if (!a || !b)
		return true;
	size_t ae = strlen(a), be = strlen(b);
	for (;;) {
		size_t ab = ae, bb = be;
		while (ab > 0 && a[ab - 1] != '.')
			ab--;
		while (bb > 0 && b[bb - 1] != '.')
			bb--;
		if ((ab == 0 && ae == 2 && a[0] == '*' && a[1] == '*') ||
		    (bb == 0 && be == 2 && b[0] == '*' && b[1] == '*'))
			return true;
		if (!label_meet(a + ab, ae - ab, b + bb, be - bb))
			return false;
		if (ab == 0 || bb == 0)
			return ab == 0 && bb == 0;
		ae = ab - 1;
		be = bb - 1;
	}
}

/* First index in v[0..n) (sorted by name) whose name equals key, or n. */
static size_t lower_bound(struct eref *const *v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(v[mid]->name, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Globs with domain == name, restricted by kind_mask (bit k for kind k). */
static void against_domain(struct lctx *c, struct eref *e, struct eref **g, size_t ng,
			   const char *name, unsigned kind_mask)
{
	for (size_t i = lower_bound(g, ng, name); i < ng && !strcmp(g[i]->name, name); i++)
		if ((kind_mask >> g[i]->kind) & 1u && g[i] != e)
			conflict(c, e, g[i]);
}

static void check_one(struct lctx *c, struct eref *e, struct eref **all, size_t n, struct eref **g,
		      size_t ng)
{
	if (e->kind == 0) {
		for (size_t i = lower_bound(all, n, e->name);
		     i < n && !strcmp(all[i]->name, e->name); i++)
			if (all[i]->kind == 0 && all[i] != e)
				conflict(c, e, all[i]);
	} else {
		against_domain(c, e, g, ng, e->name, 6u); /* `*.d` and `**.d` meet */
	}
	/* Walk the parent domains: `**.s` covers everything below s, `*.s` only
	 * one label below (so only the exact host's direct parent). */
	int removed = e->kind == 0 ? 0 : 1;
	for (const char *s = strchr(e->name, '.'); s; s = strchr(s + 1, '.')) {
		removed++;
		unsigned mask = (e->kind == 0 && removed == 1) ? 6u : 4u;
		against_domain(c, e, g, ng, s + 1, mask);
	}
}

void check_overlaps(struct lctx *c)
{
	struct policy_doc *d = c->doc;
	size_t n = d->n_endpoints_total, k = 0, ng = 0;
	if (n < 2)
		return;
	struct eref *base = calloc(n, sizeof *base);
	struct eref **all = calloc(n, sizeof *all), **g = calloc(n, sizeof *g);
	if (!base || !all || !g) {
		lerr_oom(c);
		goto out;
	}
	size_t ns = 0;
	for (size_t i = 0; i < d->n_networks; i++)
		for (size_t j = 0; j < d->networks[i].n_endpoints && k < n; j++, k++) {
			struct policy_endpoint *ep = &d->networks[i].endpoints[j];
			const char *h = ep->host;
			int kind = !h ? 3 : !strncmp(h, "**.", 3) ? 2 : !strncmp(h, "*.", 2);
			if (kind != 3 && strchr(h + kind + (kind > 0), '*'))
				kind = 3;
			base[k] = (struct eref){ .ep = ep,
						 .name = kind == 3 ? "" : h + kind + (kind > 0),
						 .kind = kind,
						 .ord = k };
		}
	/* Scanned endpoints stay out of the index and meet everything directly. */
	for (size_t i = 0; i < k; i++)
		if (base[i].kind != 3)
			all[ns++] = &base[i];
	qsort(all, ns, sizeof *all, eref_cmp);
	for (size_t i = 0; i < ns; i++)
		if (all[i]->kind)
			g[ng++] = all[i];
	for (size_t i = 0; i < ns; i++)
		check_one(c, all[i], all, ns, g, ng);
	for (size_t i = 0; i < k; i++) {
		if (base[i].kind != 3)
			continue;
		for (size_t j = 0; j < k; j++)
			if (j != i && hosts_meet(base[i].ep->host, base[j].ep->host))
				conflict(c, &base[i], &base[j]);
	}
out:
	free(base);
	free(all);
	free(g);
}
