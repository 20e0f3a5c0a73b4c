/* policy_decide_l7.c - REST request decisions on an endpoint: canonical
 * path, method (GET covers HEAD), path globs, query matchers, deny rules
 * first, access presets, enforce/audit. Never allocates; the query string is
 * matched but never copied into the decision. */
#include <stdio.h>
#include <string.h>

#include "canon.h"
#include "hex.h"
#include "parse.h"
#include "pathglob.h"
#include "policy_gen_int.h"

#define QUERY_MAX_PARAMS 64
#define QUERY_MAX_BYTES 4096
#define CANON_PATH_MAX 8192

/* Every parameter in two readings: [QUERY_RAW] percent-decoded with '+'
 * kept (what a plain URL parser sees) and [QUERY_FORM] with '+' as a space
 * too (what web frameworks see for a query string). An upstream may use
 * either, so a deny rule hits when either reading matches and an allow rule
 * needs both to match. */
enum { QUERY_RAW, QUERY_FORM, QUERY_READINGS };
/* One reading of a query of L bytes in n pairs needs at most L + n + 1
 * bytes (each pair's name and value NUL-terminated: its length + 2, and the
 * n - 1 '&' separators are not stored). */
#define QUERY_READING_BYTES (QUERY_MAX_BYTES + QUERY_MAX_PARAMS + 1)

struct qparams {
	bool bad; /* undecodable or over the caps: allow rules fail, deny rules hit */
	size_t n;
	const char *name[QUERY_READINGS][QUERY_MAX_PARAMS];
	const char *value[QUERY_READINGS][QUERY_MAX_PARAMS];
	char buf[QUERY_READINGS * QUERY_READING_BYTES];
};

/* Percent-decodes s[0..len) into out (NUL-terminated), with '+' read as a
 * space when plus_is_space; false on a bad escape or a decoded NUL. */
static bool pct_decode(const char *s, size_t len, bool plus_is_space, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			out[o++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
			continue;
		}
		if (i + 2 >= len)
			return false;
		int hi = hex_digit_value((unsigned char)s[i + 1]),
		    lo = hex_digit_value((unsigned char)s[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false;
		out[o++] = (char)(hi * 16 + lo);
		i += 2;
	}
	out[o] = '\0';
	return true;
}

/* Decodes one "name=value" pair in both readings into p->buf at *o; false
 * on a bad escape. A reading of a pair takes at most its length + 2 bytes
 * (see QUERY_READING_BYTES). */
static bool query_pair(const char *pair, size_t len, struct qparams *p, size_t *o)
{
	const char *eq = memchr(pair, '=', len);
	size_t nlen = eq ? (size_t)(eq - pair) : len;
	size_t vlen = eq ? len - nlen - 1 : 0;
	for (int r = 0; r < QUERY_READINGS; r++) {
		char *name = p->buf + *o;
		if (!pct_decode(pair, nlen, r == QUERY_FORM, name))
			return false;
		*o += strlen(name) + 1;
		char *val = p->buf + *o;
		if (!pct_decode(eq ? eq + 1 : "", vlen, r == QUERY_FORM, val))
			return false;
		*o += strlen(val) + 1;
		p->name[r][p->n] = name;
		p->value[r][p->n] = val;
	}
	p->n++;
	return true;
}

static void query_parse(const char *q, size_t len, struct qparams *p)
{
	p->n = 0;
	p->bad = len > QUERY_MAX_BYTES;
	size_t o = 0;
	for (size_t i = 0; !p->bad && i < len;) {
		size_t end = i;
		while (end < len && q[end] != '&')
			end++;
		if (end > i) {
			if (p->n == QUERY_MAX_PARAMS || !query_pair(q + i, end - i, p, &o)) {
				p->bad = true;
				break;
			}
		}
		i = end + 1;
	}
}

static bool globs_match(const struct policy_query *m, const char *v)
{
	for (size_t i = 0; i < m->n_globs; i++)
		if (glob_star_match(m->globs[i], v))
			return true;
	return false;
}

/* Parameter j is called m->name in some reading (deny) or, for an allow
 * rule, in the reading being checked. */
static bool value_hits(const struct policy_query *m, const struct qparams *p, size_t j, bool deny,
		       bool *named)
{
	bool hit_any = false, hit_all = true;
	*named = false;
	for (int r = 0; r < QUERY_READINGS; r++) {
		bool is_named = !strcmp(p->name[r][j], m->name);
		bool hit = is_named && globs_match(m, p->value[r][j]);
		*named |= is_named;
		hit_any |= hit;
		hit_all &= hit;
	}
	return deny ? hit_any : hit_all;
}

/* Allow: each matched parameter present and every value matching, in every
 * reading. Deny: each matched parameter present with at least one value
 * matching in some reading. */
static bool query_match(const struct policy_rule *r, const struct qparams *p, bool deny)
{
	if (r->n_query && p->bad)
		return deny;
	for (size_t i = 0; i < r->n_query; i++) {
		const struct policy_query *m = &r->query[i];
		size_t seen = 0, hits = 0;
		for (size_t j = 0; j < p->n; j++) {
			bool named;
			bool hit = value_hits(m, p, j, deny, &named);
			if (!named)
				continue;
			seen++;
			hits += hit;
		}
		if (seen == 0 || (deny ? hits == 0 : hits != seen))
			return false;
	}
	return true;
}

static bool method_match(const char *rule, const char *m)
{
	return !strcmp(rule, "*") || !strcmp(rule, m) ||
	       (!strcmp(rule, "GET") && !strcmp(m, "HEAD"));
}

static bool rule_match(const struct policy_rule *r, const char *m, const char *path,
		       const struct qparams *q, bool deny)
{
	if (r->graphql)
		return false; /* a websocket endpoint's GraphQL rule: messages only */
	return method_match(r->method, m) && path_glob_match(r->path, path) &&
	       query_match(r, q, deny);
}

/* OpenShell's preset expansion (l7 access_preset_rules): rest read-only is
 * GET, HEAD, OPTIONS on every path, read-write adds POST, PUT, PATCH; on a
 * websocket endpoint read-only is GET (the upgrade; GET covers HEAD) and
 * read-write adds WEBSOCKET_TEXT (client messages); full is every method. */
static bool access_allows(const struct policy_endpoint *ep, const char *m)
{
	static const char *const rest_ro[] = { "GET", "HEAD", "OPTIONS", NULL };
	static const char *const rest_rw[] = { "POST", "PUT", "PATCH", NULL };
	static const char *const ws_ro[] = { "GET", "HEAD", NULL };
	static const char *const ws_rw[] = { POLICY_WEBSOCKET_TEXT_METHOD, NULL };
	enum policy_access a = ep->access;
	bool ws = ep->protocol == POLICY_PROTO_WEBSOCKET;
	const char *const *ro = ws ? ws_ro : rest_ro, *const *rw = ws ? ws_rw : rest_rw;
	if (a == POLICY_ACCESS_FULL)
		return true;
	for (size_t i = 0; a >= POLICY_ACCESS_READ_ONLY && ro[i]; i++)
		if (!strcmp(m, ro[i]))
			return true;
	for (size_t i = 0; a >= POLICY_ACCESS_READ_WRITE && rw[i]; i++)
		if (!strcmp(m, rw[i]))
			return true;
	return false;
}

bool policy_l7_method_norm(const char *m, char *out, size_t cap)
{
	size_t n = m ? strlen(m) : 0;
	if (n == 0 || n >= cap)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = m[i];
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 32);
		if (!((ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '_'))
			return false;
		out[i] = ch;
	}
	out[n] = '\0';
	return true;
}

void policy_l7_finish(struct policy_decision *out, const struct policy_endpoint *ep,
		      bool violation, enum policy_reason r, const char *m, const char *path)
{
	out->reason = r;
	out->verdict = !violation			     ? POLICY_ALLOW
		       : ep->enforcement == POLICY_ENF_AUDIT ? POLICY_AUDIT
							     : POLICY_DENY;
	/* "... not permitted by rule deny_rules[0] of policy web", or, no rule
	 * decided, "... not permitted by policy web". */
	char cut[201];
	size_t pl = strlen(path);
	memcpy(cut, path, pl < 200 ? pl : 200);
	cut[pl < 200 ? pl : 200] = '\0';
	str_join(out->detail, sizeof out->detail, m, " ", cut, " ",
		 violation ? "not permitted" : "permitted", " by ", out->rule,
		 out->rule[0] ? " of " : "", "policy ", out->policy, NULL);
}

bool policy_l7_rules_say(const struct policy_endpoint *ep, bool deny, const char *m,
			const char *canon, const char *qs, size_t qlen, char *rule, size_t rule_cap)
{
	struct qparams q;
	if (!policy_protocol_rest_rules(ep->protocol) || !policy_endpoint_path_match(ep->path, canon))
		return false;
	query_parse(qs ? qs : "", qs ? qlen : 0, &q);
	const struct policy_rule *r = deny ? ep->deny_rules : ep->rules;
	size_t n = deny ? ep->n_deny : ep->n_rules;
	if (!deny && ep->access && access_allows(ep, m)) {
		str_join(rule, rule_cap, "access:", policy_access_name(ep->access), NULL);
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (rule_match(&r[i], m, canon, &q, deny)) {
			snprintf(rule, rule_cap, "%s[%zu]", deny ? "deny_rules" : "rules", i);
			return true;
		}
	return false;
}

void policy_decide_request(const struct policy_gen *g, const struct policy_endpoint *ep,
			   const char *method, const char *raw_target, char *canon,
			   size_t canon_cap, struct policy_decision *out)
{
	memset(out, 0, sizeof *out);
	char local[CANON_PATH_MAX], m[40];
	struct qparams q;
	out->endpoint = ep;
	out->policy = g->doc->networks[ep->policy_index].name;
	if (!canon) {
		canon = local;
		canon_cap = sizeof local;
	}
	if (!policy_l7_method_norm(method, m, sizeof m)) {
		out->reason = POLICY_R_INVALID_METHOD;
		snprintf(out->detail, sizeof out->detail, "request with an invalid method");
		return;
	}
	const char *qs = NULL;
	size_t qlen = 0;
	enum canon_result cr = canon_request_path_opts(
		raw_target ? raw_target : "", raw_target ? strlen(raw_target) : 0,
		ep->allow_encoded_slash ? CANON_ALLOW_ENCODED_SLASH : 0, canon, canon_cap, &qs,
		&qlen);
	if (cr != CANON_OK) {
		/* Ambiguous targets are refused even under audit: there is no
		 * single meaning to forward. */
		out->reason = POLICY_R_PATH_REJECTED;
		snprintf(out->detail, sizeof out->detail, "%s request path rejected: %s", m,
			 canon_result_name(cr));
		return;
	}
	if (policy_protocol_is_rpc(ep->protocol)) {
		rpc_decide_transport(ep, m, canon, out);
		return;
	}
	if (ep->protocol == POLICY_PROTO_GRAPHQL) {
		graphql_decide_transport(ep, m, canon, out);
		return;
	}
	if (ep->protocol == POLICY_PROTO_SQL) {
		/* Only an HTTP request beside an inspected endpoint on the same
		 * host:port can be routed here (a path no other endpoint takes):
		 * it is not SQL, and no rule of this endpoint can judge it. */
		out->reason = POLICY_R_NO_MATCHING_RULE;
		snprintf(out->detail, sizeof out->detail,
			 "%s %s: routed to a protocol sql endpoint of policy %s, which judges no "
			 "HTTP request",
			 m, canon, out->policy);
		return;
	}
	if (!policy_protocol_rest_rules(ep->protocol)) {
		out->verdict = POLICY_ALLOW;
		out->reason = POLICY_R_NOT_INSPECTED;
		snprintf(out->detail, sizeof out->detail, "endpoint of policy %s is not inspected",
			 out->policy);
		return;
	}
	/* The endpoint's own `path` bounds every rule on it (OpenShell: an
	 * endpoint whose path does not match the request does not allow it);
	 * policy_route_request chooses an endpoint whose path matches. */
	if (!policy_endpoint_path_match(ep->path, canon)) {
		snprintf(out->rule, sizeof out->rule, "path");
		policy_l7_finish(out, ep, true, POLICY_R_NO_MATCHING_RULE, m, canon);
		return;
	}
	query_parse(qs ? qs : "", qs ? qlen : 0, &q);
	for (size_t i = 0; i < ep->n_deny; i++)
		if (rule_match(&ep->deny_rules[i], m, canon, &q, true)) {
			snprintf(out->rule, sizeof out->rule, "deny_rules[%zu]", i);
			policy_l7_finish(out, ep, true, POLICY_R_DENY_RULE, m, canon);
			return;
		}
	if (ep->access && access_allows(ep, m)) {
		str_join(out->rule, sizeof out->rule, "access:", policy_access_name(ep->access),
			 NULL);
		policy_l7_finish(out, ep, false, POLICY_R_ALLOWED, m, canon);
		return;
	}
	for (size_t i = 0; i < ep->n_rules; i++)
		if (rule_match(&ep->rules[i], m, canon, &q, false)) {
			snprintf(out->rule, sizeof out->rule, "rules[%zu]", i);
			policy_l7_finish(out, ep, false, POLICY_R_ALLOWED, m, canon);
			return;
		}
	policy_l7_finish(out, ep, true, POLICY_R_NO_MATCHING_RULE, m, canon);
}
