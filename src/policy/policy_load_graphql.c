/* policy_load_graphql.c - the graphql parts of an endpoint: rule matchers
 * on operation type, operation name and root fields, the persisted-query
 * mode and registry, and the body cap. Keys, validation and messages follow
 * OpenShell (crates/openshell-policy GraphqlOperationDef, L7AllowDef and
 * the sandbox's endpoint validation). */
#include <stdlib.h>
#include <string.h>

#include "graphql.h"
#include "policy_load_int.h"

void policy_graphql_ops_free(struct policy_graphql_op *ops, size_t n)
{
	for (size_t i = 0; ops && i < n; i++) {
		free(ops[i].name);
		free(ops[i].key);
		for (size_t f = 0; f < ops[i].n_fields; f++)
			free(ops[i].fields[f]);
		free(ops[i].fields);
	}
	free(ops);
}

/* A GraphQL name, or (glob) one with `*` wildcards: the other glob
 * metacharacters upstream knows are refused, never read literally. */
static bool name_ok(const char *s, bool glob)
{
	if (!*s || strlen(s) > 256 || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (glob && *s == '*')))
			return false;
	return true;
}

static void load_type(struct lctx *c, const struct ynode *parent, const struct ynode *v,
		      struct policy_graphql_op *op)
{
	const char *s;
	op->type = -1;
	size_t old = kp_push(c, ".operation_type");
	if (!v)
		lerr(c, parent, "operation_type must be query, mutation, or subscription");
	else if (get_str(c, v, "query, mutation, or subscription", &s) &&
		 (op->type = graphql_op_type_parse(s)) < 0)
		lerr(c, v, "operation_type must be query, mutation, or subscription, got '%.64s'",
		     s);
	kp_pop(c, old);
}

static void load_fields(struct lctx *c, const struct ynode *v, bool glob,
			struct policy_graphql_op *op)
{
	if (!want_seq(c, v, true))
		return;
	op->fields = calloc(v->seq.n, sizeof *op->fields);
	if (!op->fields) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < v->seq.n; i++) {
		const char *s;
		size_t old = kp_push(c, "[%zu]", i);
		if (get_str(c, v->seq.items[i], "a field name", &s)) {
			if (!name_ok(s, glob))
				lerr_expected(c, v->seq.items[i],
					      glob ? "a root field name or a glob using only `*`"
						   : "a root field name");
			else
				op->fields[op->n_fields++] = ldup(c, s);
		}
		kp_pop(c, old);
	}
}

/* {operation_type, operation_name, fields}: a rule's matcher (glob) or a
 * registry entry (names as the operation has them). */
static void load_op(struct lctx *c, const struct ynode *n, bool glob, struct policy_graphql_op *op)
{
	const char *s;
	load_type(c, n, ynode_map_get(n, "operation_type"), op);
	const struct ynode *v = ynode_map_get(n, "operation_name");
	size_t old = kp_push(c, ".operation_name");
	if (v && get_str(c, v, "an operation name", &s)) {
		if (!name_ok(s, glob))
			lerr_expected(c, v,
				      glob ? "an operation name or a glob using only `*`"
					   : "an operation name");
		else
			op->name = ldup(c, s);
	}
	kp_pop(c, old);
	if ((v = ynode_map_get(n, "fields"))) {
		old = kp_push(c, ".fields");
		load_fields(c, v, glob, op);
		kp_pop(c, old);
	}
}

void load_graphql_matcher(struct lctx *c, const struct ynode *n, struct policy_rule *r)
{
	static const char *const keys[] = { "operation_type", "operation_name", "fields",  "method",
					    "path",	      "query",		"command", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	static const char *const rest[] = { "method", "path", "query" };
	for (size_t i = 0; i < 3; i++) {
		const struct ynode *v = ynode_map_get(n, rest[i]);
		if (v) {
			size_t old = kp_push(c, ".%s", rest[i]);
			lerr(c, v,
			     "graphql rules match operation_type, operation_name and fields, not "
			     "%s (the endpoint's path selects the GraphQL URL)",
			     rest[i]);
			kp_pop(c, old);
		}
	}
	r->graphql = calloc(1, sizeof *r->graphql);
	if (!r->graphql) {
		lerr_oom(c);
		return;
	}
	load_op(c, n, true, r->graphql);
}

static void load_registry(struct lctx *c, const struct ynode *v, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "operation_type", "operation_name", "fields", NULL };
	if (!want_map(c, v))
		return;
	ep->graphql_registry = calloc(v->map.n ? v->map.n : 1, sizeof *ep->graphql_registry);
	if (!ep->graphql_registry) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < v->map.n; i++) {
		const char *k = v->map.pairs[i].key->scalar.value;
		const struct ynode *e = v->map.pairs[i].value;
		size_t old = kp_push(c, "[%.64s]", k);
		struct policy_graphql_op *op = &ep->graphql_registry[ep->n_graphql_registry++];
		op->key = ldup(c, k);
		if (!k[strspn(k, " \t")])
			lerr(c, e, "a persisted query id must not be empty");
		else if (want_map(c, e)) {
			check_keys(c, e, keys);
			load_op(c, e, false, op);
		}
		kp_pop(c, old);
	}
}

bool load_graphql_field(struct lctx *c, const char *k, const struct ynode *v,
			struct policy_endpoint *ep)
{
	const char *s;
	uint64_t x;
	if (!strcmp(k, "persisted_queries")) {
		if (get_str(c, v, "deny or allow_registered", &s)) {
			if (!strcmp(s, "allow_registered"))
				ep->graphql_allow_registered = true;
			else if (strcmp(s, "deny") != 0)
				lerr(c, v,
				     "persisted_queries must be 'deny' or 'allow_registered', got "
				     "'%.64s'",
				     s);
		}
	} else if (!strcmp(k, "graphql_persisted_queries")) {
		load_registry(c, v, ep);
	} else if (!strcmp(k, "graphql_max_body_bytes")) {
		if (!get_uint(c, v, 1, UINT32_MAX, "a positive integer", &x))
			return true;
		if (x > POLICY_JSONRPC_MAX_BODY_LIMIT) {
			lwarn(c, v,
			      "%llu bytes is above this proxy's inspection buffer; bodies are "
			      "capped "
			      "at %u bytes (larger ones are refused, never passed uninspected)",
			      (unsigned long long)x, POLICY_JSONRPC_MAX_BODY_LIMIT);
			x = POLICY_JSONRPC_MAX_BODY_LIMIT;
		}
		ep->graphql_max_body_bytes = (uint32_t)x;
	} else {
		return false;
	}
	return true;
}

static bool has_graphql_rule(const struct policy_rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].graphql)
			return true;
	return false;
}

/* websocket: GraphQL rules or persisted queries make every client text
 * message a GraphQL-over-WebSocket frame (proxy_ws_graphql.c); the body
 * cap is the message cap there. */
static void check_graphql_ws(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	size_t old = c->plen;
	const struct ynode *v = ynode_map_get(n, "graphql_max_body_bytes");
	ep->graphql_ws = has_graphql_rule(ep->rules, ep->n_rules) ||
			 has_graphql_rule(ep->deny_rules, ep->n_deny) ||
			 ynode_map_get(n, "persisted_queries") ||
			 ynode_map_get(n, "graphql_persisted_queries");
	ep->graphql_max_body_bytes = 0;
	if (v) {
		kp_push(c, ".graphql_max_body_bytes");
		lwarn(c, v,
		      "ignored on a websocket endpoint: a GraphQL message is capped as every "
		      "WebSocket text message is");
		kp_pop(c, old);
	}
}

void check_graphql_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "persisted_queries", "graphql_persisted_queries",
					    "graphql_max_body_bytes" };
	size_t old = c->plen;
	if (ep->protocol == POLICY_PROTO_WEBSOCKET) {
		check_graphql_ws(c, n, ep);
	} else if (ep->protocol != POLICY_PROTO_GRAPHQL) {
		for (size_t i = 0; i < 3; i++) {
			const struct ynode *v = ynode_map_get(n, keys[i]);
			if (!v)
				continue;
			kp_push(c, ".%s", keys[i]);
			lwarn(c, v,
			      "GraphQL-specific endpoint fields are ignored unless protocol is "
			      "graphql or websocket");
			kp_pop(c, old);
		}
		return;
	}
	const struct ynode *reg;
	if ((reg = ynode_map_get(n, "graphql_persisted_queries")) &&
	    !ep->graphql_allow_registered) {
		kp_push(c, ".graphql_persisted_queries");
		lwarn(c, reg,
		      "unused: registered persisted queries are honoured only with "
		      "persisted_queries: allow_registered");
		kp_pop(c, old);
	}
	if (ep->protocol == POLICY_PROTO_WEBSOCKET)
		return;
	if (!ep->graphql_max_body_bytes)
		ep->graphql_max_body_bytes = POLICY_GRAPHQL_MAX_BODY_DEFAULT;
	/* access: OpenShell expands it to operation_type rules (read-only:
	 * query; read-write: + mutation; full: every type), policy_decide_graphql. */
	if (!ynode_map_get(n, "access") && !ynode_map_get(n, "rules")) {
		kp_push(c, ".protocol");
		lerr(c, ynode_map_get(n, "protocol"),
		     "a graphql endpoint needs access or rules (operation_type, operation_name, "
		     "fields)");
		kp_pop(c, old);
	}
}
