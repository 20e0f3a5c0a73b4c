/* test_policy.c - unit tests of the policy v1 loader: the examples load with
 * the documented meaning, defaults, limits, every error collected with its
 * position and key path, and the malformed corpus (tests/unit/policy-malformed:
 * NAME.yaml with NAME.expect holding "LINE:COL: key.path ..." of the first error). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "fdutil.h"
#include "policy.h"

#ifndef POLICY_MALFORMED_DIR
#error "POLICY_MALFORMED_DIR must be defined by the build"
#endif
#ifndef POLICY_EXAMPLES_DIR
#error "POLICY_EXAMPLES_DIR must be defined by the build"
#endif

static struct policy_doc *load_ok(const char *text)
{
	struct policy_doc *doc = NULL;
	os_error err = { 0 };
	if (policy_parse("t.yaml", text, strlen(text), &doc, NULL, &err) < 0)
		fail_msg("unexpected error: %s", err.msg);
	return doc;
}

/* Loads text expecting failure; returns the diagnostics (caller frees). */
static struct policy_diag load_bad(const char *text)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	assert_int_equal(policy_parse("t.yaml", text, strlen(text), &doc, &diag, &err), -1);
	assert_null(doc); /* nothing partial */
	assert_true(diag.n >= 1);
	assert_string_equal(err.msg, diag.msgs[0]);
	return diag;
}

static void assert_first_error(const char *text, const char *expect)
{
	struct policy_diag d = load_bad(text);
	if (!strstr(d.msgs[0], expect))
		fail_msg("error \"%s\" lacks \"%s\"", d.msgs[0], expect);
	policy_diag_free(&d);
}

static struct policy_doc *load_example(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", POLICY_EXAMPLES_DIR, name);
	struct policy_doc *doc = NULL;
	os_error err = { 0 };
	if (policy_load_file(path, &doc, NULL, &err) < 0)
		fail_msg("%s", err.msg);
	return doc;
}

static void documented_example_loads_with_its_meaning(void **state)
{
	struct policy_doc *d = load_example("documented.yaml");
	assert_true(d->include_workdir);
	assert_int_equal(d->n_read_only, 7);
	assert_string_equal(d->read_only[6], "/dev/urandom");
	assert_int_equal(d->n_read_write, 2);
	assert_int_equal(d->landlock, POLICY_LANDLOCK_BEST_EFFORT);
	assert_true(d->run_as_user.set && d->run_as_user.is_sandbox);
	assert_int_equal(d->n_networks, 2);
	const struct policy_network *gh = &d->networks[0];
	assert_string_equal(gh->name, "github_readonly");
	assert_int_equal(gh->n_endpoints, 2);
	assert_string_equal(gh->endpoints[0].host, "api.github.com");
	assert_int_equal(gh->endpoints[0].protocol, POLICY_PROTO_REST);
	assert_int_equal(gh->endpoints[0].access, POLICY_ACCESS_READ_ONLY);
	assert_int_equal(gh->endpoints[0].enforcement, POLICY_ENF_ENFORCE); /* our default */
	assert_int_equal(gh->endpoints[0].n_deny, 1);
	assert_string_equal(gh->endpoints[0].deny_rules[0].method, "*");
	assert_string_equal(gh->endpoints[1].host, "*.githubusercontent.com");
	assert_int_equal(gh->endpoints[1].protocol, POLICY_PROTO_NONE);
	assert_int_equal(gh->n_binaries, 2);
	const struct policy_network *db = &d->networks[1];
	assert_string_equal(db->name, "internal_db");
	assert_int_equal(db->endpoints[0].n_allowed, 1);
	assert_int_equal(db->endpoints[0].ports[0], 5432);
	policy_doc_free(d);
}

static void realistic_examples_load(void **state)
{
	struct policy_doc *d = load_example("github-readonly.yaml");
	assert_int_equal(d->networks[0].endpoints[0].n_rules, 3);
	assert_int_equal(d->networks[0].endpoints[0].rules[2].n_query, 2);
	assert_int_equal(d->networks[0].endpoints[0].rules[2].query[1].n_globs, 3);
	policy_doc_free(d);
	d = load_example("package-registries.yaml");
	assert_int_equal(d->n_networks, 4);
	assert_string_equal(d->networks[0].name, "crates"); /* sorted by name */
	assert_int_equal(d->networks[1].endpoints[0].n_ports, 2);
	policy_doc_free(d);
	d = load_example("internal-db.yaml");
	assert_int_equal(d->landlock, POLICY_LANDLOCK_HARD_REQUIREMENT);
	assert_int_equal(d->run_as_user.id, 1500);
	assert_false(d->run_as_user.is_sandbox);
	/* A literal IP host implies allowed_ips for that address. */
	assert_string_equal(d->networks[0].endpoints[1].host, "10.0.6.7");
	assert_int_equal(d->networks[0].endpoints[1].n_allowed, 1);
	assert_int_equal(d->networks[0].endpoints[1].allowed_ips[0].prefix, 32);
	assert_int_equal(d->networks[1].endpoints[0].enforcement, POLICY_ENF_AUDIT);
	policy_doc_free(d);
}

/* Every example policy decides what its comments promise: each promise (a
 * quote of the comment) is a request that must get its verdict, with beside
 * it the nearest request the comment rules out. github-readonly.yaml once
 * promised clones that its `access: read-only` refused (the POST of
 * git-upload-pack). */
struct promise {
	const char *file, *says;
	const char *host;
	uint16_t port;
	const char *caller, *parent; /* the calling binary and its parent (or NULL) */
	const char *method, *target; /* NULL: the L4 decision only */
	enum policy_verdict want;
};

static const struct promise promises[] = {
	{ "github-readonly.yaml", "the REST API may be read", "api.github.com", 443,
	  "/usr/bin/curl", NULL, "GET", "/repos/o/r/issues", POLICY_ALLOW },
	{ "github-readonly.yaml", "(never written)", "api.github.com", 443, "/usr/bin/curl", NULL,
	  "POST", "/repos/o/r/issues", POLICY_DENY },
	{ "github-readonly.yaml", "repository settings stay out of reach even for reads",
	  "api.github.com", 443, "/usr/bin/curl", NULL, "GET", "/repos/o/r/hooks/1", POLICY_DENY },
	{ "github-readonly.yaml", "settings: secrets", "api.github.com", 443, "/usr/bin/curl", NULL,
	  "GET", "/repos/o/r/actions/secrets/KEY", POLICY_DENY },
	{ "github-readonly.yaml", "git may clone: the refs", "github.com", 443,
	  "/usr/lib/git-core/git-remote-https", "/usr/bin/git", "GET",
	  "/o/r.git/info/refs?service=git-upload-pack", POLICY_ALLOW },
	{ "github-readonly.yaml", "git may clone: the pack (a POST)", "github.com", 443,
	  "/usr/lib/git-core/git-remote-https", "/usr/bin/git", "POST", "/o/r.git/git-upload-pack",
	  POLICY_ALLOW },
	{ "github-readonly.yaml", "but never push: the refs", "github.com", 443, "/usr/bin/git",
	  NULL, "GET", "/o/r.git/info/refs?service=git-receive-pack", POLICY_DENY },
	{ "github-readonly.yaml", "but never push: the pack", "github.com", 443, "/usr/bin/git",
	  NULL, "POST", "/o/r.git/git-receive-pack", POLICY_DENY },
	{ "github-readonly.yaml", "raw content for git", "objects.githubusercontent.com", 443,
	  "/usr/bin/git", NULL, NULL, NULL, POLICY_ALLOW },
	{ "github-readonly.yaml", "git's host is git's", "github.com", 443, "/usr/bin/curl", NULL,
	  NULL, NULL, POLICY_DENY },
	{ "internal-db.yaml", "one internal PostgreSQL", "db.corp.example", 5432, "/usr/bin/psql",
	  NULL, NULL, NULL, POLICY_ALLOW },
	{ "internal-db.yaml", "one internal PostgreSQL (by address)", "10.0.6.7", 5432,
	  "/opt/agent/bin/run", NULL, NULL, NULL, POLICY_ALLOW },
	{ "internal-db.yaml", "only its port", "db.corp.example", 5433, "/usr/bin/psql", NULL, NULL,
	  NULL, POLICY_DENY },
	{ "internal-db.yaml", "one internal HTTP service", "metrics.corp.example", 8443,
	  "/opt/agent/bin/run", NULL, "GET", "/api/v1/series", POLICY_ALLOW },
	{ "internal-db.yaml", "(enforcement: audit: logged, not blocked)", "metrics.corp.example",
	  8443, "/opt/agent/bin/run", NULL, "DELETE", "/api/v1/series", POLICY_AUDIT },
	{ "package-registries.yaml", "Package installs only", "pypi.org", 443, "/usr/bin/pip3",
	  NULL, "GET", "/simple/requests/", POLICY_ALLOW },
	{ "package-registries.yaml", "installs, not uploads", "pypi.org", 443, "/usr/bin/pip3",
	  NULL, "POST", "/legacy/", POLICY_DENY },
	{ "package-registries.yaml", "any ancestor counts, so `make` running pip works",
	  "files.pythonhosted.org", 443, "/usr/bin/make", "/usr/bin/python3.11", NULL, NULL,
	  POLICY_ALLOW },
	{ "package-registries.yaml", "for the package managers themselves", "pypi.org", 443,
	  "/usr/bin/curl", NULL, NULL, NULL, POLICY_DENY },
	{ "package-registries.yaml", "Debian mirrors", "deb.debian.org", 80,
	  "/usr/lib/apt/methods/http", NULL, NULL, NULL, POLICY_ALLOW },
	{ "package-registries.yaml", "Debian mirrors, for apt", "deb.debian.org", 80,
	  "/usr/bin/curl", NULL, NULL, NULL, POLICY_DENY },
	{ "documented.yaml", "read-only GitHub API", "api.github.com", 443, "/usr/bin/curl", NULL,
	  "GET", "/repos/o/r", POLICY_ALLOW },
	{ "documented.yaml", "read-only", "api.github.com", 443, "/usr/bin/curl", NULL, "PUT",
	  "/repos/o/r", POLICY_DENY },
	{ "documented.yaml", "two denied paths", "api.github.com", 443, "/usr/bin/curl", NULL,
	  "GET", "/repos/o/rulesets", POLICY_DENY },
	{ "documented.yaml", "raw content at L4", "raw.githubusercontent.com", 443, "/usr/bin/git",
	  NULL, NULL, NULL, POLICY_ALLOW },
	{ "documented.yaml", "an internal database", "db.corp.example", 5432, "/usr/bin/psql", NULL,
	  NULL, NULL, POLICY_ALLOW },
	{ "documented.yaml", "the database is psql's", "db.corp.example", 5432, "/usr/bin/curl",
	  NULL, NULL, NULL, POLICY_DENY },
};

static struct policy_gen *compile_example(const char *name)
{
	os_error err = { 0 };
	struct policy_gen *g = policy_compile(load_example(name), &err);
	if (!g)
		fail_msg("%s: %s", name, err.msg);
	return g;
}

static void examples_decide_what_their_comments_promise(void **state)
{
	for (size_t i = 0; i < sizeof promises / sizeof promises[0]; i++) {
		const struct promise *p = &promises[i];
		const char *chain[] = { p->caller, p->parent };
		struct policy_gen *g = compile_example(p->file);
		struct policy_decision d;
		policy_decide_connect(g, p->host, p->port, chain, p->parent ? 2 : 1, &d);
		if (p->method && d.verdict == POLICY_ALLOW)
			policy_decide_request(g, d.endpoint, p->method, p->target, NULL, 0, &d);
		if (d.verdict != p->want)
			fail_msg("%s: \"%s\": %s %s:%u%s%s: got %s (%s), want %s", p->file, p->says,
				 p->method ? p->method : "connect", p->host, p->port,
				 p->target ? " " : "", p->target ? p->target : "",
				 policy_verdict_name(d.verdict), d.detail,
				 policy_verdict_name(p->want));
		policy_unref(g);
	}
}

/* internal-db.yaml: "private addresses are reachable only through allowed_ips". */
static void example_private_addresses_need_allowed_ips(void **state)
{
	struct policy_gen *g = compile_example("internal-db.yaml");
	const char *psql[] = { "/usr/bin/psql" };
	struct policy_decision d;
	struct ip_addr in, out;
	os_error err = { 0 };
	assert_int_equal(ip_addr_parse("10.0.5.9", &in, &err), 0);
	assert_int_equal(ip_addr_parse("10.0.9.9", &out, &err), 0);
	policy_decide_connect(g, "db.corp.example", 5432, psql, 1, &d);
	const struct policy_endpoint *ep = d.endpoint;
	policy_decide_address(ep, &in, 5432, &d);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	policy_decide_address(ep, &out, 5432, &d);
	assert_int_equal(d.verdict, POLICY_DENY);
	policy_unref(g);
}

static void include_workdir_defaults(void **state)
{
	struct policy_doc *d = load_ok("version: 1\n");
	assert_true(d->include_workdir); /* section absent */
	assert_int_equal(d->n_networks, 0);
	policy_doc_free(d);
	d = load_ok("version: 1\nfilesystem_policy: { read_only: [/usr] }\n");
	assert_false(d->include_workdir); /* section present */
	policy_doc_free(d);
}

static void identities(void **state)
{
	struct policy_doc *d = load_ok("version: 1\nprocess: { run_as_user: 1500, run_as_group: "
				       "\"4294967294\" }\n");
	assert_int_equal(d->run_as_user.id, 1500);
	assert_int_equal(d->run_as_group.id, 4294967294u);
	policy_doc_free(d);
	assert_first_error("version: 1\nprocess: { run_as_user: 0 }\n",
			   "2:25: process.run_as_user");
	assert_first_error("version: 1\nprocess: { run_as_user: \"-1\" }\n", "process.run_as_user");
	assert_first_error("version: 1\nprocess: { run_as_user: 1e3 }\n", "process.run_as_user");
}

static void every_error_is_reported(void **state)
{
	struct policy_diag d = load_bad("version: 1\n"
					"filesystem_policy: { read_write: [/], read_only: [x] }\n"
					"landlock: { compatibility: no }\n"
					"surprise: 1\n");
	assert_int_equal(d.n, 4);
	assert_non_null(strstr(d.msgs[0], "t.yaml:4:1: surprise: unknown key"));
	assert_non_null(strstr(d.msgs[1], "t.yaml:2:35: filesystem_policy.read_write[0]"));
	assert_non_null(strstr(d.msgs[2], "t.yaml:2:51: filesystem_policy.read_only[0]"));
	assert_non_null(strstr(d.msgs[3], "t.yaml:3:28: landlock.compatibility: expected"));
	policy_diag_free(&d);
}

static void error_names_file_position_path_and_expectation(void **state)
{
	static const char text[] = "version: 1\n"
				   "network_policies:\n"
				   "  github:\n"
				   "    endpoints:\n"
				   "      - host: api.github.com\n"
				   "        port: https\n";
	assert_first_error(text, "t.yaml:6:15: network_policies.github.endpoints[0].port: expected "
				 "an integer 1..65535, got \"https\"");
}

static void ports_list_and_port(void **state)
{
	struct policy_doc *d = load_ok("version: 1\nnetwork_policies:\n  p:\n    endpoints:\n"
				       "      - { host: a.example.com, ports: [80, 443] }\n"
				       "      - { host: b.example.com, port: 65535 }\n");
	assert_int_equal(d->networks[0].endpoints[0].n_ports, 2);
	assert_int_equal(d->networks[0].endpoints[1].ports[0], 65535);
	policy_doc_free(d);
}

static void overlapping_endpoints_must_agree(void **state)
{
	/* Controls: same host:port agreeing, and disagreeing on different ports. */
	policy_doc_free(
		load_ok("version: 1\nnetwork_policies:\n"
			"  a: { endpoints: [{ host: x.example.com, port: 443 }] }\n"
			"  b: { endpoints: [{ host: \"*.example.com\", port: 443 }] }\n"
			"  c: { endpoints: [{ host: x.example.com, port: 80, protocol: rest, "
			"access: full }] }\n"));
	assert_first_error("version: 1\nnetwork_policies:\n"
			   "  a: { endpoints: [{ host: x.example.com, port: 443 }] }\n"
			   "  b: { endpoints: [{ host: x.example.com, port: 443, tls: skip }] }\n",
			   "4:20: network_policies.b.endpoints[0]: overlaps network_policies.a");
	/* A plain L4 endpoint and an L7 one do not compete (OpenShell). */
	policy_doc_free(
		load_ok("version: 1\nnetwork_policies:\n"
			"  a: { endpoints: [{ host: a.b.example.com, port: 443 }] }\n"
			"  b: { endpoints: [{ host: \"**.example.com\", port: 443, protocol: rest, "
			"access: full }] }\n"));
	/* Destination metadata must agree: allowed_ips, with both locations. */
	assert_first_error("version: 1\nnetwork_policies:\n"
			   "  a: { endpoints: [{ host: db.example.com, port: 5432, allowed_ips: "
			   "[10.0.0.0/8] }] }\n"
			   "  b: { endpoints: [{ host: \"*.example.com\", port: 5432, allowed_ips: "
			   "[10.1.0.0/16] }] }\n",
			   "t.yaml:4:20: network_policies.b.endpoints[0]: overlaps "
			   "network_policies.a.endpoints[0] (t.yaml:3:20) on port 5432 but "
			   "disagrees on allowed_ips");
	/* Scanned globs meet indexed hosts too. */
	assert_first_error("version: 1\nnetwork_policies:\n"
			   "  a: { endpoints: [{ host: b.s3.eu.amazonaws.com, port: 443, protocol: "
			   "rest, access: full }] }\n"
			   "  b: { endpoints: [{ host: \"*.s3.*.amazonaws.com\", port: 443, "
			   "protocol: rest, access: full, enforcement: audit }] }\n",
			   "disagrees on enforcement");
	/* `*.example.com` cannot match a.b.example.com: no overlap. */
	policy_doc_free(
		load_ok("version: 1\nnetwork_policies:\n"
			"  a: { endpoints: [{ host: a.b.example.com, port: 443 }] }\n"
			"  b: { endpoints: [{ host: \"*.example.com\", port: 443, protocol: "
			"rest, access: full }] }\n"));
}

static void path_limits(void **state)
{
	struct buf b;
	os_error err = { 0 };
	buf_init(&b, 1 << 20);
	buf_append_str(&b, "version: 1\nfilesystem_policy:\n  read_only:\n", &err);
	for (int i = 0; i < POLICY_MAX_PATHS; i++)
		buf_printf(&b, &err, "    - /p%d\n", i);
	policy_doc_free(load_ok(b.data)); /* exactly 256 */
	buf_append_str(&b, "    - /one-more\n", &err);
	assert_first_error(b.data, "filesystem_policy.read_only[256]: more than 256");
	buf_reset(&b);
	buf_append_str(&b, "version: 1\nfilesystem_policy:\n  read_only: [/", &err);
	for (int i = 0; i < POLICY_MAX_PATH_LEN; i++)
		buf_append_str(&b, "a", &err);
	buf_append_str(&b, "]\n", &err);
	assert_first_error(b.data, "longer than 4096 bytes");
	buf_free(&b);
}

static void policy_count_limit(void **state)
{
	struct buf b;
	os_error err = { 0 };
	buf_init(&b, 1 << 20);
	buf_append_str(&b, "version: 1\nnetwork_policies:\n", &err);
	for (int i = 0; i < POLICY_MAX_POLICIES; i++)
		buf_printf(&b, &err, "  p%d: { endpoints: [], binaries: [] }\n", i);
	policy_doc_free(load_ok(b.data));
	buf_append_str(&b, "  extra: { endpoints: [], binaries: [] }\n", &err);
	assert_first_error(b.data, "network_policies: more than 1024 policies");
	buf_free(&b);
}

static void endpoint_count_limit(void **state)
{
	struct buf b;
	os_error err = { 0 };
	buf_init(&b, 4 << 20);
	buf_append_str(&b, "version: 1\nnetwork_policies:\n  p:\n    endpoints:\n", &err);
	for (int i = 0; i < POLICY_MAX_ENDPOINTS; i++)
		buf_printf(&b, &err, "      - { host: h%d.example.com, port: 443 }\n", i);
	policy_doc_free(load_ok(b.data));
	buf_append_str(&b, "      - { host: last.example.com, port: 443 }\n", &err);
	assert_first_error(b.data, "network_policies.p.endpoints: more than 4096 endpoints");
	buf_free(&b);
}

static void rule_methods_are_normalised(void **state)
{
	struct policy_doc *d =
		load_ok("version: 1\nnetwork_policies:\n  p:\n    endpoints:\n"
			"      - host: a.example.com\n        port: 443\n        protocol: rest\n"
			"        rules: [{ allow: { method: patch, path: \"/x/**\" } }]\n");
	assert_string_equal(d->networks[0].endpoints[0].rules[0].method, "PATCH");
	policy_doc_free(d);
}

static void missing_file_is_an_error(void **state)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	assert_int_equal(policy_load_file("/nonexistent/p.yaml", &doc, &diag, &err), -1);
	assert_null(doc);
	assert_int_equal(diag.n, 1);
	assert_non_null(strstr(diag.msgs[0], "/nonexistent/p.yaml"));
	policy_diag_free(&diag);
}

static int check_malformed(const char *name)
{
	char ypath[512], epath[512];
	snprintf(ypath, sizeof ypath, "%s/%s", POLICY_MALFORMED_DIR, name);
	snprintf(epath, sizeof epath, "%.*s.expect", (int)(strlen(ypath) - 5), ypath);
	char *expect = NULL;
	size_t elen = 0;
	os_error err = { 0 };
	if (file_read_all(epath, 4096, &expect, &elen, &err) < 0)
		fail_msg("%s: missing sidecar: %s", name, err.msg);
	while (elen && (expect[elen - 1] == '\n' || expect[elen - 1] == ' '))
		expect[--elen] = '\0';
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	if (policy_load_file(ypath, &doc, &diag, &err) == 0)
		fail_msg("%s: loaded although malformed", name);
	/* The expectation is "LINE:COL: key.path ..." right after the file name. */
	char want[4200];
	snprintf(want, sizeof want, "%s:%s", ypath, expect);
	if (diag.n == 0 || strncmp(diag.msgs[0], want, strlen(want)) != 0)
		fail_msg("%s: first error \"%s\", expected it to start with \"%s\"", name,
			 diag.n ? diag.msgs[0] : "(none)", want);
	policy_diag_free(&diag);
	free(expect);
	return 1;
}

static void malformed_corpus_reports_position_and_path(void **state)
{
	DIR *dir = opendir(POLICY_MALFORMED_DIR);
	assert_non_null(dir);
	int n = 0;
	for (struct dirent *e; (e = readdir(dir));) {
		size_t len = strlen(e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, ".yaml"))
			n += check_malformed(e->d_name);
	}
	closedir(dir);
	assert_true(n >= 40);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(documented_example_loads_with_its_meaning),
		cmocka_unit_test(realistic_examples_load),
		cmocka_unit_test(examples_decide_what_their_comments_promise),
		cmocka_unit_test(example_private_addresses_need_allowed_ips),
		cmocka_unit_test(include_workdir_defaults),
		cmocka_unit_test(identities),
		cmocka_unit_test(every_error_is_reported),
		cmocka_unit_test(error_names_file_position_path_and_expectation),
		cmocka_unit_test(ports_list_and_port),
		cmocka_unit_test(overlapping_endpoints_must_agree),
		cmocka_unit_test(path_limits),
		cmocka_unit_test(policy_count_limit),
		cmocka_unit_test(endpoint_count_limit),
		cmocka_unit_test(rule_methods_are_normalised),
		cmocka_unit_test(missing_file_is_an_error),
		cmocka_unit_test(malformed_corpus_reports_position_and_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
