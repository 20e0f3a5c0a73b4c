/* watch.c - GET /v1/sandboxes?watch=1[&name=NAME]: a chunked NDJSON stream
 * of sandbox changes, the way a Kubernetes client expects a watch:
 *   {"type":"ADDED","sandbox":{...}}     each sandbox at the start, then new ones
 *   {"type":"SYNCED"}                    once, after the initial ADDED events
 *   {"type":"MODIFIED","sandbox":{...}}  its resource_version moved
 *   {"type":"DELETED","sandbox":{"id","name"}}
 * The server calls watch_poll on its stream tick; changes are found by
 * resource_version, so a burst of writes between two ticks is one event
 * carrying the newest state (level-triggered, like an informer). */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "cleanup.h"
#include "gateway.h"
#include "json.h"

static int emit(struct buf *out, const char *type, json_t *sandbox, os_error *err)
{
	_cleanup_json_ json_t *ev =
		sandbox ? json_pack("{s:s, s:O}", "type", type, "sandbox", sandbox)
			: json_pack("{s:s}", "type", type);
	_cleanup_free_ char *text = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	if (!text)
		return os_error_set(err, ENOMEM, "watch event");
	if (buf_append_str(out, text, err) < 0 || buf_append(out, "\n", 1, err) < 0)
		return -1;
	return 0;
}

int watch_poll(struct gateway *gw, json_t *seen, const char *name, bool first, struct buf *out,
	       os_error *err)
{
	_cleanup_json_ json_t *rows = NULL;
	if (store_sandbox_list(gw->store, &rows, err) < 0)
		return -1;
	_cleanup_json_ json_t *present = json_object();
	size_t i;
	json_t *row;
	json_array_foreach (rows, i, row) {
		const char *id = json_string_value(json_object_get(row, "id"));
		const char *n = json_string_value(json_object_get(row, "name"));
		json_int_t rv = json_integer_value(json_object_get(row, "resource_version"));
		if (!id || (name && *name && (!n || strcmp(n, name) != 0)))
			continue;
		json_object_set_new(present, id, json_true());
		json_t *was = json_object_get(seen, id);
		if (was && json_integer_value(json_object_get(was, "rv")) == rv)
			continue;
		_cleanup_json_ json_t *view = api_sandbox_view(row);
		if (emit(out, was ? "MODIFIED" : "ADDED", view, err) < 0)
			return -1;
		json_object_set_new(seen, id,
				    json_pack("{s:I, s:s}", "rv", rv, "name", n ? n : ""));
	}
	const char *id;
	json_t *was, *tmp;
	json_object_foreach_safe(seen, tmp, id, was)
	{
		if (json_object_get(present, id))
			continue;
		_cleanup_json_ json_t *gone =
			json_pack("{s:s, s:O}", "id", id, "name", json_object_get(was, "name"));
		if (emit(out, "DELETED", gone, err) < 0)
			return -1;
		json_object_del(seen, id);
	}
	return first ? emit(out, "SYNCED", NULL, err) : 0;
}
