/* proxy_shape.c - the second look at a request the policy allowed on a
 * `protocol: rest` endpoint: a body the upstream may read as another request
 * and a header naming another path to route are refused, and every method
 * override it carries is judged like the real method, including `_method`
 * fields of POSTed form bodies (buffered whole up to FORM_BODY_MAX, only
 * where an override could change the decision).
 * Runs before the request is forwarded or audited as allowed. */
#include <stdio.h>
#include <string.h>

#include "proxy_internal.h"
#include "request_shape.h"

/* The override's own decision, renamed so the answer says why. */
void proxy_override_decision(struct conn *c, const struct method_overrides *o, size_t i,
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

/* Each override judged like the real method; false once one is denied (answered). */
static bool judge_overrides(struct conn *c, const struct method_overrides *o, const char *raw,
			    const char *logged, struct policy_decision *d)
{
	for (size_t i = 0; i < o->n; i++) {
		struct policy_decision od;
		proxy_override_decision(c, o, i, raw, &od);
		if (od.verdict == POLICY_DENY) {
			reply_policy_denied(c, &od, o->method[i], logged);
			return false;
		}
		if (od.verdict == POLICY_AUDIT)
			*d = od; /* forwarded, recorded as the override's violation */
	}
	return true;
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
	const char *path_header = request_path_override(req);
	if (path_header) {
		char detail[160];
		snprintf(detail, sizeof detail,
			 "%s header refused: an upstream may route the path it names instead "
			 "of the one judged",
			 path_header);
		reply_error(c, 400, "bad_request", detail, "path_override_header");
		return false;
	}
	struct method_overrides o;
	char why[96];
	if (request_method_overrides(req, &o, why, sizeof why) < 0) {
		reply_error(c, 400, "bad_request", why, "method_override_invalid");
		return false;
	}
	return judge_overrides(c, &o, raw, logged, d);
}

/* Could some `_method` value make this path's decision differ from POST's?
 * Methods Rack accepts as overrides, plus a made-up one for frameworks that
 * take any word; if the endpoint allows every one of them here, a form body
 * cannot escalate and is not buffered. */
bool proxy_override_could_matter(struct conn *c, const char *raw)
{
	static const char *const methods[] = { "GET",	"HEAD",	  "PUT",
					       "PATCH", "DELETE", "OPTIONS",
					       "LINK",	"UNLINK", "OPENSHELL-ANY" };
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		struct policy_decision od;
		policy_decide_request(c->gen, c->ep, methods[i], raw, NULL, 0, &od);
		if (od.verdict != POLICY_ALLOW)
			return true;
	}
	return false;
}

enum rpc_step proxy_judge_form(struct conn *c, const struct http_request *req, const char *method,
			       const char *raw, const char *logged, size_t consumed,
			       struct policy_decision *d)
{
	if (!c->ep || c->ep->protocol != POLICY_PROTO_REST || strcmp(method, "POST") != 0)
		return RPC_FORWARD;
	char boundary[80];
	enum form_kind kind = request_form_kind(req, boundary, sizeof boundary);
	if (kind == FORM_NONE || !proxy_override_could_matter(c, raw))
		return RPC_FORWARD;
	static const struct whole_body w = {
		.what = "form",
		.cap = FORM_BODY_MAX,
		.cap_name = "the proxy's form inspection limit",
		.chunked_reason = "form_chunked",
		.too_large_reason = "form_body_too_large",
	};
	enum rpc_step rs = proxy_whole_body(c, req, &w, consumed);
	if (rs != RPC_FORWARD)
		return rs;
	struct method_overrides o = { 0 };
	char why[96];
	if (request_form_overrides(kind, boundary, c->cin.data + consumed,
				   (size_t)req->framing.content_length, &o, why, sizeof why) < 0) {
		reply_error(c, 400, "bad_request", why, "method_override_invalid");
		return RPC_ANSWERED;
	}
	return judge_overrides(c, &o, raw, logged, d) ? RPC_FORWARD : RPC_ANSWERED;
}
