/* test_graphql_ws.c - GraphQL-over-WebSocket client messages (graphql_ws.h):
 * upstream's classifier answers (subscribe / start carry an operation,
 * control messages none, anything else refused), and the strictness added
 * here (duplicate keys, unknown members), each refusal beside an accepted
 * message of the same shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "graphql_ws.h"

static void classified(const char *text, enum graphql_ws_kind kind, const char *type,
		       const char *field)
{
	struct graphql_ws_message m;
	os_error err = { 0 };
	if (graphql_ws_classify(text, strlen(text), 1 << 20, &m, &err) < 0)
		fail_msg("refused %s: %s", text, err.msg);
	assert_int_equal(m.kind, kind);
	assert_string_equal(m.type, type);
	if (kind == GRAPHQL_WS_OPERATION) {
		assert_int_equal(m.req.n, 1);
		assert_false(m.req.batch);
		if (field)
			assert_string_equal(m.req.ops[0].op.fields[0], field);
		else
			assert_true(m.req.ops[0].persisted_only);
	}
	graphql_ws_message_free(&m);
}

static void refused(const char *text, const char *needle)
{
	struct graphql_ws_message m;
	os_error err = { 0 };
	assert_int_equal(graphql_ws_classify(text, strlen(text), 1 << 20, &m, &err), -1);
	if (!strstr(err.msg, needle))
		fail_msg("%s: wanted '%s' in '%s'", text, needle, err.msg);
	assert_null(m.req.ops);
}

static void upstream_answers(void **state)
{
	(void)state;
	classified("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":"
		   "\"subscription NewMessages { messageAdded }\"}}",
		   GRAPHQL_WS_OPERATION, "subscribe", "messageAdded");
	classified("{\"type\":\"start\",\"id\":\"1\",\"payload\":{\"query\":\"query Viewer "
		   "{ viewer }\"}}",
		   GRAPHQL_WS_OPERATION, "start", "viewer");
	classified("{\"type\":\"connection_init\",\"payload\":{\"authorization\":\"x\"}}",
		   GRAPHQL_WS_CONTROL, "connection_init", NULL);
	for (const char *t = "ping\0pong\0complete\0stop\0connection_terminate\0"; *t;
	     t += strlen(t) + 1) {
		char msg[96];
		snprintf(msg, sizeof msg, "{\"type\":\"%s\",\"id\":\"1\"}", t);
		classified(msg, GRAPHQL_WS_CONTROL, t, NULL);
	}
	refused("{\"type\":\"next\",\"id\":\"1\"}", "unsupported GraphQL WebSocket client message");
	refused("{\"type\":\"subscribe\",\"payload\":{\"query\":\"{ a }\"}}", "non-empty id");
	refused("{\"type\":\"subscribe\",\"id\":\"\",\"payload\":{\"query\":\"{ a }\"}}",
		"non-empty id");
	refused("{\"type\":\"subscribe\",\"id\":1,\"payload\":{\"query\":\"{ a }\"}}",
		"non-empty id");
	refused("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":\"{ a }\"}", "object payload");
	refused("{\"id\":\"1\"}", "missing string type");
	refused("[1]", "must be a JSON object");
	refused("{\"type\":", "not valid JSON");
}

static void payload_is_the_http_envelope(void **state)
{
	(void)state;
	/* a persisted query by hash, and the document's errors */
	classified("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"extensions\":"
		   "{\"persistedQuery\":{\"version\":1,\"sha256Hash\":\"abc\"}}}}",
		   GRAPHQL_WS_OPERATION, "subscribe", NULL);
	refused("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{}}",
		"no query document or persisted query");
	refused("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"{ a \"}}",
		"subscribe payload");
	/* aliases and fragments resolve to the root field selected */
	classified("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":"
		   "\"{ ...F } fragment F on Q { x: admin }\"}}",
		   GRAPHQL_WS_OPERATION, "subscribe", "admin");
}

static void never_two_readings_of_one_message(void **state)
{
	(void)state;
	classified("{\"type\":\"ping\"}", GRAPHQL_WS_CONTROL, "ping", NULL);
	refused("{\"type\":\"ping\",\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":"
		"\"{ a }\"}}",
		"duplicate");
	refused("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\"},"
		"\"payload\":{\"query\":\"{ b }\"}}",
		"duplicate");
	refused("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\",\"query\":"
		"\"{ b }\"}}",
		"duplicate");
	refused("{\"type\":\"ping\",\"extra\":1}", "extra");
	refused("{\"type\":\"subscribe\",\"id\":\"1\",\"payload\":{\"query\":\"{ a }\",\"x\":1}}",
		"x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(upstream_answers),
		cmocka_unit_test(payload_is_the_http_envelope),
		cmocka_unit_test(never_two_readings_of_one_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
