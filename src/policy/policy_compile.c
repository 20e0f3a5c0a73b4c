/* policy_compile.c - turns a validated policy_doc into an immutable,
 * reference-counted generation: hash tables for exact hosts and for glob
 * domains, sorted binaries; plus the holder that swaps generations on reload.
 * Must never mutate a generation after it is published. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pathglob.h"
#include "policy_gen_int.h"

uint64_t host_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

const struct host_slot *host_table_find(const struct host_table *t, const char *key, uint64_t h)
{
	if (!t->slots)
		return NULL;
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		const struct host_slot *s = &t->slots[i];
		if (!s->key)
			return NULL;
		if (s->hash == h && strcmp(s->key, key) == 0)
			return s;
	}
}

static int table_init(struct host_table *t, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * n + 1)
		cap *= 2;
	t->slots = calloc(cap, sizeof *t->slots);
	t->mask = cap - 1;
	return t->slots ? 0 : -1;
}

static int table_add(struct host_table *t, const char *key, const struct policy_endpoint *ep)
{
	uint64_t h = host_hash(key);
	size_t i = h & t->mask;
	while (t->slots[i].key && !(t->slots[i].hash == h && !strcmp(t->slots[i].key, key)))
		i = (i + 1) & t->mask;
	struct host_slot *s = &t->slots[i];
	const struct policy_endpoint **v = reallocarray(s->eps, s->n + 1, sizeof *v);
	if (!v)
		return -1;
	s->key = key;
	s->hash = h;
	s->eps = v;
	v[s->n++] = ep;
	return 0;
}

static void table_free(struct host_table *t)
{
	for (size_t i = 0; t->slots && i <= t->mask; i++)
		free(t->slots[i].eps);
	free(t->slots);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int bins_build(struct bin_set *b, const struct policy_network *net)
{
	size_t n = net->n_binaries ? net->n_binaries : 1;
	b->lit = calloc(n, sizeof *b->lit);
	b->glob = calloc(n, sizeof *b->glob);
	if (!b->lit || !b->glob)
		return -1;
	for (size_t i = 0; i < net->n_binaries; i++) {
		const char *p = net->binaries[i].path;
		if (path_glob_is_literal(p))
			b->lit[b->n_lit++] = p;
		else
			b->glob[b->n_glob++] = p;
	}
	qsort(b->lit, b->n_lit, sizeof *b->lit, str_cmp);
	return 0;
}

bool bin_set_match(const struct bin_set *b, const char *const *chain, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!chain[i])
			continue;
		if (b->n_lit && bsearch(&chain[i], b->lit, b->n_lit, sizeof *b->lit, str_cmp))
			return true;
		for (size_t j = 0; j < b->n_glob; j++)
			if (path_glob_match(b->glob[j], chain[i]))
				return true;
	}
	return false;
}

static void gen_free(struct policy_gen *g)
{
	table_free(&g->exact);
	table_free(&g->one);
	table_free(&g->multi);
	free(g->scan);
	for (size_t i = 0; g->bins && g->doc && i < g->doc->n_networks; i++) {
		free(g->bins[i].lit);
		free(g->bins[i].glob);
	}
	free(g->bins);
	policy_doc_free(g->doc);
	free(g);
}

static int file_endpoint(struct policy_gen *g, const struct policy_endpoint *ep)
{
	/* Hostless endpoints and globs other than a whole `*.`/`**.` first label
	 * cannot be keyed by a domain: they are tried one by one. */
	size_t skip = !ep->host			     ? 0
		      : !strncmp(ep->host, "**.", 3) ? 3
		      : !strncmp(ep->host, "*.", 2)  ? 2
						     : 0;
	if (!ep->host || strchr(ep->host + skip, '*')) {
		g->scan[g->n_scan++] = ep;
		return 0;
	}
	if (!strncmp(ep->host, "**.", 3))
		return table_add(&g->multi, ep->host + 3, ep);
	if (!strncmp(ep->host, "*.", 2))
		return table_add(&g->one, ep->host + 2, ep);
	return table_add(&g->exact, ep->host, ep);
}

static int build(struct policy_gen *g)
{
	const struct policy_doc *d = g->doc;
	size_t n = d->n_endpoints_total;
	if (table_init(&g->exact, n) < 0 || table_init(&g->one, n) < 0 ||
	    table_init(&g->multi, n) < 0)
		return -1;
	g->scan = calloc(n ? n : 1, sizeof *g->scan);
	if (!g->scan)
		return -1;
	g->bins = calloc(d->n_networks ? d->n_networks : 1, sizeof *g->bins);
	if (!g->bins)
		return -1;
	/* Policies are sorted by name, so every slot's list ends up in
	 * ascending policy order: the first full match is the smallest name. */
	for (size_t i = 0; i < d->n_networks; i++) {
		if (bins_build(&g->bins[i], &d->networks[i]) < 0)
			return -1;
		for (size_t j = 0; j < d->networks[i].n_endpoints; j++)
			if (file_endpoint(g, &d->networks[i].endpoints[j]) < 0)
				return -1;
	}
	return 0;
}

struct policy_gen *policy_compile(struct policy_doc *doc, os_error *err)
{
	struct policy_gen *g = calloc(1, sizeof *g);
	if (!g) {
		policy_doc_free(doc);
		os_error_set(err, ENOMEM, "compiling policy: out of memory");
		return NULL;
	}
	g->doc = doc;
	atomic_init(&g->refs, 1);
	if (build(g) < 0) {
		gen_free(g);
		os_error_set(err, ENOMEM, "compiling policy: out of memory");
		return NULL;
	}
	return g;
}

struct policy_gen *policy_ref(struct policy_gen *g)
{
	if (g)
		atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
	return g;
}

void policy_unref(struct policy_gen *g)
{
	if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
		gen_free(g);
}

const struct policy_doc *policy_gen_doc(const struct policy_gen *g)
{
	return g->doc;
}

struct policy_holder {
	pthread_mutex_t lock; /* held only to copy the pointer and take a reference */
	struct policy_gen *cur;
};

struct policy_holder *policy_holder_new(struct policy_gen *initial)
{
	struct policy_holder *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->cur = initial;
	return h;
}

struct policy_gen *policy_holder_acquire(struct policy_holder *h)
{
	pthread_mutex_lock(&h->lock);
	struct policy_gen *g = policy_ref(h->cur);
	pthread_mutex_unlock(&h->lock);
	return g;
}

void policy_holder_swap(struct policy_holder *h, struct policy_gen *next)
{
	pthread_mutex_lock(&h->lock);
	struct policy_gen *old = h->cur;
	h->cur = next;
	pthread_mutex_unlock(&h->lock);
	policy_unref(old); /* in-flight holders keep it alive */
}

void policy_holder_free(struct policy_holder *h)
{
	if (!h)
		return;
	policy_unref(h->cur);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
