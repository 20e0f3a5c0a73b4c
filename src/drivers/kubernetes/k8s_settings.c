/* k8s_settings.c - reads [openshell.drivers.kubernetes] (already type-checked
 * by the config loader) into k8s_settings and checks what only makes sense
 * together. It never invents a default the operator did not configure. */
#include <errno.h>
#include <string.h>

#include "k8s_render.h"

#define SECTION "drivers.kubernetes"

const char *k8s_topology_name(enum k8s_topology t)
{
	return t == K8S_TOPOLOGY_COMBINED ? "combined" : "dedicated-supervisor";
}

/* A configured class name is a DNS subdomain; "" would mean "unset" to some
 * readers and "invalid" to others, so it is refused. */
static int check_class(const char *key, const char *v, os_error *err)
{
	if (!v)
		return 0;
	size_t n = strlen(v);
	if (n == 0 || n > 253)
		return os_error_set(err, EINVAL,
				    SECTION ".%s: a RuntimeClass name of 1-253 characters, "
					    "got '%s' (remove the key to leave it unset)",
				    key, v);
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		      ch == '.'))
			return os_error_set(err, EINVAL,
					    SECTION ".%s: '%s' is not a valid RuntimeClass name "
						    "(lower-case letters, digits, '-' and '.')",
					    key, v);
	}
	return 0;
}

static json_t *toml_strmap_to_json(const struct toml_value *t)
{
	json_t *o = json_object();
	if (!o || !t)
		return o;
	for (size_t i = 0; i < t->u.table.len; i++) {
		const struct toml_entry *e = &t->u.table.entries[i];
		if (e->value->type == TOML_STRING)
			json_object_set_new(o, e->key, json_string(e->value->u.str.s));
	}
	return o;
}

static int load_dns_peers(const struct config *cfg, struct k8s_settings *s, os_error *err)
{
	const struct config_value *v = config_get(cfg, SECTION, "dns_peers");
	s->dns_peers = json_array();
	if (!s->dns_peers)
		return os_error_set(err, ENOMEM, "dns_peers: out of memory");
	if (!v || !v->toml || v->toml->type != TOML_ARRAY)
		return 0;
	for (size_t i = 0; i < v->toml->u.array.len; i++) {
		const struct toml_value *t = v->toml->u.array.items[i];
		const struct toml_value *port = toml_table_get(t, "port");
		json_t *peer = json_pack(
			"{s:o, s:o, s:I}", "namespace_selector",
			toml_strmap_to_json(toml_table_get(t, "namespace_selector")),
			"pod_selector", toml_strmap_to_json(toml_table_get(t, "pod_selector")),
			"port", (json_int_t)(port ? port->u.integer : 53));
		if (!peer || json_array_append_new(s->dns_peers, peer) < 0)
			return os_error_set(err, ENOMEM, "dns_peers: out of memory");
	}
	return 0;
}

static void read_strings(const struct config *cfg, struct k8s_settings *s)
{
	const struct config_value *v;
	s->namespace = config_get_string(cfg, SECTION, "namespace");
	s->topology = strcmp(config_get_string(cfg, SECTION, "topology"), "combined") == 0
			      ? K8S_TOPOLOGY_COMBINED
			      : K8S_TOPOLOGY_DEDICATED;
	s->default_image = config_get_string(cfg, SECTION, "default_image");
	s->supervisor_image = config_get_string(cfg, SECTION, "supervisor_image");
	s->pull_policy = config_get_string(cfg, SECTION, "image_pull_policy");
	s->default_class = config_get_string(cfg, SECTION, "default_runtime_class_name");
	s->supervisor_class = config_get_string(cfg, SECTION, "supervisor_runtime_class_name");
	s->service_account = config_get_string(cfg, SECTION, "service_account_name");
	s->gateway_endpoint = config_get_string(cfg, SECTION, "gateway_endpoint");
	s->gateway_ca_secret = config_get_string(cfg, SECTION, "gateway_ca_secret");
	s->endpoint_only = strcmp(config_get_string(cfg, SECTION, "split_binary_identity"),
				  "endpoint-only") == 0;
	s->storage_size = config_get_string(cfg, SECTION, "workspace_storage_size");
	s->storage_class = config_get_string(cfg, SECTION, "workspace_storage_class");
	s->uid = config_get_int(cfg, SECTION, "sandbox_uid");
	s->gid = config_get_int(cfg, SECTION, "sandbox_gid");
	v = config_get(cfg, SECTION, "image_pull_secrets");
	s->pull_secrets = v ? v->strv : NULL;
	s->n_pull_secrets = v ? v->n_strv : 0;
	v = config_get(cfg, SECTION, "allowed_runtime_class_names");
	s->allowed_classes = v ? v->strv : NULL;
	s->n_allowed = v ? v->n_strv : 0;
}

/* The CA only means something for a gateway the supervisors reach over
 * TLS; anywhere else it would be a silent no-op or a supervisor that
 * refuses to start, so the gateway refuses the configuration instead. */
static int check_gateway_ca(const struct k8s_settings *s, os_error *err)
{
	const char *v = s->gateway_ca_secret;
	if (!v)
		return 0;
	size_t n = strlen(v);
	if (n == 0 || n > 253 || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789-.") != n)
		return os_error_set(err, EINVAL,
				    SECTION ".gateway_ca_secret: '%s' is not a Secret name "
					    "(1-253 lower-case letters, digits, '-' and '.')",
				    v);
	if (!s->gateway_endpoint || strncmp(s->gateway_endpoint, "https://", 8) != 0)
		return os_error_set(err, EINVAL,
				    SECTION ".gateway_ca_secret is set but gateway_endpoint is "
					    "%s%s%s: the CA verifies an https:// endpoint",
				    s->gateway_endpoint ? "'" : "unset",
				    s->gateway_endpoint ? s->gateway_endpoint : "",
				    s->gateway_endpoint ? "'" : "");
	return 0;
}

int k8s_settings_load(const struct config *cfg, struct k8s_settings *s, os_error *err)
{
	memset(s, 0, sizeof *s);
	read_strings(cfg, s);
	if (!s->namespace || !*s->namespace)
		return os_error_set(err, EINVAL, SECTION ".namespace must not be empty");
	if (!s->supervisor_image || !*s->supervisor_image)
		return os_error_set(err, EINVAL,
				    SECTION ".supervisor_image is required: it runs the "
					    "supervisor and provides the binaries copied into "
					    "workload Pods");
	if (check_class("default_runtime_class_name", s->default_class, err) < 0 ||
	    check_class("supervisor_runtime_class_name", s->supervisor_class, err) < 0 ||
	    check_gateway_ca(s, err) < 0)
		return -1;
	for (size_t i = 0; i < s->n_allowed; i++)
		if (check_class("allowed_runtime_class_names", s->allowed_classes[i], err) < 0)
			return -1;
	if (s->storage_class && !s->storage_size)
		return os_error_set(err, EINVAL,
				    SECTION
				    ".workspace_storage_class needs workspace_storage_size");
	return load_dns_peers(cfg, s, err);
}

void k8s_settings_release(struct k8s_settings *s)
{
	json_decref(s->dns_peers);
	s->dns_peers = NULL;
}
