/* k8s_spec.c - turns a caller's request into a sandbox record: every field
 * checked, placement resolved once from the operator's settings. A caller can
 * choose the workload class only within the allowlist and can never name,
 * influence or pass through anything about the supervisor. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_render.h"
#include "parse.h"

static bool is_alnum_lower(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_alnum(char ch)
{
	return is_alnum_lower(ch) || (ch >= 'A' && ch <= 'Z');
}

/* Kubernetes label value: empty, or alnum at both ends with [-_.] inside. */
static bool label_value_ok(const char *v, size_t max)
{
	size_t n = strlen(v);
	if (n == 0)
		return true;
	if (n > max || !is_alnum(v[0]) || !is_alnum(v[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(v[i]) && v[i] != '-' && v[i] != '_' && v[i] != '.')
			return false;
	return true;
}

/* Label key: [prefix/]name, prefix a lower-case DNS subdomain. */
static bool label_key_ok(const char *k)
{
	const char *slash = strchr(k, '/');
	const char *name = slash ? slash + 1 : k;
	if (slash) {
		size_t plen = (size_t)(slash - k);
		if (plen == 0 || plen > 253)
			return false;
		for (size_t i = 0; i < plen; i++)
			if (!is_alnum_lower(k[i]) && k[i] != '-' && k[i] != '.')
				return false;
	}
	return *name && label_value_ok(name, 63);
}

static int check_id(const char *id, os_error *err)
{
	size_t n = strlen(id);
	bool ok = n > 0 && n <= K8S_ID_MAX && is_alnum_lower(id[0]) && is_alnum_lower(id[n - 1]);
	for (size_t i = 0; ok && i < n; i++)
		ok = is_alnum_lower(id[i]) || id[i] == '-';
	if (!ok)
		return os_error_set(err, EINVAL,
				    "id: '%s' must be 1-%d lower-case letters, digits or '-', "
				    "starting and ending with a letter or digit",
				    id, K8S_ID_MAX);
	return 0;
}

static int check_env(const json_t *env, os_error *err)
{
	static const char *const reserved[] = { "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
						"ALL_PROXY" };
	const char *k;
	json_t *v;
	if (!json_is_object(env))
		return os_error_set(err, EINVAL, "spec.env: expected an object of strings");
	json_object_foreach ((json_t *)env, k, v) {
		bool ok = *k && !(k[0] >= '0' && k[0] <= '9') && strlen(k) <= 256;
		for (const char *p = k; ok && *p; p++)
			ok = is_alnum(*p) || *p == '_';
		if (!ok || !json_is_string(v))
			return os_error_set(err, EINVAL,
					    "spec.env.%s: expected NAME ([A-Za-z_][A-Za-z0-9_]*) "
					    "with a string value",
					    k);
		for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
			if (str_ieq(k, strlen(k), reserved[i], strlen(reserved[i])))
				return os_error_set(err, EINVAL,
						    "spec.env.%s: the proxy settings are the "
						    "driver's, a request cannot set them",
						    k);
		if (str_has_prefix(k, "OPENSHELL_"))
			return os_error_set(err, EINVAL,
					    "spec.env.%s: OPENSHELL_* variables are reserved", k);
	}
	return 0;
}

static int check_labels(const json_t *labels, os_error *err)
{
	const char *k;
	json_t *v;
	if (!json_is_object(labels))
		return os_error_set(err, EINVAL, "spec.labels: expected an object of strings");
	json_object_foreach ((json_t *)labels, k, v) {
		if (!label_key_ok(k) || !json_is_string(v) ||
		    !label_value_ok(json_string_value(v), 63))
			return os_error_set(err, EINVAL,
					    "spec.labels.%s: not a valid Kubernetes label", k);
		if (str_has_prefix(k, "openshell.ai/") || strcmp(k, K8S_L_MANAGED) == 0)
			return os_error_set(err, EINVAL,
					    "spec.labels.%s: this label is the driver's", k);
	}
	return 0;
}

/* A Kubernetes quantity, loosely: digits with an optional fraction and suffix. */
static bool quantity_ok(const char *q)
{
	size_t i = 0, digits = 0;
	while (q[i] >= '0' && q[i] <= '9')
		i++, digits++;
	if (q[i] == '.')
		for (i++; q[i] >= '0' && q[i] <= '9'; i++)
			digits++;
	if (!digits)
		return false;
	static const char *const suffixes[] = { "",  "m",  "k",	 "M",  "G",  "T",  "P",
						"E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	for (size_t s = 0; s < ARRAY_SIZE(suffixes); s++)
		if (strcmp(q + i, suffixes[s]) == 0)
			return true;
	return false;
}

static int check_resources(const json_t *res, os_error *err)
{
	static const char *const keys[] = { "cpu", "memory", NULL };
	const char *k;
	json_t *v;
	if (!json_is_object(res))
		return os_error_set(err, EINVAL, "spec.resources: expected an object");
	if (json_check_keys(res, keys, "spec.resources", err) < 0)
		return -1;
	json_object_foreach ((json_t *)res, k, v) {
		if (!json_is_string(v) || !quantity_ok(json_string_value(v)))
			return os_error_set(err, EINVAL,
					    "spec.resources.%s: expected a quantity such as "
					    "\"500m\" or \"1Gi\"",
					    k);
	}
	return 0;
}

/* The agent's argv: what the supervisor starts once the boundary holds. */
static int check_command(const json_t *cmd, os_error *err)
{
	size_t i;
	json_t *a;
	if (!json_is_array(cmd) || json_array_size(cmd) == 0 || json_array_size(cmd) > 256)
		return os_error_set(err, EINVAL, "spec.command: expected 1-256 strings");
	json_array_foreach (cmd, i, a) {
		const char *v = json_string_value(a);
		if (!v || strlen(v) > 4096 || (i == 0 && !*v))
			return os_error_set(err, EINVAL,
					    "spec.command[%zu]: expected a string of at most 4096 "
					    "bytes (the first one not empty)",
					    i);
	}
	return 0;
}

static bool class_allowed(const struct k8s_settings *s, const char *c)
{
	if (s->default_class && strcmp(c, s->default_class) == 0)
		return true;
	for (size_t i = 0; i < s->n_allowed; i++)
		if (strcmp(c, s->allowed_classes[i]) == 0)
			return true;
	return false;
}

static int resolve_class(const struct k8s_settings *s, const json_t *spec, const char **out,
			 os_error *err)
{
	const char *want = NULL;
	if (json_get_string(spec, "runtime_class_name", false, &want, err) < 0)
		return os_error_prefix(err, "spec");
	*out = s->default_class;
	if (!want)
		return 0;
	if (!class_allowed(s, want)) {
		char list[512] = "";
		size_t n = 0;
		for (size_t i = 0; i < s->n_allowed && n < sizeof list; i++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
					      s->allowed_classes[i]);
		return os_error_set(err, EINVAL,
				    "spec.runtime_class_name: '%s' is not allowed (the operator "
				    "allows: %s%s%s)",
				    want, s->default_class ? s->default_class : "",
				    s->default_class && *list ? ", " : "",
				    *list ? list : (s->default_class ? "" : "no class"));
	}
	*out = want;
	return 0;
}

static int check_spec_keys(const json_t *spec, os_error *err)
{
	static const char *const allowed[] = {
		"image", "runtime_class_name", "command", "env", "labels", "resources", NULL,
	};
	const char *k;
	json_t *v;
	if (!json_is_object(spec))
		return os_error_set(err, EINVAL, "spec: expected an object");
	json_object_foreach ((json_t *)spec, k, v) {
		if (strstr(k, "supervisor"))
			return os_error_set(err, EINVAL,
					    "spec.%s: the supervisor's placement is the operator's "
					    "(drivers.kubernetes.supervisor_runtime_class_name); a "
					    "request cannot set it",
					    k);
	}
	return json_check_keys(spec, allowed, "spec", err);
}

static int check_spec(const struct k8s_settings *s, const json_t *spec, os_error *err)
{
	const char *image = NULL;
	const json_t *v;
	if (check_spec_keys(spec, err) < 0 ||
	    json_get_string(spec, "image", false, &image, err) < 0)
		return -1;
	if (image && (!*image || strlen(image) > 512 || strpbrk(image, " \t\r\n")))
		return os_error_set(err, EINVAL, "spec.image: '%s' is not an image reference",
				    image);
	if (!image && !s->default_image)
		return os_error_set(err, EINVAL,
				    "spec.image: required (drivers.kubernetes.default_image is "
				    "unset)");
	if ((v = json_object_get(spec, "command")) && check_command(v, err) < 0)
		return -1;
	if ((v = json_object_get(spec, "env")) && check_env(v, err) < 0)
		return -1;
	if ((v = json_object_get(spec, "labels")) && check_labels(v, err) < 0)
		return -1;
	if ((v = json_object_get(spec, "resources")) && check_resources(v, err) < 0)
		return -1;
	return 0;
}

static int check_policy(const struct k8s_settings *s, const json_t *policy, os_error *err)
{
	static const char *const keys[] = { "restricts_binaries", "yaml", NULL };
	bool restricts = false;
	const char *yaml = NULL;
	if (!policy)
		return 0;
	if (!json_is_object(policy) || json_check_keys(policy, keys, "policy", err) < 0 ||
	    json_get_bool(policy, "restricts_binaries", false, &restricts, err) < 0 ||
	    json_get_string(policy, "yaml", false, &yaml, err) < 0)
		return os_error_set(err, EINVAL,
				    "policy: expected {\"restricts_binaries\": bool, \"yaml\": "
				    "string}");
	if (yaml && strlen(yaml) > K8S_POLICY_MAX)
		return os_error_set(err, EINVAL, "policy.yaml: larger than %u bytes",
				    K8S_POLICY_MAX);
	if (restricts && s->topology == K8S_TOPOLOGY_DEDICATED && !s->endpoint_only)
		return os_error_set(err, EINVAL,
				    "policy restricts 'binaries', which the dedicated-supervisor "
				    "topology cannot enforce across Pods; remove the binaries "
				    "lists, or have the operator set "
				    "drivers.kubernetes.split_binary_identity = \"endpoint-only\"");
	return 0;
}

static json_t *placement(const struct k8s_settings *s, const json_t *spec, const char *wclass)
{
	const char *image = json_string_value(json_object_get(spec, "image"));
	bool dedicated = s->topology == K8S_TOPOLOGY_DEDICATED;
	return json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:b}", "namespace", s->namespace,
			 "topology", k8s_topology_name(s->topology), "workload_image",
			 image ? image : s->default_image, "supervisor_image", s->supervisor_image,
			 "workload_runtime_class", wclass, "supervisor_runtime_class",
			 dedicated ? s->supervisor_class : NULL, "endpoint_only_identity",
			 dedicated && s->endpoint_only);
}

int k8s_spec_validate(const struct k8s_settings *s, const json_t *request, json_t **record,
		      os_error *err)
{
	static const char *const keys[] = { "id", "name", "spec", "policy", NULL };
	const char *id, *name, *wclass;
	json_t *spec;
	if (!json_is_object(request))
		return os_error_set(err, EINVAL, "request: expected an object");
	if (json_check_keys(request, keys, "request", err) < 0 ||
	    json_get_string(request, "id", true, &id, err) < 0 ||
	    json_get_string(request, "name", true, &name, err) < 0)
		return -1;
	if (check_id(id, err) < 0)
		return -1;
	if (!*name || !label_value_ok(name, 63))
		return os_error_set(err, EINVAL,
				    "name: '%s' must be 1-63 letters, digits, '-', '_' or '.', "
				    "starting and ending with a letter or digit",
				    name);
	spec = json_object_get(request, "spec");
	_cleanup_json_ json_t *empty = spec ? NULL : json_object();
	if (!spec)
		spec = empty;
	if (check_spec(s, spec, err) < 0 || resolve_class(s, spec, &wclass, err) < 0 ||
	    check_policy(s, json_object_get(request, "policy"), err) < 0)
		return -1;
	*record = json_pack("{s:s, s:s, s:s, s:O, s:o, s:s, s:s, s:[]}", "id", id, "name", name,
			    "driver", "kubernetes", "spec", spec, "placement",
			    placement(s, spec, wclass), "phase", "Provisioning", "message", "",
			    "conditions");
	if (!*record)
		return os_error_set(err, ENOMEM, "record: out of memory");
	json_t *policy = json_object_get(request, "policy");
	if (policy)
		json_object_set(*record, "policy", policy);
	return 0;
}
