/* policy_decide_rpc.c - json-rpc and mcp decisions: the HTTP exchange that
 * carries the messages (POST; for MCP also the GET that opens the server's
 * event stream and the DELETE that ends a session), then each call by its
 * JSON-RPC method and, for MCP tools/call, its tool name. OpenShell's rules:
 * a deny rule wins, then the MCP method profile, then the allow rules. */
#include <stdio.h>
#include <string.h>

#include "mcp_methods.h"
#include "pathglob.h"
#include "policy_gen_int.h"

static void verdict(struct policy_decision *out, const struct policy_endpoint *ep, bool violation,
		    enum policy_reason r)
{
	out->reason = r;
	out->verdict = !violation			     ? POLICY_ALLOW
		       : ep->enforcement == POLICY_ENF_AUDIT ? POLICY_AUDIT
							     : POLICY_DENY;
}

/* Verdict plus "METHOD [tool T] permitted by RULE of policy P" (or not). */
static void describe(struct policy_decision *out, const struct policy_endpoint *ep, bool violation,
		     enum policy_reason r, const char *method, const char *tool)
{
	verdict(out, ep, violation, r);
	snprintf(out->detail, sizeof out->detail, "%.100s%s%.100s %s by %s of policy %s", method,
		 tool ? " tool " : "", tool ? tool : "",
		 r == POLICY_R_DENY_RULE ? "blocked"
		 : violation		 ? "not permitted"
					 : "permitted",
		 out->rule[0] ? out->rule : "policy", out->policy);
}

void rpc_decide_transport(const struct policy_endpoint *ep, const char *m, const char *canon,
			  struct policy_decision *out)
{
	bool mcp = ep->protocol == POLICY_PROTO_MCP;
	if (!policy_endpoint_path_match(ep->path, canon)) {
		snprintf(out->rule, sizeof out->rule, "path");
		verdict(out, ep, true, POLICY_R_NO_MATCHING_RULE);
		snprintf(out->detail, sizeof out->detail, "%s %.200s is outside the endpoint path",
			 m, canon);
		return;
	}
	if (!strcmp(m, "POST") || (mcp && (!strcmp(m, "GET") || !strcmp(m, "DELETE")))) {
		snprintf(out->rule, sizeof out->rule, "transport");
		out->verdict = POLICY_ALLOW;
		out->reason = POLICY_R_ALLOWED;
		snprintf(out->detail, sizeof out->detail, "%s %.200s carries %s messages", m, canon,
			 mcp ? "MCP" : "JSON-RPC");
		return;
	}
	/* Not a message carrier: nothing the rules could judge. */
	snprintf(out->rule, sizeof out->rule, "transport");
	verdict(out, ep, true, POLICY_R_NO_MATCHING_RULE);
	snprintf(out->detail, sizeof out->detail,
		 "%s %.200s: JSON-RPC calls and responses must be sent with POST", m, canon);
}

static bool tool_match(const struct policy_query *t, const char *tool)
{
	for (size_t i = 0; tool && i < t->n_globs; i++)
		if (glob_star_match(t->globs[i], tool))
			return true;
	return false;
}

static bool rule_match(const struct policy_rule *r, bool mcp, enum mcp_method_class cls,
		       const char *method, const char *tool)
{
	const char *rm = r->method;
	if (!rm && r->tool)
		rm = "tools/call"; /* a tool selector names tools/call */
	if (!rm) { /* the endpoint's method profile: core methods */
		if (cls != MCP_CORE)
			return false;
	} else if (strcmp(rm, "*") != 0 && strcmp(rm, method) != 0 &&
		   !(mcp && strchr(rm, '*') && glob_star_match(rm, method))) {
		return false;
	}
	return !r->tool || (!strcmp(method, "tools/call") && tool_match(r->tool, tool));
}

static bool has_tool_allows(const struct policy_endpoint *ep)
{
	for (size_t i = 0; i < ep->n_rules; i++)
		if (ep->rules[i].tool)
			return true;
	return false;
}

static void decide(const struct policy_gen *g, const struct policy_endpoint *ep, const char *method,
		   const char *tool, bool from_client, struct policy_decision *out)
{
	memset(out, 0, sizeof *out);
	out->endpoint = ep;
	out->policy = g->doc->networks[ep->policy_index].name;
	bool mcp = ep->protocol == POLICY_PROTO_MCP;
	enum mcp_method_class cls = mcp ? mcp_method_class(method, from_client) : MCP_EXTENSION;
	if (mcp && cls == MCP_WRONG_DIRECTION) {
		out->reason = POLICY_R_RPC_INVALID; /* refused even under audit */
		snprintf(out->detail, sizeof out->detail, "MCP method %.100s is sent by %s, not %s",
			 method, from_client ? "servers" : "clients",
			 from_client ? "clients" : "servers");
		return;
	}
	if (mcp && tool && ep->mcp_strict_tool_names && !mcp_tool_name_ok(tool)) {
		out->reason = POLICY_R_RPC_INVALID;
		snprintf(out->detail, sizeof out->detail,
			 "MCP tool name must match ^[A-Za-z0-9_.-]{1,128}$ when strict_tool_names "
			 "is enabled");
		return;
	}
	for (size_t i = 0; i < ep->n_deny; i++)
		if (rule_match(&ep->deny_rules[i], mcp, cls, method, tool)) {
			snprintf(out->rule, sizeof out->rule, "deny_rules[%zu]", i);
			describe(out, ep, true, POLICY_R_DENY_RULE, method, tool);
			return;
		}
	/* The profile allows every core method, except that tool rules narrow
	 * tools/call to their tools. */
	if (mcp && ep->mcp_allow_all_known_methods && cls == MCP_CORE &&
	    !(strcmp(method, "tools/call") == 0 && has_tool_allows(ep))) {
		snprintf(out->rule, sizeof out->rule, "mcp:allow_all_known_mcp_methods");
		verdict(out, ep, false, POLICY_R_ALLOWED);
		snprintf(out->detail, sizeof out->detail,
			 "%.100s permitted by the MCP method profile", method);
		return;
	}
	for (size_t i = 0; i < ep->n_rules; i++)
		if (rule_match(&ep->rules[i], mcp, cls, method, tool)) {
			snprintf(out->rule, sizeof out->rule, "rules[%zu]", i);
			describe(out, ep, false, POLICY_R_ALLOWED, method, tool);
			return;
		}
	describe(out, ep, true, POLICY_R_NO_MATCHING_RULE, method, tool);
}

void policy_decide_rpc_call(const struct policy_gen *g, const struct policy_endpoint *ep,
			    const char *method, const char *tool, struct policy_decision *out)
{
	decide(g, ep, method, tool, true, out);
}

void policy_decide_mcp_server_message(const struct policy_gen *g, const struct policy_endpoint *ep,
				      const char *method, struct policy_decision *out)
{
	decide(g, ep, method, NULL, false, out);
}
