/* test_k8s_render.c - the kubernetes driver's pure half: settings, request
 * validation (placement the caller may and may not choose), the rendered
 * objects of both topologies, kubeconfig parsing and API error parsing.
 * Every rejection has an accepted control beside it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "config.h"
#include "json.h"
#include "k8s_client.h"
#include "k8s_render.h"
#include "policy.h"

struct fx {
	struct config *cfg;
	struct k8s_settings s;
};

static const char base_toml[] = "[openshell.drivers.kubernetes]\n"
				"namespace = \"ns1\"\n"
				"supervisor_image = \"sup:1\"\n"
				"default_image = \"agent:1\"\n";

/* Loads base_toml plus extra lines; returns -1 with err on a settings error. */
static int load(struct fx *f, const char *extra, os_error *err)
{
	char doc[2048];
	const struct config_section *secs[] = { &config_section_kubernetes };
	/* dedicated-supervisor unless the test picks a topology itself */
	snprintf(doc, sizeof doc, "%s%s%s", base_toml,
		 strstr(extra, "topology") ? "" : "topology = \"dedicated-supervisor\"\n", extra);
	memset(&f->s, 0, sizeof f->s);
	f->cfg = config_new(secs, 1, err);
	assert_non_null(f->cfg);
	if (config_load_toml(f->cfg, doc, strlen(doc), "test.toml", err) < 0)
		return -1;
	return k8s_settings_load(f->cfg, &f->s, err);
}

static void unload(struct fx *f)
{
	k8s_settings_release(&f->s);
	config_free(f->cfg);
}

static json_t *request(const char *id, const char *spec_json)
{
	json_t *spec = json_loads(spec_json ? spec_json : "{}", 0, NULL);
	assert_non_null(spec);
	return json_pack("{s:s, s:s, s:o}", "id", id, "name", "n", "spec", spec);
}

/* Validates; returns the record or NULL with err filled. */
static json_t *validate(struct fx *f, json_t *req, os_error *err)
{
	json_t *rec = NULL;
	int r = k8s_spec_validate(&f->s, req, &rec, err);
	json_decref(req);
	return r == 0 ? rec : NULL;
}

static const json_t *path(const json_t *j, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n && j; i++)
		j = json_object_get(j, keys[i]);
	return j;
}
#define P(j, ...)                                                                                  \
	path(j, (const char *const[]){ __VA_ARGS__ },                                              \
	     sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))

static void supervisor_pod_gets_configured_class_workload_its_own(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f,
			      "default_runtime_class_name = \"kata-workload\"\n"
			      "supervisor_runtime_class_name = \"kata-supervisor\"\n",
			      &err),
			 0);
	json_t *rec = validate(&f, request("a1", NULL), &err);
	assert_non_null(rec);
	json_t *sup = k8s_render_supervisor_pod(&f.s, rec, NULL);
	json_t *wl = k8s_render_workload_pod(&f.s, rec, NULL, "10.96.0.10");
	assert_string_equal(json_string_value(P(sup, "spec", "runtimeClassName")),
			    "kata-supervisor");
	assert_string_equal(json_string_value(P(wl, "spec", "runtimeClassName")), "kata-workload");
	json_decref(sup);
	json_decref(wl);
	json_decref(rec);
	unload(&f);
}

static void supervisor_class_unset_means_no_field_even_with_kata_workload(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "allowed_runtime_class_names = [\"kata\"]\n", &err), 0);
	json_t *rec = validate(&f, request("a2", "{\"runtime_class_name\": \"kata\"}"), &err);
	assert_non_null(rec);
	json_t *sup = k8s_render_supervisor_pod(&f.s, rec, NULL);
	json_t *wl = k8s_render_workload_pod(&f.s, rec, NULL, "10.96.0.10");
	assert_null(json_object_get(json_object_get(sup, "spec"), "runtimeClassName"));
	assert_true(json_is_null(P(rec, "placement", "supervisor_runtime_class")));
	assert_string_equal(json_string_value(P(wl, "spec", "runtimeClassName")), "kata");
	json_decref(sup);
	json_decref(wl);
	json_decref(rec);
	unload(&f);
}

static void caller_cannot_name_supervisor_placement(void **state)
{
	static const char *const bad[] = {
		"{\"supervisor_runtime_class_name\": \"kata\"}",
		"{\"supervisor\": {\"runtime_class_name\": \"kata\"}}",
		"{\"driver_config\": {\"supervisor_runtime_class_name\": \"kata\"}}",
		"{\"runtimeClassName\": \"kata\"}",
		"{\"runtime_class_name\": \"kata-supervisor\"}",
	};
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f,
			      "supervisor_runtime_class_name = \"kata-supervisor\"\n"
			      "allowed_runtime_class_names = [\"kata\"]\n",
			      &err),
			 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		os_error_clear(&err);
		assert_null(validate(&f, request("b1", bad[i]), &err));
		assert_int_equal(err.code, EINVAL);
	}
	json_t *ok = validate(&f, request("b1", "{\"runtime_class_name\": \"kata\"}"), &err);
	assert_non_null(ok);
	assert_string_equal(json_string_value(P(ok, "placement", "supervisor_runtime_class")),
			    "kata-supervisor");
	json_decref(ok);
	unload(&f);
}

static void empty_allowlist_means_only_the_default(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "default_runtime_class_name = \"gvisor\"\n", &err), 0);
	json_t *ok = validate(&f, request("c1", "{\"runtime_class_name\": \"gvisor\"}"), &err);
	assert_non_null(ok);
	json_decref(ok);
	assert_null(validate(&f, request("c1", "{\"runtime_class_name\": \"kata\"}"), &err));
	assert_non_null(strstr(err.msg, "not allowed"));
	json_t *def = validate(&f, request("c1", NULL), &err);
	assert_string_equal(json_string_value(P(def, "placement", "workload_runtime_class")),
			    "gvisor");
	json_decref(def);
	unload(&f);
}

static void reserved_env_labels_and_bad_ids_rejected(void **state)
{
	static const char *const bad_specs[] = {
		"{\"env\": {\"HTTPS_PROXY\": \"http://evil\"}}",
		"{\"env\": {\"https_proxy\": \"http://evil\"}}",
		"{\"env\": {\"OPENSHELL_SANDBOX_ID\": \"x\"}}",
		"{\"env\": {\"1BAD\": \"x\"}}",
		"{\"labels\": {\"openshell.ai/component\": \"supervisor\"}}",
		"{\"labels\": {\"app.kubernetes.io/managed-by\": \"me\"}}",
		"{\"resources\": {\"cpu\": \"lots\"}}",
		"{\"resources\": {\"gpu\": \"1\"}}",
		"{\"image\": \"\"}",
	};
	static const char *const bad_ids[] = { "Bad", "-a", "a-", "a_b",
					       "a1234567890123456789012345678901234567890" };
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "", &err), 0);
	for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++)
		assert_null(validate(&f, request("d1", bad_specs[i]), &err));
	for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++)
		assert_null(validate(&f, request(bad_ids[i], NULL), &err));
	json_t *ok = validate(&f,
			      request("a123456789012345678901234567890123456789",
				      "{\"env\": {\"MY_VAR\": \"1\"}, \"labels\": {\"team\": "
				      "\"a\"}, \"resources\": {\"cpu\": \"500m\", \"memory\": "
				      "\"1Gi\"}}"),
			      &err);
	assert_non_null(ok);
	json_t *wl = k8s_render_workload_pod(&f.s, ok, NULL, "10.96.0.10");
	assert_string_equal(json_string_value(P(wl, "metadata", "labels", "team")), "a");
	json_t *agent = json_array_get(P(wl, "spec", "containers"), 0);
	assert_string_equal(json_string_value(P(agent, "resources", "limits", "memory")), "1Gi");
	json_decref(wl);
	json_decref(ok);
	unload(&f);
}

static void binaries_policy_needs_endpoint_only_in_dedicated(void **state)
{
	struct fx f;
	os_error err = { 0 };
	json_t *req;
	assert_int_equal(load(&f, "", &err), 0);
	req = request("e1", NULL);
	json_object_set_new(req, "policy", json_pack("{s:b}", "restricts_binaries", 1));
	assert_null(validate(&f, req, &err));
	assert_non_null(strstr(err.msg, "split_binary_identity"));
	req = request("e1", NULL);
	json_object_set_new(req, "policy", json_pack("{s:b}", "restricts_binaries", 0));
	json_t *plain = validate(&f, req, &err);
	assert_non_null(plain); /* control: a policy without binaries is fine */
	json_decref(plain);
	unload(&f);
	assert_int_equal(load(&f, "split_binary_identity = \"endpoint-only\"\n", &err), 0);
	req = request("e1", NULL);
	json_object_set_new(req, "policy", json_pack("{s:b}", "restricts_binaries", 1));
	json_t *rec = validate(&f, req, &err);
	assert_non_null(rec);
	assert_true(json_is_true(P(rec, "placement", "endpoint_only_identity")));
	json_decref(rec);
	unload(&f);
}

static void workload_pod_is_restricted_gated_and_proxied(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "sandbox_uid = 1234\n", &err), 0);
	json_t *rec = validate(&f, request("w1", NULL), &err);
	json_t *wl = k8s_render_workload_pod(&f.s, rec, NULL, "10.96.0.10");
	const json_t *spec = P(wl, "spec");
	assert_string_equal(
		json_string_value(
			P(json_array_get(json_object_get(spec, "schedulingGates"), 0), "name")),
		K8S_SCHEDULING_GATE);
	assert_true(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
	assert_int_equal(json_integer_value(P(spec, "securityContext", "runAsUser")), 1234);
	json_t *agent = json_array_get(json_object_get(spec, "containers"), 0);
	assert_true(json_is_false(P(agent, "securityContext", "allowPrivilegeEscalation")));
	assert_string_equal(json_string_value(json_array_get(
				    P(agent, "securityContext", "capabilities", "drop"), 0)),
			    "ALL");
	assert_null(P(agent, "securityContext", "capabilities", "add"));
	bool proxied = false;
	size_t i;
	json_t *e;
	json_array_foreach (json_object_get(agent, "env"), i, e) {
		if (!strcmp(json_string_value(json_object_get(e, "name")), "HTTPS_PROXY"))
			proxied = !strcmp(json_string_value(json_object_get(e, "value")),
					  "http://10.96.0.10:3128");
	}
	assert_true(proxied);
	json_decref(wl);
	json_decref(rec);
	unload(&f);
}

static void combined_pod_has_capabilities_and_installer(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "topology = \"combined\"\n", &err), 0);
	json_t *rec = validate(&f, request("k1", NULL), &err);
	json_t *pod = k8s_render_combined_pod(&f.s, rec, NULL);
	json_t *agent = json_array_get(P(pod, "spec", "containers"), 0);
	const json_t *add = P(agent, "securityContext", "capabilities", "add");
	assert_int_equal(json_array_size(add), 3);
	assert_string_equal(json_string_value(json_array_get(add, 0)), "NET_ADMIN");
	assert_string_equal(json_string_value(json_array_get(json_object_get(agent, "command"), 2)),
			    "inpod");
	json_t *init = json_array_get(P(pod, "spec", "initContainers"), 0);
	assert_string_equal(json_string_value(json_object_get(init, "image")), "sup:1");
	assert_null(P(pod, "spec", "schedulingGates"));
	assert_true(json_is_null(P(rec, "placement", "supervisor_runtime_class")));
	json_decref(pod);
	json_decref(rec);
	unload(&f);
}

static void fence_allows_only_supervisor_and_configured_dns(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "", &err), 0);
	json_t *rec = validate(&f, request("f1", NULL), &err);
	json_t *fence = k8s_render_fence(&f.s, rec, NULL);
	assert_int_equal(json_array_size(P(fence, "spec", "egress")), 1);
	assert_string_equal(
		json_string_value(P(fence, "spec", "podSelector", "matchLabels", K8S_L_COMPONENT)),
		"workload");
	json_decref(fence);
	json_decref(rec);
	unload(&f);
	assert_int_equal(
		load(&f, "dns_peers = [{pod_selector = {k8s-app = \"kube-dns\"}, port = 53}]\n",
		     &err),
		0);
	rec = validate(&f, request("f1", NULL), &err);
	fence = k8s_render_fence(&f.s, rec, NULL);
	const json_t *dns = json_array_get(P(fence, "spec", "egress"), 1);
	assert_non_null(dns);
	assert_string_equal(json_string_value(P(json_array_get(json_object_get(dns, "to"), 0),
						"podSelector", "matchLabels", "k8s-app")),
			    "kube-dns");
	json_decref(fence);
	json_decref(rec);
	unload(&f);
}

static void settings_refuse_empty_class_and_missing_supervisor_image(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "supervisor_runtime_class_name = \"\"\n", &err), -1);
	assert_non_null(strstr(err.msg, "supervisor_runtime_class_name"));
	unload(&f);
	assert_int_equal(load(&f, "supervisor_runtime_class_name = \"Kata_VM\"\n", &err), -1);
	unload(&f);
	assert_int_equal(load(&f, "supervisor_image = \"\"\n", &err), -1);
	assert_non_null(strstr(err.msg, "supervisor_image"));
	unload(&f);
	assert_int_equal(load(&f, "supervisor_runtime_class_name = \"kata-vm.x\"\n", &err), 0);
	unload(&f);
}

static void kubeconfig_yaml_with_data_and_token(void **state)
{
	static const char doc[] = "apiVersion: v1\n"
				  "current-context: b\n"
				  "clusters:\n"
				  "- name: c\n"
				  "  cluster:\n"
				  "    server: https://10.0.0.1:6443/\n"
				  "    certificate-authority-data: aGVsbG8=\n"
				  "contexts:\n"
				  "- name: a\n"
				  "  context: {cluster: c, user: cert}\n"
				  "- name: b\n"
				  "  context: {cluster: c, user: tok, namespace: team}\n"
				  "users:\n"
				  "- name: cert\n"
				  "  user: {client-certificate: c.crt, client-key: /abs/c.key}\n"
				  "- name: tok\n"
				  "  user: {token: abc.def}\n";
	struct k8s_creds c;
	os_error err = { 0 };
	assert_int_equal(k8s_kubeconfig_parse("kc", doc, strlen(doc), "/base", NULL, &c, &err), 0);
	assert_string_equal(c.server, "https://10.0.0.1:6443");
	assert_string_equal(c.ca.data, "hello");
	assert_string_equal(c.token.data, "abc.def");
	assert_string_equal(c.namespace, "team");
	k8s_creds_free(&c);
	assert_int_equal(k8s_kubeconfig_parse("kc", doc, strlen(doc), "/base", "a", &c, &err), 0);
	assert_string_equal(c.cert.path, "/base/c.crt");
	assert_string_equal(c.key.path, "/abs/c.key");
	assert_null(c.token.data);
	k8s_creds_free(&c);
	assert_int_equal(k8s_kubeconfig_parse("kc", doc, strlen(doc), "/base", "zz", &c, &err), -1);
	assert_non_null(strstr(err.msg, "zz"));
}

static void kubeconfig_refuses_exec_skip_tls_and_bad_base64(void **state)
{
	static const char *const bad[] = {
		"current-context: a\nclusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"users: [{name: u, user: {exec: {command: x}}}]\n",
		"current-context: a\nclusters: [{name: c, cluster: {server: 'https://x', "
		"insecure-skip-tls-verify: true}}]\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"users: [{name: u, user: {token: t}}]\n",
		"current-context: a\nclusters: [{name: c, cluster: {server: 'https://x', "
		"certificate-authority-data: 'a=b='}}]\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"users: [{name: u, user: {token: t}}]\n",
		"current-context: a\nclusters: [{name: c, cluster: {server: 'http://x'}}]\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"users: [{name: u, user: {token: t}}]\n",
		"current-context: a\nclusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"users: [{name: u, user: {client-certificate: a.crt}}]\n",
	};
	static const char good[] =
		"current-context: a\nclusters: [{name: c, cluster: {server: 'https://x'}}]\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"users: [{name: u, user: {token: t}}]\n";
	struct k8s_creds c;
	os_error err = { 0 };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(
			k8s_kubeconfig_parse("kc", bad[i], strlen(bad[i]), ".", NULL, &c, &err),
			-1);
	assert_int_equal(k8s_kubeconfig_parse("kc", good, strlen(good), ".", NULL, &c, &err), 0);
	k8s_creds_free(&c);
}

static void api_status_is_read_and_scrubbed(void **state)
{
	static const char body[] = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
				   "\"pods \\\"x\\\" is forbidden:\\nRuntimeClass \\\"k\\\" not "
				   "found\",\"reason\":\"Forbidden\",\"code\":403}";
	struct k8s_status st;
	k8s_status_from_body(403, body, strlen(body), &st);
	assert_string_equal(st.reason, "Forbidden");
	assert_string_equal(st.message, "pods \"x\" is forbidden: RuntimeClass \"k\" not found");
	k8s_status_from_body(502, "<html>bad gateway</html>", 24, &st);
	assert_string_equal(st.reason, "");
	assert_string_equal(st.message, "<html>bad gateway</html>");
	k8s_status_from_body(500, NULL, 0, &st);
	assert_string_equal(st.message, "(empty answer)");
}

static void watch_lines_are_checked(void **state)
{
	json_t *root, *obj;
	const char *type;
	os_error err = { 0 };
	static const char ok[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}";
	assert_int_equal(k8s_watch_parse_line(ok, strlen(ok), &root, &type, &obj, &err), 0);
	assert_string_equal(type, "ADDED");
	json_decref(root);
	static const char *const bad[] = { "{\"type\":\"ADDED\"}", "{\"type\":1,\"object\":{}}",
					   "[]", "{\"type\":\"A\",\"object\":{}} x" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(
			k8s_watch_parse_line(bad[i], strlen(bad[i]), &root, &type, &obj, &err), -1);
}

static const char *argv_at(const json_t *container, size_t i)
{
	return json_string_value(json_array_get(json_object_get(container, "command"), i));
}

/* The command lines are the supervisor's and launcher's real flags. */
static void commands_match_supervisor_and_launcher_flags(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "sandbox_uid = 1500\n", &err), 0);
	json_t *rec = validate(&f, request("c9", "{\"command\": [\"python3\", \"a.py\"]}"), &err);
	assert_non_null(rec);
	json_t *sup = k8s_render_supervisor_pod(&f.s, rec, NULL);
	json_t *c = json_array_get(P(sup, "spec", "containers"), 0);
	_cleanup_free_ char *line = json_dumps(json_object_get(c, "command"), JSON_COMPACT);
	assert_string_equal(line,
			    "[\"openshell-supervisor\",\"--backend\",\"split\","
			    "\"--sandbox-id\",\"c9\",\"--proxy-port\",\"3128\",\"--policy\","
			    "\"/etc/openshell/credentials/policy.yaml\",\"--user\",\"1500\","
			    "\"--group\",\"1000\",\"--split-mode\",\"pod\",\"--split-key\","
			    "\"/etc/openshell/credentials/sandbox.key\",\"--split-advertise\","
			    "\"$(OPENSHELL_POD_IP)\",\"--split-control-port\",\"7443\","
			    "\"--run-dir\",\"/var/lib/openshell/run\",\"--\","
			    "\"python3\",\"a.py\"]");
	json_t *wl = k8s_render_workload_pod(&f.s, rec, NULL, "10.96.0.7");
	json_t *agent = json_array_get(P(wl, "spec", "containers"), 0);
	assert_string_equal(argv_at(agent, 1), "--supervisor");
	assert_string_equal(argv_at(agent, 2), "10.96.0.7:7443");
	assert_string_equal(argv_at(agent, 4), "/etc/openshell/trust/sandbox.key");
	/* Both Secrets carry the same key; only the supervisor's has the policy. */
	json_t *ss = k8s_render_supervisor_secret(&f.s, rec, NULL, "ab12", NULL);
	json_t *ts = k8s_render_trust_secret(&f.s, rec, NULL, "ab12");
	assert_string_equal(json_string_value(P(ss, "stringData", "sandbox.key")), "ab12\n");
	assert_string_equal(json_string_value(P(ts, "stringData", "sandbox.key")), "ab12\n");
	assert_null(P(ts, "stringData", "policy.yaml"));
	assert_null(P(ss, "stringData", "token")); /* no session asked: no token */
	/* The supervisor reads its Secret as a non-root user: through fsGroup. */
	assert_int_equal(json_integer_value(P(sup, "spec", "securityContext", "fsGroup")),
			 K8S_SUPERVISOR_UID);
	assert_string_equal(json_string_value(P(ss, "stringData", "policy.yaml")),
			    K8S_DEFAULT_POLICY);
	json_decref(ss);
	json_decref(ts);
	json_decref(wl);
	json_decref(sup);
	json_decref(rec);
	assert_null(validate(&f, request("c9", "{\"command\": []}"), &err));
	assert_null(validate(&f, request("c9", "{\"command\": [\"\"]}"), &err));
	assert_null(validate(&f, request("c9", "{\"command\": \"sh\"}"), &err));
	unload(&f);
}

/* With a gateway_endpoint and a token from the gateway, the supervisor dials
 * back: the flags in both topologies and the token in its Secret only. */
static void gateway_session_flags_and_token(void **state)
{
	struct fx f;
	os_error err = { 0 };
	assert_int_equal(load(&f, "gateway_endpoint = \"http://gw.openshell.svc:17670\"\n", &err),
			 0);
	json_t *rec = validate(&f, request("g1", "{\"command\": [\"sleep\", \"1\"]}"), &err);
	assert_non_null(rec);
	json_t *sup = k8s_render_supervisor_pod(&f.s, rec, NULL);
	_cleanup_free_ char *before = json_dumps(
		json_object_get(json_array_get(P(sup, "spec", "containers"), 0), "command"), 0);
	assert_null(strstr(before, "--gateway")); /* configure has not asked for it */
	json_decref(sup);
	json_object_set_new(json_object_get(rec, "placement"), "gateway_session", json_true());
	assert_true(k8s_gateway_session(rec));
	sup = k8s_render_supervisor_pod(&f.s, rec, NULL);
	_cleanup_free_ char *line = json_dumps(
		json_object_get(json_array_get(P(sup, "spec", "containers"), 0), "command"), 0);
	assert_non_null(strstr(line,
			       "\"--gateway\", \"$(OPENSHELL_GATEWAY_ENDPOINT)\", "
			       "\"--token-file\", \"/etc/openshell/credentials/token\", \"--\""));
	json_t *env = json_object_get(json_array_get(P(sup, "spec", "containers"), 0), "env");
	bool endpoint = false;
	size_t i;
	json_t *v;
	json_array_foreach (env, i, v)
		endpoint |= !strcmp(json_string_value(json_object_get(v, "name")),
				    "OPENSHELL_GATEWAY_ENDPOINT") &&
			    !strcmp(json_string_value(json_object_get(v, "value")),
				    "http://gw.openshell.svc:17670");
	assert_true(endpoint);
	json_t *ss = k8s_render_supervisor_secret(&f.s, rec, NULL, "ab12", "tok123");
	json_t *ts = k8s_render_trust_secret(&f.s, rec, NULL, "ab12");
	assert_string_equal(json_string_value(P(ss, "stringData", "token")), "tok123");
	assert_null(P(ts, "stringData", "token")); /* the workload never holds it */
	json_decref(ss);
	json_decref(ts);
	json_decref(sup);
	json_decref(rec);
	unload(&f);
}

/* The mountPath of volume NAME in a container, or NULL. */
static const char *mount_of(const json_t *container, const char *name, bool *read_only)
{
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(container, "volumeMounts"), i, m)
		if (!strcmp(json_string_value(json_object_get(m, "name")), name)) {
			*read_only = json_is_true(json_object_get(m, "readOnly"));
			return json_string_value(json_object_get(m, "mountPath"));
		}
	return NULL;
}

static void command_is(const json_t *container, const char *expected)
{
	_cleanup_free_ char *line = json_dumps(json_object_get(container, "command"), JSON_COMPACT);
	assert_string_equal(line, expected);
}

/* The init containers copy from the supervisor image's bundle (docs/images.md:
 * /opt/openshell/{bin,lib,etc}) into the emptyDir mounted where it hides
 * nothing of that image, and the agent container mounts the copy where the
 * bundled supervisor's interpreter and RPATH expect it. */
static void installers_copy_the_bundle_where_agents_run_it(void **state)
{
	struct fx f;
	os_error err = { 0 };
	bool ro = false;
	assert_int_equal(load(&f, "", &err), 0);
	json_t *rec = validate(&f, request("b1", NULL), &err);
	json_t *wl = k8s_render_workload_pod(&f.s, rec, NULL, "10.96.0.9");
	json_t *init = json_array_get(P(wl, "spec", "initContainers"), 0);
	json_t *agent = json_array_get(P(wl, "spec", "containers"), 0);
	/* split: only the static launcher crosses into the workload image */
	command_is(init, "[\"cp\",\"/opt/openshell/bin/openshell-sandbox\","
			 "\"/mnt/openshell/openshell-sandbox\"]");
	assert_string_equal(mount_of(init, "openshell-bin", &ro), "/mnt/openshell");
	assert_false(ro);
	assert_string_equal(mount_of(agent, "openshell-bin", &ro), "/opt/openshell/bin");
	assert_true(ro);
	assert_string_equal(argv_at(agent, 0), "/opt/openshell/bin/openshell-sandbox");
	json_decref(wl);
	json_decref(rec);
	unload(&f);

	assert_int_equal(load(&f, "topology = \"combined\"\n", &err), 0);
	rec = validate(&f, request("b2", NULL), &err);
	json_t *pod = k8s_render_combined_pod(&f.s, rec, NULL);
	init = json_array_get(P(pod, "spec", "initContainers"), 0);
	agent = json_array_get(P(pod, "spec", "containers"), 0);
	/* combined: the dynamic supervisor needs its loader, libraries and CAs */
	command_is(init, "[\"cp\",\"-R\",\"/opt/openshell/bin\",\"/opt/openshell/lib\","
			 "\"/opt/openshell/etc\",\"/mnt/openshell/\"]");
	assert_string_equal(mount_of(init, "openshell-bin", &ro), "/mnt/openshell");
	assert_string_equal(mount_of(agent, "openshell-bin", &ro), "/opt/openshell");
	assert_true(ro);
	assert_string_equal(argv_at(agent, 0), "/opt/openshell/bin/openshell-supervisor");
	const json_t *cmd = json_object_get(agent, "command");
	size_t i, launcher = 0, ca = 0;
	json_t *a;
	json_array_foreach (cmd, i, a) {
		if (!strcmp(json_string_value(a), "--launcher"))
			launcher = i + 1;
		if (!strcmp(json_string_value(a), "--upstream-ca"))
			ca = i + 1;
	}
	assert_true(launcher && ca);
	assert_string_equal(argv_at(agent, launcher), "/opt/openshell/bin/openshell-sandbox");
	assert_string_equal(argv_at(agent, ca), "/opt/openshell/etc/ssl/ca-certificates.crt");
	json_decref(pod);
	json_decref(rec);
	unload(&f);
}

/* The gateway's CA, from the operator's Secret: mounted read-only (ca.crt
 * only) and named by --gateway-ca in both topologies, only when the
 * supervisor dials the gateway; refused for a plain http:// endpoint. */
static bool has_ca_mount(const json_t *container)
{
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(container, "volumeMounts"), i, m)
		if (!strcmp(json_string_value(json_object_get(m, "name")), "gateway-ca"))
			return !strcmp(json_string_value(json_object_get(m, "mountPath")),
				       "/etc/openshell/gateway-ca") &&
			       json_is_true(json_object_get(m, "readOnly"));
	return false;
}

static const json_t *ca_volume(const json_t *pod)
{
	size_t i;
	json_t *v;
	json_array_foreach (P(pod, "spec", "volumes"), i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), "gateway-ca"))
			return v;
	return NULL;
}

static void check_ca_pod(json_t *pod, bool want)
{
	const json_t *c = json_array_get(P(pod, "spec", "containers"), 0);
	_cleanup_free_ char *line = json_dumps(json_object_get(c, "command"), 0);
	const json_t *vol = ca_volume(pod);
	if (!want) {
		assert_null(strstr(line, "--gateway-ca"));
		assert_false(has_ca_mount(c));
		assert_null(vol);
		json_decref(pod);
		return;
	}
	assert_non_null(strstr(line,
			       "\"--token-file\", \"/etc/openshell/credentials/token\", "
			       "\"--gateway-ca\", \"/etc/openshell/gateway-ca/ca.crt\", \"--\""));
	assert_true(has_ca_mount(c));
	assert_non_null(vol);
	assert_string_equal(json_string_value(P(vol, "secret", "secretName")), "gw-ca");
	assert_int_equal(json_array_size(P(vol, "secret", "items")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(P(vol, "secret", "items"), 0), "key")),
			    "ca.crt");
	json_decref(pod);
}

static void gateway_ca_secret_is_mounted_and_named(void **state)
{
	struct fx f;
	os_error err = { 0 };
	for (int topo = 0; topo < 2; topo++) {
		char extra[256];
		snprintf(
			extra, sizeof extra,
			"topology = \"%s\"\ngateway_endpoint = \"https://gw.openshell.svc:17670\"\n"
			"gateway_ca_secret = \"gw-ca\"\n",
			topo ? "combined" : "dedicated-supervisor");
		assert_int_equal(load(&f, extra, &err), 0);
		json_t *rec =
			validate(&f, request("ca1", "{\"command\": [\"sleep\", \"1\"]}"), &err);
		assert_non_null(rec);
		json_t *(*render)(const struct k8s_settings *, const json_t *, const json_t *) =
			topo ? k8s_render_combined_pod : k8s_render_supervisor_pod;
		check_ca_pod(render(&f.s, rec, NULL), false); /* no session: no CA either */
		json_object_set_new(json_object_get(rec, "placement"), "gateway_session",
				    json_true());
		check_ca_pod(render(&f.s, rec, NULL), true);
		json_decref(rec);
		unload(&f);
	}
	/* Without the key: the session flags alone (the positive control above). */
	assert_int_equal(load(&f, "gateway_endpoint = \"https://gw.openshell.svc:17670\"\n", &err),
			 0);
	json_t *rec = validate(&f, request("ca2", "{\"command\": [\"sleep\", \"1\"]}"), &err);
	json_object_set_new(json_object_get(rec, "placement"), "gateway_session", json_true());
	check_ca_pod(k8s_render_supervisor_pod(&f.s, rec, NULL), false);
	json_decref(rec);
	unload(&f);
	const char *bad[] = {
		("gateway_endpoint = \"http://gw.openshell.svc:17670\"\ngateway_ca_secret = "
		 "\"gw-ca\"\n"),
		"gateway_ca_secret = \"gw-ca\"\n",
		"gateway_endpoint = \"https://gw:1\"\ngateway_ca_secret = \"GW_CA\"\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(load(&f, bad[i], &err), -1);
		assert_non_null(strstr(err.msg, "gateway_ca_secret"));
		unload(&f);
	}
}

/* With no policy the supervisor starts with one that lets nothing out. */
static void default_policy_is_valid_and_allows_nothing(void **state)
{
	struct policy_doc *doc = NULL;
	os_error err = { 0 };
	assert_int_equal(policy_parse("default", K8S_DEFAULT_POLICY, strlen(K8S_DEFAULT_POLICY),
				      &doc, NULL, &err),
			 0);
	assert_int_equal(doc->n_networks, 0);
	policy_doc_free(doc);
	char key[K8S_KEY_HEX_LEN + 1], other[K8S_KEY_HEX_LEN + 1];
	assert_int_equal(k8s_sandbox_key_new(key, &err), 0);
	assert_int_equal(k8s_sandbox_key_new(other, &err), 0);
	assert_int_equal(strlen(key), 64);
	assert_int_equal(strspn(key, "0123456789abcdef"), 64);
	assert_string_not_equal(key, other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(supervisor_pod_gets_configured_class_workload_its_own),
		cmocka_unit_test(supervisor_class_unset_means_no_field_even_with_kata_workload),
		cmocka_unit_test(caller_cannot_name_supervisor_placement),
		cmocka_unit_test(empty_allowlist_means_only_the_default),
		cmocka_unit_test(reserved_env_labels_and_bad_ids_rejected),
		cmocka_unit_test(binaries_policy_needs_endpoint_only_in_dedicated),
		cmocka_unit_test(workload_pod_is_restricted_gated_and_proxied),
		cmocka_unit_test(combined_pod_has_capabilities_and_installer),
		cmocka_unit_test(fence_allows_only_supervisor_and_configured_dns),
		cmocka_unit_test(settings_refuse_empty_class_and_missing_supervisor_image),
		cmocka_unit_test(kubeconfig_yaml_with_data_and_token),
		cmocka_unit_test(kubeconfig_refuses_exec_skip_tls_and_bad_base64),
		cmocka_unit_test(api_status_is_read_and_scrubbed),
		cmocka_unit_test(watch_lines_are_checked),
		cmocka_unit_test(commands_match_supervisor_and_launcher_flags),
		cmocka_unit_test(installers_copy_the_bundle_where_agents_run_it),
		cmocka_unit_test(gateway_session_flags_and_token),
		cmocka_unit_test(gateway_ca_secret_is_mounted_and_named),
		cmocka_unit_test(default_policy_is_valid_and_allows_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
