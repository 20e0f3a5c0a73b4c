/* test_proxy_budget.c - the proxy's per-sandbox memory and upstream counts:
 * reaching the budget pauses reads and admissions, only falling below the
 * resume mark lifts it, a paused connection keeps its fair share, and the
 * upstream cap gives a slot back once, never twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proxy_budget.h"

#define MIB (1024 * 1024)

static void reaching_the_limit_pauses_and_only_the_resume_mark_lifts_it(void **state)
{
	struct proxy_budget b;
	budget_init(&b, 8 * MIB, 0);
	assert_true(budget_admits(&b, 4096));
	assert_int_equal(budget_update(&b, 0, 7 * MIB), BUDGET_SAME);
	assert_true(budget_admits(&b, MIB));
	assert_false(budget_admits(&b, MIB + 1)); /* would go over */
	assert_int_equal(budget_allowance(&b, 7 * MIB, 1), MIB);
	assert_int_equal(budget_update(&b, 0, MIB), BUDGET_PAUSED);
	assert_true(b.paused);
	assert_false(budget_admits(&b, 1));
	/* 7.5 MiB is under the limit but over the mark: still paused. */
	assert_int_equal(budget_update(&b, MIB, MIB / 2), BUDGET_SAME);
	assert_false(budget_admits(&b, 1));
	assert_int_equal(budget_update(&b, 7 * MIB, 6 * MIB), BUDGET_RESUMED);
	assert_false(b.paused);
	assert_true(budget_admits(&b, 4096));
}

static void a_paused_connection_keeps_half_its_fair_share(void **state)
{
	struct proxy_budget b;
	budget_init(&b, 32 * MIB, 0);
	budget_update(&b, 0, 32 * MIB);
	assert_true(b.paused);
	/* four connections share an eighth (4 MiB): 1 MiB each */
	assert_int_equal(budget_allowance(&b, 0, 4), MIB / 2);
	assert_int_equal(budget_allowance(&b, MIB / 2, 4), MIB / 4);
	assert_int_equal(budget_allowance(&b, MIB, 4), 0);
	assert_int_equal(budget_allowance(&b, 3 * MIB, 4), 0);
}

static void charges_return_what_they_took(void **state)
{
	struct proxy_budget b;
	budget_init(&b, 0, 0); /* unlimited still counts */
	budget_update(&b, 0, 1000);
	budget_update(&b, 0, 24);
	assert_int_equal(b.used, 1024);
	budget_update(&b, 1000, 0);
	budget_update(&b, 24, 0);
	assert_int_equal(b.used, 0);
	budget_update(&b, 5, 0); /* a stray return never wraps */
	assert_int_equal(b.used, 0);
	assert_true(budget_admits(&b, SIZE_MAX / 2));
}

static void the_upstream_cap_counts_slots(void **state)
{
	struct proxy_budget b;
	budget_init(&b, 0, 2);
	assert_true(budget_take_upstream(&b));
	assert_true(budget_take_upstream(&b));
	assert_false(budget_take_upstream(&b));
	budget_put_upstream(&b);
	assert_true(budget_take_upstream(&b));
	assert_false(budget_take_upstream(&b));
	budget_put_upstream(&b);
	budget_put_upstream(&b);
	budget_put_upstream(&b); /* one too many: stays at zero */
	assert_int_equal(b.upstreams, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reaching_the_limit_pauses_and_only_the_resume_mark_lifts_it),
		cmocka_unit_test(a_paused_connection_keeps_half_its_fair_share),
		cmocka_unit_test(charges_return_what_they_took),
		cmocka_unit_test(the_upstream_cap_counts_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
