/* cmd_policy.c - `openshell policy set|get|list|validate`. set --wait exits
 * 0 when the sandbox's supervisor loaded the revision, 1 when it failed (or
 * the gateway refused it), 124 when --timeout passed first. validate works
 * offline: no gateway involved. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "cli.h"
#include "json.h"
#include "parse.h"
#include "policy.h"

/* Prints the load's warnings (stderr) and errors; --strict makes a warning
 * fail the file, so CI can hold policies to this sandbox's stricter rules. */
static int validate_one(const char *path, bool strict)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	if (policy_load_file(path, &doc, &diag, &err) == 0) {
		for (size_t i = 0; i < doc->n_warnings; i++)
			fprintf(stderr, "%s\n", doc->warnings[i]);
		if (doc->n_warnings_dropped)
			fprintf(stderr, "%s: %zu more warnings not shown\n", path,
				doc->n_warnings_dropped);
		size_t n = doc->n_warnings + doc->n_warnings_dropped;
		policy_doc_free(doc);
		if (strict && n) {
			fprintf(stderr, "%s: %zu warning%s (--strict: refused)\n", path, n,
				n == 1 ? "" : "s");
			return 1;
		}
		if (n)
			printf("%s: ok (%zu warning%s)\n", path, n, n == 1 ? "" : "s");
		else
			printf("%s: ok\n", path);
		return 0;
	}
	if (diag.n == 0)
		fprintf(stderr, "%s\n", err.msg);
	for (size_t i = 0; i < diag.n; i++)
		fprintf(stderr, "%s\n", diag.msgs[i]);
	if (diag.n >= POLICY_MAX_ERRORS)
		fprintf(stderr, "%s: too many errors, stopped after %d\n", path, POLICY_MAX_ERRORS);
	policy_diag_free(&diag);
	return 1;
}

/* Polls the latest revision until it is no longer pending. */
static int wait_revision(struct cli *cli, const char *path, json_int_t rev, uint64_t timeout_s)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long status = 0;
		_cleanup_json_ json_t *revs = cli_api(cli, "GET", path, NULL, &status);
		size_t i;
		json_t *r;
		if (!revs)
			return CLI_FAIL;
		json_array_foreach (json_object_get(revs, "revisions"), i, r) {
			if (json_integer_value(json_object_get(r, "revision")) != rev)
				continue;
			const char *st = json_string_value(json_object_get(r, "status"));
			if (!strcmp(st, "loaded")) {
				printf("policy revision %lld loaded\n", (long long)rev);
				return CLI_OK;
			}
			if (strcmp(st, "pending") != 0)
				return cli_fail("policy revision %lld %s: %s", (long long)rev, st,
						json_string_value(json_object_get(r, "message")));
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((uint64_t)(now.tv_sec - t0.tv_sec) >= timeout_s) {
			cli_fail("policy revision %lld still pending after %llu s (is the sandbox "
				 "running?)",
				 (long long)rev, (unsigned long long)timeout_s);
			return CLI_TIMEOUT;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 200 * 1000 * 1000 }, NULL);
	}
}

static int set(struct cli *cli, int argc, char **argv)
{
	const char *name = NULL, *file = NULL;
	bool wait = false;
	uint64_t timeout = 60;
	os_error err = { 0 };
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = true;
		else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			file = argv[++i];
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (parse_u64_str(argv[++i], 0, 86400, &timeout, &err) < 0)
				return cli_usage("--timeout: %s (seconds)", err.msg);
		} else if (!name && argv[i][0] != '-')
			name = argv[i];
		else
			return cli_usage("policy set: unexpected %s", argv[i]);
	}
	if (!name || !file)
		return cli_usage(
			"usage: openshell policy set NAME --policy FILE [--wait] [--timeout S]");
	char seg[256], path[512];
	long status = 0;
	_cleanup_free_ char *yaml = cli_read_file(file);
	if (!yaml || cli_segment(seg, sizeof(seg), name) < 0)
		return CLI_FAIL;
	_cleanup_json_ json_t *body = json_pack("{s:s}", "policy", yaml);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/policy", seg);
	_cleanup_json_ json_t *out = cli_api(cli, "PUT", path, body, &status);
	if (!out)
		return CLI_FAIL;
	json_int_t rev = json_integer_value(json_object_get(out, "revision"));
	if (!wait) {
		if (cli->json)
			cli_object(cli, out);
		else
			printf("policy revision %lld submitted (pending)\n", (long long)rev);
		return CLI_OK;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/policies", seg);
	return wait_revision(cli, path, rev, timeout);
}

int cmd_policy(struct cli *cli, int argc, char **argv)
{
	static const char *const cols[] = { "revision", "status",  "in_force",
					    "hash",	"message", NULL };
	const char *sub = argc > 0 ? argv[0] : "";
	char seg[256], path[512];
	long status = 0;
	if (!strcmp(sub, "validate")) {
		bool strict = false;
		int rc = 0, files = 0;
		for (int i = 1; i < argc; i++)
			if (!strcmp(argv[i], "--strict"))
				strict = true;
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--strict") != 0) {
				rc |= validate_one(argv[i], strict);
				files++;
			}
		}
		if (files == 0)
			return cli_usage("usage: openshell policy validate [--strict] FILE...");
		return rc;
	}
	if (!strcmp(sub, "set"))
		return set(cli, argc - 1, argv + 1);
	if ((strcmp(sub, "get") != 0 && strcmp(sub, "list") != 0) || argc != 2)
		return cli_usage("usage: openshell policy set|get|list|validate ...");
	if (cli_segment(seg, sizeof(seg), argv[1]) < 0)
		return CLI_USAGE;
	bool get = !strcmp(sub, "get");
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", seg, get ? "policy" : "policies");
	_cleanup_json_ json_t *out = cli_api(cli, "GET", path, NULL, &status);
	if (!out)
		return CLI_FAIL;
	if (get && !cli->json) {
		bool force = json_is_true(json_object_get(out, "in_force"));
		printf("# revision %lld (%s%s)\n%s",
		       (long long)json_integer_value(json_object_get(out, "revision")),
		       json_string_value(json_object_get(out, "status")),
		       force ? ", in force" : ": not in force yet",
		       json_string_value(json_object_get(out, "policy")));
		size_t i;
		json_t *r;
		json_array_foreach (json_object_get(out, "newer"), i, r) {
			const char *msg = json_string_value(json_object_get(r, "message"));
			fprintf(stderr, "openshell: revision %lld is %s%s%s (not in force)\n",
				(long long)json_integer_value(json_object_get(r, "revision")),
				json_string_value(json_object_get(r, "status")),
				msg && *msg ? ": " : "", msg && *msg ? msg : "");
		}
		return CLI_OK;
	}
	if (get)
		cli_object(cli, out);
	else
		cli_table(cli, json_object_get(out, "revisions"), cols, "revisions");
	return CLI_OK;
}
