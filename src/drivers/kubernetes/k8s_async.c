/* k8s_async.c - every Kubernetes API call the gateway's loop would make,
 * off the loop: a call queues a job (a copy of the record, and a create's
 * token) and returns at once; a worker thread, on its own client, runs the
 * whole ordered step with its rollback or its waits. Two lanes, one thread
 * each: creates, starts, stops and deletes (which may wait minutes for
 * Pods) on one; reconcile's checks and repairs (fence confirmed, fail
 * closed, ungate, orphans) on the other, so failing closed never queues
 * behind a create that waits for its Pods. The result comes back through
 * the host's eventfd: a create's, start's or reconcile's is folded into
 * the record by the next reconcile, a stop's or delete's is what the next
 * stop or delete call (the lifecycle repeats them) returns. A sandbox with
 * a job under way is neither reconciled, stopped, started nor deleted by
 * anyone else until it is done (EAGAIN): nothing is half-made by two hands. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_driver.h"
#include "log.h"

enum { LANE_LIFECYCLE, LANE_RECONCILE, LANES };

struct k8s_lane {
	struct k8s_client *client; /* this lane's thread's own */
	pthread_t thread;
	bool started;
	json_t *queue; /* [{op, id, record, token, known}] waiting (under the lock) */
};

struct k8s_lane_arg {
	struct k8s_driver *k;
	int lane;
};

struct k8s_async {
	int efd; /* the host's: written when a result is ready */
	atomic_bool stop;
	pthread_mutex_t lock; /* guards the lanes' queues, running, done */
	pthread_cond_t wake;
	struct k8s_lane lanes[LANES];
	struct k8s_lane_arg args[LANES];
	json_t *running; /* id -> op while its job is queued or working */
	json_t *done; /* id -> {op, ok, error, record as the job left it, report} */
	json_t *secrets; /* sandbox id -> {path, patch, failed}: Secret patches waiting */
};

static int lane_of(const char *op)
{
	return !strcmp(op, "reconcile") || !strcmp(op, "orphans") || !strcmp(op, "orphan") ||
			       !strcmp(op, "secret")
		       ? LANE_RECONCILE
		       : LANE_LIFECYCLE;
}

/* Runs op on wk; a reconcile's or orphan scan's findings go to rep. */
static int run_op(struct k8s_driver *wk, const char *op, json_t *job, json_t *record, json_t *rep,
		  os_error *err)
{
	if (!strcmp(op, "create"))
		return k8s_create_now(wk, record, err);
	if (!strcmp(op, "start"))
		return k8s_start_now(wk, record, err);
	if (!strcmp(op, "stop"))
		return k8s_stop_now(wk, record, err);
	if (!strcmp(op, "delete"))
		return k8s_delete_now(wk, record, err);
	if (!strcmp(op, "reconcile"))
		return k8s_reconcile_dedicated(wk, record, rep, err);
	if (!strcmp(op, "orphans"))
		return k8s_collect_orphans(wk, json_object_get(job, "known"), rep, err);
	return k8s_remove_orphan(wk, json_string_value(json_object_get(record, "id")), rep, err);
}

/* A secret job's key in running: apart from the sandbox's own, so a patch
 * never makes the sandbox busy for its lifecycle. */
static void secret_key(const char *id, char *out, size_t cap)
{
	snprintf(out, cap, "%s/secret", id);
}

/* Sends the newest patch waiting for sid until none is left; a failed one
 * waits (marked failed) for k8s_async_secret_retry unless newer data came. */
static void run_secret(struct k8s_driver *k, struct k8s_async *a, int lane, const char *sid)
{
	struct k8s_driver wk = *k;
	wk.client = a->lanes[lane].client;
	wk.host = NULL;
	wk.async = NULL;
	char key[160];
	secret_key(sid, key, sizeof key);
	for (;;) {
		pthread_mutex_lock(&a->lock);
		json_t *item = json_incref(json_object_get(a->secrets, sid));
		json_object_del(a->secrets, sid);
		if (!item)
			json_object_del(a->running, key);
		pthread_mutex_unlock(&a->lock);
		if (!item)
			return;
		os_error err = { 0 };
		const char *path = json_string_value(json_object_get(item, "path"));
		int r = k8s_patch_secret(&wk, path, json_object_get(item, "patch"), &err);
		if (r < 0) {
			log_warn("kubernetes: sandbox %s: updating its supervisor Secret failed "
				 "(retried "
				 "at the next pass): %s",
				 sid, err.msg);
			pthread_mutex_lock(&a->lock);
			if (!json_object_get(a->secrets, sid)) {
				json_object_set_new(item, "failed", json_true());
				json_object_set(a->secrets, sid, item);
			}
			json_object_del(a->running, key);
			pthread_mutex_unlock(&a->lock);
			json_decref(item);
			return;
		}
		json_decref(item);
	}
}

/* One job on a private copy of the driver: the lane's client and the
 * job's own token table, so nothing of the loop's is touched. */
static void run_job(struct k8s_driver *k, struct k8s_async *a, int lane, json_t *job)
{
	struct k8s_driver wk = *k;
	os_error err = { 0 };
	json_t *record = json_object_get(job, "record");
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *op = json_string_value(json_object_get(job, "op"));
	if (!strcmp(op, "secret")) {
		run_secret(k, a, lane, json_string_value(json_object_get(record, "id")));
		return;
	}
	_cleanup_json_ json_t *before = json_deep_copy(record), *rep = json_array();
	wk.client = a->lanes[lane].client;
	/* Checks read the watch's Pod snapshot (locked); lifecycle steps
	 * list what they need themselves, as without a host. */
	wk.host = lane == LANE_RECONCILE ? k->host : NULL;
	wk.async = NULL;
	wk.tokens = json_object();
	const json_t *tok = json_object_get(job, "token");
	if (wk.tokens && json_is_string(tok))
		json_object_set(wk.tokens, id, (json_t *)tok);
	int r = rep ? run_op(&wk, op, job, record, rep, &err)
		    : os_error_set(&err, ENOMEM, "out of memory");
	if (r < 0)
		log_warn("kubernetes: sandbox %s: %s failed: %s", id, op, err.msg);
	json_decref(wk.tokens);
	/* A check that found nothing to do leaves no result and wakes nobody:
	 * a pass that queues the next check must not be woken by its own quiet
	 * result, and the sandbox is free at once for a stop or delete. */
	bool quiet = lane == LANE_RECONCILE && r == 0 && json_equal(before, record) &&
		     json_array_size(rep) == 0;
	if (quiet) {
		pthread_mutex_lock(&a->lock);
		json_object_del(a->running, id);
		pthread_mutex_unlock(&a->lock);
		return;
	}
	/* Copies: the done table's alone, so no reference is shared between
	 * the threads (the loop takes it under the lock). */
	json_t *result =
		json_pack("{s:s, s:b, s:s, s:o, s:O}", "op", op, "ok", r == 0, "error", err.msg,
			  "record", json_deep_copy(record), "report", rep ? rep : json_array());
	pthread_mutex_lock(&a->lock);
	json_object_set_new(a->done, id, result ? result : json_object());
	pthread_mutex_unlock(&a->lock);
	uint64_t one = 1;
	if (write(a->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("kubernetes: posting a job's result failed");
}

static void *worker_main(void *arg)
{
	struct k8s_lane_arg *la = arg;
	struct k8s_driver *k = la->k;
	struct k8s_async *a = k->async;
	json_t *queue = a->lanes[la->lane].queue;
	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&a->stop)) {
		if (json_array_size(queue) == 0) {
			pthread_cond_wait(&a->wake, &a->lock);
			continue;
		}
		json_t *job = json_incref(json_array_get(queue, 0));
		json_array_remove(queue, 0);
		pthread_mutex_unlock(&a->lock);
		run_job(k, a, la->lane, job);
		json_decref(job);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int k8s_async_start(struct k8s_driver *k, struct k8s_client *const clients[2], int efd,
		    os_error *err)
{
	struct k8s_async *a = calloc(1, sizeof *a);
	if (!a) {
		for (int i = 0; i < LANES; i++)
			k8s_client_free(clients[i]);
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	}
	a->efd = efd;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->wake, NULL);
	a->running = json_object();
	a->done = json_object();
	a->secrets = json_object();
	k->async = a;
	for (int i = 0; i < LANES; i++) {
		a->lanes[i].client = clients[i];
		a->lanes[i].queue = json_array();
		a->args[i] = (struct k8s_lane_arg){ k, i };
		if (!a->lanes[i].queue)
			return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	}
	if (!a->running || !a->done || !a->secrets)
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	for (int i = 0; i < LANES; i++) {
		int rc = pthread_create(&a->lanes[i].thread, NULL, worker_main, &a->args[i]);
		if (rc != 0) {
			errno = rc;
			return os_error_errno(err, "kubernetes: starting a worker");
		}
		a->lanes[i].started = true;
	}
	return 0;
}

static int submit(struct k8s_driver *k, const char *op, const char *id, const json_t *record,
		  json_t *known, os_error *err)
{
	struct k8s_async *a = k->async;
	const char *tok = json_string_value(json_object_get(k->tokens, id));
	json_t *job = json_pack("{s:s, s:s, s:o, s:s?, s:o?}", "op", op, "id", id, "record",
				json_deep_copy(record), "token", !strcmp(op, "create") ? tok : NULL,
				"known", known);
	if (!job || !id)
		return json_decref(job), os_error_set(err, ENOMEM, "kubernetes: out of memory");
	if (!strcmp(op, "create"))
		json_object_del(k->tokens, id); /* the job carries it now */
	pthread_mutex_lock(&a->lock);
	/* Handed over inside the lock: the loop keeps no reference to it. */
	json_array_append_new(a->lanes[lane_of(op)].queue, job);
	json_object_set_new(a->running, id, json_string(op));
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

static int submit_record(struct k8s_driver *k, const char *op, json_t *record, os_error *err)
{
	return submit(k, op, json_string_value(json_object_get(record, "id")), record, NULL, err);
}

int k8s_async_create(struct k8s_driver *k, json_t *record, os_error *err)
{
	if (submit_record(k, "create", record, err) < 0)
		return -1;
	k8s_record_phase(record, "Provisioning", "creating its objects");
	return 0;
}

int k8s_async_start_pods(struct k8s_driver *k, json_t *record, os_error *err)
{
	if (submit_record(k, "start", record, err) < 0)
		return -1;
	k8s_record_phase(record, "Provisioning", "starting its Pods");
	return 0;
}

/* Takes id's finished job of kind op: its record fields into record (when
 * given) and its report entries onto rep (when given). 1 and *ok when
 * there was one. A finished job of another kind is dropped when drop_other
 * (a delete asked after a stop finished: the stop's outcome no longer
 * matters, and leaving it would keep the sandbox busy forever). */
static int take(struct k8s_async *a, const char *id, const char *op, bool drop_other,
		json_t *record, json_t *rep, bool *ok, char *error, size_t cap)
{
	pthread_mutex_lock(&a->lock);
	json_t *res = json_object_get(a->done, id);
	const char *rop = json_string_value(json_object_get(res, "op"));
	if (!res || !rop || strcmp(rop, op) != 0) {
		if (res && drop_other) {
			json_object_del(a->done, id);
			json_object_del(a->running, id);
		}
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	res = json_incref(res);
	json_object_del(a->done, id);
	json_object_del(a->running, id);
	pthread_mutex_unlock(&a->lock);
	static const char *const keys[] = { "phase", "message", "conditions" };
	json_t *rrec = json_object_get(res, "record");
	for (size_t i = 0; record && i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(rrec, keys[i]);
		if (v)
			json_object_set(record, keys[i], v);
	}
	if (rep)
		json_array_extend(rep, json_object_get(res, "report"));
	*ok = json_is_true(json_object_get(res, "ok"));
	snprintf(error, cap, "%s", json_string_value(json_object_get(res, "error")));
	json_decref(res);
	return 1;
}

int k8s_async_step(struct k8s_driver *k, const char *op, json_t *record, os_error *err)
{
	struct k8s_async *a = k->async;
	const char *id = json_string_value(json_object_get(record, "id"));
	char error[OS_ERROR_MSG_MAX];
	bool ok = false;
	if (take(a, id, op, true, record, NULL, &ok, error, sizeof error))
		return ok ? 0 : os_error_set(err, EIO, "%s", error);
	if (k8s_async_busy(k, id))
		return os_error_set(err, EAGAIN, "sandbox %s: a step is still running", id);
	if (submit_record(k, op, record, err) < 0)
		return -1;
	return os_error_set(err, EAGAIN, "sandbox %s: %s under way", id, op);
}

bool k8s_async_busy(struct k8s_driver *k, const char *id)
{
	struct k8s_async *a = k->async;
	if (!a || !id)
		return false;
	pthread_mutex_lock(&a->lock);
	bool busy = json_object_get(a->running, id) != NULL;
	pthread_mutex_unlock(&a->lock);
	return busy;
}

bool k8s_async_fold(struct k8s_driver *k, json_t *record, json_t *rep, os_error *err)
{
	struct k8s_async *a = k->async;
	const char *id = json_string_value(json_object_get(record, "id"));
	if (!a || !id)
		return false;
	char error[OS_ERROR_MSG_MAX];
	bool ok = false;
	if (take(a, id, "create", false, record, rep, &ok, error, sizeof error) == 1 ||
	    take(a, id, "start", false, record, rep, &ok, error, sizeof error) == 1)
		return true;
	if (take(a, id, "reconcile", false, record, rep, &ok, error, sizeof error) != 1)
		return false;
	if (!ok)
		os_error_set(err, EIO, "reconcile %s: %s", id, error);
	return true;
}

int k8s_async_reconcile(struct k8s_driver *k, json_t *record, os_error *err)
{
	return submit_record(k, "reconcile", record, err);
}

/* The orphan scan's key in running/done: no sandbox id has parentheses. */
#define ORPHANS_KEY "(orphans)"

int k8s_async_orphans(struct k8s_driver *k, json_t *const *records, size_t n, bool scan,
		      os_error *err)
{
	struct k8s_async *a = k->async;
	char error[OS_ERROR_MSG_MAX];
	bool ok = false;
	_cleanup_json_ json_t *found = json_array();
	if (!found)
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	if (take(a, ORPHANS_KEY, "orphans", true, NULL, found, &ok, error, sizeof error)) {
		if (!ok)
			return os_error_set(err, EIO, "orphan scan: %s", error);
		/* Only ids still unknown now and busy with nothing are removed:
		 * a sandbox created after the scan began is not an orphan. */
		size_t i;
		json_t *e;
		json_array_foreach (found, i, e) {
			const char *id = json_string_value(json_object_get(e, "id"));
			bool known = false;
			for (size_t j = 0; id && j < n && !known; j++) {
				const char *rid =
					json_string_value(json_object_get(records[j], "id"));
				known = rid && !strcmp(id, rid);
			}
			if (id && !known && !k8s_async_busy(k, id)) {
				_cleanup_json_ json_t *rec = json_pack("{s:s}", "id", id);
				if (!rec || submit(k, "orphan", id, rec, NULL, err) < 0)
					return -1;
			}
		}
	}
	if (!scan || k8s_async_busy(k, ORPHANS_KEY))
		return 0;
	json_t *known = json_array();
	for (size_t i = 0; known && i < n; i++)
		json_array_append(known, json_object_get(records[i], "id"));
	_cleanup_json_ json_t *none = json_object();
	if (!known || !none)
		return json_decref(known), os_error_set(err, ENOMEM, "kubernetes: out of memory");
	return submit(k, "orphans", ORPHANS_KEY, none, known, err);
}

/* A removed orphan's report entry, when its job is done. */
void k8s_async_orphans_removed(struct k8s_driver *k, json_t *rep)
{
	struct k8s_async *a = k->async;
	pthread_mutex_lock(&a->lock);
	const char *id;
	json_t *res, *tmp;
	json_object_foreach_safe(a->done, tmp, id, res)
	{
		const char *op = json_string_value(json_object_get(res, "op"));
		if (!op || strcmp(op, "orphan") != 0)
			continue;
		json_array_extend(rep, json_object_get(res, "report"));
		if (!json_is_true(json_object_get(res, "ok")))
			log_warn("kubernetes: removing orphan %s: %s", id,
				 json_string_value(json_object_get(res, "error")));
		json_object_del(a->running, id);
		json_object_del(a->done, id);
	}
	pthread_mutex_unlock(&a->lock);
}

/* Queues sid's secret job unless one runs (it sends the newest data before
 * it ends). Under a->lock. */
static int queue_secret(struct k8s_async *a, const char *sid)
{
	char key[160];
	secret_key(sid, key, sizeof key);
	if (json_object_get(a->running, key))
		return 0;
	json_t *job =
		json_pack("{s:s, s:s, s:{s:s}}", "op", "secret", "id", key, "record", "id", sid);
	if (!job)
		return -1;
	json_array_append_new(a->lanes[LANE_RECONCILE].queue, job);
	json_object_set_new(a->running, key, json_string("secret"));
	pthread_cond_broadcast(&a->wake);
	return 0;
}

int k8s_async_secret(struct k8s_driver *k, const char *id, const char *path, const json_t *patch,
		     os_error *err)
{
	struct k8s_async *a = k->async;
	json_t *item = json_pack("{s:s, s:O}", "path", path, "patch", patch);
	if (!item)
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	pthread_mutex_lock(&a->lock);
	json_object_set_new(a->secrets, id, item); /* newer data replaces what waits */
	int r = queue_secret(a, id);
	pthread_mutex_unlock(&a->lock);
	return r < 0 ? os_error_set(err, ENOMEM, "kubernetes: out of memory") : 0;
}

void k8s_async_secret_retry(struct k8s_driver *k)
{
	struct k8s_async *a = k->async;
	const char *id;
	json_t *item;
	pthread_mutex_lock(&a->lock);
	json_object_foreach (a->secrets, id, item) {
		if (json_is_true(json_object_get(item, "failed")))
			queue_secret(a, id);
	}
	pthread_mutex_unlock(&a->lock);
}

bool k8s_async_free(struct k8s_driver *k)
{
	struct k8s_async *a = k->async;
	if (!a)
		return true;
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->stop, true);
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->lock);
	/* A job under way ends within its calls' timeouts. */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	for (int i = 0; i < LANES; i++) {
		if (a->lanes[i].started &&
		    pthread_timedjoin_np(a->lanes[i].thread, NULL, &dl) != 0) {
			log_warn("kubernetes worker did not stop in time; exiting anyway");
			return false;
		}
	}
	for (int i = 0; i < LANES; i++) {
		json_decref(a->lanes[i].queue);
		k8s_client_free(a->lanes[i].client);
	}
	json_decref(a->running);
	json_decref(a->done);
	json_decref(a->secrets);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->lock);
	free(a);
	k->async = NULL;
	return true;
}
