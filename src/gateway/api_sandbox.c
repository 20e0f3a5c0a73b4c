/* api_sandbox.c - /v1/sandboxes: create, list, get, stop, start, delete and
 * logs. Validates everything before anything is stored, stores intent before
 * the driver acts, and never returns a sandbox token or another secret. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "driver_view.h"
#include "gateway.h"
#include "json.h"
#include "trace.h"
#include "log.h"
#include "parse.h"
#include "policy.h"

#define NAME_MAX_LEN 63
/* A sandbox created without a policy gets this one: no network at all. */
#define DEFAULT_POLICY                                                                             \
	"# default policy: no network access. Replace it with `openshell policy set`.\n"           \
	"version: 1\n"

json_t *api_sandbox_view(const json_t *row)
{
	const json_t *rec = json_object_get(row, "record");
	json_t *v = json_pack(
		"{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O*, s:O*, s:O*}", "id",
		json_object_get(row, "id"), "name", json_object_get(row, "name"), "phase",
		json_object_get(row, "phase"), "message", json_object_get(row, "message"),
		"exit_code", json_object_get(row, "exit_code"), "resource_version",
		json_object_get(row, "resource_version"), "created_at",
		json_object_get(row, "created_at"), "providers", json_object_get(row, "providers"),
		"driver", json_object_get(rec, "driver"), "spec", json_object_get(rec, "spec"),
		"placement", json_object_get(rec, "placement"));
	if (v && lifecycle_session_lost(row))
		json_object_set_new(v, "session", json_string("lost"));
	return v;
}

/* The view, with what could not be saved as its message while that lasts
 * (the stored message is stale exactly then). */
json_t *api_sandbox_view_of(const struct gateway *gw, const json_t *row)
{
	json_t *v = api_sandbox_view(row);
	const json_t *rec = json_object_get(row, "record");
	/* What the driver last said (e.g. "creating its objects" while a
	 * kubernetes create runs off the loop), beside the public phase. */
	if (v && json_object_get(rec, "phase"))
		json_object_set_new(v, "backend",
				    json_pack("{s:O, s:O*}", "phase", json_object_get(rec, "phase"),
					      "message", json_object_get(rec, "message")));
	const char *note = storage_note(gw, json_string_value(json_object_get(row, "id")));
	if (v && note)
		json_object_set_new(v, "message", json_string(note));
	return v;
}

/* DNS label: what both drivers can use as a name. */
static int check_name(const char *name, os_error *err)
{
	size_t n = strlen(name);
	if (n == 0 || n > NAME_MAX_LEN)
		return os_error_set(err, EINVAL, "name: must be 1..%d characters, got %zu",
				    NAME_MAX_LEN, n);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (c == '-' && i > 0 && i + 1 < n);
		if (!ok)
			return os_error_set(err, EINVAL,
					    "name \"%s\": use lower-case letters, digits and inner "
					    "'-' only (a DNS label), bad character at %zu",
					    name, i);
	}
	return 0;
}

/* What a client makes up to retry a create safely: 1..64 of [A-Za-z0-9_-]. */
static int check_request_id(const char *rid, os_error *err)
{
	size_t n = strlen(rid);
	if (n == 0 || n > 64 ||
	    strspn(rid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n)
		return os_error_set(err, EINVAL,
				    "client_request_id: expected 1..64 of [A-Za-z0-9_-]");
	return 0;
}

/* A create that already happened with this request id (the client retries
 * after losing the answer): 200 with that sandbox, or 409 when the retry
 * names another sandbox. False when there is none. */
static bool replayed(struct gateway *gw, const char *rid, const char *given,
		     struct api_response *resp)
{
	_cleanup_json_ json_t *prior = NULL;
	if (!rid || store_sandbox_by_request(gw->store, rid, &prior, NULL) < 0)
		return false;
	const char *name = json_string_value(json_object_get(prior, "name"));
	if (given && strcmp(given, name) != 0) {
		api_error(resp, 409, "conflict",
			  "client_request_id %s already created sandbox \"%s\", not \"%s\"", rid,
			  name, given);
		return true;
	}
	resp->status = 200;
	resp->body = api_sandbox_view_of(gw, prior);
	return true;
}

static int check_providers(struct gateway *gw, const json_t *provs, os_error *err)
{
	size_t i;
	json_t *p;
	if (!json_is_array(provs))
		return os_error_set(err, EINVAL, "providers: expected an array of names");
	json_array_foreach (provs, i, p) {
		_cleanup_json_ json_t *row = NULL;
		if (!json_is_string(p))
			return os_error_set(err, EINVAL, "providers[%zu]: expected a name", i);
		if (store_provider_get(gw->store, json_string_value(p), &row, err) < 0)
			return err->code == ENOENT
				       ? os_error_set(err, EINVAL,
						      "provider \"%s\" does not exist: create it "
						      "with `openshell provider create`",
						      json_string_value(p))
				       : -1;
	}
	return 0;
}

/* Parses the policy text; a policy that does not validate is a 422 naming every problem. */
int api_check_policy(const char *yaml, os_error *err);
int api_check_policy(const char *yaml, os_error *err)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	if (policy_parse("policy", yaml, strlen(yaml), &doc, &diag, err) == 0) {
		policy_doc_free(doc);
		return 0;
	}
	char msg[OS_ERROR_MSG_MAX] = "";
	for (size_t i = 0; i < diag.n && i < 5; i++) {
		size_t l = strlen(msg);
		snprintf(msg + l, sizeof(msg) - l, "%s%s", i ? "; " : "", diag.msgs[i]);
	}
	policy_diag_free(&diag);
	if (msg[0])
		os_error_set(err, EPROTO, "invalid policy: %s", msg);
	else
		err->code = EPROTO;
	return -1;
}

static json_t *driver_request(const struct gateway *gw, const json_t *body, const char *id,
			      const char *name)
{
	json_t *spec = json_object();
	/* The caller's fields a driver validates (driver.h "spec"); a driver
	 * refuses what it cannot honour (the local one: image, resources). */
	static const char *const keys[] = { "command", "env",	    "labels",
					    "image",   "resources", "runtime_class_name",
					    "attach" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(body, keys[i]);
		/* A foreground create is a wish: where the driver cannot attach
		 * its agent, it runs as before (the view's spec says which). */
		if (v && (strcmp(keys[i], "attach") != 0 || gw->driver->ops->attach))
			json_object_set(spec, keys[i], v);
	}
	if (!json_object_get(spec, "command"))
		json_object_set_new(spec, "command", json_pack("[s, s]", "sleep", "infinity"));
	return json_pack("{s:s, s:s, s:o}", "id", id, "name", name, "spec", spec);
}

/* The row and its first policy revision land together or not at all. */
static int insert_with_policy(struct gateway *gw, json_t *row, const char *policy, os_error *err)
{
	char phash[SECRET_SHA256_HEX + 1];
	int64_t rev = 0;
	const char *id = json_string_value(json_object_get(row, "id"));
	secret_sha256_hex(policy, strlen(policy), phash);
	if (store_begin(gw->store, err) < 0)
		return -1;
	if (store_sandbox_insert(gw->store, row, err) < 0 ||
	    store_policy_add(gw->store, id, phash, policy, "pending", "", 0, &rev, err) < 0) {
		store_rollback(gw->store);
		return -1;
	}
	if (store_commit(gw->store, err) < 0)
		return -1;
	server_sandboxes_changed(gw);
	return 0;
}

/* Undoes what the driver holds for a sandbox that was never stored (its
 * directories, its uid claim): nothing is left half-made. */
static void forget_unstored(struct gateway *gw, json_t *record)
{
	os_error err = { 0 };
	if (gw->driver->ops->delete (gw->driver, record, &err) < 0)
		log_warn("sandbox %s: removing what its failed create left: %s",
			 json_string_value(json_object_get(record, "name")), err.msg);
}

/* Stores a validated sandbox and starts it. The driver's material (policy
 * file, token) is written before the row: a row never exists whose
 * supervisor would start without them (a full disk used to leave exactly
 * that, and the supervisor then failed on missing flags). */
static void create_stored(struct gateway *gw, json_t *row, const char *policy, const char *token,
			  struct api_response *resp)
{
	os_error err = { 0 };
	json_t *record = json_object_get(row, "record");
	if (lifecycle_configure(gw, row, policy, token, &err) < 0) {
		if (storage_is_full(err.code)) {
			forget_unstored(gw, record);
			api_fail(resp, &err);
			return;
		}
		/* Refused (e.g. the cluster refused the driver): the row is
		 * stored in Error with the reason, so the caller sees why. */
		json_object_set_new(row, "phase", json_string("Error"));
		json_object_set_new(row, "message", json_string(err.msg));
	}
	os_error serr = { 0 };
	trace_mark("configured");
	if (insert_with_policy(gw, row, policy, &serr) < 0) {
		forget_unstored(gw, record);
		api_fail(resp, &serr);
		return;
	}
	/* A create that fails leaves the row in Error with the reason, or
	 * waiting for space: the caller sees which either way. */
	trace_mark("stored");
	if (strcmp(json_string_value(json_object_get(row, "phase")), "Error") != 0)
		lifecycle_act(gw, row, "create", &err);
	trace_mark("driver-created");
	resp->status = 201;
	resp->body = api_sandbox_view_of(gw, row);
}

static void create(struct gateway *gw, const struct api_request *req, struct api_response *resp)
{
	static const char *const keys[] = { "name",
					    "command",
					    "env",
					    "labels",
					    "image",
					    "resources",
					    "runtime_class_name",
					    "policy",
					    "providers",
					    "client_request_id",
					    "attach",
					    NULL };
	_cleanup_json_ json_t *body = api_body(req, keys, resp), *record = NULL, *row = NULL,
			      *dreq = NULL, *taken = NULL;
	os_error err = { 0 };
	char id[SECRET_TOKEN_HEX + 1], token[SECRET_TOKEN_HEX + 1], hash[SECRET_SHA256_HEX + 1];
	char name[NAME_MAX_LEN + 1];
	const char *policy = NULL, *given = NULL, *rid = NULL;
	if (!body)
		return;
	trace_mark("create-request");
	if (json_get_string(body, "name", false, &given, &err) < 0 ||
	    json_get_string(body, "policy", false, &policy, &err) < 0 ||
	    json_get_string(body, "client_request_id", false, &rid, &err) < 0 ||
	    (rid && check_request_id(rid, &err) < 0)) {
		api_error(resp, 400, "invalid_argument", "%s", err.msg);
		return;
	}
	if (replayed(gw, rid, given, resp))
		return;
	if (secret_random_hex(id, &err) < 0 || secret_random_hex(token, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	id[16] = '\0';
	snprintf(name, sizeof(name), "%s", given ? given : "");
	if (!given)
		snprintf(name, sizeof(name), "sandbox-%.6s", id);
	if ((given && check_name(given, &err) < 0) ||
	    (json_object_get(body, "providers") &&
	     check_providers(gw, json_object_get(body, "providers"), &err) < 0)) {
		api_fail(resp, &err);
		return;
	}
	if (store_sandbox_get(gw->store, name, &taken, NULL) == 0) {
		api_error(resp, 409, "already_exists", "a sandbox named \"%s\" already exists",
			  name);
		return;
	}
	if (!policy)
		policy = DEFAULT_POLICY;
	if (api_check_policy(policy, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	dreq = driver_request(gw, body, id, name);
	/* The validated policy travels with the request: a driver that places the
	 * supervisor itself (kubernetes) starts it with this policy. */
	if (dreq)
		json_object_set_new(dreq, "policy", driver_view_policy(policy));
	if (gw->driver->ops->validate_spec(gw->driver, dreq, &record, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	secret_sha256_hex(token, strlen(token), hash);
	json_t *provs = json_object_get(body, "providers");
	row = json_pack("{s:s, s:s, s:O, s:s, s:s, s:s, s:n, s:s, s:o, s:s}", "id", id, "name",
			name, "record", record, "phase", "Provisioning", "desired", "running",
			"message", "", "exit_code", "token_hash", hash, "providers",
			provs ? json_incref(provs) : json_array(), "client_request_id",
			rid ? rid : "");
	if (!row) {
		forget_unstored(gw, record);
		api_error(resp, 500, "internal", "out of memory building the sandbox row");
		return;
	}
	create_stored(gw, row, policy, token, resp);
}

static void act(struct gateway *gw, const struct api_request *req, json_t *row, const char *action,
		struct api_response *resp)
{
	os_error err = { 0 };
	if (req->body_len > 0) {
		static const char *const keys[] = { "resource_version", NULL };
		_cleanup_json_ json_t *body = api_body(req, keys, resp);
		int64_t v = 0;
		if (!body)
			return;
		if (json_get_int(body, "resource_version", false, 1, INT64_MAX, &v, &err) < 0) {
			api_error(resp, 400, "invalid_argument", "%s", err.msg);
			return;
		}
		if (v && v != json_integer_value(json_object_get(row, "resource_version"))) {
			api_error(resp, 409, "conflict",
				  "sandbox \"%s\" is at resource version %lld, not %lld: "
				  "read it again and retry",
				  json_string_value(json_object_get(row, "name")),
				  (long long)json_integer_value(
					  json_object_get(row, "resource_version")),
				  (long long)v);
			return;
		}
	}
	if (lifecycle_act(gw, row, action, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	resp->status = 202;
	resp->body = api_sandbox_view_of(gw, row);
}

/* True when the query has KEY=1 or KEY=true. */
static bool query_flag(const char *query, const char *key)
{
	char want[64];
	for (const char *v = "1"; v; v = strcmp(v, "1") == 0 ? "true" : NULL) {
		snprintf(want, sizeof want, "%s=%s", key, v);
		for (const char *p = query; (p = strstr(p, want)) != NULL; p++) {
			size_t n = strlen(want);
			if ((p == query || p[-1] == '&') && (p[n] == '\0' || p[n] == '&'))
				return true;
		}
	}
	return false;
}

/* A day: the CLI asks for its wait (120 s); anything longer is a typo. */
#define WATCH_TIMEOUT_MAX_S 86400

static void watch(const struct api_request *req, struct api_response *resp)
{
	const char *name = strstr(req->query, "name=");
	if (name && name != req->query && name[-1] != '&')
		name = NULL;
	if (name) {
		name += 5;
		size_t n = strcspn(name, "&");
		if (n >= sizeof(resp->stream_sandbox)) {
			api_error(resp, 400, "invalid_argument", "name: too long");
			return;
		}
		memcpy(resp->stream_sandbox, name, n);
		resp->stream_sandbox[n] = '\0';
	}
	const char *t = strstr(req->query, "timeout_s=");
	if (t && (t == req->query || t[-1] == '&')) {
		uint64_t v = 0;
		t += strlen("timeout_s=");
		if (parse_u64(t, strcspn(t, "&"), 1, WATCH_TIMEOUT_MAX_S, &v, NULL) < 0) {
			api_error(resp, 400, "invalid_argument",
				  "timeout_s: expected whole seconds from 1 to %d",
				  WATCH_TIMEOUT_MAX_S);
			return;
		}
		resp->watch_timeout_s = (unsigned)v;
	}
	resp->status = 200;
	resp->stream = true;
	resp->watch = true;
}

static void logs(struct gateway *gw, const struct api_request *req, json_t *row,
		 struct api_response *resp)
{
	const json_t *rec = json_object_get(row, "record");
	const char *dir =
		json_string_value(json_object_get(json_object_get(rec, "placement"), "state_dir"));
	const char *id = json_string_value(json_object_get(row, "id"));
	const struct driver_ops *ops = gw->driver->ops;
	if (!dir && ops->logs) {
		os_error err = { 0 };
		int fd = -1;
		if (ops->logs(gw->driver, rec, query_flag(req->query, "audit"),
			      query_flag(req->query, "follow"), &fd, &err) < 0) {
			api_error(resp,
				  err.code == EBUSY	? 503
				  : err.code == ENOTSUP ? 422
							: 502,
				  err.code == EBUSY	? "busy"
				  : err.code == ENOTSUP ? "unsupported"
							: "backend",
				  "%s", err.msg);
			return;
		}
		resp->stream_pipe = true;
		resp->stream_fd = fd;
		resp->stream = true;
		resp->status = 200;
		return;
	}
	if (!dir) {
		api_error(resp, 422, "unsupported", "logs are not available for the %s driver",
			  json_string_value(json_object_get(rec, "driver")));
		return;
	}
	/* audit=1: the supervisor's decision records (JSON lines) instead of its log. */
	const char *file = query_flag(req->query, "audit") ? "audit.log" : "supervisor.log";
	if (snprintf(resp->stream_path, sizeof(resp->stream_path), "%s/sandboxes/%s/%s", dir, id,
		     file) >= (int)sizeof(resp->stream_path)) {
		api_error(resp, 500, "internal", "log path too long");
		return;
	}
	snprintf(resp->stream_sandbox, sizeof(resp->stream_sandbox), "%s", id);
	resp->follow = query_flag(req->query, "follow");
	resp->stream = true;
	resp->status = 200;
}

bool api_sandbox_route(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
		       struct api_response *resp)
{
	if (n < 1 || strcmp(parts[0], "sandboxes") != 0 || n > 3)
		return false;
	const char *m = req->method;
	os_error err = { 0 };
	if (n == 1) {
		_cleanup_json_ json_t *rows = NULL;
		if (!strcmp(m, "POST"))
			create(gw, req, resp);
		else if (!strcmp(m, "GET") && query_flag(req->query, "watch")) {
			watch(req, resp);
		} else if (!strcmp(m, "GET")) {
			if (store_sandbox_list(gw->store, &rows, &err) < 0)
				return api_fail(resp, &err), true;
			json_t *out = json_array();
			size_t i;
			json_t *r;
			json_array_foreach (rows, i, r)
				json_array_append_new(out, api_sandbox_view_of(gw, r));
			resp->status = 200;
			resp->body = json_pack("{s:o}", "sandboxes", out);
		} else
			api_error(resp, 405, "method_not_allowed",
				  "use GET or POST on /v1/sandboxes");
		return true;
	}
	if (n == 3 && (!strcmp(parts[2], "policy") || !strcmp(parts[2], "policies")))
		return false;
	_cleanup_json_ json_t *row = NULL;
	if (store_sandbox_get(gw->store, parts[1], &row, &err) < 0)
		return api_fail(resp, &err), true;
	if (n == 2 && !strcmp(m, "GET")) {
		resp->status = 200;
		resp->body = api_sandbox_view_of(gw, row);
		driver_view_add_status(gw, row, resp->body);
	} else if (n == 2 && !strcmp(m, "DELETE"))
		act(gw, req, row, "delete", resp);
	else if (n == 3 && !strcmp(m, "POST") &&
		 (!strcmp(parts[2], "stop") || !strcmp(parts[2], "start")))
		act(gw, req, row, parts[2], resp);
	else if (n == 3 && !strcmp(m, "GET") && !strcmp(parts[2], "logs"))
		logs(gw, req, row, resp);
	else if (n == 3 && (!strcmp(parts[2], "exec") || !strcmp(parts[2], "attach")))
		api_exec_route(gw, req, row, !strcmp(parts[2], "attach"), resp);
	else if (n == 3 && (!strcmp(parts[2], "upload") || !strcmp(parts[2], "download")))
		api_transfer_route(gw, req, row, !strcmp(parts[2], "upload"), resp);
	else if (n == 3 && !strcmp(parts[2], "port-forward"))
		api_forward_route(gw, req, row, resp);
	else
		api_error(resp, 404, "not_found", "no such sandbox route: %s %s", m, req->path);
	return true;
}
