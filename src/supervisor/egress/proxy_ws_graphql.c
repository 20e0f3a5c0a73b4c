/* proxy_ws_graphql.c - GraphQL over WebSocket on a `protocol: websocket`
 * endpoint whose rules name GraphQL operations (upstream's
 * websocket_graphql_policy). Each client text message is a
 * graphql-transport-ws / graphql-ws message (graphql_ws.h): a `subscribe`
 * or `start` carries one operation, judged by the endpoint's graphql rules
 * exactly as GraphQL over HTTP is (its fragments, aliases and persisted
 * queries resolved by the same parser); the generic WEBSOCKET_TEXT rules
 * cannot allow it, but a deny rule that matches WEBSOCKET_TEXT on the
 * upgrade's path still refuses it. Control messages go on unjudged, as
 * upstream lets them. A message that cannot be judged is refused even
 * under `enforcement: audit`. A refusal closes the WebSocket with 1008, as
 * upstream does; the payload (variables, credentials) is never logged. */
#include <stdio.h>
#include <string.h>

#include "graphql_ws.h"
#include "proxy_internal.h"
#include "wsframe.h"

/* A REST deny rule on WEBSOCKET_TEXT: NULL when none matches (or audit). */
static const char *rest_deny(struct conn *c, const char *target, const char *logged, char *detail,
			     size_t cap)
{
	struct policy_decision d;
	policy_decide_request(c->gen, c->ep, POLICY_WEBSOCKET_TEXT_METHOD, target, NULL, 0, &d);
	if (d.reason != POLICY_R_DENY_RULE)
		return NULL;
	if (d.verdict == POLICY_AUDIT) {
		audit_decision(c, "websocket", "audit", policy_reason_name(d.reason),
			       POLICY_WEBSOCKET_TEXT_METHOD, logged, d.detail);
		return NULL;
	}
	snprintf(detail, cap, "%s", d.detail);
	return policy_reason_name(d.reason);
}

static const char *judge_operation(struct conn *c, const struct graphql_ws_message *m,
				   const char *logged, char *detail, size_t cap)
{
	struct policy_decision d;
	char label[160];
	const struct graphql_http_op *op = &m->req.ops[0];
	proxy_graphql_decide(c, op, &d);
	int n = snprintf(label, sizeof label, "%s ", m->type);
	proxy_graphql_op_label(op, label + n, sizeof label - (size_t)n);
	if (d.verdict == POLICY_DENY) {
		snprintf(detail, cap, "%s (graphql_ws_type=%s)", d.detail, m->type);
		return policy_reason_name(d.reason);
	}
	audit_decision(c, "graphql", d.verdict == POLICY_AUDIT ? "audit" : "allow",
		       policy_reason_name(d.reason), label, logged, d.detail);
	return NULL;
}

const char *proxy_ws_graphql_judge(struct conn *c, const char *target, const char *logged,
				   const char *text, size_t len, char *detail, size_t cap)
{
	struct graphql_ws_message m;
	os_error err = { 0 };
	if (graphql_ws_classify(text, len, WS_TEXT_MAX, &m, &err) < 0) {
		snprintf(detail, cap, "GraphQL WebSocket message rejected: %.260s", err.msg);
		return policy_reason_name(POLICY_R_GRAPHQL_INVALID);
	}
	const char *why = NULL;
	if (m.kind == GRAPHQL_WS_CONTROL) {
		char what[80];
		snprintf(what, sizeof what, "GraphQL WebSocket control message %s", m.type);
		audit_decision(c, "websocket", "allow", "graphql_ws_control", "WEBSOCKET_CONTROL",
			       logged, what);
	} else if (!(why = rest_deny(c, target, logged, detail, cap))) {
		why = judge_operation(c, &m, logged, detail, cap);
	}
	graphql_ws_message_free(&m);
	return why;
}
