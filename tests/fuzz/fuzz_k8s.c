/* fuzz_k8s.c - libFuzzer target for what the kubernetes driver reads from
 * outside: kubeconfig documents, the apiserver's error answers and watch
 * lines, and sandbox requests. The first byte picks the parser. Oracles: no
 * crash or leak; an accepted request never carries a supervisor class other
 * than the operator's, and its rendered Pods always parse back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "json.h"
#include "k8s_client.h"
#include "k8s_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct config *cfg;
static struct k8s_settings settings;

static void setup(void)
{
	static const char doc[] = "[openshell.drivers.kubernetes]\n"
				  "topology = \"dedicated-supervisor\"\n"
				  "supervisor_image = \"sup:1\"\n"
				  "default_image = \"agent:1\"\n"
				  "default_runtime_class_name = \"kata\"\n"
				  "supervisor_runtime_class_name = \"kata-sup\"\n"
				  "allowed_runtime_class_names = [\"gvisor\"]\n";
	const struct config_section *secs[] = { &config_section_kubernetes };
	cfg = config_new(secs, 1, NULL);
	if (!cfg || config_load_toml(cfg, doc, strlen(doc), "fuzz.toml", NULL) < 0 ||
	    k8s_settings_load(cfg, &settings, NULL) < 0)
		abort();
}

static void check_request(const char *d, size_t n)
{
	json_t *req = json_parse_strict(d, n, 1 << 20, NULL), *rec = NULL;
	if (!req)
		return;
	if (k8s_spec_validate(&settings, req, &rec, NULL) == 0) {
		const char *sup = json_string_value(json_object_get(
			json_object_get(rec, "placement"), "supervisor_runtime_class"));
		if (!sup || strcmp(sup, "kata-sup") != 0)
			abort(); /* a caller moved the supervisor */
		json_t *pods[] = { k8s_render_supervisor_pod(&settings, rec, NULL),
				   k8s_render_workload_pod(&settings, rec, NULL, "10.96.0.1"),
				   k8s_render_fence(&settings, rec, NULL) };
		for (size_t i = 0; i < 3; i++) {
			char *s = pods[i] ? json_to_string(pods[i]) : NULL;
			json_t *back = s ? json_parse_strict(s, strlen(s), 1 << 22, NULL) : NULL;
			if (!back || !json_equal(back, pods[i]))
				abort();
			json_decref(back);
			free(s);
			json_decref(pods[i]);
		}
		json_decref(rec);
	}
	json_decref(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!cfg)
		setup();
	if (size < 1)
		return 0;
	const char *d = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0] % 4) {
	case 0: {
		struct k8s_creds c;
		if (k8s_kubeconfig_parse("fuzz", d, n, "/base", NULL, &c, NULL) == 0)
			k8s_creds_free(&c);
		break;
	}
	case 1: {
		struct k8s_status st;
		k8s_status_from_body(403, d, n, &st);
		if (strlen(st.message) >= sizeof st.message)
			abort();
		break;
	}
	case 2: {
		json_t *root, *obj;
		const char *type;
		if (k8s_watch_parse_line(d, n, &root, &type, &obj, NULL) == 0)
			json_decref(root);
		break;
	}
	default:
		check_request(d, n);
	}
	return 0;
}
