/* policy_load_sql.c - `protocol: sql` and its rule key `command`.
 *
 * OpenShell reserves SQL inspection: its schema has `command` in allow and
 * deny rules and its Rego a command matcher, but its relay never parses SQL
 * ("SQL L7 provider not yet implemented, falling back to passthrough": the
 * stream is copied both ways uninspected), and its validator refuses
 * `enforcement: enforce` on sql ("SQL enforcement requires full SQL parsing
 * (not available in v1)"). Such a policy loads here as there and means what
 * it means there: the endpoint admits connections by host, port and binary,
 * the SQL inside is never judged. Nothing here pretends otherwise: sql is not
 * an inspected protocol (policy_protocol_inspected), so the proxy relays it as
 * an L4 tunnel; its command rules are checked and then dropped, and the
 * loader says so in a warning. */
#include <string.h>

#include "policy_load_int.h"

/* A SQL command word as upstream's matcher compares it (case-insensitive,
 * `*` any): letters and underscores, words separated by single spaces. */
static bool command_ok(const char *s)
{
	if (!strcmp(s, "*"))
		return true;
	size_t n = strlen(s);
	if (n == 0 || n > 64 || s[0] == ' ' || s[n - 1] == ' ' || strstr(s, "  "))
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_ ") == n;
}

void load_sql_matcher(struct lctx *c, const struct ynode *n)
{
	static const char *const keys[] = { "command", NULL };
	static const char what[] = "a SQL command word (SELECT, INSERT, ...) or \"*\"";
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const struct ynode *cmd = ynode_map_get(n, "command");
	const char *s;
	size_t old = kp_push(c, ".command");
	if (!cmd)
		lerr(c, n, "required key missing (expected %s)", what);
	else if (get_str(c, cmd, what, &s) && !command_ok(s))
		lerr_expected(c, cmd, what);
	kp_pop(c, old);
}

void ignore_sql_command(struct lctx *c, const struct ynode *n)
{
	const struct ynode *cmd =
		n && n->kind == YNODE_MAPPING ? ynode_map_get(n, "command") : NULL;
	if (!cmd)
		return;
	size_t old = kp_push(c, ".command");
	lwarn(c, cmd,
	      "ignored: command matches SQL statements and applies to protocol sql only "
	      "(OpenShell ignores it here too)");
	kp_pop(c, old);
}

void check_sql_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	if (ep->protocol != POLICY_PROTO_SQL)
		return;
	const struct ynode *enf = ynode_map_get(n, "enforcement");
	const struct ynode *cred = ynode_map_get(n, "credential_binding");
	size_t old = c->plen;
	if (enf && ynode_scalar_eq(enf, "enforce")) {
		kp_push(c, ".enforcement");
		lerr(c, enf,
		     "SQL enforcement requires SQL parsing, which OpenShell v1 does not have and "
		     "neither does this sandbox; use enforcement: audit (as OpenShell requires)");
	} else if (cred) {
		kp_push(c, ".credential_binding");
		lerr(c, cred,
		     "cannot be used with protocol: sql (SQL is relayed uninspected, so no "
		     "secret could ever be placed in it)");
	} else if (!ynode_map_get(n, "rules") && !ynode_map_get(n, "access")) {
		kp_push(c, ".protocol");
		lerr(c, ynode_map_get(n, "protocol"),
		     "sql needs access or rules (OpenShell: protocol requires rules or access)");
	} else {
		kp_push(c, ".protocol");
		lwarn(c, ynode_map_get(n, "protocol"),
		      "SQL is not inspected, here as in OpenShell v1 (which relays it uninspected, "
		      "audit only): the endpoint admits connections by host, port and binaries as "
		      "an L4 tunnel; its rules and access are never evaluated");
	}
	kp_pop(c, old);
	/* Validated above, never evaluated: kept nowhere, so nothing downstream
	 * can mistake them for rules that judge something. */
	policy_rules_free(ep->rules, ep->n_rules);
	policy_rules_free(ep->deny_rules, ep->n_deny);
	ep->rules = ep->deny_rules = NULL;
	ep->n_rules = ep->n_deny = 0;
	ep->access = POLICY_ACCESS_NONE;
	ep->enforcement = POLICY_ENF_AUDIT; /* the only mode upstream accepts for sql */
}
