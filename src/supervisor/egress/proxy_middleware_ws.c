/* proxy_middleware_ws.c - the network_middlewares chain on WebSocket
 * client text messages: upstream's WEBSOCKET_MESSAGE/PRE_CREDENTIALS, which
 * the built-in openshell/regex binds. Each whole message (reassembled from
 * its fragments, decompressed when permessage-deflate is on, its UTF-8 and
 * its policy already checked) goes through the stages in order, each seeing
 * what the one before produced; the caller judges a replaced message again
 * and re-frames it (re-compressed when it came compressed). Binary
 * messages, control frames and the server's messages are not inspected, as
 * upstream. A stage fails on a message over its 256 KiB limit (upstream's
 * binding limit): fail_closed closes the WebSocket (1008), fail_open
 * disables that stage for the rest of the connection and the chain goes
 * on. The audit counts matches, never their text; a binary message gets a
 * coverage record per active stage (upstream: unsupported_message_type). */
#include <stdio.h>

#include "proxy_internal.h"

/* openshell/regex's WebSocket binding: one message (and its replacement). */
#define MW_WS_MESSAGE_MAX (256 * 1024)

static bool stage_failed(struct conn *c, const struct policy_middleware *m, uint32_t *disabled,
			 size_t i, const char *why, const char *logged, char *detail, size_t cap)
{
	snprintf(detail, cap, "middleware %.64s (openshell/regex): %.200s", m->name, why);
	if (!m->fail_open) {
		audit_decision(c, "middleware", "deny", "middleware_failed",
			       POLICY_WEBSOCKET_TEXT_METHOD, logged, detail);
		return false;
	}
	*disabled |= 1u << i;
	char d[POLICY_DETAIL_MAX];
	snprintf(d, sizeof d, "%.240s; disabled for the rest of this WebSocket", detail);
	audit_decision(c, "middleware", "allow", "middleware_failed_open",
		       POLICY_WEBSOCKET_TEXT_METHOD, logged, d);
	return true;
}

enum mw_ws_result proxy_middleware_ws(struct conn *c, uint32_t *disabled, const char *logged,
				      const char *text, size_t len, struct buf *out, char *detail,
				      size_t cap)
{
	const struct policy_middleware *chain[POLICY_MAX_MIDDLEWARES];
	size_t n = policy_middlewares_for(c->gen, c->host, chain);
	bool replaced = false;
	struct buf next;
	buf_init(&next, out->cap);
	for (size_t i = 0; i < n; i++) {
		if (*disabled & (1u << i))
			continue;
		const char *in = replaced ? out->data : text;
		size_t in_len = replaced ? out->len : len;
		os_error err = { 0 };
		size_t hits = 0;
		buf_reset(&next);
		if (in_len > MW_WS_MESSAGE_MAX) {
			snprintf(err.msg, sizeof err.msg,
				 "a WebSocket text message of %zu bytes is over the middleware's "
				 "%d byte limit",
				 in_len, MW_WS_MESSAGE_MAX);
			hits = (size_t)-1;
		} else {
			hits = mw_regex_redact(in, in_len, &next, &err);
		}
		if (hits == (size_t)-1) {
			if (!stage_failed(c, chain[i], disabled, i, err.msg, logged, detail, cap)) {
				buf_free(&next);
				return MW_WS_FAILED;
			}
			continue;
		}
		if (!hits)
			continue;
		char d[POLICY_DETAIL_MAX];
		snprintf(d, sizeof d,
			 "middleware %.64s (openshell/regex): %zu match%s replaced in a WebSocket "
			 "text message",
			 chain[i]->name, hits, hits == 1 ? "" : "es");
		audit_decision(c, "middleware", "allow", "middleware_redacted",
			       POLICY_WEBSOCKET_TEXT_METHOD, logged, d);
		struct buf t = *out; /* next becomes the current text */
		*out = next;
		next = t;
		replaced = true;
	}
	buf_free(&next);
	return replaced ? MW_WS_REPLACED : MW_WS_PASS;
}

void proxy_middleware_ws_binary(struct conn *c, uint32_t disabled, const char *logged)
{
	const struct policy_middleware *chain[POLICY_MAX_MIDDLEWARES];
	size_t n = policy_middlewares_for(c->gen, c->host, chain);
	for (size_t i = 0; i < n; i++) {
		if (disabled & (1u << i))
			continue;
		char d[POLICY_DETAIL_MAX];
		snprintf(d, sizeof d,
			 "middleware %.64s (openshell/regex) does not inspect binary WebSocket "
			 "messages: passed through",
			 chain[i]->name);
		audit_decision(c, "middleware", "allow", "unsupported_message_type",
			       "WEBSOCKET_BINARY", logged, d);
	}
}
