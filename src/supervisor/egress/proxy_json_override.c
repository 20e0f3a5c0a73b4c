/* proxy_json_override.c - `_method` members of JSON POST bodies on a
 * `protocol: rest` endpoint (Laravel reads them as a method override; see
 * json_override.h). The body streams through unheld: every read is fed to
 * the scanner before it is queued for the upstream, and each override found
 * is judged like the real method before anything more is sent. A denied one
 * drops the upstream connection mid-body, so the upstream never has the
 * whole request it would act on, and the agent gets the refusal. Watched
 * only where an override could change the decision (proxy_shape.c). */
#include <stdlib.h>
#include <string.h>

#include "json_override.h"
#include "proxy_internal.h"

struct json_watch {
	struct json_override scan;
	size_t judged; /* overrides of scan.found already judged */
	char *target, *logged, *method;
};

void proxy_json_watch_free(struct conn *c)
{
	if (!c->json_watch)
		return;
	free(c->json_watch->target);
	free(c->json_watch->logged);
	free(c->json_watch->method);
	free(c->json_watch);
	c->json_watch = NULL;
	c->req_body.json = NULL;
}

bool proxy_json_watch_start(struct conn *c, const struct http_request *req, const char *method,
			    const char *raw, const char *logged)
{
	proxy_json_watch_free(c);
	if (!c->ep || c->ep->protocol != POLICY_PROTO_REST || strcmp(method, "POST") != 0 ||
	    !json_override_content_type(req) || !proxy_override_could_matter(c, raw))
		return true;
	struct json_watch *w = calloc(1, sizeof *w);
	if (!w || !(w->target = strdup(raw)) || !(w->logged = strdup(logged)) ||
	    !(w->method = strdup(method))) {
		if (w) {
			free(w->target);
			free(w->logged);
		}
		free(w);
		reply_error(c, 500, "internal_error", "out of memory", "oom");
		return false;
	}
	json_override_init(&w->scan);
	c->json_watch = w;
	c->req_body.json = &w->scan;
	if (c->mw_replaced) /* the rewritten body is sent whole, not pumped */
		json_override_feed(&w->scan, c->mw_body.data, c->mw_body.len);
	return true;
}

/* Nothing more goes upstream; the agent hears why unless its answer began. */
static enum step_result refuse(struct conn *c, const char *reason, const char *detail,
			       const struct policy_decision *d, const char *method)
{
	buf_reset(&c->uout);
	if (c->upstream.fd >= 0)
		upstream_drop(c);
	if (c->resp_head_done) {
		audit_decision(c, "http", "deny", reason, method, c->json_watch->logged, detail);
		conn_close(c);
		return STEP_CLOSED;
	}
	if (d)
		reply_policy_denied(c, d, method, c->json_watch->logged);
	else
		reply_error(c, 400, "bad_request", detail, reason);
	return STEP_PROGRESS;
}

enum step_result proxy_json_watch_judge(struct conn *c)
{
	struct json_watch *w = c->json_watch;
	if (!w || !c->req_body.json)
		return STEP_WAIT;
	if (w->scan.failed)
		return refuse(c, "method_override_invalid", w->scan.why, NULL, w->method);
	for (; w->judged < w->scan.found.n; w->judged++) {
		struct policy_decision od;
		proxy_override_decision(c, &w->scan.found, w->judged, w->target, &od);
		const char *m = w->scan.found.method[w->judged];
		if (od.verdict == POLICY_DENY)
			return refuse(c, policy_reason_name(od.reason), od.detail, &od, m);
		if (od.verdict == POLICY_AUDIT) /* forwarded, recorded as the override's */
			audit_decision(c, "http", "audit", policy_reason_name(od.reason), m,
				       w->logged, od.detail);
	}
	return STEP_WAIT;
}
