/* proxy_budget.h - what the egress proxy holds for its sandbox, against the
 * operator's limits: bytes in connection buffers and splice pipes plus a
 * fixed estimate per connection and per TLS session (--proxy-memory-mb),
 * and the number of upstream connections (--max-upstream-connections).
 * Pure bookkeeping: it never allocates and never touches a connection. */
#ifndef OS_PROXY_BUDGET_H
#define OS_PROXY_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

struct proxy_budget {
	size_t limit; /* bytes; 0 = unlimited */
	size_t used;
	/* Set when used reaches limit, cleared below the resume mark (7/8):
	 * while set, no connection is admitted and reads that would buffer
	 * more wait (backpressure), except within a connection's small fair
	 * share of a reserve, so what is held stays near limit + limit / 8. */
	bool paused;
	unsigned max_upstreams; /* 0 = unlimited */
	unsigned upstreams;
};

enum budget_change { BUDGET_SAME, BUDGET_PAUSED, BUDGET_RESUMED };

void budget_init(struct proxy_budget *b, size_t limit, unsigned max_upstreams);
/* One connection's charge changed from old to now. */
enum budget_change budget_update(struct proxy_budget *b, size_t old, size_t now);
/* May a new connection costing need bytes be admitted? */
bool budget_admits(const struct proxy_budget *b, size_t need);
/* How many more bytes a connection now holding `held` bytes of buffers may
 * read in, with n_conns connections open: what is left of the budget, or
 * while paused half of what is left of its share of a reserve (limit / 8 /
 * n_conns), so a download the agent does read keeps moving while unread
 * ones hold the rest. */
size_t budget_allowance(const struct proxy_budget *b, size_t held, unsigned n_conns);
/* An upstream connection slot: false when the cap is reached. */
bool budget_take_upstream(struct proxy_budget *b);
void budget_put_upstream(struct proxy_budget *b);

#endif
