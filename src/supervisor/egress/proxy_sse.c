/* proxy_sse.c - what an MCP server answers, judged before the agent sees
 * it. An event stream (text/event-stream) is judged event by event; a JSON
 * answer (application/json) is read whole (at most SSE_EVENT_MAX bytes)
 * and judged as one event (a forbidden one closes the connection before its
 * body, so the client reads no message). In both, the
 * server's requests and notifications pass the same rules as the agent's
 * calls (policy_decide_mcp_server_message), answers pass, and an event the
 * policy forbids, or one that is not a valid message, is not delivered (it
 * is dropped whole, with an audit record). Event boundaries are found as a
 * client finds them (sse.h), so what is forwarded is exactly what was
 * judged. Such an answer is relayed unframed and ends with the connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "parse.h"
#include "proxy_internal.h"
#include "sse.h"

/* One event's bytes; the agent's buffer must hold a whole one to go on. */
#define SSE_EVENT_MAX (128 * 1024)
#define SSE_IN_CAP (64 * 1024)

static bool media_type_is(const struct http_response *resp, const char *want)
{
	const struct http_header *h = http_header_find(&resp->headers, "content-type");
	size_t n = strlen(want);
	return h && h->value.len >= n && str_ieq(h->value.p, n, want, n) &&
	       (h->value.len == n || h->value.p[n] == ';' || h->value.p[n] == ' ');
}

enum mcp_answer proxy_mcp_answer_kind(const struct conn *c, const struct http_response *resp)
{
	if (!c->ep || c->ep->protocol != POLICY_PROTO_MCP || resp->status < 200 ||
	    resp->status > 299 || resp->status == 202 || resp->status == 204)
		return MCP_ANSWER_NONE;
	if (media_type_is(resp, "text/event-stream"))
		return MCP_ANSWER_SSE;
	if (media_type_is(resp, "application/json"))
		return MCP_ANSWER_JSON;
	return MCP_ANSWER_NONE;
}

int proxy_sse_start(struct conn *c, bool json, os_error *err)
{
	proxy_sse_stop(c);
	c->sse = calloc(1, sizeof *c->sse);
	if (!c->sse)
		return os_error_set(err, ENOMEM, "out of memory");
	sse_init(c->sse, SSE_EVENT_MAX);
	c->mcp_json = json;
	buf_init(&c->sse_in, json ? SSE_EVENT_MAX : SSE_IN_CAP);
	return 0;
}

void proxy_sse_stop(struct conn *c)
{
	if (!c->sse)
		return;
	sse_free(c->sse);
	free(c->sse);
	c->sse = NULL;
	c->mcp_json = false;
	buf_free(&c->sse_in);
}

size_t proxy_sse_held(const struct conn *c)
{
	return c->sse ? c->sse_in.alloc + c->sse->raw.alloc + c->sse->data.alloc : 0;
}

bool proxy_sse_drained(const struct conn *c)
{
	return !c->sse || c->sse_in.len == 0;
}

static void dropped(struct conn *c, const char *reason, const char *method, const char *detail)
{
	audit_decision(c, "mcp_server", "deny", reason, method, NULL, detail);
}

/* Whether the agent may see this message (an event's data, a JSON answer). */
static bool message_allowed(struct conn *c, const char *data, size_t len)
{
	struct jsonrpc_payload p;
	enum jsonrpc_fault fault;
	os_error err = { 0 };
	if (jsonrpc_parse(data, len, SSE_EVENT_MAX, &p, &fault, &err) < 0) {
		char detail[POLICY_DETAIL_MAX];
		snprintf(detail, sizeof detail, "server message rejected: %.260s", err.msg);
		dropped(c, "rpc_invalid", NULL, detail);
		return false;
	}
	bool ok = true;
	struct policy_decision d;
	for (size_t i = 0; ok && i < p.n; i++) {
		const struct jsonrpc_msg *m = &p.msgs[i];
		if (m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR)
			continue;
		policy_decide_mcp_server_message(c->gen, c->ep, m->method, &d);
		if (d.verdict == POLICY_DENY) {
			dropped(c, policy_reason_name(d.reason), m->method, d.detail);
			ok = false;
		}
	}
	for (size_t i = 0; ok && i < p.n; i++) {
		const struct jsonrpc_msg *m = &p.msgs[i];
		if (m->kind == JSONRPC_RESULT || m->kind == JSONRPC_ERROR)
			continue;
		policy_decide_mcp_server_message(c->gen, c->ep, m->method, &d);
		audit_decision(c, "mcp_server", d.verdict == POLICY_AUDIT ? "audit" : "allow",
			       policy_reason_name(d.reason), m->method, NULL, d.detail);
	}
	jsonrpc_payload_free(&p);
	return ok;
}

/* Whether the agent may see this event. */
static bool event_allowed(struct conn *c, const struct sse_event *ev)
{
	if (!ev->has_data)
		return true; /* comments, id, retry: no message */
	if (ev->type[0] && strcmp(ev->type, "message") != 0) {
		char detail[128];
		snprintf(detail, sizeof detail, "event type \"%.64s\" is not an MCP message",
			 ev->type);
		dropped(c, "rpc_invalid", NULL, detail);
		return false;
	}
	return message_allowed(c, ev->data, ev->data_len);
}

/* A JSON answer: once whole, judged and forwarded, or the connection is
 * closed (-1) so that no message reaches the agent. */
static int json_answer(struct conn *c, os_error *err)
{
	if (c->resp_body.state != BODY_DONE) {
		if (c->sse_in.len == c->sse_in.cap) {
			dropped(c, "rpc_invalid", NULL, "MCP JSON answer larger than 131072 bytes");
			return os_error_set(err, EMSGSIZE, "MCP JSON answer too large to judge");
		}
		return 0;
	}
	if (c->sse_in.len == 0)
		return 0;
	if (c->cout.len + c->sse_in.len > c->cout.cap)
		return 0; /* waits for the agent to read */
	if (!message_allowed(c, c->sse_in.data, c->sse_in.len))
		return os_error_set(err, EPERM, "MCP answer carried a message the policy forbids");
	if (buf_append(&c->cout, c->sse_in.data, c->sse_in.len, err) < 0)
		return -1;
	buf_reset(&c->sse_in);
	return 0;
}

int proxy_sse_pump(struct conn *c, bool ueof, bool *moved, os_error *err)
{
	struct body *b = &c->resp_body;
	if (b->state == BODY_UNTIL_CLOSE) {
		size_t room = c->sse_in.cap - c->sse_in.len;
		size_t n = c->uin.len < room ? c->uin.len : room;
		if (n && buf_append(&c->sse_in, c->uin.data, n, err) < 0)
			return -1;
		buf_consume(&c->uin, n);
		*moved |= n > 0;
		if (ueof && c->uin.len == 0)
			b->state = BODY_DONE;
	} else {
		ssize_t n = body_pump(b, &c->uin, &c->sse_in, err);
		if (n < 0)
			return -1;
		*moved |= n > 0;
	}
	if (c->mcp_json)
		return json_answer(c, err);
	while (c->sse_in.len && c->cout.len + SSE_EVENT_MAX <= c->cout.cap) {
		size_t used = 0;
		struct sse_event ev;
		int r = sse_feed(c->sse, c->sse_in.data, c->sse_in.len, &used, &ev, err);
		buf_consume(&c->sse_in, used);
		*moved = true;
		if (r < 0) {
			dropped(c, "rpc_invalid", NULL, err->msg);
			return -1;
		}
		if (r == SSE_NEED_MORE)
			break;
		if (event_allowed(c, &ev) && buf_append(&c->cout, ev.raw, ev.raw_len, err) < 0)
			return -1;
	}
	return 0;
}
