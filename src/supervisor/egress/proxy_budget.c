/* proxy_budget.c - the proxy's per-sandbox memory and upstream counts (see
 * proxy_budget.h). The figures only ever move by what callers report. */
#include "proxy_budget.h"

void budget_init(struct proxy_budget *b, size_t limit, unsigned max_upstreams)
{
	*b = (struct proxy_budget){ .limit = limit, .max_upstreams = max_upstreams };
}

static size_t resume_mark(const struct proxy_budget *b)
{
	return b->limit - b->limit / 8;
}

enum budget_change budget_update(struct proxy_budget *b, size_t old, size_t now)
{
	/* A charge never goes below zero: what was charged is what is returned. */
	b->used = b->used >= old ? b->used - old : 0;
	b->used += now;
	if (!b->limit)
		return BUDGET_SAME;
	if (!b->paused && b->used >= b->limit) {
		b->paused = true;
		return BUDGET_PAUSED;
	}
	if (b->paused && b->used < resume_mark(b)) {
		b->paused = false;
		return BUDGET_RESUMED;
	}
	return BUDGET_SAME;
}

bool budget_admits(const struct proxy_budget *b, size_t need)
{
	return !b->limit || (!b->paused && b->used + need <= b->limit);
}

size_t budget_allowance(const struct proxy_budget *b, size_t held, unsigned n_conns)
{
	if (!b->limit)
		return (size_t)-1;
	if (!b->paused)
		return b->used < b->limit ? b->limit - b->used : 0;
	/* an eighth of the budget, shared: only connections the agent drains
	 * are that small (pressure releases their empty buffers) */
	size_t share = b->limit / 8 / (n_conns ? n_conns : 1);
	/* half: a read into an empty buffer may allocate twice what it reads */
	return share > held ? (share - held) / 2 : 0;
}

bool budget_take_upstream(struct proxy_budget *b)
{
	if (b->max_upstreams && b->upstreams >= b->max_upstreams)
		return false;
	b->upstreams++;
	return true;
}

void budget_put_upstream(struct proxy_budget *b)
{
	if (b->upstreams)
		b->upstreams--;
}
