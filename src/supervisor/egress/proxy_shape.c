/* proxy_shape.c - the second look at a request the policy allowed on a
 * `protocol: rest` endpoint: a body the upstream may read as another request
 * is refused, and every method override it carries is judged like the real
 * method. Runs before the request is forwarded or audited as allowed. */
#include <stdio.h>
#include <string.h>

#include "proxy_internal.h"
#include "request_shape.h"

/* The override's own decision, renamed so the answer says why. */
static void override_decision(struct conn *c, const struct method_overrides *o, size_t i,
			      const char *raw, struct policy_decision *od)
{
	char why[POLICY_DETAIL_MAX];
	policy_decide_request(c->gen, c->ep, o->method[i], raw, NULL, 0, od);
	if (od->verdict == POLICY_ALLOW)
		return;
	od->reason = POLICY_R_METHOD_OVERRIDE_DENIED;
	snprintf(why, sizeof why, "%s", od->detail);
	snprintf(od->detail, sizeof od->detail, "method override in %s: %.240s", o->source[i], why);
}

bool proxy_judge_shape(struct conn *c, const struct http_request *req, const char *method,
		       const char *raw, const char *logged, struct policy_decision *d)
{
	if (!c->ep || !policy_protocol_inspected(c->ep->protocol))
		return true;
	if (request_body_without_semantics(method, req)) {
		char detail[160];
		snprintf(detail, sizeof detail,
			 "%s request with a body (an upstream may read it as another request)",
			 method);
		reply_error(c, 400, "bad_request", detail, "body_without_semantics");
		return false;
	}
	struct method_overrides o;
	char why[96];
	if (request_method_overrides(req, &o, why, sizeof why) < 0) {
		reply_error(c, 400, "bad_request", why, "method_override_invalid");
		return false;
	}
	for (size_t i = 0; i < o.n; i++) {
		struct policy_decision od;
		override_decision(c, &o, i, raw, &od);
		if (od.verdict == POLICY_DENY) {
			reply_policy_denied(c, &od, o.method[i], logged);
			return false;
		}
		if (od.verdict == POLICY_AUDIT)
			*d = od; /* forwarded, recorded as the override's violation */
	}
	return true;
}
