/* json.c - jansson helpers (see json.h). */
#include "json.h"

#include <errno.h>
#include <string.h>

json_t *json_parse_strict(const char *data, size_t len, size_t cap, os_error *err)
{
	if (len > cap) {
		os_error_set(err, EMSGSIZE, "JSON document of %zu bytes exceeds limit of %zu", len,
			     cap);
		return NULL;
	}
	json_error_t je;
	json_t *v = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (!v)
		os_error_set(err, EINVAL, "invalid JSON at line %d column %d: %s", je.line,
			     je.column, je.text);
	return v;
}

int json_check_keys(const json_t *obj, const char *const allowed[], const char *where,
		    os_error *err)
{
	if (!json_is_object(obj))
		return os_error_set(err, EINVAL, "%s: expected an object", where);
	const char *key;
	json_t *val;
	json_object_foreach ((json_t *)obj, key, val) {
		bool ok = false;
		for (size_t i = 0; allowed[i]; i++)
			if (strcmp(allowed[i], key) == 0) {
				ok = true;
				break;
			}
		if (!ok)
			return os_error_set(err, EINVAL, "%s: unknown field \"%s\"", where, key);
	}
	return 0;
}

int json_get_string(const json_t *obj, const char *key, bool required, const char **out,
		    os_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return os_error_set(err, EINVAL, "missing field \"%s\"", key);
		return 1;
	}
	if (!json_is_string(v))
		return os_error_set(err, EINVAL, "field \"%s\": expected a string", key);
	*out = json_string_value(v);
	return 0;
}

int json_get_int(const json_t *obj, const char *key, bool required, int64_t min, int64_t max,
		 int64_t *out, os_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return os_error_set(err, EINVAL, "missing field \"%s\"", key);
		return 1;
	}
	if (!json_is_integer(v))
		return os_error_set(err, EINVAL, "field \"%s\": expected an integer", key);
	json_int_t i = json_integer_value(v);
	if (i < min || i > max)
		return os_error_set(err, ERANGE, "field \"%s\": expected %lld..%lld, got %lld", key,
				    (long long)min, (long long)max, (long long)i);
	*out = i;
	return 0;
}

int json_get_bool(const json_t *obj, const char *key, bool required, bool *out, os_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return os_error_set(err, EINVAL, "missing field \"%s\"", key);
		return 1;
	}
	if (!json_is_boolean(v))
		return os_error_set(err, EINVAL, "field \"%s\": expected true or false", key);
	*out = json_is_true(v);
	return 0;
}

char *json_to_string(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
}
