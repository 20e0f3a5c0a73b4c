/* policy_decide_graphql.c - graphql decisions: the HTTP exchange that
 * carries operations (GET or POST on the endpoint's path), then each
 * operation by type, name and root fields, with OpenShell's semantics: a
 * persisted query sent without its document is judged as its registry
 * entry, and refused when the endpoint registers none under its key; a
 * deny rule wins when one of the operation's fields matches it; an allow
 * rule with fields must cover every root field the operation selects. */
#include <stdio.h>
#include <string.h>

#include "graphql.h"
#include "pathglob.h"
#include "policy_gen_int.h"

static void verdict(struct policy_decision *out, const struct policy_endpoint *ep, bool violation,
		    enum policy_reason r)
{
	out->reason = r;
	out->verdict = !violation			     ? POLICY_ALLOW
		       : ep->enforcement == POLICY_ENF_AUDIT ? POLICY_AUDIT
							     : POLICY_DENY;
}

void graphql_decide_transport(const struct policy_endpoint *ep, const char *m, const char *canon,
			      struct policy_decision *out)
{
	snprintf(out->rule, sizeof out->rule, ep->path ? "path" : "transport");
	if (!policy_endpoint_path_match(ep->path, canon)) {
		verdict(out, ep, true, POLICY_R_NO_MATCHING_RULE);
		snprintf(out->detail, sizeof out->detail, "%s %.200s is outside the endpoint path",
			 m, canon);
		return;
	}
	snprintf(out->rule, sizeof out->rule, "transport");
	if (!strcmp(m, "GET") || !strcmp(m, "POST")) {
		out->verdict = POLICY_ALLOW;
		out->reason = POLICY_R_ALLOWED;
		snprintf(out->detail, sizeof out->detail, "%s %.200s carries GraphQL operations", m,
			 canon);
		return;
	}
	out->reason = POLICY_R_GRAPHQL_INVALID; /* nothing the rules could judge */
	snprintf(out->detail, sizeof out->detail,
		 "unsupported GraphQL HTTP method %s (GraphQL is sent with GET or POST)", m);
}

/* The operation as the rules see it: a hash-only persisted query becomes
 * its registry entry (NULL when it has none). */
static const struct policy_graphql_op *registered(const struct policy_endpoint *ep, const char *key)
{
	for (size_t i = 0; key && ep->graphql_allow_registered && i < ep->n_graphql_registry; i++)
		if (ep->graphql_registry[i].key && !strcmp(ep->graphql_registry[i].key, key))
			return &ep->graphql_registry[i];
	return NULL;
}

static bool field_matches(const struct policy_graphql_op *rule, const char *field)
{
	for (size_t i = 0; i < rule->n_fields; i++)
		if (glob_star_match(rule->fields[i], field))
			return true;
	return false;
}

static bool head_matches(const struct policy_graphql_op *rule, const struct policy_graphql_op *op)
{
	if (rule->type != op->type)
		return false;
	return !rule->name || glob_star_match(rule->name, op->name ? op->name : "");
}

/* Deny: any selected field matching (or a rule without fields). */
static bool deny_matches(const struct policy_graphql_op *rule, const struct policy_graphql_op *op)
{
	if (!head_matches(rule, op))
		return false;
	if (!rule->n_fields)
		return true;
	for (size_t i = 0; i < op->n_fields; i++)
		if (field_matches(rule, op->fields[i]))
			return true;
	return false;
}

/* Allow: every selected field covered (so one safe field cannot carry an
 * unlisted one), or a rule without fields. */
static bool allow_matches(const struct policy_graphql_op *rule, const struct policy_graphql_op *op)
{
	if (!head_matches(rule, op))
		return false;
	if (!rule->n_fields)
		return true;
	if (!op->n_fields)
		return false;
	for (size_t i = 0; i < op->n_fields; i++)
		if (!field_matches(rule, op->fields[i]))
			return false;
	return true;
}

/* An access preset as OpenShell expands it for graphql (access_preset_rules):
 * read-only allows queries, read-write queries and mutations, full every
 * operation type. */
static bool access_allows(enum policy_access a, const struct policy_graphql_op *op)
{
	switch (a) {
	case POLICY_ACCESS_FULL:
		return true;
	case POLICY_ACCESS_READ_WRITE:
		return op->type == GRAPHQL_QUERY || op->type == GRAPHQL_MUTATION;
	case POLICY_ACCESS_READ_ONLY:
		return op->type == GRAPHQL_QUERY;
	case POLICY_ACCESS_NONE:
		break;
	}
	return false;
}

static void describe(struct policy_decision *out, const struct policy_endpoint *ep, bool violation,
		     enum policy_reason r, const struct policy_graphql_op *op)
{
	verdict(out, ep, violation, r);
	char fields[160] = "";
	size_t o = 0;
	for (size_t i = 0; i < op->n_fields && o < sizeof fields; i++)
		o += (size_t)snprintf(fields + o, sizeof fields - o, "%s%s", i ? "," : "",
				      op->fields[i]);
	/* "... blocked by deny_rules[0] of policy P", or, no rule decided,
	 * "... not permitted by policy P". */
	snprintf(out->detail, sizeof out->detail, "GraphQL %s %.100s {%s} %s by %s%spolicy %s",
		 graphql_op_type_name((enum graphql_op_type)op->type), op->name ? op->name : "-",
		 fields,
		 r == POLICY_R_DENY_RULE ? "blocked"
		 : violation		 ? "not permitted"
					 : "permitted",
		 out->rule[0] ? out->rule : "", out->rule[0] ? " of " : "", out->policy);
}

void policy_decide_graphql(const struct policy_gen *g, const struct policy_endpoint *ep,
			   const struct policy_graphql_request *req, struct policy_decision *out)
{
	memset(out, 0, sizeof *out);
	out->endpoint = ep;
	out->policy = g->doc->networks[ep->policy_index].name;
	struct policy_graphql_op sent = { 0 };
	const struct policy_graphql_op *op = &sent;
	if (!req->type) {
		if (!(op = registered(ep, req->key))) {
			snprintf(out->rule, sizeof out->rule, "persisted_queries");
			verdict(out, ep, true, POLICY_R_GRAPHQL_UNREGISTERED);
			snprintf(out->detail, sizeof out->detail,
				 "GraphQL persisted query %.100s is not registered", req->key);
			return;
		}
	} else {
		sent.type = graphql_op_type_parse(req->type);
		sent.name = (char *)req->name; /* read only below */
		sent.fields = (char **)req->fields;
		sent.n_fields = req->n_fields;
	}
	for (size_t i = 0; i < ep->n_deny; i++)
		if (ep->deny_rules[i].graphql && deny_matches(ep->deny_rules[i].graphql, op)) {
			snprintf(out->rule, sizeof out->rule, "deny_rules[%zu]", i);
			describe(out, ep, true, POLICY_R_DENY_RULE, op);
			return;
		}
	if (ep->protocol == POLICY_PROTO_GRAPHQL && access_allows(ep->access, op)) {
		snprintf(out->rule, sizeof out->rule, "access:%s", policy_access_name(ep->access));
		describe(out, ep, false, POLICY_R_ALLOWED, op);
		return;
	}
	for (size_t i = 0; i < ep->n_rules; i++)
		if (ep->rules[i].graphql && allow_matches(ep->rules[i].graphql, op)) {
			snprintf(out->rule, sizeof out->rule, "rules[%zu]", i);
			describe(out, ep, false, POLICY_R_ALLOWED, op);
			return;
		}
	describe(out, ep, true, POLICY_R_NO_MATCHING_RULE, op);
}
