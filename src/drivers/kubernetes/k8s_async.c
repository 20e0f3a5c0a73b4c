/* k8s_async.c - the kubernetes driver's creates, stops and deletes, off
 * the gateway's loop: a call queues a job (a copy of the record, and a
 * create's token) and returns at once; one worker thread, on its own
 * client, runs the whole ordered step with its rollback or its waits; the
 * result comes back through the host's eventfd: a create's is folded into
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

struct k8s_async {
	struct k8s_client *client; /* the worker's own */
	int efd; /* the host's: written when a result is ready */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t lock; /* guards queue, running, done */
	pthread_cond_t wake;
	json_t *queue; /* [{op, id, record, token}] waiting */
	json_t *running; /* id -> op while its job is queued or working */
	json_t *done; /* id -> {op, ok, error, record as the job left it} */
};

/* One job on a private copy of the driver: the worker's client and the
 * job's own token table, so nothing of the loop's is touched. */
static void run_job(struct k8s_driver *k, struct k8s_async *a, json_t *job)
{
	struct k8s_driver wk = *k;
	os_error err = { 0 };
	json_t *record = json_object_get(job, "record");
	const char *id = json_string_value(json_object_get(job, "id"));
	wk.client = a->client;
	wk.host = NULL;
	wk.async = NULL;
	wk.tokens = json_object();
	const char *op = json_string_value(json_object_get(job, "op"));
	const json_t *tok = json_object_get(job, "token");
	if (wk.tokens && json_is_string(tok))
		json_object_set(wk.tokens, id, (json_t *)tok);
	int r = !strcmp(op, "create") ? k8s_create_now(&wk, record, &err)
		: !strcmp(op, "stop") ? k8s_stop_now(&wk, record, &err)
				      : k8s_delete_now(&wk, record, &err);
	if (r < 0)
		log_warn("kubernetes: sandbox %s: %s failed: %s", id, op, err.msg);
	json_decref(wk.tokens);
	/* Copies: the done table's alone, so no reference is shared between
	 * the threads (the loop takes it under the lock). */
	json_t *result = json_pack("{s:s, s:b, s:s, s:o}", "op", op, "ok", r == 0, "error", err.msg,
				   "record", json_deep_copy(record));
	pthread_mutex_lock(&a->lock);
	json_object_set_new(a->done, id, result ? result : json_object());
	pthread_mutex_unlock(&a->lock);
	uint64_t one = 1;
	if (write(a->efd, &one, sizeof one) < 0 && errno != EAGAIN)
		log_warn("kubernetes: posting a create's result failed");
}

static void *worker_main(void *arg)
{
	struct k8s_driver *k = arg;
	struct k8s_async *a = k->async;
	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&a->stop)) {
		if (json_array_size(a->queue) == 0) {
			pthread_cond_wait(&a->wake, &a->lock);
			continue;
		}
		json_t *job = json_incref(json_array_get(a->queue, 0));
		json_array_remove(a->queue, 0);
		pthread_mutex_unlock(&a->lock);
		run_job(k, a, job);
		json_decref(job);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

int k8s_async_start(struct k8s_driver *k, struct k8s_client *client, int efd, os_error *err)
{
	struct k8s_async *a = calloc(1, sizeof *a);
	if (!a) {
		k8s_client_free(client);
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	}
	a->client = client;
	a->efd = efd;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->wake, NULL);
	a->queue = json_array();
	a->running = json_object();
	a->done = json_object();
	k->async = a;
	if (!a->queue || !a->running || !a->done)
		return os_error_set(err, ENOMEM, "kubernetes: out of memory");
	int rc = pthread_create(&a->thread, NULL, worker_main, k);
	if (rc != 0) {
		errno = rc;
		return os_error_errno(err, "kubernetes: starting the create worker");
	}
	a->started = true;
	return 0;
}

static int submit(struct k8s_driver *k, const char *op, json_t *record, os_error *err)
{
	struct k8s_async *a = k->async;
	const char *id = json_string_value(json_object_get(record, "id"));
	const char *tok = json_string_value(json_object_get(k->tokens, id));
	json_t *job =
		json_pack("{s:s, s:s, s:o, s:s?}", "op", op, "id", id, "record",
			  json_deep_copy(record), "token", !strcmp(op, "create") ? tok : NULL);
	if (!job || !id)
		return json_decref(job), os_error_set(err, ENOMEM, "kubernetes: out of memory");
	if (!strcmp(op, "create"))
		json_object_del(k->tokens, id); /* the job carries it now */
	pthread_mutex_lock(&a->lock);
	/* Handed over inside the lock: the loop keeps no reference to it. */
	json_array_append_new(a->queue, job);
	json_object_set_new(a->running, id, json_string(op));
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

int k8s_async_create(struct k8s_driver *k, json_t *record, os_error *err)
{
	if (submit(k, "create", record, err) < 0)
		return -1;
	k8s_record_phase(record, "Provisioning", "creating its objects");
	return 0;
}

/* Takes id's finished job of kind op: its record fields into record. 1 and
 * *ok when there was one. A finished job of another kind is dropped when
 * drop_other (a delete asked after a stop finished: the stop's outcome no
 * longer matters, and leaving it would keep the sandbox busy forever). */
static int take(struct k8s_async *a, const char *id, const char *op, bool drop_other,
		json_t *record, bool *ok, char *error, size_t cap)
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
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(rrec, keys[i]);
		if (v)
			json_object_set(record, keys[i], v);
	}
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
	if (take(a, id, op, true, record, &ok, error, sizeof error))
		return ok ? 0 : os_error_set(err, EIO, "%s", error);
	if (k8s_async_busy(k, id))
		return os_error_set(err, EAGAIN, "sandbox %s: a step is still running", id);
	if (submit(k, op, record, err) < 0)
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

bool k8s_async_fold(struct k8s_driver *k, json_t *record)
{
	struct k8s_async *a = k->async;
	const char *id = json_string_value(json_object_get(record, "id"));
	if (!a || !id)
		return false;
	char error[OS_ERROR_MSG_MAX];
	bool ok = false;
	return take(a, id, "create", false, record, &ok, error, sizeof error) == 1;
}

bool k8s_async_free(struct k8s_driver *k)
{
	struct k8s_async *a = k->async;
	if (!a)
		return true;
	pthread_mutex_lock(&a->lock);
	atomic_store(&a->stop, true);
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
	if (a->started) {
		/* A create under way ends within its calls' timeouts. */
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 30;
		if (pthread_timedjoin_np(a->thread, NULL, &dl) != 0) {
			log_warn("kubernetes create worker did not stop in time; exiting anyway");
			return false;
		}
	}
	json_decref(a->queue);
	json_decref(a->running);
	json_decref(a->done);
	k8s_client_free(a->client);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->lock);
	free(a);
	k->async = NULL;
	return true;
}
