/* test_policy_decide.c - unit tests of the compiled policy's decisions: host
 * globs, ports, binaries, L4 choice of policy, L7 REST rules, canonicalisation
 * attacks, SSRF classes, credential bindings and generation swaps. Every
 * negative case sits beside the positive control that shares its setup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "policy_fixture.h"

static const char policy_text[] =
	"version: 1\n"
	"network_policies:\n"
	"  zeta:\n"
	"    endpoints:\n"
	"      - { host: api.example.com, port: 443, protocol: rest, access: full }\n"
	"    binaries: [{ path: /usr/bin/curl }]\n"
	"  alpha:\n"
	"    endpoints:\n"
	"      - host: api.example.com\n"
	"        port: 443\n"
	"        protocol: rest\n"
	"        access: read-only\n"
	"        deny_rules: [{ method: \"*\", path: \"/admin/**\" }]\n"
	"      - { host: \"*.one.example\", port: 443 }\n"
	"      - { host: \"**.many.example\", port: 443 }\n"
	"      - { host: multi.example.com, ports: [80, 8080] }\n"
	"    binaries: [{ path: /usr/bin/curl }]\n"
	"  beta:\n"
	"    endpoints:\n"
	"      - { host: beta.example.com, port: 443 }\n"
	"    binaries:\n"
	"      - { path: /usr/bin/git }\n"
	"      - { path: \"/opt/*/bin/tool\" }\n"
	"      - { path: \"/opt/**/agent\" }\n"
	"  rules_ep:\n"
	"    endpoints:\n"
	"      - host: rules.example.com\n"
	"        port: 443\n"
	"        protocol: rest\n"
	"        rules:\n"
	"          - allow: { method: GET, path: \"/repos/**\" }\n"
	"          - allow: { method: post, path: \"/repos/*/issues\" }\n"
	"          - allow:\n"
	"              method: GET\n"
	"              path: /search\n"
	"              query: { q: \"lang-*\", page: { any: [\"1\", \"2\"] } }\n"
	"        deny_rules:\n"
	"          - { method: GET, path: \"/repos/secret/**\" }\n"
	"          - { method: \"*\", path: /search, query: { q: \"*password*\" } }\n"
	"          - { method: \"*\", path: /search, query: { q: \"*secret plan*\" } }\n"
	"    binaries: [{ path: /usr/bin/curl }]\n"
	"  audit_ep:\n"
	"    endpoints:\n"
	"      - host: audit.example.com\n"
	"        port: 443\n"
	"        protocol: rest\n"
	"        enforcement: audit\n"
	"        rules: [{ allow: { method: GET, path: /ok } }]\n"
	"    binaries: [{ path: /usr/bin/curl }]\n"
	"  ssrf:\n"
	"    endpoints:\n"
	"      - { host: internal.example.com, port: 5432, allowed_ips: [\"10.0.5.0/24\"] }\n"
	"      - { host: kube.example.com, port: 10250, allowed_ips: [\"10.0.9.0/24\"] }\n"
	"      - { host: 10.0.7.7, port: 443 }\n"
	"      - { host: public.example.com, port: 443 }\n"
	"      - { host: token.example.com, port: 443, credential_binding: { provider: github },\n"
	"          allow_uninspected_credentials: true }\n"
	"    binaries: [{ path: /usr/bin/curl }]\n";

static const char *const curl[] = { "/usr/bin/curl" };
static const char *const git[] = { "/usr/bin/git" };

static int setup(void **state)
{
	return policy_fixture_setup(state, "t.yaml", policy_text, sizeof policy_text - 1);
}

static struct policy_decision connect_(void **state, const char *host, uint16_t port,
				       const char *const *chain, size_t n)
{
	struct policy_decision d;
	policy_decide_connect(*state, host, port, chain, n, &d);
	return d;
}

#define ALLOWS(host, port, chain)                                                                  \
	assert_int_equal(connect_(state, host, port, chain, ARRAY_N(chain)).verdict, POLICY_ALLOW)
#define DENIES(host, port, chain, why)                                                             \
	do {                                                                                       \
		struct policy_decision d_ = connect_(state, host, port, chain, ARRAY_N(chain));    \
		assert_int_equal(d_.verdict, POLICY_DENY);                                         \
		assert_string_equal(policy_reason_name(d_.reason), why);                           \
	} while (0)
#define ARRAY_N(a) (sizeof(a) / sizeof((a)[0]))

static void exact_host_is_case_insensitive_and_ignores_trailing_dot(void **state)
{
	ALLOWS("api.example.com", 443, curl);
	ALLOWS("API.Example.COM.", 443, curl);
	DENIES("api.example.com.evil", 443, curl, "no_matching_endpoint");
	DENIES("xapi.example.com", 443, curl, "no_matching_endpoint");
}

static void single_label_glob(void **state)
{
	ALLOWS("a.one.example", 443, curl);
	DENIES("a.b.one.example", 443, curl, "no_matching_endpoint");
	DENIES("one.example", 443, curl, "no_matching_endpoint"); /* never the bare domain */
}

static void multi_label_glob(void **state)
{
	ALLOWS("a.many.example", 443, curl);
	ALLOWS("a.b.c.many.example", 443, curl);
	DENIES("many.example", 443, curl, "no_matching_endpoint");
	DENIES("amany.example", 443, curl, "no_matching_endpoint");
}

static void idn_and_garbage_hosts_are_invalid(void **state)
{
	ALLOWS("xn--bcher-kva.one.example", 443, curl); /* punycode is ASCII: fine */
	DENIES("b\xc3\xbc"
	       "cher.one.example",
	       443, curl, "invalid_host");
	DENIES("a..one.example", 443, curl, "invalid_host");
	DENIES("", 443, curl, "invalid_host");
}

static void ports_must_match(void **state)
{
	ALLOWS("multi.example.com", 80, curl);
	ALLOWS("multi.example.com", 8080, curl);
	DENIES("multi.example.com", 443, curl, "port_not_allowed");
	DENIES("api.example.com", 444, curl, "port_not_allowed");
}

static void endpoint_and_binary_must_share_a_policy(void **state)
{
	ALLOWS("beta.example.com", 443, git);
	/* curl is allowed by other policies, git reaches beta: not the mix. */
	DENIES("beta.example.com", 443, curl, "binary_not_allowed");
	DENIES("api.example.com", 443, git, "binary_not_allowed");
}

static void any_ancestor_binary_matches(void **state)
{
	const char *const via_curl[] = { "/usr/bin/python3", "/bin/sh", "/usr/bin/curl" };
	const char *const alone[] = { "/usr/bin/python3", "/bin/sh" };
	ALLOWS("api.example.com", 443, via_curl);
	DENIES("api.example.com", 443, alone, "binary_not_allowed");
	assert_int_equal(connect_(state, "api.example.com", 443, curl, 0).reason,
			 POLICY_R_BINARY_UNKNOWN);
}

static void binary_globs(void **state)
{
	const char *const one[] = { "/opt/x/bin/tool" };
	const char *const two[] = { "/opt/x/y/bin/tool" };
	const char *const deep[] = { "/opt/a/b/c/agent" };
	const char *const other[] = { "/opt/a/b/c/agent2" };
	ALLOWS("beta.example.com", 443, one);
	DENIES("beta.example.com", 443, two, "binary_not_allowed"); /* `*` stays in a component */
	ALLOWS("beta.example.com", 443, deep); /* `**` crosses them */
	DENIES("beta.example.com", 443, other, "binary_not_allowed");
}

static void smallest_matching_policy_is_reported(void **state)
{
	struct policy_decision d = connect_(state, "api.example.com", 443, curl, 1);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	assert_string_equal(d.policy, "alpha"); /* zeta matches too */
	assert_non_null(d.endpoint);
	assert_int_equal(d.endpoint->access, POLICY_ACCESS_READ_ONLY);
	assert_string_equal(policy_reason_name(d.reason), "allowed");
}

static void metadata_names_are_always_denied(void **state)
{
	DENIES("metadata.google.internal", 80, curl, "metadata_host");
	DENIES("unknown.example.org", 443, curl, "no_matching_endpoint");
}

/* ---- L7 ---- */

static struct policy_decision req(void **state, const char *host, const char *method,
				  const char *target, char *canon, size_t cap)
{
	struct policy_decision l4 = connect_(state, host, 443, curl, 1);
	assert_int_equal(l4.verdict, POLICY_ALLOW);
	struct policy_decision d;
	policy_decide_request(*state, l4.endpoint, method, target, canon, cap, &d);
	return d;
}

#define L7(host, m, t, verdict_, why)                                                              \
	do {                                                                                       \
		struct policy_decision d_ = req(state, host, m, t, NULL, 0);                       \
		assert_string_equal(policy_reason_name(d_.reason), why);                           \
		assert_int_equal(d_.verdict, verdict_);                                            \
	} while (0)

static void access_preset_read_only(void **state)
{
	L7("api.example.com", "GET", "/anything/at/all", POLICY_ALLOW, "allowed");
	L7("api.example.com", "HEAD", "/x", POLICY_ALLOW, "allowed");
	L7("api.example.com", "OPTIONS", "/x", POLICY_ALLOW, "allowed");
	L7("api.example.com", "POST", "/x", POLICY_DENY, "no_matching_rule");
	L7("api.example.com", "DELETE", "/x", POLICY_DENY, "no_matching_rule");
	struct policy_decision d = req(state, "api.example.com", "GET", "/x", NULL, 0);
	assert_string_equal(d.rule, "access:read-only");
	assert_string_equal(d.policy, "alpha");
}

static void deny_rules_win_over_access(void **state)
{
	L7("api.example.com", "GET", "/administrator", POLICY_ALLOW, "allowed");
	L7("api.example.com", "GET", "/admin", POLICY_DENY, "deny_rule"); /* `**` matches zero */
	L7("api.example.com", "GET", "/admin/users", POLICY_DENY, "deny_rule");
	struct policy_decision d = req(state, "api.example.com", "GET", "/admin/users", NULL, 0);
	assert_string_equal(d.rule, "deny_rules[0]");
}

static void rules_methods_and_head(void **state)
{
	L7("rules.example.com", "GET", "/repos/a/b", POLICY_ALLOW, "allowed");
	L7("rules.example.com", "HEAD", "/repos/a/b", POLICY_ALLOW,
	   "allowed"); /* GET covers HEAD */
	L7("rules.example.com", "POST", "/repos/a/issues", POLICY_ALLOW, "allowed");
	L7("rules.example.com", "post", "/repos/a/issues", POLICY_ALLOW, "allowed");
	L7("rules.example.com", "POST", "/repos/a/b/issues", POLICY_DENY, "no_matching_rule");
	L7("rules.example.com", "DELETE", "/repos/a/b", POLICY_DENY, "no_matching_rule");
	L7("rules.example.com", "GET", "/repos/secret/x", POLICY_DENY, "deny_rule");
	/* GET in a deny rule covers HEAD as well: no side door. */
	L7("rules.example.com", "HEAD", "/repos/secret/x", POLICY_DENY, "deny_rule");
	L7("rules.example.com", "GE T", "/repos/a", POLICY_DENY, "invalid_method");
	struct policy_decision d =
		req(state, "rules.example.com", "POST", "/repos/a/issues", NULL, 0);
	assert_string_equal(d.rule, "rules[1]");
}

static void query_matchers(void **state)
{
	L7("rules.example.com", "GET", "/search?q=lang-c&page=1", POLICY_ALLOW, "allowed");
	L7("rules.example.com", "GET", "/search?page=2&q=lang-%63", POLICY_ALLOW, "allowed");
	L7("rules.example.com", "GET", "/search?q=lang-c&page=3", POLICY_DENY, "no_matching_rule");
	L7("rules.example.com", "GET", "/search?q=lang-c", POLICY_DENY, "no_matching_rule");
	/* Allow: every value of a repeated parameter must match. */
	L7("rules.example.com", "GET", "/search?q=lang-c&q=other&page=1", POLICY_DENY,
	   "no_matching_rule");
	/* Deny: one matching value is enough, and deny wins. */
	L7("rules.example.com", "GET", "/search?q=lang-c&q=my%70assword&page=1", POLICY_DENY,
	   "deny_rule");
	L7("rules.example.com", "GET", "/search?q=lang-c&page=1&x=%zz", POLICY_DENY, "deny_rule");
}

/* '+' is a space to web frameworks and a '+' to plain URL parsers, ';' a
 * separator to some: a deny rule hits in any reading, an allow rule must
 * hold in all. */
static void query_plus_is_read_both_ways(void **state)
{
	static const struct {
		const char *target, *why; /* deny_rule, no_matching_rule or allowed */
	} cases[] = {
		{ "/search?q=lang-secret%20plan&page=1", "deny_rule" },
		{ "/search?q=lang-secret+plan&page=1", "deny_rule" },
		{ "/search?q=lang-secret+plan+b&page=1", "deny_rule" },
		/* Control: '+' elsewhere is harmless and both readings match lang-*. */
		{ "/search?q=lang-c+d&page=1", "allowed" },
		{ "/search?q=lang-secretplan&page=1", "allowed" },
		/* A name that only one reading calls q does not satisfy the allow rule. */
		{ "/search?q+=lang-c&page=1", "no_matching_rule" },
		/* ';' separates parameters for some upstreams (Rack before 3,
		 * Python's parse_qs before 3.9.2): a deny rule hits in that
		 * reading too, and an allow rule must hold in it. */
		{ "/search?page=1;q=my%70assword", "deny_rule" },
		{ "/search?q=lang-c;q=my-password&page=1", "deny_rule" },
		{ "/search?q=lang-c&page=1;q=secret+plan", "deny_rule" },
		/* `page=1;x=y` is page=1 to one reading and "1;x=y" to another. */
		{ "/search?q=lang-c&page=1;x=y", "no_matching_rule" },
		/* Controls: the same parameters with '&', an encoded ';' in a value. */
		{ "/search?q=lang-c&page=1&x=y", "allowed" },
		{ "/search?q=lang-c%3Bd&page=1", "allowed" },
		/* Names as PHP and Rack register them: ` q` and `q[]` are q. */
		{ "/search?q=lang-c&page=1&+q=my-password", "deny_rule" },
		{ "/search?q=lang-c&page=1&q[]=my-password", "deny_rule" },
		{ "/search?q=lang-c&page=1&%20q=other", "no_matching_rule" },
		{ "/search?q=lang-c&page=1&qq=my-password&q.x=my-password", "allowed" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool allowed = !strcmp(cases[i].why, "allowed");
		L7("rules.example.com", "GET", cases[i].target,
		   allowed ? POLICY_ALLOW : POLICY_DENY, cases[i].why);
	}
}

/* 64 bare names filling the 4096-byte cap: each decoded name needs two NULs
 * more than its text, which overran a buffer sized by the query alone
 * (ASan in the sanitized unit build reports it). */
static void query_at_the_caps_fits(void **state)
{
	char path[8 + 4096 + 2] = "/search?";
	size_t o = strlen(path), name_len = (4096 - 63) / 64;
	for (int i = 0; i < 64; i++) {
		if (i)
			path[o++] = '&';
		size_t len = i < 63 ? name_len : 4096 - 63 - 63 * name_len;
		memset(path + o, 'a' + (i % 26), len);
		o += len;
	}
	path[o] = '\0';
	assert_int_equal(o - 8, 4096);
	L7("rules.example.com", "GET", path, POLICY_DENY, "no_matching_rule");
	/* One byte over the cap: undecidable, so the deny rules hit. */
	path[o++] = 'z';
	path[o] = '\0';
	L7("rules.example.com", "GET", path, POLICY_DENY, "deny_rule");
}

static void detail_never_contains_the_query(void **state)
{
	struct policy_decision d =
		req(state, "rules.example.com", "GET", "/search?q=lang-password&page=1", NULL, 0);
	assert_int_equal(d.verdict, POLICY_DENY);
	assert_null(strchr(d.detail, '?'));
	assert_null(strstr(d.detail, "password"));
	assert_non_null(strstr(d.detail, "/search"));
}

static void canonical_path_is_matched_and_forwarded(void **state)
{
	char canon[256];
	struct policy_decision d =
		req(state, "rules.example.com", "GET", "//repos//a/./b?x=1", canon, sizeof canon);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	assert_string_equal(canon, "/repos/a/b");
	/* %2e%2e resolves before matching: the deny rule still sees it. */
	d = req(state, "rules.example.com", "GET", "/repos/a/%2e%2e/secret/x", canon, sizeof canon);
	assert_string_equal(canon, "/repos/secret/x");
	assert_int_equal(d.reason, POLICY_R_DENY_RULE);
	d = req(state, "api.example.com", "GET", "/x/%2E%2E/admin/users", NULL, 0);
	assert_int_equal(d.reason, POLICY_R_DENY_RULE);
}

static void canonicalisation_attacks_are_rejected(void **state)
{
	L7("rules.example.com", "GET", "/repos/a/b", POLICY_ALLOW, "allowed"); /* control */
	L7("rules.example.com", "GET", "/repos/..;/secret/x", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "/repos/a%2Fb", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "/repos/a%2fb", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "/repos/\x01x", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "/repos/%00x", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "/../repos/a", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "/repos/%2e%2e/%2e%2e/x", POLICY_DENY, "path_rejected");
	L7("rules.example.com", "GET", "repos/a", POLICY_DENY, "path_rejected");
	/* Even audit does not forward what has no single meaning. */
	L7("audit.example.com", "GET", "/ok/%2F", POLICY_DENY, "path_rejected");
}

static void audit_forwards_and_records(void **state)
{
	L7("audit.example.com", "GET", "/ok", POLICY_ALLOW, "allowed");
	L7("audit.example.com", "POST", "/ok", POLICY_AUDIT, "no_matching_rule");
	L7("rules.example.com", "POST", "/ok", POLICY_DENY, "no_matching_rule"); /* enforce */
}

static void l4_only_endpoint_is_not_inspected(void **state)
{
	L7("public.example.com", "DELETE", "/anything", POLICY_ALLOW, "not_inspected");
}

/* ---- SSRF ---- */

static enum policy_reason addr(void **state, const char *host, const char *ip, uint16_t port)
{
	struct policy_decision l4 = connect_(state, host, port, curl, 1);
	assert_int_equal(l4.verdict, POLICY_ALLOW);
	struct ip_addr a;
	os_error err = { 0 };
	assert_int_equal(ip_addr_parse(ip, &a, &err), 0);
	struct policy_decision d;
	policy_decide_address(l4.endpoint, &a, port, &d);
	assert_int_equal(d.verdict == POLICY_ALLOW, d.reason == POLICY_R_ALLOWED);
	return d.reason;
}

static void ssrf_always_blocked_classes(void **state)
{
	static const char *const blocked[] = {
		"127.0.0.1",
		"127.1.2.3",
		"::1",
		"::ffff:127.0.0.1",
		"0.0.0.0",
		"::",
		"169.254.169.254",
		"169.254.170.2",
		"fd00:ec2::254",
		"100.100.100.200",
		"168.63.129.16",
		"fe80::1",
		"::ffff:169.254.169.254",
	};
	assert_int_equal(addr(state, "public.example.com", "93.184.216.34", 443), POLICY_R_ALLOWED);
	for (size_t i = 0; i < ARRAY_N(blocked); i++) {
		enum policy_reason r = addr(state, "public.example.com", blocked[i], 443);
		if (r != POLICY_R_SSRF_ALWAYS_BLOCKED)
			fail_msg("%s: %s", blocked[i], policy_reason_name(r));
		/* allowed_ips can never open them either */
		assert_int_equal(addr(state, "internal.example.com", blocked[i], 5432),
				 POLICY_R_SSRF_ALWAYS_BLOCKED);
	}
}

static void ssrf_internal_needs_allowed_ips(void **state)
{
	assert_int_equal(addr(state, "public.example.com", "10.0.5.9", 443),
			 POLICY_R_SSRF_INTERNAL);
	assert_int_equal(addr(state, "public.example.com", "192.168.1.1", 443),
			 POLICY_R_SSRF_INTERNAL);
	assert_int_equal(addr(state, "public.example.com", "172.16.0.1", 443),
			 POLICY_R_SSRF_INTERNAL);
	assert_int_equal(addr(state, "internal.example.com", "10.0.5.9", 5432), POLICY_R_ALLOWED);
	assert_int_equal(addr(state, "internal.example.com", "10.0.6.1", 5432),
			 POLICY_R_SSRF_INTERNAL);
}

static void ssrf_literal_ip_host_implies_allowed_ips(void **state)
{
	assert_int_equal(addr(state, "10.0.7.7", "10.0.7.7", 443), POLICY_R_ALLOWED);
	assert_int_equal(addr(state, "10.0.7.7", "10.0.7.8", 443), POLICY_R_SSRF_INTERNAL);
}

static void ssrf_control_plane_port_inside_allowed_ips(void **state)
{
	assert_int_equal(addr(state, "kube.example.com", "10.0.9.1", 10250),
			 POLICY_R_SSRF_CONTROL_PLANE_PORT);
	struct policy_decision l4 = connect_(state, "kube.example.com", 10250, curl, 1);
	struct ip_addr a;
	assert_int_equal(ip_addr_parse("10.0.9.1", &a, NULL), 0);
	struct policy_decision d;
	policy_decide_address(l4.endpoint, &a, 443, &d); /* control: another port */
	assert_int_equal(d.verdict, POLICY_ALLOW);
}

/* The proxy injects a provider's secret only where the endpoint that
 * admitted the request binds that provider: the decision carries it. */
static void credential_bindings(void **state)
{
	struct policy_decision d = connect_(state, "TOKEN.example.com.", 443, curl, 1);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	assert_non_null(d.endpoint);
	assert_non_null(d.endpoint->credential_provider);
	assert_string_equal(d.endpoint->credential_provider, "github");
	d = connect_(state, "api.example.com", 443, curl, 1); /* control: no binding */
	assert_int_equal(d.verdict, POLICY_ALLOW);
	assert_null(d.endpoint->credential_provider);
}

static void generations_swap_while_old_ones_stay_valid(void **state)
{
	struct policy_holder *h = policy_holder_new(policy_ref(*state));
	assert_non_null(h);
	struct policy_gen *old = policy_holder_acquire(h);
	struct policy_doc *doc = NULL;
	static const char next[] = "version: 1\nnetwork_policies:\n  n:\n    endpoints:\n"
				   "      - { host: new.example.com, port: 443 }\n"
				   "    binaries: [{ path: /usr/bin/curl }]\n";
	assert_int_equal(policy_parse("n.yaml", next, sizeof next - 1, &doc, NULL, NULL), 0);
	policy_holder_swap(h, policy_compile(doc, NULL));
	struct policy_gen *cur = policy_holder_acquire(h);
	struct policy_decision d;
	policy_decide_connect(cur, "new.example.com", 443, curl, 1, &d);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	policy_decide_connect(cur, "api.example.com", 443, curl, 1, &d);
	assert_int_equal(d.verdict, POLICY_DENY);
	/* The request in flight keeps its generation. */
	policy_decide_connect(old, "api.example.com", 443, curl, 1, &d);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	policy_unref(old);
	policy_unref(cur);
	policy_holder_free(h);
}

/* Per-request routing: a more specific path of another policy captures a
 * request only for the callers that policy admits; among equal paths the
 * smallest policy name judges; endpoint-only (no chain) sees every policy. */
static void routing_follows_the_caller_and_the_path(void **state)
{
	static const char text[] =
		"version: 1\n"
		"network_policies:\n"
		"  open:\n"
		"    endpoints:\n"
		"      - { host: r.example.com, port: 443, protocol: rest, access: read-only }\n"
		"    binaries: [{ path: /usr/bin/curl }, { path: /usr/bin/git }]\n"
		"  secret:\n"
		"    endpoints:\n"
		"      - host: r.example.com\n"
		"        port: 443\n"
		"        protocol: rest\n"
		"        path: \"/s/**\"\n"
		"        access: full\n"
		"        credential_binding: { provider: vault }\n"
		"    binaries: [{ path: /usr/bin/git }]\n";
	struct policy_doc *doc = NULL;
	assert_int_equal(policy_parse("r.yaml", text, sizeof text - 1, &doc, NULL, NULL), 0);
	struct policy_gen *g = policy_compile(doc, NULL);
	assert_non_null(g);
	struct policy_decision d, r;
	const char *const *who[] = { curl, git };
	for (size_t i = 0; i < 2; i++) {
		policy_decide_connect(g, "r.example.com", 443, who[i], 1, &d);
		assert_int_equal(d.verdict, POLICY_ALLOW);
		policy_decide_routed_request(g, d.endpoint, "r.example.com", 443, who[i], 1, "GET",
					     "/s/x", NULL, 0, &r);
		assert_int_equal(r.verdict, POLICY_ALLOW);
		/* curl is not admitted by "secret": its /s/ request stays unbound. */
		assert_string_equal(r.policy, i == 0 ? "open" : "secret");
		assert_true((r.endpoint->credential_provider != NULL) == (i == 1));
		policy_decide_routed_request(g, d.endpoint, "r.example.com", 443, who[i], 1, "GET",
					     "/other", NULL, 0, &r);
		assert_string_equal(r.policy, "open"); /* control: outside /s/ */
	}
	/* The encoded form of the bound prefix routes (and is refused) there too. */
	policy_decide_connect(g, "r.example.com", 443, git, 1, &d);
	policy_decide_routed_request(g, d.endpoint, "r.example.com", 443, git, 1, "GET", "/%73/x",
				     NULL, 0, &r);
	assert_string_equal(r.policy, "secret");
	/* Endpoint-only mode: every policy's endpoints compete. */
	assert_ptr_equal(policy_route_request(g, d.endpoint, "r.example.com", 443, NULL, 0, "/s/y"),
			 r.endpoint);
	assert_true(policy_route_needs_tls(g, d.endpoint, "r.example.com", 443, curl, 1));
	policy_unref(g);
}

/* protocol sql (reserved upstream, relayed uninspected): its connections
 * are L4 tunnels (no TLS terminated), and an HTTP request that a shared
 * host:port routes to it is denied, not waved through as "not inspected". */
static void sql_endpoints_are_l4_tunnels_and_judge_no_http(void **state)
{
	static const char text[] =
		"version: 1\n"
		"network_policies:\n"
		"  db:\n"
		"    endpoints:\n"
		"      - { host: db.example.com, port: 5432, protocol: sql, access: full }\n"
		"      - { host: mixed.example.com, port: 8443, protocol: sql, access: full }\n"
		"      - host: mixed.example.com\n"
		"        port: 8443\n"
		"        protocol: rest\n"
		"        path: \"/api/**\"\n"
		"        access: full\n"
		"    binaries: [{ path: /usr/bin/curl }]\n";
	(void)state;
	struct policy_doc *doc = NULL;
	assert_int_equal(policy_parse("s.yaml", text, sizeof text - 1, &doc, NULL, NULL), 0);
	assert_int_equal(doc->networks[0].endpoints[0].enforcement, POLICY_ENF_AUDIT);
	assert_int_equal(doc->networks[0].endpoints[0].n_rules, 0);
	struct policy_gen *g = policy_compile(doc, NULL);
	assert_non_null(g);
	struct policy_decision d, r;
	policy_decide_connect(g, "db.example.com", 5432, curl, 1, &d);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	assert_false(policy_route_needs_tls(g, d.endpoint, "db.example.com", 5432, curl, 1));
	policy_decide_connect(g, "mixed.example.com", 8443, curl, 1, &d);
	assert_int_equal(d.verdict, POLICY_ALLOW);
	assert_true(policy_route_needs_tls(g, d.endpoint, "mixed.example.com", 8443, curl, 1));
	policy_decide_routed_request(g, d.endpoint, "mixed.example.com", 8443, curl, 1, "GET",
				     "/other", NULL, 0, &r);
	assert_int_equal(r.verdict, POLICY_DENY);
	assert_string_equal(policy_reason_name(r.reason), "no_matching_rule");
	policy_decide_routed_request(g, d.endpoint, "mixed.example.com", 8443, curl, 1, "GET",
				     "/api/x", NULL, 0, &r); /* control: the rest endpoint's path */
	assert_int_equal(r.verdict, POLICY_ALLOW);
	policy_unref(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exact_host_is_case_insensitive_and_ignores_trailing_dot),
		cmocka_unit_test(routing_follows_the_caller_and_the_path),
		cmocka_unit_test(sql_endpoints_are_l4_tunnels_and_judge_no_http),
		cmocka_unit_test(single_label_glob),
		cmocka_unit_test(multi_label_glob),
		cmocka_unit_test(idn_and_garbage_hosts_are_invalid),
		cmocka_unit_test(ports_must_match),
		cmocka_unit_test(endpoint_and_binary_must_share_a_policy),
		cmocka_unit_test(any_ancestor_binary_matches),
		cmocka_unit_test(binary_globs),
		cmocka_unit_test(smallest_matching_policy_is_reported),
		cmocka_unit_test(metadata_names_are_always_denied),
		cmocka_unit_test(access_preset_read_only),
		cmocka_unit_test(deny_rules_win_over_access),
		cmocka_unit_test(rules_methods_and_head),
		cmocka_unit_test(query_matchers),
		cmocka_unit_test(query_plus_is_read_both_ways),
		cmocka_unit_test(query_at_the_caps_fits),
		cmocka_unit_test(detail_never_contains_the_query),
		cmocka_unit_test(canonical_path_is_matched_and_forwarded),
		cmocka_unit_test(canonicalisation_attacks_are_rejected),
		cmocka_unit_test(audit_forwards_and_records),
		cmocka_unit_test(l4_only_endpoint_is_not_inspected),
		cmocka_unit_test(ssrf_always_blocked_classes),
		cmocka_unit_test(ssrf_internal_needs_allowed_ips),
		cmocka_unit_test(ssrf_literal_ip_host_implies_allowed_ips),
		cmocka_unit_test(ssrf_control_plane_port_inside_allowed_ips),
		cmocka_unit_test(credential_bindings),
		cmocka_unit_test(generations_swap_while_old_ones_stay_valid),
	};
	return cmocka_run_group_tests(tests, setup, policy_fixture_teardown);
}
