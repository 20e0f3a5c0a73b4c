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

/* json-rpc / mcp: may this HTTP exchange carry messages? (policy_decide_rpc.c) */
void rpc_decide_transport(const struct policy_endpoint *ep, const char *m, const char *canon,
			  struct policy_decision *out);

/* graphql: may this HTTP exchange carry operations? (policy_decide_graphql.c) */
void graphql_decide_transport(const struct policy_endpoint *ep, const char *m, const char *canon,
			      struct policy_decision *out);

#endif
