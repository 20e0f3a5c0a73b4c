/* api_provider.c - /v1/providers and /v1/inference. Secrets arrive once,
 * are sealed (AES-256-GCM) before they touch the database, and never leave
 * through the API: answers list credential key names only. */
#include <errno.h>
#include <openssl/crypto.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "http.h"
#include "json.h"
#include "parse.h"

static json_t *provider_view(const json_t *p)
{
	return json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(p, "name"), "endpoints",
			 json_object_get(p, "endpoints"), "credential_keys",
			 json_object_get(p, "credential_keys"), "created_at",
			 json_object_get(p, "created_at"));
}

static int check_provider(const json_t *body, json_t **keys, os_error *err)
{
	const char *name = json_string_value(json_object_get(body, "name"));
	const json_t *creds = json_object_get(body, "credentials");
	const json_t *eps = json_object_get(body, "endpoints");
	if (!name || !*name || strlen(name) > 63 ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != strlen(name))
		return os_error_set(err, EINVAL,
				    "name: 1..63 of lower-case letters, digits, '-' or '_'");
	if (!json_is_object(creds) || json_object_size(creds) == 0)
		return os_error_set(
			err, EINVAL,
			"credentials: expected a non-empty object {\"KEY\": \"secret\"}");
	if (eps && !json_is_array(eps))
		return os_error_set(err, EINVAL, "endpoints: expected an array of \"host:port\"");
	size_t i;
	json_t *e;
	struct http_authority a;
	json_array_foreach (eps, i, e) {
		if (!json_is_string(e) ||
		    http_parse_authority(json_string_value(e), json_string_length(e), 0, true, &a,
					 err) < 0)
			return os_error_set(err, EINVAL, "endpoints[%zu]: expected \"host:port\"",
					    i);
	}
	*keys = json_array();
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)creds, k, v) {
		if (!json_is_string(v) || json_string_length(v) == 0)
			return os_error_set(err, EINVAL,
					    "credentials.%s: expected a non-empty string", k);
		if (!*k ||
		    strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
			    strlen(k))
			return os_error_set(err, EINVAL,
					    "credentials: key \"%s\" must be a variable name", k);
		json_array_append_new(*keys, json_string(k));
	}
	return 0;
}

static void create(struct gateway *gw, const struct api_request *req, struct api_response *resp)
{
	static const char *const allowed[] = { "name", "credentials", "endpoints", NULL };
	_cleanup_json_ json_t *body = api_body(req, allowed, resp), *keys = NULL, *row = NULL;
	_cleanup_free_ char *sealed = NULL;
	os_error err = { 0 };
	if (!body)
		return;
	if (check_provider(body, &keys, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	char *plain = json_dumps(json_object_get(body, "credentials"), JSON_COMPACT);
	int rc = plain ? secret_seal(&gw->key, plain, strlen(plain), &sealed, &err) : -1;
	if (plain) {
		OPENSSL_cleanse(plain, strlen(plain));
		free(plain);
	}
	if (rc < 0) {
		api_error(resp, 500, "internal", "sealing credentials: %s", err.msg);
		return;
	}
	json_t *eps = json_object_get(body, "endpoints");
	row = json_pack("{s:O, s:o, s:O, s:s}", "name", json_object_get(body, "name"), "endpoints",
			eps ? json_incref(eps) : json_array(), "credential_keys", keys, "sealed",
			sealed);
	if (store_provider_insert(gw->store, row, &err) < 0) {
		if (err.code == EEXIST) {
			api_error(resp, 409, "already_exists",
				  "a provider named \"%s\" already exists: delete it first",
				  json_string_value(json_object_get(body, "name")));
			return;
		}
		api_fail(resp, &err);
		return;
	}
	json_object_set_new(row, "created_at", json_integer(0));
	_cleanup_json_ json_t *fresh = NULL;
	store_provider_get(gw->store, json_string_value(json_object_get(row, "name")), &fresh,
			   NULL);
	resp->status = 201;
	resp->body = provider_view(fresh ? fresh : row);
}

/* A provider a sandbox still names cannot go: its supervisor would lose the secret on restart. */
static int in_use(struct gateway *gw, const char *name, os_error *err)
{
	_cleanup_json_ json_t *rows = NULL;
	if (store_sandbox_list(gw->store, &rows, err) < 0)
		return -1;
	size_t i, j;
	json_t *r, *p;
	json_array_foreach (rows, i, r)
		json_array_foreach (json_object_get(r, "providers"), j, p) {
			if (!strcmp(str_or(json_string_value(p), ""), name))
				return os_error_set(
					err, EBUSY,
					"provider \"%s\" is used by sandbox \"%s\": delete the "
					"sandbox first",
					name, json_string_value(json_object_get(r, "name")));
		}
	return 0;
}

static void providers(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
		      struct api_response *resp)
{
	os_error err = { 0 };
	_cleanup_json_ json_t *v = NULL;
	const char *m = req->method;
	if (n == 1 && !strcmp(m, "POST")) {
		create(gw, req, resp);
		return;
	}
	if (n == 1 && !strcmp(m, "GET")) {
		if (store_provider_list(gw->store, &v, &err) < 0) {
			api_fail(resp, &err);
			return;
		}
		json_t *out = json_array();
		size_t i;
		json_t *p;
		json_array_foreach (v, i, p)
			json_array_append_new(out, provider_view(p));
		resp->status = 200;
		resp->body = json_pack("{s:o}", "providers", out);
		return;
	}
	if (n == 2 && !strcmp(m, "GET")) {
		if (store_provider_get(gw->store, parts[1], &v, &err) < 0) {
			api_fail(resp, &err);
			return;
		}
		resp->status = 200;
		resp->body = provider_view(v);
		return;
	}
	if (n == 2 && !strcmp(m, "DELETE")) {
		if (in_use(gw, parts[1], &err) < 0 ||
		    store_provider_delete(gw->store, parts[1], &err) < 0) {
			api_fail(resp, &err);
			return;
		}
		resp->status = 200;
		resp->body = json_pack("{s:s}", "deleted", parts[1]);
		return;
	}
	api_error(resp, 405, "method_not_allowed", "unsupported: %s %s", m, req->path);
}

static void inference_set(struct gateway *gw, const struct api_request *req,
			  struct api_response *resp)
{
	static const char *const allowed[] = { "provider", "base_url", "model", "api_key", NULL };
	_cleanup_json_ json_t *body = api_body(req, allowed, resp);
	_cleanup_free_ char *sealed = NULL, *text = NULL;
	const char *prov = NULL, *url = NULL, *model = NULL, *key = NULL;
	os_error err = { 0 };
	if (!body)
		return;
	if (json_get_string(body, "provider", true, &prov, &err) < 0 ||
	    json_get_string(body, "base_url", true, &url, &err) < 0 ||
	    json_get_string(body, "model", true, &model, &err) < 0 ||
	    json_get_string(body, "api_key", false, &key, &err) < 0) {
		api_error(resp, 400, "invalid_argument", "%s", err.msg);
		return;
	}
	if (strcmp(prov, "openai") != 0 && strcmp(prov, "anthropic") != 0) {
		api_error(resp, 400, "invalid_argument",
			  "provider: expected \"openai\" or \"anthropic\", got \"%s\"", prov);
		return;
	}
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		api_error(resp, 400, "invalid_argument",
			  "base_url: expected http(s)://host[:port], got \"%s\"", url);
		return;
	}
	if (key && secret_seal(&gw->key, key, strlen(key), &sealed, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	_cleanup_json_ json_t *route =
		json_pack("{s:s, s:s, s:s, s:b}", "provider", prov, "base_url", url, "model", model,
			  "api_key_set", key != NULL);
	if (sealed)
		json_object_set_new(route, "api_key_sealed", json_string(sealed));
	text = json_dumps(route, JSON_COMPACT);
	if (!text || store_setting_put(gw->store, "inference", text, &err) < 0) {
		api_fail(resp, &err);
		return;
	}
	json_object_del(route, "api_key_sealed");
	resp->status = 200;
	resp->body = json_incref(route);
}

static void inference(struct gateway *gw, const struct api_request *req, struct api_response *resp)
{
	os_error err = { 0 };
	_cleanup_free_ char *text = NULL;
	if (!strcmp(req->method, "PUT")) {
		inference_set(gw, req, resp);
		return;
	}
	if (!strcmp(req->method, "DELETE")) {
		if (store_setting_delete(gw->store, "inference", &err) < 0) {
			api_fail(resp, &err);
			return;
		}
		resp->status = 200;
		resp->body = json_pack("{s:s}", "deleted", "inference");
		return;
	}
	if (strcmp(req->method, "GET") != 0) {
		api_error(resp, 405, "method_not_allowed", "use GET, PUT or DELETE");
		return;
	}
	if (store_setting_get(gw->store, "inference", &text, &err) < 0) {
		err.code == ENOENT ? api_error(resp, 404, "not_found",
					       "no inference route: set one with `openshell "
					       "inference set`")
				   : api_fail(resp, &err);
		return;
	}
	json_t *route = json_loads(text, 0, NULL);
	json_object_del(route, "api_key_sealed");
	resp->status = 200;
	resp->body = route;
}

bool api_provider_route(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
			struct api_response *resp)
{
	if (n >= 1 && n <= 2 && !strcmp(parts[0], "providers")) {
		providers(gw, req, parts, n, resp);
		return true;
	}
	if (n == 1 && !strcmp(parts[0], "inference")) {
		inference(gw, req, resp);
		return true;
	}
	return false;
}
