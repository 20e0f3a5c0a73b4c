/* policy.h - the sandbox policy v1 (POLICY.md): the validated model, its
 * strict loader, the compiled reference-counted generation and the decisions.
 * A policy is either loaded completely and valid, or not at all. */
#ifndef OS_POLICY_POLICY_H
#define OS_POLICY_POLICY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ssrf.h"

/* Documented limits (POLICY.md "Limits"). */
#define POLICY_MAX_POLICIES 1024
#define POLICY_MAX_ENDPOINTS 4096 /* in the whole file */
#define POLICY_MAX_PATHS 256 /* filesystem paths in total */
#define POLICY_MAX_PATH_LEN 4096
#define POLICY_MAX_BINARIES 1024 /* per policy */
#define POLICY_MAX_RULES 1024 /* rules + deny_rules per endpoint */
#define POLICY_MAX_ERRORS 64 /* collected before the loader gives up */
#define POLICY_NAME_MAX 128
#define POLICY_MAX_WARNINGS 256 /* kept on a loaded document; the rest are counted */

enum policy_protocol {
	POLICY_PROTO_NONE = 0,
	POLICY_PROTO_TCP,
	POLICY_PROTO_REST,
	POLICY_PROTO_JSONRPC, /* JSON-RPC 2.0 over HTTP POST (`json-rpc`) */
	POLICY_PROTO_MCP, /* MCP over streamable HTTP (`mcp`) */
	POLICY_PROTO_GRAPHQL, /* GraphQL over HTTP GET / POST (`graphql`) */
	/* WebSocket (`websocket`): the upgrade judged as REST, then each client
	 * text message as method WEBSOCKET_TEXT on the upgrade's path and query. */
	POLICY_PROTO_WEBSOCKET,
	/* SQL (`sql`): reserved upstream (OpenShell v1 relays it uninspected and
	 * accepts only `enforcement: audit`); here an L4 tunnel, never parsed. */
	POLICY_PROTO_SQL,
};
/* Requests on the endpoint are parsed and judged (TLS is terminated for it). */
static inline bool policy_protocol_inspected(enum policy_protocol p)
{
	return p == POLICY_PROTO_REST || p == POLICY_PROTO_JSONRPC || p == POLICY_PROTO_MCP ||
	       p == POLICY_PROTO_GRAPHQL || p == POLICY_PROTO_WEBSOCKET;
}
/* Requests are judged by REST rules (method, path, query). */
static inline bool policy_protocol_rest_rules(enum policy_protocol p)
{
	return p == POLICY_PROTO_REST || p == POLICY_PROTO_WEBSOCKET;
}
/* The method a WebSocket text message is judged as (OpenShell's name). */
#define POLICY_WEBSOCKET_TEXT_METHOD "WEBSOCKET_TEXT"
static inline bool policy_protocol_is_rpc(enum policy_protocol p)
{
	return p == POLICY_PROTO_JSONRPC || p == POLICY_PROTO_MCP;
}
/* OpenShell's default cap on a JSON-RPC body buffered for inspection. */
#define POLICY_JSONRPC_MAX_BODY_DEFAULT (64 * 1024)
/* OpenShell's default cap on a GraphQL body (graphql_max_body_bytes). */
#define POLICY_GRAPHQL_MAX_BODY_DEFAULT (64 * 1024)
/* Our ceiling: the body waits whole in the proxy's 256 KiB input buffer. */
#define POLICY_JSONRPC_MAX_BODY_LIMIT (192 * 1024)
enum policy_tls { POLICY_TLS_AUTO = 0, POLICY_TLS_SKIP };
/* credential_signing (OpenShell's spelling): sigv4 chooses the payload mode
 * from the agent's x-amz-content-sha256; :body always hashes the body,
 * :no_body always signs UNSIGNED-PAYLOAD. */
enum policy_signing {
	POLICY_SIGN_NONE = 0,
	POLICY_SIGN_SIGV4,
	POLICY_SIGN_SIGV4_BODY,
	POLICY_SIGN_SIGV4_NO_BODY,
};
/* We default to enforce (OpenShell defaults to audit). */
enum policy_enforcement { POLICY_ENF_ENFORCE = 0, POLICY_ENF_AUDIT };
enum policy_access {
	POLICY_ACCESS_NONE = 0,
	POLICY_ACCESS_READ_ONLY, /* GET HEAD OPTIONS, any path */
	POLICY_ACCESS_READ_WRITE, /* + POST PUT PATCH */
	POLICY_ACCESS_FULL, /* every method */
};
enum policy_landlock { POLICY_LANDLOCK_BEST_EFFORT = 0, POLICY_LANDLOCK_HARD_REQUIREMENT };

/* One query parameter matcher: the parameter's values against globs (`*`
 * any run of bytes). */
struct policy_query {
	char *name;
	char **globs;
	size_t n_globs;
};

/* graphql: what a rule or a registered persisted query says of an
 * operation. type: 0 query, 1 mutation, 2 subscription (graphql.h's order);
 * name: a glob on the operation name (a literal name in the registry) or
 * NULL; fields: globs on root field names (names in the registry). */
struct policy_graphql_op {
	int type;
	char *name;
	char **fields;
	size_t n_fields;
	char *key; /* graphql_persisted_queries: the hash or id it is registered under */
};

struct policy_rule {
	/* REST: upper case, or "*". json-rpc/mcp: the JSON-RPC method as
	 * written (case matters), "*", an MCP `tools/` glob, or NULL (an MCP
	 * rule without method: the endpoint's method profile decides). */
	char *method;
	char *path; /* glob on the canonical path (REST only) */
	struct policy_query *query;
	size_t n_query;
	/* mcp: `tool` / `params.name` globs on a tools/call tool name, or NULL. */
	struct policy_query *tool;
	/* graphql: the operation matcher (every graphql rule has one; on a
	 * websocket endpoint, the rules that have one judge GraphQL messages
	 * and have no method or path). */
	struct policy_graphql_op *graphql;
};

struct policy_endpoint {
	/* Normalised pattern: exact, IP literal or label glob (hostglob.h); NULL
	 * for a hostless endpoint, which matches any host on its ports and only
	 * the addresses its allowed_ips cover. */
	char *host;
	uint16_t *ports;
	size_t n_ports;
	enum policy_protocol protocol;
	enum policy_tls tls;
	bool tls_explicit; /* `tls:` was written (upstream: extended config) */
	enum policy_enforcement enforcement;
	enum policy_access access;
	struct policy_rule *rules;
	size_t n_rules;
	struct policy_rule *deny_rules;
	size_t n_deny;
	struct cidr *allowed_ips; /* includes the host itself when it is an IP literal */
	size_t n_allowed;
	char *credential_provider; /* credential_binding.provider, or NULL */
	/* Endpoint path glob, or NULL (every path): chooses the endpoint that
	 * judges each request among those sharing a host:port (policy_route.c). */
	char *path;
	/* %2F stays encoded in the canonical path instead of being refused. */
	bool allow_encoded_slash;
	/* Accepted from upstream, not enforced yet (the loader warns); each only
	 * ever makes this sandbox do less than upstream, never protect less. */
	bool allow_uninspected_credentials;
	/* Placeholders in text request bodies are resolved (proxy_body_creds.c). */
	bool request_body_credential_rewrite;
	/* AWS SigV4 signing with the bound provider's keys (proxy_sigv4.c). */
	enum policy_signing signing;
	char *signing_service; /* required with signing */
	char *signing_region; /* NULL: taken from the request's host name */
	/* Placeholders in WebSocket text messages are resolved (enforced). */
	bool websocket_credential_rewrite;
	/* json-rpc / mcp (`json_rpc:` / `mcp:` stanzas) */
	uint32_t json_rpc_max_body_bytes; /* always set for those protocols */
	bool mcp_strict_tool_names; /* default true */
	bool mcp_allow_all_known_methods; /* default false */
	/* graphql (policy_load_graphql.c) */
	uint32_t graphql_max_body_bytes; /* always set for protocol graphql */
	bool graphql_allow_registered; /* persisted_queries: allow_registered */
	struct policy_graphql_op *graphql_registry;
	size_t n_graphql_registry;
	/* websocket: client text messages are GraphQL-over-WebSocket frames
	 * judged by the graphql rules (upstream's websocket_graphql_policy: set
	 * when a rule names operation_type / operation_name / fields, or the
	 * endpoint configures persisted queries). */
	bool graphql_ws;
	unsigned line, col;
	size_t policy_index; /* back-reference into policy_doc.networks */
	size_t index; /* position in its policy's endpoints */
};

struct policy_binary {
	char *path; /* absolute; may contain `*` / `**` */
};

struct policy_network {
	char *name; /* the key under network_policies */
	struct policy_endpoint *endpoints;
	size_t n_endpoints;
	struct policy_binary *binaries;
	size_t n_binaries;
};

/* run_as_user / run_as_group: absent, `sandbox`, or a number 1..4294967294. */
struct policy_ident {
	bool set;
	bool is_sandbox;
	uint32_t id;
};

/* network_middlewares: the ordered chain run on inspected requests after
 * the L7 decision and before credentials are injected. Only OpenShell's
 * in-process openshell/regex (mode redact) exists here. */
#define POLICY_MAX_MIDDLEWARES 10
#define POLICY_MAX_MIDDLEWARE_PATTERNS 32
struct policy_middleware {
	char *key; /* its network_middlewares key */
	char *name; /* `name`, or the key */
	uint32_t order;
	bool fail_open; /* on_error: fail_open (default fail_closed) */
	char **include, **exclude; /* normalised host patterns */
	size_t n_include, n_exclude;
};

struct policy_doc {
	bool fs_present;
	bool include_workdir; /* true when filesystem_policy is absent */
	char **read_only;
	size_t n_read_only;
	char **read_write;
	size_t n_read_write;
	enum policy_landlock landlock;
	struct policy_ident run_as_user, run_as_group;
	struct policy_middleware *middlewares; /* sorted by order */
	size_t n_middlewares;
	struct policy_network *networks; /* sorted by name */
	size_t n_networks;
	size_t n_endpoints_total;
	/* Warnings of a successful load, each "FILE:LINE:COL: warning: key.path:
	 * ..."; n_warnings_dropped counts those past POLICY_MAX_WARNINGS. */
	char **warnings;
	size_t n_warnings;
	size_t n_warnings_dropped;
	/* The text it was parsed from (NUL-terminated): what a generation is
	 * shown as (GET http://policy.local/v1/policy/current) and how a push
	 * of the same text is told from a change. */
	char *source;
	size_t source_len;
};

/* Every message of a failed load, in document order, each
 * "FILE:LINE:COL: key.path: expected ..., got ...". */
struct policy_diag {
	char **msgs;
	size_t n;
};
void policy_diag_free(struct policy_diag *d);

/* Loader limits; the defaults are the documented ones. The benchmark raises
 * them to build larger policies. */
struct policy_limits {
	size_t max_policies;
	size_t max_endpoints;
};

/* Parses and validates. On failure nothing is returned, err holds the first
 * message and diag (if non-NULL) all of them. */
int policy_parse(const char *name, const char *data, size_t len, struct policy_doc **out,
		 struct policy_diag *diag, os_error *err);
int policy_parse_limits(const char *name, const char *data, size_t len,
			const struct policy_limits *lim, struct policy_doc **out,
			struct policy_diag *diag, os_error *err);
int policy_load_file(const char *path, struct policy_doc **out, struct policy_diag *diag,
		     os_error *err);
void policy_doc_free(struct policy_doc *doc);

const char *policy_access_name(enum policy_access a);

/* ---- compiled generation (policy_compile.c) ---- */

struct policy_gen;

/* Compiles doc (ownership moves to the generation, also on failure).
 * The generation is immutable and starts with one reference. */
struct policy_gen *policy_compile(struct policy_doc *doc, os_error *err);
struct policy_gen *policy_ref(struct policy_gen *g);
void policy_unref(struct policy_gen *g);
const struct policy_doc *policy_gen_doc(const struct policy_gen *g);

/* Holder of the current generation: readers acquire a reference, hot reload
 * swaps in a new one; requests in flight keep the generation they started with. */
struct policy_holder;
struct policy_holder *policy_holder_new(struct policy_gen *initial);
struct policy_gen *policy_holder_acquire(struct policy_holder *h); /* caller unrefs */
void policy_holder_swap(struct policy_holder *h, struct policy_gen *next); /* takes next */
void policy_holder_free(struct policy_holder *h);

/* ---- decisions (policy_decide.c) ---- */

enum policy_verdict { POLICY_DENY = 0, POLICY_ALLOW, POLICY_AUDIT };

/* Closed set; names are stable (audit log). */
enum policy_reason {
	POLICY_R_ALLOWED = 0,
	POLICY_R_NO_ENDPOINT, /* no policy names this host */
	POLICY_R_PORT_NOT_ALLOWED, /* host known, port not */
	POLICY_R_BINARY_NOT_ALLOWED, /* host:port known, no policy with a caller binary */
	POLICY_R_BINARY_UNKNOWN, /* caller identity could not be resolved */
	POLICY_R_INVALID_HOST,
	POLICY_R_METADATA_HOST,
	POLICY_R_SSRF_ALWAYS_BLOCKED,
	POLICY_R_SSRF_INTERNAL,
	POLICY_R_SSRF_CONTROL_PLANE_PORT,
	POLICY_R_PATH_REJECTED, /* canonicalisation refused the target */
	POLICY_R_INVALID_METHOD,
	POLICY_R_DENY_RULE,
	POLICY_R_NO_MATCHING_RULE,
	POLICY_R_NOT_INSPECTED, /* endpoint has no L7 rules: request allowed at L4 */
	POLICY_R_CREDENTIAL_ENDPOINT_MISMATCH,
	POLICY_R_METHOD_OVERRIDE_DENIED, /* allowed as sent, not as the method it overrides to */
	POLICY_R_RPC_INVALID, /* a json-rpc/mcp body that is not a valid message (always refused) */
	POLICY_R_GRAPHQL_INVALID, /* not a GraphQL request we can judge (always refused) */
	POLICY_R_GRAPHQL_UNREGISTERED, /* a persisted query the endpoint does not register */
	POLICY_R_COUNT_
};

#define POLICY_DETAIL_MAX 320

struct policy_decision {
	enum policy_verdict verdict;
	enum policy_reason reason;
	const char *policy; /* matched policy name (smallest), or NULL */
	const struct policy_endpoint *endpoint; /* L4 match, NULL on deny */
	char rule[64]; /* "rules[2]", "deny_rules[0]", "access:read-only" or "" */
	char detail[POLICY_DETAIL_MAX]; /* for humans; never a query string or secret */
};

const char *policy_reason_name(enum policy_reason r);
const char *policy_verdict_name(enum policy_verdict v);

/* L4: may a process whose executable (or an ancestor's, chain[0] being the
 * caller) is in chain[0..n) connect to host:port? */
void policy_decide_connect(const struct policy_gen *g, const char *host, uint16_t port,
			   const char *const *chain, size_t n, struct policy_decision *out);

/* L4 without caller identity, for boundaries where it cannot cross (split
 * pods) and only when the operator chose `split_binary_identity =
 * "endpoint-only"`: binaries lists are not consulted. */
void policy_decide_connect_endpoint_only(const struct policy_gen *g, const char *host,
					 uint16_t port, struct policy_decision *out);

/* True when some policy restricts binaries (what endpoint-only cannot enforce). */
bool policy_restricts_binaries(const struct policy_gen *g);

/* L7 on an endpoint returned by policy_decide_connect. raw_target is the
 * request target as received; canon (cap canon_cap) receives the canonical
 * path to forward (may be NULL). */
void policy_decide_request(const struct policy_gen *g, const struct policy_endpoint *ep,
			   const char *method, const char *raw_target, char *canon,
			   size_t canon_cap, struct policy_decision *out);

/* Per-request routing (OpenShell's route selection, policy_route.c): the
 * endpoint that judges a request for canonical path on a connection that
 * `admitted` (policy_decide_connect's endpoint) opened to host:port, among
 * the endpoints carrying settings that admit the same caller (chain[0..n);
 * n == 0: any caller, the endpoint-only mode): the one whose `path` matches,
 * most specific first (policy_path_specificity), policy order among equals.
 * NULL when no path matches (OpenShell: "no L7 endpoint path matched
 * request"); `admitted` itself when it is a plain L4 endpoint. */
const struct policy_endpoint *policy_route_request(const struct policy_gen *g,
						   const struct policy_endpoint *admitted,
						   const char *host, uint16_t port,
						   const char *const *chain, size_t n,
						   const char *path);
/* Whether any of those endpoints needs TLS terminated (inspected protocol or
 * credential binding, without tls: skip): then the tunnel is inspected. */
bool policy_route_needs_tls(const struct policy_gen *g, const struct policy_endpoint *admitted,
			    const char *host, uint16_t port, const char *const *chain, size_t n);
/* policy_route_request, then policy_decide_request on the endpoint chosen
 * (out->endpoint; NULL, denied with rule "path", when no path matches),
 * with, for rest/websocket, the rules of the other endpoints of policies
 * admitting the caller whose host, port and path match merged in (any deny
 * rule denies, else any allow rule allows; out->policy and out->rule name
 * the one that decided, out->endpoint stays the routed one, whose settings
 * apply). What every caller judging a request on an admitted connection uses. */
void policy_decide_routed_request(const struct policy_gen *g,
				  const struct policy_endpoint *admitted, const char *host,
				  uint16_t port, const char *const *chain, size_t n,
				  const char *method, const char *raw_target, char *canon,
				  size_t canon_cap, struct policy_decision *out);
/* OpenShell's reading of an endpoint `path` (NULL: every path) against a
 * canonical request path (policy_route.c). */
bool policy_endpoint_path_match(const char *pattern, const char *path);
/* The bytes of an endpoint path that are not `*` (0 for none). */
size_t policy_path_specificity(const char *pattern);

/* json-rpc / mcp: one call (request or notification) of a POSTed payload,
 * on an endpoint whose HTTP request policy_decide_request allowed. tool is
 * the tools/call tool name or NULL. A denied call denies its whole batch. */
void policy_decide_rpc_call(const struct policy_gen *g, const struct policy_endpoint *ep,
			    const char *method, const char *tool, struct policy_decision *out);

/* graphql: one operation of a request whose HTTP exchange
 * policy_decide_request allowed. type NULL: a persisted query sent by hash
 * or id alone (key), judged as its registry entry says. */
struct policy_graphql_request {
	const char *type; /* "query", "mutation", "subscription" or NULL */
	const char *name; /* operation name or NULL */
	const char *const *fields;
	size_t n_fields;
	const char *key; /* persisted query hash (preferred) or id, or NULL */
};
void policy_decide_graphql(const struct policy_gen *g, const struct policy_endpoint *ep,
			   const struct policy_graphql_request *op, struct policy_decision *out);

/* mcp: a request or notification the server sends (in an event stream):
 * the same rules judge what either peer may send; the method profile
 * covers the core methods a server sends. A denied one is not delivered. */
void policy_decide_mcp_server_message(const struct policy_gen *g, const struct policy_endpoint *ep,
				      const char *method, struct policy_decision *out);

/* The middlewares whose selector takes host (normalised), in order, into
 * out[0..POLICY_MAX_MIDDLEWARES); returns how many. */
size_t policy_middlewares_for(const struct policy_gen *g, const char *host,
			      const struct policy_middleware **out);

/* SSRF: the resolved address a of an allowed endpoint, before connecting. */
void policy_decide_address(const struct policy_endpoint *ep, const struct ip_addr *a, uint16_t port,
			   struct policy_decision *out);

#endif
