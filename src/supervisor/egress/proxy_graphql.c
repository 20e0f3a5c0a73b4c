/* proxy_graphql.c - the graphql side of one HTTP exchange: a GET's query
 * string or a POSTed body (waiting whole in the agent's input buffer,
 * capped by graphql_max_body_bytes) is parsed once (graphql_http.h) and
 * every operation judged; one denied operation refuses the whole request
 * and none of it is sent. The bytes judged are the bytes forwarded. A
 * refusal is a GraphQL error response (HTTP 403, X-OpenShell-Policy, one
 * result per batch item) so a GraphQL client reads it as its own error. */
#include <stdio.h>
#include <string.h>

#include "graphql_http.h"
#include "parse.h"
#include "proxy_internal.h"

static json_t *error_result(const char *message, json_t *ext)
{
	json_t *e = json_pack("{s:s}", "message", message);
	if (ext)
		json_object_set_new(e, "extensions", ext);
	return json_pack("{s:[o]}", "errors", e);
}

static json_t *denial_ext(struct conn *c, const struct policy_decision *d, const char *reason,
			  const char *path)
{
	json_t *o =
		json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "code", "POLICY_DENIED", "policy",
			  d->policy ? d->policy : c->policy_name, "reason", reason, "path", path,
			  "host", c->host, "port", (int)c->port, "detail", d->detail);
	if (d->rule[0])
		json_object_set_new(o, "rule", json_string(d->rule));
	return o;
}

/* The refusal: one result per batch item (the refused one says why). */
static void reply_graphql(struct conn *c, const struct graphql_http_request *r, size_t denied,
			  const struct policy_decision *d, const char *reason, const char *path)
{
	json_t *body;
	if (r && r->batch) {
		body = json_array();
		for (size_t i = 0; i < r->n; i++)
			json_array_append_new(
				body,
				i == denied
					? error_result(d->detail, denial_ext(c, d, reason, path))
					: error_result("not sent: another operation in this "
						       "batch was refused",
						       NULL));
	} else {
		body = error_result(d->detail, denial_ext(c, d, reason, path));
	}
	reply_json(c, 403, body, c->policy_name[0] ? c->policy_name : NULL);
}

/* Not a request the rules can judge: refused even under audit. */
static enum rpc_step refuse_invalid(struct conn *c, const char *why, const char *path)
{
	struct policy_decision d = { .reason = POLICY_R_GRAPHQL_INVALID };
	snprintf(d.detail, sizeof d.detail, "GraphQL request rejected: %.400s", why);
	audit_decision(c, "graphql", "deny", "graphql_invalid", NULL, path, d.detail);
	reply_graphql(c, NULL, 0, &d, "graphql_invalid", path);
	return RPC_ANSWERED;
}

void proxy_graphql_op_label(const struct graphql_http_op *o, char *out, size_t n)
{
	if (o->persisted_only)
		snprintf(out, n, "persisted %.80s", o->key);
	else
		snprintf(out, n, "%s %.80s", graphql_op_type_name(o->op.type),
			 o->op.name ? o->op.name : "-");
}

void proxy_graphql_decide(struct conn *c, const struct graphql_http_op *o,
			  struct policy_decision *d)
{
	struct policy_graphql_request q = {
		.type = o->persisted_only ? NULL : graphql_op_type_name(o->op.type),
		.name = o->persisted_only ? o->name : o->op.name,
		.fields = (const char *const *)o->op.fields,
		.n_fields = o->op.n_fields,
		.key = o->key,
	};
	policy_decide_graphql(c->gen, c->ep, &q, d);
}

/* Judges every operation; false (answered) when one is denied. */
static bool judge_ops(struct conn *c, const struct graphql_http_request *r, const char *path)
{
	struct policy_decision d;
	char label[128];
	for (size_t i = 0; i < r->n; i++) {
		proxy_graphql_decide(c, &r->ops[i], &d);
		if (d.verdict != POLICY_DENY)
			continue;
		const char *reason = policy_reason_name(d.reason);
		proxy_graphql_op_label(&r->ops[i], label, sizeof label);
		audit_decision(c, "graphql", "deny", reason, label, path, d.detail);
		reply_graphql(c, r, i, &d, reason, path);
		return false;
	}
	for (size_t i = 0; i < r->n; i++) { /* all allowed: one record each */
		proxy_graphql_decide(c, &r->ops[i], &d);
		proxy_graphql_op_label(&r->ops[i], label, sizeof label);
		audit_decision(c, "graphql", d.verdict == POLICY_AUDIT ? "audit" : "allow",
			       policy_reason_name(d.reason), label, path, d.detail);
	}
	return true;
}

/* Bodies we could not read as the server would: compressed or multipart. */
static const char *unsupported_headers(const struct http_request *req)
{
	const struct http_header *h = http_header_find(&req->headers, "content-encoding");
	if (h && h->value.len && !str_ieq(h->value.p, h->value.len, "identity", 8))
		return "GraphQL request content-encoding is not supported (send it uncompressed)";
	h = http_header_find(&req->headers, "content-type");
	if (h && h->value.len >= 10 && str_ieq(h->value.p, 10, "multipart/", 10))
		return "GraphQL multipart requests are not supported";
	return NULL;
}

/* GraphQL over HTTP: a GET must not carry a mutation (it is not safe). */
static const char *get_problem(const struct http_request *req, const struct graphql_http_request *r)
{
	if (req->framing.chunked || req->framing.content_length > 0)
		return "a GraphQL GET carries no body";
	if (!r->ops[0].persisted_only && r->ops[0].op.type == GRAPHQL_MUTATION)
		return "a GraphQL mutation must be sent with POST, not GET";
	return NULL;
}

static enum rpc_step judge_request(struct conn *c, const struct http_request *req,
				   const char *method, const char *path, size_t consumed)
{
	struct graphql_http_request r;
	os_error err = { 0 };
	const char *why;
	if (!strcmp(method, "GET")) {
		if (graphql_http_parse_get(req->query.p, req->has_query ? req->query.len : 0, &r,
					   &err) < 0)
			return refuse_invalid(c, err.msg, path);
		if ((why = get_problem(req, &r))) {
			graphql_http_request_free(&r);
			return refuse_invalid(c, why, path);
		}
	} else {
		size_t len = (size_t)req->framing.content_length;
		if (graphql_http_parse_post(c->cin.data + consumed, len,
					    c->ep->graphql_max_body_bytes, &r, &err) < 0)
			return refuse_invalid(c, err.msg, path);
	}
	bool ok = judge_ops(c, &r, path);
	graphql_http_request_free(&r);
	return ok ? RPC_FORWARD : RPC_ANSWERED;
}

enum rpc_step proxy_judge_graphql(struct conn *c, const struct http_request *req,
				  const char *method, const char *path, size_t consumed)
{
	if (!c->ep || c->ep->protocol != POLICY_PROTO_GRAPHQL)
		return RPC_FORWARD;
	const char *why = unsupported_headers(req);
	if (why)
		return refuse_invalid(c, why, path);
	if (!strcmp(method, "POST")) {
		struct whole_body w = { "GraphQL", c->ep->graphql_max_body_bytes,
					"graphql_max_body_bytes", "graphql_chunked",
					"graphql_body_too_large" };
		enum rpc_step st = proxy_whole_body(c, req, &w, consumed);
		if (st != RPC_FORWARD)
			return st;
	}
	return judge_request(c, req, method, path, consumed);
}
