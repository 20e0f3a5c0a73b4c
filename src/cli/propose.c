/* propose.c - see propose.h. */
#include "propose.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "json.h"
#include "parse.h"

static const char *get_s(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v && *v ? v : NULL;
}

void propose_add(json_t *denials, const json_t *rec)
{
	const char *decision = get_s(rec, "decision");
	if (!decision || strcmp(decision, "deny") != 0)
		return;
	static const char *const keys[] = {
		"reason", "policy", "host", "binary", "method", "path"
	};
	char key[4096] = "";
	size_t n = 0;
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		n += (size_t)snprintf(key + n, n < sizeof key ? sizeof key - n : 0, "%s\n",
				      get_s(rec, keys[i]) ? get_s(rec, keys[i]) : "");
	if (n >= sizeof key)
		return; /* no real record has fields this long */
	json_int_t port = json_integer_value(json_object_get(rec, "dport"));
	snprintf(key + n, sizeof key - n, "%lld", (long long)port);
	json_t *d = json_object_get(denials, key);
	if (!d) {
		d = json_object();
		for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
			if (get_s(rec, keys[i]))
				json_object_set_new(d, keys[i], json_string(get_s(rec, keys[i])));
		json_object_set_new(d, "port", json_integer(port));
		json_object_set_new(d, "count", json_integer(0));
		json_object_set_new(denials, key, d);
	}
	json_object_set_new(d, "count",
			    json_integer(json_integer_value(json_object_get(d, "count")) + 1));
}

static void bump(json_t *entry, const json_t *d)
{
	json_object_set_new(entry, "count",
			    json_integer(json_integer_value(json_object_get(entry, "count")) +
					 json_integer_value(json_object_get(d, "count"))));
	const char *bin = get_s(d, "binary");
	json_t *bins = json_object_get(entry, "binaries");
	size_t i;
	json_t *b;
	json_array_foreach (bins, i, b)
		if (bin && !strcmp(json_string_value(b), bin))
			return;
	if (bin)
		json_array_append_new(bins, json_string(bin));
}

/* The plan entry under key in index (a JSON object), made from base once. */
static json_t *entry(json_t *index, json_t *list, const char *key, json_t *base)
{
	json_t *e = json_object_get(index, key);
	if (e) {
		json_decref(base);
		return e;
	}
	json_object_set_new(base, "count", json_integer(0));
	json_object_set_new(base, "binaries", json_array());
	json_object_set(index, key, base);
	json_array_append_new(list, base);
	return base;
}

static bool l4_reason(const char *r)
{
	return !strcmp(r, "no_matching_endpoint") || !strcmp(r, "port_not_allowed") ||
	       !strcmp(r, "binary_not_allowed");
}

static const char *why_skipped(const char *reason, const json_t *d)
{
	if (!strcmp(reason, "deny_rule"))
		return "a deny rule forbids it: lifting one is a person's decision";
	if (!strncmp(reason, "ssrf_", 5) || !strcmp(reason, "metadata_host"))
		return "the address is internal or always blocked: allowed_ips is an "
		       "operator's choice";
	if (!strcmp(reason, "no_matching_rule") && get_s(d, "path") &&
	    strchr(get_s(d, "path"), '*'))
		return "its path holds '*', which a rule would read as a glob";
	if (l4_reason(reason) && !get_s(d, "binary"))
		return "the calling binary is not known";
	return "no policy rule would allow it";
}

bool propose_still_denied(const struct policy_gen *g, const json_t *d)
{
	const char *host = get_s(d, "host"), *bin = get_s(d, "binary");
	const char *method = get_s(d, "method"), *path = get_s(d, "path");
	json_int_t port = json_integer_value(json_object_get(d, "port"));
	if (!host || !bin || port < 1 || port > 65535)
		return true;
	struct policy_decision l4, l7;
	const char *chain[] = { bin };
	policy_decide_connect(g, host, (uint16_t)port, chain, 1, &l4);
	if (l4.verdict != POLICY_ALLOW || !method || !path)
		return l4.verdict != POLICY_ALLOW;
	policy_decide_routed_request(g, l4.endpoint, host, (uint16_t)port, chain, 1, method, path,
				     NULL, 0, &l7);
	return l7.verdict == POLICY_DENY;
}

static void plan_one(json_t *plan, json_t *index, json_t *d)
{
	const char *reason = get_s(d, "reason") ? get_s(d, "reason") : "-";
	const char *host = get_s(d, "host"), *method = get_s(d, "method"), *path = get_s(d, "path");
	const char *policy = get_s(d, "policy");
	json_int_t port = json_integer_value(json_object_get(d, "port"));
	char key[4200];
	if (!strcmp(reason, "no_matching_rule") && policy && host && port && method && path &&
	    !strchr(path, '*')) {
		json_object_set_new(d, "planned", json_true());
		snprintf(key, sizeof key, "r\n%s\n%s\n%lld\n%s\n%s", policy, host, (long long)port,
			 method, path);
		bump(entry(index, json_object_get(plan, "rules"), key,
			   json_pack("{s:s, s:s, s:I, s:s, s:s, s:s}", "policy", policy, "host",
				     host, "port", port, "method", method, "path", path, "reason",
				     reason)),
		     d);
	} else if (l4_reason(reason) && host && port && get_s(d, "binary")) {
		char name[300];
		int n = snprintf(name, sizeof name, "proposed_%s_%lld", host, (long long)port);
		for (int i = 0; i < n && i < (int)sizeof name - 1; i++)
			if (!isalnum((unsigned char)name[i]))
				name[i] = '_';
		json_object_set_new(d, "planned", json_true());
		snprintf(key, sizeof key, "p\n%s\n%lld", host, (long long)port);
		bump(entry(index, json_object_get(plan, "policies"), key,
			   json_pack("{s:s, s:s, s:I, s:s}", "name", name, "host", host, "port",
				     port, "reason", reason)),
		     d);
	} else {
		char what[600];
		snprintf(what, sizeof what, "%s%s%s:%lld%s by %s", method ? method : "",
			 method ? " " : "", host ? host : "-", (long long)port, path ? path : "",
			 get_s(d, "binary") ? get_s(d, "binary") : "an unknown binary");
		snprintf(key, sizeof key, "s\n%s\n%s", reason, what);
		bump(entry(index, json_object_get(plan, "skipped"), key,
			   json_pack("{s:s, s:s, s:s}", "reason", reason, "why",
				     why_skipped(reason, d), "what", what)),
		     d);
	}
}

json_t *propose_plan(json_t *denials, const struct policy_gen *g)
{
	json_t *plan =
		json_pack("{s:[], s:[], s:[], s:i}", "rules", "policies", "skipped", "allowed", 0);
	_cleanup_json_ json_t *idx = json_object();
	const char *k;
	json_t *d;
	if (!plan || !idx)
		return json_decref(plan), NULL;
	json_object_foreach (denials, k, d) {
		if (g && !propose_still_denied(g, d)) {
			json_int_t n = json_integer_value(json_object_get(plan, "allowed"));
			json_object_set_new(
				plan, "allowed",
				json_integer(n + json_integer_value(json_object_get(d, "count"))));
			continue;
		}
		plan_one(plan, idx, d);
	}
	return plan;
}

static bool port_matches(const json_t *ep, json_int_t port)
{
	if (json_integer_value(json_object_get(ep, "port")) == port)
		return true;
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(ep, "ports"), i, p)
		if (json_integer_value(p) == port)
			return true;
	return false;
}

/* An access preset as the rules it stands for (access and rules exclude
 * each other), per protocol as the policy engine reads it: read-only GET
 * (HEAD with it) and OPTIONS, read-write adds POST, PUT, PATCH; on a
 * websocket endpoint read-only is GET, read-write adds WEBSOCKET_TEXT; full
 * any method. */
static void access_to_rules(json_t *ep)
{
	static const char *const ro[] = { "GET", "OPTIONS", NULL };
	static const char *const rw[] = { "GET", "OPTIONS", "POST", "PUT", "PATCH", NULL };
	static const char *const ws_ro[] = { "GET", NULL };
	static const char *const ws_rw[] = { "GET", POLICY_WEBSOCKET_TEXT_METHOD, NULL };
	static const char *const full[] = { "*", NULL };
	const char *a = get_s(ep, "access"), *proto = get_s(ep, "protocol");
	if (!a)
		return;
	bool ws = proto && !strcmp(proto, "websocket");
	const char *const *methods = !strcmp(a, "read-only")	? (ws ? ws_ro : ro)
				     : !strcmp(a, "read-write") ? (ws ? ws_rw : rw)
								: full;
	json_t *rules = json_array();
	for (size_t i = 0; methods[i]; i++)
		json_array_append_new(rules, json_pack("{s:{s:s, s:s}}", "allow", "method",
						       methods[i], "path", "/**"));
	json_object_del(ep, "access");
	json_object_set_new(ep, "rules", rules);
}

static int add_rule(json_t *networks, const json_t *r, os_error *err)
{
	const char *policy = get_s(r, "policy"), *host = get_s(r, "host");
	json_int_t port = json_integer_value(json_object_get(r, "port"));
	const char *path = get_s(r, "path");
	size_t i, best_rank = 0;
	json_t *ep, *best = NULL;
	/* The endpoint that judged it: of those on host:port, the most specific
	 * whose `path` matches (requests are routed so, policy_route.c). */
	json_array_foreach (json_object_get(json_object_get(networks, policy), "endpoints"), i,
			    ep) {
		const char *h = get_s(ep, "host"), *p = get_s(ep, "path");
		if (!h || strcasecmp(h, host) != 0 || !port_matches(ep, port) ||
		    !policy_endpoint_path_match(p, path ? path : ""))
			continue;
		size_t rank = policy_path_specificity(p);
		if (!best || rank > best_rank) {
			best = ep;
			best_rank = rank;
		}
	}
	if ((ep = best)) {
		access_to_rules(ep);
		json_t *rules = json_object_get(ep, "rules");
		if (!rules)
			json_object_set_new(ep, "rules", rules = json_array());
		json_array_append_new(rules,
				      json_pack("{s:{s:s, s:s}}", "allow", "method",
						get_s(r, "method"), "path", get_s(r, "path")));
		return 0;
	}
	return os_error_set(err, ENOENT,
			    "policy %s has no endpoint %s:%lld any more (the policy in force "
			    "changed since the denials): run propose again",
			    policy, host, (long long)port);
}

int propose_apply(json_t *policy, const json_t *plan, os_error *err)
{
	json_t *networks = json_object_get(policy, "network_policies");
	if (!json_is_object(networks))
		json_object_set_new(policy, "network_policies", networks = json_object());
	size_t i;
	json_t *x;
	json_array_foreach (json_object_get(plan, "rules"), i, x)
		if (add_rule(networks, x, err) < 0)
			return -1;
	json_array_foreach (json_object_get(plan, "policies"), i, x) {
		char name[320];
		snprintf(name, sizeof name, "%s", get_s(x, "name"));
		for (int n = 2; json_object_get(networks, name); n++)
			snprintf(name, sizeof name, "%s_%d", get_s(x, "name"), n);
		json_t *bins = json_array();
		size_t j;
		json_t *b;
		json_array_foreach (json_object_get(x, "binaries"), j, b)
			json_array_append_new(bins, json_pack("{s:O}", "path", b));
		json_object_set_new(networks, name,
				    json_pack("{s:[{s:s, s:O}], s:o}", "endpoints", "host",
					      get_s(x, "host"), "port", json_object_get(x, "port"),
					      "binaries", bins));
	}
	return 0;
}

json_t *propose_yaml_json(const struct ynode *n)
{
	if (n->kind == YNODE_SEQUENCE) {
		json_t *a = json_array();
		for (size_t i = 0; a && i < n->seq.n; i++)
			json_array_append_new(a, propose_yaml_json(n->seq.items[i]));
		return a;
	}
	if (n->kind == YNODE_MAPPING) {
		json_t *o = json_object();
		for (size_t i = 0; o && i < n->map.n; i++)
			json_object_set_new(o, n->map.pairs[i].key->scalar.value,
					    propose_yaml_json(n->map.pairs[i].value));
		return o;
	}
	const char *v = n->scalar.value;
	int64_t num;
	if (n->scalar.style == YSCALAR_QUOTED)
		return json_string(v);
	if (ynode_is_null(n))
		return json_null();
	if (!strcmp(v, "true") || !strcmp(v, "false"))
		return json_boolean(!strcmp(v, "true"));
	if (parse_i64(v, n->scalar.len, INT64_MIN, INT64_MAX, &num, NULL) == 0)
		return json_integer(num);
	return json_string(v);
}
