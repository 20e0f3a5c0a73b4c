/* k8s_driver.c - lifecycle of one sandbox on Kubernetes, in the order of
 * KUBERNETES.md: anchor -> fence NetworkPolicies -> Secrets -> (PVC) ->
 * supervisor Pod -> Service -> gated workload Pod -> supervisor Ready ->
 * fence confirmed -> ungate. Any failure removes what was created.
 * It never creates a Pod before the fence exists and never ungates early. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_driver.h"
#include "parse.h"

const struct k8s_kind k8s_kinds[] = {
	{ "Pod", "/api/v1", "pods" },
	{ "Service", "/api/v1", "services" },
	{ "PersistentVolumeClaim", "/api/v1", "persistentvolumeclaims" },
	{ "Secret", "/api/v1", "secrets" },
	{ "NetworkPolicy", "/apis/networking.k8s.io/v1", "networkpolicies" },
};
const size_t k8s_kinds_len = ARRAY_SIZE(k8s_kinds);
#define KIND_POD (&k8s_kinds[0])
#define KIND_SERVICE (&k8s_kinds[1])
#define KIND_PVC (&k8s_kinds[2])
#define KIND_SECRET (&k8s_kinds[3])
#define KIND_NETPOL (&k8s_kinds[4])

static struct k8s_driver *K(struct driver *d)
{
	return (struct k8s_driver *)d;
}

/* The topology the sandbox was created with, not today's configuration. */
static bool dedicated(const json_t *record)
{
	const char *t = json_string_value(
		json_object_get(json_object_get(record, "placement"), "topology"));
	return t && strcmp(t, "dedicated-supervisor") == 0;
}

int k8s_collection(const struct k8s_driver *k, const struct k8s_kind *kind, char *out, size_t cap,
		   os_error *err)
{
	return str_format(out, cap, err, "%s/namespaces/%s/%s", kind->group_path, k->s.namespace,
			  kind->plural);
}

void k8s_record_phase(json_t *record, const char *phase, const char *message)
{
	json_object_set_new(record, "phase", json_string(phase));
	json_object_set_new(record, "message", json_string(message ? message : ""));
}

int k8s_list_labelled(struct k8s_driver *k, const struct k8s_kind *kind, const char *selector,
		      json_t **items, os_error *err)
{
	char coll[512], q[512], path[1200];
	_cleanup_json_ json_t *list = NULL;
	if (k8s_collection(k, kind, coll, sizeof coll, err) < 0 ||
	    k8s_query_escape(selector, q, sizeof q, err) < 0 ||
	    str_format(path, sizeof path, err, "%s?labelSelector=%s", coll, q) < 0)
		return -1;
	if (k8s_call(k->client, "GET", path, NULL, NULL, &list, NULL, err) < 0)
		return -1;
	json_t *it = json_object_get(list, "items");
	*items = json_is_array(it) ? json_incref(it) : json_array();
	return 0;
}

static int sandbox_selector(const char *id, char *out, size_t cap, os_error *err)
{
	return str_format(out, cap, err, "%s=openshell,%s=%s", K8S_L_MANAGED, K8S_L_ID, id);
}

static const char *obj_name(const json_t *obj)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* DELETE one object; a missing one is fine (idempotent). */
static int delete_one(struct k8s_driver *k, const struct k8s_kind *kind, const char *name,
		      os_error *err)
{
	char coll[512], path[800];
	struct k8s_status st;
	_cleanup_json_ json_t *body = json_pack("{s:s, s:s, s:s}", "apiVersion", "v1", "kind",
						"DeleteOptions", "propagationPolicy", "Background");
	if (k8s_collection(k, kind, coll, sizeof coll, err) < 0 ||
	    str_format(path, sizeof path, err, "%s/%s", coll, name) < 0)
		return -1;
	if (k8s_call(k->client, "DELETE", path, body, NULL, NULL, &st, err) < 0 && st.http != 404)
		return os_error_prefix(err, "deleting %s %s", kind->kind, name);
	return 0;
}

static int gone_cond(void *ctx, const json_t *obj, os_error *err)
{
	return obj == NULL;
}

static int wait_gone(struct k8s_driver *k, const struct k8s_kind *kind, const char *name,
		     os_error *err)
{
	char coll[512];
	if (k8s_collection(k, kind, coll, sizeof coll, err) < 0)
		return -1;
	if (k8s_wait_object(k->client, coll, name, gone_cond, NULL, k->opts.delete_timeout_ms,
			    err) < 0)
		return os_error_prefix(err, "waiting for %s %s to be deleted", kind->kind, name);
	return 0;
}

/* Workload Pods first, so a workload never outlives its supervisor. */
static bool is_supervisor(const json_t *pod)
{
	const char *c = json_string_value(json_object_get(
		json_object_get(json_object_get(pod, "metadata"), "labels"), K8S_L_COMPONENT));
	return c && strcmp(c, "supervisor") == 0;
}

int k8s_delete_pods(struct k8s_driver *k, const char *id, os_error *err)
{
	char sel[256];
	_cleanup_json_ json_t *pods = NULL;
	size_t i;
	json_t *p;
	if (sandbox_selector(id, sel, sizeof sel, err) < 0 ||
	    k8s_list_labelled(k, KIND_POD, sel, &pods, err) < 0)
		return -1;
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach (pods, i, p) {
			if (is_supervisor(p) == (pass == 1) &&
			    delete_one(k, KIND_POD, obj_name(p), err) < 0)
				return -1;
		}
	json_array_foreach (pods, i, p) {
		if (wait_gone(k, KIND_POD, obj_name(p), err) < 0)
			return -1;
	}
	return 0;
}

int k8s_remove_all(struct k8s_driver *k, const char *id, os_error *err)
{
	char sel[256], anchor[96];
	if (k8s_delete_pods(k, id, err) < 0 || sandbox_selector(id, sel, sizeof sel, err) < 0 ||
	    str_format(anchor, sizeof anchor, err, "os-%s", id) < 0)
		return -1;
	for (size_t kind = 1; kind < k8s_kinds_len; kind++) {
		_cleanup_json_ json_t *items = NULL;
		size_t i;
		json_t *o;
		if (k8s_list_labelled(k, &k8s_kinds[kind], sel, &items, err) < 0)
			return -1;
		json_array_foreach (items, i, o) {
			bool is_anchor =
				&k8s_kinds[kind] == KIND_SECRET && strcmp(obj_name(o), anchor) == 0;
			if (!is_anchor && delete_one(k, &k8s_kinds[kind], obj_name(o), err) < 0)
				return -1;
			/* Finalizers (pvc-protection...) delay removal: wait it out so
			 * "deleted" means gone. */
			if (!is_anchor &&
			    json_array_size(json_object_get(json_object_get(o, "metadata"),
							    "finalizers")) &&
			    wait_gone(k, &k8s_kinds[kind], obj_name(o), err) < 0)
				return -1;
		}
	}
	return delete_one(k, KIND_SECRET, anchor, err); /* the anchor goes last */
}

/* POSTs obj. An existing object is an error when fresh (a new sandbox), and
 * is kept when re-provisioning (start); *out (optional) gets the object. */
static int ensure(struct k8s_driver *k, const struct k8s_kind *kind, json_t *obj, bool fresh,
		  const char *what, json_t **out, os_error *err)
{
	char coll[512], path[800];
	struct k8s_status st;
	_cleanup_json_ json_t *o = obj; /* consumed */
	if (!o)
		return os_error_set(err, ENOMEM, "rendering %s: out of memory", what);
	if (k8s_collection(k, kind, coll, sizeof coll, err) < 0)
		return -1;
	if (k8s_call(k->client, "POST", coll, o, NULL, out, &st, err) == 0)
		return 0;
	if (st.http != 409 || fresh)
		return os_error_prefix(err, "creating %s %s", what, obj_name(o));
	if (!out)
		return 0;
	if (str_format(path, sizeof path, err, "%s/%s", coll, obj_name(o)) < 0 ||
	    k8s_call(k->client, "GET", path, NULL, NULL, out, NULL, err) < 0)
		return os_error_prefix(err, "reading existing %s", what);
	return 0;
}

static int create_secrets(struct k8s_driver *k, const json_t *record, const json_t *owner,
			  bool fresh, os_error *err)
{
	char key[K8S_KEY_HEX_LEN + 1];
	/* On start both Secrets exist (409) and keep the key they already hold. */
	if (k8s_sandbox_key_new(key, err) < 0)
		return -1;
	const char *id = json_string_value(json_object_get(record, "id"));
	const char *token = id ? json_string_value(json_object_get(k->tokens, id)) : NULL;
	int r = ensure(k, KIND_SECRET,
		       k8s_render_supervisor_secret(&k->s, record, owner, key, token), fresh,
		       "Secret (supervisor credentials)", NULL, err);
	if (r == 0 && id)
		json_object_del(k->tokens, id); /* the Secret holds it now; we never need it */
	if (r == 0 && dedicated(record))
		r = ensure(k, KIND_SECRET, k8s_render_trust_secret(&k->s, record, owner, key),
			   fresh, "Secret (workload trust)", NULL, err);
	explicit_bzero(key, sizeof key);
	return r;
}

/* Objects that live as long as the sandbox (kept by stop). */
static int create_base(struct k8s_driver *k, const json_t *record, bool fresh, json_t **owner,
		       bool *ours, os_error *err)
{
	_cleanup_json_ json_t *anchor = NULL;
	if (ensure(k, KIND_SECRET, k8s_render_anchor(&k->s, record), fresh, "anchor Secret",
		   &anchor, err) < 0)
		return -1;
	*ours = true; /* from here on, a failed create removes what carries this id */
	*owner = k8s_owner_ref(anchor);
	if (!*owner)
		return os_error_set(err, EPROTO, "anchor Secret: the API returned no uid");
	/* The fence exists before any Pod of this sandbox can. */
	if (dedicated(record) &&
	    (ensure(k, KIND_NETPOL, k8s_render_fence(&k->s, record, *owner), fresh,
		    "NetworkPolicy (fence)", NULL, err) < 0 ||
	     ensure(k, KIND_NETPOL, k8s_render_supervisor_netpol(&k->s, record, *owner), fresh,
		    "NetworkPolicy (supervisor)", NULL, err) < 0))
		return -1;
	if (create_secrets(k, record, *owner, fresh, err) < 0)
		return -1;
	if (k->s.storage_size && ensure(k, KIND_PVC, k8s_render_pvc(&k->s, record, *owner), fresh,
					"PersistentVolumeClaim (workspace)", NULL, err) < 0)
		return -1;
	return 0;
}

static void append_hint(os_error *err, const char *hint)
{
	size_t n = strlen(err->msg);
	snprintf(err->msg + n, sizeof err->msg - n, " (%s)", hint);
}

static const char *class_of(const json_t *record, const char *key)
{
	const char *c =
		json_string_value(json_object_get(json_object_get(record, "placement"), key));
	return c ? c : "(none)";
}

static int create_pods(struct k8s_driver *k, const json_t *record, const json_t *owner, bool fresh,
		       os_error *err)
{
	if (!dedicated(record)) {
		if (ensure(k, KIND_POD, k8s_render_combined_pod(&k->s, record, owner), false,
			   "Pod (combined)", NULL, err) < 0) {
			if (strstr(err->msg, "PodSecurity"))
				append_hint(err,
					    "the combined topology runs the supervisor with "
					    "NET_ADMIN, SYS_ADMIN and SYS_PTRACE, which restricted "
					    "Pod Security refuses; use topology = "
					    "\"dedicated-supervisor\" in this namespace");
			return -1;
		}
		return 0;
	}
	if (ensure(k, KIND_POD, k8s_render_supervisor_pod(&k->s, record, owner), false,
		   "supervisor Pod", NULL, err) < 0)
		return os_error_prefix(err, "supervisor runtimeClassName %s",
				       class_of(record, "supervisor_runtime_class"));
	_cleanup_json_ json_t *svc = NULL;
	if (ensure(k, KIND_SERVICE, k8s_render_service(&k->s, record, owner), fresh,
		   "Service (supervisor)", &svc, err) < 0)
		return -1;
	/* The workload reaches its supervisor at the Service's address: an IP
	 * literal, since the launcher has no resolver and the fence may allow no
	 * DNS. It is stable across stop/start (the Service is kept). */
	const char *ip =
		json_string_value(json_object_get(json_object_get(svc, "spec"), "clusterIP"));
	if (!ip || !*ip || strcmp(ip, "None") == 0)
		return os_error_set(err, EPROTO, "Service of the supervisor has no clusterIP");
	if (ensure(k, KIND_POD, k8s_render_workload_pod(&k->s, record, owner, ip), false,
		   "workload Pod", NULL, err) < 0)
		return os_error_prefix(err, "workload runtimeClassName %s",
				       class_of(record, "workload_runtime_class"));
	return 0;
}

struct ready_ctx {
	char last_phase[32];
	json_t *last; /* the Pod as last seen, for its Events */
};

static int ready_cond(void *ctx, const json_t *pod, os_error *err)
{
	struct ready_ctx *rc = ctx;
	if (!pod)
		return os_error_set(err, ENOENT, "the supervisor Pod was deleted");
	json_decref(rc->last);
	rc->last = json_incref((json_t *)pod);
	const char *phase =
		json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
	snprintf(rc->last_phase, sizeof rc->last_phase, "%s", phase ? phase : "?");
	if (phase && (strcmp(phase, "Failed") == 0 || strcmp(phase, "Succeeded") == 0))
		return os_error_set(err, EIO, "the supervisor Pod ended (phase %s)", phase);
	return k8s_pod_ready(pod);
}

/* A Pod's Events as "Reason: message; ...", for error messages. */
static void events_text(struct k8s_driver *k, const json_t *pod, char *out, size_t cap)
{
	_cleanup_json_ json_t *events = pod ? k8s_pod_events(k, pod) : NULL;
	size_t n = 0, i;
	json_t *ev;
	out[0] = '\0';
	json_array_foreach (events, i, ev) {
		const char *r = json_string_value(json_object_get(ev, "reason"));
		const char *m = json_string_value(json_object_get(ev, "message"));
		int w = snprintf(out + n, cap - n, "%s%s: %s", n ? "; " : "", r ? r : "?",
				 m ? m : "");
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
}

/* Waits for the supervisor, confirms the fence, ungates the workload. */
static int activate(struct k8s_driver *k, json_t *record, os_error *err)
{
	char coll[512], pod[96], events[512];
	_cleanup_json_ json_t *last = NULL;
	struct ready_ctx rc = { "", NULL };
	if (k8s_collection(k, KIND_POD, coll, sizeof coll, err) < 0 ||
	    k8s_object_name(record, "-supervisor", pod, sizeof pod, err) < 0)
		return -1;
	int r = k8s_wait_object(k->client, coll, pod, ready_cond, &rc, k->opts.ready_timeout_ms,
				err);
	last = rc.last; /* owned here from now on */
	if (r < 0) {
		events_text(k, last, events, sizeof events);
		return os_error_prefix(err, "supervisor Pod %s not Ready (last phase %s%s%s)", pod,
				       *rc.last_phase ? rc.last_phase : "unknown",
				       *events ? "; events: " : "", events);
	}
	if (k8s_fence_confirmed(k, record, err) < 0 || k8s_ungate(k, record, err) < 0)
		return -1;
	k8s_record_phase(record, "Running", "supervisor Ready, fence confirmed, workload ungated");
	return 0;
}

static int provision(struct k8s_driver *k, json_t *record, bool fresh, bool *ours, os_error *err)
{
	_cleanup_json_ json_t *owner = NULL;
	if (create_base(k, record, fresh, &owner, ours, err) < 0 ||
	    create_pods(k, record, owner, fresh, err) < 0)
		return -1;
	k8s_record_phase(record, "Provisioning", "all objects accepted");
	if (dedicated(record) && k->opts.ready_timeout_ms > 0)
		return activate(k, record, err);
	return 0;
}

int k8s_create_now(struct k8s_driver *k, json_t *record, os_error *err)
{
	const char *id = json_string_value(json_object_get(record, "id"));
	bool ours = false;
	if (provision(k, record, true, &ours, err) == 0)
		return 0;
	/* Roll back everything; the record keeps the reason. An anchor that was
	 * already there belongs to another sandbox with this id: left alone. */
	os_error rb = { 0 };
	char msg[OS_ERROR_MSG_MAX];
	snprintf(msg, sizeof msg, "%s", err->msg);
	if (ours && k8s_remove_all(k, id, &rb) < 0)
		snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (rollback: %s)", rb.msg);
	k8s_record_phase(record, "Failed", msg);
	return -1;
}

/* Hosted, the create runs on the worker (k8s_async.c): the loop never
 * waits on its calls. Without a host (tests, tools) it runs here. */
static int k8s_create(struct driver *d, json_t *record, os_error *err)
{
	struct k8s_driver *k = K(d);
	return k->async ? k8s_async_create(k, record, err) : k8s_create_now(k, record, err);
}

/* Another hand on a sandbox whose create still runs would half-make it. */
static int busy(struct k8s_driver *k, const json_t *record, os_error *err)
{
	const char *id = json_string_value(json_object_get(record, "id"));
	if (!k8s_async_busy(k, id))
		return 0;
	return os_error_set(err, EAGAIN, "sandbox %s: its create is still running", id);
}

int k8s_stop_now(struct k8s_driver *k, json_t *record, os_error *err)
{
	if (k8s_delete_pods(k, json_string_value(json_object_get(record, "id")), err) < 0)
		return -1;
	k8s_record_phase(record, "Stopped",
			 "Pods deleted; fence, Secrets, Service and volume kept");
	return 0;
}

static int k8s_stop(struct driver *d, json_t *record, os_error *err)
{
	struct k8s_driver *k = K(d);
	return k->async ? k8s_async_step(k, "stop", record, err) : k8s_stop_now(k, record, err);
}

/* Recreates both Pods with the placement recorded at creation; on failure
 * the Pods it made are removed again and the record says why. */
int k8s_start_now(struct k8s_driver *k, json_t *record, os_error *err)
{
	bool ours = false;
	if (provision(k, record, false, &ours, err) == 0)
		return 0;
	os_error rb = { 0 };
	char msg[OS_ERROR_MSG_MAX];
	snprintf(msg, sizeof msg, "%s", err->msg);
	if (k8s_delete_pods(k, json_string_value(json_object_get(record, "id")), &rb) < 0)
		snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (rollback: %s)", rb.msg);
	k8s_record_phase(record, "Failed", msg);
	return -1;
}

/* Hosted, a start waits for its Pods on the worker like a create: the
 * loop (and every other sandbox's session) never waits on its calls. */
static int k8s_start(struct driver *d, json_t *record, os_error *err)
{
	struct k8s_driver *k = K(d);
	if (busy(k, record, err) < 0)
		return -1;
	return k->async ? k8s_async_start_pods(k, record, err) : k8s_start_now(k, record, err);
}

int k8s_delete_now(struct k8s_driver *k, json_t *record, os_error *err)
{
	if (k8s_remove_all(k, json_string_value(json_object_get(record, "id")), err) < 0)
		return -1;
	k8s_record_phase(record, "Deleted", "every object removed");
	return 0;
}

static int k8s_delete(struct driver *d, json_t *record, os_error *err)
{
	struct k8s_driver *k = K(d);
	return k->async ? k8s_async_step(k, "delete", record, err) : k8s_delete_now(k, record, err);
}

static int k8s_validate(struct driver *d, const json_t *request, json_t **record, os_error *err)
{
	return k8s_spec_validate(&K(d)->s, request, record, err);
}

/* What the supervisor must hold but the record must not. Before create the
 * token waits in memory for the Secret; afterwards (a policy update, a new
 * token) the existing Secret is patched, so a restarted supervisor Pod reads
 * the newest policy. The running supervisor gets policies on its session. */
static int k8s_configure(struct driver *d, json_t *record, const struct driver_material *m,
			 os_error *err)
{
	struct k8s_driver *k = K(d);
	const char *id = json_string_value(json_object_get(record, "id"));
	if (!id)
		return os_error_set(err, EINVAL, "record has no id");
	if (m->sandbox_token && k->s.gateway_endpoint) {
		json_t *placement = json_object_get(record, "placement");
		if (!json_is_object(placement))
			return os_error_set(err, EINVAL, "record has no placement");
		json_object_set_new(placement, "gateway_session", json_true());
		json_object_set_new(k->tokens, id, json_string(m->sandbox_token));
	}
	char coll[512], name[128], path[700];
	_cleanup_json_ json_t *data = json_object(), *patch = NULL;
	if (m->policy_yaml)
		json_object_set_new(data, "policy.yaml", json_string(m->policy_yaml));
	if (m->sandbox_token && k->s.gateway_endpoint)
		json_object_set_new(data, "token", json_string(m->sandbox_token));
	if (!json_object_size(data))
		return 0;
	patch = json_pack("{s:O}", "stringData", data);
	if (k8s_collection(k, KIND_SECRET, coll, sizeof coll, err) < 0 ||
	    k8s_object_name(record, "-supervisor", name, sizeof name, err) < 0 ||
	    str_format(path, sizeof path, err, "%s/%s", coll, name) < 0)
		return -1;
	/* Hosted, the patch goes to the reconcile lane (newest data wins, a
	 * failure is retried by the next passes): a policy update never waits
	 * on the apiserver. The running supervisor has the policy from its
	 * session already; the Secret is what a restarted one reads. A token
	 * stays in k->tokens too, for a create that has not run yet. */
	if (k->async)
		return k8s_async_secret(k, id, path, patch, err);
	if (k8s_patch_secret(k, path, patch, err) < 0)
		return os_error_prefix(err, "updating the supervisor Secret of %s", id);
	json_object_del(k->tokens, id);
	return 0;
}

int k8s_patch_secret(struct k8s_driver *k, const char *path, const json_t *patch, os_error *err)
{
	struct k8s_status st = { 0 };
	if (k8s_call(k->client, "PATCH", path, patch, "application/merge-patch+json", NULL, &st,
		     err) == 0)
		return 0;
	if (st.http == 404) { /* not created yet: create renders it from the record */
		memset(err, 0, sizeof *err);
		return 0;
	}
	return -1;
}

static void k8s_free(struct driver *d)
{
	struct k8s_driver *k = K(d);
	if (!k8s_async_free(k) || !k8s_host_free(k))
		return; /* a thread still runs on it: left to the process exit */
	json_decref(k->tokens);
	k8s_settings_release(&k->s);
	k8s_client_free(k->client);
	free(k);
}

static const struct driver_ops k8s_ops = {
	.name = "kubernetes",
	.validate_spec = k8s_validate,
	.create = k8s_create,
	.stop = k8s_stop,
	.start = k8s_start,
	.delete = k8s_delete,
	.status = k8s_status,
	.reconcile = k8s_reconcile,
	.free = k8s_free,
	.configure = k8s_configure,
	.host_start = k8s_host_start,
	.event_fd = k8s_event_fd,
	.dispatch = k8s_dispatch,
	.resync_ms = 30000,
	.health = k8s_health,
	.logs = k8s_logs,
};

struct driver *k8s_driver_new(struct k8s_settings *settings, struct k8s_client *client,
			      const struct k8s_driver_opts *opts, os_error *err)
{
	struct k8s_driver *k = calloc(1, sizeof *k);
	if (!k) {
		k8s_settings_release(settings);
		k8s_client_free(client);
		os_error_set(err, ENOMEM, "kubernetes driver: out of memory");
		return NULL;
	}
	k->base.ops = &k8s_ops;
	if (!(k->tokens = json_object())) {
		free(k);
		k8s_settings_release(settings);
		k8s_client_free(client);
		os_error_set(err, ENOMEM, "kubernetes driver: out of memory");
		return NULL;
	}
	k->s = *settings; /* ownership of dns_peers moves here */
	settings->dns_peers = NULL;
	k->client = client;
	k->orphan_scan_due = true; /* the start-up reconcile looks everywhere */
	k->opts = opts ? *opts : (struct k8s_driver_opts){ 0 };
	if (!k->opts.delete_timeout_ms)
		k->opts.delete_timeout_ms = 60000;
	return &k->base;
}
