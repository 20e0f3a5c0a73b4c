/* kube_host.c - the gateway side of the kubernetes driver: open it, check the
 * configured RuntimeClasses, reconcile (at start, on every Pod change and
 * every KUBE_RESYNC_MS) and persist what reconcile changed. It never picks a
 * class the operator did not configure and never touches the store off-loop.
 *
 * Threading (the choice the design asks to document): libcurl calls block.
 * Short calls (create, status, reconcile) run on the loop with a bounded
 * timeout (KUBE_CALL_TIMEOUT_MS, a few retries on 429/5xx); only the Pod watch,
 * a long poll, runs in a helper thread on its own client, and all it does is
 * write to an eventfd the loop reads. The store, the records and the API
 * driver stay single-threaded. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"
#include "k8s_driver.h"
#include "kube_host.h"
#include "log.h"
#include "loop.h"
#include "parse.h"

#define KUBE_CALL_TIMEOUT_MS 10000 /* one API call from the loop */
#define KUBE_CONNECT_TIMEOUT_MS 3000
#define KUBE_WATCH_S 3 /* one watch; also bounds how long shutdown waits */
#define KUBE_RESYNC_MS 30000 /* reconcile + class check even without changes */
#define KUBE_WATCH_BACKOFF_S 2

struct kube_host {
	struct driver *watch_drv; /* own client: used by the watch thread only */
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	int efd;
	struct loop_io *io;
	struct loop_timer *resync;
	json_t *classes; /* last check, loop thread only */
	time_t checked_at;
	pthread_mutex_t lock; /* guards watch_error */
	char watch_error[OS_ERROR_MSG_MAX];
};

static struct driver *connect_driver(const struct config *cfg, os_error *err)
{
	struct k8s_settings s;
	struct k8s_creds creds;
	/* A short first backoff: retries (429/5xx, refused connections) block
	 * the loop, so an unreachable API costs ~1.5 s per call, not ~6 s. */
	struct k8s_client_opts copts = { .timeout_ms = KUBE_CALL_TIMEOUT_MS,
					 .connect_timeout_ms = KUBE_CONNECT_TIMEOUT_MS,
					 .backoff_ms = 50 };
	/* ready_timeout 0: create returns once every object is accepted; the
	 * reconcile this file runs ungates when the supervisor is Ready. */
	struct k8s_driver_opts dopts = { .ready_timeout_ms = 0,
					 .delete_timeout_ms = KUBE_CALL_TIMEOUT_MS };
	if (k8s_settings_load(cfg, &s, err) < 0)
		return NULL;
	if (k8s_creds_discover(NULL, NULL, &creds, err) < 0) {
		k8s_settings_release(&s);
		os_error_prefix(err, "kubernetes credentials");
		return NULL;
	}
	struct k8s_client *c = k8s_client_new(&creds, &copts, err);
	if (!c) {
		k8s_settings_release(&s);
		return NULL;
	}
	return k8s_driver_new(&s, c, &dopts, err);
}

int kube_host_open(struct gateway *gw, const struct config *cfg, os_error *err)
{
	struct kube_host *h = calloc(1, sizeof *h);
	if (!h)
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	h->efd = -1;
	pthread_mutex_init(&h->lock, NULL);
	gw->kube = h;
	/* Before any thread exists: libcurl's global state is not thread-safe. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return os_error_set(err, EIO, "kubernetes: libcurl initialisation failed");
	gw->driver = connect_driver(cfg, err);
	if (!gw->driver)
		return os_error_prefix(err, "drivers.kubernetes");
	h->watch_drv = connect_driver(cfg, err);
	if (!h->watch_drv)
		return os_error_prefix(err, "drivers.kubernetes (watch)");
	const struct k8s_settings *s = &((struct k8s_driver *)gw->driver)->s;
	log_info("kubernetes driver: namespace %s, topology %s, API %s", s->namespace,
		 k8s_topology_name(s->topology),
		 k8s_client_creds(k8s_driver_client(gw->driver))->server);
	return 0;
}

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
static void check_classes(struct gateway *gw)
{
	struct kube_host *h = gw->kube;
	const struct k8s_settings *s = &((struct k8s_driver *)gw->driver)->s;
	struct k8s_client *c = k8s_driver_client(gw->driver);
	json_t *out = json_array();
	if (!out)
		return;
	if (s->default_class)
		json_array_append_new(out, check_class(c, s->default_class, "workload-default"));
	for (size_t i = 0; i < s->n_allowed; i++)
		json_array_append_new(out,
				      check_class(c, s->allowed_classes[i], "workload-allowed"));
	if (s->topology == K8S_TOPOLOGY_DEDICATED && s->supervisor_class)
		json_array_append_new(out, check_class(c, s->supervisor_class, "supervisor"));
	json_decref(h->classes);
	h->classes = out;
	h->checked_at = time(NULL);
}

json_t *kube_host_status(struct gateway *gw)
{
	struct kube_host *h = gw->kube;
	const struct k8s_settings *s = &((struct k8s_driver *)gw->driver)->s;
	json_t *missing = json_array(), *c;
	size_t i;
	json_array_foreach (h->classes, i, c) {
		if (!json_is_true(json_object_get(c, "available")))
			json_array_append(missing, json_object_get(c, "name"));
	}
	pthread_mutex_lock(&h->lock);
	json_t *watch = json_string(h->watch_error[0] ? h->watch_error : "ok");
	pthread_mutex_unlock(&h->lock);
	return json_pack("{s:b, s:s, s:s, s:s?, s:O, s:o, s:o, s:I}", "ok",
			 json_array_size(missing) == 0, "namespace", s->namespace, "topology",
			 k8s_topology_name(s->topology), "supervisor_runtime_class",
			 s->topology == K8S_TOPOLOGY_DEDICATED ? s->supervisor_class : NULL,
			 "runtime_classes", h->classes ? h->classes : json_array(), "missing",
			 missing, "watch", watch, "checked_at", (json_int_t)h->checked_at);
}

/* ---- reconcile on the loop ---- */

/* One reconcile over every sandbox the store knows; rows whose record the
 * driver changed (ungated, failed closed) are written back, then the
 * lifecycle pass turns that into the sandbox phase. */
static void reconcile_pass(struct gateway *gw)
{
	_cleanup_json_ json_t *rows = NULL, *before = json_array(), *report = NULL;
	os_error err = { 0 };
	if (!before || store_sandbox_list(gw->store, &rows, &err) < 0) {
		log_warn("kubernetes reconcile: %s", err.msg);
		return;
	}
	size_t n = json_array_size(rows);
	_cleanup_free_ json_t **recs = calloc(n + 1, sizeof *recs);
	if (!recs)
		return;
	for (size_t i = 0; i < n; i++) {
		recs[i] = json_object_get(json_array_get(rows, i), "record");
		json_array_append_new(before, json_deep_copy(recs[i]));
	}
	int r = gw->driver->ops->reconcile(gw->driver, recs, n, &report, &err);
	bool changed = false;
	for (size_t i = 0; i < n; i++) {
		json_t *row = json_array_get(rows, i);
		os_error werr = { 0 };
		if (json_equal(json_array_get(before, i), recs[i]))
			continue;
		changed = true;
		/* ESTALE: an API call wrote the row meanwhile; the next pass sees it. */
		if (store_sandbox_update(gw->store, row, &werr) < 0 && werr.code != ESTALE)
			log_warn("kubernetes reconcile: saving %s: %s",
				 json_string_value(json_object_get(row, "name")), werr.msg);
	}
	if (r < 0)
		log_warn("kubernetes reconcile: %s", err.msg);
	size_t i;
	json_t *e;
	json_array_foreach (report, i, e) {
		_cleanup_free_ char *line = json_dumps(e, JSON_COMPACT);
		log_info("kubernetes reconcile: %s", line ? line : "?");
	}
	if (changed)
		lifecycle_tick(gw);
}

static void on_wake(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	uint64_t n;
	if (read(fd, &n, sizeof n) != (ssize_t)sizeof n)
		return; /* EAGAIN: another wake-up already drained it */
	reconcile_pass(data);
}

static void on_resync(struct loop *l, struct loop_timer *t, void *data)
{
	check_classes(data);
	reconcile_pass(data);
}

/* ---- the watch thread: posts wake-ups, nothing else ---- */

static void set_watch_error(struct kube_host *h, const char *msg)
{
	pthread_mutex_lock(&h->lock);
	bool was_ok = !h->watch_error[0];
	snprintf(h->watch_error, sizeof h->watch_error, "%s", msg);
	pthread_mutex_unlock(&h->lock);
	if (was_ok && *msg)
		log_warn("kubernetes watch: %s (retrying; resync every %d s)", msg,
			 KUBE_RESYNC_MS / 1000);
}

static void *watch_main(void *arg)
{
	struct kube_host *h = arg;
	while (!atomic_load(&h->stop)) {
		os_error err = { 0 };
		int r = k8s_driver_wait_change(h->watch_drv, KUBE_WATCH_S, &err);
		if (atomic_load(&h->stop))
			break;
		if (r < 0) {
			set_watch_error(h, err.msg);
			for (int i = 0; i < KUBE_WATCH_BACKOFF_S * 10 && !atomic_load(&h->stop);
			     i++)
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

int kube_host_start(struct gateway *gw, os_error *err)
{
	struct kube_host *h = gw->kube;
	check_classes(gw);
	/* lifecycle_start reconciled once but does not persist records. */
	reconcile_pass(gw);
	h->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h->efd < 0)
		return os_error_errno(err, "kubernetes: eventfd");
	if (loop_io_add(gw->loop, h->efd, LOOP_IN, 0, on_wake, gw, &h->io, err) < 0 ||
	    loop_timer_add(gw->loop, KUBE_RESYNC_MS, KUBE_RESYNC_MS, on_resync, gw, &h->resync,
			   err) < 0)
		return -1;
	/* Started after the loop watches SIGTERM/SIGINT: the thread inherits the
	 * blocked mask, so the signals always reach the loop's signalfd. */
	int rc = pthread_create(&h->thread, NULL, watch_main, h);
	if (rc != 0) {
		errno = rc;
		return os_error_errno(err, "kubernetes: starting the watch thread");
	}
	h->thread_started = true;
	return 0;
}

void kube_host_free(struct gateway *gw)
{
	struct kube_host *h = gw->kube;
	bool joined = true;
	if (!h)
		return;
	atomic_store(&h->stop, true);
	if (h->thread_started) {
		/* A watch ends within KUBE_WATCH_S; waiting longer than that would
		 * only delay shutdown. */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += KUBE_WATCH_S + 2;
		joined = pthread_timedjoin_np(h->thread, NULL, &dl) == 0;
	}
	if (h->io)
		loop_io_remove(h->io);
	if (h->resync)
		loop_timer_remove(h->resync);
	json_decref(h->classes);
	if (!joined) {
		/* The thread still holds its driver and the eventfd: both are left
		 * to the process exit rather than freed under it. */
		log_warn("kubernetes watch thread did not stop in time; exiting anyway");
		gw->kube = NULL;
		return;
	}
	if (h->efd >= 0)
		close(h->efd);
	if (h->watch_drv)
		h->watch_drv->ops->free(h->watch_drv);
	pthread_mutex_destroy(&h->lock);
	free(h);
	gw->kube = NULL;
}
