/* policy_decide_middleware.c - which middlewares a request's host selects:
 * any include pattern and no exclude pattern (OpenShell's host patterns,
 * the endpoints' own matcher), in the chain's order. */
#include "hostglob.h"
#include "policy_gen_int.h"

static bool any_match(char *const *patterns, size_t n, const char *host)
{
	for (size_t i = 0; i < n; i++)
		if (host_pattern_match(patterns[i], host))
			return true;
	return false;
}

size_t policy_middlewares_for(const struct policy_gen *g, const char *host,
			      const struct policy_middleware **out)
{
	size_t n = 0;
	for (size_t i = 0; i < g->doc->n_middlewares && n < POLICY_MAX_MIDDLEWARES; i++) {
		const struct policy_middleware *m = &g->doc->middlewares[i];
		if (any_match(m->include, m->n_include, host) &&
		    !any_match(m->exclude, m->n_exclude, host))
			out[n++] = m;
	}
	return n;
}
