/* proxy_sse.c - an MCP server's event stream (text/event-stream answers on
 * an mcp endpoint), judged event by event before the agent sees it: the
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

bool proxy_sse_wanted(const struct conn *c, const struct http_response *resp)
{
	if (!c->ep || c->ep->protocol != POLICY_PROTO_MCP || resp->status < 200 ||
	    resp->status > 299)
		return false;
	const struct http_header *h = http_header_find(&resp->headers, "content-type");
	static const char want[] = "text/event-stream";
	return h && h->value.len >= sizeof want - 1 &&
	       str_ieq(h->value.p, sizeof want - 1, want, sizeof want - 1) &&
	       (h->value.len == sizeof want - 1 || h->value.p[sizeof want - 1] == ';' ||
		h->value.p[sizeof want - 1] == ' ');
}

int proxy_sse_start(struct conn *c, os_error *err)
{
	proxy_sse_stop(c);
	c->sse = calloc(1, sizeof *c->sse);
	if (!c->sse)
		return os_error_set(err, ENOMEM, "out of memory");
	sse_init(c->sse, SSE_EVENT_MAX);
	buf_init(&c->sse_in, SSE_IN_CAP);
	return 0;
}

void proxy_sse_stop(struct conn *c)
{
	if (!c->sse)
		return;
	sse_free(c->sse);
	free(c->sse);
	c->sse = NULL;
	buf_free(&c->sse_in);
}

bool proxy_sse_drained(const struct conn *c)
{
	return !c->sse || c->sse_in.len == 0;
}

static void dropped(struct conn *c, const char *reason, const char *method, const char *detail)
{
	audit_decision(c, "mcp_server", "deny", reason, method, NULL, detail);
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
	struct jsonrpc_payload p;
	enum jsonrpc_fault fault;
	os_error err = { 0 };
	if (jsonrpc_parse(ev->data, ev->data_len, SSE_EVENT_MAX, &p, &fault, &err) < 0) {
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
