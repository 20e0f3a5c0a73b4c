/* k8s_cmds.c - the commands of openshell-k8s-driver: each reads its record,
 * calls the driver through its vtable (as the gateway will), saves the record
 * and prints JSON. A request is validated before any credential is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_client.h"
#include "k8s_driver.h"
#include "k8s_main.h"
#include "k8s_state.h"
#include "parse.h"
#include "policy.h"

static int need_state_dir(const struct opts *o)
{
	if (o->state_dir)
		return 0;
	fprintf(stderr, "openshell-k8s-driver: %s needs --state-dir DIR\n", o->args[0]);
	return -1;
}

/* ---- check-config ---- */

static json_t *check_class(struct k8s_client *c, const char *name, const char *role, bool *ok)
{
	char path[512];
	struct k8s_status st;
	os_error err = { 0 };
	snprintf(path, sizeof path, "/apis/node.k8s.io/v1/runtimeclasses/%s", name);
	int r = k8s_call(c, "GET", path, NULL, NULL, NULL, &st, &err);
	if (r < 0) {
		*ok = false;
		fprintf(stderr, "openshell-k8s-driver: %s RuntimeClass '%s' %s\n", role, name,
			st.http == 404 ? "not found: its Pods would be rejected" : err.msg);
	}
	return json_pack("{s:s, s:s, s:b, s:s}", "name", name, "role", role, "available", r == 0,
			 "error", r == 0 ? "" : (st.http == 404 ? "not found" : err.msg));
}

static int cmd_check_config(struct env *e)
{
	os_error err = { 0 };
	bool ok = true;
	const struct k8s_settings *s = &e->s;
	const char *sup = s->topology == K8S_TOPOLOGY_DEDICATED ? s->supervisor_class : NULL;
	char ns_path[512];
	_cleanup_json_ json_t *classes = json_array();
	if (!classes)
		return EXIT_ERR;
	/* Copied before the settings move into the driver. */
	_cleanup_free_ char *def = s->default_class ? strdup(s->default_class) : NULL;
	_cleanup_free_ char *supc = sup ? strdup(sup) : NULL;
	char *const *allowed = s->allowed_classes;
	size_t n_allowed = s->n_allowed;
	snprintf(ns_path, sizeof ns_path, "/api/v1/namespaces/%s", s->namespace);
	if (k8s_connect_driver(e, &err) < 0)
		return k8s_fail(EXIT_ERR, "connecting", &err);
	struct k8s_client *c = k8s_driver_client(e->drv);
	if (def)
		json_array_append_new(classes, check_class(c, def, "workload-default", &ok));
	for (size_t i = 0; i < n_allowed; i++)
		json_array_append_new(classes, check_class(c, allowed[i], "workload-allowed", &ok));
	if (supc)
		json_array_append_new(classes, check_class(c, supc, "supervisor", &ok));
	int ns_ok = k8s_call(c, "GET", ns_path, NULL, NULL, NULL, NULL, &err);
	if (ns_ok < 0) {
		ok = false;
		fprintf(stderr, "openshell-k8s-driver: namespace: %s\n", err.msg);
	}
	_cleanup_json_ json_t *out =
		json_pack("{s:b, s:s, s:b, s:O}", "ok", ok, "server", k8s_client_creds(c)->server,
			  "namespace_exists", ns_ok == 0, "runtime_classes", classes);
	k8s_print_json(out);
	return ok ? 0 : EXIT_ERR;
}

/* ---- create ---- */

static int read_json_file(const char *path, json_t **out, os_error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char buf[65537];
	if (!f)
		return os_error_errno(err, "%s", path);
	size_t n = fread(buf, 1, sizeof buf, f);
	*out = json_parse_strict(buf, n, sizeof buf - 1, err);
	return *out ? 0 : os_error_prefix(err, "%s", path);
}

/* The policy as the gateway will pass it: validated, summarised, verbatim. */
static int policy_summary(const char *path, json_t **out, os_error *err)
{
	struct policy_doc *doc = NULL;
	bool restricts = false;
	char *text = malloc(K8S_POLICY_MAX + 1);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!text || !f) {
		free(text);
		return os_error_errno(err, "policy %s", path);
	}
	size_t n = fread(text, 1, K8S_POLICY_MAX + 1, f);
	if (n > K8S_POLICY_MAX || policy_parse(path, text, n, &doc, NULL, err) < 0) {
		free(text);
		if (n > K8S_POLICY_MAX)
			return os_error_set(err, EFBIG, "policy %s: larger than %u bytes", path,
					    K8S_POLICY_MAX);
		return os_error_prefix(err, "policy");
	}
	text[n] = '\0';
	for (size_t i = 0; i < doc->n_networks; i++)
		restricts = restricts || doc->networks[i].n_binaries > 0;
	policy_doc_free(doc);
	*out = json_pack("{s:b, s:s}", "restricts_binaries", restricts, "yaml", text);
	free(text);
	return *out ? 0 : os_error_set(err, ENOMEM, "policy: out of memory");
}

static int build_request(const struct opts *o, json_t **req, os_error *err)
{
	_cleanup_json_ json_t *spec = NULL, *policy = NULL;
	if (!o->id || !o->name)
		return os_error_set(err, EINVAL, "create needs --id and --name");
	if (o->spec_json && read_json_file(o->spec_json, &spec, err) < 0)
		return -1;
	if (!spec)
		spec = json_object();
	if (!json_is_object(spec))
		return os_error_set(err, EINVAL, "--spec-json: expected a JSON object");
	if (o->image)
		json_object_set_new(spec, "image", json_string(o->image));
	if (o->runtime_class)
		json_object_set_new(spec, "runtime_class_name", json_string(o->runtime_class));
	if (o->policy && policy_summary(o->policy, &policy, err) < 0)
		return -1;
	*req = json_pack("{s:s, s:s, s:O}", "id", o->id, "name", o->name, "spec", spec);
	if (*req && policy)
		json_object_set(*req, "policy", policy);
	return *req ? 0 : os_error_set(err, ENOMEM, "request: out of memory");
}

static int cmd_create(struct env *e)
{
	os_error err = { 0 };
	_cleanup_json_ json_t *req = NULL, *record = NULL, *existing = NULL;
	if (need_state_dir(e->o) < 0)
		return EXIT_USAGE;
	if (build_request(e->o, &req, &err) < 0)
		return k8s_fail(EXIT_USAGE, "bad request", &err);
	/* Validated before any credential is read or any call made. */
	if (k8s_spec_validate(&e->s, req, &record, &err) < 0)
		return k8s_fail(err.code == EINVAL || err.code == ERANGE ? EXIT_USAGE : EXIT_ERR,
				"bad request", &err);
	if (k8s_state_read(e->o->state_dir, e->o->id, &existing, &err) == 0) {
		os_error_set(&err, EEXIST, "sandbox '%s' already exists", e->o->id);
		return k8s_fail(EXIT_ERR, "create", &err);
	}
	if (k8s_state_write(e->o->state_dir, record, &err) < 0)
		return k8s_fail(EXIT_ERR, "create", &err);
	if (k8s_connect_driver(e, &err) < 0) {
		json_object_set_new(record, "phase", json_string("Failed"));
		json_object_set_new(record, "message", json_string(err.msg));
		k8s_state_write(e->o->state_dir, record, NULL);
		return k8s_fail(EXIT_ERR, "connecting", &err);
	}
	int r = e->drv->ops->create(e->drv, record, &err);
	os_error werr = { 0 };
	if (k8s_state_write(e->o->state_dir, record, &werr) < 0)
		k8s_fail(EXIT_ERR, "saving the record", &werr);
	k8s_print_json(record);
	return r < 0 ? k8s_fail(EXIT_ERR, "create", &err) : 0;
}

/* ---- commands on an existing sandbox ---- */

static int load_record(struct env *e, const char *id, json_t **record, os_error *err)
{
	if (k8s_state_read(e->o->state_dir, id, record, err) < 0)
		return -1;
	const char *ns = json_string_value(
		json_object_get(json_object_get(*record, "placement"), "namespace"));
	if (!ns || strcmp(ns, e->s.namespace) != 0)
		return os_error_set(err, EINVAL,
				    "sandbox '%s' lives in namespace '%s' but the driver is "
				    "configured for '%s'",
				    id, ns ? ns : "?", e->s.namespace);
	return 0;
}

static int cmd_on_record(struct env *e, const char *cmd, const char *id)
{
	os_error err = { 0 };
	_cleanup_json_ json_t *record = NULL, *status = NULL;
	int r;
	bool del = !strcmp(cmd, "delete");
	if (load_record(e, id, &record, &err) < 0) {
		if (!(del && err.code == ENOENT))
			return k8s_fail(EXIT_ERR, cmd, &err);
		/* No record: still remove whatever carries this id (idempotent). */
		record = json_pack("{s:s, s:{s:s}}", "id", id, "placement", "namespace",
				   e->s.namespace);
	}
	if (k8s_connect_driver(e, &err) < 0)
		return k8s_fail(EXIT_ERR, "connecting", &err);
	const struct driver_ops *ops = e->drv->ops;
	if (!strcmp(cmd, "get")) {
		if (ops->status(e->drv, record, &status, &err) < 0)
			return k8s_fail(EXIT_ERR, cmd, &err);
		k8s_print_json(status);
		return 0;
	}
	r = !strcmp(cmd, "stop")    ? ops->stop(e->drv, record, &err)
	    : !strcmp(cmd, "start") ? ops->start(e->drv, record, &err)
				    : ops->delete (e->drv, record, &err);
	os_error werr = { 0 };
	if (del && r == 0 ? k8s_state_remove(e->o->state_dir, id, &werr) < 0
			  : (json_object_get(record, "name") &&
			     k8s_state_write(e->o->state_dir, record, &werr) < 0))
		k8s_fail(EXIT_ERR, "saving the record", &werr);
	k8s_print_json(record);
	return r < 0 ? k8s_fail(EXIT_ERR, cmd, &err) : 0;
}

static long now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* One reconcile over every record; prints the report (one JSON line when
 * compact, and only when something was done). */
static int reconcile_pass(struct env *e, bool compact, os_error *err)
{
	_cleanup_json_ json_t *records = NULL, *report = NULL;
	if (k8s_state_list(e->o->state_dir, &records, err) < 0)
		return -1;
	size_t n = json_array_size(records);
	json_t *recs[n ? n : 1];
	for (size_t i = 0; i < n; i++)
		recs[i] = json_array_get(records, i);
	int r = e->drv->ops->reconcile(e->drv, recs, n, &report, err);
	for (size_t i = 0; i < n; i++)
		if (k8s_state_write(e->o->state_dir, recs[i], err) < 0)
			return -1;
	if (r == 0 && !compact)
		k8s_print_json(report);
	if (r == 0 && compact && json_array_size(report)) {
		_cleanup_free_ char *line = json_dumps(report, JSON_COMPACT);
		if (line) {
			printf("%s\n", line);
			fflush(stdout);
		}
	}
	return r;
}

static int cmd_reconcile(struct env *e)
{
	os_error err = { 0 };
	if (k8s_connect_driver(e, &err) < 0)
		return k8s_fail(EXIT_ERR, "connecting", &err);
	return reconcile_pass(e, false, &err) < 0 ? k8s_fail(EXIT_ERR, "reconcile", &err) : 0;
}

/* Reconcile once per change of any sandbox Pod, and at least every 30 s:
 * what the gateway's driver loop will do. */

static int cmd_watch(struct env *e)
{
	os_error err = { 0 };
	if (!e->o->watch_for_s) {
		fprintf(stderr, "openshell-k8s-driver: watch needs --for SECONDS\n");
		return EXIT_USAGE;
	}
	if (k8s_connect_driver(e, &err) < 0)
		return k8s_fail(EXIT_ERR, "connecting", &err);
	long deadline = now_s() + e->o->watch_for_s;
	for (long left; (left = deadline - now_s()) > 0;) {
		if (reconcile_pass(e, true, &err) < 0 ||
		    k8s_driver_wait_change(e->drv, left < 30 ? left : 30, &err) < 0)
			return k8s_fail(EXIT_ERR, "watch", &err);
	}
	return 0;
}

static int print_event(void *ctx, const char *type, const json_t *obj, os_error *err)
{
	const char *name =
		json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	printf("%s %s\n", type, name ? name : "?");
	fflush(stdout);
	return 0;
}

/* The client's watch on any collection: events, then how it ended
 * ("END rv", or "GONE" when the resourceVersion had expired). */
static int cmd_watch_raw(struct env *e, const char *path)
{
	os_error err = { 0 };
	char rv[128] = "";
	if (!e->o->watch_for_s) {
		fprintf(stderr, "openshell-k8s-driver: watch-raw needs --for SECONDS\n");
		return EXIT_USAGE;
	}
	if (e->o->resource_version && str_copy(rv, sizeof rv, e->o->resource_version, &err) < 0)
		return k8s_fail(EXIT_USAGE, "--resource-version", &err);
	if (k8s_connect_driver(e, &err) < 0)
		return k8s_fail(EXIT_ERR, "connecting", &err);
	int r = k8s_watch(k8s_driver_client(e->drv), path, rv, sizeof rv, e->o->watch_for_s,
			  print_event, NULL, &err);
	if (r < 0)
		return k8s_fail(EXIT_ERR, "watch", &err);
	printf(r == K8S_WATCH_GONE ? "GONE\n" : "END %s\n", rv);
	return 0;
}

int k8s_run_command(struct env *e)
{
	const struct opts *o = e->o;
	const char *cmd = o->args[0];
	if (!strcmp(cmd, "check-config") && o->n_args == 1)
		return cmd_check_config(e);
	if (!strcmp(cmd, "create") && o->n_args == 1)
		return cmd_create(e);
	if (!strcmp(cmd, "watch-raw") && o->n_args == 2)
		return cmd_watch_raw(e, o->args[1]);
	if (!strcmp(cmd, "watch") && o->n_args == 1)
		return need_state_dir(o) < 0 ? EXIT_USAGE : cmd_watch(e);
	if (!strcmp(cmd, "reconcile") && o->n_args == 1)
		return need_state_dir(o) < 0 ? EXIT_USAGE : cmd_reconcile(e);
	if ((!strcmp(cmd, "stop") || !strcmp(cmd, "start") || !strcmp(cmd, "delete") ||
	     !strcmp(cmd, "get")) &&
	    o->n_args == 2)
		return need_state_dir(o) < 0 ? EXIT_USAGE : cmd_on_record(e, cmd, o->args[1]);
	fprintf(stderr, "openshell-k8s-driver: unknown command or wrong arguments: %s\n", cmd);
	return EXIT_USAGE;
}
