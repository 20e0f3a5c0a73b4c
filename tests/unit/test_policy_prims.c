/* test_policy_prims.c - unit tests of the policy matching primitives: host
 * normalisation and globs, path globs, request-path canonicalisation and the
 * SSRF classification. Every refusal sits beside an accepted control. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "canon.h"
#include "hostglob.h"
#include "pathglob.h"
#include "policy_gen_int.h"
#include "ssrf.h"

/* ---- helpers ---- */

static int norm(const char *in, char *out)
{
	os_error err = { 0 };
	return host_normalize(in, strlen(in), out, HOST_NAME_CAP, &err);
}

static int pat(const char *in, char *out, os_error *err)
{
	return host_pattern_normalize(in, strlen(in), out, HOST_NAME_CAP, err);
}

/* Normalises both sides as the engine would, then matches. */
static bool hmatch(const char *pattern, const char *host)
{
	char p[HOST_NAME_CAP], h[HOST_NAME_CAP];
	assert_int_equal(pat(pattern, p, NULL), 0);
	assert_int_equal(norm(host, h), 0);
	return host_pattern_match(p, h);
}

static enum canon_result canon(const char *in, char *out, size_t cap)
{
	return canon_request_path(in, strlen(in), out, cap, NULL, NULL);
}

static void assert_canon(const char *in, const char *want)
{
	char out[256];
	enum canon_result r = canon(in, out, sizeof out);
	if (r != CANON_OK)
		fail_msg("canon(\"%s\") = %s, want ok", in, canon_result_name(r));
	assert_string_equal(out, want);
}

static void assert_canon_refused(const char *in, enum canon_result want)
{
	char out[256];
	enum canon_result r = canon(in, out, sizeof out);
	if (r != want)
		fail_msg("canon(\"%s\") = %s, want %s", in, canon_result_name(r),
			 canon_result_name(want));
	assert_string_equal(out, "");
}

static struct ip_addr ip(const char *s)
{
	struct ip_addr a;
	os_error err = { 0 };
	if (ip_addr_parse(s, &a, &err) < 0)
		fail_msg("ip_addr_parse(%s): %s", s, err.msg);
	return a;
}

static enum addr_class cls(const char *s)
{
	struct ip_addr a = ip(s);
	const char *why = NULL;
	enum addr_class c = ip_addr_classify(&a, &why);
	assert_non_null(why);
	return c;
}

static struct cidr cidr(const char *s)
{
	struct cidr c;
	os_error err = { 0 };
	if (cidr_parse(s, &c, &err) < 0)
		fail_msg("cidr_parse(%s): %s", s, err.msg);
	return c;
}

/* ---- hosts ---- */

static void host_normalize_lowercases_and_strips_one_trailing_dot(void **state)
{
	char out[HOST_NAME_CAP];
	assert_int_equal(norm("API.GitHub.COM.", out), 0);
	assert_string_equal(out, "api.github.com");
	assert_int_equal(norm("xn--bcher-kva.example", out), 0); /* punycode passes */
	assert_string_equal(out, "xn--bcher-kva.example");
	assert_int_equal(norm("api.github.com..", out), -1); /* only one dot */
	assert_int_equal(norm("a..b", out), -1);
	assert_int_equal(norm(".a", out), -1);
	assert_int_equal(norm("", out), -1);
	assert_int_equal(norm(".", out), -1);
}

static void host_normalize_refuses_non_ascii_and_odd_bytes(void **state)
{
	char out[HOST_NAME_CAP];
	os_error err = { 0 };
	const char *idn = "b\xc3\xbc"
			  "cher.example";
	assert_int_equal(host_normalize(idn, strlen(idn), out, sizeof out, &err), -1);
	assert_non_null(strstr(err.msg, "punycode"));
	assert_int_equal(norm("bucher.example", out), 0);
	assert_int_equal(norm("a b.example", out), -1);
	assert_int_equal(norm("a/b.example", out), -1);
	assert_int_equal(norm("a*b.example", out), -1);
	assert_int_equal(norm("[::1]", out), -1); /* brackets are the URL's, not the host's */
	assert_int_equal(norm("under_score-ok.example", out), 0);
}

static void host_normalize_enforces_length_limits(void **state)
{
	char out[HOST_NAME_CAP], name[300];
	memset(name, 'a', 63);
	memcpy(name + 63, ".example", 9);
	assert_int_equal(norm(name, out), 0); /* 63-byte label: ok */
	memset(name, 'a', 64);
	memcpy(name + 64, ".example", 9);
	assert_int_equal(norm(name, out), -1);
	/* 253 bytes in labels of 49 + dots: ok; 254: refused */
	for (int i = 0; i < 253; i++)
		name[i] = (i % 50 == 49) ? '.' : 'a';
	name[253] = '\0';
	assert_int_equal(norm(name, out), 0);
	name[253] = 'a';
	name[254] = '\0';
	assert_int_equal(norm(name, out), -1);
	os_error err = { 0 };
	assert_int_equal(host_normalize("abc.de", 6, out, 6, &err), -1); /* no room for NUL */
	assert_int_equal(host_normalize("abc.de", 6, out, 7, &err), 0);
}

static void host_normalize_refuses_numeric_non_dotted_quads(void **state)
{
	char out[HOST_NAME_CAP];
	assert_int_equal(norm("127.0.0.1", out), 0);
	assert_string_equal(out, "127.0.0.1");
	assert_int_equal(norm("127.0.0.1.", out), 0);
	assert_string_equal(out, "127.0.0.1");
	assert_int_equal(norm("0177.0.0.1", out), -1); /* octal */
	assert_int_equal(norm("0x7f.0.0.1", out), -1); /* hex */
	assert_int_equal(norm("0x7f000001", out), -1);
	assert_int_equal(norm("2130706433", out), -1); /* decimal */
	assert_int_equal(norm("127.1", out), -1); /* short form */
	assert_int_equal(norm("1.2.3.4.5", out), -1);
	assert_int_equal(norm("example.0x", out), -1);
	assert_int_equal(norm("1.example", out), 0); /* numeric first label is a name */
	assert_int_equal(norm("example.0xg", out), 0);
}

static void host_normalize_canonicalises_ipv6(void **state)
{
	char out[HOST_NAME_CAP];
	assert_int_equal(norm("FD00:EC2:0::254", out), 0);
	assert_string_equal(out, "fd00:ec2::254");
	assert_int_equal(norm("::ffff:127.0.0.1", out), 0);
	assert_int_equal(norm("fe80::1%eth0", out), -1); /* zone ids refused */
	assert_int_equal(norm("1:2:3:4:5:6:7:8:9", out), -1);
	os_error err = { 0 };
	assert_int_equal(host_normalize("::1\0x", 5, out, sizeof out, &err), -1); /* NUL inside */
	assert_int_equal(host_normalize("::1\0x", 3, out, sizeof out, &err), 0);
	assert_int_equal(host_normalize("a\0b.example", 11, out, sizeof out, &err), -1);
}

static void host_glob_single_star_matches_exactly_one_label(void **state)
{
	assert_true(hmatch("*.example.com", "api.example.com"));
	assert_false(hmatch("*.example.com", "a.b.example.com"));
	assert_false(hmatch("*.example.com", "example.com")); /* bare domain */
	assert_false(hmatch("*.example.com", "badexample.com"));
	assert_false(hmatch("*.example.com", "api.example.com.evil"));
}

static void host_glob_double_star_matches_one_or_more_labels(void **state)
{
	assert_true(hmatch("**.example.com", "api.example.com"));
	assert_true(hmatch("**.example.com", "a.b.c.example.com"));
	assert_false(hmatch("**.example.com", "example.com"));
	assert_false(hmatch("**.example.com", "xexample.com"));
}

static void host_match_is_case_insensitive_and_ignores_trailing_dot(void **state)
{
	assert_true(hmatch("*.Example.COM", "API.example.com."));
	assert_true(hmatch("api.github.com.", "API.GITHUB.COM"));
	assert_false(hmatch("api.github.com", "api.github.co"));
	assert_true(hmatch("10.0.5.7", "10.0.5.7")); /* IP literal hosts */
	assert_false(hmatch("10.0.5.7", "10.0.5.70"));
	assert_true(hmatch("::1", "0:0::1"));
}

static void host_pattern_refuses_broad_or_misplaced_globs(void **state)
{
	char out[HOST_NAME_CAP];
	os_error err = { 0 };
	assert_int_equal(pat("*.example.com", out, &err), 0);
	assert_int_equal(pat("**.co.uk", out, &err), 0); /* two labels: allowed */
	assert_int_equal(pat("*", out, &err), -1);
	assert_int_equal(pat("**", out, &err), -1);
	assert_int_equal(pat("*.com", out, &err), -1);
	assert_non_null(strstr(err.msg, "two labels"));
	assert_int_equal(pat("**.co", out, &err), -1);
	assert_int_equal(pat("*.", out, &err), -1);
	/* OpenShell label globs: `*` inside the first label, whole later labels. */
	assert_int_equal(pat("*.*.example.com", out, &err), 0);
	assert_int_equal(pat("api.*.example.com", out, &err), 0);
	assert_int_equal(pat("a*.example.com", out, &err), 0);
	assert_int_equal(pat("*-AIplatform.googleapis.com", out, &err), 0);
	assert_string_equal(out, "*-aiplatform.googleapis.com");
	assert_int_equal(pat("api.a*.example.com", out, &err), -1);
	assert_non_null(strstr(err.msg, "whole label"));
	assert_int_equal(pat("a**.example.com", out, &err), -1);
	assert_int_equal(pat("x.**.example.com", out, &err), -1);
	assert_int_equal(pat("*.s3.*.com", out, &err), -1); /* one label after the last glob */
	assert_int_equal(pat("example.*", out, &err), -1);
	assert_int_equal(pat("*.10.0.0.1", out, &err), -1); /* glob over an IP */
	assert_int_equal(pat("*.b\xc3\xbc.example", out, &err), -1);
}

static void host_label_globs_match_like_openshell(void **state)
{
	assert_true(host_pattern_match("*-aiplatform.googleapis.com",
				       "us-central1-aiplatform.googleapis.com"));
	assert_false(
		host_pattern_match("*-aiplatform.googleapis.com", "aiplatform.googleapis.com"));
	assert_false(host_pattern_match("*-aiplatform.googleapis.com",
					"x.us-aiplatform.googleapis.com"));
	assert_true(host_pattern_match("*.s3.*.amazonaws.com", "b.s3.us-east-1.amazonaws.com"));
	assert_false(host_pattern_match("*.s3.*.amazonaws.com", "b.s3.amazonaws.com"));
	assert_false(host_pattern_match("*.s3.*.amazonaws.com", "a.b.s3.x.amazonaws.com"));
	assert_true(host_pattern_match("**.example.com", "a.b.example.com"));
	assert_false(host_pattern_match("**.example.com", "example.com"));
	assert_true(host_pattern_match("*.example.com", "a.example.com"));
	assert_false(host_pattern_match("*.example.com", "a.b.example.com"));
}

static void host_is_ip_literal_is_strict(void **state)
{
	assert_true(host_is_ip_literal("192.0.2.1"));
	assert_true(host_is_ip_literal("2001:db8::1"));
	assert_false(host_is_ip_literal("192.0.2.01"));
	assert_false(host_is_ip_literal("127.1"));
	assert_false(host_is_ip_literal("2130706433"));
	assert_false(host_is_ip_literal("example.com"));
	assert_false(host_is_ip_literal("256.0.0.1"));
	assert_false(host_is_ip_literal("1.2.3.4 "));
}

static void host_metadata_names_are_recognised(void **state)
{
	assert_true(host_is_metadata_name("metadata.google.internal"));
	assert_true(host_is_metadata_name("metadata"));
	assert_true(host_is_metadata_name("x.metadata.google.internal"));
	assert_true(host_is_metadata_name("instance-data.ec2.internal"));
	assert_false(host_is_metadata_name("metadata.google.internal.evil.example"));
	assert_false(host_is_metadata_name("notmetadata.google.internal"));
	assert_false(host_is_metadata_name("api.github.com"));
}

/* ---- path globs ---- */

static void path_glob_single_star_stays_in_one_component(void **state)
{
	assert_true(path_glob_match("/usr/bin/*", "/usr/bin/curl"));
	assert_false(path_glob_match("/usr/bin/*", "/usr/bin/sub/curl"));
	assert_true(path_glob_match("/usr/bin/python3*", "/usr/bin/python3.11"));
	assert_true(path_glob_match("/repos/*/rulesets", "/repos/x/rulesets"));
	assert_false(path_glob_match("/repos/*/rulesets", "/repos/x/y/rulesets"));
	assert_true(path_glob_match("/a/*", "/a/")); /* `*` may match nothing */
	assert_false(path_glob_match("/a/*", "/a"));
}

static void path_glob_double_star_crosses_components(void **state)
{
	assert_true(path_glob_match("/usr/**/python3", "/usr/local/bin/python3"));
	assert_true(path_glob_match("/a/**/b", "/a/x/b"));
	assert_true(path_glob_match("/a/**/b", "/a/b")); /* zero components */
	assert_false(path_glob_match("/a/**/b", "/ab"));
	assert_false(path_glob_match("/a/**/b", "/a/x/bc"));
	assert_true(path_glob_match("/a/**", "/a/x/y"));
	assert_true(path_glob_match("/a/**", "/a"));
	assert_false(path_glob_match("/a/**", "/ab"));
	assert_true(path_glob_match("/**", "/anything/at/all"));
	assert_true(path_glob_match("/lib**", "/lib64/x.so")); /* not a component: any bytes */
	assert_false(path_glob_match("/lib**", "/usr/lib"));
}

static void path_glob_without_stars_is_exact(void **state)
{
	assert_true(path_glob_match("/usr/bin/curl", "/usr/bin/curl"));
	assert_false(path_glob_match("/usr/bin/curl", "/usr/bin/curl2"));
	assert_false(path_glob_match("/usr/bin/curl", "/usr/bin/cur"));
	assert_false(path_glob_match("/usr/bin/curl", "/USR/bin/curl"));
	assert_true(path_glob_is_literal("/usr/bin/curl"));
	assert_false(path_glob_is_literal("/usr/bin/*"));
}

/* Reference matcher: the documented semantics written as plain backtracking,
 * usable on tiny inputs only. */
static bool ref_match(const char *p, const char *s)
{
	if (p[0] == '/' && p[1] == '*' && p[2] == '*' && (p[3] == '/' || p[3] == '\0') &&
	    ref_match(p + 3, s))
		return true; /* whole-component `**` matching zero components */
	if (p[0] == '*' && p[1] == '*') {
		for (size_t k = 0;; k++) {
			if (ref_match(p + 2, s + k))
				return true;
			if (s[k] == '\0')
				return false;
		}
	}
	if (p[0] == '*') {
		for (size_t k = 0;; k++) {
			if (ref_match(p + 1, s + k))
				return true;
			if (s[k] == '\0' || s[k] == '/')
				return false;
		}
	}
	if (p[0] == '\0')
		return s[0] == '\0';
	return p[0] == s[0] && ref_match(p + 1, s + 1);
}

/* Writes the idx-th string over alphabet (base-n digits, length len). */
static void nth_string(char *out, const char *alphabet, size_t len, unsigned idx)
{
	size_t n = strlen(alphabet);
	for (size_t i = 0; i < len; i++, idx /= (unsigned)n)
		out[i] = alphabet[idx % n];
	out[len] = '\0';
}

static unsigned pow3(size_t n)
{
	unsigned r = 1;
	while (n--)
		r *= 3;
	return r;
}

/* Compares one pattern with every path over {/ a b} up to 5 bytes. */
static void compare_with_reference(const char *p, unsigned *matches, unsigned *checked)
{
	char s[8];
	for (size_t slen = 0; slen <= 5; slen++) {
		for (unsigned si = 0; si < pow3(slen); si++) {
			nth_string(s, "/ab", slen, si);
			bool want = ref_match(p, s), got = path_glob_match(p, s);
			if (want != got)
				fail_msg("pattern \"%s\" path \"%s\": got %d want %d", p, s, got,
					 want);
			*matches += want;
			(*checked)++;
		}
	}
}

/* Every pattern over {/ * a} up to 6 bytes against every path over {/ a b} up
 * to 5 bytes: the NFA must give the reference's answer each time. */
static void path_glob_agrees_with_reference_matcher_exhaustively(void **state)
{
	char p[8];
	unsigned matches = 0, checked = 0;
	for (size_t plen = 0; plen <= 6; plen++) {
		for (unsigned pi = 0; pi < pow3(plen); pi++) {
			nth_string(p, "/*a", plen, pi);
			compare_with_reference(p, &matches, &checked);
		}
	}
	/* Positive control: the sweep really exercised both answers. */
	assert_true(matches > 1000);
	assert_true(checked - matches > 1000);
}

static void path_glob_pathological_pattern_is_not_exponential(void **state)
{
	/* A backtracking matcher needs ~len(path)^stars steps here and would not
	 * finish; the NFA is O(len(path) * len(pattern)). The 10 s bound only
	 * turns such a hang into a failure, it is not a benchmark. */
	char dstar[200], star[200], path[3002];
	size_t n = 1, k = 1;
	dstar[0] = star[0] = '/';
	for (int i = 0; i < 40; i++) {
		memcpy(dstar + n, "**a", 3);
		n += 3;
		memcpy(star + k, "*a", 2);
		k += 2;
	}
	memcpy(dstar + n, "**b", 4);
	memcpy(star + k, "*b", 3);
	path[0] = '/';
	memset(path + 1, 'a', 3000);
	path[3001] = '\0';
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(path_glob_match(dstar, path));
	assert_false(path_glob_match(star, path));
	path[3000] = 'b'; /* positive controls: the same patterns do match */
	assert_true(path_glob_match(dstar, path));
	assert_true(path_glob_match(star, path));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 10);
}

static void path_glob_handles_patterns_longer_than_stack_states(void **state)
{
	size_t n = 6000;
	char *pattern = malloc(n + 1), *path = malloc(n + 1);
	assert_non_null(pattern);
	assert_non_null(path);
	memset(pattern, 'x', n);
	pattern[0] = '/';
	pattern[n] = '\0';
	memcpy(path, pattern, n + 1);
	assert_true(path_glob_match(pattern, path));
	pattern[n - 1] = '*';
	assert_true(path_glob_match(pattern, path));
	path[n - 2] = 'y';
	assert_false(path_glob_match(pattern, path));
	free(pattern);
	free(path);
}

/* ---- canonicalisation ---- */

static void canon_resolves_dots_and_collapses_slashes(void **state)
{
	assert_canon("/a/./b/../c", "/a/c");
	assert_canon("//a///b", "/a/b");
	assert_canon("/a/b/", "/a/b/"); /* trailing slash kept */
	assert_canon("/a//", "/a/");
	assert_canon("/a/.", "/a/");
	assert_canon("/a/b/..", "/a/");
	assert_canon("/", "/");
	assert_canon("/.", "/");
	assert_canon("/a/..", "/");
	assert_canon("/...", "/..."); /* three dots is a name */
	assert_canon("/.a/..b", "/.a/..b");
}

static void canon_decodes_only_unreserved_escapes(void **state)
{
	assert_canon("/%7euser/%41%62%2D%5f", "/~user/Ab-_");
	assert_canon("/a%20b", "/a%20b");
	assert_canon("/a%3fb%c3%a9", "/a%3Fb%C3%A9"); /* hex upper-cased */
	assert_canon("/%25", "/%25"); /* no double decoding */
	assert_canon("/%2541", "/%2541");
	assert_canon("/a:b@c!$&'()*+,=", "/a:b@c!$&'()*+,=");
}

static void canon_encoded_dotdot_is_resolved_and_cannot_escape(void **state)
{
	assert_canon("/a/%2e%2e/b", "/b");
	assert_canon("/a/%2E./b", "/b");
	assert_canon("/a/.%2e", "/");
	assert_canon_refused("/%2e%2e/etc/passwd", CANON_ESCAPES_ROOT);
	assert_canon_refused("/a/../../b", CANON_ESCAPES_ROOT);
	assert_canon_refused("/..", CANON_ESCAPES_ROOT);
	assert_canon_refused("/a/%2e%2e/%2e%2e", CANON_ESCAPES_ROOT);
	assert_canon("/a/b/../..", "/"); /* back to the root exactly: fine */
}

/* allow_encoded_slash: %2F stays encoded inside its segment, but a `.` or
 * `..` between encoded slashes (a decoding upstream would resolve it) and
 * %5C are still refused. */
static void canon_allow_encoded_slash_keeps_it_encoded(void **state)
{
	char out[256];
	const unsigned f = CANON_ALLOW_ENCODED_SLASH;
	struct {
		const char *in, *want;
		enum canon_result r;
	} cases[] = {
		{ "/p/group%2fname", "/p/group%2Fname", CANON_OK },
		{ "/p/a%2Fb%2Fc/raw", "/p/a%2Fb%2Fc/raw", CANON_OK },
		{ "/p/a%2F.b", "/p/a%2F.b", CANON_OK },
		{ "/p/a%2F..%2Fb", "", CANON_ENCODED_SLASH },
		{ "/p/a%2F.", "", CANON_ENCODED_SLASH },
		{ "/p/%2E%2E%2Fadmin", "", CANON_ENCODED_SLASH },
		{ "/p/a%2F%2e", "", CANON_ENCODED_SLASH },
		{ "/p/a%5Cb", "", CANON_ENCODED_SLASH },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum canon_result r = canon_request_path_opts(cases[i].in, strlen(cases[i].in), f,
							      out, sizeof out, NULL, NULL);
		if (r != cases[i].r || strcmp(out, cases[i].want) != 0)
			fail_msg("canon(\"%s\", allow) = %s \"%s\"", cases[i].in,
				 canon_result_name(r), out);
	}
	assert_canon_refused("/p/a%2Fb", CANON_ENCODED_SLASH); /* not without the flag */
}

/* Endpoint `path` as OpenShell's endpoint_path_matches reads it. */
static void endpoint_path_matches_like_openshell(void **state)
{
	struct {
		const char *pattern, *path;
		bool want;
	} cases[] = {
		{ NULL, "/anything", true },	       { "/**", "/x/y", true },
		{ "/repos/**", "/repos", true },       { "/repos/**", "/repos/a/b", true },
		{ "/repos/**", "/repository", false }, { "/repos/**", "/Repos/a", false },
		{ "/graphql", "/graphql", true },      { "/graphql", "/graphql/", false },
		{ "/api/*", "/api/a/b", true },	       { "/api/*", "/apix", false },
		{ "/a/**/b", "/a/b", true },	       { "/a/**/b", "/a/x/y/b", true },
		{ "/a/**/b", "/a/x/c", false },	       { "/a**", "/ab", false },
		{ "/a/***", "/a/b", false },	       { "/v*/users", "/v2/users", true },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (policy_endpoint_path_match(cases[i].pattern, cases[i].path) != cases[i].want)
			fail_msg("endpoint path %s on %s: want %s",
				 cases[i].pattern ? cases[i].pattern : "(none)", cases[i].path,
				 cases[i].want ? "match" : "no match");
	assert_int_equal(policy_path_specificity(NULL), 0);
	assert_int_equal(policy_path_specificity("**"), 0);
	assert_int_equal(policy_path_specificity("/**"), 1);
	assert_int_equal(policy_path_specificity("/repos/**"), 7);
	assert_int_equal(policy_path_specificity("/repos/*/issues"), 14);
}

static void canon_refuses_matrix_parameters(void **state)
{
	assert_canon("/a/../admin", "/admin");
	assert_canon_refused("/a/..;/admin", CANON_MATRIX_PARAM);
	assert_canon_refused("/a;jsessionid=1/b", CANON_MATRIX_PARAM);
	assert_canon_refused("/a/..%3b/admin", CANON_MATRIX_PARAM);
}

/* Escaped non-ASCII bytes must be valid UTF-8: a lenient decoder reads
 * overlong forms as the ASCII they encode (`%C0%AE` is '.'). */
static void canon_refuses_invalid_utf8_escapes(void **state)
{
	assert_canon("/caf%c3%a9", "/caf%C3%A9");
	assert_canon("/%E2%82%AC/%F0%9F%98%80/%ED%9F%BF", "/%E2%82%AC/%F0%9F%98%80/%ED%9F%BF");
	assert_canon_refused("/a/%C0%AE%C0%AE/admin", CANON_BAD_UTF8);
	assert_canon_refused("/a/%c0%af", CANON_BAD_UTF8);
	assert_canon_refused("/a/%E0%80%AE", CANON_BAD_UTF8);
	assert_canon_refused("/a/%F0%80%80%AE", CANON_BAD_UTF8);
	assert_canon_refused("/a/%C1%9C", CANON_BAD_UTF8);
	assert_canon_refused("/a/%ED%A0%80", CANON_BAD_UTF8); /* a surrogate */
	assert_canon_refused("/a/%F4%90%80%80", CANON_BAD_UTF8); /* above U+10FFFF */
	assert_canon_refused("/a/%80", CANON_BAD_UTF8);
	assert_canon_refused("/a/%C3", CANON_BAD_UTF8); /* cut by the end */
	assert_canon_refused("/a/%C3/%A9", CANON_BAD_UTF8); /* cut by a '/' */
	assert_canon_refused("/a/%C3x", CANON_BAD_UTF8);
	assert_canon_refused("/a/%E9t%E9", CANON_BAD_UTF8); /* Latin-1 */
	assert_string_equal(canon_result_name(CANON_BAD_UTF8), "bad_utf8");
}

/* A literal '%' escaping a dot, a separator or another '%' means
 * something else to an upstream behind a second decoding. */
static void canon_refuses_double_encoding(void **state)
{
	assert_canon("/100%25", "/100%25");
	assert_canon("/a%25b/%2541", "/a%25b/%2541");
	assert_canon_refused("/a/%252e%252e/admin", CANON_DOUBLE_ENCODED);
	assert_canon_refused("/a/..%252fadmin", CANON_DOUBLE_ENCODED);
	assert_canon_refused("/a/%255c", CANON_DOUBLE_ENCODED);
	assert_canon_refused("/a/%253B", CANON_DOUBLE_ENCODED);
	assert_canon_refused("/a/%25252e", CANON_DOUBLE_ENCODED);
	assert_canon_refused("/a/%25%32%65", CANON_DOUBLE_ENCODED); /* digits escaped */
	assert_string_equal(canon_result_name(CANON_DOUBLE_ENCODED), "double_encoded");
}

static void canon_refuses_encoded_slashes(void **state)
{
	assert_canon("/a/b", "/a/b");
	assert_canon_refused("/a%2Fb", CANON_ENCODED_SLASH);
	assert_canon_refused("/a%2fb", CANON_ENCODED_SLASH);
	assert_canon_refused("/a%5cb", CANON_ENCODED_SLASH);
	assert_canon_refused("/..%2f..%2fetc", CANON_ENCODED_SLASH);
	assert_canon_refused("/a\\b", CANON_BAD_BYTE);
}

static void canon_refuses_control_bytes_raw_or_encoded(void **state)
{
	char out[64];
	assert_canon("/a%21", "/a%21");
	assert_canon_refused("/a%00", CANON_CONTROL_BYTE);
	assert_canon_refused("/a%0d%0aX-Injected:%201", CANON_CONTROL_BYTE);
	assert_canon_refused("/a%1F", CANON_CONTROL_BYTE);
	assert_canon_refused("/a%7f", CANON_CONTROL_BYTE);
	assert_canon_refused("/a\tb", CANON_CONTROL_BYTE);
	assert_canon_refused("/a\x7f", CANON_CONTROL_BYTE);
	/* A raw NUL inside the given length is a control byte, not the end. */
	assert_int_equal(canon_request_path("/a\0b", 4, out, sizeof out, NULL, NULL),
			 CANON_CONTROL_BYTE);
}

static void canon_refuses_bad_escapes_and_bytes(void **state)
{
	assert_canon("/a%4A", "/aJ");
	assert_canon_refused("/a%", CANON_BAD_ESCAPE);
	assert_canon_refused("/a%4", CANON_BAD_ESCAPE);
	assert_canon_refused("/a%4/b", CANON_BAD_ESCAPE);
	assert_canon_refused("/a%zz", CANON_BAD_ESCAPE);
	assert_canon_refused("/a b", CANON_BAD_BYTE);
	assert_canon_refused("/a\"b", CANON_BAD_BYTE);
	assert_canon_refused("/a#frag", CANON_BAD_BYTE);
	assert_canon_refused("/caf\xc3\xa9", CANON_BAD_BYTE);
	assert_canon_refused("a/b", CANON_NOT_ABSOLUTE);
	assert_canon_refused("", CANON_NOT_ABSOLUTE);
	assert_canon_refused("?q=1", CANON_NOT_ABSOLUTE);
	assert_canon_refused("*", CANON_NOT_ABSOLUTE);
}

static void canon_splits_query_unchanged(void **state)
{
	char out[64];
	const char *q = (const char *)1;
	size_t qlen = 99;
	const char *t = "/a/./b?x=%2e%2e/../&y=;";
	assert_int_equal(canon_request_path(t, strlen(t), out, sizeof out, &q, &qlen), CANON_OK);
	assert_string_equal(out, "/a/b");
	assert_ptr_equal(q, t + 7);
	assert_int_equal(qlen, strlen("x=%2e%2e/../&y=;"));
	assert_int_equal(canon_request_path("/a", 2, out, sizeof out, &q, &qlen), CANON_OK);
	assert_null(q);
	assert_int_equal(qlen, 0);
	assert_int_equal(canon_request_path("/a?", 3, out, sizeof out, &q, &qlen), CANON_OK);
	assert_non_null(q);
	assert_int_equal(qlen, 0);
}

static void canon_respects_output_cap(void **state)
{
	char out[8];
	assert_int_equal(canon("/abcdef", out, 8), CANON_OK); /* 7 bytes + NUL */
	assert_string_equal(out, "/abcdef");
	assert_int_equal(canon("/abcdefg", out, 8), CANON_TOO_LONG);
	assert_string_equal(out, "");
	assert_int_equal(canon("/abcdefg/..", out, 8), CANON_TOO_LONG);
	assert_int_equal(canon("/abc/%41", out, 8), CANON_OK);
	assert_int_equal(canon("/", out, 1), CANON_TOO_LONG);
	assert_int_equal(canon("/", out, 0), CANON_TOO_LONG);
	assert_string_equal(canon_result_name(CANON_MATRIX_PARAM), "matrix_param");
	assert_string_equal(canon_result_name(CANON_ESCAPES_ROOT), "escapes_root");
}

/* ---- addresses and SSRF ---- */

static void ip_parse_refuses_non_strict_ipv4(void **state)
{
	struct ip_addr a;
	os_error err = { 0 };
	assert_int_equal(ip_addr_parse("127.0.0.1", &a, &err), 0);
	assert_int_equal(a.family, AF_INET);
	assert_int_equal(ntohl(a.v4.s_addr), 0x7f000001);
	assert_int_equal(ip_addr_parse("0.0.0.0", &a, &err), 0);
	assert_int_equal(ip_addr_parse("255.255.255.255", &a, &err), 0);
	const char *bad[] = { "0177.0.0.1", "0x7f.0.0.1", "2130706433", "127.1",      "127.0.0.1.",
			      "256.1.1.1",  "1.2.3",	  "1.2.3.4.5",	"+1.2.3.4",   "1.2.3.-4",
			      "1..2.3",	    "1.2.3.4/32", " 1.2.3.4",	"1.2.3.0004", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (ip_addr_parse(bad[i], &a, &err) == 0)
			fail_msg("\"%s\" parsed as an IP literal", bad[i]);
	}
	assert_non_null(strstr(err.msg, "strict dotted-quad"));
}

static void ip_parse_and_format_ipv6(void **state)
{
	struct ip_addr a;
	char buf[64];
	assert_int_equal(ip_addr_parse("::FFFF:127.0.0.1", &a, NULL), 0);
	assert_int_equal(a.family, AF_INET6); /* kept as v6; classify unmaps */
	assert_int_equal(ip_addr_format(&a, buf, sizeof buf), 0);
	assert_string_equal(buf, "::ffff:127.0.0.1");
	assert_int_equal(ip_addr_format(&a, buf, 4), -1);
	assert_int_equal(ip_addr_parse("[::1]", &a, NULL), -1);
	assert_int_equal(ip_addr_parse("fe80::1%1", &a, NULL), -1);
	assert_int_equal(ip_addr_parse("::ffff:0177.0.0.1", &a, NULL), -1);

	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	sin6.sin6_addr.s6_addr[15] = 1;
	assert_int_equal(ip_addr_from_sockaddr((struct sockaddr *)&sin6, &a), 0);
	assert_int_equal(ip_addr_format(&a, buf, sizeof buf), 0);
	assert_string_equal(buf, "::1");
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0xc0000201) };
	assert_int_equal(ip_addr_from_sockaddr((struct sockaddr *)&sin, &a), 0);
	assert_int_equal(ip_addr_format(&a, buf, sizeof buf), 0);
	assert_string_equal(buf, "192.0.2.1");
	struct sockaddr un = { .sa_family = AF_UNIX };
	assert_int_equal(ip_addr_from_sockaddr(&un, &a), -1);
}

static void ssrf_loopback_unspecified_link_local_always_blocked(void **state)
{
	assert_int_equal(cls("127.0.0.1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("127.255.255.254"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("128.0.0.1"), ADDR_PUBLIC); /* control just outside 127/8 */
	assert_int_equal(cls("126.255.255.255"), ADDR_PUBLIC);
	assert_int_equal(cls("::1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("::2"), ADDR_ALWAYS_BLOCKED); /* compat 0.0.0.2: this-network */
	assert_int_equal(cls("0.0.0.0"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("0.1.2.3"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("::"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("169.254.1.1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("169.255.1.1"), ADDR_PUBLIC);
	assert_int_equal(cls("fe80::1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("febf::1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("224.0.0.1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("ff02::1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("2606:4700::1111"), ADDR_PUBLIC);
	assert_int_equal(cls("1.1.1.1"), ADDR_PUBLIC);
}

static void ssrf_mapped_and_translated_forms_are_unmapped(void **state)
{
	assert_int_equal(cls("::ffff:127.0.0.1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("::ffff:7f00:1"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("::ffff:8.8.8.8"), ADDR_PUBLIC);
	assert_int_equal(cls("::ffff:0:7f00:1"), ADDR_ALWAYS_BLOCKED); /* SIIT translated */
	assert_int_equal(cls("::127.0.0.1"), ADDR_ALWAYS_BLOCKED); /* compatible */
	assert_int_equal(cls("::ffff:169.254.169.254"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("64:ff9b::7f00:1"), ADDR_ALWAYS_BLOCKED); /* NAT64 */
	assert_int_equal(cls("64:ff9b::a9fe:a9fe"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("64:ff9b::a00:1"), ADDR_INTERNAL);
	assert_int_equal(cls("64:ff9b::808:808"), ADDR_PUBLIC);
	assert_int_equal(cls("2002:7f00:1::"), ADDR_ALWAYS_BLOCKED); /* 6to4 */
	assert_int_equal(cls("2002:c0a8:101::1"), ADDR_INTERNAL);
	assert_int_equal(cls("2002:808:808::1"), ADDR_PUBLIC);
	assert_int_equal(cls("::ffff:10.1.2.3"), ADDR_INTERNAL);
}

static void ssrf_metadata_addresses_always_blocked(void **state)
{
	const char *why = NULL;
	struct ip_addr a = ip("169.254.169.254");
	assert_int_equal(ip_addr_classify(&a, &why), ADDR_ALWAYS_BLOCKED);
	assert_non_null(strstr(why, "metadata"));
	assert_int_equal(cls("169.254.170.2"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("100.100.100.200"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("100.100.100.201"), ADDR_INTERNAL); /* rest of 100.64/10 */
	assert_int_equal(cls("168.63.129.16"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("168.63.129.17"), ADDR_PUBLIC);
	assert_int_equal(cls("fd00:ec2::254"), ADDR_ALWAYS_BLOCKED);
	assert_int_equal(cls("fd00:ec2::253"), ADDR_INTERNAL); /* rest of fc00::/7 */
}

static void ssrf_internal_ranges(void **state)
{
	const char *internal[] = { "10.0.0.1",	   "172.16.0.1",     "172.31.255.255",
				   "192.168.1.1",  "100.64.0.1",     "100.127.255.255",
				   "198.18.0.1",   "198.19.255.255", "192.0.2.1",
				   "198.51.100.1", "203.0.113.1",    "255.255.255.255",
				   "240.0.0.1",	   "192.0.0.8",	     "fc00::1",
				   "fdff::1",	   "2001:db8::1" };
	for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
		if (cls(internal[i]) != ADDR_INTERNAL)
			fail_msg("%s not classified internal", internal[i]);
	}
	const char *public[] = { "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1",
				 "198.17.0.1",	   "198.20.0.1", "192.0.3.1",	   "11.0.0.1",
				 "2001:db9::1",	   "fe00::1" };
	for (size_t i = 0; i < sizeof public / sizeof public[0]; i++) {
		if (cls(public[i]) != ADDR_PUBLIC)
			fail_msg("%s not classified public", public[i]);
	}
}

static void ssrf_check_internal_needs_allowed_ips(void **state)
{
	struct ip_addr a = ip("10.0.5.7");
	struct cidr allowed[] = { cidr("10.0.5.0/24") };
	struct cidr other[] = { cidr("10.0.6.0/24") };
	const char *why = NULL;
	assert_int_equal(ssrf_check(&a, 5432, NULL, 0, &why), SSRF_DENY_INTERNAL);
	assert_int_equal(ssrf_check(&a, 5432, other, 1, &why), SSRF_DENY_INTERNAL);
	assert_int_equal(ssrf_check(&a, 5432, allowed, 1, &why), SSRF_ALLOW);
	assert_non_null(strstr(why, "allowed_ips"));
	/* The mapped form of the same address is covered by the v4 CIDR. */
	struct ip_addr m = ip("::ffff:10.0.5.7");
	assert_int_equal(ssrf_check(&m, 5432, allowed, 1, &why), SSRF_ALLOW);
	struct ip_addr p = ip("8.8.8.8");
	assert_int_equal(ssrf_check(&p, 443, NULL, 0, &why), SSRF_ALLOW);
}

static void ssrf_check_always_blocked_ignores_allowed_ips(void **state)
{
	struct cidr everything[] = { cidr("0.0.0.0/0"), cidr("::/0") };
	const char *why = NULL;
	struct ip_addr a = ip("127.0.0.1");
	assert_int_equal(ssrf_check(&a, 80, everything, 2, &why), SSRF_DENY_ALWAYS);
	a = ip("169.254.169.254");
	assert_int_equal(ssrf_check(&a, 80, everything, 2, &why), SSRF_DENY_ALWAYS);
	a = ip("64:ff9b::7f00:1");
	assert_int_equal(ssrf_check(&a, 80, everything, 2, &why), SSRF_DENY_ALWAYS);
	a = ip("::ffff:7f00:1");
	assert_int_equal(ssrf_check(&a, 80, everything, 2, &why), SSRF_DENY_ALWAYS);
	a = ip("10.1.1.1"); /* control: the same list does open an internal address */
	assert_int_equal(ssrf_check(&a, 80, everything, 2, &why), SSRF_ALLOW);
}

static void ssrf_check_control_plane_ports_blocked_inside_allowed_ips(void **state)
{
	struct cidr allowed[] = { cidr("10.0.0.0/8") };
	const char *why = NULL;
	struct ip_addr a = ip("10.0.0.10");
	assert_int_equal(ssrf_check(&a, 10250, allowed, 1, &why), SSRF_DENY_PORT);
	assert_int_equal(ssrf_check(&a, 6443, allowed, 1, &why), SSRF_DENY_PORT);
	assert_int_equal(ssrf_check(&a, 2379, allowed, 1, &why), SSRF_DENY_PORT);
	assert_int_equal(ssrf_check(&a, 10251, allowed, 1, &why), SSRF_ALLOW);
	assert_int_equal(ssrf_check(&a, 443, allowed, 1, &why), SSRF_ALLOW);
	struct ip_addr p = ip("8.8.8.8"); /* public too: documented in ssrf.c */
	assert_int_equal(ssrf_check(&p, 6443, NULL, 0, &why), SSRF_DENY_PORT);
	assert_true(port_is_control_plane(10255));
	assert_true(port_is_control_plane(2380));
	assert_false(port_is_control_plane(8080));
}

static void cidr_parse_is_strict(void **state)
{
	struct cidr c;
	os_error err = { 0 };
	assert_int_equal(cidr_parse("10.0.5.0/24", &c, &err), 0);
	assert_int_equal(c.prefix, 24);
	assert_int_equal(cidr_parse("10.0.5.1", &c, &err), 0);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(cidr_parse("fd00::/8", &c, &err), 0);
	assert_int_equal(c.prefix, 8);
	assert_int_equal(cidr_parse("::1", &c, &err), 0);
	assert_int_equal(c.prefix, 128);
	assert_int_equal(cidr_parse("10.0.5.1/24", &c, &err), -1);
	assert_non_null(strstr(err.msg, "host bits"));
	assert_non_null(strstr(err.msg, "10.0.5.1/24"));
	const char *bad[] = { "10.0.5.0/33",   "10.0.5.0/",    "10.0.5.0/024", "10.0.5.0/-1",
			      "10.0.5.0/2a",   "010.0.5.0/24", "/24",	       "fd00::/129",
			      "10.0.5.0/24/1", "10.0.5.0/ 24" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (cidr_parse(bad[i], &c, &err) == 0)
			fail_msg("cidr \"%s\" accepted", bad[i]);
	}
	assert_int_equal(cidr_parse("0.0.0.0/0", &c, &err), 0);
}

static void cidr_contains_respects_prefix_and_family(void **state)
{
	struct cidr c = cidr("10.0.5.0/24");
	struct ip_addr in = ip("10.0.5.255"), out = ip("10.0.6.0"), v6 = ip("::ffff:10.0.5.1");
	assert_true(cidr_contains(&c, &in));
	assert_false(cidr_contains(&c, &out));
	assert_false(cidr_contains(&c, &v6)); /* families differ; ssrf_check unmaps */
	struct cidr odd = cidr("10.0.4.0/23");
	assert_true(cidr_contains(&odd, &in));
	struct ip_addr below = ip("10.0.3.255");
	assert_false(cidr_contains(&odd, &below));
	struct cidr all = cidr("::/0");
	struct ip_addr any6 = ip("2001:db8::1");
	assert_true(cidr_contains(&all, &any6));
}

static void cidr_overlap_with_always_blocked_detected(void **state)
{
	const char *blocked[] = { "0.0.0.0/0",
				  "127.0.0.1",
				  "127.0.0.0/8",
				  "126.0.0.0/7",
				  "169.254.169.254",
				  "100.100.100.0/24",
				  "224.0.0.0/3",
				  "::/0",
				  "::1",
				  "::ffff:0:0/96",
				  "::ffff:127.0.0.0/104",
				  "64:ff9b::/96",
				  "64:ff9b::7f00:0/120",
				  "2002::/16",
				  "2002:7f00::/24",
				  "2000::/3",
				  "fe80::/64",
				  "fd00:ec2::/32" };
	for (size_t i = 0; i < sizeof blocked / sizeof blocked[0]; i++) {
		struct cidr c = cidr(blocked[i]);
		if (!cidr_overlaps_always_blocked(&c))
			fail_msg("%s should overlap an always-blocked range", blocked[i]);
	}
	const char *fine[] = { "10.0.0.0/8",	     "192.168.0.0/16",
			       "100.64.0.0/16",	     "8.8.8.8",
			       "fd12::/16",	     "::ffff:10.0.0.0/104",
			       "64:ff9b::a00:0/104", "2002:a00::/24",
			       "2001:db8::/32" };
	for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
		struct cidr c = cidr(fine[i]);
		if (cidr_overlaps_always_blocked(&c))
			fail_msg("%s should not overlap an always-blocked range", fine[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_normalize_lowercases_and_strips_one_trailing_dot),
		cmocka_unit_test(host_normalize_refuses_non_ascii_and_odd_bytes),
		cmocka_unit_test(host_normalize_enforces_length_limits),
		cmocka_unit_test(host_normalize_refuses_numeric_non_dotted_quads),
		cmocka_unit_test(host_normalize_canonicalises_ipv6),
		cmocka_unit_test(host_glob_single_star_matches_exactly_one_label),
		cmocka_unit_test(host_glob_double_star_matches_one_or_more_labels),
		cmocka_unit_test(host_match_is_case_insensitive_and_ignores_trailing_dot),
		cmocka_unit_test(host_pattern_refuses_broad_or_misplaced_globs),
		cmocka_unit_test(host_label_globs_match_like_openshell),
		cmocka_unit_test(host_is_ip_literal_is_strict),
		cmocka_unit_test(host_metadata_names_are_recognised),
		cmocka_unit_test(path_glob_single_star_stays_in_one_component),
		cmocka_unit_test(path_glob_double_star_crosses_components),
		cmocka_unit_test(path_glob_without_stars_is_exact),
		cmocka_unit_test(path_glob_agrees_with_reference_matcher_exhaustively),
		cmocka_unit_test(path_glob_pathological_pattern_is_not_exponential),
		cmocka_unit_test(path_glob_handles_patterns_longer_than_stack_states),
		cmocka_unit_test(canon_resolves_dots_and_collapses_slashes),
		cmocka_unit_test(canon_decodes_only_unreserved_escapes),
		cmocka_unit_test(canon_encoded_dotdot_is_resolved_and_cannot_escape),
		cmocka_unit_test(canon_refuses_matrix_parameters),
		cmocka_unit_test(canon_allow_encoded_slash_keeps_it_encoded),
		cmocka_unit_test(endpoint_path_matches_like_openshell),
		cmocka_unit_test(canon_refuses_encoded_slashes),
		cmocka_unit_test(canon_refuses_invalid_utf8_escapes),
		cmocka_unit_test(canon_refuses_double_encoding),
		cmocka_unit_test(canon_refuses_control_bytes_raw_or_encoded),
		cmocka_unit_test(canon_refuses_bad_escapes_and_bytes),
		cmocka_unit_test(canon_splits_query_unchanged),
		cmocka_unit_test(canon_respects_output_cap),
		cmocka_unit_test(ip_parse_refuses_non_strict_ipv4),
		cmocka_unit_test(ip_parse_and_format_ipv6),
		cmocka_unit_test(ssrf_loopback_unspecified_link_local_always_blocked),
		cmocka_unit_test(ssrf_mapped_and_translated_forms_are_unmapped),
		cmocka_unit_test(ssrf_metadata_addresses_always_blocked),
		cmocka_unit_test(ssrf_internal_ranges),
		cmocka_unit_test(ssrf_check_internal_needs_allowed_ips),
		cmocka_unit_test(ssrf_check_always_blocked_ignores_allowed_ips),
		cmocka_unit_test(ssrf_check_control_plane_ports_blocked_inside_allowed_ips),
		cmocka_unit_test(cidr_parse_is_strict),
		cmocka_unit_test(cidr_contains_respects_prefix_and_family),
		cmocka_unit_test(cidr_overlap_with_always_blocked_detected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
