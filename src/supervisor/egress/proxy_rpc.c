/* proxy_rpc.c - the json-rpc / mcp side of one HTTP exchange: the POSTed
 * body waits whole in the agent's input buffer (capped by the endpoint's
 * max_body_bytes), is parsed once (jsonrpc.h) and every call in it judged;
 * one denied call denies the whole batch and none of it is sent. The exact
 * bytes judged are the bytes forwarded. A refusal is answered as upstream
 * does (HTTP 403, X-OpenShell-Policy) with a JSON-RPC error object for each
 * request id, so a JSON-RPC client reads it as an error of its own calls. */
#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "parse.h"
#include "proxy_internal.h"

/* Our code for a call the sandbox policy refused (server-defined range). */
#define RPC_POLICY_DENIED (-32001)
/* ...and for calls of a refused batch that were not themselves denied. */
#define RPC_BATCH_REFUSED (-32002)

static const char *rpc_event(const struct conn *c)
{
	return c->ep->protocol == POLICY_PROTO_MCP ? "mcp" : "jsonrpc";
}

static json_t *error_object(json_t *id, int code, const char *message, json_t *data)
{
	json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (data)
		json_object_set_new(e, "data", data);
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
			 e);
}

static json_t *denial_data(struct conn *c, const struct policy_decision *d, const char *reason,
			   const char *rpc_method, const char *path)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "error", "policy_denied",
			      "policy", d && d->policy ? d->policy : c->policy_name, "reason",
			      reason, "path", path, "host", c->host, "port", (int)c->port, "detail",
			      d ? d->detail : "");
	if (d && d->rule[0])
		json_object_set_new(o, "rule", json_string(d->rule));
	if (rpc_method)
		json_object_set_new(o, "method", json_string(rpc_method));
	return o;
}

/* One error per request of the payload (none for notifications; a single
 * error with id null when there is no request to answer). */
static void reply_rpc(struct conn *c, const struct jsonrpc_payload *p, size_t denied, int code,
		      const char *message, json_t *data)
{
	json_t *body = NULL;
	size_t ids = 0;
	for (size_t i = 0; p && i < p->n; i++)
		ids += p->msgs[i].kind == JSONRPC_REQUEST;
	if (p && p->batch && ids) {
		body = json_array();
		for (size_t i = 0; i < p->n; i++) {
			if (p->msgs[i].kind != JSONRPC_REQUEST)
				continue;
			bool it = i == denied;
			json_array_append_new(
				body, error_object(p->msgs[i].id, it ? code : RPC_BATCH_REFUSED,
						   it ? message
						      : "not sent: another call in this batch was "
							"refused",
						   it ? json_incref(data) : NULL));
		}
	} else {
		json_t *id =
			p && p->msgs[denied].kind == JSONRPC_REQUEST ? p->msgs[denied].id : NULL;
		body = error_object(id, code, message, json_incref(data));
	}
	json_decref(data);
	reply_json(c, 403, body, c->policy_name[0] ? c->policy_name : NULL);
}

/* A body that is not a valid message: refused even under audit (there is
 * no single meaning to forward). */
static void refuse_invalid(struct conn *c, const struct jsonrpc_payload *p, int code,
			   const char *why, const char *path)
{
	char detail[POLICY_DETAIL_MAX];
	snprintf(detail, sizeof detail, "JSON-RPC request rejected: %.280s", why);
	audit_decision(c, rpc_event(c), "deny", "rpc_invalid", NULL, path, detail);
	struct policy_decision d = { .reason = POLICY_R_RPC_INVALID };
	snprintf(d.detail, sizeof d.detail, "%s", detail);
	reply_rpc(c, p, 0, code, detail, denial_data(c, &d, "rpc_invalid", NULL, path));
}

static bool accepts_event_stream(const struct http_request *req)
{
	const struct http_header *h = http_header_find(&req->headers, "accept");
	if (!h)
		return false;
	static const char want[] = "text/event-stream";
	for (size_t i = 0; i + sizeof want - 1 <= h->value.len; i++)
		if (str_ieq(h->value.p + i, sizeof want - 1, want, sizeof want - 1))
			return true;
	return false;
}

/* MCP streamable HTTP's bodiless exchanges: GET opens the server's event
 * stream, DELETE ends the session. */
static enum rpc_step judge_bodiless(struct conn *c, const struct http_request *req,
				    const char *method, const char *path)
{
	bool body = req->framing.chunked || req->framing.content_length > 0;
	const char *why = NULL;
	if (body)
		why = "MCP GET and DELETE requests carry no body";
	else if (!strcmp(method, "GET") && !accepts_event_stream(req))
		why = "an MCP GET must open the server's event stream (Accept: text/event-stream)";
	if (!why) {
		audit_decision(c, rpc_event(c), "allow", "allowed", NULL, path,
			       !strcmp(method, "GET") ? "receive stream" : "session end");
		return RPC_FORWARD;
	}
	audit_decision(c, rpc_event(c), "deny", "rpc_invalid", NULL, path, why);
	struct policy_decision d = { .reason = POLICY_R_RPC_INVALID };
	snprintf(d.detail, sizeof d.detail, "%s", why);
	reply_rpc(c, NULL, 0, -32600, why, denial_data(c, &d, "rpc_invalid", NULL, path));
	return RPC_ANSWERED;
}

static bool mcp_batches_ok(const struct http_request *req)
{
	const struct http_header *h = http_header_find(&req->headers, "mcp-protocol-version");
	return h && str_ieq(h->value.p, h->value.len, "2025-03-26", 10);
}

/* Judges every call; false (answered) when one is denied. */
static bool judge_calls(struct conn *c, const struct jsonrpc_payload *p, const char **tools,
			const char *path)
{
	struct policy_decision d;
	for (size_t i = 0; i < p->n; i++) {
		const struct jsonrpc_msg *m = &p->msgs[i];
		if (m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR)
			continue; /* an MCP client answering its server */
		policy_decide_rpc_call(c->gen, c->ep, m->method, tools[i], &d);
		if (d.verdict == POLICY_DENY) {
			const char *reason = policy_reason_name(d.reason);
			audit_decision(c, rpc_event(c), "deny", reason, m->method, path, d.detail);
			int code = d.reason == POLICY_R_RPC_INVALID ? -32600 : RPC_POLICY_DENIED;
			reply_rpc(c, p, i, code, d.detail,
				  denial_data(c, &d, reason, m->method, path));
			return false;
		}
	}
	/* Only a batch wholly allowed is recorded as allowed, call by call. */
	for (size_t i = 0; i < p->n; i++) {
		const struct jsonrpc_msg *m = &p->msgs[i];
		if (m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR) {
			audit_decision(c, rpc_event(c), "allow", "allowed", NULL, path,
				       "response to the server");
			continue;
		}
		policy_decide_rpc_call(c->gen, c->ep, m->method, tools[i], &d);
		audit_decision(c, rpc_event(c), d.verdict == POLICY_AUDIT ? "audit" : "allow",
			       policy_reason_name(d.reason), m->method, path, d.detail);
	}
	return true;
}

enum rpc_step proxy_judge_rpc(struct conn *c, const struct http_request *req, const char *method,
			      const char *path, size_t consumed)
{
	if (!c->ep || !policy_protocol_is_rpc(c->ep->protocol))
		return RPC_FORWARD;
	if (strcmp(method, "POST") != 0)
		return judge_bodiless(c, req, method, path);
	uint64_t cap = c->ep->json_rpc_max_body_bytes;
	struct whole_body w = { "JSON-RPC", cap, "max_body_bytes", "rpc_chunked",
				"rpc_body_too_large" };
	enum rpc_step st = proxy_whole_body(c, req, &w, consumed);
	if (st != RPC_FORWARD)
		return st;
	size_t len = (size_t)req->framing.content_length;
	struct jsonrpc_payload p;
	enum jsonrpc_fault fault;
	os_error err = { 0 };
	if (jsonrpc_parse(c->cin.data + consumed, len, cap, &p, &fault, &err) < 0) {
		refuse_invalid(c, NULL, jsonrpc_fault_code(fault), err.msg, path);
		return RPC_ANSWERED;
	}
	const char *tools[JSONRPC_BATCH_MAX] = { 0 };
	bool ok = true;
	if (c->ep->protocol == POLICY_PROTO_MCP) {
		if (jsonrpc_mcp_check(&p, mcp_batches_ok(req), tools, &err) < 0) {
			refuse_invalid(c, &p, -32600, err.msg, path);
			ok = false;
		}
	} else if (jsonrpc_has_response(&p)) {
		refuse_invalid(c, &p, -32600,
			       "JSON-RPC response frames are not permitted from client to server",
			       path);
		ok = false;
	}
	if (ok)
		ok = judge_calls(c, &p, tools, path);
	jsonrpc_payload_free(&p);
	return ok ? RPC_FORWARD : RPC_ANSWERED;
}
