/* api_policy.c - /v1/sandboxes/NAME/policy (set, get) and /policies (the
 * revision history), plus the supervisor's own read of its policy. A
 * revision is stored before it is pushed, so its status (pending, loaded,
 * failed, superseded) is always answerable. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"
#include "parse.h"

int api_check_policy(const char *yaml, os_error *err);

/* force: 1 or 0 adds "in_force" (the admin views), -1 leaves it out. */
static json_t *revision_view(const json_t *r, bool with_text, int force)
{
	json_t *v = json_deep_copy(r);
	json_object_del(v, "audit_mark");
	if (!with_text)
		json_object_del(v, "policy");
	if (force >= 0)
		json_object_set_new(v, "in_force", json_boolean(force));
	return v;
}

/* Index of the revision in force: the newest loaded one (revs are newest
 * first); the array's size when none has loaded yet. */
static size_t in_force(const json_t *revs)
{
	size_t i;
	const json_t *r;
	json_array_foreach (revs, i, r)
		if (!strcmp(str_or(json_string_value(json_object_get(r, "status")), ""), "loaded"))
			return i;
	return json_array_size(revs);
}

static int64_t audit_mark(struct gateway *gw, json_t *row)
{
	_cleanup_json_ json_t *st = NULL;
	if (gw->driver->ops->status(gw->driver, json_object_get(row, "record"), &st, NULL) < 0)
		return 0;
	return json_integer_value(json_object_get(st, "policy_events"));
}

static void set_policy(struct gateway *gw, const struct api_request *req, json_t *row,
		       struct api_response *resp)
{
	static const char *const keys[] = { "policy", NULL };
	_cleanup_json_ json_t *body = api_body(req, keys, resp);
	const char *yaml = NULL, *id = json_string_value(json_object_get(row, "id"));
	os_error err = { 0 }, perr = { 0 };
	char hash[SECRET_SHA256_HEX + 1];
	int64_t rev = 0;
	if (!body)
		return;
	if (json_get_string(body, "policy", true, &yaml, &err) < 0) {
		api_error(resp, 400, "invalid_argument", "%s", err.msg);
		return;
	}
	secret_sha256_hex(yaml, strlen(yaml), hash);
	bool valid = api_check_policy(yaml, &perr) == 0;
	if (store_policy_add(gw->store, id, hash, yaml, valid ? "pending" : "failed",
			     valid ? "" : perr.msg, audit_mark(gw, row), &rev, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	if (!valid) {
		api_error(resp, 422, "invalid_policy", "revision %lld: %s", (long long)rev,
			  perr.msg);
		return;
	}
	if (lifecycle_configure(gw, row, yaml, NULL, &err) < 0) {
		os_error serr = { 0 };
		if (store_policy_set_status(gw->store, id, rev, "failed", err.msg, &serr) < 0)
			storage_fault(gw, id, json_string_value(json_object_get(row, "name")),
				      "recording a policy status", &serr);
		if (storage_is_full(err.code)) {
			os_error_prefix(&err, "revision %lld not delivered", (long long)rev);
			api_fail(resp, &err);
		} else
			api_error(resp, 422, "policy_not_delivered", "revision %lld: %s",
				  (long long)rev, err.msg);
		return;
	}
	/* A live session gets it now; otherwise the next session's hello does. */
	sessions_push_policy(gw, id, rev, yaml);
	resp->status = 202;
	resp->body = json_pack("{s:I, s:s, s:s}", "revision", (json_int_t)rev, "hash", hash,
			       "status", "pending");
}

bool api_policy_route(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
		      struct api_response *resp)
{
	if (n != 3 || strcmp(parts[0], "sandboxes") != 0)
		return false;
	bool one = !strcmp(parts[2], "policy");
	if (!one && strcmp(parts[2], "policies") != 0)
		return false;
	os_error err = { 0 };
	_cleanup_json_ json_t *row = NULL, *revs = NULL;
	if (store_sandbox_get(gw->store, parts[1], &row, &err) < 0)
		return api_fail(resp, &err), true;
	const char *id = json_string_value(json_object_get(row, "id"));
	if (one && !strcmp(req->method, "PUT"))
		return set_policy(gw, req, row, resp), true;
	if (strcmp(req->method, "GET") != 0)
		return api_error(resp, 405, "method_not_allowed", "use GET or PUT"), true;
	if (store_policy_list(gw->store, id, &revs, &err) < 0)
		return api_fail(resp, &err), true;
	if (one && json_array_size(revs) == 0)
		return api_error(
			       resp, 404, "not_found",
			       "sandbox \"%s\" has no policy: set one with `openshell policy set`",
			       parts[1]),
		       true;
	resp->status = 200;
	size_t force = in_force(revs), i;
	json_t *r;
	if (one) {
		/* The revision in force (the newest still pending when none is yet),
		 * with the newer ones that are not, so nobody reads a failed
		 * revision as the running policy. */
		size_t shown = force < json_array_size(revs) ? force : 0;
		json_t *view = revision_view(json_array_get(revs, shown), true, force == shown);
		json_t *newer = json_array();
		for (i = 0; i < shown; i++)
			json_array_append_new(newer,
					      revision_view(json_array_get(revs, i), false, false));
		json_object_set_new(view, "newer", newer);
		resp->body = view;
		return true;
	}
	json_t *out = json_array();
	json_array_foreach (revs, i, r)
		json_array_append_new(out, revision_view(r, false, i == force));
	resp->body = json_pack("{s:o}", "revisions", out);
	return true;
}

/* /v1/supervisor/sandboxes/ID/{policy,session,policy-status,heartbeat}: only
 * the sandbox's own token. */
bool api_supervisor_route(struct gateway *gw, const struct api_request *req, const json_t *caller,
			  char **parts, size_t n, struct api_response *resp)
{
	if ((n != 4 && n != 5) || strcmp(parts[1], "sandboxes") != 0)
		return false;
	const char *id = json_string_value(json_object_get(caller, "id"));
	if (strcmp(parts[2], id) != 0) {
		api_error(resp, 403, "forbidden", "this token belongs to another sandbox");
		return true;
	}
	if (n == 5 && !strcmp(parts[3], "exec"))
		return api_exec_attach_route(gw, req, id, parts[4], resp), true;
	if (n == 5)
		return false;
	os_error err = { 0 };
	if (!strcmp(parts[3], "policy") && !strcmp(req->method, "GET")) {
		_cleanup_json_ json_t *rev = NULL;
		if (store_policy_latest(gw->store, id, &rev, &err) < 0)
			return api_fail(resp, &err), true;
		resp->status = 200;
		resp->body = revision_view(rev, true, -1); /* the newest: what to load */
		return true;
	}
	return api_session_route(gw, req, id, parts[3], resp);
}
