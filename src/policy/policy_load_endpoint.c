/* policy_load_endpoint.c - loads one network endpoint: host, ports,
 * allowed_ips, protocol/tls/enforcement, access presets, REST rules.
 * Must never accept a combination whose meaning is ambiguous or silently inert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "hostglob.h"
#include "policy_load_int.h"

static void load_host(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	const char *s;
	if (!get_str(c, n, "a host name, IP address or host glob", &s))
		return;
	char norm[HOST_NAME_CAP];
	os_error e = { 0 };
	if (host_pattern_normalize(s, n->scalar.len, norm, sizeof norm, &e) < 0) {
		char what[OS_ERROR_MSG_MAX + 64];
		snprintf(what, sizeof what, "a host name, IP address or host glob (%s)", e.msg);
		lerr_expected(c, n, what);
		return;
	}
	/* Always-blocked destinations load (OpenShell's SSRF scenarios name them)
	 * and are refused at connect time: policy_decide_address. */
	if (host_is_metadata_name(norm))
		lwarn(c, n,
		      "%s is a cloud metadata endpoint: every connection to it is denied "
		      "(ssrf_denied)",
		      norm);
	if (host_is_ip_literal(norm)) {
		struct cidr cd = { .prefix = 0 };
		const char *why = NULL;
		if (ip_addr_parse(norm, &cd.addr, &e) < 0) {
			lerr_expected(c, n, "a valid IP address");
			return;
		}
		if (ip_addr_classify(&cd.addr, &why) == ADDR_ALWAYS_BLOCKED)
			lwarn(c, n,
			      "%s is always blocked (%s): every connection to it is denied "
			      "(ssrf_denied)",
			      norm, why ? why : "reserved");
		cd.prefix = cd.addr.family == AF_INET ? 32 : 128;
		/* A literal IP host implies allowed_ips for exactly that address. */
		struct cidr *v = reallocarray(ep->allowed_ips, ep->n_allowed + 1, sizeof *v);
		if (!v) {
			lerr_oom(c);
			return;
		}
		ep->allowed_ips = v;
		v[ep->n_allowed++] = cd;
	}
	ep->host = ldup(c, norm);
}

static void load_ports(struct lctx *c, const struct ynode *n, bool list, struct policy_endpoint *ep)
{
	static const char what[] = "an integer 1..65535";
	size_t count = list ? 0 : 1;
	free(ep->ports); /* both `port` and `ports`: reported by check_combination */
	ep->ports = NULL;
	ep->n_ports = 0;
	if (list) {
		if (!want_seq(c, n, true))
			return;
		count = n->seq.n;
	}
	if (count > 65535) {
		lerr(c, n, "too many ports");
		return;
	}
	ep->ports = calloc(count, sizeof *ep->ports);
	if (!ep->ports) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < count; i++) {
		const struct ynode *it = list ? n->seq.items[i] : n;
		size_t old = list ? kp_push(c, "[%zu]", i) : c->plen;
		uint64_t v;
		if (get_uint(c, it, 1, 65535, what, &v))
			ep->ports[ep->n_ports++] = (uint16_t)v;
		kp_pop(c, old);
	}
}

static void load_allowed_ips(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	if (!want_seq(c, n, true))
		return;
	struct cidr *v = reallocarray(ep->allowed_ips, ep->n_allowed + n->seq.n, sizeof *v);
	if (!v) {
		lerr_oom(c);
		return;
	}
	ep->allowed_ips = v;
	for (size_t i = 0; i < n->seq.n; i++) {
		const struct ynode *it = n->seq.items[i];
		size_t old = kp_push(c, "[%zu]", i);
		const char *s, *why = NULL;
		struct cidr cd;
		os_error e = { 0 };
		if (!get_str(c, it, "an IP address or CIDR", &s)) {
		} else if (cidr_parse(s, &cd, &e) < 0) {
			char what[OS_ERROR_MSG_MAX + 32];
			snprintf(what, sizeof what, "an IP address or CIDR (%s)", e.msg);
			lerr_expected(c, it, what);
		} else if (cidr_within_always_blocked(&cd, &why)) {
			lerr(c, it,
			     "%s is always blocked (%s): an allowed_ips entry cannot open it", s,
			     why);
		} else if (cidr_overlaps_always_blocked_why(&cd, &why)) {
			lwarn(c, it,
			      "%s contains always-blocked addresses (%s); they stay blocked at "
			      "connect time",
			      s, why);
			v[ep->n_allowed++] = cd;
		} else {
			v[ep->n_allowed++] = cd;
		}
		kp_pop(c, old);
	}
}

static bool method_ok(const char *m)
{
	if (!strcmp(m, "*"))
		return true;
	size_t n = strlen(m);
	return n > 0 && n <= 32 &&
	       strspn(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-") == n;
}

/* A path glob: absolute, no `.`/`..` components (they could never match a
 * canonical path), no bytes canonicalisation would refuse. */
static const char *glob_problem(const char *p)
{
	if (p[0] != '/')
		return "not absolute";
	for (const char *s = p; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '\\' ||
		    *s == '?' || *s == '#' || *s == '%')
			return "contains a byte a canonical path cannot contain";
	for (const char *s = p; *s;) {
		s++;
		size_t n = strcspn(s, "/");
		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return "contains a `.` or `..` component";
		if (n == 0 && s[0] == '/')
			return "contains `//`";
		s += n;
	}
	return NULL;
}

/* A matcher's globs: "glob", {glob: GLOB} or {any: [globs]} (OpenShell's
 * matcher forms). Tool-name globs (tool) must be non-empty and use only
 * `*`: the other glob metacharacters upstream knows are refused, never read
 * literally. */
void load_matcher_globs(struct lctx *c, const struct ynode *v, bool tool, struct policy_query *q)
{
	static const char *const keys[] = { "glob", "any", NULL };
	const char *what = tool ? "a tool-name glob" : "a glob";
	const struct ynode *list = v;
	if (v && v->kind == YNODE_MAPPING) {
		check_keys(c, v, keys);
		const struct ynode *g = ynode_map_get(v, "glob"), *a = ynode_map_get(v, "any");
		if ((g != NULL) == (a != NULL)) {
			lerr(c, v, "a matcher needs exactly one of `glob` or `any`");
			return;
		}
		size_t old = kp_push(c, g ? ".glob" : ".any");
		list = g ? g : a;
		bool ok = g || want_seq(c, a, true);
		kp_pop(c, old);
		if (!ok)
			return;
	} else if (!v || v->kind != YNODE_SCALAR) {
		lerr_expected(c, v, "a glob, {glob: GLOB} or {any: [globs]}");
		return;
	}
	size_t n = list->kind == YNODE_SEQUENCE ? list->seq.n : 1;
	q->globs = calloc(n, sizeof *q->globs);
	if (!q->globs) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ynode *g = list->kind == YNODE_SEQUENCE ? list->seq.items[i] : list;
		const char *s;
		if (!get_str(c, g, what, &s))
			continue;
		if (tool && !*s)
			lerr_expected(c, g, "a non-empty tool-name glob");
		else if (tool && strpbrk(s, "?[]{}"))
			lerr_expected(c, g, "a tool-name glob using only `*` wildcards");
		else
			q->globs[q->n_globs++] = ldup(c, s);
	}
}

static void load_query(struct lctx *c, const struct ynode *n, struct policy_rule *r)
{
	if (!want_map(c, n))
		return;
	r->query = calloc(n->map.n ? n->map.n : 1, sizeof *r->query);
	if (!r->query) {
		lerr_oom(c);
		return;
	}
	for (size_t i = 0; i < n->map.n; i++) {
		const struct ynode *k = n->map.pairs[i].key;
		size_t old = kp_push(c, ".%.64s", k->scalar.value);
		struct policy_query *q = &r->query[r->n_query++];
		q->name = ldup(c, k->scalar.value);
		load_matcher_globs(c, n->map.pairs[i].value, false, q);
		kp_pop(c, old);
	}
}

/* A websocket rule naming a GraphQL operation (upstream: such a rule makes
 * the endpoint judge its messages as GraphQL over WebSocket). */
static bool graphql_ws_matcher(const struct lctx *c, const struct ynode *n)
{
	return c->ep_proto == POLICY_PROTO_WEBSOCKET && n && n->kind == YNODE_MAPPING &&
	       (ynode_map_get(n, "operation_type") || ynode_map_get(n, "operation_name") ||
		ynode_map_get(n, "fields"));
}

/* One REST matcher {method, path, query}. */
static void load_matcher(struct lctx *c, const struct ynode *n, struct policy_rule *r)
{
	static const char *const keys[] = { "method", "path", "query", "command", NULL };
	if (c->ep_proto == POLICY_PROTO_SQL) {
		load_sql_matcher(c, n);
		return;
	}
	ignore_sql_command(c, n);
	if (policy_protocol_is_rpc(c->ep_proto)) {
		load_rpc_matcher(c, n, r);
		return;
	}
	if (c->ep_proto == POLICY_PROTO_GRAPHQL || graphql_ws_matcher(c, n)) {
		load_graphql_matcher(c, n, r);
		return;
	}
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const struct ynode *m = ynode_map_get(n, "method"), *p = ynode_map_get(n, "path");
	const struct ynode *q = ynode_map_get(n, "query");
	const char *s, *why;
	size_t old = kp_push(c, ".method");
	if (!m)
		lerr(c, n, "required key missing (expected an HTTP method or \"*\")");
	else if (get_str(c, m, "an HTTP method or \"*\"", &s) && !method_ok(s))
		lerr_expected(c, m, "an HTTP method or \"*\"");
	else if (m->kind == YNODE_SCALAR && (r->method = ldup(c, m->scalar.value)))
		for (char *x = r->method; *x; x++)
			if (*x >= 'a' && *x <= 'z')
				*x = (char)(*x - 32);
	kp_pop(c, old);
	old = kp_push(c, ".path");
	if (!p)
		lerr(c, n, "required key missing (expected a path glob)");
	else if (ynode_scalar_eq(p, "**"))
		r->path = ldup(c, "/**"); /* OpenShell's "everything" (access presets) */
	else if (get_str(c, p, "a path glob", &s) && (why = glob_problem(s))) {
		char what[96];
		snprintf(what, sizeof what, "a path glob (this one %s)", why);
		lerr_expected(c, p, what);
	} else if (p->kind == YNODE_SCALAR && !ynode_is_null(p))
		r->path = ldup(c, p->scalar.value);
	kp_pop(c, old);
	if (q) {
		old = kp_push(c, ".query");
		load_query(c, q, r);
		kp_pop(c, old);
	}
}

static void load_rules(struct lctx *c, const struct ynode *n, bool deny, struct policy_rule **out,
		       size_t *count)
{
	static const char *const keys[] = { "allow", NULL };
	if (!want_seq(c, n, true))
		return;
	if (n->seq.n > POLICY_MAX_RULES) {
		lerr(c, n, "more than 1024 rules");
		return;
	}
	*out = calloc(n->seq.n, sizeof **out);
	if (!*out) {
		lerr_oom(c);
		return;
	}
	*count = n->seq.n;
	for (size_t i = 0; i < n->seq.n; i++) {
		const struct ynode *it = n->seq.items[i];
		size_t old = kp_push(c, "[%zu]", i);
		if (deny) {
			load_matcher(c, it, &(*out)[i]);
		} else if (want_map(c, it)) {
			/* Allow rules wrap their matcher in `allow:` (OpenShell). */
			check_keys(c, it, keys);
			const struct ynode *a = ynode_map_get(it, "allow");
			kp_push(c, ".allow");
			if (!a)
				lerr(c, it, "required key missing (expected a mapping)");
			else
				load_matcher(c, a, &(*out)[i]);
		}
		kp_pop(c, old);
	}
}

static void load_enum(struct lctx *c, const struct ynode *n, const char *const names[],
		      const char *what, int *out)
{
	for (int i = 0; names[i]; i++) {
		if (ynode_scalar_eq(n, names[i])) {
			*out = i;
			return;
		}
	}
	lerr_expected(c, n, what);
}

static void load_credential(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "provider", NULL };
	if (!want_map(c, n))
		return;
	check_keys(c, n, keys);
	const struct ynode *p = ynode_map_get(n, "provider");
	size_t old = kp_push(c, ".provider");
	const char *s;
	if (!p)
		lerr(c, n, "required key missing (expected a provider name)");
	else if (get_str(c, p, "a provider name", &s))
		ep->credential_provider = ldup(c, s);
	kp_pop(c, old);
}

/* `path` on the endpoint: `**` (everything) or an absolute glob. */
static void load_endpoint_path(struct lctx *c, const struct ynode *v, struct policy_endpoint *ep)
{
	const char *s, *why;
	if (!get_str(c, v, "`**` or an absolute path glob", &s))
		return;
	if (!strcmp(s, "**"))
		return; /* matches every path: no bound, specificity 0 */
	/* "/" + "**" matches every path too but ranks above no path (OpenShell
	 * counts its non-`*` bytes), so it is kept. */
	/* OpenShell's glob classes ([..]) are not supported: read literally they
	 * would match nothing (a canonical path has no raw '['), so refused. */
	if (!(why = glob_problem(s)) && strpbrk(s, "[]"))
		why = "uses a `[..]` class, which is not supported here";
	if (why) {
		char what[112];
		snprintf(what, sizeof what, "`**` or an absolute path glob (this one %s)", why);
		lerr_expected(c, v, what);
		return;
	}
	ep->path = ldup(c, s);
}

/* The protocol a `protocol:` value names, or NONE when it names none we load. */
static enum policy_protocol policy_protocol_of(const struct ynode *v)
{
	static const struct {
		const char *name;
		enum policy_protocol p;
	} known[] = { { "rest", POLICY_PROTO_REST },	    { "tcp", POLICY_PROTO_TCP },
		      { "json-rpc", POLICY_PROTO_JSONRPC }, { "mcp", POLICY_PROTO_MCP },
		      { "graphql", POLICY_PROTO_GRAPHQL },  { "websocket", POLICY_PROTO_WEBSOCKET },
		      { "sql", POLICY_PROTO_SQL } };
	for (size_t i = 0; v && i < ARRAY_SIZE(known); i++)
		if (ynode_scalar_eq(v, known[i].name))
			return known[i].p;
	return POLICY_PROTO_NONE;
}

static void load_tls(struct lctx *c, const struct ynode *v, struct policy_endpoint *ep)
{
	ep->tls_explicit = true;
	if (ynode_scalar_eq(v, "skip")) {
		ep->tls = POLICY_TLS_SKIP;
	} else if (ynode_scalar_eq(v, "terminate") || ynode_scalar_eq(v, "passthrough")) {
		lwarn(c, v,
		      "'tls: %s' is deprecated (OpenShell: TLS termination is now automatic); "
		      "treated as the default. Use 'tls: skip' to disable it",
		      v->scalar.value);
	} else {
		lerr_expected(c, v, "skip (or the deprecated terminate/passthrough)");
	}
}

static void load_protocol(struct lctx *c, const struct ynode *v, struct policy_endpoint *ep)
{
	enum policy_protocol p = policy_protocol_of(v);
	if (p != POLICY_PROTO_NONE)
		ep->protocol = p; /* sql: what it means is check_sql_endpoint's */
	else
		lerr_expected(c, v, "rest, json-rpc, mcp, graphql, websocket, sql or tcp");
}

static void load_field(struct lctx *c, const char *k, const struct ynode *v,
		       struct policy_endpoint *ep)
{
	static const char *const enf[] = { "enforce", "audit", NULL };
	static const char *const acc[] = { "read-only", "read-write", "full", NULL };
	int x = -1;
	if (!strcmp(k, "host")) {
		load_host(c, v, ep);
	} else if (!strcmp(k, "port") || !strcmp(k, "ports")) {
		load_ports(c, v, k[4] == 's', ep);
	} else if (!strcmp(k, "allowed_ips")) {
		load_allowed_ips(c, v, ep);
	} else if (!strcmp(k, "protocol")) {
		load_protocol(c, v, ep);
	} else if (!strcmp(k, "tls")) {
		load_tls(c, v, ep);
	} else if (!strcmp(k, "enforcement")) {
		load_enum(c, v, enf, "enforce or audit", &x);
		ep->enforcement = x == 1 ? POLICY_ENF_AUDIT : POLICY_ENF_ENFORCE;
	} else if (!strcmp(k, "access")) {
		load_enum(c, v, acc, "read-only, read-write or full", &x);
		ep->access = x < 0 ? POLICY_ACCESS_NONE : (enum policy_access)(x + 1);
	} else if (!strcmp(k, "rules")) {
		load_rules(c, v, false, &ep->rules, &ep->n_rules);
	} else if (!strcmp(k, "deny_rules")) {
		load_rules(c, v, true, &ep->deny_rules, &ep->n_deny);
	} else if (!strcmp(k, "credential_binding")) {
		load_credential(c, v, ep);
	} else if (!strcmp(k, "path")) {
		load_endpoint_path(c, v, ep);
	} else if (!strcmp(k, "json_rpc")) {
		load_json_rpc_stanza(c, v, ep);
	} else if (!strcmp(k, "mcp")) {
		load_mcp_stanza(c, v, ep);
	} else if (!strcmp(k, "websocket_credential_rewrite")) {
		get_bool(c, v, &ep->websocket_credential_rewrite); /* proxy_ws.c */
	} else if (!strcmp(k, "allow_encoded_slash")) {
		get_bool(c, v, &ep->allow_encoded_slash); /* canon.c */
	} else if (!strcmp(k, "allow_uninspected_credentials")) {
		get_bool(c, v, &ep->allow_uninspected_credentials); /* check_combination */
	} else if (load_graphql_field(c, k, v, ep) || load_signing_field(c, k, v, ep)) {
		return;
	}
}

/* access / rules / enforcement without protocol: OpenShell ignores them; so
 * do we, with one warning naming them, and nothing of them is kept. */
static void ignore_l7_keys(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "access", "rules", "enforcement", NULL };
	char names[64] = "";
	size_t o = 0;
	const struct ynode *first = NULL;
	const char *first_key = "";
	for (size_t i = 0; keys[i]; i++) {
		const struct ynode *k = ynode_map_get(n, keys[i]);
		if (!k)
			continue;
		if (!first) {
			first = k;
			first_key = keys[i];
		}
		o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", keys[i]);
	}
	if (!first)
		return;
	size_t old = kp_push(c, ".%s", first_key);
	lwarn(c, first,
	      "%s ignored: the endpoint has no protocol, so it is L4 only (OpenShell ignores "
	      "them too; add protocol: rest to inspect requests)",
	      names);
	kp_pop(c, old);
	ep->access = POLICY_ACCESS_NONE;
	ep->enforcement = POLICY_ENF_ENFORCE;
	policy_rules_free(ep->rules, ep->n_rules);
	ep->rules = NULL;
	ep->n_rules = 0;
}

/* Rules between fields; each error points at the offending key. */
static void check_combination(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	bool rest = policy_protocol_rest_rules(ep->protocol);
	bool inspected = policy_protocol_inspected(ep->protocol);
	bool tcp = ynode_scalar_eq(ynode_map_get(n, "protocol"), "tcp");
	bool proto = ynode_map_get(n, "protocol") != NULL;
	const struct ynode *rules = ynode_map_get(n, "rules"), *acc = ynode_map_get(n, "access");
	const struct ynode *tls = ynode_map_get(n, "tls"), *deny = ynode_map_get(n, "deny_rules");
	const struct ynode *cred = ynode_map_get(n, "credential_binding");
	const struct ynode *path = ynode_map_get(n, "path");
	size_t old = c->plen;
	if (deny && !inspected && ep->protocol != POLICY_PROTO_SQL) {
		kp_push(c, ".deny_rules");
		lerr(c, deny, "requires protocol: rest, json-rpc, mcp, graphql, websocket or sql");
	} else if (rules && acc) {
		kp_push(c, ".rules");
		lerr(c, rules, "cannot be combined with access (choose one)");
	} else if (rest && !rules && !acc) {
		kp_push(c, ".protocol");
		lerr(c, ynode_map_get(n, "protocol"), "%s needs access or rules",
		     ep->protocol == POLICY_PROTO_WEBSOCKET ? "websocket" : "rest");
	} else if (tcp && (rules || acc || ynode_map_get(n, "enforcement"))) {
		const char *k = rules ? "rules" : acc ? "access" : "enforcement";
		kp_push(c, ".%s", k);
		lerr(c, ynode_map_get(n, k), "requires protocol: rest");
	} else if (tcp && cred) {
		kp_push(c, ".credential_binding");
		lerr(c, cred,
		     "cannot be used with protocol: tcp (a raw TCP stream is never inspected, so "
		     "the binding could never be used)");
	} else if (cred && !inspected && ep->protocol != POLICY_PROTO_SQL &&
		   !ep->allow_uninspected_credentials) {
		/* OpenShell: "credentialed endpoint ... uses L4-only; configure L7
		 * inspection or explicitly set allow_uninspected_credentials: true". */
		kp_push(c, ".credential_binding");
		lerr(c, cred,
		     "on an endpoint without an inspected protocol (L4-only) needs "
		     "allow_uninspected_credentials: true, as in OpenShell; or give it a protocol "
		     "(rest, ...) so its requests are inspected");
	} else if (cred && !inspected && ep->protocol != POLICY_PROTO_SQL &&
		   ep->tls != POLICY_TLS_SKIP) {
		kp_push(c, ".allow_uninspected_credentials");
		lwarn(c, ynode_map_get(n, "allow_uninspected_credentials"),
		      "here TLS is still terminated for this credential-bound endpoint and its "
		      "request headers rewritten (a secret never goes where its echo cannot be "
		      "scrubbed), so only HTTP/1.1 passes, not a raw stream");
	} else if (inspected && tls && ynode_scalar_eq(tls, "skip")) {
		kp_push(c, ".tls");
		lwarn(c, tls,
		      "'tls: skip' with L7 rules: OpenShell cannot inspect encrypted traffic "
		      "then; here TLS is still terminated so the rules are enforced (skip is "
		      "ignored on inspected protocols)");
		ep->tls = POLICY_TLS_AUTO;
	}
	kp_pop(c, old);
	if (ep->allow_uninspected_credentials && !cred) {
		const struct ynode *auc = ynode_map_get(n, "allow_uninspected_credentials");
		kp_push(c, ".allow_uninspected_credentials");
		lwarn(c, auc,
		      "has no effect: the endpoint binds no provider (credential_binding), "
		      "so no credential can travel uninspected (OpenShell ignores it too)");
		kp_pop(c, old);
	}
	if (!proto)
		ignore_l7_keys(c, n, ep);
	check_rpc_endpoint(c, n, ep);
	check_graphql_endpoint(c, n, ep);
	check_signing_endpoint(c, n, ep);
	check_sql_endpoint(c, n, ep);
	if (path && !inspected && ep->path) {
		kp_push(c, ".path");
		lwarn(c, path, "ignored: an endpoint path only applies to inspected protocols");
		kp_pop(c, old);
		free(ep->path);
		ep->path = NULL;
	}
	if (!ynode_map_get(n, "host") && !ynode_map_get(n, "allowed_ips"))
		lerr(c, n,
		     "host: required key missing (expected a host name or glob; only an endpoint "
		     "with allowed_ips may omit it)");
	bool has_port = ynode_map_get(n, "port"), has_ports = ynode_map_get(n, "ports");
	if (has_port == has_ports)
		lerr(c, n, "%s (an integer 1..65535 or a list of them)",
		     has_port ? "port and ports cannot be combined, use one"
			      : "port: required key missing");
}

void load_endpoint(struct lctx *c, const struct ynode *n, struct policy_endpoint *ep)
{
	static const char *const keys[] = { "host",
					    "port",
					    "ports",
					    "protocol",
					    "tls",
					    "enforcement",
					    "access",
					    "rules",
					    "deny_rules",
					    "allowed_ips",
					    "credential_binding",
					    "path",
					    "allow_encoded_slash",
					    "allow_uninspected_credentials",
					    "request_body_credential_rewrite",
					    "websocket_credential_rewrite",
					    "credential_signing",
					    "signing_service",
					    "signing_region",
					    "persisted_queries",
					    "graphql_persisted_queries",
					    "graphql_max_body_bytes",
					    "json_rpc",
					    "mcp",
					    NULL };
	if (!want_map(c, n))
		return;
	ep->line = n->line;
	ep->col = n->col;
	ep->mcp_strict_tool_names = true; /* OpenShell's default */
	check_keys(c, n, keys);
	/* Rules are read by the endpoint's protocol, wherever `protocol:` is. */
	c->ep_proto = policy_protocol_of(ynode_map_get(n, "protocol"));
	for (size_t i = 0; i < n->map.n; i++) {
		const char *k = n->map.pairs[i].key->scalar.value;
		size_t old = kp_push(c, ".%s", k);
		load_field(c, k, n->map.pairs[i].value, ep);
		kp_pop(c, old);
	}
	check_combination(c, n, ep);
}
