/* test_policy_compat.c - the OpenShell compatibility corpus (tests/policy-compat):
 * every valid/NAME.yaml loads, carries the warnings its NAME.expect names and
 * decides its sample requests as upstream does; every invalid/NAME.yaml is
 * refused with a first error containing the key path of its NAME.expect.
 * Each corpus file records the upstream source of its case in a comment. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fdutil.h"
#include "parse.h"
#include "policy.h"

#ifndef POLICY_COMPAT_DIR
#error "POLICY_COMPAT_DIR must be defined by the build"
#endif

#define MAX_FIELDS 9

/* Splits line in place on spaces into at most MAX_FIELDS fields. */
static size_t split(char *line, char *f[MAX_FIELDS])
{
	size_t n = 0;
	for (char *p = line; *p && n < MAX_FIELDS;) {
		while (*p == ' ')
			*p++ = '\0';
		if (!*p)
			break;
		f[n++] = p;
		p += strcspn(p, " ");
	}
	return n;
}

static bool want_allow(const char *name, const char *v)
{
	if (strcmp(v, "allow") != 0 && strcmp(v, "deny") != 0)
		fail_msg("%s: verdict must be allow or deny, got %s", name, v);
	return v[0] == 'a';
}

static uint16_t port_of(const char *name, const char *s)
{
	uint64_t v;
	if (parse_u64_str(s, 1, 65535, &v, NULL) < 0)
		fail_msg("%s: bad port %s", name, s);
	return (uint16_t)v;
}

/* graphql TYPE NAME FIELDS: TYPE "#KEY" is a persisted query sent by KEY
 * alone; NAME "-" an anonymous operation; FIELDS "f1,f2" or "-". */
static bool graphql_allowed(const struct policy_gen *g, const struct policy_endpoint *ep,
			    const char *type, const char *name, char *fields)
{
	const char *fv[16];
	size_t nf = 0;
	for (char *p = fields; strcmp(fields, "-") != 0 && p && nf < 16;) {
		fv[nf++] = p;
		if ((p = strchr(p, ',')))
			*p++ = 0;
	}
	struct policy_graphql_request req = { .type = type[0] == '#' ? NULL : type,
					      .name = strcmp(name, "-") ? name : NULL,
					      .fields = fv,
					      .n_fields = nf,
					      .key = type[0] == '#' ? type + 1 : NULL };
	struct policy_decision r;
	policy_decide_graphql(g, ep, &req, &r);
	return r.verdict != POLICY_DENY;
}

/* One line: connect H P BIN V | request H P BIN METHOD PATH V | address H P BIN IP V
 * | rpc H P BIN RPC_METHOD TOOL V | graphql H P BIN [PATH] TYPE NAME FIELDS V (with PATH,
 * judged by the endpoint the request to PATH routes to, as the proxy does). */
static void check_decision(const char *name, const struct policy_gen *g, char *line)
{
	char *f[MAX_FIELDS];
	size_t n = split(line, f);
	if (n < 5)
		fail_msg("%s: short expectation line", name);
	const char *chain[] = { f[3] };
	uint16_t port = port_of(name, f[2]);
	struct policy_decision d;
	policy_decide_connect(g, f[1], port, chain, 1, &d);
	bool allowed = d.verdict != POLICY_DENY;
	if (!strcmp(f[0], "request") && n == 7) {
		if (allowed) {
			struct policy_decision r;
			policy_decide_routed_request(g, d.endpoint, f[1], port, chain, 1, f[4],
						     f[5], NULL, 0, &r);
			allowed = r.verdict != POLICY_DENY;
		}
		if (allowed != want_allow(name, f[6]))
			fail_msg("%s: request %s %s %s on %s:%s: got %s", name, f[3], f[4], f[5],
				 f[1], f[2], allowed ? "allow" : "deny");
	} else if (!strcmp(f[0], "rpc") && n == 7) {
		/* rpc H P BIN METHOD TOOL V: one JSON-RPC / MCP call ("-": no tool) */
		if (allowed) {
			struct policy_decision r;
			policy_decide_rpc_call(g, d.endpoint, f[4], strcmp(f[5], "-") ? f[5] : NULL,
					       &r);
			allowed = r.verdict != POLICY_DENY;
		}
		if (allowed != want_allow(name, f[6]))
			fail_msg("%s: rpc %s %s on %s:%s: got %s", name, f[4], f[5], f[1], f[2],
				 allowed ? "allow" : "deny");
	} else if (!strcmp(f[0], "graphql") && (n == 8 || n == 9)) {
		char **op = n == 9 ? f + 5 : f + 4;
		const struct policy_endpoint *ep = d.endpoint;
		if (allowed && n == 9)
			ep = policy_route_request(g, d.endpoint, f[1], port, chain, 1, f[4]);
		if (allowed)
			allowed = ep && graphql_allowed(g, ep, op[0], op[1], op[2]);
		if (allowed != want_allow(name, op[3]))
			fail_msg("%s: graphql %s %s {%s} on %s:%s: got %s", name, op[0], op[1],
				 op[2], f[1], f[2], allowed ? "allow" : "deny");
	} else if (!strcmp(f[0], "address") && n == 6) {
		if (allowed) {
			struct ip_addr a;
			if (ip_addr_parse(f[4], &a, NULL) < 0)
				fail_msg("%s: bad address %s", name, f[4]);
			struct policy_decision r;
			policy_decide_address(d.endpoint, &a, port, &r);
			allowed = r.verdict != POLICY_DENY;
		}
		if (allowed != want_allow(name, f[5]))
			fail_msg("%s: address %s for %s:%s: got %s", name, f[4], f[1], f[2],
				 allowed ? "allow" : "deny");
	} else if (!strcmp(f[0], "connect") && n == 5) {
		if (allowed != want_allow(name, f[4]))
			fail_msg("%s: connect %s %s:%s: got %s (%s)", name, f[3], f[1], f[2],
				 allowed ? "allow" : "deny", d.detail);
	} else {
		fail_msg("%s: unknown expectation %s", name, f[0]);
	}
}

static bool has_warning(const struct policy_doc *d, const char *needle)
{
	for (size_t i = 0; i < d->n_warnings; i++)
		if (strstr(d->warnings[i], needle))
			return true;
	return false;
}

static char *read_expect(const char *yaml_path, size_t *len)
{
	char epath[600];
	snprintf(epath, sizeof epath, "%.*s.expect", (int)(strlen(yaml_path) - 5), yaml_path);
	char *text = NULL;
	os_error err = { 0 };
	if (file_read_all(epath, 65536, &text, len, &err) < 0)
		fail_msg("%s: missing sidecar: %s", yaml_path, err.msg);
	return text;
}

static void check_valid(const char *path)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	if (policy_load_file(path, &doc, &diag, &err) < 0)
		fail_msg("%s: refused although valid upstream: %s", path, err.msg);
	size_t len = 0, warns = 0, decisions = 0;
	char *text = read_expect(path, &len);
	bool ok = true;
	for (size_t i = 0; i < doc->n_warnings; i++)
		ok = ok && strstr(doc->warnings[i], path) == doc->warnings[i]; /* file:line:col */
	if (!ok)
		fail_msg("%s: a warning lacks its location", path);
	struct policy_gen *g = NULL;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "warn ", 5)) {
			if (!has_warning(doc, line + 5))
				fail_msg("%s: no warning containing \"%s\"", path, line + 5);
			warns++;
			continue;
		}
		if (!g && !(g = policy_compile(doc, &err)))
			fail_msg("%s: compile: %s", path, err.msg);
		check_decision(path, g, line);
		decisions++;
	}
	if (decisions == 0)
		fail_msg("%s: no sample requests", path);
	if (warns == 0 && doc->n_warnings != 0 && !g)
		fail_msg("%s: unexpected warnings", path);
	if (g)
		policy_unref(g);
	else
		policy_doc_free(doc);
	free(text);
}

static void check_invalid(const char *path)
{
	struct policy_doc *doc = NULL;
	struct policy_diag diag = { 0 };
	os_error err = { 0 };
	if (policy_load_file(path, &doc, &diag, &err) == 0)
		fail_msg("%s: loaded although invalid upstream", path);
	size_t len = 0;
	char *want = read_expect(path, &len);
	while (len && (want[len - 1] == '\n' || want[len - 1] == ' '))
		want[--len] = '\0';
	if (diag.n == 0 || !strstr(diag.msgs[0], want) ||
	    strstr(diag.msgs[0], path) != diag.msgs[0])
		fail_msg("%s: first error \"%s\" lacks \"%s\"", path, diag.n ? diag.msgs[0] : "",
			 want);
	policy_diag_free(&diag);
	free(want);
}

static int run_dir(const char *sub, void (*check)(const char *path))
{
	char dir[512], path[1024];
	snprintf(dir, sizeof dir, "%s/%s", POLICY_COMPAT_DIR, sub);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len <= 5 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		check(path);
		n++;
	}
	closedir(d);
	return n;
}

static void valid_upstream_policies_load_and_decide_alike(void **state)
{
	assert_true(run_dir("valid", check_valid) >= 12);
}

static void invalid_upstream_policies_are_refused_naming_the_key(void **state)
{
	assert_true(run_dir("invalid", check_invalid) >= 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_upstream_policies_load_and_decide_alike),
		cmocka_unit_test(invalid_upstream_policies_are_refused_naming_the_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
