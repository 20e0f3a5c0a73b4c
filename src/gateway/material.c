/* material.c - assembles what a sandbox's supervisor holds but the record
 * must not: the policy text, provider credentials and the inference route
 * (opened from their sealed form only here, wiped after handing over), and
 * the sandbox token. */
#include <errno.h>
#include <openssl/crypto.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"

static void wipe_free(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

static void cleanup_wipep(char **s)
{
	wipe_free(*s);
}
#define _cleanup_wipe_ __attribute__((cleanup(cleanup_wipep)))

/* {"providers": {NAME: {KEY: secret}}} for the sandbox's providers, or NULL when none. */
static int credentials_json(struct gateway *gw, const json_t *row, char **out, os_error *err)
{
	const json_t *names = json_object_get(row, "providers");
	*out = NULL;
	if (json_array_size(names) == 0)
		return 0;
	_cleanup_json_ json_t *all = json_object();
	size_t i;
	json_t *n;
	json_array_foreach (names, i, n) {
		_cleanup_json_ json_t *p = NULL;
		_cleanup_wipe_ char *plain = NULL;
		if (store_provider_get(gw->store, json_string_value(n), &p, err) < 0)
			return os_error_prefix(err, "sandbox provider");
		if (secret_open(&gw->key, json_string_value(json_object_get(p, "sealed")), &plain,
				NULL, err) < 0)
			return os_error_prefix(err, "provider %s", json_string_value(n));
		json_t *creds = json_loads(plain, 0, NULL);
		if (!creds)
			return os_error_set(err, EIO, "provider %s: stored credentials unreadable",
					    json_string_value(n));
		json_object_set_new(all, json_string_value(n), creds);
	}
	_cleanup_json_ json_t *doc = json_pack("{s:O}", "providers", all);
	*out = json_dumps(doc, JSON_COMPACT);
	/* The jansson copies of the secrets are freed with doc; *out is wiped by the caller. */
	return *out ? 0 : os_error_set(err, ENOMEM, "credentials");
}

/* {"routes": [route with the api_key opened]} or NULL when no route is set. */
static int inference_json(struct gateway *gw, char **out, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_wipe_ char *key = NULL;
	os_error local = { 0 };
	*out = NULL;
	if (store_setting_get(gw->store, "inference", &text, &local) < 0)
		return local.code == ENOENT ? 0 : (*err = local, -1);
	_cleanup_json_ json_t *route = json_loads(text, 0, NULL);
	if (!route)
		return os_error_set(err, EIO, "stored inference route unreadable");
	const char *sealed = json_string_value(json_object_get(route, "api_key_sealed"));
	if (sealed && secret_open(&gw->key, sealed, &key, NULL, err) < 0)
		return os_error_prefix(err, "inference api key");
	json_object_del(route, "api_key_sealed");
	json_object_del(route, "api_key_set");
	json_object_set_new(route, "name", json_string("default"));
	if (key)
		json_object_set_new(route, "api_key", json_string(key));
	_cleanup_json_ json_t *doc = json_pack("{s:[O]}", "routes", route);
	*out = json_dumps(doc, JSON_COMPACT);
	return *out ? 0 : os_error_set(err, ENOMEM, "inference");
}

int lifecycle_configure(struct gateway *gw, json_t *row, const char *policy_yaml, const char *token,
			os_error *err)
{
	if (!gw->driver->ops->configure)
		return 0;
	_cleanup_wipe_ char *creds = NULL, *inf = NULL;
	if (credentials_json(gw, row, &creds, err) < 0 || inference_json(gw, &inf, err) < 0)
		return -1;
	struct driver_material m = { .policy_yaml = policy_yaml,
				     .credentials_json = creds,
				     .inference_json = inf,
				     .sandbox_token = token,
				     .gateway_url = gw->url };
	return gw->driver->ops->configure(gw->driver, json_object_get(row, "record"), &m, err);
}
