/* api.c - the API's front door: authentication (admin bearer token, plus a
 * verified client certificate under mTLS, or a sandbox token valid only for
 * that sandbox's supervisor routes), routing
 * by /v1 path segments, and the JSON error shape. A route never runs for a
 * caller it does not belong to. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"
#include "driver_host.h"

#define SEGMENTS_MAX 8

void api_error(struct api_response *resp, int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_decref(resp->body);
	resp->status = status;
	resp->body = json_pack("{s:s, s:s}", "error", code, "message", msg);
}

void api_fail(struct api_response *resp, const os_error *err)
{
	switch (err->code) {
	case EINVAL:
		api_error(resp, 400, "invalid_argument", "%s", err->msg);
		return;
	case ENOENT:
		api_error(resp, 404, "not_found", "%s", err->msg);
		return;
	case EEXIST:
		api_error(resp, 409, "already_exists", "%s", err->msg);
		return;
	case ESTALE:
		api_error(resp, 409, "conflict", "%s", err->msg);
		return;
	case EBUSY:
		api_error(resp, 409, "conflict", "%s", err->msg);
		return;
	case EMSGSIZE:
		api_error(resp, 413, "too_large", "%s", err->msg);
		return;
	case EPROTO:
		api_error(resp, 422, "unprocessable", "%s", err->msg);
		return;
	case ENOTSUP:
		api_error(resp, 422, "unsupported", "%s", err->msg);
		return;
	case ENOSPC:
	case EDQUOT:
		api_error(resp, 507, "insufficient_storage",
			  "%s (the gateway's state directory is full: free space there and retry)",
			  err->msg);
		return;
	default:
		api_error(resp, 500, "internal", "%s", err->msg);
		return;
	}
}

json_t *api_body(const struct api_request *req, const char *const allowed[],
		 struct api_response *resp)
{
	os_error err = { 0 };
	if (req->body_len == 0) {
		api_error(resp, 400, "invalid_argument", "request body: expected a JSON object");
		return NULL;
	}
	json_t *j = json_parse_strict(req->body, req->body_len, GW_BODY_MAX, &err);
	if (!j) {
		api_error(resp, err.code == EMSGSIZE ? 413 : 400, "invalid_json",
			  "request body: %s", err.msg);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		api_error(resp, 400, "invalid_argument", "request body: expected a JSON object");
		return NULL;
	}
	if (json_check_keys(j, allowed, "request body", &err) < 0) {
		json_decref(j);
		api_error(resp, 400, "unknown_field", "%s", err.msg);
		return NULL;
	}
	return j;
}

static size_t split_path(char *path, char **parts)
{
	size_t n = 0;
	for (char *p = path; *p && n < SEGMENTS_MAX;) {
		while (*p == '/')
			*p++ = '\0';
		if (!*p)
			break;
		parts[n++] = p;
		while (*p && *p != '/')
			p++;
	}
	return n;
}

/* Returns 1 admin, 0 sandbox (row in *caller), -1 refused (resp set). */
static int authenticate(struct gateway *gw, const struct api_request *req, json_t **caller,
			struct api_response *resp)
{
	if (!req->bearer) {
		api_error(resp, 401, "unauthenticated",
			  "missing bearer token: send \"Authorization: Bearer TOKEN\" (the admin "
			  "token is in %s/admin.token)",
			  gw->state_dir);
		return -1;
	}
	if (secret_equal(req->bearer, gw->admin_token))
		return 1;
	char hash[SECRET_SHA256_HEX + 1];
	os_error err = { 0 };
	secret_sha256_hex(req->bearer, strlen(req->bearer), hash);
	if (store_sandbox_by_token(gw->store, hash, caller, &err) == 0)
		return 0;
	api_error(resp, 401, "unauthenticated", "the bearer token is not valid for this gateway");
	return -1;
}

static void status_route(struct gateway *gw, struct api_response *resp)
{
	_cleanup_json_ json_t *rows = NULL;
	os_error err = { 0 };
	if (store_sandbox_list(gw->store, &rows, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	resp->status = 200;
	resp->body = json_pack("{s:s, s:s, s:s, s:I}", "version", GW_VERSION, "driver",
			       gw->driver->ops->name, "state_dir", gw->state_dir, "sandboxes",
			       (json_int_t)json_array_size(rows));
	json_t *health = resp->body ? driver_host_health(gw) : NULL;
	if (health)
		json_object_set_new(resp->body, gw->driver->ops->name, health);
}

void api_handle(struct gateway *gw, const struct api_request *req, struct api_response *resp)
{
	char path[2048];
	char *parts[SEGMENTS_MAX] = { 0 };
	memset(resp, 0, sizeof(*resp));
	snprintf(path, sizeof(path), "%s", req->path);
	size_t n = split_path(path, parts);
	if (n == 0 || strcmp(parts[0], "v1") != 0) {
		api_error(resp, 404, "not_found", "no such API path %s (the API lives under /v1)",
			  req->path);
		return;
	}
	if (n == 2 && !strcmp(parts[1], "health") && !strcmp(req->method, "GET")) {
		resp->status = 200;
		resp->body = json_pack("{s:s}", "status", "ok");
		return;
	}
	bool supervisor = n >= 2 && !strcmp(parts[1], "supervisor");
	/* mTLS: the admin API needs the client certificate as well as the
	 * token, checked first so a client without one learns nothing about
	 * tokens; supervisors are bound to one sandbox by theirs alone. */
	if (!supervisor && req->client_cert_asked && !req->client_cert_verified) {
		api_error(resp, 403, "client_certificate_required",
			  "this gateway requires a client certificate (mTLS) for its admin "
			  "API: set OPENSHELL_TLS_CERT and OPENSHELL_TLS_KEY to a certificate "
			  "signed by the CA in its tls_client_ca_file");
		return;
	}
	_cleanup_json_ json_t *caller = NULL;
	int who = authenticate(gw, req, &caller, resp);
	if (who < 0)
		return;
	resp->authenticated = true;
	if (supervisor) {
		if (who != 0) {
			api_error(resp, 403, "forbidden",
				  "supervisor routes take a sandbox token, not the admin token");
			return;
		}
		if (!api_supervisor_route(gw, req, caller, parts + 1, n - 1, resp))
			api_error(resp, 404, "not_found", "no such supervisor route %s", req->path);
		return;
	}
	if (who != 1) {
		api_error(resp, 403, "forbidden",
			  "a sandbox token may only call its own /v1/supervisor routes");
		return;
	}
	if (n == 3 && !strcmp(parts[1], "gateway") && !strcmp(parts[2], "status")) {
		status_route(gw, resp);
		return;
	}
	if (api_sandbox_route(gw, req, parts + 1, n - 1, resp) ||
	    api_policy_route(gw, req, parts + 1, n - 1, resp) ||
	    api_provider_route(gw, req, parts + 1, n - 1, resp))
		return;
	api_error(resp, 404, "not_found", "no such API route: %s %s", req->method, req->path);
}
