/* k8s_client.h - a small Kubernetes REST client on libcurl + jansson:
 * credentials (in-cluster, then kubeconfig), requests with a timeout and
 * retries on 429/5xx, errors carrying the API's status and message, and
 * list/watch with resourceVersion, bookmarks and relist on 410 Gone.
 * It never skips TLS verification and never logs a token or key. */
#ifndef OS_K8S_CLIENT_H
#define OS_K8S_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define K8S_RESPONSE_MAX (32u << 20) /* bytes of one answer (a big list) */
#define K8S_WATCH_LINE_MAX (4u << 20) /* bytes of one watch event */
#define K8S_CRED_FILE_MAX (1u << 20) /* bytes of a token, certificate or key file */
#define K8S_RETRIES 5 /* attempts after the first on 429/5xx */

/* In-cluster defaults (overridable for tests with OPENSHELL_K8S_SERVICEACCOUNT_DIR). */
#define K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* Where to find credential material: either inline bytes or a file path. */
struct k8s_blob {
	char *data; /* decoded bytes (NUL-terminated) or NULL */
	size_t len;
	char *path; /* file to read instead, or NULL */
};

struct k8s_creds {
	char *server; /* https://host:port, no trailing slash */
	struct k8s_blob ca, cert, key, token;
	char *namespace; /* context's / service account's namespace, or NULL */
	char source[300]; /* "in-cluster" or the kubeconfig path, for messages */
};

void k8s_creds_free(struct k8s_creds *c);

/* Re-reads a token that came from a file (projected service-account tokens
 * rotate); a no-op for inline tokens. */
int k8s_creds_refresh_token(struct k8s_creds *c, os_error *err);

/* Parses a kubeconfig document (YAML or JSON) into creds, taking the current
 * context (or context if non-NULL). Relative paths are made relative to
 * base_dir. Reads no file: paths stay paths. Unsupported auth (exec,
 * auth-provider, insecure-skip-tls-verify: true) is an error naming it. */
int k8s_kubeconfig_parse(const char *name, const char *data, size_t len, const char *base_dir,
			 const char *context, struct k8s_creds *out, os_error *err);

/* Discovers credentials: in-cluster (KUBERNETES_SERVICE_HOST/PORT + service
 * account token + CA) first, then kubeconfig_path if non-NULL, then
 * $KUBECONFIG, then ~/.kube/config. File references are read (capped). */
int k8s_creds_discover(const char *kubeconfig_path, const char *context, struct k8s_creds *out,
		       os_error *err);

/* What the API answered to a failed call: HTTP status (0: no answer), the
 * Status object's reason ("Forbidden", "AlreadyExists", "Invalid") and message. */
struct k8s_status {
	long http;
	char reason[64];
	char message[768];
};

/* Extracts reason and message from an error answer body (a Status object, or
 * anything else: then the raw text, truncated). Never fails. */
void k8s_status_from_body(long http, const char *body, size_t len, struct k8s_status *st);

struct k8s_client;

struct k8s_client_opts {
	long timeout_ms; /* whole call; default 30000 */
	long connect_timeout_ms; /* default 5000 */
	long backoff_ms; /* first retry delay, doubled each time; default 200 */
	/* Cap on one retry's wait, Retry-After included (default 10000): a
	 * client on the gateway's event loop waits little and fails clearly. */
	long max_retry_wait_ms;
	/* Cap on all the attempts of one call together (0: timeout_ms times
	 * the attempts): what one call may cost its caller at worst. */
	long call_budget_ms;
};

/* Takes ownership of creds (also on failure). */
struct k8s_client *k8s_client_new(struct k8s_creds *creds, const struct k8s_client_opts *opts,
				  os_error *err);
void k8s_client_free(struct k8s_client *c);
const struct k8s_creds *k8s_client_creds(const struct k8s_client *c);
/* Requests made so far (each retry counts), for benchmarks. */
unsigned long k8s_client_calls(const struct k8s_client *c);

static inline void cleanup_k8s_clientp(struct k8s_client **c)
{
	k8s_client_free(*c);
}
#define _cleanup_k8s_client_ __attribute__((cleanup(cleanup_k8s_clientp)))

/* One call. method "GET"/"POST"/"PUT"/"PATCH"/"DELETE"; path is the API path
 * with its query; body may be NULL; content_type NULL means JSON. On a 2xx
 * answer returns 0 and *out (if non-NULL) gets the parsed body. Otherwise
 * returns -1, st gets the answer and err reads
 * "METHOD PATH: HTTP 403 Forbidden: <API message>". */
int k8s_call(struct k8s_client *c, const char *method, const char *path, const json_t *body,
	     const char *content_type, json_t **out, struct k8s_status *st, os_error *err);

/* Percent-encodes s for a query value into out[cap]. */
int k8s_query_escape(const char *s, char *out, size_t cap, os_error *err);

/* ---- watch (k8s_watch.c) ---- */

/* Called for each event; type is "ADDED", "MODIFIED", "DELETED" (BOOKMARK and
 * ERROR are handled by the watcher). Return 0 to go on, 1 to stop, < 0 to fail. */
typedef int (*k8s_watch_fn)(void *ctx, const char *type, const json_t *obj, os_error *err);

#define K8S_WATCH_GONE 2 /* k8s_watch result: resourceVersion expired (410) */

/* Watches collection (an API path, may carry a query, e.g. a labelSelector)
 * from resource_version (in/out: updated by events and bookmarks) for at most
 * timeout_s seconds. Returns 0 when the server ended the watch, 1 when fn
 * stopped it, K8S_WATCH_GONE on 410, < 0 on error. */
int k8s_watch(struct k8s_client *c, const char *collection, char *resource_version, size_t rv_cap,
	      long timeout_s, k8s_watch_fn fn, void *ctx, os_error *err);

/* Parses one watch line into its type and object (borrowed from *root). */
int k8s_watch_parse_line(const char *line, size_t len, json_t **root, const char **type,
			 json_t **object, os_error *err);

/* Waits until cond says done for the object name in collection. cond gets the
 * object, or NULL when it does not exist; returns 1 done, 0 not yet, < 0 to
 * fail. Lists, then watches from the list's resourceVersion, relisting on
 * 410. ETIMEDOUT after timeout_ms. */
typedef int (*k8s_cond_fn)(void *ctx, const json_t *obj, os_error *err);
int k8s_wait_object(struct k8s_client *c, const char *collection, const char *name,
		    k8s_cond_fn cond, void *ctx, long timeout_ms, os_error *err);

#endif
