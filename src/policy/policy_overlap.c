/* policy_overlap.c - load-time check that endpoints able to match the same
 * host:port (exactly or through `*.`/`**.` globs) agree on protocol and tls,
 * so a connection never has two meanings. Must stay near O(n log n): policies
 * may hold thousands of endpoints. */
#include <stdlib.h>
#include <string.h>

#include "policy_load_int.h"

struct eref {
	struct policy_endpoint *ep;
	const char *name; /* exact host, or the domain after `*.` / `**.` */
	int kind; /* 0 exact, 1 `*.`, 2 `**.` */
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

static void conflict(struct lctx *c, struct eref *x, struct eref *y)
{
	uint16_t port;
	if (x->ep->protocol == y->ep->protocol && x->ep->tls == y->ep->tls)
		return;
	if (!ports_meet(x->ep, y->ep, &port))
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
	     "overlaps network_policies.%s.endpoints[%zu] (line %u) on port %u but disagrees "
	     "on protocol or tls (endpoints that can match the same host:port must agree)",
	     nets[earlier->ep->policy_index].name, earlier->ep->index, earlier->ep->line,
	     (unsigned)port);
	kp_pop(c, old);
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
	for (size_t i = 0; i < d->n_networks; i++)
		for (size_t j = 0; j < d->networks[i].n_endpoints && k < n; j++, k++) {
			struct policy_endpoint *ep = &d->networks[i].endpoints[j];
			int kind = !strncmp(ep->host, "**.", 3) ? 2 : !strncmp(ep->host, "*.", 2);
			base[k] = (struct eref){ .ep = ep,
						 .name = ep->host + kind + (kind > 0),
						 .kind = kind,
						 .ord = k };
			all[k] = &base[k];
		}
	qsort(all, k, sizeof *all, eref_cmp);
	for (size_t i = 0; i < k; i++)
		if (all[i]->kind)
			g[ng++] = all[i];
	for (size_t i = 0; i < k; i++)
		check_one(c, all[i], all, k, g, ng);
out:
	free(base);
	free(all);
	free(g);
}
