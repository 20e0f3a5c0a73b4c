/* k8s_driver.h - internals of the `kubernetes` compute driver (driver.h
 * contract), shared by the files of src/drivers/kubernetes only: hosts reach
 * the driver through driver_registry.h and its vtable. Both topologies, the
 * lifecycle ordering of KUBERNETES.md with rollback, status, reconcile and
 * the hosting hooks (k8s_host.c). It never creates a Pod before its fence, never ungates a
 * workload before its supervisor is Ready and the fence confirmed, and never
 * retries a supervisor Pod without the class the operator configured. */
#ifndef OS_K8S_DRIVER_H
#define OS_K8S_DRIVER_H

#include "driver.h"
#include "k8s_client.h"
#include "k8s_render.h"

struct k8s_driver_opts {
	/* create/start wait this long for the supervisor to be Ready, then ungate;
	 * 0: return once every object is accepted (reconcile ungates later). */
	long ready_timeout_ms;
	long delete_timeout_ms; /* wait for Pods to be gone; default 60000 */
};

/* Takes ownership of settings (dns_peers) and client, also on failure. The
 * configuration the settings borrow from must outlive the driver. */
struct driver *k8s_driver_new(struct k8s_settings *settings, struct k8s_client *client,
			      const struct k8s_driver_opts *opts, os_error *err);

/* ---- internals shared by k8s_driver.c and k8s_reconcile.c ---- */

struct k8s_driver {
	struct driver base;
	struct k8s_settings s;
	struct k8s_client *client;
	struct k8s_driver_opts opts;
	json_t *tokens; /* id -> sandbox token, from configure until the Secret holds it */
	struct k8s_host *host; /* watch thread, class checks (k8s_host.c); NULL: none */
	bool orphan_scan_due; /* the next reconcile lists every kind for orphans */
	struct k8s_async *async; /* API calls off the loop (k8s_async.c); NULL: inline */
};

/* The whole ordered create with its rollback, on k->client (k8s_driver.c). */
int k8s_create_now(struct k8s_driver *k, json_t *record, os_error *err);
int k8s_start_now(struct k8s_driver *k, json_t *record, os_error *err);
int k8s_stop_now(struct k8s_driver *k, json_t *record, os_error *err);
int k8s_delete_now(struct k8s_driver *k, json_t *record, os_error *err);

/* k8s_async.c: the workers (a lifecycle lane and a reconcile lane, each
 * with its own client). start takes both clients (also on failure). */
int k8s_async_start(struct k8s_driver *k, struct k8s_client *const clients[2], int efd,
		    os_error *err);
/* Queues record's create; record says "creating its objects". */
int k8s_async_create(struct k8s_driver *k, json_t *record, os_error *err);
/* Queues a start (Pods recreated on the worker), folded like a create. */
int k8s_async_start_pods(struct k8s_driver *k, json_t *record, os_error *err);
/* True while a job for id is queued or running (or its result not folded). */
bool k8s_async_busy(struct k8s_driver *k, const char *id);
/* Stop or delete (op "stop" / "delete") off the loop: queues it and
 * returns EAGAIN; a later call returns its outcome (0, or its error). */
int k8s_async_step(struct k8s_driver *k, const char *op, json_t *record, os_error *err);
/* Folds id's finished create, start or reconcile check into record (phase,
 * message, conditions) and its report entries onto rep; true when there
 * was one; a failed check's error in err. */
bool k8s_async_fold(struct k8s_driver *k, json_t *record, json_t *rep, os_error *err);
/* Queues a check of a dedicated sandbox (k8s_reconcile_dedicated). */
int k8s_async_reconcile(struct k8s_driver *k, json_t *record, os_error *err);
/* Folds a finished orphan scan (queueing the removal of each id still
 * unknown and idle) and, when scan, queues the next one. */
int k8s_async_orphans(struct k8s_driver *k, json_t *const *records, size_t n, bool scan,
		      os_error *err);
/* Report entries of finished orphan removals onto rep. */
void k8s_async_orphans_removed(struct k8s_driver *k, json_t *rep);
/* A supervisor Secret patch (path, merge patch) for sandbox id, sent on
 * the reconcile lane; newer data for the same id replaces what waits. */
int k8s_async_secret(struct k8s_driver *k, const char *id, const char *path, const json_t *patch,
		     os_error *err);
/* Queues again the patches that failed (called by each reconcile pass). */
void k8s_async_secret_retry(struct k8s_driver *k);
/* PATCH of a supervisor Secret; one not created yet (404) is no error. */
int k8s_patch_secret(struct k8s_driver *k, const char *path, const json_t *patch, os_error *err);
/* Stops the workers; false when one did not stop in time. */
bool k8s_async_free(struct k8s_driver *k);

/* The key under which a snapshot Pod carries its Events (k8s_host.c). */
#define K8S_POD_EVENTS "openshell_events"

/* The collections a sandbox has objects in, deletion order (Pods first). */
struct k8s_kind {
	const char *kind;
	const char *group_path; /* "/api/v1" or "/apis/networking.k8s.io/v1" */
	const char *plural;
};
extern const struct k8s_kind k8s_kinds[];
extern const size_t k8s_kinds_len;

/* "/api/v1/namespaces/NS/pods" etc. */
int k8s_collection(const struct k8s_driver *k, const struct k8s_kind *kind, char *out, size_t cap,
		   os_error *err);
/* Lists the objects of kind carrying selector (a label selector, unescaped). */
int k8s_list_labelled(struct k8s_driver *k, const struct k8s_kind *kind, const char *selector,
		      json_t **items, os_error *err);

void k8s_record_phase(json_t *record, const char *phase, const char *message);

/* Lifecycle steps reused by reconcile. */
int k8s_delete_pods(struct k8s_driver *k, const char *id, os_error *err);
int k8s_remove_all(struct k8s_driver *k, const char *id, os_error *err);
int k8s_fence_confirmed(struct k8s_driver *k, const json_t *record, os_error *err);
int k8s_ungate(struct k8s_driver *k, const json_t *record, os_error *err);
bool k8s_pod_ready(const json_t *pod);
bool k8s_pod_gated(const json_t *pod);

/* The Events of this very Pod (kind, name and uid) as [{type, reason, message,
 * count}]; an empty array when they cannot be read (they are advisory). */
json_t *k8s_pod_events(struct k8s_driver *k, const json_t *pod);
/* The same on client c (the watch thread's own). */
json_t *k8s_pod_events_on(struct k8s_driver *k, struct k8s_client *c, const json_t *pod);

/* Every managed Pod of the namespace (one list) and the list's
 * resourceVersion, on client c. */
int k8s_list_pods(struct k8s_driver *k, struct k8s_client *c, json_t **items, char *rv,
		  size_t rv_cap, os_error *err);
/* Watches them from rv: 1 when one changed, 0 when timeout_s passed,
 * K8S_WATCH_GONE when rv is too old (410: list again), < 0 on error. */
int k8s_watch_pods(struct k8s_driver *k, struct k8s_client *c, char *rv, size_t rv_cap,
		   long timeout_s, os_error *err);
/* A copy of the sandbox's Pods from the watch thread's snapshot, or NULL
 * when there is none yet (no host, or no list succeeded). */
json_t *k8s_host_pods(struct k8s_driver *k, const char *id);

/* Hosting hooks (k8s_host.c). k8s_host_free stops the watch thread; false
 * when it did not stop in time (the driver must then not be freed). */
int k8s_host_start(struct driver *d, os_error *err);
int k8s_event_fd(struct driver *d);
int k8s_dispatch(struct driver *d, unsigned why, os_error *err);
json_t *k8s_health(struct driver *d);
bool k8s_host_free(struct k8s_driver *k);
/* A new client for a thread of its own (its calls may wait long). */
struct k8s_client *k8s_host_client(os_error *err);
/* k8s_logs.c: the driver's logs op (driver.h). */
int k8s_logs(struct driver *d, const json_t *record, bool audit, bool follow, int *fd,
	     os_error *err);

int k8s_status(struct driver *d, json_t *record, json_t **status, os_error *err);
/* One dedicated sandbox's check (fence, supervisor alive, ungate) with
 * its repairs; findings onto rep. */
int k8s_reconcile_dedicated(struct k8s_driver *k, json_t *record, json_t *rep, os_error *err);
/* Ids owning managed objects that known (an array of ids) lacks, as
 * {"id": ID} onto found; and the removal of one such id's objects. */
int k8s_collect_orphans(struct k8s_driver *k, const json_t *known, json_t *found, os_error *err);
int k8s_remove_orphan(struct k8s_driver *k, const char *id, json_t *rep, os_error *err);
int k8s_reconcile(struct driver *d, json_t *const *records, size_t n, json_t **report,
		  os_error *err);

#endif
