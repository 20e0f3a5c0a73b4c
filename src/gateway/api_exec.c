/* api_exec.c - the two HTTP ends of `sandbox exec` (docs/exec.md) and of
 * the requests relayed the same way (docs/files.md):
 *   POST /v1/sandboxes/NAME/exec   (admin; Upgrade: openshell-exec)
 *        {"command": [...], "tty": B, "rows": N, "cols": N, "term": T}
 *   POST /v1/sandboxes/NAME/upload | /download   {"path": P}
 *   POST /v1/sandboxes/NAME/port-forward          {"port": N}
 *   POST /v1/sandboxes/NAME/attach   (body empty or {}): a foreground
 *        create's agent, its own stdio, which its supervisor holds for
 *        this one client (docs/exec.md "Foreground create")
 *        -> the request goes to the sandbox's supervisor on its session,
 *           and this connection waits for the relay (exec.c);
 *   POST /v1/supervisor/sandboxes/ID/exec/EXEC_ID   (that sandbox's token)
 *        -> the relay's connection, joined to the waiting client.
 * Both answer 101 once paired; errors before that are the usual JSON. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "execframe.h"
#include "gateway.h"
#include "json.h"
#include "log.h"

#define EXEC_ARGV_MAX 256
#define EXEC_ARG_MAX 65536

static int check_command(const json_t *cmd, struct api_response *resp)
{
	size_t i, n = json_array_size(cmd);
	const json_t *v;
	if (!json_is_array(cmd) || n < 1 || n > EXEC_ARGV_MAX)
		return api_error(resp, 400, "invalid_argument",
				 "command: expected an array of 1..%d strings", EXEC_ARGV_MAX),
		       -1;
	json_array_foreach (cmd, i, v) {
		if (!json_is_string(v) || json_string_length(v) > EXEC_ARG_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return api_error(resp, 400, "invalid_argument",
					 "command[%zu]: expected a string of at most %d bytes "
					 "without NUL",
					 i, EXEC_ARG_MAX),
			       -1;
	}
	if (json_string_length(json_array_get(cmd, 0)) == 0)
		return api_error(resp, 400, "invalid_argument", "command[0]: empty program"), -1;
	return 0;
}

static bool relay_request(struct gateway *gw, const json_t *row, json_t *msg_taken,
			  const char *what, struct api_response *resp);

/* The attach message: the agent's stdio were made when it started (its
 * terminal too), so the body is empty or {}. */
static bool attach_request(struct gateway *gw, const struct api_request *req, const json_t *row,
			   struct api_response *resp)
{
	static const char *const keys[] = { NULL };
	if (req->body_len > 0) {
		_cleanup_json_ json_t *body = api_body(req, keys, resp);
		if (!body)
			return true;
	}
	return relay_request(gw, row, json_pack("{s:s, s:b}", "type", "exec", "agent", 1), "attach",
			     resp);
}

bool api_exec_route(struct gateway *gw, const struct api_request *req, const json_t *row,
		    bool agent, struct api_response *resp)
{
	static const char *const keys[] = { "command", "tty", "rows", "cols", "term", NULL };
	const char *route = agent ? "attach" : "exec";
	if (strcmp(req->method, "POST") != 0)
		return api_error(resp, 405, "method_not_allowed", "%s takes POST", route), true;
	if (!req->upgrade_exec)
		return api_error(resp, 400, "upgrade_required",
				 "%s needs \"Upgrade: openshell-exec\" and \"Connection: "
				 "Upgrade\" (use `openshell sandbox %s`)",
				 route, agent ? "create" : "exec"),
		       true;
	if (agent)
		return attach_request(gw, req, row, resp);
	_cleanup_json_ json_t *body = api_body(req, keys, resp);
	if (!body)
		return true;
	bool tty = false;
	int64_t rows = 0, cols = 0;
	const char *term = NULL;
	os_error err = { 0 };
	if (check_command(json_object_get(body, "command"), resp) < 0)
		return true;
	if (json_get_bool(body, "tty", false, &tty, &err) < 0 ||
	    json_get_int(body, "rows", false, 0, 65535, &rows, &err) < 0 ||
	    json_get_int(body, "cols", false, 0, 65535, &cols, &err) < 0 ||
	    json_get_string(body, "term", false, &term, &err) < 0)
		return api_error(resp, 400, "invalid_argument", "%s", err.msg), true;
	if (term && !tty)
		return api_error(resp, 400, "invalid_argument", "term: only with \"tty\": true"),
		       true;
	if (term && !execframe_term_ok(term))
		return api_error(resp, 400, "invalid_argument",
				 "term: expected a terminal type of 1..%d characters of "
				 "[A-Za-z0-9.+_-]",
				 EXECFRAME_TERM_MAX),
		       true;
	_cleanup_json_ json_t *msg = json_pack("{s:s, s:O, s:b, s:I, s:I}", "type", "exec", "argv",
					       json_object_get(body, "command"), "tty", tty, "rows",
					       (json_int_t)rows, "cols", (json_int_t)cols);
	if (msg && term)
		json_object_set_new(msg, "term", json_string(term));
	char what[128];
	snprintf(what, sizeof what, "exec of %.64s%s",
		 json_string_value(json_array_get(json_object_get(body, "command"), 0)),
		 tty ? " with a tty" : "");
	return relay_request(gw, row, steal_ptr(msg), what, resp);
}

/* The common part of every relayed request (exec, transfer, forward): a
 * Ready sandbox with a live session, a one-time id, the message (whose
 * reference this takes) on the session, and the client parked until the
 * relay dials back. */
static bool relay_request(struct gateway *gw, const json_t *row, json_t *msg_taken,
			  const char *what, struct api_response *resp)
{
	_cleanup_json_ json_t *msg = msg_taken;
	const char *id = json_string_value(json_object_get(row, "id"));
	const char *name = json_string_value(json_object_get(row, "name"));
	const char *phase = json_string_value(json_object_get(row, "phase"));
	os_error err = { 0 };
	if (!msg)
		return api_error(resp, 500, "internal", "out of memory"), true;
	if (!phase || strcmp(phase, "Ready") != 0 || !sessions_live(gw, id))
		return api_error(resp, 409, "not_ready",
				 "sandbox %s is %s: %s needs a Ready sandbox with a live "
				 "supervisor session",
				 name,
				 phase && strcmp(phase, "Ready") ? phase : "without a session",
				 json_string_value(json_object_get(msg, "type"))),
		       true;
	char token[SECRET_TOKEN_HEX + 1];
	if (secret_random_hex(token, &err) < 0)
		return api_fail(resp, &err), true;
	token[EXEC_ID_HEX] = '\0';
	if (json_object_set_new(msg, "id", json_string(token)) < 0 || !sessions_push(gw, id, msg))
		return api_error(resp, 409, "not_ready",
				 "sandbox %s: its supervisor session closed; try again", name),
		       true;
	log_info("sandbox %s: %s requested (%s)", name, what, token);
	resp->status = 101;
	resp->exec_park = true;
	memcpy(resp->exec_id, token, EXEC_ID_HEX + 1);
	snprintf(resp->exec_sandbox, sizeof resp->exec_sandbox, "%s", id);
	return true;
}

/* Shared by the routes that are not exec: POST with the Upgrade headers. */
static bool relay_route_ok(const struct api_request *req, const char *route,
			   struct api_response *resp)
{
	if (strcmp(req->method, "POST") != 0)
		return api_error(resp, 405, "method_not_allowed", "%s takes POST", route), false;
	if (!req->upgrade_exec)
		return api_error(resp, 400, "upgrade_required",
				 "%s needs \"Upgrade: openshell-exec\" and \"Connection: "
				 "Upgrade\" (use `openshell sandbox %s`)",
				 route, route),
		       false;
	return true;
}

bool api_transfer_route(struct gateway *gw, const struct api_request *req, const json_t *row,
			bool upload, struct api_response *resp)
{
	static const char *const keys[] = { "path", NULL };
	const char *route = upload ? "upload" : "download";
	if (!relay_route_ok(req, route, resp))
		return true;
	_cleanup_json_ json_t *body = api_body(req, keys, resp);
	if (!body)
		return true;
	const char *path = NULL;
	os_error err = { 0 };
	if (json_get_string(body, "path", true, &path, &err) < 0)
		return api_error(resp, 400, "invalid_argument", "%s", err.msg), true;
	size_t len = json_string_length(json_object_get(body, "path"));
	if (len == 0 || len > TRANSFER_PATH_MAX || strlen(path) != len)
		return api_error(resp, 400, "invalid_argument",
				 "path: expected 1..%d bytes without NUL", TRANSFER_PATH_MAX),
		       true;
	char what[TRANSFER_PATH_MAX + 32];
	snprintf(what, sizeof what, "%s of %s", route, path);
	return relay_request(
		gw, row,
		json_pack("{s:s, s:s, s:s}", "type", "transfer", "op", route, "path", path), what,
		resp);
}

bool api_forward_route(struct gateway *gw, const struct api_request *req, const json_t *row,
		       struct api_response *resp)
{
	static const char *const keys[] = { "port", NULL };
	if (!relay_route_ok(req, "port-forward", resp))
		return true;
	_cleanup_json_ json_t *body = api_body(req, keys, resp);
	if (!body)
		return true;
	int64_t port = 0;
	os_error err = { 0 };
	if (json_get_int(body, "port", true, 1, 65535, &port, &err) < 0)
		return api_error(resp, 400, "invalid_argument", "%s", err.msg), true;
	char what[64];
	snprintf(what, sizeof what, "port-forward to %d", (int)port);
	return relay_request(gw, row,
			     json_pack("{s:s, s:I}", "type", "forward", "port", (json_int_t)port),
			     what, resp);
}

void api_exec_attach_route(struct gateway *gw, const struct api_request *req, const char *id,
			   const char *exec_id, struct api_response *resp)
{
	if (strcmp(req->method, "POST") != 0) {
		api_error(resp, 405, "method_not_allowed", "exec attach takes POST");
		return;
	}
	if (!req->upgrade_exec) {
		api_error(resp, 400, "upgrade_required",
			  "exec attach needs \"Upgrade: openshell-exec\"");
		return;
	}
	if (strlen(exec_id) != EXEC_ID_HEX || strspn(exec_id, "0123456789abcdef") != EXEC_ID_HEX) {
		api_error(resp, 404, "not_found", "no such exec");
		return;
	}
	resp->status = 101;
	resp->exec_attach = true;
	memcpy(resp->exec_id, exec_id, EXEC_ID_HEX + 1);
	snprintf(resp->exec_sandbox, sizeof resp->exec_sandbox, "%s", id);
}
