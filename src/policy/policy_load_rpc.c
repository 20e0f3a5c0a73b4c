/* policy_load_rpc.c - the json-rpc and mcp parts of an endpoint: rule
 * matchers on the JSON-RPC method and the MCP tool name, the `json_rpc:` and
 * `mcp:` stanzas, and the checks that need the whole endpoint. Semantics and
 * messages follow OpenShell (crates/openshell-policy, JsonRpcConfigDef /
 * McpConfigDef, and the sandbox's validate_jsonrpc_rule_fields). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_load_int.h"

/* Upstream's glob metacharacters; only `*` is implemented here, so a glob
 * using the others is refused rather than read literally. */
static bool uses_wildcard(const char *s)
{
	return strpbrk(s, "*?[]{}") != NULL;
}

static bool unsupported_glob(const char *s)
{
	return strpbrk(s, "?[]{}") != NULL; /* as load_matcher_globs refuses */
}

/* A JSON-RPC method as a policy can name it: printable, no spaces. */
static bool method_chars_ok(const char *s)
{
	if (!*s || strlen(s) > 256)
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* A tool matcher, as a query matcher named "name". */
static void load_tool_globs(struct lctx *c, const struct ynode *v, struct policy_query **out)
{
	struct policy_query *q = calloc(1, sizeof *q);
	if (!q || !(q->name = ldup(c, "name"))) {
		free(q);
		lerr_oom(c);
		return;
	}
	*out = q;
	load_matcher_globs(c, v, true, q);
}

/* {method, tool, params: {name}} of a json-rpc or mcp rule; the checks that
 * depend on the endpoint's mcp options run later (check_rpc_endpoint). */
void load_rpc_matcher(struct lctx *c, const struct ynode *n, struct policy_rule *r)
{
	static const char *const keys[] = { "method", "tool",	 "params", "path",
					    "query",  "command", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	bool mcp = c->ep_proto == POLICY_PROTO_MCP;
	const char *proto = mcp ? "mcp" : "json-rpc";
	const struct ynode *m = ynode_map_get(n, "method"), *t = ynode_map_get(n, "tool");
	const struct ynode *prm = ynode_map_get(n, "params");
	const char *s;
	size_t old;
	if (ynode_map_get(n, "path") || ynode_map_get(n, "query")) {
		const char *k = ynode_map_get(n, "path") ? "path" : "query";
		old = kp_push(c, ".%s", k);
		lerr(c, ynode_map_get(n, k), "%s L7 rules must use method%s, not path/query", proto,
		     mcp ? "/tool" : "");
		kp_pop(c, old);
	}
	old = kp_push(c, ".method");
	if (m && get_str(c, m, "a JSON-RPC method name or \"*\"", &s)) {
		if (!method_chars_ok(s))
			lerr_expected(c, m,
				      "a JSON-RPC method name (printable, no spaces) or \"*\"");
		else if (!mcp && strcmp(s, "*") != 0 && uses_wildcard(s))
			lerr(c, m,
			     "generic JSON-RPC method rules do not support glob or wildcard "
			     "matchers; use \"*\" to allow all methods or an exact method name");
		else if (mcp && uses_wildcard(s) && strncmp(s, "tools/", 6) != 0)
			lerr(c, m,
			     "MCP method globs are only valid for the tools/ method family; omit "
			     "method to use the endpoint method profile");
		else if (mcp && unsupported_glob(s))
			lerr_expected(c, m, "an MCP method glob using only `*` wildcards");
		else
			r->method = ldup(c, s);
	} else if (!m && !mcp) {
		lerr(c, n, "required for json-rpc L7 rules");
	}
	kp_pop(c, old);
	if (t) {
		old = kp_push(c, ".tool");
		if (!mcp)
			lerr(c, t, "MCP tool matching is only valid for protocol mcp");
		else
			load_tool_globs(c, t, &r->tool);
		kp_pop(c, old);
	}
	if (!prm)
		return;
	old = kp_push(c, ".params");
	if (!mcp) {
		lerr(c, prm, "JSON-RPC rules do not support params matchers yet");
	} else if (want_map(c, prm)) {
		for (size_t i = 0; i < prm->map.n; i++) {
			const char *k = prm->map.pairs[i].key->scalar.value;
			size_t o2 = kp_push(c, ".%.64s", k);
			if (strcmp(k, "name") != 0)
				lerr(c, prm->map.pairs[i].value,
				     "MCP tool argument matching is not supported yet");
			else if (t)
				lerr(c, prm->map.pairs[i].value,
				     "MCP rules must use either tool or params.name, not both");
			else
				load_tool_globs(c, prm->map.pairs[i].value, &r->tool);
			kp_pop(c, o2);
		}
	}
	kp_pop(c, old);
}

static bool load_max_body(struct lctx *c, const struct ynode *v, struct policy_endpoint *ep)
{
	uint64_t x;
	if (!get_uint(c, v, 0, UINT32_MAX, "a byte count 1..4294967295 (0: the default)", &x))
		return false;
	if (x == 0) /* upstream: zero is "unset" */
		x = POLICY_JSONRPC_MAX_BODY_DEFAULT;
	if (x > POLICY_JSONRPC_MAX_BODY_LIMIT) {
		lwarn(c, v,
		      "%llu bytes is above this proxy's inspection buffer; bodies are capped at "
		      "%u bytes (larger ones are refused, never passed uninspected)",
		      (unsigned long long)x, POLICY_JSONRPC_MAX_BODY_LIMIT);
		x = POLICY_JSONRPC_MAX_BODY_LIMIT;
	}
	ep->json_rpc_max_body_bytes = (uint32_t)x;
	return true;
}

void load_json_rpc_stanza(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "max_body_bytes", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const struct ynode *v = ynode_map_get(n, "max_body_bytes");
	if (v) {
		size_t old = kp_push(c, ".max_body_bytes");
		load_max_body(c, v, ep);
		kp_pop(c, old);
	}
}

void load_mcp_stanza(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "max_body_bytes", "strict_tool_names",
					    "allow_all_known_mcp_methods", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		const struct ynode *v = n->map.pairs[i].value;
		size_t old = kp_push(c, ".%s", k);
		if (!strcmp(k, "max_body_bytes"))
			load_max_body(c, v, ep);
		else if (!strcmp(k, "strict_tool_names"))
			get_bool(c, v, &ep->mcp_strict_tool_names);
		else if (!strcmp(k, "allow_all_known_mcp_methods"))
			get_bool(c, v, &ep->mcp_allow_all_known_methods);
		kp_pop(c, old);
	}
}

static bool tool_uses_wildcard(const struct policy_query *q)
{
	for (size_t i = 0; q && i < q->n_globs; i++)
		if (uses_wildcard(q->globs[i]))
			return true;
	return false;
}

static bool method_covers_tools_call(const char *m)
{
	if (!m)
		return false;
	if (!strcmp(m, "tools/call") || !strcmp(m, "*"))
		return true;
	/* a tools/ glob: `*` only (the loader refused the rest) */
	const char *star = strchr(m, '*');
	return star && strncmp(m, "tools/call", (size_t)(star - m)) == 0;
}

/* The mcp checks of one rule that need the endpoint's options. */
static void check_mcp_rule(struct lctx *c, const struct ynode *rn, const struct policy_rule *r,
			   const struct policy_endpoint *ep)
{
	if (!r->method && !ep->mcp_allow_all_known_methods) {
		lerr(c, rn, "method: required when mcp.allow_all_known_mcp_methods is false");
		return;
	}
	if (r->tool && r->method && strcmp(r->method, "tools/call") != 0)
		lerr(c, rn,
		     "method: must be tools/call when an MCP rule uses tool or params.name, "
		     "got '%s'",
		     r->method);
	if (r->tool && !ep->mcp_strict_tool_names && tool_uses_wildcard(r->tool))
		lerr(c, rn,
		     "tool: wildcard tool-name matchers require mcp.strict_tool_names to remain "
		     "enabled");
}

static void check_rules(struct lctx *c, const struct ynode *list, const struct policy_rule *rules,
			size_t n, bool deny, const struct policy_endpoint *ep)
{
	bool tool_allows = false;
	for (size_t i = 0; i < ep->n_rules; i++)
		tool_allows |= ep->rules[i].tool != NULL;
	for (size_t i = 0; list && list->kind == YNODE_SEQUENCE && i < n && i < list->seq.n; i++) {
		const struct ynode *rn = list->seq.items[i];
		size_t old = kp_push(c, "[%zu]%s", i, deny ? "" : ".allow");
		const struct ynode *at = deny ? rn : ynode_map_get(rn, "allow");
		check_mcp_rule(c, at ? at : rn, &rules[i], ep);
		if (deny && tool_allows && !rules[i].tool &&
		    method_covers_tools_call(rules[i].method))
			lerr(c, at ? at : rn,
			     "method matcher denies every tool call and conflicts with MCP tool "
			     "allow rules; add tool or params.name to deny specific tools, or "
			     "remove the tool allow rules");
		kp_pop(c, old);
	}
}

void check_rpc_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	const struct ynode *acc = ynode_map_get(n, "access"), *rules = ynode_map_get(n, "rules");
	const struct ynode *mcp = ynode_map_get(n, "mcp"), *jr = ynode_map_get(n, "json_rpc");
	bool is_mcp = ep->protocol == POLICY_PROTO_MCP;
	bool rpc = policy_protocol_is_rpc(ep->protocol);
	size_t old = c->plen;
	if (mcp && !is_mcp) {
		kp_push(c, ".mcp");
		lerr(c, mcp, "mcp options are only valid for protocol mcp");
		kp_pop(c, old);
	}
	if (jr && !rpc) {
		kp_push(c, ".json_rpc");
		lwarn(c, jr,
		      "JSON-RPC-specific endpoint fields are ignored unless protocol is json-rpc "
		      "or "
		      "mcp");
		kp_pop(c, old);
	}
	if (!rpc)
		return;
	if (jr && mcp && ynode_map_get(jr, "max_body_bytes") &&
	    ynode_map_get(mcp, "max_body_bytes")) {
		kp_push(c, ".json_rpc.max_body_bytes");
		lerr(c, jr, "set the body cap once (json_rpc or mcp), not in both");
		kp_pop(c, old);
	}
	if (!ep->json_rpc_max_body_bytes)
		ep->json_rpc_max_body_bytes = POLICY_JSONRPC_MAX_BODY_DEFAULT;
	const char *proto = is_mcp ? "mcp" : "json-rpc";
	if (acc) {
		kp_push(c, ".access");
		lerr(c, acc, "access presets do not apply to protocol %s; write rules", proto);
		kp_pop(c, old);
	}
	if (!rules && !(is_mcp && ep->mcp_allow_all_known_methods)) {
		kp_push(c, ".protocol");
		lerr(c, ynode_map_get(n, "protocol"), "a %s endpoint needs rules%s", proto,
		     is_mcp ? " (or mcp.allow_all_known_mcp_methods: true)" : "");
		kp_pop(c, old);
	}
	if (is_mcp && !ep->host)
		lerr(c, n, "protocol mcp requires host; protocol alone is not a wildcard endpoint");
	if (!is_mcp)
		return;
	kp_push(c, ".rules");
	check_rules(c, rules, ep->rules, ep->n_rules, false, ep);
	kp_pop(c, old);
	kp_push(c, ".deny_rules");
	check_rules(c, ynode_map_get(n, "deny_rules"), ep->deny_rules, ep->n_deny, true, ep);
	kp_pop(c, old);
}
