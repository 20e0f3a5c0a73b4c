/* fuzz_api_body.c - the gateway's handling of untrusted API bodies: strict
 * JSON with a size cap, unknown fields refused, then the local driver's spec
 * validation (command, env, labels, runtime class) on whatever got through.
 * Invariant: a body is either refused with a 4xx or yields a valid spec. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "local_driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {
		"name",	  "command",   "env", "labels", "runtime_class_name",
		"policy", "providers", NULL
	};
	struct api_request req = { .method = "POST",
				   .path = "/v1/sandboxes",
				   .query = "",
				   .body = (const char *)data,
				   .body_len = size };
	struct api_response resp = { 0 };
	json_t *body = api_body(&req, keys, &resp);
	if (!body) {
		if (resp.status < 400 || resp.status > 499)
			abort(); /* a refused body is always the caller's fault */
		json_decref(resp.body);
		return 0;
	}
	json_t *spec = json_object();
	const char *k;
	json_t *v;
	json_object_foreach (body, k, v) {
		if (strcmp(k, "name") != 0 && strcmp(k, "policy") != 0 &&
		    strcmp(k, "providers") != 0)
			json_object_set(spec, k, v);
	}
	os_error err = { 0 };
	local_spec_validate(spec, &err);
	json_decref(spec);
	json_decref(body);
	json_decref(resp.body);
	return 0;
}
