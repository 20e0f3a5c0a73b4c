/* driver_view.c - the backend's view of one sandbox for GET /v1/sandboxes/NAME
 * (the driver's status: each Pod's name, component, phase, runtimeClassName)
 * and the policy summary handed to validate_spec. It reads the driver on a
 * copy of the record, so a GET never rewrites what the store holds. */
#include <string.h>

#include "cleanup.h"
#include "driver_view.h"
#include "gateway.h"
#include "json.h"
#include "policy.h"

void driver_view_add_status(struct gateway *gw, const json_t *row, json_t *view)
{
	_cleanup_json_ json_t *rec = json_deep_copy(json_object_get(row, "record")), *st = NULL;
	os_error err = { 0 };
	if (!view || !rec)
		return;
	if (gw->driver->ops->status(gw->driver, rec, &st, &err) < 0) {
		json_object_set_new(view, "status_error", json_string(err.msg));
		return;
	}
	/* Only what a driver reports about its backend objects: the local driver
	 * has no Pods and its status carries process details the row shows. */
	static const char *const keys[] = { "pods", "conditions" };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(st, keys[i]);
		if (json_is_array(v))
			json_object_set(view, keys[i], v);
	}
}

json_t *driver_view_policy(const char *yaml)
{
	struct policy_doc *doc = NULL;
	os_error err = { 0 };
	bool restricts = false;
	if (policy_parse("policy", yaml, strlen(yaml), &doc, NULL, &err) < 0)
		return NULL;
	for (size_t i = 0; i < doc->n_networks; i++)
		restricts = restricts || doc->networks[i].n_binaries > 0;
	policy_doc_free(doc);
	return json_pack("{s:b, s:s}", "restricts_binaries", restricts, "yaml", yaml);
}
