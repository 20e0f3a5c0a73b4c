/* k8s_render.h - the Kubernetes driver's pure half: operator settings read
 * from the configuration, request validation into a sandbox record (placement
 * resolved once), and the JSON objects of both topologies (KUBERNETES.md).
 * Nothing here talks to a cluster; nothing a caller sends can reach the
 * supervisor's placement, image or privileges. */
#ifndef OS_K8S_RENDER_H
#define OS_K8S_RENDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

#define K8S_ID_MAX 40
#define K8S_PROXY_PORT 3128 /* supervisor's egress proxy */
#define K8S_CONTROL_PORT 7443 /* launcher <-> supervisor authenticated channel */
#define K8S_SUPERVISOR_UID 65532
/* The dedicated supervisor's --run-dir (its sandbox CA files): on the Pod's
 * "state" emptyDir, since its root filesystem is read-only and has no /run. */
#define K8S_SUPERVISOR_RUN_DIR "/var/lib/openshell/run"
/* The supervisor image's self-contained bundle (docs/images.md): bin/ holds
 * openshell-supervisor and the static openshell-sandbox, lib/ the loader and
 * libraries the supervisor's interpreter and RPATH name, etc/ its CA
 * bundle. It runs only at this path, so the combined Pod mounts the copy
 * here; init containers copy into K8S_INSTALL_DIR, which hides nothing of
 * the image they run from. */
#define K8S_BUNDLE_DIR "/opt/openshell"
#define K8S_INSTALL_DIR "/mnt/openshell"
/* The supervisor's /run/openshell (VETH_LEASE_RUN_DIR), on an emptyDir in combined Pods. */
#define K8S_RUN_DIR "/run/openshell"
#define K8S_BUNDLE_CA K8S_BUNDLE_DIR "/etc/ssl/ca-certificates.crt"
#define K8S_SCHEDULING_GATE "openshell.ai/supervisor-ready"
#define K8S_POLICY_MAX (512u * 1024) /* bytes of policy YAML (a Secret holds 1 MiB) */
#define K8S_DEFAULT_POLICY "version: 1\n" /* no policy given: nothing is allowed out */

/* Label keys every object carries. */
#define K8S_L_MANAGED "app.kubernetes.io/managed-by"
#define K8S_L_ID "openshell.ai/sandbox-id"
#define K8S_L_NAME "openshell.ai/sandbox-name"
#define K8S_L_COMPONENT "openshell.ai/component"

enum k8s_topology { K8S_TOPOLOGY_COMBINED, K8S_TOPOLOGY_DEDICATED };

/* The operator's [openshell.drivers.kubernetes] settings. Strings are
 * borrowed from the configuration, which must outlive this struct. */
struct k8s_settings {
	const char *namespace;
	enum k8s_topology topology;
	const char *default_image, *supervisor_image, *pull_policy;
	char *const *pull_secrets;
	size_t n_pull_secrets;
	const char *default_class, *supervisor_class;
	char *const *allowed_classes;
	size_t n_allowed;
	const char *service_account, *gateway_endpoint;
	const char *gateway_ca_secret; /* Secret with ca.crt for an https:// endpoint */
	json_t *dns_peers; /* owned: [{"namespace_selector", "pod_selector", "port"}] */
	bool endpoint_only; /* split_binary_identity = "endpoint-only" */
	const char *storage_size, *storage_class;
	int64_t uid, gid;
};

/* Reads and checks the section (supervisor_image set, no empty class names,
 * the default class inside a non-empty allowlist...). Errors name the key. */
int k8s_settings_load(const struct config *cfg, struct k8s_settings *s, os_error *err);
void k8s_settings_release(struct k8s_settings *s);
const char *k8s_topology_name(enum k8s_topology t);

/* A request (driver.h) -> a new record. EINVAL names what was wrong. */
int k8s_spec_validate(const struct k8s_settings *s, const json_t *request, json_t **record,
		      os_error *err);

/* "os-<id>" + suffix ("" for the anchor, "-fence", ...). */
int k8s_object_name(const json_t *record, const char *suffix, char *out, size_t cap, os_error *err);

/* Labels of one object of the sandbox. */
json_t *k8s_labels(const json_t *record, const char *component);
/* ownerReference to the anchor as created by the API (needs its uid). */
json_t *k8s_owner_ref(const json_t *anchor);

/* Renderers: each returns a new object, or NULL on ENOMEM. owner (may be
 * NULL in tests) is an ownerReference (k8s_owner_ref), not stolen. */
json_t *k8s_render_anchor(const struct k8s_settings *s, const json_t *record);
json_t *k8s_render_fence(const struct k8s_settings *s, const json_t *record, const json_t *owner);
json_t *k8s_render_supervisor_netpol(const struct k8s_settings *s, const json_t *record,
				     const json_t *owner);
/* The supervisor's Secret: the sandbox key, the policy it enforces and (when
 * the gateway gave one) the sandbox token for its session. */
json_t *k8s_render_supervisor_secret(const struct k8s_settings *s, const json_t *record,
				     const json_t *owner, const char *key_hex, const char *token);
/* True when the sandbox's supervisor keeps a session with the gateway (set
 * by configure when the gateway handed a token and gateway_endpoint is set). */
bool k8s_gateway_session(const json_t *record);
/* The workload's Secret: only the sandbox key its launcher proves itself with. */
json_t *k8s_render_trust_secret(const struct k8s_settings *s, const json_t *record,
				const json_t *owner, const char *key_hex);
json_t *k8s_render_pvc(const struct k8s_settings *s, const json_t *record, const json_t *owner);
json_t *k8s_render_supervisor_pod(const struct k8s_settings *s, const json_t *record,
				  const json_t *owner);
json_t *k8s_render_service(const struct k8s_settings *s, const json_t *record, const json_t *owner);
/* supervisor_ip: the Service's ClusterIP (the launcher has no resolver, and
 * the fence allows no DNS unless the operator configured it). */
json_t *k8s_render_workload_pod(const struct k8s_settings *s, const json_t *record,
				const json_t *owner, const char *supervisor_ip);
json_t *k8s_render_combined_pod(const struct k8s_settings *s, const json_t *record,
				const json_t *owner);

/* Generates the sandbox's pre-shared control-channel key (k8s_keys.c). */
#define K8S_KEY_HEX_LEN 64
int k8s_sandbox_key_new(char hex[K8S_KEY_HEX_LEN + 1], os_error *err);

#endif
