/* driver.h - the compute-driver contract shared by the local and kubernetes
 * drivers and the gateway: a small vtable over sandbox records (jansson).
 * A driver never decides policy and never trusts a caller with placement:
 * validate_spec is the one place where a request becomes a record.
 *
 * Request (what the gateway passes to validate_spec; unknown keys rejected):
 *   {
 *     "id":   "abc123",              DNS label, [a-z0-9-], at most 40 bytes
 *     "name": "my-sandbox",          label value, at most 63 bytes
 *     "spec": {                      the caller's fields (API body / CLI flags)
 *       "image": "...",              optional; the driver's default otherwise
 *       "runtime_class_name": "..",  optional; must be in the operator's allowlist
 *       "command": ["python3", "agent.py"],  optional; the agent's argv
 *       "env": {"K": "V"},           optional; may not touch proxy/OpenShell vars
 *       "labels": {"k": "v"},        optional; may not use openshell.ai/ keys
 *       "resources": {"cpu": "500m", "memory": "1Gi"}   optional
 *       "attach": {"tty": B, "rows": N, "cols": N, "term": T, "remove": B}
 *                                    optional; only to a driver with
 *                                    ops->attach (remove: the gateway deletes
 *                                    the sandbox when its agent ends)
 *     },
 *     "policy": {                    optional; absent: nothing may leave
 *       "restricts_binaries": true,  summary the gateway computed
 *       "yaml": "version: 1\n..."    the validated policy the supervisor starts with
 *     }
 *   }
 *
 * Record (validate_spec's output; the gateway stores it and passes it back to
 * every later call; drivers update only "phase", "message" and "conditions"):
 *   {
 *     "id", "name", "driver": "kubernetes",
 *     "spec": {validated caller fields}, "policy": {as in the request},
 *     "placement": {                 resolved once, at creation; start reuses it
 *       "namespace", "topology", "workload_image", "supervisor_image",
 *       "workload_runtime_class": "kata" | null,
 *       "supervisor_runtime_class": "kata-sup" | null   operator's only
 *     },
 *     "phase": "Provisioning" | "Running" | "Stopped" | "Failed" | "Deleted",
 *     "message": "human text, e.g. the API's answer to a failed step",
 *     "conditions": [{"type", "status", "reason", "message"}]
 *   }
 *
 * Status (status's output): the record's id/name/phase/message/placement plus
 *   "pods": [{"name", "component", "phase", "ready", "gated",
 *             "runtimeClassName": "x" | null, "events": [{"type","reason","message"}]}]
 *
 * Errors: every call returns < 0 and fills err. err->code == EINVAL means the
 * request itself was wrong (the gateway answers 400); anything else is a
 * backend failure whose message carries the backend's own words. */
#ifndef OS_DRIVER_H
#define OS_DRIVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct driver;

/* Per-sandbox material kept out of the record (secrets, policy text); any
 * field may be NULL (unchanged). credentials and inference are the JSON the
 * supervisor's --credentials / --inference files take. */
struct driver_material {
	const char *policy_yaml;
	const char *credentials_json;
	const char *inference_json;
	const char *sandbox_token;
	const char *gateway_url;
};

struct driver_ops {
	const char *name;
	/* request -> new record (phase "Provisioning"); EINVAL for a bad request. */
	int (*validate_spec)(struct driver *d, const json_t *request, json_t **record,
			     os_error *err);
	/* Creates every backend object; on failure removes what it created and
	 * leaves phase "Failed" + message in the record. */
	int (*create)(struct driver *d, json_t *record, os_error *err);
	int (*stop)(struct driver *d, json_t *record, os_error *err);
	int (*start)(struct driver *d, json_t *record, os_error *err);
	/* Removes everything of the sandbox; idempotent. */
	int (*delete)(struct driver *d, json_t *record, os_error *err);
	/* Backend view of one sandbox (see "Status" above). */
	int (*status)(struct driver *d, json_t *record, json_t **status, os_error *err);
	/* Brings the backend in line with the records the gateway knows (n may be
	 * 0): fails closed on broken sandboxes, removes objects of unknown ones,
	 * advances provisioning. report lists what was done. */
	int (*reconcile)(struct driver *d, json_t *const *records, size_t n, json_t **report,
			 os_error *err);
	void (*free)(struct driver *d);
	/* Optional (NULL: not supported). Hands the sandbox what its supervisor
	 * must hold but the record must not (see struct driver_material), before
	 * create/start and again on a policy update; a running supervisor is
	 * told to reload. Added for the local driver. */
	int (*configure)(struct driver *d, json_t *record, const struct driver_material *m,
			 os_error *err);

	/* ---- hosting: how the gateway drives a driver on its loop (all
	 * optional; a driver without dispatch makes progress only in the calls
	 * above). Like the isolation backends' event_fd + dispatch pair. ----
	 * host_start: called once the host's loop runs (its signals blocked, so
	 * a helper thread inherits the mask); starts background progress such
	 * as a watch. Afterwards event_fd (-1: none) is polled for reading. */
	int (*host_start)(struct driver *d, os_error *err);
	int (*event_fd)(struct driver *d);
	/* Called when event_fd is readable (DRIVER_DISPATCH_EVENT) and every
	 * resync_ms (DRIVER_DISPATCH_RESYNC; also once before host_start).
	 * Returns 1 when the backend changed, so the host reconciles its
	 * records (and persists what reconcile changed), 0 when not. */
	int (*dispatch)(struct driver *d, unsigned why, os_error *err);
	unsigned resync_ms;
	/* What GET /v1/gateway/status shows under the driver's name (a new
	 * reference), or NULL when the driver has nothing to say. */
	json_t *(*health)(struct driver *d);
	/* Optional: the sandbox's log (audit: its decision records) as the read
	 * end of a pipe, non-blocking, which the host streams until EOF and
	 * closes; the driver fills it off the loop (follow: until the log
	 * ends). For drivers whose logs are not files in the state directory. */
	int (*logs)(struct driver *d, const json_t *record, bool audit, bool follow, int *fd,
		    os_error *err);
	/* True when spec.attach (a foreground create: {"tty", "rows", "cols",
	 * "term"}) is honoured: the agent's first run starts on stdio that one
	 * client attaches to (POST /v1/sandboxes/NAME/attach). The gateway
	 * passes spec.attach only to such a driver. */
	bool attach;
};

#define DRIVER_DISPATCH_EVENT 1u
#define DRIVER_DISPATCH_RESYNC 2u

struct driver {
	const struct driver_ops *ops;
};

static inline void cleanup_driverp(struct driver **d)
{
	if (*d)
		(*d)->ops->free(*d);
}
#define _cleanup_driver_ __attribute__((cleanup(cleanup_driverp)))

#endif
