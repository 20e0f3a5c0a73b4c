/* policy_bench.c - nanoseconds per policy decision (L4 CONNECT and L7 REST)
 * for generated policies of 10, 1,000 and 10,000 endpoints (half exact hosts,
 * half globs), compared with the 10-endpoint policy. Never judges a figure.
 * usage: policy_bench [--smoke] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "policy.h"

#define ROUNDS 7
#define PER_POLICY 10

static const char *const chain[] = { "/usr/bin/python3", "/bin/sh", "/usr/bin/curl" };

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Endpoint i: even -> exact host, odd -> `*.` or `**.` glob; every 10th is REST. */
static int gen_policy(struct buf *b, size_t n, os_error *err)
{
	if (buf_append_str(b, "version: 1\nnetwork_policies:\n", err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i % PER_POLICY == 0 &&
		    buf_printf(b, err,
			       "  p%06zu:\n    binaries: [{ path: /usr/bin/curl }, { path: "
			       "\"/opt/t%zu/**\" }]\n    endpoints:\n",
			       i / PER_POLICY, i) < 0)
			return -1;
		const char *glob = i % 4 == 1 ? "*." : "**.";
		int r = i % 2 == 0 ? buf_printf(b, err, "      - host: h%zu.svc%zu.example.com\n",
						i, i % 97)
				   : buf_printf(b, err, "      - host: \"%sg%zu.example.net\"\n",
						glob, i);
		if (r < 0 || buf_printf(b, err, "        port: 443\n") < 0)
			return -1;
		if (i % 10 == 0 &&
		    buf_append_str(
			    b,
			    "        protocol: rest\n        rules:\n"
			    "          - allow: { method: GET, path: \"/repos/**\" }\n"
			    "          - allow: { method: POST, path: \"/repos/*/issues\" }\n"
			    "          - allow: { method: GET, path: /search, query: "
			    "{ q: \"lang-*\" } }\n"
			    "        deny_rules: [{ method: \"*\", path: \"/admin/**\" }]\n",
			    err) < 0)
			return -1;
	}
	return 0;
}

static void host_for(size_t i, char *out, size_t cap)
{
	if (i % 2 == 0)
		snprintf(out, cap, "h%zu.svc%zu.example.com", i, i % 97);
	else if (i % 4 == 1) /* `*.` takes exactly one label */
		snprintf(out, cap, "api.g%zu.example.net", i);
	else
		snprintf(out, cap, "api.x.y.g%zu.example.net", i);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct figures {
	double l4, l7, load_ms;
};

/* 64 distinct hosts spread over the policy, so lookups are not one cached line. */
static int measure(size_t n, size_t iters, struct figures *f)
{
	struct buf b;
	os_error err = { 0 };
	buf_init(&b, 64u << 20);
	if (gen_policy(&b, n, &err) < 0)
		return fprintf(stderr, "generating: %s\n", err.msg), -1;
	struct policy_limits lim = { .max_policies = 100000, .max_endpoints = 100000 };
	struct policy_doc *doc = NULL;
	double t0 = now_ns();
	int r = policy_parse_limits("bench.yaml", b.data, b.len, &lim, &doc, NULL, &err);
	buf_free(&b);
	struct policy_gen *g = r < 0 ? NULL : policy_compile(doc, &err);
	if (!g)
		return fprintf(stderr, "loading %zu endpoints: %s\n", n, err.msg), -1;
	f->load_ms = (now_ns() - t0) / 1e6;
	char hosts[64][128];
	for (size_t k = 0; k < 64; k++)
		host_for((k * 7919) % n, hosts[k], sizeof hosts[k]);
	struct policy_decision d;
	policy_decide_connect(g, "h0.svc0.example.com", 443, chain, 3, &d);
	const struct policy_endpoint *rest = d.endpoint;
	double l4[ROUNDS], l7[ROUNDS];
	volatile unsigned sink = 0;
	for (int round = 0; round < ROUNDS; round++) {
		double s = now_ns();
		for (size_t i = 0; i < iters; i++) {
			policy_decide_connect(g, hosts[i & 63], 443, chain, 3, &d);
			sink += d.verdict;
		}
		l4[round] = (now_ns() - s) / (double)iters;
		s = now_ns();
		for (size_t i = 0; i < iters; i++) {
			policy_decide_request(g, rest, i & 1 ? "GET" : "POST",
					      i & 1 ? "/repos/a/b/c?x=1" : "/repos/a/issues", NULL,
					      0, &d);
			sink += d.verdict;
		}
		l7[round] = (now_ns() - s) / (double)iters;
	}
	if (sink != (unsigned)(ROUNDS * iters * 2))
		return fprintf(stderr, "%zu endpoints: some bench decisions were denied\n", n), -1;
	f->l4 = median(l4, ROUNDS);
	f->l7 = median(l7, ROUNDS);
	policy_unref(g);
	return 0;
}

int main(int argc, char **argv)
{
	bool smoke = argc > 1 && !strcmp(argv[1], "--smoke");
	static const size_t sizes[] = { 10, 1000, 10000 };
	struct figures f[3];
	size_t iters = smoke ? 200 : 200000;
	for (size_t i = 0; i < 3; i++) {
		if (measure(sizes[i], iters, &f[i]) < 0)
			return 1;
		printf("  policy %5zu endpoints: L4 %.1f ns/decision, L7 %.1f ns/decision, "
		       "load+compile %.1f ms (median of %d rounds x %zu)\n",
		       sizes[i], f[i].l4, f[i].l7, f[i].load_ms, ROUNDS, iters);
	}
	printf("  policy L4 ratio to 10 endpoints: 1000=%.2f 10000=%.2f; L7: 1000=%.2f "
	       "10000=%.2f\n",
	       f[1].l4 / f[0].l4, f[2].l4 / f[0].l4, f[1].l7 / f[0].l7, f[2].l7 / f[0].l7);
	printf("bench policy: ours=%.1f peer=%.1f ratio=%.3g unit=ns vs=10-endpoint-policy\n",
	       f[1].l4, f[0].l4, f[1].l4 / f[0].l4);
	return 0;
}
