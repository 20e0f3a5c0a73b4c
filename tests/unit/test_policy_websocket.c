/* test_policy_websocket.c - `protocol: websocket` in the policy: the loader
 * takes upstream's form (REST rules, the upgrade as GET, text messages as
 * method WEBSOCKET_TEXT on the upgrade's path and query) and refuses an
 * endpoint that would judge nothing; decisions for both kinds of request.
 * GraphQL rules beside them make the endpoint judge GraphQL over WebSocket
 * (upstream's websocket_graphql_policy): they never allow a REST request.
 * Each refusal sits beside the positive control that shares its setup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policy.h"
#include "policy_fixture.h"

static const char policy_text[] =
	"version: 1\n"
	"network_policies:\n"
	"  chat:\n"
	"    endpoints:\n"
	"      - host: ws.example.com\n"
	"        port: 443\n"
	"        protocol: websocket\n"
	"        rules:\n"
	"          - allow: { method: GET, path: \"/**\" }\n"
	"          - allow: { method: WEBSOCKET_TEXT, path: /chat }\n"
	"          - allow: { method: websocket_text, path: /rooms, query: { room: \"ok-*\" } }\n"
	"        deny_rules:\n"
	"          - { method: WEBSOCKET_TEXT, path: /chat/admin }\n"
	"      - { host: ro.example.com, port: 443, protocol: websocket, access: read-only }\n"
	"      - { host: rw.example.com, port: 443, protocol: websocket, access: read-write }\n"
	"      - { host: full.example.com, port: 443, protocol: websocket, access: full }\n"
	"      - host: gql.example.com\n"
	"        port: 443\n"
	"        protocol: websocket\n"
	"        rules:\n"
	"          - allow: { method: GET, path: /graphql }\n"
	"          - allow: { operation_type: subscription, fields: [messageAdded] }\n"
	"        deny_rules:\n"
	"          - { operation_type: query, fields: [admin*] }\n"
	"    binaries: [{ path: /usr/bin/agent }]\n";

static const char *const agent[] = { "/usr/bin/agent" };

static int setup(void **state)
{
	return policy_fixture_setup(state, "ws.yaml", policy_text, sizeof policy_text - 1);
}

static struct policy_decision judge(void **state, const char *host, const char *method,
				    const char *target)
{
	struct policy_decision l4, d;
	policy_decide_connect(*state, host, 443, agent, 1, &l4);
	assert_int_equal(l4.verdict, POLICY_ALLOW);
	assert_int_equal(l4.endpoint->protocol, POLICY_PROTO_WEBSOCKET);
	assert_true(policy_protocol_inspected(l4.endpoint->protocol));
	policy_decide_request(*state, l4.endpoint, method, target, NULL, 0, &d);
	return d;
}

#define JUDGED(host, m, t, verdict_, why)                                                          \
	do {                                                                                       \
		struct policy_decision d_ = judge(state, host, m, t);                              \
		assert_string_equal(policy_reason_name(d_.reason), why);                           \
		assert_int_equal(d_.verdict, verdict_);                                            \
	} while (0)

static void upgrade_is_judged_as_rest(void **state)
{
	JUDGED("ws.example.com", "GET", "/chat", POLICY_ALLOW, "allowed");
	JUDGED("ws.example.com", "POST", "/chat", POLICY_DENY, "no_matching_rule");
}

static void text_messages_are_judged_on_the_upgrade_target(void **state)
{
	const char *m = POLICY_WEBSOCKET_TEXT_METHOD;
	JUDGED("ws.example.com", m, "/chat", POLICY_ALLOW, "allowed");
	JUDGED("ws.example.com", m, "/other", POLICY_DENY, "no_matching_rule");
	JUDGED("ws.example.com", m, "/chat/admin", POLICY_DENY, "deny_rule");
	/* the upgrade's query is matched like a REST query */
	JUDGED("ws.example.com", m, "/rooms?room=ok-1", POLICY_ALLOW, "allowed");
	JUDGED("ws.example.com", m, "/rooms?room=secret", POLICY_DENY, "no_matching_rule");
	JUDGED("ws.example.com", m, "/rooms", POLICY_DENY, "no_matching_rule");
}

static void access_presets_as_upstream_defines_them(void **state)
{
	const char *m = POLICY_WEBSOCKET_TEXT_METHOD;
	/* read-only opens the socket (GET) but sends no message; read-write
	 * sends them too (OpenShell's access_preset_rules for websocket: GET,
	 * then WEBSOCKET_TEXT); neither is a REST preset there; full sends all */
	JUDGED("ro.example.com", "GET", "/x", POLICY_ALLOW, "allowed");
	JUDGED("ro.example.com", m, "/x", POLICY_DENY, "no_matching_rule");
	JUDGED("ro.example.com", "OPTIONS", "/x", POLICY_DENY, "no_matching_rule");
	JUDGED("rw.example.com", "GET", "/x", POLICY_ALLOW, "allowed");
	JUDGED("rw.example.com", m, "/x", POLICY_ALLOW, "allowed");
	JUDGED("rw.example.com", "POST", "/x", POLICY_DENY, "no_matching_rule");
	JUDGED("full.example.com", m, "/x", POLICY_ALLOW, "allowed");
}

static struct policy_decision graphql(void **state, const char *type, const char *field)
{
	struct policy_decision l4, d;
	policy_decide_connect(*state, "gql.example.com", 443, agent, 1, &l4);
	assert_true(l4.endpoint->graphql_ws);
	const char *fields[] = { field };
	struct policy_graphql_request q = { .type = type, .fields = fields, .n_fields = 1 };
	policy_decide_graphql(*state, l4.endpoint, &q, &d);
	return d;
}

static void graphql_rules_judge_messages_never_rest_requests(void **state)
{
	const char *m = POLICY_WEBSOCKET_TEXT_METHOD;
	JUDGED("gql.example.com", "GET", "/graphql", POLICY_ALLOW, "allowed");
	/* a GraphQL rule has no method or path: it allows no REST request */
	JUDGED("gql.example.com", m, "/graphql", POLICY_DENY, "no_matching_rule");
	JUDGED("gql.example.com", "POST", "/graphql", POLICY_DENY, "no_matching_rule");
	struct policy_decision d = graphql(state, "subscription", "messageAdded");
	assert_int_equal(d.verdict, POLICY_ALLOW);
	d = graphql(state, "query", "adminLog");
	assert_int_equal(d.verdict, POLICY_DENY);
	assert_string_equal(policy_reason_name(d.reason), "deny_rule");
	d = graphql(state, "subscription", "other");
	assert_string_equal(policy_reason_name(d.reason), "no_matching_rule");
	/* a websocket endpoint without GraphQL rules judges text as text */
	struct policy_decision l4;
	policy_decide_connect(*state, "ws.example.com", 443, agent, 1, &l4);
	assert_false(l4.endpoint->graphql_ws);
}

static void loader_refuses_what_would_judge_nothing(void **state)
{
	static const char *const bad[][2] = {
		{ "      - { host: a.example.com, port: 443, protocol: websocket }\n",
		  "network_policies.p.endpoints[0].protocol: websocket needs access or rules" },
		{ "      - { host: a.example.com, port: 443, protocol: websocket, access: full,"
		  " rules: [{ allow: { method: GET, path: / } }] }\n",
		  "network_policies.p.endpoints[0].rules: cannot be combined with access" },
		{ "      - { host: a.example.com, port: 443, protocol: websocket,"
		  " rules: [{ allow: { method: \"WEBSOCKET TEXT\", path: / } }] }\n",
		  "network_policies.p.endpoints[0].rules[0].allow.method: expected an HTTP "
		  "method" },
		/* one rule is either REST or GraphQL, never both at once */
		{ "      - { host: a.example.com, port: 443, protocol: websocket,"
		  " rules: [{ allow: { method: GET, path: /, operation_type: query } }] }\n",
		  "network_policies.p.endpoints[0].rules[0].allow.method: graphql rules match "
		  "operation_type" },
		{ "      - { host: a.example.com, port: 443, protocol: websocket,"
		  " rules: [{ allow: { fields: [viewer] } }] }\n",
		  "operation_type must be query, mutation, or subscription" },
	};
	char text[1024];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int n = snprintf(text, sizeof text,
				 "version: 1\nnetwork_policies:\n  p:\n    endpoints:\n%s"
				 "    binaries: [{ path: /usr/bin/agent }]\n",
				 bad[i][0]);
		struct policy_doc *doc = NULL;
		os_error err = { 0 };
		assert_int_equal(policy_parse("b.yaml", text, (size_t)n, &doc, NULL, &err), -1);
		if (!strstr(err.msg, bad[i][1]))
			fail_msg("case %zu: %s", i, err.msg);
	}
	/* positive control: the same endpoint with rules loads */
	int n = snprintf(text, sizeof text,
			 "version: 1\nnetwork_policies:\n  p:\n    endpoints:\n"
			 "      - { host: a.example.com, port: 443, protocol: websocket,"
			 " rules: [{ allow: { method: WEBSOCKET_TEXT, path: / } }] }\n"
			 "    binaries: [{ path: /usr/bin/agent }]\n");
	struct policy_doc *doc = NULL;
	os_error err = { 0 };
	assert_int_equal(policy_parse("g.yaml", text, (size_t)n, &doc, NULL, &err), 0);
	assert_int_equal(doc->networks[0].endpoints[0].protocol, POLICY_PROTO_WEBSOCKET);
	assert_string_equal(doc->networks[0].endpoints[0].rules[0].method, "WEBSOCKET_TEXT");
	policy_doc_free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(upgrade_is_judged_as_rest),
		cmocka_unit_test(text_messages_are_judged_on_the_upgrade_target),
		cmocka_unit_test(access_presets_as_upstream_defines_them),
		cmocka_unit_test(graphql_rules_judge_messages_never_rest_requests),
		cmocka_unit_test(loader_refuses_what_would_judge_nothing),
	};
	return cmocka_run_group_tests(tests, setup, policy_fixture_teardown);
}
