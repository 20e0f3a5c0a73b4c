/* test_gateway_conn_state.c - the gateway connection's state machine: every
 * state has a name, the lifecycles the server drives are allowed, and the
 * moves it must never make (answering twice, reading a request after the
 * answer, relaying a connection that was never parked or asked) are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "server_internal.h"

#define PATH_MAX_STEPS 5

struct path {
	size_t n;
	enum gw_conn_state v[PATH_MAX_STEPS];
};

static void every_state_has_a_distinct_name(void **state)
{
	for (int a = 0; a < GW_CONN_STATES; a++) {
		const char *na = gw_conn_state_name((enum gw_conn_state)a);
		assert_non_null(na);
		assert_string_not_equal(na, "invalid");
		for (int b = a + 1; b < GW_CONN_STATES; b++)
			assert_string_not_equal(na, gw_conn_state_name((enum gw_conn_state)b));
	}
	assert_string_equal(gw_conn_state_name(GW_RELAY_ENDING), "relay_ending");
	assert_string_equal(gw_conn_state_name((enum gw_conn_state)GW_CONN_STATES), "invalid");
}

/* The lifecycles server_conn.c and server_respond.c drive. */
static void the_servers_lifecycles_are_allowed(void **state)
{
	static const struct path paths[] = {
		/* a JSON answer over TLS */
		{ 4, { GW_TLS_HANDSHAKE, GW_READING, GW_WRITING, GW_DRAINING } },
		/* a failed handshake: its alert, then the drain */
		{ 3, { GW_TLS_HANDSHAKE, GW_WRITING, GW_DRAINING } },
		/* a log stream that ends */
		{ 4, { GW_READING, GW_STREAMING, GW_WRITING, GW_DRAINING } },
		/* a supervisor session (it ends by closing) */
		{ 2, { GW_READING, GW_SESSION } },
		/* an exec client: parked, joined, its relay gone first */
		{ 5, { GW_READING, GW_PARKED, GW_RELAYING, GW_RELAY_ENDING, GW_DRAINING } },
		/* an exec client whose relay never came */
		{ 4, { GW_READING, GW_PARKED, GW_WRITING, GW_DRAINING } },
		/* the relay's own connection */
		{ 2, { GW_READING, GW_RELAYING } },
		/* a flush while draining starts the drain again */
		{ 2, { GW_DRAINING, GW_DRAINING } },
	};
	for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
		for (size_t i = 0; i + 1 < paths[p].n; i++)
			assert_true(gw_conn_transition_allowed(paths[p].v[i], paths[p].v[i + 1]));
}

static void forbidden_moves_are_refused(void **state)
{
	/* one request per connection: never back to reading */
	assert_true(gw_conn_transition_allowed(GW_TLS_HANDSHAKE, GW_READING));
	for (int s = GW_READING; s < GW_CONN_STATES; s++)
		assert_false(gw_conn_transition_allowed((enum gw_conn_state)s, GW_READING));
	/* one answer: writing only drains */
	assert_true(gw_conn_transition_allowed(GW_WRITING, GW_DRAINING));
	for (int s = 0; s < GW_CONN_STATES; s++)
		if (s != GW_DRAINING)
			assert_false(gw_conn_transition_allowed(GW_WRITING, (enum gw_conn_state)s));
	/* a session or a stream never becomes a relay */
	assert_true(gw_conn_transition_allowed(GW_PARKED, GW_RELAYING));
	assert_false(gw_conn_transition_allowed(GW_SESSION, GW_RELAYING));
	assert_false(gw_conn_transition_allowed(GW_STREAMING, GW_RELAYING));
	/* nothing is served before the handshake */
	assert_false(gw_conn_transition_allowed(GW_TLS_HANDSHAKE, GW_STREAMING));
	assert_false(gw_conn_transition_allowed(GW_TLS_HANDSHAKE, GW_RELAYING));
	/* a relay answers nothing in HTTP once the 101 is out */
	assert_true(gw_conn_transition_allowed(GW_RELAYING, GW_RELAY_ENDING));
	assert_false(gw_conn_transition_allowed(GW_RELAYING, GW_WRITING));
	assert_false(gw_conn_transition_allowed(GW_DRAINING, (enum gw_conn_state)GW_CONN_STATES));
}

static void closing_states_are_the_ones_after_the_answer(void **state)
{
	struct conn c;
	memset(&c, 0, sizeof c);
	for (int s = 0; s < GW_CONN_STATES; s++) {
		c.state = (enum gw_conn_state)s;
		bool want = s == GW_WRITING || s == GW_RELAY_ENDING || s == GW_DRAINING;
		assert_int_equal(server_conn_closing(&c), want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_state_has_a_distinct_name),
		cmocka_unit_test(the_servers_lifecycles_are_allowed),
		cmocka_unit_test(forbidden_moves_are_refused),
		cmocka_unit_test(closing_states_are_the_ones_after_the_answer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
