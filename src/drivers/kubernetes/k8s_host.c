/* k8s_host.c - the kubernetes driver's hosting hooks (driver.h) and its
 * registry entry: open from [openshell.drivers.kubernetes], check the
 * configured RuntimeClasses (at start and every K8S_RESYNC_MS), and watch
 * the sandbox Pods from a helper thread whose only effect is a write to an
 * eventfd the host's loop polls. It never picks a class the operator did
 * not configure and never touches a record off the host's thread.
 *
 * Threading: libcurl calls block. Short calls (create, status, reconcile)
 * run on the host's loop with a bounded timeout (K8S_CALL_TIMEOUT_MS, a few
 * retries on 429/5xx); only the Pod watch, a long poll, runs in the helper
 * thread, on its own client. */
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

#define K8S_CALL_TIMEOUT_MS 10000 /* one API call from the loop */
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
	json_t *classes; /* last check, host thread only */
	time_t checked_at;
	pthread_mutex_t lock; /* guards watch_error */
	char watch_error[OS_ERROR_MSG_MAX];
};

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
	json_t *classes = h && h->classes ? h->classes : NULL;
	json_t *missing = missing_classes(classes);
	char watch[OS_ERROR_MSG_MAX] = "ok";
	if (h) {
		pthread_mutex_lock(&h->lock);
		if (h->watch_error[0])
			snprintf(watch, sizeof watch, "%s", h->watch_error);
		pthread_mutex_unlock(&h->lock);
	}
	return json_pack("{s:b, s:s, s:s, s:s?, s:o, s:o, s:s, s:I, s:I}", "ok",
			 json_array_size(missing) == 0, "namespace", s->namespace, "topology",
			 k8s_topology_name(s->topology), "supervisor_runtime_class",
			 s->topology == K8S_TOPOLOGY_DEDICATED ? s->supervisor_class : NULL,
			 "runtime_classes", classes ? json_incref(classes) : json_array(),
			 "missing", missing, "watch", watch, "checked_at",
			 (json_int_t)(h ? h->checked_at : 0), "api_calls",
			 (json_int_t)k8s_client_calls(k->client));
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

static void *watch_main(void *arg)
{
	struct k8s_driver *k = arg;
	struct k8s_host *h = k->host;
	while (!atomic_load(&h->stop)) {
		os_error err = { 0 };
		int r = k8s_wait_change(k, h->watch_client, K8S_WATCH_S, &err);
		if (atomic_load(&h->stop))
			break;
		if (r < 0) {
			set_watch_error(h, err.msg);
			for (int i = 0; i < K8S_WATCH_BACKOFF_S * 10 && !atomic_load(&h->stop); i++)
				nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
			continue;
		}
		set_watch_error(h, "");
		uint64_t one = 1;
		if (r == 1 && write(h->efd, &one, sizeof one) < 0 && errno != EAGAIN)
			set_watch_error(h, "posting a wake-up failed");
	}
	return NULL;
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
	int rc = pthread_create(&h->thread, NULL, watch_main, k);
	if (rc != 0) {
		errno = rc;
		return os_error_errno(err, "kubernetes: starting the watch thread");
	}
	h->thread_started = true;
	return 0;
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
		json_t *classes = check_classes(&k->s, k->client);
		if (classes) {
			json_decref(h->classes);
			h->classes = classes;
			h->checked_at = time(NULL);
		}
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
	if (h->efd >= 0)
		close(h->efd);
	k8s_client_free(h->watch_client);
	pthread_mutex_destroy(&h->lock);
	free(h);
	k->host = NULL;
	return true;
}

/* ---- registry entry ---- */

static struct k8s_client *connect_client(os_error *err)
{
	struct k8s_creds creds;
	/* A short first backoff: retries (429/5xx, refused connections) block
	 * the loop, so an unreachable API costs ~1.5 s per call, not ~6 s. */
	struct k8s_client_opts copts = { .timeout_ms = K8S_CALL_TIMEOUT_MS,
					 .connect_timeout_ms = K8S_CONNECT_TIMEOUT_MS,
					 .backoff_ms = 50 };
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
					 .delete_timeout_ms = K8S_CALL_TIMEOUT_MS };
	/* Before any thread exists: libcurl's global state is not thread-safe. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return os_error_set(err, EIO, "kubernetes: libcurl initialisation failed");
	if (k8s_settings_load(cfg, &s, err) < 0) {
		k8s_settings_release(&s);
		return -1;
	}
	struct k8s_client *c = connect_client(err);
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
	h->watch_client = connect_client(err);
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
	_cleanup_k8s_client_ struct k8s_client *c = connect_client(err);
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
