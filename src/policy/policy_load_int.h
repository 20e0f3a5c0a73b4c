/* policy_load_int.h - internals shared by the policy loader's files: the
 * loading context (file name, current key path, collected errors) and typed
 * accessors that report "FILE:LINE:COL: key.path: expected X, got Y". */
#ifndef OS_POLICY_LOAD_INT_H
#define OS_POLICY_LOAD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "yamltree.h"

struct lctx {
	const char *file;
	struct policy_diag *diag;
	os_error *err; /* receives the first message */
	char path[768];
	size_t plen;
	bool failed;
	bool oom;
	size_t n_fs_paths;
	const struct policy_limits *lim;
	struct policy_doc *doc;
	bool saw_tls_skip_rest; /* one note per file is enough */
	enum policy_protocol ep_proto; /* protocol of the endpoint being loaded */
};

/* Key path: push returns the previous length to pass to kp_pop. */
size_t kp_push(struct lctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kp_pop(struct lctx *c, size_t old);

/* Records one error at node n (NULL: 1:1) under the current key path. */
void lerr(struct lctx *c, const struct ynode *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "expected WHAT, got <value or kind>". */
void lerr_expected(struct lctx *c, const struct ynode *n, const char *what);
void lerr_oom(struct lctx *c);
/* Records one warning at n under the current key path (kept on the doc). */
void lwarn(struct lctx *c, const struct ynode *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Checks every key of map against allowed (NULL-terminated); errors name the key. */
void check_keys(struct lctx *c, const struct ynode *map, const char *const allowed[]);

bool want_map(struct lctx *c, const struct ynode *n);
bool want_seq(struct lctx *c, const struct ynode *n, bool nonempty);
/* A non-null scalar (plain or quoted); *out points into the tree. */
bool get_str(struct lctx *c, const struct ynode *n, const char *what, const char **out);
bool get_bool(struct lctx *c, const struct ynode *n, bool *out);
/* A plain decimal integer in [min, max]. */
bool get_uint(struct lctx *c, const struct ynode *n, uint64_t min, uint64_t max, const char *what,
	      uint64_t *out);
/* Duplicates s, recording ENOMEM. */
char *ldup(struct lctx *c, const char *s);

/* Frees n rules and the array (policy_model.c). */
void policy_rules_free(struct policy_rule *r, size_t n);

/* Endpoint parsing (policy_load_endpoint.c). */
void load_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
/* A matcher's globs into q (policy_load_endpoint.c); tool: tool-name rules. */
void load_matcher_globs(struct lctx *c, const struct ynode *v, bool tool, struct policy_query *q);
/* json-rpc / mcp (policy_load_rpc.c): one rule's matcher, the `json_rpc:`
 * and `mcp:` stanzas, and the checks that need the whole endpoint. */
void load_rpc_matcher(struct lctx *c, const struct ynode *n, struct policy_rule *r);
void load_json_rpc_stanza(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
void load_mcp_stanza(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
void check_rpc_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
/* graphql (policy_load_graphql.c): one rule's matcher, the endpoint keys
 * (true when k is one of them), and the checks that need the endpoint. */
void load_graphql_matcher(struct lctx *c, const struct ynode *n, struct policy_rule *r);
bool load_graphql_field(struct lctx *c, const char *k, const struct ynode *v,
			struct policy_endpoint *ep);
void check_graphql_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
void policy_graphql_ops_free(struct policy_graphql_op *ops, size_t n);
/* credential_signing, signing_service, signing_region and
 * request_body_credential_rewrite (policy_load_signing.c): true when k is
 * one of them; the checks that need the whole endpoint. */
bool load_signing_field(struct lctx *c, const char *k, const struct ynode *v,
			struct policy_endpoint *ep);
void check_signing_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
/* protocol sql (policy_load_sql.c): one rule's {command} matcher; the
 * warning for `command` in another protocol's rule; the checks that need
 * the whole endpoint (they also drop its never-evaluated rules). */
void load_sql_matcher(struct lctx *c, const struct ynode *n);
void ignore_sql_command(struct lctx *c, const struct ynode *n);
void check_sql_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep);
/* network_middlewares (policy_load_middleware.c). */
void load_middlewares(struct lctx *c, const struct ynode *n);
void policy_middlewares_free(struct policy_middleware *m, size_t n);
/* Cross-endpoint checks (policy_overlap.c): host:port overlaps must agree. */
void check_overlaps(struct lctx *c);

#endif
