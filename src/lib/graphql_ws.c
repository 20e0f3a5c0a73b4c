/* graphql_ws.c - GraphQL-over-WebSocket client messages (graphql_ws.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "graphql_ws.h"

static const char *const control_types[] = {
	"connection_init", "connection_terminate", "ping", "pong", "complete", "stop", NULL
};

static bool is_control(const char *t)
{
	for (size_t i = 0; control_types[i]; i++)
		if (!strcmp(t, control_types[i]))
			return true;
	return false;
}

static int operation(const json_t *o, struct graphql_ws_message *out, os_error *err)
{
	const json_t *id = json_object_get(o, "id"), *payload = json_object_get(o, "payload");
	if (!json_is_string(id) || json_string_length(id) == 0)
		return os_error_set(err, EINVAL,
				    "GraphQL WebSocket operation message missing non-empty id");
	if (!json_is_object(payload))
		return os_error_set(err, EINVAL,
				    "GraphQL WebSocket operation message missing object payload");
	os_error e = { 0 };
	if (graphql_http_parse_envelope(payload, &out->req, &e) < 0)
		return os_error_set(err, e.code, "GraphQL WebSocket %s payload: %s", out->type,
				    e.msg);
	out->kind = GRAPHQL_WS_OPERATION;
	return 0;
}

int graphql_ws_classify(const char *text, size_t len, size_t cap, struct graphql_ws_message *out,
			os_error *err)
{
	static const char *const keys[] = { "type", "id", "payload", NULL };
	memset(out, 0, sizeof *out);
	os_error e = { 0 };
	_cleanup_json_ json_t *root = json_parse_strict(text, len, cap, &e);
	if (!root)
		return os_error_set(err, e.code, "GraphQL WebSocket message is not valid JSON: %s",
				    e.msg);
	if (!json_is_object(root))
		return os_error_set(err, EINVAL, "GraphQL WebSocket message must be a JSON object");
	if (json_check_keys(root, keys, "GraphQL WebSocket message", err) < 0)
		return -1;
	const json_t *type = json_object_get(root, "type");
	if (!json_is_string(type))
		return os_error_set(err, EINVAL, "GraphQL WebSocket message missing string type");
	const char *t = json_string_value(type);
	bool op = !strcmp(t, "subscribe") || !strcmp(t, "start");
	if (!op && !is_control(t))
		return os_error_set(err, EINVAL,
				    "unsupported GraphQL WebSocket client message type \"%.40s\"",
				    t);
	snprintf(out->type, sizeof out->type, "%s", t);
	if (!op) {
		out->kind = GRAPHQL_WS_CONTROL;
		return 0;
	}
	return operation(root, out, err);
}

void graphql_ws_message_free(struct graphql_ws_message *m)
{
	graphql_http_request_free(&m->req);
	m->kind = GRAPHQL_WS_CONTROL;
}
