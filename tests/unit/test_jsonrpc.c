/* test_jsonrpc.c - the strict JSON-RPC 2.0 envelope parser and the MCP
 * checks on top of it: each refusal with its positive control beside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jsonrpc.h"

static enum jsonrpc_fault parse(const char *s, struct jsonrpc_payload *p, os_error *err)
{
	enum jsonrpc_fault f = JSONRPC_FAULT_NONE;
	memset(err, 0, sizeof *err);
	if (jsonrpc_parse(s, strlen(s), 65536, p, &f, err) == 0)
		assert_int_equal(f, JSONRPC_FAULT_NONE);
	else
		assert_int_not_equal(f, JSONRPC_FAULT_NONE);
	return f;
}

static void refused(const char *s, enum jsonrpc_fault want, const char *needle)
{
	struct jsonrpc_payload p;
	os_error err;
	assert_int_equal(parse(s, &p, &err), want);
	if (!strstr(err.msg, needle))
		fail_msg("%s: error \"%s\" lacks \"%s\"", s, err.msg, needle);
	assert_null(p.root);
}

static void accepted(const char *s, size_t n, enum jsonrpc_kind first)
{
	struct jsonrpc_payload p;
	os_error err;
	if (parse(s, &p, &err) != JSONRPC_FAULT_NONE)
		fail_msg("%s refused: %s", s, err.msg);
	assert_int_equal(p.n, n);
	assert_int_equal(p.msgs[0].kind, first);
	jsonrpc_payload_free(&p);
}

static void messages_are_classified(void **state)
{
	(void)state;
	accepted("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"reports.list\"}", 1, JSONRPC_REQUEST);
	accepted("{\"jsonrpc\":\"2.0\",\"method\":\"notify\",\"params\":[1]}", 1,
		 JSONRPC_NOTIFICATION);
	accepted("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", 1, JSONRPC_RESULT);
	accepted("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"x\"}}",
		 1, JSONRPC_ERROR);
	accepted("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},"
		 "{\"jsonrpc\":\"2.0\",\"method\":\"b\"}]",
		 2, JSONRPC_REQUEST);
	/* the same key in distinct objects is fine */
	accepted("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":{\"v\":1},"
		 "\"b\":{\"v\":2}}}",
		 1, JSONRPC_REQUEST);
}

static void malformed_envelopes_are_refused(void **state)
{
	(void)state;
	refused("{", JSONRPC_FAULT_PARSE, "invalid JSON");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"} x", JSONRPC_FAULT_PARSE,
		"invalid JSON");
	refused("[]", JSONRPC_FAULT_INVALID, "empty batch");
	refused("null", JSONRPC_FAULT_INVALID, "JSON object");
	refused("{\"id\":1,\"method\":\"a\"}", JSONRPC_FAULT_INVALID, "'jsonrpc'");
	refused("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"a\"}", JSONRPC_FAULT_INVALID,
		"version");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"result\":1}",
		JSONRPC_FAULT_INVALID, "both method");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", JSONRPC_FAULT_INVALID,
		"both result");
	refused("{\"jsonrpc\":\"2.0\",\"result\":1}", JSONRPC_FAULT_INVALID, "missing id");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"no\"}", JSONRPC_FAULT_INVALID,
		"'error' must be an object");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"a\"}", JSONRPC_FAULT_INVALID,
		"request id");
	refused("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"a\"}", JSONRPC_FAULT_INVALID,
		"request id");
	refused("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"a\"}", JSONRPC_FAULT_INVALID,
		"request id");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", JSONRPC_FAULT_INVALID, "'method'");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":3}",
		JSONRPC_FAULT_INVALID, "'params'");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"extra\":1}",
		JSONRPC_FAULT_INVALID, "unknown field \"extra\"");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\u0001b\"}", JSONRPC_FAULT_INVALID,
		"control characters");
	refused("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},{\"id\":2,\"method\":\"b\"}]",
		JSONRPC_FAULT_INVALID, "batch item 1: missing or non-string 'jsonrpc'");
}

/* Duplicate keys at any depth: the proxy and the upstream could each pick
 * a different value. Positive control: messages_are_classified. */
static void duplicate_keys_are_refused(void **state)
{
	(void)state;
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"method\":\"evil\"}",
		JSONRPC_FAULT_PARSE, "duplicate");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"a\"}", JSONRPC_FAULT_PARSE,
		"duplicate");
	refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"a\",\"arguments\":{\"q\":1,\"q\":2}}}",
		JSONRPC_FAULT_PARSE, "duplicate");
}

static void batches_are_bounded(void **state)
{
	(void)state;
	char body[JSONRPC_BATCH_MAX * 48 + 64];
	size_t o = 0;
	body[o++] = '[';
	for (int i = 0; i <= JSONRPC_BATCH_MAX; i++)
		o += (size_t)snprintf(body + o, sizeof body - o,
				      "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"a\"}",
				      i ? "," : "", i);
	body[o++] = ']';
	body[o] = '\0';
	refused(body, JSONRPC_FAULT_INVALID, "exceeds");
}

static int mcp(const char *s, bool batches_ok, const char **tools, char *msg)
{
	struct jsonrpc_payload p;
	os_error err;
	if (parse(s, &p, &err) != JSONRPC_FAULT_NONE)
		fail_msg("%s refused: %s", s, err.msg);
	memset(&err, 0, sizeof err);
	int rc = jsonrpc_mcp_check(&p, batches_ok, tools, &err);
	snprintf(msg, OS_ERROR_MSG_MAX, "%s", err.msg);
	if (rc == 0 && tools[0])
		snprintf(msg, OS_ERROR_MSG_MAX, "%s", tools[0]); /* the tree goes with p */
	jsonrpc_payload_free(&p);
	return rc;
}

static void mcp_checks(void **state)
{
	(void)state;
	const char *tools[4];
	char msg[OS_ERROR_MSG_MAX];
	assert_int_equal(mcp("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"read_status\",\"arguments\":{}}}",
			     false, tools, msg),
			 0);
	assert_string_equal(msg, "read_status");
	assert_int_equal(mcp("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			     "{\"arguments\":{}}}",
			     false, tools, msg),
			 -1);
	assert_non_null(strstr(msg, "missing string 'name'"));
	assert_int_equal(mcp("{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"x\"}}",
			     false, tools, msg),
			 -1);
	assert_non_null(strstr(msg, "request with an id"));
	const char *batch = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"},"
			    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]";
	assert_int_equal(mcp(batch, false, tools, msg), -1);
	assert_non_null(strstr(msg, "batches"));
	assert_int_equal(mcp(batch, true, tools, msg), 0); /* 2025-03-26 */
	assert_int_equal(mcp("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
			     "\"params\":{}}]",
			     true, tools, msg),
			 -1);
	assert_non_null(strstr(msg, "non-batched"));
	assert_int_equal(
		mcp("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}", false, tools, msg),
		-1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(messages_are_classified),
		cmocka_unit_test(malformed_envelopes_are_refused),
		cmocka_unit_test(duplicate_keys_are_refused),
		cmocka_unit_test(batches_are_bounded),
		cmocka_unit_test(mcp_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
