/* json.h - jansson helpers: strict parsing of untrusted JSON with a size cap,
 * typed field access that reports which field was wrong, and a cleanup attribute. */
#ifndef OS_JSON_H
#define OS_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

static inline void cleanup_jsonp(json_t **j)
{
	if (*j)
		json_decref(*j);
}
#define _cleanup_json_ __attribute__((cleanup(cleanup_jsonp)))

/* Parses len bytes as one JSON value (duplicate keys rejected, no trailing
 * data); fails with EMSGSIZE when len > cap. */
json_t *json_parse_strict(const char *data, size_t len, size_t cap, os_error *err);

/* Checks that obj has only keys from allowed[] (NULL-terminated); names the first unknown one. */
int json_check_keys(const json_t *obj, const char *const allowed[], const char *where,
		    os_error *err);

/* Typed getters. A missing key returns 1 (when !required) leaving *out untouched;
 * a wrong type is an error naming the key. */
int json_get_string(const json_t *obj, const char *key, bool required, const char **out,
		    os_error *err);
int json_get_int(const json_t *obj, const char *key, bool required, int64_t min, int64_t max,
		 int64_t *out, os_error *err);
int json_get_bool(const json_t *obj, const char *key, bool required, bool *out, os_error *err);

/* Serialises compactly into a malloc'd string; NULL on ENOMEM. */
char *json_to_string(const json_t *v);

#endif
