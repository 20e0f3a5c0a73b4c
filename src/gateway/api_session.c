/* api_session.c - the supervisor's own routes under
 * /v1/supervisor/sandboxes/ID/ (api.c has already checked that the caller's
 * sandbox token is ID's): the session stream, policy-status reports and
 * heartbeats. A report can only change its own sandbox's revisions. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"
#include "log.h"

static void ok(struct api_response *resp)
{
	resp->status = 200;
	resp->body = json_pack("{s:s}", "status", "ok");
}

static void open_session(const char *id, struct api_response *resp)
{
	if (strlen(id) >= sizeof(resp->stream_sandbox)) {
		api_error(resp, 400, "invalid_argument", "sandbox id too long");
		return;
	}
	resp->status = 200;
	resp->stream = true;
	resp->session = true;
	memcpy(resp->stream_sandbox, id, strlen(id) + 1);
}

/* Marks the older revisions still pending as superseded by rev. */
static void supersede(struct gateway *gw, const char *id, const json_t *revs, json_int_t rev)
{
	size_t i;
	json_t *r;
	json_array_foreach ((json_t *)revs, i, r) {
		json_int_t n = json_integer_value(json_object_get(r, "revision"));
		const char *st = json_string_value(json_object_get(r, "status"));
		if (n < rev && st && !strcmp(st, "pending"))
			store_policy_set_status(gw->store, id, n, "superseded",
						"a newer revision replaced it", NULL);
	}
}

static bool has_revision(const json_t *revs, json_int_t rev)
{
	size_t i;
	json_t *r;
	json_array_foreach ((json_t *)revs, i, r)
		if (json_integer_value(json_object_get(r, "revision")) == rev)
			return true;
	return false;
}

static void policy_status(struct gateway *gw, const struct api_request *req, const char *id,
			  struct api_response *resp)
{
	static const char *const keys[] = { "revision", "status", "message", NULL };
	_cleanup_json_ json_t *body = api_body(req, keys, resp), *revs = NULL;
	const char *status = NULL, *message = "";
	int64_t rev = 0;
	os_error err = { 0 };
	if (!body)
		return;
	if (json_get_int(body, "revision", true, 1, INT64_MAX, &rev, &err) < 0 ||
	    json_get_string(body, "status", true, &status, &err) < 0 ||
	    json_get_string(body, "message", false, &message, &err) < 0) {
		api_error(resp, 400, "invalid_argument", "%s", err.msg);
		return;
	}
	bool loaded = !strcmp(status, "loaded");
	if (!loaded && strcmp(status, "failed") != 0) {
		api_error(resp, 400, "invalid_argument",
			  "status: expected \"loaded\" or \"failed\", got \"%s\"", status);
		return;
	}
	if (strlen(message) > 2048) {
		api_error(resp, 400, "invalid_argument", "message: over 2048 bytes");
		return;
	}
	if (store_policy_list(gw->store, id, &revs, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	if (!has_revision(revs, rev)) {
		api_error(resp, 404, "not_found", "sandbox %s has no policy revision %lld", id,
			  (long long)rev);
		return;
	}
	if (store_policy_set_status(
		    gw->store, id, rev, loaded ? "loaded" : "failed",
		    loaded ? "" : (*message ? message : "the supervisor refused it"), &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	if (loaded)
		supersede(gw, id, revs, rev);
	log_info("sandbox %s: policy revision %lld %s%s%s", id, (long long)rev, status,
		 loaded ? "" : ": ", loaded ? "" : message);
	ok(resp);
}

/* Heartbeat: an empty body or {"policy_revision": N} (what is running). */
static void heartbeat(struct gateway *gw, const struct api_request *req, const char *id,
		      struct api_response *resp)
{
	static const char *const keys[] = { "policy_revision", NULL };
	if (req->body_len > 0) {
		_cleanup_json_ json_t *body = api_body(req, keys, resp);
		int64_t rev = 0;
		os_error err = { 0 };
		if (!body)
			return;
		if (json_get_int(body, "policy_revision", false, 0, INT64_MAX, &rev, &err) < 0) {
			api_error(resp, 400, "invalid_argument", "%s", err.msg);
			return;
		}
	}
	sessions_heartbeat(gw, id);
	ok(resp);
}

bool api_session_route(struct gateway *gw, const struct api_request *req, const char *id,
		       const char *leaf, struct api_response *resp)
{
	const char *want = !strcmp(leaf, "session") ? "GET" : "POST";
	if (strcmp(leaf, "session") != 0 && strcmp(leaf, "policy-status") != 0 &&
	    strcmp(leaf, "heartbeat") != 0)
		return false;
	if (strcmp(req->method, want) != 0)
		return api_error(resp, 405, "method_not_allowed", "%s takes %s", leaf, want), true;
	if (!strcmp(leaf, "session"))
		open_session(id, resp);
	else if (!strcmp(leaf, "policy-status"))
		policy_status(gw, req, id, resp);
	else
		heartbeat(gw, req, id, resp);
	return true;
}
