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

/* The query in four readings, as the upstream may read it: split at '&'
 * only (the URL standard, current frameworks) or at '&' and ';' too
 * (Rack before 3, Python's parse_qs before 3.9.2, Perl's CGI), and each
 * percent-decoded with '+' kept (a plain URL parser) or with '+' as a
 * space as well (what web frameworks see). A deny rule hits when any
 * reading matches; an allow rule must hold in every one. */
enum { QUERY_AMP_RAW, QUERY_AMP_FORM, QUERY_SEMI_RAW, QUERY_SEMI_FORM, QUERY_READINGS };
/* One reading of a query of L bytes in n pairs needs at most L + n + 1
 * bytes (each pair's name and value NUL-terminated: its length + 2, and the
 * n - 1 separators are not stored). */
#define QUERY_READING_BYTES (QUERY_MAX_BYTES + QUERY_MAX_PARAMS + 1)

struct qreading {
	size_t n;
	const char *name[QUERY_MAX_PARAMS];
	const char *value[QUERY_MAX_PARAMS];
};

struct qparams {
	bool bad; /* undecodable or over the caps: allow rules fail, deny rules hit */
	struct qreading r[QUERY_READINGS];
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

/* Decodes one "name=value" pair into reading rd, its bytes at *o; false on
 * a bad escape or too many pairs. A pair takes at most its length + 2
 * bytes (see QUERY_READING_BYTES). */
static bool query_pair(const char *pair, size_t len, bool plus_is_space, struct qreading *rd,
		       char *buf, size_t *o)
{
	const char *eq = memchr(pair, '=', len);
	size_t nlen = eq ? (size_t)(eq - pair) : len;
	size_t vlen = eq ? len - nlen - 1 : 0;
	if (rd->n == QUERY_MAX_PARAMS)
		return false;
	char *name = buf + *o;
	if (!pct_decode(pair, nlen, plus_is_space, name))
		return false;
	*o += strlen(name) + 1;
	char *val = buf + *o;
	if (!pct_decode(eq ? eq + 1 : "", vlen, plus_is_space, val))
		return false;
	*o += strlen(val) + 1;
	rd->name[rd->n] = name;
	rd->value[rd->n++] = val;
	return true;
}

static bool query_read(const char *q, size_t len, const char *seps, bool plus_is_space,
		       struct qreading *rd, char *buf)
{
	size_t o = 0;
	rd->n = 0;
	for (size_t i = 0; i < len;) {
		size_t end = i;
		while (end < len && !strchr(seps, q[end]))
			end++;
		if (end > i && !query_pair(q + i, end - i, plus_is_space, rd, buf, &o))
			return false;
		i = end + 1;
	}
	return true;
}

static void query_parse(const char *q, size_t len, struct qparams *p)
{
	p->bad = len > QUERY_MAX_BYTES;
	for (int r = 0; r < QUERY_READINGS && !p->bad; r++) {
		bool semi = r == QUERY_SEMI_RAW || r == QUERY_SEMI_FORM;
		bool form = r == QUERY_AMP_FORM || r == QUERY_SEMI_FORM;
		p->bad = !query_read(q, len, semi ? "&;" : "&", form, &p->r[r],
				     p->buf + (size_t)r * QUERY_READING_BYTES);
	}
}

static bool globs_match(const struct policy_query *m, const char *v)
{
	for (size_t i = 0; i < m->n_globs; i++)
		if (glob_star_match(m->globs[i], v))
			return true;
	return false;
}

/* name is `want` as PHP and Rack register it: leading spaces dropped, an
 * array suffix (`q[]`, `q[0]`) cut, and ' ', '.' and an unmatched '[' read
 * as '_' (` q`, `q[]` are q there). */
static bool framework_name_is(const char *name, const char *want)
{
	while (*name == ' ')
		name++;
	size_t n = strlen(name), w = strlen(want);
	const char *open = strchr(name, '[');
	if (open && strchr(open, ']'))
		n = (size_t)(open - name);
	if (n != w)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i] == ' ' || name[i] == '.' || name[i] == '[' ? '_' : name[i];
		if (ch != want[i])
			return false;
	}
	return true;
}

/* In one reading: how many parameters are called m->name, as sent or as
 * frameworks register names (so a deny sees ` q=` and `q[]=`, and an allow
 * needs them to match too), and how many of those have a value m matches. */
static void reading_hits(const struct policy_query *m, const struct qreading *rd, size_t *seen,
			 size_t *hits)
{
	*seen = *hits = 0;
	for (size_t j = 0; j < rd->n; j++)
		if (!strcmp(rd->name[j], m->name) || framework_name_is(rd->name[j], m->name)) {
			(*seen)++;
			*hits += globs_match(m, rd->value[j]);
		}
}

/* Deny: the matcher hits when, in some reading, the parameter is present
 * with a value it matches. Allow: in every reading the parameter is present
 * and all of its values match (`a=1&a=2`: both). */
static bool matcher_holds(const struct policy_query *m, const struct qparams *p, bool deny)
{
	for (int r = 0; r < QUERY_READINGS; r++) {
		size_t seen, hits;
		reading_hits(m, &p->r[r], &seen, &hits);
		bool holds = seen > 0 && (deny ? hits > 0 : hits == seen);
		if (holds == deny)
			return deny;
	}
	return !deny;
}

static bool query_match(const struct policy_rule *r, const struct qparams *p, bool deny)
{
	if (r->n_query && p->bad)
		return deny;
	for (size_t i = 0; i < r->n_query; i++)
		if (!matcher_holds(&r->query[i], p, deny))
			return false;
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

void policy_l7_finish(struct policy_decision *out, const struct policy_endpoint *ep, bool violation,
		      enum policy_reason r, const char *m, const char *path)
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
			 const char *canon, const char *qs, size_t qlen, char *rule,
			 size_t rule_cap)
{
	struct qparams q;
	if (!policy_protocol_rest_rules(ep->protocol) ||
	    !policy_endpoint_path_match(ep->path, canon))
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
