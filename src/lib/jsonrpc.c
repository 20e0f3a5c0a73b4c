/* jsonrpc.c - strict JSON-RPC 2.0 envelope parsing (see jsonrpc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsonrpc.h"

static bool method_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > JSONRPC_METHOD_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* Request ids: a string or an integer (the specification discourages null
 * and fractions; MCP forbids null). Response ids may also be null (the
 * answer to a request whose id could not be read). */
static bool id_ok(const json_t *id, bool response)
{
	return json_is_string(id) || json_is_integer(id) || (response && json_is_null(id));
}

static int check_error_object(const json_t *e, os_error *err)
{
	static const char *const keys[] = { "code", "message", "data", NULL };
	if (!json_is_object(e))
		return os_error_set(err, EINVAL, "'error' must be an object");
	if (json_check_keys(e, keys, "'error'", err) < 0)
		return -1;
	if (!json_is_integer(json_object_get(e, "code")))
		return os_error_set(err, EINVAL, "'error.code' must be an integer");
	if (!json_is_string(json_object_get(e, "message")))
		return os_error_set(err, EINVAL, "'error.message' must be a string");
	return 0;
}

static int classify(json_t *v, struct jsonrpc_msg *m, os_error *err)
{
	static const char *const keys[] = { "jsonrpc", "id",	"method", "params",
					    "result",  "error", NULL };
	if (!json_is_object(v))
		return os_error_set(err, EINVAL, "a message must be a JSON object");
	if (json_check_keys(v, keys, "message", err) < 0)
		return -1;
	const json_t *ver = json_object_get(v, "jsonrpc");
	if (!json_is_string(ver))
		return os_error_set(err, EINVAL, "missing or non-string 'jsonrpc' field");
	if (strcmp(json_string_value(ver), "2.0") != 0)
		return os_error_set(err, EINVAL, "unsupported JSON-RPC version '%.16s'",
				    json_string_value(ver));
	json_t *method = json_object_get(v, "method"), *id = json_object_get(v, "id");
	json_t *result = json_object_get(v, "result"), *error = json_object_get(v, "error");
	json_t *params = json_object_get(v, "params");
	if (method && (result || error))
		return os_error_set(err, EINVAL, "message includes both method and result/error");
	if (result || error) {
		if (result && error)
			return os_error_set(err, EINVAL, "response includes both result and error");
		if (params)
			return os_error_set(err, EINVAL, "a response cannot carry params");
		if (!id)
			return os_error_set(err, EINVAL, "response missing id");
		if (!id_ok(id, true))
			return os_error_set(err, EINVAL,
					    "response id must be a string, an integer or null");
		if (error && check_error_object(error, err) < 0)
			return -1;
		m->kind = result ? JSONRPC_RESULT : JSONRPC_ERROR;
		m->id = id;
		return 0;
	}
	if (!json_is_string(method))
		return os_error_set(err, EINVAL, "missing or non-string 'method' field");
	if (!method_ok(json_string_value(method)))
		return os_error_set(err, EINVAL,
				    "method must be 1..%d bytes without control characters",
				    JSONRPC_METHOD_MAX);
	if (params && !json_is_object(params) && !json_is_array(params))
		return os_error_set(err, EINVAL, "'params' must be an object or an array");
	if (id && !id_ok(id, false))
		return os_error_set(err, EINVAL, "request id must be a string or an integer");
	m->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	m->method = json_string_value(method);
	m->id = id;
	m->params = params;
	return 0;
}

int jsonrpc_parse(const char *data, size_t len, size_t cap, struct jsonrpc_payload *out,
		  enum jsonrpc_fault *fault, os_error *err)
{
	memset(out, 0, sizeof *out);
	*fault = JSONRPC_FAULT_PARSE;
	json_t *root = json_parse_strict(data, len, cap, err);
	if (!root)
		return -1;
	*fault = JSONRPC_FAULT_INVALID;
	bool batch = json_is_array(root);
	size_t n = batch ? json_array_size(root) : 1;
	if (batch && n == 0) {
		json_decref(root);
		return os_error_set(err, EINVAL, "empty batch");
	}
	if (n > JSONRPC_BATCH_MAX) {
		json_decref(root);
		return os_error_set(err, EINVAL, "batch of %zu messages exceeds %d", n,
				    JSONRPC_BATCH_MAX);
	}
	struct jsonrpc_msg *msgs = calloc(n, sizeof *msgs);
	if (!msgs) {
		json_decref(root);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		os_error e = { 0 };
		if (classify(batch ? json_array_get(root, i) : root, &msgs[i], &e) < 0) {
			if (batch)
				os_error_set(err, EINVAL, "batch item %zu: %s", i, e.msg);
			else
				os_error_set(err, EINVAL, "%s", e.msg);
			free(msgs);
			json_decref(root);
			return -1;
		}
	}
	*fault = JSONRPC_FAULT_NONE;
	*out = (struct jsonrpc_payload){ .root = root, .batch = batch, .n = n, .msgs = msgs };
	return 0;
}

void jsonrpc_payload_free(struct jsonrpc_payload *p)
{
	free(p->msgs);
	if (p->root)
		json_decref(p->root);
	memset(p, 0, sizeof *p);
}

int jsonrpc_fault_code(enum jsonrpc_fault f)
{
	return f == JSONRPC_FAULT_PARSE ? -32700 : -32600;
}

bool jsonrpc_has_response(const struct jsonrpc_payload *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->msgs[i].kind == JSONRPC_RESULT || p->msgs[i].kind == JSONRPC_ERROR)
			return true;
	return false;
}

static int mcp_tool_of(const struct jsonrpc_msg *m, const char **tool, os_error *err)
{
	if (m->kind != JSONRPC_REQUEST)
		return os_error_set(err, EINVAL, "MCP `tools/call` must be a request with an id");
	if (!json_is_object(m->params))
		return os_error_set(err, EINVAL,
				    "invalid MCP `tools/call` params: expected an object");
	const json_t *name = json_object_get(m->params, "name");
	if (!json_is_string(name))
		return os_error_set(err, EINVAL,
				    "invalid MCP `tools/call` params: missing string 'name'");
	const json_t *args = json_object_get(m->params, "arguments");
	if (args && !json_is_object(args))
		return os_error_set(
			err, EINVAL,
			"invalid MCP `tools/call` params: 'arguments' must be an object");
	*tool = json_string_value(name);
	return 0;
}

int jsonrpc_mcp_check(const struct jsonrpc_payload *p, bool batches_ok, const char **tools,
		      os_error *err)
{
	if (p->batch && !batches_ok)
		return os_error_set(err, EINVAL,
				    "MCP does not permit top-level JSON-RPC batches (only revision "
				    "2025-03-26 did)");
	for (size_t i = 0; i < p->n; i++) {
		const struct jsonrpc_msg *m = &p->msgs[i];
		tools[i] = NULL;
		if (m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR)
			continue;
		if (!strcmp(m->method, "initialize")) {
			if (p->batch)
				return os_error_set(
					err, EINVAL,
					"MCP `initialize` must be exactly one non-batched "
					"request");
			if (m->kind != JSONRPC_REQUEST)
				return os_error_set(
					err, EINVAL,
					"MCP `initialize` must be a request with an id");
			if (!json_is_object(m->params))
				return os_error_set(err, EINVAL,
						    "MCP `initialize` params are required");
		}
		if (m->params && !json_is_object(m->params))
			return os_error_set(err, EINVAL, "MCP params must be an object");
		if (!strcmp(m->method, "tools/call")) {
			os_error e = { 0 };
			if (mcp_tool_of(m, &tools[i], &e) < 0) {
				if (p->batch)
					return os_error_set(err, EINVAL, "batch item %zu: %s", i,
							    e.msg);
				return os_error_set(err, EINVAL, "%s", e.msg);
			}
		}
	}
	return 0;
}
