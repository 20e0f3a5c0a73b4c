/* k8s_reconcile.c - what the cluster says about sandboxes: per-Pod status with
 * Events, fence confirmation, ungating, and reconcile (fail closed when a
 * workload lost its supervisor or fence; remove objects of unknown sandboxes).
 * It never ungates a workload whose supervisor is not Ready. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_driver.h"
#include "parse.h"

static const json_t *labels_of(const json_t *obj)
{
	return json_object_get(json_object_get(obj, "metadata"), "labels");
}

static const char *label(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(labels_of(obj), key));
}

bool k8s_pod_ready(const json_t *pod)
{
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && s && strcmp(t, "Ready") == 0)
			return strcmp(s, "True") == 0;
	}
	return false;
}

bool k8s_pod_gated(const json_t *pod)
{
	return json_array_size(json_object_get(json_object_get(pod, "spec"), "schedulingGates")) >
	       0;
}

static bool terminating(const json_t *obj)
{
	return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

/* The fence exists, is not being deleted, and is exactly what we render. */
int k8s_fence_confirmed(struct k8s_driver *k, const json_t *record, os_error *err)
{
	char coll[512], name[96], path[700];
	_cleanup_json_ json_t *live = NULL, *want = k8s_render_fence(&k->s, record, NULL);
	if (!want)
		return os_error_set(err, ENOMEM, "fence: out of memory");
	if (k8s_collection(k, &k8s_kinds[4], coll, sizeof coll, err) < 0 ||
	    k8s_object_name(record, "-fence", name, sizeof name, err) < 0 ||
	    str_format(path, sizeof path, err, "%s/%s", coll, name) < 0)
		return -1;
	if (k8s_call(k->client, "GET", path, NULL, NULL, &live, NULL, err) < 0)
		return os_error_prefix(err, "confirming the fence");
	if (terminating(live) ||
	    !json_equal(json_object_get(live, "spec"), json_object_get(want, "spec")))
		return os_error_set(err, EPERM,
				    "fence NetworkPolicy %s is being deleted or differs from the "
				    "rendered one: the workload stays gated",
				    name);
	return 0;
}

int k8s_ungate(struct k8s_driver *k, const json_t *record, os_error *err)
{
	char coll[512], name[96], path[700];
	_cleanup_json_ json_t *patch = json_pack("{s:{s:n}}", "spec", "schedulingGates");
	if (k8s_collection(k, &k8s_kinds[0], coll, sizeof coll, err) < 0 ||
	    k8s_object_name(record, "-workload", name, sizeof name, err) < 0 ||
	    str_format(path, sizeof path, err, "%s/%s", coll, name) < 0)
		return -1;
	if (k8s_call(k->client, "PATCH", path, patch, "application/merge-patch+json", NULL, NULL,
		     err) < 0)
		return os_error_prefix(err, "removing the scheduling gate of %s", name);
	return 0;
}

json_t *k8s_pod_events(struct k8s_driver *k, const json_t *pod)
{
	return k8s_pod_events_on(k, k->client, pod);
}

json_t *k8s_pod_events_on(struct k8s_driver *k, struct k8s_client *c, const json_t *pod)
{
	char sel[512], q[1024], path[1600];
	_cleanup_json_ json_t *list = NULL;
	json_t *out = json_array(), *ev;
	size_t i;
	const json_t *m = json_object_get(pod, "metadata");
	const char *name = json_string_value(json_object_get(m, "name"));
	const char *uid = json_string_value(json_object_get(m, "uid"));
	/* Kind and uid too: the Service shares the supervisor Pod's name, and an
	 * earlier Pod of the same name (before stop/start) had other events. */
	if (!out || !name || !uid ||
	    str_format(sel, sizeof sel, NULL,
		       "involvedObject.kind=Pod,involvedObject.name=%s,involvedObject.uid=%s", name,
		       uid) < 0 ||
	    k8s_query_escape(sel, q, sizeof q, NULL) < 0 ||
	    str_format(path, sizeof path, NULL, "/api/v1/namespaces/%s/events?fieldSelector=%s",
		       k->s.namespace, q) < 0 ||
	    k8s_call(c, "GET", path, NULL, NULL, &list, NULL, NULL) < 0)
		return out;
	json_array_foreach (json_object_get(list, "items"), i, ev) {
		json_array_append_new(out, json_pack("{s:O?, s:O?, s:O?, s:O?}", "type",
						     json_object_get(ev, "type"), "reason",
						     json_object_get(ev, "reason"), "message",
						     json_object_get(ev, "message"), "count",
						     json_object_get(ev, "count")));
	}
	return out;
}

/* A Pod's events: read with it by the watch thread (K8S_POD_EVENTS) when
 * it came from the snapshot, so status costs the loop no API call. */
static json_t *events_of(struct k8s_driver *k, const json_t *pod)
{
	const json_t *ev = json_object_get(pod, K8S_POD_EVENTS);
	return ev ? json_incref((json_t *)ev) : k8s_pod_events(k, pod);
}

static json_t *pod_summary(struct k8s_driver *k, const json_t *pod)
{
	const char *name =
		json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
	const json_t *rc = json_object_get(json_object_get(pod, "spec"), "runtimeClassName");
	return json_pack("{s:s?, s:s?, s:O?, s:b, s:b, s:b, s:O, s:o}", "name", name, "component",
			 label(pod, K8S_L_COMPONENT), "phase",
			 json_object_get(json_object_get(pod, "status"), "phase"), "ready",
			 k8s_pod_ready(pod), "gated", k8s_pod_gated(pod), "terminating",
			 terminating(pod), "runtimeClassName", rc ? rc : json_null(), "events",
			 events_of(k, pod));
}

/* The sandbox's Pods: from the watch thread's snapshot once it has one
 * (one list/watch for every sandbox), else one list call. */
static int sandbox_pods(struct k8s_driver *k, const char *id, json_t **pods, os_error *err)
{
	char sel[256];
	if ((*pods = k8s_host_pods(k, id)) != NULL)
		return 0;
	if (str_format(sel, sizeof sel, err, "%s=openshell,%s=%s", K8S_L_MANAGED, K8S_L_ID, id) < 0)
		return -1;
	return k8s_list_labelled(k, &k8s_kinds[0], sel, pods, err);
}

/* The last Warning among a Pod's events (what a user needs to see first). */
static const char *last_warning(const json_t *summary)
{
	const char *msg = NULL;
	size_t i;
	json_t *ev;
	json_array_foreach (json_object_get(summary, "events"), i, ev) {
		const char *t = json_string_value(json_object_get(ev, "type"));
		if (t && strcmp(t, "Warning") == 0)
			msg = json_string_value(json_object_get(ev, "message"));
	}
	return msg;
}

/* One backend condition per expected Pod: "<Component>Ready", with the
 * reason (Ready, Gated, the Pod's phase, or Missing) and the last warning. */
static json_t *conditions(const json_t *record, const json_t *summaries)
{
	const char *topo = json_string_value(
		json_object_get(json_object_get(record, "placement"), "topology"));
	bool dedicated = topo && strcmp(topo, "dedicated-supervisor") == 0;
	static const char *const split[] = { "supervisor", "workload" }, *const one[] = {
		"sandbox"
	};
	const char *const *want = dedicated ? split : one;
	json_t *out = json_array();
	for (size_t w = 0; w < (dedicated ? 2u : 1u); w++) {
		const json_t *found = NULL, *p;
		size_t i;
		json_array_foreach ((json_t *)summaries, i, p) {
			const char *c = json_string_value(json_object_get(p, "component"));
			if (c && strcmp(c, want[w]) == 0)
				found = p;
		}
		bool ready = found && json_is_true(json_object_get(found, "ready"));
		const char *reason = !found  ? "Missing"
				     : ready ? "Ready"
				     : json_is_true(json_object_get(found, "gated"))
					     ? "Gated"
					     : json_string_value(json_object_get(found, "phase"));
		char type[64];
		snprintf(type, sizeof type, "%c%sReady", want[w][0] - 'a' + 'A', want[w] + 1);
		const char *warn = found ? last_warning(found) : NULL;
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status",
						     ready ? "True" : "False", "reason",
						     reason ? reason : "Unknown", "message",
						     warn ? warn : ""));
	}
	return out;
}

int k8s_status(struct driver *d, json_t *record, json_t **status, os_error *err)
{
	struct k8s_driver *k = (struct k8s_driver *)d;
	_cleanup_json_ json_t *pods = NULL;
	json_t *p;
	size_t i;
	if (sandbox_pods(k, json_string_value(json_object_get(record, "id")), &pods, err) < 0)
		return -1;
	json_t *summaries = json_array();
	json_array_foreach (pods, i, p) {
		json_array_append_new(summaries, pod_summary(k, p));
	}
	json_object_set_new(record, "conditions", conditions(record, summaries));
	*status = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:o}", "id",
			    json_object_get(record, "id"), "name", json_object_get(record, "name"),
			    "phase", json_object_get(record, "phase"), "message",
			    json_object_get(record, "message"), "placement",
			    json_object_get(record, "placement"), "conditions",
			    json_object_get(record, "conditions"), "pods", summaries);
	if (!*status)
		return os_error_set(err, ENOMEM, "status: out of memory");
	/* The supervisor starts with --policy from its Secret (the recorded
	 * policy): for the gateway, Running means that policy is loaded. */
	json_object_set_new(*status, "policy_supported", json_true());
	/* A supervisor that dials the gateway is Ready only with its session live. */
	json_object_set_new(*status, "session_required", json_boolean(k8s_gateway_session(record)));
	return 0;
}

/* ---- reconcile ---- */

static const json_t *find_component(const json_t *pods, const char *component)
{
	size_t i;
	json_t *p;
	json_array_foreach (pods, i, p) {
		const char *c = label(p, K8S_L_COMPONENT);
		if (c && strcmp(c, component) == 0)
			return p;
	}
	return NULL;
}

static void report(json_t *rep, const char *id, const char *action, const char *why)
{
	json_array_append_new(
		rep, json_pack("{s:s, s:s, s:s}", "id", id, "action", action, "reason", why));
}

static bool supervisor_alive(const json_t *sup)
{
	const char *phase =
		json_string_value(json_object_get(json_object_get(sup, "status"), "phase"));
	return sup && !terminating(sup) &&
	       !(phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0));
}

/* The kubelet's word that the Pod's sandbox cannot be made at all (its
 * RuntimeClass names a handler this node lacks, ...): the message of a
 * FailedCreatePodSandBox warning, or NULL. It retries forever; we do not. */
static const char *sandbox_refused(const json_t *events)
{
	size_t i;
	json_t *ev;
	json_array_foreach ((json_t *)events, i, ev) {
		const char *t = json_string_value(json_object_get(ev, "type"));
		const char *r = json_string_value(json_object_get(ev, "reason"));
		if (t && r && !strcmp(t, "Warning") && !strcmp(r, "FailedCreatePodSandBox"))
			return json_string_value(json_object_get(ev, "message"));
	}
	return NULL;
}

/* One known dedicated sandbox: fail closed, or move provisioning on. Its
 * calls (fence, events, deletes, ungate) run on the reconcile worker when
 * hosted (k8s_async.c). */
int k8s_reconcile_dedicated(struct k8s_driver *k, json_t *record, json_t *rep, os_error *err)
{
	const char *id = json_string_value(json_object_get(record, "id"));
	_cleanup_json_ json_t *pods = NULL;
	os_error why = { 0 };
	if (sandbox_pods(k, id, &pods, err) < 0)
		return -1;
	const json_t *wl = find_component(pods, "workload");
	const json_t *sup = find_component(pods, "supervisor");
	if (!wl)
		return 0;
	bool fence_ok = k8s_fence_confirmed(k, record, &why) == 0;
	if (!supervisor_alive(sup) || !fence_ok) {
		const char *reason = !supervisor_alive(sup)
					     ? "supervisor Pod gone: workload stopped (fail closed)"
					     : why.msg;
		if (k8s_delete_pods(k, id, err) < 0)
			return -1;
		k8s_record_phase(record, "Stopped", reason);
		report(rep, id, "stopped", reason);
		return 0;
	}
	if (k8s_pod_gated(wl) && !k8s_pod_ready(sup)) {
		/* Never wait endlessly on a supervisor whose class cannot run here,
		 * and never start one without it: the sandbox fails, the workload
		 * (still gated) never ran. */
		_cleanup_json_ json_t *events = k8s_pod_events(k, sup);
		const char *m = sandbox_refused(events);
		if (m) {
			char reason[OS_ERROR_MSG_MAX];
			snprintf(reason, sizeof reason,
				 "supervisor Pod cannot start (FailedCreatePodSandBox: %s); the "
				 "workload never ran",
				 m);
			if (k8s_delete_pods(k, id, err) < 0)
				return -1;
			k8s_record_phase(record, "Failed", reason);
			report(rep, id, "failed", reason);
			return 0;
		}
	}
	if (k8s_pod_gated(wl) && k8s_pod_ready(sup)) {
		if (k8s_ungate(k, record, err) < 0)
			return -1;
		k8s_record_phase(record, "Running",
				 "supervisor Ready, fence confirmed, workload ungated");
		report(rep, id, "ungated", "supervisor Ready and fence confirmed");
	}
	return 0;
}

/* Why an ended Pod's first container ended, from its terminated state:
 * "exit code N: MESSAGE" (the kubelet puts the log's tail in MESSAGE, as
 * the containers ask with FallbackToLogsOnError). */
static void ended_reason(const json_t *pod, char *out, size_t cap)
{
	const json_t *cs = json_array_get(
		json_object_get(json_object_get(pod, "status"), "containerStatuses"), 0);
	const json_t *t = json_object_get(json_object_get(cs, "state"), "terminated");
	const char *msg = json_string_value(json_object_get(t, "message"));
	const char *why = json_string_value(json_object_get(t, "reason"));
	snprintf(out, cap, "sandbox Pod failed (exit code %lld%s%s)%s%s",
		 (long long)json_integer_value(json_object_get(t, "exitCode")), why ? ", " : "",
		 why ? why : "", msg && *msg ? ": " : "", msg ? msg : "");
	/* One line: the message is the log's last lines. */
	for (char *c = out; *c; c++)
		if (*c == '\n')
			*c = ' ';
}

/* One known combined sandbox: its single Pod turning Ready is the moment the
 * supervisor in it holds the boundary (no gate to lift); the Pod failing
 * (its supervisor refused to start, or ended) fails the sandbox with the
 * container's own words instead of leaving it waiting for a session. */
static int reconcile_combined(struct k8s_driver *k, json_t *record, json_t *rep, os_error *err)
{
	const char *id = json_string_value(json_object_get(record, "id"));
	const char *phase = json_string_value(json_object_get(record, "phase"));
	_cleanup_json_ json_t *pods = NULL;
	if (!phase || (strcmp(phase, "Provisioning") != 0 && strcmp(phase, "Running") != 0))
		return 0;
	if (sandbox_pods(k, id, &pods, err) < 0)
		return -1;
	const json_t *pod = find_component(pods, "sandbox");
	if (!pod || terminating(pod))
		return 0;
	const char *pp =
		json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
	if (pp && strcmp(pp, "Failed") == 0) {
		char reason[OS_ERROR_MSG_MAX];
		ended_reason(pod, reason, sizeof reason);
		k8s_record_phase(record, "Failed", reason);
		report(rep, id, "failed", reason);
	} else if (strcmp(phase, "Provisioning") == 0 && k8s_pod_ready(pod)) {
		k8s_record_phase(record, "Running", "sandbox Pod Ready");
		report(rep, id, "running", "sandbox Pod Ready");
	}
	return 0;
}

static bool known_id(const json_t *known, const char *id)
{
	size_t i;
	json_t *v;
	json_array_foreach (known, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), id) == 0)
			return true;
	return false;
}

int k8s_collect_orphans(struct k8s_driver *k, const json_t *known, json_t *found, os_error *err)
{
	_cleanup_json_ json_t *ids = json_object();
	if (!ids)
		return os_error_set(err, ENOMEM, "orphan scan: out of memory");
	for (size_t kind = 0; kind < k8s_kinds_len; kind++) {
		_cleanup_json_ json_t *items = NULL;
		size_t i;
		json_t *o;
		if (k8s_list_labelled(k, &k8s_kinds[kind], K8S_L_MANAGED "=openshell", &items,
				      err) < 0)
			return -1;
		json_array_foreach (items, i, o) {
			const char *id = label(o, K8S_L_ID);
			if (id && !known_id(known, id) && !json_object_get(ids, id)) {
				json_object_set_new(ids, id, json_true());
				json_array_append_new(found, json_pack("{s:s}", "id", id));
			}
		}
	}
	return 0;
}

int k8s_remove_orphan(struct k8s_driver *k, const char *id, json_t *rep, os_error *err)
{
	if (k8s_remove_all(k, id, err) < 0)
		return os_error_prefix(err, "removing orphan %s", id);
	report(rep, id, "removed-orphan", "no sandbox record");
	return 0;
}

/* The record's topology, or NULL when there is nothing to check (no
 * placement yet, stopped, deleted). */
static const char *topology_to_check(const json_t *record)
{
	const char *phase = json_string_value(json_object_get(record, "phase"));
	const char *topo = json_string_value(
		json_object_get(json_object_get(record, "placement"), "topology"));
	if (!topo || (phase && (strcmp(phase, "Stopped") == 0 || strcmp(phase, "Deleted") == 0)))
		return NULL;
	return topo;
}

/* Without a host (tools, tests, the gateway's first pass before its
 * workers run): every call here, in order. */
static int reconcile_inline(struct k8s_driver *k, json_t *const *records, size_t n, json_t *rep,
			    os_error *err)
{
	if (!k->host || k->orphan_scan_due) {
		_cleanup_json_ json_t *known = json_array(), *found = json_array();
		for (size_t i = 0; known && i < n; i++)
			json_array_append(known, json_object_get(records[i], "id"));
		if (!known || !found)
			return os_error_set(err, ENOMEM, "reconcile: out of memory");
		if (k8s_collect_orphans(k, known, found, err) < 0)
			return os_error_prefix(err, "reconcile");
		k->orphan_scan_due = false;
		size_t i;
		json_t *e;
		json_array_foreach (found, i, e)
			if (k8s_remove_orphan(k, json_string_value(json_object_get(e, "id")), rep,
					      err) < 0)
				return os_error_prefix(err, "reconcile");
	}
	for (size_t i = 0; i < n; i++) {
		const char *topo = topology_to_check(records[i]);
		if (!topo)
			continue;
		if (strcmp(topo, "combined") == 0
			    ? reconcile_combined(k, records[i], rep, err) < 0
			    : strcmp(topo, "dedicated-supervisor") == 0 &&
				      k8s_reconcile_dedicated(k, records[i], rep, err) < 0)
			return os_error_prefix(
				err, "reconcile %s",
				json_string_value(json_object_get(records[i], "id")));
	}
	return 0;
}

/* Hosted: nothing here waits on the apiserver. Finished jobs are folded
 * (a create's, a start's, a check's), and a dedicated sandbox with no job
 * under way gets its next check queued; the combined topology reads only
 * the watch's snapshot. A failed check is reported, the others go on. */
static int reconcile_hosted(struct k8s_driver *k, json_t *const *records, size_t n, json_t *rep,
			    os_error *err)
{
	if (k8s_async_orphans(k, records, n, k->orphan_scan_due, err) < 0)
		return os_error_prefix(err, "reconcile");
	k->orphan_scan_due = false;
	k8s_async_orphans_removed(k, rep);
	k8s_async_secret_retry(k);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const char *rid = json_string_value(json_object_get(records[i], "id"));
		os_error why = { 0 };
		if (k8s_async_fold(k, records[i], rep, &why) && why.msg[0]) {
			rc = -1;
			*err = why;
		}
		if (!rid || k8s_async_busy(k, rid))
			continue;
		const char *phase = json_string_value(json_object_get(records[i], "phase"));
		const char *topo = topology_to_check(records[i]);
		if (!topo)
			continue;
		/* Only a sandbox being provisioned (ungate) or running (fail
		 * closed) is checked: an ended one stays free for its start. */
		bool live = phase && (!strcmp(phase, "Provisioning") || !strcmp(phase, "Running"));
		if (strcmp(topo, "combined") == 0) {
			if (reconcile_combined(k, records[i], rep, &why) < 0) {
				rc = -1;
				*err = why;
			}
		} else if (live && strcmp(topo, "dedicated-supervisor") == 0 &&
			   k8s_async_reconcile(k, records[i], err) < 0)
			return -1;
	}
	return rc;
}

int k8s_reconcile(struct driver *d, json_t *const *records, size_t n, json_t **out, os_error *err)
{
	struct k8s_driver *k = (struct k8s_driver *)d;
	_cleanup_json_ json_t *rep = json_array();
	if (!rep)
		return os_error_set(err, ENOMEM, "reconcile: out of memory");
	int rc = k->async ? reconcile_hosted(k, records, n, rep, err)
			  : reconcile_inline(k, records, n, rep, err);
	*out = steal_ptr(rep);
	return rc;
}

/* ---- waiting for changes ---- */

static int any_change(void *ctx, const char *type, const json_t *obj, os_error *err)
{
	return 1;
}

static int managed_pods_path(struct k8s_driver *k, char *path, size_t cap, os_error *err)
{
	char coll[512], q[256];
	if (k8s_collection(k, &k8s_kinds[0], coll, sizeof coll, err) < 0 ||
	    k8s_query_escape(K8S_L_MANAGED "=openshell", q, sizeof q, err) < 0)
		return -1;
	return str_format(path, cap, err, "%s?labelSelector=%s", coll, q);
}

int k8s_list_pods(struct k8s_driver *k, struct k8s_client *c, json_t **items, char *rv,
		  size_t rv_cap, os_error *err)
{
	char path[1200];
	_cleanup_json_ json_t *list = NULL;
	if (managed_pods_path(k, path, sizeof path, err) < 0 ||
	    k8s_call(c, "GET", path, NULL, NULL, &list, NULL, err) < 0)
		return -1;
	const char *lrv = json_string_value(
		json_object_get(json_object_get(list, "metadata"), "resourceVersion"));
	json_t *it = json_object_get(list, "items");
	if (!lrv || (it && !json_is_array(it)) || str_copy(rv, rv_cap, lrv, err) < 0)
		return os_error_set(err, EPROTO, "GET %s: not a list answer", path);
	*items = it ? json_incref(it) : json_array();
	return 0;
}

int k8s_watch_pods(struct k8s_driver *k, struct k8s_client *c, char *rv, size_t rv_cap,
		   long timeout_s, os_error *err)
{
	char path[1200];
	if (managed_pods_path(k, path, sizeof path, err) < 0)
		return -1;
	int r = k8s_watch(c, path, rv, rv_cap, timeout_s, any_change, NULL, err);
	return r < 0 ? -1 : r;
}
