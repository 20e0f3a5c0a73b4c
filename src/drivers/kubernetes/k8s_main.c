/* k8s_main.c - openshell-k8s-driver: a thin harness over the kubernetes
 * driver for tests and benchmarks, until the gateway hosts it. It reads the
 * same configuration as the gateway, keeps records in --state-dir and prints
 * JSON. Exit: 0 ok, 1 error (with the API's status and message), 2 usage or
 * bad request (what the gateway will answer with 400). */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "json.h"
#include "k8s_driver.h"
#include "k8s_main.h"
#include "k8s_state.h"
#include "parse.h"

extern char **environ;

static void usage(FILE *f)
{
	fputs("usage: openshell-k8s-driver [--config gateway.toml] [--set SECTION.KEY=VALUE]...\n"
	      "         [--kubeconfig PATH] [--context NAME] [--state-dir DIR]\n"
	      "         [--ready-timeout SECONDS] [--call-timeout SECONDS] [--stats] COMMAND\n"
	      "commands:\n"
	      "  check-config\n"
	      "  create --id ID --name NAME [--runtime-class C] [--image I] [--policy FILE]\n"
	      "         [--spec-json FILE]\n"
	      "  stop ID | start ID | delete ID | get ID | reconcile\n"
	      "  watch --for SECONDS   (reconcile on every Pod change, and every 30 s)\n"
	      "  watch-raw API-PATH --for SECONDS [--resource-version RV]   (client check)\n",
	      f);
}

int k8s_fail(int code, const char *what, const os_error *err)
{
	fprintf(stderr, "openshell-k8s-driver: %s%s%s\n", what, err ? ": " : "",
		err ? err->msg : "");
	return code;
}

static int parse_seconds(const char *flag, const char *v, long *out)
{
	uint64_t n;
	os_error err = { 0 };
	if (!v || parse_u64_str(v, 0, 86400, &n, &err) < 0) {
		fprintf(stderr, "openshell-k8s-driver: %s: expected seconds 0..86400\n", flag);
		return -1;
	}
	*out = (long)n;
	return 0;
}

static const char **value_slot(struct opts *o, const char *flag)
{
	static const struct {
		const char *flag;
		size_t off;
	} map[] = {
		{ "--config", offsetof(struct opts, config) },
		{ "--kubeconfig", offsetof(struct opts, kubeconfig) },
		{ "--context", offsetof(struct opts, context) },
		{ "--state-dir", offsetof(struct opts, state_dir) },
		{ "--id", offsetof(struct opts, id) },
		{ "--name", offsetof(struct opts, name) },
		{ "--runtime-class", offsetof(struct opts, runtime_class) },
		{ "--image", offsetof(struct opts, image) },
		{ "--policy", offsetof(struct opts, policy) },
		{ "--spec-json", offsetof(struct opts, spec_json) },
		{ "--resource-version", offsetof(struct opts, resource_version) },
	};
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (strcmp(flag, map[i].flag) == 0)
			return (const char **)((char *)o + map[i].off);
	return NULL;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	o->ready_timeout_s = 120;
	o->call_timeout_s = 30;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **slot = value_slot(o, a);
		if (slot || !strcmp(a, "--set") || !strcmp(a, "--ready-timeout") ||
		    !strcmp(a, "--call-timeout") || !strcmp(a, "--for")) {
			if (!v) {
				fprintf(stderr, "openshell-k8s-driver: %s needs a value\n", a);
				return -1;
			}
			i++;
			if (slot)
				*slot = v;
			else if (!strcmp(a, "--set") && o->n_sets < ARRAY_SIZE(o->sets))
				o->sets[o->n_sets++] = v;
			else if (!strcmp(a, "--ready-timeout") &&
				 parse_seconds(a, v, &o->ready_timeout_s) < 0)
				return -1;
			else if (!strcmp(a, "--call-timeout") &&
				 parse_seconds(a, v, &o->call_timeout_s) < 0)
				return -1;
			else if (!strcmp(a, "--for") && parse_seconds(a, v, &o->watch_for_s) < 0)
				return -1;
		} else if (!strcmp(a, "--stats")) {
			o->stats = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (a[0] == '-' || o->n_args == ARRAY_SIZE(o->args)) {
			fprintf(stderr, "openshell-k8s-driver: unexpected argument '%s'\n", a);
			return -1;
		} else {
			o->args[o->n_args++] = a;
		}
	}
	if (!o->n_args) {
		fprintf(stderr, "openshell-k8s-driver: no command\n");
		return -1;
	}
	return 0;
}

static struct config *load_config(const struct opts *o, os_error *err)
{
	const struct config_section *sections[] = { &config_section_gateway,
						    &config_section_kubernetes,
						    &config_section_local };
	_cleanup_config_ struct config *cfg = config_new(sections, ARRAY_SIZE(sections), err);
	if (!cfg || (o->config && config_load_file(cfg, o->config, err) < 0) ||
	    config_load_env(cfg, environ, err) < 0)
		return NULL;
	for (size_t i = 0; i < o->n_sets; i++) {
		const char *eq = strchr(o->sets[i], '=');
		_cleanup_free_ char *key =
			eq ? str_ndup(o->sets[i], (size_t)(eq - o->sets[i])) : NULL;
		if (!key) {
			os_error_set(err, EINVAL, "--set %s: expected SECTION.KEY=VALUE",
				     o->sets[i]);
			return NULL;
		}
		if (config_set_cli(cfg, key, eq + 1, err) < 0)
			return NULL;
	}
	return steal_ptr(cfg);
}

void k8s_print_json(const json_t *j)
{
	_cleanup_free_ char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (s)
		printf("%s\n", s);
}

int k8s_connect_driver(struct env *e, os_error *err)
{
	struct k8s_creds creds;
	struct k8s_client_opts copts = { .timeout_ms = e->o->call_timeout_s * 1000 };
	struct k8s_driver_opts dopts = { .ready_timeout_ms = e->o->ready_timeout_s * 1000 };
	if (k8s_creds_discover(e->o->kubeconfig, e->o->context, &creds, err) < 0)
		return -1;
	struct k8s_client *c = k8s_client_new(&creds, &copts, err);
	if (!c)
		return -1;
	e->drv = k8s_driver_new(&e->s, c, &dopts, err);
	return e->drv ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct env e = { .o = &o };
	os_error err = { 0 };
	int rc;
	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	e.cfg = load_config(&o, &err);
	if (!e.cfg)
		return k8s_fail(EXIT_ERR, "configuration", &err);
	if (k8s_settings_load(e.cfg, &e.s, &err) < 0) {
		config_free(e.cfg);
		return k8s_fail(EXIT_ERR, "configuration", &err);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = k8s_run_command(&e);
	if (o.stats && e.drv)
		fprintf(stderr, "k8s-api-calls %lu\n", k8s_client_calls(k8s_driver_client(e.drv)));
	if (e.drv)
		e.drv->ops->free(e.drv);
	else
		k8s_settings_release(&e.s);
	config_free(e.cfg);
	curl_global_cleanup();
	return rc;
}
