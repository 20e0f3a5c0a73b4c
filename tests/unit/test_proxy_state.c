/* test_proxy_state.c - the egress proxy's connection state machine: every
 * state has a name, the moves the proxy makes are allowed, and the moves it
 * must never make (a tunnel answering in HTTP, going back to DNS) are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "proxy_internal.h"

static void every_state_has_a_distinct_name(void **state)
{
	for (int a = 0; a < PROXY_CONN_STATES; a++) {
		const char *na = proxy_conn_state_name((enum proxy_conn_state)a);
		assert_non_null(na);
		assert_string_not_equal(na, "invalid");
		for (int b = a + 1; b < PROXY_CONN_STATES; b++)
			assert_string_not_equal(na,
						proxy_conn_state_name((enum proxy_conn_state)b));
	}
	assert_string_equal(proxy_conn_state_name(ST_READ_HEAD), "read_head");
	assert_string_equal(proxy_conn_state_name((enum proxy_conn_state)PROXY_CONN_STATES),
			    "invalid");
}

#define PATH_MAX_STEPS 6

struct path {
	size_t n;
	enum proxy_conn_state v[PATH_MAX_STEPS];
};

/* The paths a connection really takes, as the proxy's files make them. */
static void the_proxys_paths_are_allowed(void **state)
{
	static const struct path paths[] = {
		/* CONNECT, L4 tunnel */
		{ 4, { ST_READ_HEAD, ST_RESOLVE, ST_CONNECT_UPSTREAM, ST_TUNNEL } },
		/* CONNECT, terminated: the agent's TLS, the upstream's, then requests */
		{ 6,
		  { ST_READ_HEAD, ST_RESOLVE, ST_CONNECT_UPSTREAM, ST_TLS_CLIENT, ST_TLS_UPSTREAM,
		    ST_READ_HEAD } },
		/* requests in a terminated tunnel, kept alive, the last one closing */
		{ 5, { ST_READ_HEAD, ST_FORWARD, ST_READ_HEAD, ST_FORWARD, ST_CLOSING } },
		/* plain HTTP, a second address tried */
		{ 6,
		  { ST_READ_HEAD, ST_RESOLVE, ST_CONNECT_UPSTREAM, ST_CONNECT_UPSTREAM, ST_FORWARD,
		    ST_READ_HEAD } },
		/* inference.local: TLS to the agent, then a routed backend over TLS */
		{ 6,
		  { ST_READ_HEAD, ST_TLS_CLIENT, ST_READ_HEAD, ST_RESOLVE, ST_CONNECT_UPSTREAM,
		    ST_TLS_UPSTREAM } },
		{ 3, { ST_TLS_UPSTREAM, ST_FORWARD, ST_CLOSING } },
		/* a WebSocket: the upgrade is an exchange, the 101 turns it into a relay */
		{ 4, { ST_READ_HEAD, ST_FORWARD, ST_WEBSOCKET, ST_CLOSING } },
		/* inference.local over plain HTTP to its backend */
		{ 3, { ST_CONNECT_UPSTREAM, ST_FORWARD, ST_READ_HEAD } },
	};
	for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
		for (size_t i = 0; i + 1 < paths[p].n; i++)
			assert_true(
				proxy_conn_transition_allowed(paths[p].v[i], paths[p].v[i + 1]));
}

/* Every error answer can be sent from every state but a tunnel. */
static void error_answers_close_all_but_tunnels(void **state)
{
	for (int s = 0; s < PROXY_CONN_STATES; s++)
		assert_int_equal(
			proxy_conn_transition_allowed((enum proxy_conn_state)s, ST_CLOSING),
			s != ST_TUNNEL);
}

static void forbidden_moves_are_refused(void **state)
{
	/* positive control beside each refusal */
	assert_true(proxy_conn_transition_allowed(ST_CONNECT_UPSTREAM, ST_TUNNEL));
	for (int s = 0; s < PROXY_CONN_STATES; s++)
		assert_false(proxy_conn_transition_allowed(ST_TUNNEL, (enum proxy_conn_state)s));
	assert_true(proxy_conn_transition_allowed(ST_CLOSING, ST_CLOSING));
	for (int s = 0; s < ST_CLOSING; s++)
		assert_false(proxy_conn_transition_allowed(ST_CLOSING, (enum proxy_conn_state)s));
	/* nothing is forwarded before it has been judged and connected */
	assert_true(proxy_conn_transition_allowed(ST_READ_HEAD, ST_RESOLVE));
	assert_false(proxy_conn_transition_allowed(ST_READ_HEAD, ST_TUNNEL));
	assert_false(proxy_conn_transition_allowed(ST_RESOLVE, ST_FORWARD));
	assert_false(proxy_conn_transition_allowed(ST_FORWARD, ST_RESOLVE));
	assert_false(proxy_conn_transition_allowed(ST_READ_HEAD, ST_READ_HEAD));
	/* a WebSocket relay starts only from a judged, forwarded upgrade and
	 * never turns back into HTTP */
	assert_true(proxy_conn_transition_allowed(ST_FORWARD, ST_WEBSOCKET));
	assert_false(proxy_conn_transition_allowed(ST_READ_HEAD, ST_WEBSOCKET));
	assert_false(proxy_conn_transition_allowed(ST_TLS_UPSTREAM, ST_WEBSOCKET));
	assert_false(proxy_conn_transition_allowed(ST_WEBSOCKET, ST_READ_HEAD));
	assert_false(proxy_conn_transition_allowed(ST_WEBSOCKET, ST_FORWARD));
	assert_false(proxy_conn_transition_allowed(ST_READ_HEAD,
						   (enum proxy_conn_state)PROXY_CONN_STATES));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_state_has_a_distinct_name),
		cmocka_unit_test(the_proxys_paths_are_allowed),
		cmocka_unit_test(error_answers_close_all_but_tunnels),
		cmocka_unit_test(forbidden_moves_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
