/* policy_gen_int.h - layout of a compiled policy generation, shared by the
 * compiler and the decision code. Everything here is immutable once
 * policy_compile returns; decisions never lock and never allocate. */
#ifndef OS_POLICY_GEN_INT_H
#define OS_POLICY_GEN_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

/* Endpoints filed under one host key, in ascending policy order. */
struct host_slot {
	const char *key; /* NULL: empty slot */
	uint64_t hash;
	const struct policy_endpoint **eps;
	size_t n;
};

/* Open-addressing table keyed by normalised host or glob domain. */
struct host_table {
	struct host_slot *slots;
	size_t mask; /* capacity - 1 (power of two) */
};

/* A policy's binaries: literal paths sorted for bsearch, globs tried after. */
struct bin_set {
	const char **lit;
	size_t n_lit;
	const char **glob;
	size_t n_glob;
};

struct policy_gen {
	atomic_size_t refs;
	struct policy_doc *doc;
	struct host_table exact; /* `api.example.com`, IP literals */
	struct host_table one; /* `*.d` filed under d */
	struct host_table multi; /* `**.d` filed under d */
	/* Hostless endpoints and other globs, in ascending policy order. */
	const struct policy_endpoint **scan;
	size_t n_scan;
	struct bin_set *bins; /* one per doc->networks[i] */
};

uint64_t host_hash(const char *s);
const struct host_slot *host_table_find(const struct host_table *t, const char *key, uint64_t h);
bool bin_set_match(const struct bin_set *b, const char *const *chain, size_t n);

/* Calls fn for every endpoint whose host pattern matches host (normalised),
 * in ascending policy order within each kind; stops when fn returns false
 * (policy_decide.c). */
typedef bool (*visit_fn)(const struct policy_endpoint *ep, void *ctx);
void for_each_host_match(const struct policy_gen *g, const char *host, visit_fn fn, void *ctx);
bool endpoint_has_port(const struct policy_endpoint *ep, uint16_t port);
/* The endpoint carries connection or request settings (protocol,
 * allowed_ips, tls, credential binding): a plain L4 endpoint does not, and
 * never competes with one that does (OpenShell). */
bool endpoint_has_config(const struct policy_endpoint *ep);

/* REST rules (policy_decide_l7.c): whether ep (rest or websocket), whose
 * own path must match the canonical path, has a deny rule (deny) or an
 * access preset or allow rule (!deny) matching method m (normalised) on canon with the
 * query qs[0..qlen); rule receives its name ("rules[2]", "access:full"). */
bool policy_l7_rules_say(const struct policy_endpoint *ep, bool deny, const char *m,
			 const char *canon, const char *qs, size_t qlen, char *rule,
			 size_t rule_cap);
/* Upper-cases an HTTP token method into out; false when it is none. */
bool policy_l7_method_norm(const char *m, char *out, size_t cap);
/* Sets out's verdict (by ep's enforcement for a violation), reason and
 * detail for method m on path, naming out->rule and out->policy. */
void policy_l7_finish(struct policy_decision *out, const struct policy_endpoint *ep, bool violation,
		      enum policy_reason r, const char *m, const char *path);

/* json-rpc / mcp: may this HTTP exchange carry messages? (policy_decide_rpc.c) */
void rpc_decide_transport(const struct policy_endpoint *ep, const char *m, const char *canon,
			  struct policy_decision *out);

/* graphql: may this HTTP exchange carry operations? (policy_decide_graphql.c) */
void graphql_decide_transport(const struct policy_endpoint *ep, const char *m, const char *canon,
			      struct policy_decision *out);

#endif
