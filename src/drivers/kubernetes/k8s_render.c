/* k8s_render.c - builds the Kubernetes objects of one sandbox from its record
 * and the operator's settings (KUBERNETES.md tables), as pure functions.
 * The supervisor's class, image and privileges come from the record's
 * placement and the settings only; a runtimeClassName is never "". */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_render.h"
#include "parse.h"

static const char *rec_str(const json_t *record, const char *key)
{
	return json_string_value(json_object_get(record, key));
}

static const char *placement_str(const json_t *record, const char *key)
{
	const char *v =
		json_string_value(json_object_get(json_object_get(record, "placement"), key));
	return v && *v ? v : NULL; /* "" is never a class or image */
}

int k8s_object_name(const json_t *record, const char *suffix, char *out, size_t cap, os_error *err)
{
	const char *id = rec_str(record, "id");
	if (!id)
		return os_error_set(err, EINVAL, "record has no id");
	return str_format(out, cap, err, "os-%s%s", id, suffix);
}

/* Name of an object; on the (validated-away) overflow it yields "" and the
 * API rejects the object, so renderers stay total. */
static const char *oname(const json_t *record, const char *suffix, char *buf, size_t cap)
{
	if (k8s_object_name(record, suffix, buf, cap, NULL) < 0)
		buf[0] = '\0';
	return buf;
}

json_t *k8s_labels(const json_t *record, const char *component)
{
	return json_pack("{s:s, s:s, s:s, s:s}", K8S_L_MANAGED, "openshell", K8S_L_ID,
			 rec_str(record, "id"), K8S_L_NAME, rec_str(record, "name"),
			 K8S_L_COMPONENT, component);
}

/* What selects one component of one sandbox (NetworkPolicies, Service). */
static json_t *selector(const json_t *record, const char *component)
{
	return json_pack("{s:s, s:s, s:s}", K8S_L_MANAGED, "openshell", K8S_L_ID,
			 rec_str(record, "id"), K8S_L_COMPONENT, component);
}

json_t *k8s_owner_ref(const json_t *anchor)
{
	const json_t *m = json_object_get(anchor, "metadata");
	const char *name = json_string_value(json_object_get(m, "name"));
	const char *uid = json_string_value(json_object_get(m, "uid"));
	if (!name || !uid)
		return NULL;
	return json_pack("{s:s, s:s, s:s, s:s, s:b}", "apiVersion", "v1", "kind", "Secret", "name",
			 name, "uid", uid, "blockOwnerDeletion", 0);
}

static json_t *meta(const struct k8s_settings *s, const json_t *record, const char *suffix,
		    const char *component, const json_t *owner)
{
	char name[96];
	json_t *m = json_pack("{s:s, s:s, s:o}", "name", oname(record, suffix, name, sizeof name),
			      "namespace", s->namespace, "labels", k8s_labels(record, component));
	if (m && owner)
		json_object_set_new(m, "ownerReferences", json_pack("[O]", owner));
	return m;
}

json_t *k8s_render_anchor(const struct k8s_settings *s, const json_t *record)
{
	_cleanup_free_ char *placement = json_to_string(json_object_get(record, "placement"));
	if (!placement)
		return NULL;
	return json_pack("{s:s, s:s, s:o, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
			 "metadata", meta(s, record, "", "anchor", NULL), "type", "Opaque",
			 "stringData", "placement.json", placement);
}

static json_t *tcp_ports(int a, int b)
{
	if (b)
		return json_pack("[{s:s, s:i}, {s:s, s:i}]", "protocol", "TCP", "port", a,
				 "protocol", "TCP", "port", b);
	return json_pack("[{s:s, s:i}]", "protocol", "TCP", "port", a);
}

static json_t *dns_rule(const json_t *peer)
{
	json_t *ns = json_object_get(peer, "namespace_selector");
	json_t *pod = json_object_get(peer, "pod_selector");
	json_int_t port = json_integer_value(json_object_get(peer, "port"));
	json_t *to = json_object();
	if (!to)
		return NULL;
	if (json_object_size(ns))
		json_object_set_new(to, "namespaceSelector", json_pack("{s:O}", "matchLabels", ns));
	if (json_object_size(pod) || !json_object_size(ns))
		json_object_set_new(to, "podSelector", json_pack("{s:O}", "matchLabels", pod));
	return json_pack("{s:[o], s:[{s:s, s:I}, {s:s, s:I}]}", "to", to, "ports", "protocol",
			 "UDP", "port", port, "protocol", "TCP", "port", port);
}

json_t *k8s_render_fence(const struct k8s_settings *s, const json_t *record, const json_t *owner)
{
	json_t *egress = json_pack("[{s:[{s:{s:o}}], s:o}]", "to", "podSelector", "matchLabels",
				   selector(record, "supervisor"), "ports",
				   tcp_ports(K8S_PROXY_PORT, K8S_CONTROL_PORT));
	size_t i;
	json_t *peer;
	if (!egress)
		return NULL;
	json_array_foreach (s->dns_peers, i, peer) {
		json_array_append_new(egress, dns_rule(peer));
	}
	return json_pack("{s:s, s:s, s:o, s:{s:{s:o}, s:[s, s], s:[{s:[{s:{s:o}}]}], s:o}}",
			 "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata",
			 meta(s, record, "-fence", "fence", owner), "spec", "podSelector",
			 "matchLabels", selector(record, "workload"), "policyTypes", "Ingress",
			 "Egress", "ingress", "from", "podSelector", "matchLabels",
			 selector(record, "supervisor"), "egress", egress);
}

json_t *k8s_render_supervisor_netpol(const struct k8s_settings *s, const json_t *record,
				     const json_t *owner)
{
	return json_pack("{s:s, s:s, s:o, s:{s:{s:o}, s:[s], s:[{s:[{s:{s:o}}], s:o}]}}",
			 "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata",
			 meta(s, record, "-supervisor", "supervisor-policy", owner), "spec",
			 "podSelector", "matchLabels", selector(record, "supervisor"),
			 "policyTypes", "Ingress", "ingress", "from", "podSelector", "matchLabels",
			 selector(record, "workload"), "ports",
			 tcp_ports(K8S_PROXY_PORT, K8S_CONTROL_PORT));
}

static const char *policy_text(const json_t *record)
{
	const char *p =
		json_string_value(json_object_get(json_object_get(record, "policy"), "yaml"));
	return p ? p : K8S_DEFAULT_POLICY;
}

json_t *k8s_render_supervisor_secret(const struct k8s_settings *s, const json_t *record,
				     const json_t *owner, const char *key_hex, const char *token)
{
	char key[K8S_KEY_HEX_LEN + 2];
	snprintf(key, sizeof key, "%s\n", key_hex);
	json_t *secret = json_pack(
		"{s:s, s:s, s:o, s:s, s:{s:s, s:s}}", "apiVersion", "v1", "kind", "Secret",
		"metadata", meta(s, record, "-supervisor", "supervisor-credentials", owner), "type",
		"Opaque", "stringData", "sandbox.key", key, "policy.yaml", policy_text(record));
	/* The sandbox token: the supervisor's only credential toward the gateway. */
	if (secret && token)
		json_object_set_new(json_object_get(secret, "stringData"), "token",
				    json_string(token));
	return secret;
}

bool k8s_gateway_session(const json_t *record)
{
	return json_is_true(
		json_object_get(json_object_get(record, "placement"), "gateway_session"));
}

json_t *k8s_render_trust_secret(const struct k8s_settings *s, const json_t *record,
				const json_t *owner, const char *key_hex)
{
	char key[K8S_KEY_HEX_LEN + 2];
	snprintf(key, sizeof key, "%s\n", key_hex);
	return json_pack("{s:s, s:s, s:o, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
			 "metadata", meta(s, record, "-trust", "trust", owner), "type", "Opaque",
			 "stringData", "sandbox.key", key);
}

json_t *k8s_render_pvc(const struct k8s_settings *s, const json_t *record, const json_t *owner)
{
	json_t *pvc = json_pack("{s:s, s:s, s:o, s:{s:[s], s:{s:{s:s}}}}", "apiVersion", "v1",
				"kind", "PersistentVolumeClaim", "metadata",
				meta(s, record, "-workspace", "workspace", owner), "spec",
				"accessModes", "ReadWriteOnce", "resources", "requests", "storage",
				s->storage_size ? s->storage_size : "1Gi");
	if (pvc && s->storage_class)
		json_object_set_new(json_object_get(pvc, "spec"), "storageClassName",
				    json_string(s->storage_class));
	return pvc;
}

json_t *k8s_render_service(const struct k8s_settings *s, const json_t *record, const json_t *owner)
{
	return json_pack("{s:s, s:s, s:o, s:{s:s, s:o, s:[{s:s, s:i, s:i, s:s}, {s:s, s:i, s:i, "
			 "s:s}]}}",
			 "apiVersion", "v1", "kind", "Service", "metadata",
			 meta(s, record, "-supervisor", "supervisor-service", owner), "spec",
			 "type", "ClusterIP", "selector", selector(record, "supervisor"), "ports",
			 "name", "proxy", "port", K8S_PROXY_PORT, "targetPort", K8S_PROXY_PORT,
			 "protocol", "TCP", "name", "control", "port", K8S_CONTROL_PORT,
			 "targetPort", K8S_CONTROL_PORT, "protocol", "TCP");
}

/* ---- Pods ---- */

/* What the restricted Pod Security Standard asks of every container. */
static json_t *restricted_ctx(void)
{
	return json_pack("{s:b, s:{s:[s]}, s:b, s:{s:s}}", "allowPrivilegeEscalation", 0,
			 "capabilities", "drop", "ALL", "runAsNonRoot", 1, "seccompProfile", "type",
			 "RuntimeDefault");
}

static json_t *env_var(const char *name, const char *value)
{
	return json_pack("{s:s, s:s}", "name", name, "value", value);
}

/* Caller env (validated: never proxy or OPENSHELL_ names) after ours. */
static void append_caller_env(json_t *env, const json_t *record)
{
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(json_object_get(record, "spec"), "env"), k, v) {
		json_array_append_new(env, env_var(k, json_string_value(v)));
	}
}

static void set_pod_common(const struct k8s_settings *s, json_t *spec, const char *class)
{
	if (class)
		json_object_set_new(spec, "runtimeClassName", json_string(class));
	json_object_set_new(spec, "automountServiceAccountToken", json_false());
	json_object_set_new(spec, "enableServiceLinks", json_false());
	if (s->n_pull_secrets) {
		json_t *ps = json_array();
		for (size_t i = 0; i < s->n_pull_secrets; i++)
			json_array_append_new(ps, json_pack("{s:s}", "name", s->pull_secrets[i]));
		json_object_set_new(spec, "imagePullSecrets", ps);
	}
}

/* The kubelet keeps the tail of the container's log as its termination
 * message when it fails: the supervisor's last words (a refused boundary
 * step) reach the sandbox's message without anyone reading Pod logs. */
static void keep_last_words(json_t *container)
{
	json_object_set_new(container, "terminationMessagePolicy",
			    json_string("FallbackToLogsOnError"));
}

/* The container's resources from the sandbox spec (and its last words). */
static void set_resources(json_t *container, const json_t *record)
{
	keep_last_words(container);
	json_t *res = json_object_get(json_object_get(record, "spec"), "resources");
	if (json_object_size(res))
		json_object_set_new(container, "resources",
				    json_pack("{s:O, s:O}", "requests", res, "limits", res));
}

/* Pod labels: the caller's (validated not to collide) under ours. */
static void add_caller_labels(json_t *pod, const json_t *record)
{
	json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(json_object_get(record, "spec"), "labels"), k, v) {
		if (!json_object_get(labels, k))
			json_object_set(labels, k, v);
	}
}

static json_t *workspace_volume(const json_t *record, const struct k8s_settings *s)
{
	char name[96];
	if (s->storage_size)
		return json_pack("{s:s, s:{s:s}}", "name", "workspace", "persistentVolumeClaim",
				 "claimName", oname(record, "-workspace", name, sizeof name));
	return json_pack("{s:s, s:{}}", "name", "workspace", "emptyDir");
}

/* The supervisor dials the gateway (a session) and verifies it with the
 * operator's CA Secret, mounted read-only at K8S_GATEWAY_CA_DIR. */
#define K8S_GATEWAY_CA_DIR "/etc/openshell/gateway-ca"

static bool gateway_ca(const struct k8s_settings *s, const json_t *record)
{
	return s->gateway_endpoint && s->gateway_ca_secret && k8s_gateway_session(record);
}

/* Adds the CA Secret's volume to spec and its mount to container. */
static int mount_gateway_ca(const struct k8s_settings *s, const json_t *record, json_t *spec,
			    json_t *container)
{
	if (!gateway_ca(s, record))
		return 0;
	/* Only ca.crt, world-readable: a CA certificate is public, and the
	 * Secret may hold other keys this Pod has no business with. */
	json_t *vol = json_pack("{s:s, s:{s:s, s:i, s:[{s:s, s:s}]}}", "name", "gateway-ca",
				"secret", "secretName", s->gateway_ca_secret, "defaultMode", 0444,
				"items", "key", "ca.crt", "path", "ca.crt");
	json_t *mnt = json_pack("{s:s, s:s, s:b}", "name", "gateway-ca", "mountPath",
				K8S_GATEWAY_CA_DIR, "readOnly", 1);
	/* json_array_append_new takes each reference, appended or not. */
	int r = json_array_append_new(json_object_get(spec, "volumes"), vol);
	return json_array_append_new(json_object_get(container, "volumeMounts"), mnt) < 0 || r < 0
		       ? -1
		       : 0;
}

/* openshell-supervisor's command line (docs/supervisor.md), then "--" and the
 * agent's argv (the caller's "command", or an idle process to attach to). */
static json_t *supervisor_argv(const struct k8s_settings *s, const json_t *record, const char *exe,
			       bool split)
{
	char uid[24], gid[24];
	const json_t *cmd = json_object_get(json_object_get(record, "spec"), "command");
	snprintf(uid, sizeof uid, "%lld", (long long)s->uid);
	snprintf(gid, sizeof gid, "%lld", (long long)s->gid);
	json_t *a =
		json_pack("[s, s, s, s, s, s, s, s, s, s, s, s, s]", exe, "--backend",
			  split ? "split" : "inpod", "--sandbox-id", rec_str(record, "id"),
			  "--proxy-port", "3128", "--policy",
			  "/etc/openshell/credentials/policy.yaml", "--user", uid, "--group", gid);
	/* split: the Pod's own IP, expanded by the kubelet from the env below */
	json_t *more = split ? json_pack("[s, s, s, s, s, s, s, s, s, s]", "--split-mode", "pod",
					 "--split-key", "/etc/openshell/credentials/sandbox.key",
					 "--split-advertise", "$(OPENSHELL_POD_IP)",
					 "--split-control-port", "7443", "--run-dir",
					 K8S_SUPERVISOR_RUN_DIR)
			     /* inpod (combined): runs from the bundle copied into the
		       * workload image, whose own trust store may be empty; the
		       * workspace volume (at /sandbox) is the agent's workspace,
		       * bound into its view as on a host (upload/download use it). */
			     : json_pack("[s, s, s, s, s, s]", "--launcher",
					 K8S_BUNDLE_DIR "/bin/openshell-sandbox", "--upstream-ca",
					 K8S_BUNDLE_CA, "--workdir", "/sandbox");
	/* The operator's split_binary_identity = "endpoint-only", as recorded at
	 * creation: binaries lists are then judged by endpoint alone. */
	if (more && split &&
	    json_is_true(json_object_get(json_object_get(record, "placement"),
					 "endpoint_only_identity"))) {
		json_array_append_new(more, json_string("--binary-identity"));
		json_array_append_new(more, json_string("endpoint-only"));
	}
	json_t *agent = json_array_size(cmd) ? json_deep_copy(cmd)
					     : json_pack("[s, s]", "sleep", "infinity");
	/* The session to the gateway (policy pushes, status, exec): the address
	 * comes from the env the kubelet expands, the token from the Secret. */
	if (more && k8s_gateway_session(record) && s->gateway_endpoint) {
		json_t *session =
			json_pack("[s, s, s, s]", "--gateway", "$(OPENSHELL_GATEWAY_ENDPOINT)",
				  "--token-file", "/etc/openshell/credentials/token");
		if (session && gateway_ca(s, record)) {
			json_array_append_new(session, json_string("--gateway-ca"));
			json_array_append_new(session, json_string(K8S_GATEWAY_CA_DIR "/ca.crt"));
		}
		json_array_extend(more, session); /* copies: ours to release */
		json_decref(session);
	}
	if (!a || !more || !agent || json_array_extend(a, more) < 0 ||
	    json_array_append_new(a, json_string("--")) < 0 || json_array_extend(a, agent) < 0) {
		json_decref(a);
		a = NULL;
	}
	json_decref(more);
	json_decref(agent);
	return a;
}

json_t *k8s_render_supervisor_pod(const struct k8s_settings *s, const json_t *record,
				  const json_t *owner)
{
	char secret[96];
	const char *id = rec_str(record, "id");
	json_t *env =
		json_pack("[o, {s:s, s:{s:{s:s}}}]", env_var("OPENSHELL_SANDBOX_ID", id), "name",
			  "OPENSHELL_POD_IP", "valueFrom", "fieldRef", "fieldPath", "status.podIP");
	if (env && s->gateway_endpoint)
		json_array_append_new(env,
				      env_var("OPENSHELL_GATEWAY_ENDPOINT", s->gateway_endpoint));
	json_t *ctx = restricted_ctx();
	if (ctx)
		json_object_set_new(ctx, "readOnlyRootFilesystem", json_true());
	json_t *container = json_pack(
		"{s:s, s:s, s:s, s:o, s:o, s:[{s:s, s:i, s:s}, {s:s, s:i, s:s}], "
		"s:{s:{s:s}, s:i}, s:o, s:[{s:s, s:s, s:b}, {s:s, s:s}]}",
		"name", "supervisor", "image", placement_str(record, "supervisor_image"),
		"imagePullPolicy", s->pull_policy, "command",
		supervisor_argv(s, record, "openshell-supervisor", true), "env", env, "ports",
		"name", "proxy", "containerPort", K8S_PROXY_PORT, "protocol", "TCP", "name",
		"control", "containerPort", K8S_CONTROL_PORT, "protocol", "TCP", "readinessProbe",
		"tcpSocket", "port", "proxy", "periodSeconds", 2, "securityContext", ctx,
		"volumeMounts", "name", "credentials", "mountPath", "/etc/openshell/credentials",
		"readOnly", 1, "name", "state", "mountPath", "/var/lib/openshell");
	if (!container)
		return NULL;
	keep_last_words(container);
	/* fsGroup: the kubelet hands the Secret's files to our group (0440
	 * root:fsGroup); without it a non-root supervisor could not read them. */
	json_t *spec =
		json_pack("{s:s, s:{s:b, s:i, s:i, s:i, s:{s:s}}, s:[o], s:[{s:s, s:{s:s, s:i}}, "
			  "{s:s, s:{}}]}",
			  "restartPolicy", "Always", "securityContext", "runAsNonRoot", 1,
			  "runAsUser", K8S_SUPERVISOR_UID, "runAsGroup", K8S_SUPERVISOR_UID,
			  "fsGroup", K8S_SUPERVISOR_UID, "seccompProfile", "type", "RuntimeDefault",
			  "containers", container, "volumes", "name", "credentials", "secret",
			  "secretName", oname(record, "-supervisor", secret, sizeof secret),
			  "defaultMode", 0440, "name", "state", "emptyDir");
	if (!spec || mount_gateway_ca(s, record, spec, container) < 0) {
		json_decref(spec);
		return NULL;
	}
	/* The operator's class or none at all: never the workload's, never "". */
	set_pod_common(s, spec, placement_str(record, "supervisor_runtime_class"));
	if (s->service_account)
		json_object_set_new(spec, "serviceAccountName", json_string(s->service_account));
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
			 meta(s, record, "-supervisor", "supervisor", owner), "spec", spec);
}

static json_t *proxy_env(const json_t *record, const char *supervisor_ip)
{
	char url[128];
	snprintf(url, sizeof url, "http://%s:%d", supervisor_ip, K8S_PROXY_PORT);
	json_t *env = json_pack("[o, o, o, o, o]", env_var("HTTP_PROXY", url),
				env_var("HTTPS_PROXY", url), env_var("http_proxy", url),
				env_var("https_proxy", url),
				env_var("OPENSHELL_SANDBOX_ID", rec_str(record, "id")));
	append_caller_env(env, record);
	return env;
}

static json_t *install_container(const struct k8s_settings *s, const json_t *record,
				 json_t *command, json_t *ctx)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:o, s:[{s:s, s:s}]}", "name", "install-openshell",
			 "image", placement_str(record, "supervisor_image"), "imagePullPolicy",
			 s->pull_policy, "command", command, "securityContext", ctx, "volumeMounts",
			 "name", "openshell-bin", "mountPath", K8S_INSTALL_DIR);
}

json_t *k8s_render_workload_pod(const struct k8s_settings *s, const json_t *record,
				const json_t *owner, const char *supervisor_ip)
{
	char trust[96], addr[128];
	snprintf(addr, sizeof addr, "%s:%d", supervisor_ip, K8S_CONTROL_PORT);
	json_t *init = install_container(s, record,
					 json_pack("[s, s, s]", "cp",
						   K8S_BUNDLE_DIR "/bin/openshell-sandbox",
						   K8S_INSTALL_DIR "/openshell-sandbox"),
					 restricted_ctx());
	json_t *agent = json_pack(
		"{s:s, s:s, s:s, s:[s, s, s, s, s], s:o, s:o, s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}, "
		"{s:s, s:s}]}",
		"name", "agent", "image", placement_str(record, "workload_image"),
		"imagePullPolicy", s->pull_policy, "command",
		K8S_BUNDLE_DIR "/bin/openshell-sandbox", "--supervisor", addr, "--trust",
		"/etc/openshell/trust/sandbox.key", "env", proxy_env(record, supervisor_ip),
		"securityContext", restricted_ctx(), "volumeMounts", "name", "openshell-bin",
		"mountPath", K8S_BUNDLE_DIR "/bin", "readOnly", 1, "name", "trust", "mountPath",
		"/etc/openshell/trust", "readOnly", 1, "name", "workspace", "mountPath",
		"/sandbox");
	if (!init || !agent) {
		json_decref(init);
		json_decref(agent);
		return NULL;
	}
	set_resources(agent, record);
	json_t *spec = json_pack(
		"{s:s, s:[{s:s}], s:{s:b, s:I, s:I, s:I, s:{s:s}}, s:[o], s:[o], s:[{s:s, s:{}}, "
		"{s:s, s:{s:s, s:i}}, o]}",
		"restartPolicy", "Never", "schedulingGates", "name", K8S_SCHEDULING_GATE,
		"securityContext", "runAsNonRoot", 1, "runAsUser", (json_int_t)s->uid, "runAsGroup",
		(json_int_t)s->gid, "fsGroup", (json_int_t)s->gid, "seccompProfile", "type",
		"RuntimeDefault", "initContainers", init, "containers", agent, "volumes", "name",
		"openshell-bin", "emptyDir", "name", "trust", "secret", "secretName",
		oname(record, "-trust", trust, sizeof trust), "defaultMode", 0444,
		workspace_volume(record, s));
	if (!spec)
		return NULL;
	set_pod_common(s, spec, placement_str(record, "workload_runtime_class"));
	json_t *pod =
		json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
			  meta(s, record, "-workload", "workload", owner), "spec", spec);
	if (pod)
		add_caller_labels(pod, record);
	return pod;
}

json_t *k8s_render_combined_pod(const struct k8s_settings *s, const json_t *record,
				const json_t *owner)
{
	char secret[96];
	const char *id = rec_str(record, "id");
	json_t *env = json_pack("[o]", env_var("OPENSHELL_SANDBOX_ID", id));
	if (env && s->gateway_endpoint)
		json_array_append_new(env,
				      env_var("OPENSHELL_GATEWAY_ENDPOINT", s->gateway_endpoint));
	append_caller_env(env, record);
	/* The whole bundle: the supervisor is dynamic, and its loader and
	 * libraries must come with it (the workload image has other ones). */
	json_t *init = install_container(
		s, record,
		json_pack("[s, s, s, s, s, s]", "cp", "-R", K8S_BUNDLE_DIR "/bin",
			  K8S_BUNDLE_DIR "/lib", K8S_BUNDLE_DIR "/etc", K8S_INSTALL_DIR "/"),
		json_pack("{s:I, s:b}", "runAsUser", (json_int_t)0, "allowPrivilegeEscalation", 0));
	/* The in-pod boundary: the supervisor builds a netns + nftables fence. */
	json_t *agent = json_pack(
		"{s:s, s:s, s:s, s:o, s:o, s:{s:I, s:b, s:{s:[s, s, s]}}, "
		"s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}, {s:s, s:s}, {s:s, s:s}]}",
		"name", "agent", "image", placement_str(record, "workload_image"),
		"imagePullPolicy", s->pull_policy, "command",
		supervisor_argv(s, record, K8S_BUNDLE_DIR "/bin/openshell-supervisor", false),
		"env", env, "securityContext", "runAsUser", (json_int_t)0, "runAsNonRoot", 0,
		"capabilities", "add", "NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE", "volumeMounts",
		"name", "openshell-bin", "mountPath", K8S_BUNDLE_DIR, "readOnly", 1, "name",
		"credentials", "mountPath", "/etc/openshell/credentials", "readOnly", 1, "name",
		"workspace", "mountPath", "/sandbox", "name", "run", "mountPath", K8S_RUN_DIR);
	if (!init || !agent) {
		json_decref(init);
		json_decref(agent);
		return NULL;
	}
	set_resources(agent, record);
	/* The supervisor's run directory (its veth subnet lock, its CA files):
	 * the workload image need not have /run, and its root may be read-only. */
	json_t *spec = json_pack(
		"{s:s, s:[o], s:[o], s:[{s:s, s:{}}, {s:s, s:{}}, {s:s, s:{s:s, s:i}}, o]}",
		"restartPolicy", "Never", "initContainers", init, "containers", agent, "volumes",
		"name", "openshell-bin", "emptyDir", "name", "run", "emptyDir", "name",
		"credentials", "secret", "secretName",
		oname(record, "-supervisor", secret, sizeof secret), "defaultMode", 0400,
		workspace_volume(record, s));
	if (!spec || mount_gateway_ca(s, record, spec, agent) < 0) {
		json_decref(spec);
		return NULL;
	}
	set_pod_common(s, spec, placement_str(record, "workload_runtime_class"));
	if (s->service_account)
		json_object_set_new(spec, "serviceAccountName", json_string(s->service_account));
	json_t *pod =
		json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
			  meta(s, record, "-sandbox", "sandbox", owner), "spec", spec);
	if (pod)
		add_caller_labels(pod, record);
	return pod;
}
