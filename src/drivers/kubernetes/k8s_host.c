/* k8s_host.c - the kubernetes driver's hosting hooks (driver.h) and its
 * registry entry: open from [openshell.drivers.kubernetes], and a helper
 * thread that keeps one list/watch of every sandbox Pod (a snapshot, with
 * the Events of Pods not Ready) and checks the configured RuntimeClasses;
 * its only effect on the host is the snapshot and a write to an eventfd
 * the host's loop polls. It never picks a class the operator did not
 * configure and never touches a record off the host's thread.
 *
 * Threading: libcurl calls block, so every read the lifecycle makes all
 * the time (status of every sandbox, reconcile's Pods, class checks) is
 * answered from the thread's snapshot, on its own client; creates, starts,
 * stops, deletes, reconcile's checks and the orphan scan run on the
 * workers (k8s_async.c). What the loop still calls (a policy update's
 * Secret patch, the first reconcile before the workers run) has a tight
 * budget (K8S_CALL_BUDGET_MS for all retries of a call) and fails clearly;
 * an apiserver that does not answer shows as "apiserver": "degraded". */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "driver_registry.h"
#include "json.h"
#include "k8s_driver.h"
#include "log.h"
#include "parse.h"

#define K8S_CALL_TIMEOUT_MS 3000 /* one attempt of an API call from the loop */
#define K8S_CALL_BUDGET_MS 4000 /* all attempts of one call from the loop */
#define K8S_RETRY_WAIT_MS 500 /* the loop waits at most this between attempts */
#define K8S_THREAD_TIMEOUT_MS 10000 /* one call of the watch thread */
/* stop and delete wait (on the lifecycle worker) this long for Pods to be gone. */
#define K8S_DELETE_WAIT_MS 10000
#define K8S_CONNECT_TIMEOUT_MS 3000
#define K8S_WATCH_S 3 /* one watch; also bounds how long shutdown waits */
#define K8S_RESYNC_MS 30000 /* reconcile + class check even without changes */
#define K8S_WATCH_BACKOFF_S 2

struct k8s_host {
	struct k8s_client *watch_client; /* used by the watch thread only */
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	int efd;
	pthread_mutex_t lock; /* guards what follows */
	char watch_error[OS_ERROR_MSG_MAX];
	json_t *classes; /* last check (the thread's, published here) */
	time_t checked_at;
	json_t *pods; /* snapshot: every managed Pod, NULL until a list succeeded */
	time_t listed_at; /* when the snapshot was last confirmed by a list */
	unsigned long relists_gone; /* watches that expired (410) and were re-listed */
};

static struct k8s_client *connect_client(bool on_loop, os_error *err);

/* ---- RuntimeClass check ---- */

static json_t *check_class(struct k8s_client *c, const char *name, const char *role)
{
	char path[512];
	struct k8s_status st = { 0 };
	os_error err = { 0 };
	int r = str_format(path, sizeof path, &err, "/apis/node.k8s.io/v1/runtimeclasses/%s", name);
	if (r == 0)
		r = k8s_call(c, "GET", path, NULL, NULL, NULL, &st, &err);
	const char *why = r == 0 ? "" : st.http == 404 ? "not found" : err.msg;
	if (r < 0 && !strcmp(role, "supervisor"))
		log_warn("kubernetes: supervisor RuntimeClass '%s' %s: sandbox creation fails "
			 "until it exists (never created without it)",
			 name, why);
	else if (r < 0)
		log_warn("kubernetes: %s RuntimeClass '%s' %s: Pods asking for it are rejected",
			 role, name, why);
	return json_pack("{s:s, s:s, s:b, s:s}", "name", name, "role", role, "available", r == 0,
			 "error", why);
}

/* Every class the configuration names: the workload default, the allowlist
 * and (dedicated topology) the supervisor's. */
static json_t *check_classes(const struct k8s_settings *s, struct k8s_client *c)
{
	json_t *out = json_array();
	if (!out)
		return NULL;
	if (s->default_class)
		json_array_append_new(out, check_class(c, s->default_class, "workload-default"));
	for (size_t i = 0; i < s->n_allowed; i++)
		json_array_append_new(out,
				      check_class(c, s->allowed_classes[i], "workload-allowed"));
	if (s->topology == K8S_TOPOLOGY_DEDICATED && s->supervisor_class)
		json_array_append_new(out, check_class(c, s->supervisor_class, "supervisor"));
	return out;
}

static json_t *missing_classes(const json_t *classes)
{
	json_t *missing = json_array(), *c;
	size_t i;
	json_array_foreach (classes, i, c) {
		if (!json_is_true(json_object_get(c, "available")))
			json_array_append(missing, json_object_get(c, "name"));
	}
	return missing;
}

json_t *k8s_health(struct driver *d)
{
	struct k8s_driver *k = (struct k8s_driver *)d;
	struct k8s_host *h = k->host;
	const struct k8s_settings *s = &k->s;
	_cleanup_json_ json_t *classes = NULL;
	char watch[OS_ERROR_MSG_MAX] = "ok", api[OS_ERROR_MSG_MAX + 16] = "ok";
	time_t checked = 0, listed = 0;
	unsigned long gone = 0;
	if (h) {
		pthread_mutex_lock(&h->lock);
		if (h->watch_error[0]) {
			snprintf(watch, sizeof watch, "%s", h->watch_error);
			snprintf(api, sizeof api, "degraded: %s", h->watch_error);
		}
		classes = h->classes ? json_deep_copy(h->classes) : NULL;
		checked = h->checked_at;
		listed = h->listed_at;
		gone = h->relists_gone;
		pthread_mutex_unlock(&h->lock);
	}
	json_t *missing = missing_classes(classes);
	return json_pack("{s:b, s:s, s:s, s:s?, s:O, s:o, s:s, s:s, s:I, s:I, s:I, s:I}", "ok",
			 json_array_size(missing) == 0 && !strcmp(api, "ok"), "namespace",
			 s->namespace, "topology", k8s_topology_name(s->topology),
			 "supervisor_runtime_class",
			 s->topology == K8S_TOPOLOGY_DEDICATED ? s->supervisor_class : NULL,
			 "runtime_classes", classes ? classes : json_array(), "missing", missing,
			 "apiserver", api, "watch", watch, "checked_at", (json_int_t)checked,
			 "listed_at", (json_int_t)listed, "watch_relists_after_410",
			 (json_int_t)gone, "api_calls", (json_int_t)k8s_client_calls(k->client));
}

/* ---- the watch thread: posts wake-ups, nothing else ---- */

static void set_watch_error(struct k8s_host *h, const char *msg)
{
	pthread_mutex_lock(&h->lock);
	bool was_ok = !h->watch_error[0];
	snprintf(h->watch_error, sizeof h->watch_error, "%s", msg);
	pthread_mutex_unlock(&h->lock);
	if (was_ok && *msg)
		log_warn("kubernetes watch: %s (retrying; resync every %d s)", msg,
			 K8S_RESYNC_MS / 1000);
}

/* Each Pod carries its Events (why it waits; none are read for a Ready
 * one): read here, so a status never reads them on the loop. */
static void add_events(struct k8s_driver *k, struct k8s_client *c, json_t *pods)
{
	size_t i;
	json_t *p;
	json_array_foreach (pods, i, p) {
		json_object_set_new(p, K8S_POD_EVENTS,
				    k8s_pod_ready(p) ? json_array() : k8s_pod_events_on(k, c, p));
	}
}

/* Publishes a fresh list; a wake-up only when something changed. */
static void publish(struct k8s_host *h, json_t *pods)
{
	pthread_mutex_lock(&h->lock);
	bool changed = !h->pods || !json_equal(h->pods, pods);
	json_decref(h->pods);
	h->pods = pods;
	h->listed_at = time(NULL);
	pthread_mutex_unlock(&h->lock);
	uint64_t one = 1;
	if (changed && write(h->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		set_watch_error(h, "posting a wake-up failed");
}

static void refresh_classes(struct k8s_driver *k, struct k8s_host *h)
{
	if (h->checked_at && time(NULL) - h->checked_at < K8S_RESYNC_MS / 1000)
		return;
	json_t *classes = check_classes(&k->s, h->watch_client);
	pthread_mutex_lock(&h->lock);
	if (classes) {
		json_decref(h->classes);
		h->classes = classes;
	}
	h->checked_at = time(NULL);
	pthread_mutex_unlock(&h->lock);
}

static void pause_thread(struct k8s_host *h, int seconds)
{
	for (int i = 0; i < seconds * 10 && !atomic_load(&h->stop); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
}

/* List, publish, watch until a change (or K8S_WATCH_S), list again after a
 * change. A watch the server ended quietly is resumed from the version it
 * reached (bookmarks move it on) without a list: the snapshot still holds,
 * only the Events of Pods not Ready are read again. A watch whose
 * resourceVersion expired (410 Gone, e.g. after compaction) is followed by
 * a fresh list. */
static void *watch_main(void *arg)
{
	struct k8s_driver *k = arg;
	struct k8s_host *h = k->host;
	char rv[128] = "";
	bool relist = true;
	while (!atomic_load(&h->stop)) {
		os_error err = { 0 };
		json_t *pods = NULL;
		if (!relist) {
			pthread_mutex_lock(&h->lock);
			pods = h->pods ? json_deep_copy(h->pods) : NULL;
			pthread_mutex_unlock(&h->lock);
		}
		if (!pods && k8s_list_pods(k, h->watch_client, &pods, rv, sizeof rv, &err) < 0) {
			set_watch_error(h, err.msg);
			relist = true;
			pause_thread(h, K8S_WATCH_BACKOFF_S);
			continue;
		}
		add_events(k, h->watch_client, pods);
		publish(h, pods);
		refresh_classes(k, h);
		int r = k8s_watch_pods(k, h->watch_client, rv, sizeof rv, K8S_WATCH_S, &err);
		if (atomic_load(&h->stop))
			break;
		relist = r != 0; /* 0: the server ended a quiet watch */
		if (r < 0) {
			set_watch_error(h, err.msg);
			pause_thread(h, K8S_WATCH_BACKOFF_S);
			continue;
		}
		set_watch_error(h, "");
		if (r == K8S_WATCH_GONE) {
			pthread_mutex_lock(&h->lock);
			unsigned long n = ++h->relists_gone;
			pthread_mutex_unlock(&h->lock);
			log_info("kubernetes watch: resourceVersion %s expired (410 Gone): listing "
				 "again (%lu so far)",
				 rv, n);
		}
	}
	return NULL;
}

static const char *pod_label(const json_t *pod, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"), key));
}

json_t *k8s_host_pods(struct k8s_driver *k, const char *id)
{
	struct k8s_host *h = k->host;
	json_t *out = NULL;
	if (!h || !id)
		return NULL;
	pthread_mutex_lock(&h->lock);
	if (h->pods) {
		out = json_array();
		size_t i;
		json_t *p;
		json_array_foreach (h->pods, i, p) {
			const char *pid = pod_label(p, K8S_L_ID);
			if (out && pid && !strcmp(pid, id))
				json_array_append_new(out, json_deep_copy(p));
		}
	}
	pthread_mutex_unlock(&h->lock);
	return out;
}

int k8s_host_start(struct driver *d, os_error *err)
{
	struct k8s_driver *k = (struct k8s_driver *)d;
	struct k8s_host *h = k->host;
	if (!h || h->thread_started)
		return 0;
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->efd < 0)
		return os_error_errno(err, "kubernetes: eventfd");
	/* Once before serving, so the first status already names a missing
	 * class; later checks are the thread's. */
	refresh_classes(k, h);
	int rc = pthread_create(&h->thread, NULL, watch_main, k);
	if (rc != 0) {
		errno = rc;
		return os_error_errno(err, "kubernetes: starting the watch thread");
	}
	h->thread_started = true;
	/* Every call of the lifecycle and of reconcile runs on the workers,
	 * each on its own client, from now on. */
	struct k8s_client *wc[2] = { connect_client(false, err), NULL };
	if (wc[0])
		wc[1] = connect_client(false, err);
	if (!wc[1]) {
		k8s_client_free(wc[0]);
		return os_error_prefix(err, "kubernetes: a worker's client");
	}
	return k8s_async_start(k, wc, h->efd, err);
}

int k8s_event_fd(struct driver *d)
{
	struct k8s_host *h = ((struct k8s_driver *)d)->host;
	return h ? h->efd : -1;
}

int k8s_dispatch(struct driver *d, unsigned why, os_error *err)
{
	struct k8s_driver *k = (struct k8s_driver *)d;
	struct k8s_host *h = k->host;
	int changed = 0;
	if (!h)
		return 0;
	if (why & DRIVER_DISPATCH_EVENT) {
		uint64_t n;
		/* EAGAIN: another wake-up already drained it */
		if (h->efd >= 0 && read(h->efd, &n, sizeof n) == (ssize_t)sizeof n)
			changed = 1;
	}
	if (why & DRIVER_DISPATCH_RESYNC) {
		/* The classes are checked by the watch thread; a resync reconciles
		 * and looks for orphans (five list calls, so not at every change). */
		k->orphan_scan_due = true;
		changed = 1;
	}
	return changed;
}

/* Stops the watch thread; false when it did not stop in time (it then
 * still uses the driver, which is left to the process exit). */
bool k8s_host_free(struct k8s_driver *k)
{
	struct k8s_host *h = k->host;
	if (!h)
		return true;
	atomic_store(&h->stop, true);
	if (h->thread_started) {
		/* A watch ends within K8S_WATCH_S; waiting longer than that would
		 * only delay shutdown. */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += K8S_WATCH_S + 2;
		if (pthread_timedjoin_np(h->thread, NULL, &dl) != 0) {
			log_warn("kubernetes watch thread did not stop in time; exiting anyway");
			return false;
		}
	}
	json_decref(h->classes);
	json_decref(h->pods);
	if (h->efd >= 0)
		close(h->efd);
	k8s_client_free(h->watch_client);
	pthread_mutex_destroy(&h->lock);
	free(h);
	k->host = NULL;
	return true;
}

/* ---- registry entry ---- */

/* on_loop: the client the gateway's loop calls through, whose every call
 * is bounded by K8S_CALL_BUDGET_MS; else the watch thread's. */
struct k8s_client *k8s_host_client(os_error *err)
{
	return connect_client(false, err);
}

static struct k8s_client *connect_client(bool on_loop, os_error *err)
{
	struct k8s_creds creds;
	struct k8s_client_opts copts = {
		.timeout_ms = on_loop ? K8S_CALL_TIMEOUT_MS : K8S_THREAD_TIMEOUT_MS,
		.connect_timeout_ms = K8S_CONNECT_TIMEOUT_MS,
		.backoff_ms = 50,
		.max_retry_wait_ms = on_loop ? K8S_RETRY_WAIT_MS : 0,
		.call_budget_ms = on_loop ? K8S_CALL_BUDGET_MS : 0,
	};
	if (k8s_creds_discover(NULL, NULL, &creds, err) < 0) {
		os_error_prefix(err, "kubernetes credentials");
		return NULL;
	}
	return k8s_client_new(&creds, &copts, err);
}

static int k8s_open(const struct config *cfg, const struct driver_env *env, struct driver **out,
		    os_error *err)
{
	struct k8s_settings s;
	/* ready_timeout 0: create returns once every object is accepted; the
	 * reconcile the host runs ungates when the supervisor is Ready. */
	struct k8s_driver_opts dopts = { .ready_timeout_ms = 0,
					 .delete_timeout_ms = K8S_DELETE_WAIT_MS };
	/* Before any thread exists: libcurl's global state is not thread-safe. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return os_error_set(err, EIO, "kubernetes: libcurl initialisation failed");
	if (k8s_settings_load(cfg, &s, err) < 0) {
		k8s_settings_release(&s);
		return -1;
	}
	struct k8s_client *c = connect_client(true, err);
	if (!c) {
		k8s_settings_release(&s);
		return os_error_prefix(err, "drivers.kubernetes");
	}
	_cleanup_driver_ struct driver *d = k8s_driver_new(&s, c, &dopts, err);
	if (!d)
		return os_error_prefix(err, "drivers.kubernetes");
	struct k8s_driver *k = (struct k8s_driver *)d;
	struct k8s_host *h = calloc(1, sizeof *h);
	if (!h)
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	h->efd = -1;
	pthread_mutex_init(&h->lock, NULL);
	k->host = h;
	h->watch_client = connect_client(false, err);
	if (!h->watch_client)
		return os_error_prefix(err, "drivers.kubernetes (watch)");
	log_info("kubernetes driver: namespace %s, topology %s, API %s", k->s.namespace,
		 k8s_topology_name(k->s.topology), k8s_client_creds(k->client)->server);
	*out = steal_ptr(d);
	return 0;
}

/* What check-config reports about the cluster: the namespace and every
 * configured RuntimeClass, with read-only GETs. */
static int check_cluster(const struct k8s_settings *s, json_t *report, os_error *err)
{
	char ns_path[512];
	os_error nerr = { 0 };
	_cleanup_k8s_client_ struct k8s_client *c = connect_client(false, err);
	if (!c)
		return os_error_prefix(err, "drivers.kubernetes");
	json_object_set_new(report, "server", json_string(k8s_client_creds(c)->server));
	json_t *classes = check_classes(s, c);
	json_object_set_new(report, "runtime_classes", classes ? classes : json_array());
	int ns_ok =
		str_format(ns_path, sizeof ns_path, &nerr, "/api/v1/namespaces/%s", s->namespace);
	if (ns_ok == 0)
		ns_ok = k8s_call(c, "GET", ns_path, NULL, NULL, NULL, NULL, &nerr);
	json_object_set_new(report, "namespace_exists", json_boolean(ns_ok == 0));
	if (ns_ok < 0)
		return os_error_set(err, nerr.code ? nerr.code : EIO,
				    "drivers.kubernetes.namespace: '%s': %s", s->namespace,
				    nerr.msg);
	size_t i;
	json_t *cl;
	json_array_foreach (classes, i, cl) {
		if (json_is_true(json_object_get(cl, "available")))
			continue;
		const char *role = json_string_value(json_object_get(cl, "role"));
		return os_error_set(err, ENOENT, "drivers.kubernetes: %s RuntimeClass '%s' %s%s",
				    role, json_string_value(json_object_get(cl, "name")),
				    json_string_value(json_object_get(cl, "error")),
				    !strcmp(role, "supervisor")
					    ? ": sandbox creation would fail until it exists"
					    : ": its Pods would be rejected");
	}
	return 0;
}

static int k8s_check(const struct config *cfg, const struct driver_env *env, json_t **report,
		     os_error *err)
{
	struct k8s_settings s;
	json_t *rep = json_object();
	*report = rep;
	if (!rep)
		return os_error_set(err, ENOMEM, "out of memory");
	json_object_set_new(rep, "ok", json_false());
	if (k8s_settings_load(cfg, &s, err) < 0) {
		k8s_settings_release(&s);
		return -1;
	}
	json_object_set_new(rep, "namespace", json_string(s.namespace));
	json_object_set_new(rep, "topology", json_string(k8s_topology_name(s.topology)));
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		k8s_settings_release(&s);
		return os_error_set(err, EIO, "kubernetes: libcurl initialisation failed");
	}
	int r = check_cluster(&s, rep, err);
	k8s_settings_release(&s);
	json_object_set_new(rep, "ok", json_boolean(r == 0));
	return r;
}

const struct driver_entry driver_entry_kubernetes = {
	.name = "kubernetes",
	.open = k8s_open,
	.check = k8s_check,
};
