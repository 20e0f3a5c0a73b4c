/* proxy_ws.c - `protocol: websocket`. The upgrade request is judged as a
 * REST request (proxy_request.c); this file checks that it really asks for a
 * WebSocket, keeps its Upgrade header, takes the upstream's 101 and then
 * relays frames. As in OpenShell, only the client's frames are parsed
 * (wsframe.c: masking, fragmentation, control frames, size caps): each text
 * message is buffered whole, judged as method WEBSOCKET_TEXT on the upgrade's
 * path and query, and sent on only when allowed; binary frames pass as they
 * come. The server's bytes pass through unchanged, but their frame
 * boundaries are tracked, so that the proxy can end the connection with a
 * close frame of its own: 1008 for a denied message, 1009 too big, 1002
 * protocol error, 1007 invalid UTF-8. permessage-deflate is negotiated so
 * that each client message inflates on its own (proxy_ws_deflate.c) and is
 * judged on its text; a 101 that accepts an extension not offered fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "parse.h"
#include "proxy_internal.h"
#include "proxy_ws_int.h"
#include "wsframe.h"

struct ws_relay {
	char *target; /* the upgrade's path?query: what each text message is judged on */
	char *logged; /* its canonical path, for the audit (never the query) */
	/* client -> server */
	struct ws_stream in;
	struct ws_head h; /* the frame being relayed, when in_frame */
	bool in_frame, text; /* ...and whether it belongs to a text message */
	uint64_t done; /* payload bytes of h handled */
	struct buf msg; /* the text message so far, unmasked */
	uint8_t msg_mask[4]; /* its first frame's mask, reused when it is sent on */
	uint8_t head[WS_HEAD_MAX]; /* the allowed message's frame head, */
	size_t head_len; /* ...while it waits for room in uout */
	size_t sending; /* bytes of msg still to go out as the allowed frame */
	bool secret; /* msg holds a resolved credential: wiped once sent */
	bool compressed; /* msg is permessage-deflate data */
	struct buf plain; /* ...and its text, decompressed for the judgement */
	uint32_t mw_disabled; /* fail_open middleware stages that failed once */
	bool reframed; /* a middleware changed this message's text */
	char offer[256]; /* the permessage-deflate offer passed on, or "" */
	/* server -> client */
	uint64_t srv_left; /* payload bytes of the server's current frame to relay */
	int close_code; /* non-zero: the close frame goes at the next server boundary */
};

static bool name_is(struct http_slice n, const char *s)
{
	return str_ieq(n.p, n.len, s, strlen(s));
}

static const struct http_slice *find_header(const struct http_headers *hs, const char *name)
{
	const struct http_header *h = http_header_find(hs, name);
	return h ? &h->value : NULL;
}

static bool value_is(const struct http_slice *v, const char *s)
{
	return v && str_ieq(v->p, v->len, s, strlen(s));
}

/* Frees b, zeroed first: it may have held a secret. */
static void wipe(struct buf *b)
{
	if (b->data)
		memset(b->data, 0, b->alloc);
	buf_free(b);
}

void proxy_ws_free(struct conn *c)
{
	struct ws_relay *w = c->ws;
	if (!w)
		return;
	free(w->target);
	free(w->logged);
	wipe(&w->msg);
	wipe(&w->plain);
	free(w);
	c->ws = NULL;
}

size_t proxy_ws_held(const struct conn *c)
{
	return c->ws ? c->ws->msg.alloc + c->ws->plain.alloc : 0;
}

static const char *upgrade_problem(const struct http_request *req)
{
	if (!value_is(&req->framing.upgrade_value, "websocket"))
		return "a websocket endpoint only upgrades to websocket";
	if (!str_ieq(req->method.p, req->method.len, "GET", 3))
		return "a WebSocket upgrade must be a GET";
	if (http_request_body(req) != HTTP_BODY_NONE &&
	    !(http_request_body(req) == HTTP_BODY_LENGTH && req->framing.content_length == 0))
		return "a WebSocket upgrade carries no body";
	if (!value_is(find_header(&req->headers, "sec-websocket-version"), "13"))
		return "Sec-WebSocket-Version 13 required";
	if (!find_header(&req->headers, "sec-websocket-key"))
		return "Sec-WebSocket-Key missing";
	return NULL;
}

bool proxy_ws_check_upgrade(struct conn *c, const struct http_request *req, const char *target,
			    const char *logged)
{
	proxy_ws_free(c);
	c->ws_upgrade = false;
	if (!c->ep || c->ep->protocol != POLICY_PROTO_WEBSOCKET || !req->framing.upgrade)
		return true; /* an ordinary request (a REST endpoint drops Upgrade) */
	const char *why = upgrade_problem(req);
	if (why) {
		reply_error(c, 400, "bad_request", why, "websocket_bad_upgrade");
		return false;
	}
	struct ws_relay *w = calloc(1, sizeof *w);
	if (!w || !(w->target = strdup(target)) || !(w->logged = strdup(logged))) {
		if (w)
			free(w->target);
		free(w);
		reply_error(c, 500, "internal_error", "out of memory", "oom");
		return false;
	}
	buf_init(&w->msg, WS_TEXT_MAX);
	buf_init(&w->plain, WS_TEXT_MAX);
	/* Toward an endpoint that may receive a secret, the server's messages
	 * must stay readable to be scrubbed of it: no compression offered
	 * (as Accept-Encoding is dropped for REST). */
	const struct http_slice *ext = find_header(&req->headers, "sec-websocket-extensions");
	bool secrets = c->ep->credential_provider || conn_holds_secret(c);
	if (ext && !secrets && ws_deflate_offer(ext->p, ext->len, w->offer, sizeof w->offer) < 0)
		w->offer[0] = '\0'; /* an offer too long to pass on is not made */
	c->ws = w;
	c->ws_upgrade = true;
	return true;
}

static bool is_extensions(struct http_slice name)
{
	return name_is(name, "sec-websocket-extensions");
}

bool proxy_ws_hop_kept(const struct conn *c, struct http_slice name)
{
	return c->ws_upgrade && name_is(name, "upgrade");
}

bool proxy_ws_header_dropped(const struct conn *c, struct http_slice name)
{
	return c->ws_upgrade && is_extensions(name);
}

const char *proxy_ws_offer(const struct conn *c)
{
	return c->ws_upgrade && c->ws && c->ws->offer[0] ? c->ws->offer : NULL;
}

/* The 101 for the agent with the negotiated extension made inspectable. */
static int rebuilt_head(struct conn *c, const struct http_response *resp, const char *ext,
			os_error *err)
{
	if (conn_write_response_head(c, resp, is_extensions, err) < 0 ||
	    http_write_header(&c->cout, "Sec-WebSocket-Extensions", ext, err) < 0)
		return -1;
	return buf_append_str(&c->cout, "\r\n", err);
}

int proxy_ws_accept(struct conn *c, const struct http_response *resp, size_t head_len,
		    os_error *err)
{
	if (!c->ws_upgrade || !c->ws)
		return os_error_set(err, EPROTO,
				    "the upstream switched protocols on a request that did not ask "
				    "to");
	if (!value_is(find_header(&resp->headers, "upgrade"), "websocket"))
		return os_error_set(err, EPROTO, "the upstream's 101 does not switch to websocket");
	const struct http_slice *ext = find_header(&resp->headers, "sec-websocket-extensions");
	char agreed[320];
	if (ext && !c->ws->offer[0])
		return os_error_set(err, EPROTO,
				    "the upstream accepted a WebSocket extension the proxy did not "
				    "offer");
	if (ext && (ws_deflate_answer(ext->p, ext->len, agreed, sizeof agreed, err) < 0 ||
		    rebuilt_head(c, resp, agreed, err) < 0))
		return -1;
	if (!ext && buf_append(&c->cout, c->uin.data, head_len, err) < 0)
		return -1;
	c->ws->in.deflate = ext != NULL;
	buf_consume(&c->uin, head_len);
	c->resp_head_done = true;
	audit_decision(c, "websocket", "allow", "upgraded", "GET", c->ws->logged, NULL);
	conn_set_state(c, ST_WEBSOCKET);
	return 0;
}

/* Ends the connection with `code`: the reason goes to the audit; the
 * upstream gets a (masked) close frame unless a binary frame toward it is
 * half sent; the agent gets its close frame at the next server frame
 * boundary (server_pump). */
static void ws_fail(struct conn *c, int code, const char *reason, const char *detail)
{
	struct ws_relay *w = c->ws;
	audit_decision(c, "websocket", "deny", reason, POLICY_WEBSOCKET_TEXT_METHOD, w->logged,
		       detail);
	log_debug("proxy: websocket to %s closed with %d: %s", c->host, code, detail);
	w->close_code = code;
	bool mid_frame = (w->in_frame && !w->text) || w->sending; /* its head went */
	uint8_t mask[4], f[WS_HEAD_MAX + 2];
	if (mid_frame || getrandom(mask, sizeof mask, 0) != sizeof mask)
		return;
	size_t n = ws_put_head(f, WS_OP_CLOSE, 2, mask);
	f[n] = (uint8_t)(code >> 8) ^ mask[0];
	f[n + 1] = (uint8_t)code ^ mask[1];
	buf_append(&c->uout, f, n + 2, NULL); /* best effort: the upstream is closed next */
}

/* After a policy update the upgrade is judged again under the new policy,
 * as a kept-alive REST request would be: the caller on host:port, the
 * endpoint still a websocket one, GET on the upgrade's target. Passed, the
 * connection goes on under the new policy (the message about to be judged
 * included); failed, it ends with 1008. Called before each new client
 * message, text or binary. */
static bool rejudge_after_update(struct conn *c, struct ws_relay *w)
{
	if (proxy_policy_serial(c->proxy) == c->gen_serial)
		return true;
	uint64_t serial;
	struct policy_gen *g = proxy_current(c->proxy, &serial);
	struct policy_decision d;
	proxy_decide_connect(c, g, &d);
	if (d.verdict != POLICY_DENY) {
		/* Routed by path as the upgrade was (policy_route.c): the
		 * endpoint whose path matches judges it under the new policy. */
		bool any = proxy_any_caller(c, g);
		char canon[sizeof w->target + 64];
		policy_decide_routed_request(g, d.endpoint, c->host, c->port, any ? NULL : c->chain,
					     any ? 0 : c->n_chain, "GET", w->target, canon,
					     sizeof canon, &d);
	}
	const struct policy_endpoint *ep = d.endpoint;
	char policy[sizeof c->policy_name];
	snprintf(policy, sizeof policy, "%s", d.policy ? d.policy : "");
	if (d.verdict != POLICY_DENY && (!ep || ep->protocol != POLICY_PROTO_WEBSOCKET)) {
		d.verdict = POLICY_DENY;
		snprintf(d.detail, sizeof d.detail,
			 "the endpoint is no websocket endpoint any more");
	}
	if (d.verdict == POLICY_DENY) {
		char detail[sizeof d.detail + 64];
		snprintf(detail, sizeof detail,
			 "upgrade no longer allowed after a policy update: %s", d.detail);
		policy_unref(g);
		ws_fail(c, WS_CLOSE_POLICY, policy_reason_name(d.reason), detail);
		return false;
	}
	policy_unref(c->gen);
	c->gen = g; /* c->ep points into it: both change together */
	c->gen_serial = serial;
	c->ep = ep;
	memcpy(c->policy_name, policy, sizeof policy);
	return true;
}

/* websocket_credential_rewrite: text with its placeholders resolved
 * replaces msg; the agent's answers are scrubbed of secrets from now on.
 * Compression is never negotiated toward such an endpoint (the server's
 * answers could not be scrubbed), so a compressed message here is refused. */
static bool resolve_placeholders(struct conn *c, struct ws_relay *w, const struct buf *text)
{
	struct buf out;
	buf_init(&out, 2 * WS_TEXT_MAX);
	const char *why = w->compressed ? "credential_compressed"
					: proxy_ws_rewrite(c, text->data, text->len, &out);
	if (why) {
		wipe(&out);
		ws_fail(c, WS_CLOSE_POLICY, why,
			strcmp(why, "credential_plaintext") == 0
				? "credentials are only sent inside TLS to the upstream"
				: "credential placeholder in a WebSocket message not resolved");
		return false;
	}
	wipe(&w->msg);
	w->msg = out; /* taken: wiped once sent */
	w->secret = true;
	c->injected = c->masking = true;
	conn_mark_secret_holder(c);
	return true;
}

/* A compressed message's text into plain: false (failed) when it does not
 * decompress or is too big once it does. */
static bool decompress(struct conn *c, struct ws_relay *w)
{
	os_error err = { 0 };
	buf_reset(&w->plain);
	if (ws_inflate(&w->msg, &w->plain, WS_TEXT_MAX, &err) == 0)
		return true;
	if (err.code == EMSGSIZE)
		ws_fail(c, WS_CLOSE_TOO_BIG, "websocket_too_big", err.msg);
	else
		ws_fail(c, WS_CLOSE_INVALID_DATA, "websocket_bad_deflate", err.msg);
	return false;
}

/* The policy's judgement of one text: GraphQL over WebSocket when the
 * endpoint's rules are GraphQL, else method WEBSOCKET_TEXT on the
 * upgrade's path. false: denied (the connection is closing). */
static bool judge_text(struct conn *c, struct ws_relay *w, const struct buf *text)
{
	if (c->ep->graphql_ws) {
		char detail[POLICY_DETAIL_MAX];
		const char *why = proxy_ws_graphql_judge(c, w->target, w->logged, text->data,
							 text->len, detail, sizeof detail);
		if (why)
			ws_fail(c, WS_CLOSE_POLICY, why, detail);
		return !why;
	}
	struct policy_decision d;
	policy_decide_request(c->gen, c->ep, POLICY_WEBSOCKET_TEXT_METHOD, w->target, NULL, 0, &d);
	if (d.verdict == POLICY_DENY) {
		ws_fail(c, WS_CLOSE_POLICY, policy_reason_name(d.reason), d.detail);
		return false;
	}
	audit_decision(c, "websocket", d.verdict == POLICY_AUDIT ? "audit" : "allow",
		       policy_reason_name(d.reason), POLICY_WEBSOCKET_TEXT_METHOD, w->logged, NULL);
	return true;
}

/* network_middlewares on the judged text (OpenShell: after the policy,
 * before credentials). A replaced text is judged again, as upstream does,
 * then takes the message's place: plain for a compressed message (made
 * msg again by recompress), msg otherwise. false: the connection closes. */
static bool run_middlewares(struct conn *c, struct ws_relay *w, struct buf **text)
{
	struct buf out;
	char detail[POLICY_DETAIL_MAX];
	buf_init(&out, WS_TEXT_MAX);
	enum mw_ws_result r = proxy_middleware_ws(c, &w->mw_disabled, w->logged, (*text)->data,
						  (*text)->len, &out, detail, sizeof detail);
	if (r == MW_WS_FAILED)
		ws_fail(c, WS_CLOSE_POLICY, "middleware_failed", detail);
	if (r != MW_WS_REPLACED || !judge_text(c, w, &out)) {
		wipe(&out);
		return r != MW_WS_FAILED && !w->close_code;
	}
	wipe(*text);
	**text = out; /* taken */
	w->reframed = true;
	return true;
}

/* A compressed message whose text changed: compressed again into msg. */
static bool recompress(struct conn *c, struct ws_relay *w)
{
	os_error err = { 0 };
	wipe(&w->msg);
	buf_init(&w->msg, WS_TEXT_MAX + 4096); /* deflate may grow incompressible text */
	if (ws_deflate(w->plain.data, w->plain.len, &w->msg, &err) == 0)
		return true;
	ws_fail(c, WS_CLOSE_TOO_BIG, "websocket_too_big", err.msg);
	return false;
}

/* A whole text message (decompressed when it came compressed): valid UTF-8,
 * judged, passed through the middlewares, its placeholders resolved where
 * the endpoint says, and queued as one frame (a compressed one as it came,
 * or compressed again when a middleware changed it). */
static void judge_message(struct conn *c, struct ws_relay *w)
{
	if (w->compressed && !decompress(c, w))
		return;
	if (!rejudge_after_update(c, w))
		return;
	struct buf *text = w->compressed ? &w->plain : &w->msg;
	if (!ws_utf8_valid((const uint8_t *)text->data, text->len)) {
		ws_fail(c, WS_CLOSE_INVALID_DATA, "websocket_invalid_utf8",
			"websocket text message is not valid UTF-8");
		return;
	}
	w->reframed = false;
	if (!judge_text(c, w, text) || !run_middlewares(c, w, &text))
		return;
	if (c->ep->websocket_credential_rewrite &&
	    proxy_ws_has_placeholder(text->data, text->len) && !resolve_placeholders(c, w, text))
		return;
	if (w->compressed && w->reframed && !recompress(c, w))
		return;
	buf_reset(&w->plain);
	w->head_len = ws_put_head(w->head, WS_OP_TEXT, w->msg.len, w->msg_mask);
	if (w->compressed)
		w->head[0] |= 0x40; /* RSV1: permessage-deflate */
	w->sending = w->msg.len;
}

/* The allowed message out to the upstream, masked, as uout makes room. */
static bool send_message(struct conn *c, struct ws_relay *w)
{
	if (w->head_len) {
		if (buf_append(&c->uout, w->head, w->head_len, NULL) < 0)
			return false;
		w->head_len = 0;
		if (w->sending == 0)
			return true; /* an empty message */
	}
	size_t off = w->msg.len - w->sending, room = c->uout.cap - c->uout.len;
	size_t n = w->sending < room ? w->sending : room;
	if (n == 0)
		return false;
	size_t at = c->uout.len;
	buf_append(&c->uout, w->msg.data + off, n, NULL);
	ws_unmask((uint8_t *)c->uout.data + at, n, w->msg_mask, off);
	w->sending -= n;
	if (w->sending == 0 && w->secret) {
		wipe(&w->msg); /* back to the plain cap */
		buf_init(&w->msg, WS_TEXT_MAX);
		w->secret = false;
	} else if (w->sending == 0) {
		buf_reset(&w->msg);
	}
	return true;
}

/* A control frame, whole in cin (next_frame made sure, and that uout has
 * room): a close's payload is checked, then the frame goes on as it came. */
static int relay_control(struct conn *c, const struct ws_head *h)
{
	size_t total = h->head_len + (size_t)h->len;
	if (h->opcode == WS_OP_CLOSE) {
		uint8_t p[WS_CONTROL_MAX];
		int code;
		os_error err = { 0 };
		memcpy(p, c->cin.data + h->head_len, (size_t)h->len);
		ws_unmask(p, (size_t)h->len, h->mask, 0);
		if (ws_check_close(p, (size_t)h->len, &code, &err) < 0) {
			ws_fail(c, code, "websocket_protocol_error", err.msg);
			return -1;
		}
	}
	buf_append(&c->uout, c->cin.data, total, NULL);
	buf_consume(&c->cin, total);
	return 1;
}

/* A binary message passes uninspected, as upstream relays it; the
 * middlewares that cannot see it say so. Stricter than upstream on a
 * GraphQL endpoint: GraphQL-over-WebSocket messages are text, and servers
 * (graphql-ws's among them) read a binary message as its text, so a binary
 * one would carry an operation past the rules: it closes the connection. */
static bool binary_allowed(struct conn *c, struct ws_relay *w)
{
	if (c->ep->graphql_ws) {
		ws_fail(c, WS_CLOSE_POLICY, "graphql_ws_binary",
			"a binary message on a GraphQL WebSocket endpoint could carry an operation "
			"the rules never see");
		return false;
	}
	proxy_middleware_ws_binary(c, w->mw_disabled, w->logged);
	return true;
}

/* The next client frame's head: checked, and either relayed whole (control)
 * or made the frame in progress. false: nothing to do yet, or failed. */
static bool next_frame(struct conn *c, struct ws_relay *w)
{
	struct ws_head h;
	int code = 0;
	os_error err = { 0 };
	/* Room for a whole control frame or a data frame's head, decided before
	 * the head is checked (checking advances the stream's state). */
	if (c->uout.cap - c->uout.len < WS_HEAD_MAX + WS_CONTROL_MAX)
		return false;
	int r = ws_parse_head((const uint8_t *)c->cin.data, c->cin.len, true, &h, &code, &err);
	if (r == 0)
		return false;
	/* A control frame's head may be seen again while its payload arrives:
	 * check it against the stream only once it is whole. */
	if (r > 0 && h.opcode >= WS_OP_CLOSE && h.fin && h.len <= WS_CONTROL_MAX &&
	    c->cin.len < h.head_len + h.len)
		return false;
	bool text = h.opcode == WS_OP_TEXT || (h.opcode == WS_OP_CONT && w->in.frag == WS_IN_TEXT);
	if (r < 0 || ws_check_frame(&w->in, &h, &code, &err) < 0) {
		ws_fail(c, code,
			code == WS_CLOSE_TOO_BIG ? "websocket_too_big" : "websocket_protocol_error",
			err.msg);
		return false;
	}
	if (h.opcode >= WS_OP_CLOSE)
		return relay_control(c, &h) > 0;
	if (h.opcode != WS_OP_CONT && !rejudge_after_update(c, w))
		return false;
	if (h.opcode == WS_OP_TEXT) {
		memcpy(w->msg_mask, h.mask, 4);
		w->compressed = w->in.compressed;
	}
	if (h.opcode == WS_OP_BINARY && !binary_allowed(c, w))
		return false;
	if (!text)
		buf_append(&c->uout, c->cin.data, h.head_len, NULL);
	buf_consume(&c->cin, h.head_len);
	w->h = h;
	w->text = text;
	w->in_frame = true;
	w->done = 0;
	return true;
}

/* Payload of the frame in progress: text into msg (unmasked), binary on. */
static bool frame_payload(struct conn *c, struct ws_relay *w)
{
	uint64_t left = w->h.len - w->done;
	size_t n = c->cin.len < left ? c->cin.len : (size_t)left;
	if (!w->text) {
		size_t room = c->uout.cap - c->uout.len;
		n = n < room ? n : room;
	}
	if (n == 0 && left > 0)
		return false;
	struct buf *to = w->text ? &w->msg : &c->uout;
	size_t at = to->len;
	if (buf_append(to, c->cin.data, n, NULL) < 0) {
		ws_fail(c, WS_CLOSE_TOO_BIG, "websocket_too_big", "websocket message too big");
		return false;
	}
	if (w->text)
		ws_unmask((uint8_t *)to->data + at, n, w->h.mask, w->done);
	buf_consume(&c->cin, n);
	w->done += n;
	if (w->done < w->h.len)
		return n > 0;
	w->in_frame = false;
	if (w->text && w->h.fin)
		judge_message(c, w);
	return true;
}

static bool client_pump(struct conn *c, struct ws_relay *w)
{
	bool moved = false;
	while (!w->close_code) {
		bool step;
		if (w->sending || w->head_len)
			step = send_message(c, w);
		else if (w->in_frame)
			step = frame_payload(c, w);
		else
			step = next_frame(c, w);
		moved |= step;
		if (!step)
			break;
	}
	return moved;
}

/* Server bytes to the agent unchanged, one frame at a time; at a boundary
 * after a failure, the proxy's close frame instead. */
static bool server_pump(struct conn *c, struct ws_relay *w, bool ueof)
{
	bool moved = false;
	for (;;) {
		size_t room = c->cout.cap - c->cout.len;
		if (w->srv_left > 0) {
			size_t n = c->uin.len < w->srv_left ? c->uin.len : (size_t)w->srv_left;
			n = n < room ? n : room;
			if (n == 0)
				break;
			buf_append(&c->cout, c->uin.data, n, NULL);
			buf_consume(&c->uin, n);
			w->srv_left -= n;
			moved = true;
			continue;
		}
		if (w->close_code) {
			uint8_t f[4] = { 0x80 | WS_OP_CLOSE, 2, (uint8_t)(w->close_code >> 8),
					 (uint8_t)w->close_code };
			buf_append(&c->cout, f, sizeof f, NULL);
			conn_set_state(c, ST_CLOSING);
			return true;
		}
		struct ws_head h;
		int code;
		os_error err = { 0 };
		int r = ws_parse_head((const uint8_t *)c->uin.data, c->uin.len, false, &h, &code,
				      &err);
		if (r == 0 || (r > 0 && room < h.head_len))
			break;
		if (r < 0) { /* boundaries lost: the agent is told, the upstream dropped */
			log_warn("proxy: websocket from %s: %s", c->host, err.msg);
			audit_decision(c, "websocket", "deny", "websocket_upstream_protocol_error",
				       NULL, w->logged, err.msg);
			w->close_code = WS_CLOSE_PROTOCOL;
			continue;
		}
		buf_append(&c->cout, c->uin.data, h.head_len, NULL);
		buf_consume(&c->uin, h.head_len);
		w->srv_left = h.len;
		moved = true;
	}
	if (ueof && c->state != ST_CLOSING) {
		conn_set_state(c, ST_CLOSING); /* what was relayed is flushed, then close */
		return true;
	}
	return moved;
}

enum step_result proxy_ws_step(struct conn *c)
{
	struct ws_relay *w = c->ws;
	bool ceof = false, ueof = false, moved = false;
	while (!w->close_code && conn_read_side(c, &c->client, &c->cin, &ceof))
		moved = true;
	while (conn_read_side(c, &c->upstream, &c->uin, &ueof))
		moved = true;
	moved |= client_pump(c, w);
	moved |= server_pump(c, w, ueof);
	if (c->state == ST_CLOSING)
		return STEP_PROGRESS;
	/* The agent hung up: what it sent goes out first, then the end. */
	if ((ceof || c->client.eof) && !w->close_code && c->uout.len == 0) {
		conn_close(c);
		return STEP_CLOSED;
	}
	return moved ? STEP_PROGRESS : STEP_WAIT;
}
