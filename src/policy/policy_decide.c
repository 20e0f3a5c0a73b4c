/* policy_decide.c - L4 (CONNECT), SSRF and credential decisions against a
 * compiled generation. Default deny; never allocates, never locks, and never
 * puts a query string or secret into a decision's detail. */
#include <stdio.h>
#include <string.h>

#include "hostglob.h"
#include "parse.h"
#include "policy_gen_int.h"

/* Calls fn for every endpoint whose host pattern matches host (normalised):
 * the exact entry, `*.` of the direct parent, `**.` of every ancestor domain
 * (O(labels)), then the few that need a scan (other globs, hostless).
 * Stops early when fn returns false. */
void for_each_host_match(const struct policy_gen *g, const char *host, visit_fn fn, void *ctx)
{
	const struct host_slot *s = host_table_find(&g->exact, host, host_hash(host));
	for (size_t i = 0; s && i < s->n; i++)
		if (!fn(s->eps[i], ctx))
			return;
	bool first = true;
	for (const char *d = strchr(host, '.'); d; d = strchr(d + 1, '.'), first = false) {
		uint64_t h = host_hash(d + 1);
		if (first && (s = host_table_find(&g->one, d + 1, h)))
			for (size_t i = 0; i < s->n; i++)
				if (!fn(s->eps[i], ctx))
					return;
		if ((s = host_table_find(&g->multi, d + 1, h)))
			for (size_t i = 0; i < s->n; i++)
				if (!fn(s->eps[i], ctx))
					return;
	}
	for (size_t i = 0; i < g->n_scan; i++) {
		const struct policy_endpoint *ep = g->scan[i];
		if ((!ep->host || host_pattern_match(ep->host, host)) && !fn(ep, ctx))
			return;
	}
}

bool endpoint_has_port(const struct policy_endpoint *ep, uint16_t port)
{
	for (size_t i = 0; i < ep->n_ports; i++)
		if (ep->ports[i] == port)
			return true;
	return false;
}

struct l4_ctx {
	const struct policy_gen *g;
	uint16_t port;
	const char *const *chain;
	size_t n;
	bool any_binary; /* endpoint-only: the caller cannot be identified by design */
	bool host_seen, port_seen;
	const struct policy_endpoint *best;
};

/* Upstream takes a connection's settings from the matching endpoints that
 * carry some (protocol, allowed_ips, tls, credential binding), so a plain L4
 * endpoint on the same host:port never hides an inspected one; among equals
 * the smallest policy name wins. */
bool endpoint_has_config(const struct policy_endpoint *ep)
{
	return ep->protocol != POLICY_PROTO_NONE || ep->n_allowed || ep->tls_explicit ||
	       ep->credential_provider;
}

static bool better(const struct policy_endpoint *ep, const struct policy_endpoint *best)
{
	if (!best)
		return true;
	if (endpoint_has_config(ep) != endpoint_has_config(best))
		return endpoint_has_config(ep);
	if (ep->policy_index != best->policy_index)
		return ep->policy_index < best->policy_index;
	return ep->index < best->index;
}

static bool l4_visit(const struct policy_endpoint *ep, void *p)
{
	struct l4_ctx *c = p;
	c->host_seen = true;
	if (!better(ep, c->best))
		return true;
	if (!endpoint_has_port(ep, c->port))
		return true;
	c->port_seen = true;
	if (c->any_binary || bin_set_match(&c->g->bins[ep->policy_index], c->chain, c->n))
		c->best = ep;
	return true;
}

static void set(struct policy_decision *out, enum policy_verdict v, enum policy_reason r)
{
	out->verdict = v;
	out->reason = r;
}

static void decide_connect(const struct policy_gen *g, const char *host, uint16_t port,
			   const char *const *chain, size_t n, bool any_binary,
			   struct policy_decision *out)
{
	memset(out, 0, sizeof *out);
	char h[HOST_NAME_CAP];
	if (!host || host_normalize(host, strlen(host), h, sizeof h, NULL) < 0) {
		set(out, POLICY_DENY, POLICY_R_INVALID_HOST);
		snprintf(out->detail, sizeof out->detail, "CONNECT to an invalid host name");
		return;
	}
	/* A metadata name is refused here unless a policy names it exactly; then
	 * policy_decide_address refuses every address (ssrf_denied). */
	if (host_is_metadata_name(h) && !host_table_find(&g->exact, h, host_hash(h))) {
		set(out, POLICY_DENY, POLICY_R_METADATA_HOST);
		snprintf(out->detail, sizeof out->detail, "CONNECT %s:%u: metadata endpoint", h,
			 (unsigned)port);
		return;
	}
	if (!any_binary && (n == 0 || !chain)) {
		set(out, POLICY_DENY, POLICY_R_BINARY_UNKNOWN);
		snprintf(out->detail, sizeof out->detail,
			 "CONNECT %s:%u: calling binary could not be identified", h,
			 (unsigned)port);
		return;
	}
	struct l4_ctx c = {
		.g = g, .port = port, .chain = chain, .n = n, .any_binary = any_binary
	};
	for_each_host_match(g, h, l4_visit, &c);
	if (c.best) {
		set(out, POLICY_ALLOW, POLICY_R_ALLOWED);
		out->endpoint = c.best;
		out->policy = g->doc->networks[c.best->policy_index].name;
		char idx[21], pn[21];
		str_u64(idx, c.best->index);
		str_u64(pn, port);
		str_join(out->rule, sizeof out->rule, "endpoints[", idx, "]", NULL);
		str_join(out->detail, sizeof out->detail, "CONNECT ", h, ":", pn,
			 " allowed by policy ", out->policy, NULL);
		return;
	}
	set(out, POLICY_DENY,
	    c.port_seen	  ? POLICY_R_BINARY_NOT_ALLOWED
	    : c.host_seen ? POLICY_R_PORT_NOT_ALLOWED
			  : POLICY_R_NO_ENDPOINT);
	snprintf(out->detail, sizeof out->detail, "CONNECT %s:%u not permitted by policy", h,
		 (unsigned)port);
}

void policy_decide_connect(const struct policy_gen *g, const char *host, uint16_t port,
			   const char *const *chain, size_t n, struct policy_decision *out)
{
	decide_connect(g, host, port, chain, n, false, out);
}

void policy_decide_connect_endpoint_only(const struct policy_gen *g, const char *host,
					 uint16_t port, struct policy_decision *out)
{
	decide_connect(g, host, port, NULL, 0, true, out);
}

static bool allowed_has(const struct policy_endpoint *ep, const struct ip_addr *a)
{
	for (size_t i = 0; i < ep->n_allowed; i++)
		if (cidr_contains(&ep->allowed_ips[i], a))
			return true;
	return false;
}

void policy_decide_address(const struct policy_endpoint *ep, const struct ip_addr *a, uint16_t port,
			   struct policy_decision *out)
{
	memset(out, 0, sizeof *out);
	const char *why = NULL;
	char ip[64] = "?";
	ip_addr_format(a, ip, sizeof ip);
	enum ssrf_verdict v =
		ssrf_check(a, port, ep ? ep->allowed_ips : NULL, ep ? ep->n_allowed : 0, &why);
	if (ep && ep->host && host_is_metadata_name(ep->host)) {
		v = SSRF_DENY_ALWAYS;
		why = "cloud metadata endpoint (always blocked)";
	} else if (ep && ep->n_allowed && v == SSRF_ALLOW && !allowed_has(ep, a)) {
		/* allowed_ips is an allowlist (OpenShell's "host + allowlist" and
		 * hostless modes: every resolved address must be inside it, public
		 * ones included), not only a lift of the internal-address block. */
		v = SSRF_DENY_INTERNAL;
		why = ep->host ? "address outside the endpoint's allowed_ips"
			       : "address outside the allowed_ips of a hostless endpoint";
	}
	static const enum policy_reason reasons[] = {
		[SSRF_ALLOW] = POLICY_R_ALLOWED,
		[SSRF_DENY_ALWAYS] = POLICY_R_SSRF_ALWAYS_BLOCKED,
		[SSRF_DENY_INTERNAL] = POLICY_R_SSRF_INTERNAL,
		[SSRF_DENY_PORT] = POLICY_R_SSRF_CONTROL_PLANE_PORT,
	};
	out->endpoint = ep;
	set(out, v == SSRF_ALLOW ? POLICY_ALLOW : POLICY_DENY, reasons[v]);
	if (v == SSRF_ALLOW)
		snprintf(out->detail, sizeof out->detail, "%s port %u permitted", ip,
			 (unsigned)port);
	else
		snprintf(out->detail, sizeof out->detail, "%s port %u blocked: %s", ip,
			 (unsigned)port, why ? why : policy_reason_name(reasons[v]));
}

bool policy_restricts_binaries(const struct policy_gen *g)
{
	const struct policy_doc *d = policy_gen_doc(g);
	for (size_t i = 0; i < d->n_networks; i++)
		if (d->networks[i].n_binaries > 0)
			return true;
	return false;
}
