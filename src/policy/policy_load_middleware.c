/* policy_load_middleware.c - `network_middlewares`: OpenShell's schema
 * (crates/openshell-policy middleware.rs: name, middleware, order, config,
 * on_error, endpoints {include, exclude}) with its validation messages.
 * Only the in-process openshell/regex (config mode: redact) can run here;
 * any other middleware names an external service this sandbox does not
 * have, and is refused rather than skipped. */
#include <stdlib.h>
#include <string.h>

#include "hostglob.h"
#include "policy_load_int.h"

#define REGEX_MIDDLEWARE "openshell/regex"

void policy_middlewares_free(struct policy_middleware *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++) {
		free(m[i].key);
		free(m[i].name);
		for (size_t j = 0; j < m[i].n_include; j++)
			free(m[i].include[j]);
		for (size_t j = 0; j < m[i].n_exclude; j++)
			free(m[i].exclude[j]);
		free(m[i].include);
		free(m[i].exclude);
	}
	free(m);
}

static void load_patterns(struct lctx *c, const struct ynode *v, const char *mw, char ***out,
			  size_t *n)
{
	if (!want_seq(c, v, false))
		return;
	*out = calloc(v->seq.n ? v->seq.n : 1, sizeof **out);
	if (!*out) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < v->seq.n; i++) {
		const char *s;
		char norm[HOST_NAME_CAP];
		os_error e = { 0 };
		size_t old = kp_push(c, "[%zu]", i);
		if (get_str(c, v->seq.items[i], "a host pattern", &s)) {
			if (!*s)
				lerr(c, v->seq.items[i],
				     "middleware config '%s' is invalid: endpoint selector pattern "
				     "'' is "
				     "invalid: host pattern must not be empty",
				     mw);
			else if (host_pattern_normalize(s, strlen(s), norm, sizeof norm, &e) < 0)
				lerr(c, v->seq.items[i],
				     "middleware config '%s' is invalid: endpoint selector pattern "
				     "'%.100s' is invalid: %s",
				     mw, s, e.msg);
			else
				(*out)[(*n)++] = ldup(c, norm);
		}
		kp_pop(c, old);
	}
}

static void load_selector(struct lctx *c, const struct ynode *n, const char *mw,
			  struct policy_middleware *m)
{
	static const char *const keys[] = { "include", "exclude", NULL };
	if (!n) {
		lerr(c, NULL, "middleware config '%s' is invalid: endpoint selector is required",
		     mw);
		return;
	}
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const struct ynode *inc = ynode_map_get(n, "include"), *exc = ynode_map_get(n, "exclude");
	size_t total = (inc && inc->kind == YNODE_SEQUENCE ? inc->seq.n : 0) +
		       (exc && exc->kind == YNODE_SEQUENCE ? exc->seq.n : 0);
	if (total > POLICY_MAX_MIDDLEWARE_PATTERNS) {
		lerr(c, n, "middleware config '%s' has too many selector patterns (%zu > %d)", mw,
		     total, POLICY_MAX_MIDDLEWARE_PATTERNS);
		return;
	}
	size_t old = kp_push(c, ".include");
	if (inc)
		load_patterns(c, inc, mw, &m->include, &m->n_include);
	if (!m->n_include)
		lerr(c, inc ? inc : n,
		     "middleware config '%s' is invalid: endpoint selector must include at least "
		     "one host pattern",
		     mw);
	kp_pop(c, old);
	if (exc) {
		old = kp_push(c, ".exclude");
		load_patterns(c, exc, mw, &m->exclude, &m->n_exclude);
		kp_pop(c, old);
	}
}

/* openshell/regex takes {mode: redact} or nothing. */
static void load_regex_config(struct lctx *c, const struct ynode *n)
{
	if (!n || ynode_is_null(n))
		return;
	if (!want_map(c, n))
		return;
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		const struct ynode *v = n->map.pairs[i].value;
		if (strcmp(k, "mode") != 0)
			lerr(c, v,
			     "invalid openshell/regex config: unknown field `%.64s`; this example "
			     "supports only mode: redact",
			     k);
		else if (!ynode_scalar_eq(v, "redact"))
			lerr(c, v,
			     "invalid openshell/regex config: unknown mode; this example supports "
			     "only mode: redact");
	}
}

static void load_one(struct lctx *c, const char *key, const struct ynode *n,
		     struct policy_middleware *m)
{
	static const char *const keys[] = { "name",	"middleware", "order", "config",
					    "on_error", "endpoints",  NULL };
	m->key = ldup(c, key);
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const char *s;
	const struct ynode *v = ynode_map_get(n, "name");
	m->name = ldup(c, v && get_str(c, v, "a name", &s) && *s ? s : key);
	size_t old = kp_push(c, ".middleware");
	v = ynode_map_get(n, "middleware");
	if (!v || (get_str(c, v, "a middleware name", &s) && !*s))
		lerr(c, v ? v : n,
		     "middleware config '%s' is invalid: middleware must not be empty", key);
	else if (v->kind == YNODE_SCALAR && strcmp(s, REGEX_MIDDLEWARE) != 0)
		lerr(c, v,
		     "middleware config '%s': middleware '%.100s' is not available here (only the "
		     "in-process " REGEX_MIDDLEWARE " runs in this sandbox); refusing rather than "
		     "skipping it",
		     key, s);
	kp_pop(c, old);
	uint64_t x = 0;
	if ((v = ynode_map_get(n, "order"))) {
		old = kp_push(c, ".order");
		if (get_uint(c, v, 0, INT32_MAX, "an order 0..2147483647", &x))
			m->order = (uint32_t)x;
		kp_pop(c, old);
	}
	old = kp_push(c, ".on_error");
	if ((v = ynode_map_get(n, "on_error")) && get_str(c, v, "fail_closed or fail_open", &s)) {
		if (!strcmp(s, "fail_open"))
			m->fail_open = true;
		else if (*s && strcmp(s, "fail_closed") != 0)
			lerr(c, v, "middleware config '%s' is invalid: invalid on_error '%.64s'",
			     key, s);
	}
	kp_pop(c, old);
	old = kp_push(c, ".config");
	load_regex_config(c, ynode_map_get(n, "config"));
	kp_pop(c, old);
	old = kp_push(c, ".endpoints");
	v = ynode_map_get(n, "endpoints");
	if (!v)
		lerr(c, n, "middleware config '%s' is invalid: endpoint selector is required", key);
	else
		load_selector(c, v, key, m);
	kp_pop(c, old);
}

static int by_order(const void *a, const void *b)
{
	const struct policy_middleware *x = a, *y = b;
	return x->order < y->order ? -1 : x->order > y->order;
}

void load_middlewares(struct lctx *c, const struct ynode *n)
{
	if (!want_map(c, n))
		return;
	if (n->map.n > POLICY_MAX_MIDDLEWARES) {
		lerr(c, n, "too many middleware configs (%zu > %d)", n->map.n,
		     POLICY_MAX_MIDDLEWARES);
		return;
	}
	struct policy_doc *d = c->doc;
	d->middlewares = calloc(n->map.n ? n->map.n : 1, sizeof *d->middlewares);
	if (!d->middlewares) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		size_t old = kp_push(c, ".%.64s", k);
		if (!*k)
			lerr(c, n->map.pairs[i].key,
			     "middleware config '' is invalid: name must not be empty");
		struct policy_middleware *m = &d->middlewares[d->n_middlewares++];
		load_one(c, k, n->map.pairs[i].value, m);
		for (size_t j = 0; j + 1 < d->n_middlewares; j++)
			if (d->middlewares[j].order == m->order)
				lerr(c, n->map.pairs[i].value,
				     "middleware configs '%s' and '%s' use duplicate order %u",
				     d->middlewares[j].key, k, m->order);
		kp_pop(c, old);
	}
	qsort(d->middlewares, d->n_middlewares, sizeof *d->middlewares, by_order);
}
