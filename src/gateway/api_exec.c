/* api_exec.c - the two HTTP ends of `sandbox exec` (docs/exec.md):
 *   POST /v1/sandboxes/NAME/exec   (admin; Upgrade: openshell-exec)
 *        {"command": [...], "tty": B, "rows": N, "cols": N, "term": T}
 *        -> the request goes to the sandbox's supervisor on its session,
 *           and this connection waits for the relay (exec.c);
 *   POST /v1/sandboxes/NAME/attach (admin; Upgrade: openshell-exec; body
 *        empty or {}) -> the same, for a foreground create's agent: its own
 *           stdio, which its supervisor holds for this one client;
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

/* The exec message for a command: its argv and terminal, checked. */
static json_t *command_message(const struct api_request *req, const char *eid,
			       struct api_response *resp)
{
	static const char *const keys[] = { "command", "tty", "rows", "cols", "term", NULL };
	_cleanup_json_ json_t *body = api_body(req, keys, resp);
	if (!body)
		return NULL;
	bool tty = false;
	int64_t rows = 0, cols = 0;
	const char *term = NULL;
	os_error err = { 0 };
	if (check_command(json_object_get(body, "command"), resp) < 0)
		return NULL;
	if (json_get_bool(body, "tty", false, &tty, &err) < 0 ||
	    json_get_int(body, "rows", false, 0, 65535, &rows, &err) < 0 ||
	    json_get_int(body, "cols", false, 0, 65535, &cols, &err) < 0 ||
	    json_get_string(body, "term", false, &term, &err) < 0)
		return api_error(resp, 400, "invalid_argument", "%s", err.msg), NULL;
	if (term && !tty)
		return api_error(resp, 400, "invalid_argument", "term: only with \"tty\": true"),
		       NULL;
	if (term && !execframe_term_ok(term))
		return api_error(resp, 400, "invalid_argument",
				 "term: expected a terminal type of 1..%d characters of "
				 "[A-Za-z0-9.+_-]",
				 EXECFRAME_TERM_MAX),
		       NULL;
	json_t *msg = json_pack("{s:s, s:s, s:O, s:b, s:I, s:I}", "type", "exec", "id", eid, "argv",
				json_object_get(body, "command"), "tty", tty, "rows",
				(json_int_t)rows, "cols", (json_int_t)cols);
	if (msg && term)
		json_object_set_new(msg, "term", json_string(term));
	return msg;
}

/* The attach message: the agent's stdio were made when it started (its
 * terminal too), so the body is empty or {}. */
static json_t *agent_message(const struct api_request *req, const char *eid,
			     struct api_response *resp)
{
	static const char *const keys[] = { NULL };
	if (req->body_len > 0) {
		_cleanup_json_ json_t *body = api_body(req, keys, resp);
		if (!body)
			return NULL;
	}
	return json_pack("{s:s, s:s, s:b}", "type", "exec", "id", eid, "agent", 1);
}

bool api_exec_route(struct gateway *gw, const struct api_request *req, const json_t *row,
		    bool agent, struct api_response *resp)
{
	const char *id = json_string_value(json_object_get(row, "id"));
	const char *name = json_string_value(json_object_get(row, "name"));
	const char *phase = json_string_value(json_object_get(row, "phase"));
	const char *what = agent ? "attach" : "exec";
	if (strcmp(req->method, "POST") != 0)
		return api_error(resp, 405, "method_not_allowed", "%s takes POST", what), true;
	if (!req->upgrade_exec)
		return api_error(resp, 400, "upgrade_required",
				 "%s needs \"Upgrade: openshell-exec\" and \"Connection: "
				 "Upgrade\" (use `openshell sandbox %s`)",
				 what, agent ? "create" : "exec"),
		       true;
	os_error err = { 0 };
	char token[SECRET_TOKEN_HEX + 1];
	if (secret_random_hex(token, &err) < 0)
		return api_fail(resp, &err), true;
	token[EXEC_ID_HEX] = '\0';
	_cleanup_json_ json_t *msg =
		agent ? agent_message(req, token, resp) : command_message(req, token, resp);
	if (!msg)
		return true;
	if (!phase || strcmp(phase, "Ready") != 0 || !sessions_live(gw, id))
		return api_error(resp, 409, "not_ready",
				 "sandbox %s is %s: %s needs a Ready sandbox with a live "
				 "supervisor session",
				 name,
				 phase && strcmp(phase, "Ready") ? phase : "without a session",
				 what),
		       true;
	if (!sessions_push(gw, id, msg))
		return api_error(resp, 409, "not_ready",
				 "sandbox %s: its supervisor session closed; try again", name),
		       true;
	if (agent)
		log_info("sandbox %s: attach %s requested", name, token);
	else
		log_info("sandbox %s: exec %s requested (%s%s)", name, token,
			 json_string_value(json_array_get(json_object_get(msg, "argv"), 0)),
			 json_is_true(json_object_get(msg, "tty")) ? ", tty" : "");
	resp->status = 101;
	resp->exec_park = true;
	memcpy(resp->exec_id, token, EXEC_ID_HEX + 1);
	snprintf(resp->exec_sandbox, sizeof resp->exec_sandbox, "%s", id);
	return true;
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
