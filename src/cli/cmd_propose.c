/* cmd_propose.c - `openshell policy propose NAME [--apply]`: reads the
 * sandbox's denials from its audit log (through the gateway), prints the
 * smallest policy change that allows them (YAML, one comment per rule
 * naming the denials it covers; propose.c decides it), and with --apply
 * shows the change to the policy in force as a diff and submits it as a new
 * revision, waiting for the supervisor to load it (exit codes of policy
 * set --wait). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cli.h"
#include "json.h"
#include "parse.h"
#include "policy.h"
#include "propose.h"
#include "yamltree.h"

#define DIFF_LINES_MAX 4000

/* s as a YAML double-quoted scalar (JSON's string syntax is YAML's). */
static const char *yq(const char *s, char *buf, size_t cap)
{
	_cleanup_json_ json_t *j = json_string(s);
	_cleanup_free_ char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	snprintf(buf, cap, "%s", t ? t : "\"\"");
	return buf;
}

static const char *plural(json_int_t n)
{
	return n == 1 ? "" : "s";
}

static void bins_text(const json_t *e, char *out, size_t cap)
{
	size_t i, n = 0;
	json_t *b;
	out[0] = '\0';
	json_array_foreach (json_object_get(e, "binaries"), i, b)
		n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s", i ? ", " : "",
				      json_string_value(b));
}

static void print_rules(const json_t *plan)
{
	const char *last_policy = "", *last_host = "";
	json_int_t last_port = 0;
	size_t i;
	json_t *r;
	char a[1024], b[1024], bins[1024];
	json_array_foreach (json_object_get(plan, "rules"), i, r) {
		const char *policy = json_string_value(json_object_get(r, "policy"));
		const char *host = json_string_value(json_object_get(r, "host"));
		json_int_t port = json_integer_value(json_object_get(r, "port"));
		json_int_t count = json_integer_value(json_object_get(r, "count"));
		if (strcmp(policy, last_policy) != 0)
			printf("  %s:  # exists: rules added to its endpoint\n    endpoints:\n",
			       policy);
		if (strcmp(policy, last_policy) != 0 || strcmp(host, last_host) != 0 ||
		    port != last_port)
			printf("      - host: %s\n        port: %lld\n        rules:\n",
			       yq(host, a, sizeof a), (long long)port);
		last_policy = policy, last_host = host, last_port = port;
		bins_text(r, bins, sizeof bins);
		printf("          # %lld denial%s (%s): %s %s by %s\n", (long long)count,
		       plural(count), json_string_value(json_object_get(r, "reason")),
		       json_string_value(json_object_get(r, "method")),
		       json_string_value(json_object_get(r, "path")), bins);
		printf("          - allow: { method: %s, path: %s }\n",
		       yq(json_string_value(json_object_get(r, "method")), a, sizeof a),
		       yq(json_string_value(json_object_get(r, "path")), b, sizeof b));
	}
}

static void print_policies(const json_t *plan)
{
	size_t i, j;
	json_t *p, *bin;
	char a[1024], bins[1024];
	json_array_foreach (json_object_get(plan, "policies"), i, p) {
		json_int_t count = json_integer_value(json_object_get(p, "count"));
		bins_text(p, bins, sizeof bins);
		printf("  %s:\n    endpoints:\n", json_string_value(json_object_get(p, "name")));
		printf("      # %lld denial%s (%s): %s:%lld by %s\n", (long long)count,
		       plural(count), json_string_value(json_object_get(p, "reason")),
		       json_string_value(json_object_get(p, "host")),
		       (long long)json_integer_value(json_object_get(p, "port")), bins);
		printf("      - { host: %s, port: %lld }\n    binaries:\n",
		       yq(json_string_value(json_object_get(p, "host")), a, sizeof a),
		       (long long)json_integer_value(json_object_get(p, "port")));
		json_array_foreach (json_object_get(p, "binaries"), j, bin)
			printf("      - { path: %s }\n", yq(json_string_value(bin), a, sizeof a));
	}
}

/* The policy text compiled as the supervisor would; NULL with err. */
static struct policy_gen *compile_text(const char *what, const char *text, os_error *err)
{
	struct policy_doc *doc = NULL;
	if (policy_parse(what, text, strlen(text), &doc, NULL, err) < 0)
		return NULL;
	return policy_compile(doc, err);
}

/* Every denial the plan covers must be allowed by next, or nothing is
 * submitted: the proposal has to do what its comments say. */
static int check_allows(const char *next_text, const json_t *denials)
{
	os_error err = { 0 };
	struct policy_gen *next = compile_text("proposed policy", next_text, &err);
	if (!next)
		return cli_fail("propose: the proposed policy does not load (not applied): %s",
				err.msg);
	const char *k;
	json_t *d;
	int rc = CLI_OK;
	json_object_foreach ((json_t *)denials, k, d) {
		if (json_is_true(json_object_get(d, "planned")) && propose_still_denied(next, d)) {
			rc = cli_fail("propose: the proposed policy would still deny %s to %s:%lld "
				      "by %s (not applied)",
				      json_string_value(json_object_get(d, "method")),
				      json_string_value(json_object_get(d, "host")),
				      (long long)json_integer_value(json_object_get(d, "port")),
				      json_string_value(json_object_get(d, "binary")));
			break;
		}
	}
	policy_unref(next);
	return rc;
}

static bool print_plan(const char *name, const json_t *plan)
{
	const json_t *rules = json_object_get(plan, "rules");
	const json_t *pols = json_object_get(plan, "policies");
	bool any = json_array_size(rules) || json_array_size(pols);
	printf("# openshell policy propose %s: the smallest change that allows its denials\n",
	       name);
	if (any) {
		printf("network_policies:\n");
		print_rules(plan);
		print_policies(plan);
	} else {
		printf("# nothing to propose: no denial a policy change would allow\n");
	}
	json_int_t allowed = json_integer_value(json_object_get(plan, "allowed"));
	if (allowed)
		printf("# not proposed: %lld denial%s the policy in force allows by now\n",
		       (long long)allowed, plural(allowed));
	size_t i;
	json_t *s;
	json_array_foreach (json_object_get(plan, "skipped"), i, s) {
		json_int_t count = json_integer_value(json_object_get(s, "count"));
		printf("# not proposed: %lld denial%s (%s) of %s: %s\n", (long long)count,
		       plural(count), json_string_value(json_object_get(s, "reason")),
		       json_string_value(json_object_get(s, "what")),
		       json_string_value(json_object_get(s, "why")));
	}
	return any;
}

static char *yaml_text(const json_t *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	int rc = cli_yaml_dump(v, f);
	if (fclose(f) != 0 || rc < 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* Splits text into lines in place; returns how many (at most cap). */
static size_t lines_of(char *text, char **out, size_t cap)
{
	size_t n = 0;
	for (char *p = text; *p && n < cap;) {
		out[n++] = p;
		char *nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

/* A whole-file line diff (policies are short): ' ' kept, '-' old, '+' new,
 * from the longest common subsequence. */
static int print_diff(char *old_text, char *new_text)
{
	static char *a[DIFF_LINES_MAX], *b[DIFF_LINES_MAX];
	size_t n = lines_of(old_text, a, DIFF_LINES_MAX), m = lines_of(new_text, b, DIFF_LINES_MAX);
	_cleanup_free_ unsigned short *t = calloc((n + 1) * (m + 1), sizeof *t);
	if (!t)
		return -1;
	for (size_t i = n; i-- > 0;)
		for (size_t j = m; j-- > 0;)
			t[i * (m + 1) + j] =
				!strcmp(a[i], b[j])
					? (unsigned short)(t[(i + 1) * (m + 1) + j + 1] + 1)
				: t[(i + 1) * (m + 1) + j] > t[i * (m + 1) + j + 1]
					? t[(i + 1) * (m + 1) + j]
					: t[i * (m + 1) + j + 1];
	size_t i = 0, j = 0;
	printf("--- policy in force\n+++ proposed\n");
	while (i < n || j < m) {
		if (i < n && j < m && !strcmp(a[i], b[j]))
			printf(" %s\n", a[i++]), j++;
		else if (j < m && (i == n || t[i * (m + 1) + j + 1] >= t[(i + 1) * (m + 1) + j]))
			printf("+%s\n", b[j++]);
		else
			printf("-%s\n", a[i++]);
	}
	return 0;
}

static int apply(struct cli *cli, const char *seg, const char *yaml, const json_t *plan,
		 const json_t *denials)
{
	_cleanup_ytree_ struct ytree *tree = NULL;
	os_error err = { 0 };
	if (ytree_parse("policy in force", yaml, strlen(yaml), &tree, &err) < 0)
		return cli_fail("%s", err.msg);
	_cleanup_json_ json_t *now = propose_yaml_json(tree->root);
	_cleanup_json_ json_t *next = json_deep_copy(now);
	if (!next || propose_apply(next, plan, &err) < 0)
		return cli_fail("%s", err.msg[0] ? err.msg : "out of memory");
	_cleanup_free_ char *old_text = yaml_text(now);
	_cleanup_free_ char *new_text = yaml_text(next);
	if (!old_text || !new_text)
		return cli_fail("propose: writing the policy as YAML failed");
	if (check_allows(new_text, denials) != CLI_OK)
		return CLI_FAIL;
	_cleanup_json_ json_t *body = json_pack("{s:s}", "policy", new_text);
	char path[512];
	snprintf(path, sizeof path, "/v1/sandboxes/%s/policy", seg);
	if (print_diff(old_text, new_text) < 0)
		return cli_fail("propose: out of memory");
	long status = 0;
	_cleanup_json_ json_t *out = cli_api(cli, "PUT", path, body, &status);
	if (!out)
		return CLI_FAIL;
	snprintf(path, sizeof path, "/v1/sandboxes/%s/policies", seg);
	return cli_wait_revision(cli, path, json_integer_value(json_object_get(out, "revision")),
				 60);
}

static int on_record(const char *line, size_t len, void *user)
{
	_cleanup_json_ json_t *rec = json_loadb(line, len, 0, NULL);
	if (rec)
		propose_add(user, rec);
	return 0;
}

int cmd_propose(struct cli *cli, int argc, char **argv)
{
	const char *name = NULL;
	bool do_apply = false;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--apply"))
			do_apply = true;
		else if (!name && argv[i][0] != '-')
			name = argv[i];
		else
			return cli_usage("policy propose: unexpected %s", argv[i]);
	}
	char seg[256], path[512];
	if (!name)
		return cli_usage("usage: openshell policy propose NAME [--apply]");
	if (cli_segment(seg, sizeof seg, name) < 0)
		return CLI_USAGE;
	snprintf(path, sizeof path, "/v1/sandboxes/%s/policy", seg);
	long status = 0;
	_cleanup_json_ json_t *current = cli_api(cli, "GET", path, NULL, &status);
	if (!current)
		return CLI_FAIL;
	_cleanup_json_ json_t *denials = json_object();
	os_error err = { 0 };
	snprintf(path, sizeof path, "/v1/sandboxes/%s/logs?audit=1", seg);
	if (!denials || client_stream_lines(&cli->client, path, on_record, denials, &err) < 0)
		return cli_fail("%s", err.msg[0] ? err.msg : "out of memory");
	const char *yaml = str_or(json_string_value(json_object_get(current, "policy")), "");
	struct policy_gen *now = compile_text("policy in force", yaml, &err);
	if (!now)
		return cli_fail("propose: the policy in force does not load: %s", err.msg);
	_cleanup_json_ json_t *plan = propose_plan(denials, now);
	policy_unref(now);
	if (!plan)
		return cli_fail("propose: out of memory");
	bool any = print_plan(name, plan);
	if (!do_apply || !any)
		return CLI_OK;
	return apply(cli, seg, yaml, plan, denials);
}
