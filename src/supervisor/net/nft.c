/* nft.c - build the fence as libnftables JSON and commit it atomically
 * inside the sandbox namespace. Values enter the document as JSON strings
 * and numbers, so nothing a caller passes can change the rule structure. */
#include "nft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nftables/libnftables.h>
#include <string.h>

#include "cleanup.h"
#include "json.h"
#include "netns.h"

static json_t *cmd_add(const char *kind, json_t *obj)
{
	return json_pack("{s:{s:o}}", "add", kind, obj);
}

static json_t *chain(const char *name, const char *hook)
{
	return cmd_add("chain", json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "family", "inet",
					  "table", NFT_FENCE_TABLE, "name", name, "type", "filter",
					  "hook", hook, "prio", 0, "policy", "drop"));
}

/* A rule is a chain name plus a list of expressions (stolen). */
static json_t *rule(const char *chain_name, json_t *exprs)
{
	return cmd_add("rule", json_pack("{s:s, s:s, s:s, s:o}", "family", "inet", "table",
					 NFT_FENCE_TABLE, "chain", chain_name, "expr", exprs));
}

static json_t *match_meta(const char *key, json_t *right)
{
	return json_pack("{s:{s:s, s:{s:{s:s}}, s:o}}", "match", "op", "==", "left", "meta", "key",
			 key, "right", right);
}

static json_t *match_ct_reply(void)
{
	return json_pack("{s:{s:s, s:{s:{s:s}}, s:[s,s]}}", "match", "op", "in", "left", "ct",
			 "key", "state", "right", "established", "related");
}

static json_t *match_payload(const char *proto, const char *field, json_t *right)
{
	return json_pack("{s:{s:s, s:{s:{s:s, s:s}}, s:o}}", "match", "op", "==", "left", "payload",
			 "protocol", proto, "field", field, "right", right);
}

static json_t *verdict(const char *v)
{
	return json_pack("{s:n}", v);
}

static json_t *output_rules(const struct nft_fence_spec *spec, const char *proxy)
{
	json_t *r = json_array();
	json_array_append_new(
		r, rule("output", json_pack("[o,o]", match_meta("oifname", json_string("lo")),
					    verdict("accept"))));
	json_array_append_new(
		r, rule("output", json_pack("[o,o]", match_ct_reply(), verdict("accept"))));
	json_array_append_new(
		r, rule("output",
			json_pack("[o,o,o]", match_payload("ip", "daddr", json_string(proxy)),
				  match_payload("tcp", "dport", json_integer(spec->proxy_port)),
				  verdict("accept"))));
	json_array_append_new(
		r, rule("output",
			json_pack("[{s:{s:i, s:s, s:i}}, {s:{s:s, s:i}}]", "limit", "rate",
				  (json_int_t)spec->log_rate_per_sec, "per", "second", "burst",
				  (json_int_t)spec->log_burst, "log", "prefix", spec->log_prefix,
				  "group", (json_int_t)spec->nflog_group)));
	json_array_append_new(r, rule("output", json_pack("[o,{s:{s:s}}]",
							  match_meta("l4proto", json_string("tcp")),
							  "reject", "type", "tcp reset")));
	json_array_append_new(
		r, rule("output",
			json_pack("[o,{s:{s:s, s:s}}]", match_meta("l4proto", json_string("udp")),
				  "reject", "type", "icmpx", "expr", "port-unreachable")));
	json_array_append_new(r, rule("output", json_pack("[o]", verdict("drop"))));
	return r;
}

static json_t *input_rules(void)
{
	json_t *r = json_array();
	json_array_append_new(
		r, rule("input", json_pack("[o,o]", match_meta("iifname", json_string("lo")),
					   verdict("accept"))));
	json_array_append_new(
		r, rule("input", json_pack("[o,o]", match_ct_reply(), verdict("accept"))));
	json_array_append_new(r, rule("input", json_pack("[o]", verdict("drop"))));
	return r;
}

json_t *nft_fence_ruleset(const struct nft_fence_spec *spec, os_error *err)
{
	if (!spec->log_prefix || strlen(spec->log_prefix) > NFT_LOG_PREFIX_MAX)
		return os_error_set(err, EINVAL, "nft fence: log prefix missing or over %d bytes",
				    NFT_LOG_PREFIX_MAX),
		       NULL;
	if (spec->proxy_port == 0 || spec->log_rate_per_sec == 0)
		return os_error_set(err, EINVAL, "nft fence: proxy port and log rate must be > 0"),
		       NULL;
	char proxy[INET_ADDRSTRLEN];
	if (!inet_ntop(AF_INET, &spec->proxy_addr, proxy, sizeof(proxy)))
		return os_error_errno(err, "nft fence: proxy address"), NULL;
	_cleanup_json_ json_t *cmds = json_pack(
		"[o,o,o,o]",
		cmd_add("table",
			json_pack("{s:s, s:s}", "family", "inet", "name", NFT_FENCE_TABLE)),
		chain("output", "output"), chain("input", "input"), chain("forward", "forward"));
	_cleanup_json_ json_t *out = output_rules(spec, proxy);
	_cleanup_json_ json_t *in = input_rules();
	if (!cmds || !out || !in || json_array_size(out) != 7 || json_array_size(in) != 3 ||
	    json_array_extend(cmds, out) < 0 || json_array_extend(cmds, in) < 0)
		return os_error_set(err, ENOMEM, "nft fence: building the ruleset failed"), NULL;
	return json_pack("{s:O}", "nftables", cmds);
}

static json_t *match_meta_ne(const char *key, const char *value)
{
	return json_pack("{s:{s:s, s:{s:{s:s}}, s:s}}", "match", "op", "!=", "left", "meta", "key",
			 key, "right", value);
}

static json_t *redirect_to(uint16_t port)
{
	return json_pack("{s:{s:i}}", "redirect", "port", (json_int_t)port);
}

/* proto to port 53, whatever the server, goes to the stub's listener `to`. */
static json_t *redirect_dns(const char *proto, uint16_t to)
{
	return rule("redirect", json_pack("[o,o]", match_payload(proto, "dport", json_integer(53)),
					  redirect_to(to)));
}

json_t *nft_redirect_ruleset(const struct nft_redirect_spec *spec, os_error *err)
{
	if (spec->n_tcp_ports > NFT_REDIRECT_PORTS_MAX || (spec->n_tcp_ports && !spec->tcp_to))
		return os_error_set(err, EINVAL, "nft redirect: bad port list"), NULL;
	json_t *ports = json_array();
	for (size_t i = 0; i < spec->n_tcp_ports; i++) {
		if (spec->tcp_ports[i] == 0) {
			json_decref(ports);
			return os_error_set(err, EINVAL, "nft redirect: port 0"), NULL;
		}
		json_array_append_new(ports, json_integer(spec->tcp_ports[i]));
	}
	/* After the filter's table name, in its own chain: a nat hook runs
	 * before the filter (priority -100), which then sees the new address. */
	_cleanup_json_ json_t *cmds = json_pack(
		"[o]", cmd_add("chain", json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "family",
						  "inet", "table", NFT_FENCE_TABLE, "name",
						  "redirect", "type", "nat", "hook", "output",
						  "prio", -100, "policy", "accept")));
	if (!cmds) {
		json_decref(ports);
		return os_error_set(err, ENOMEM, "nft redirect: out of memory"), NULL;
	}
	/* The filter sees the new address but still the old output device
	 * (the hook's state), so lo's accept does not cover the redirected
	 * packets: the listeners are accepted by address and port. */
	const struct {
		const char *proto;
		uint16_t to;
	} l4[] = { { "tcp", spec->tcp_to }, { "udp", spec->dns_to }, { "tcp", spec->dns_tcp_to } };
	for (size_t i = 0; i < sizeof l4 / sizeof l4[0]; i++) {
		uint16_t to = l4[i].to;
		if (to)
			json_array_append_new(
				cmds,
				json_pack(
					"{s:{s:o}}", "insert", "rule",
					json_pack("{s:s, s:s, s:s, s:o}", "family", "inet", "table",
						  NFT_FENCE_TABLE, "chain", "output", "expr",
						  json_pack("[o,o,o]",
							    match_payload("ip", "daddr",
									  json_string("127.0.0.1")),
							    match_payload(l4[i].proto, "dport",
									  json_integer(to)),
							    verdict("accept")))));
	}
	char keep[INET_ADDRSTRLEN];
	if (!inet_ntop(AF_INET, &spec->keep_addr, keep, sizeof keep)) {
		json_decref(ports);
		return os_error_errno(err, "nft redirect: address"), NULL;
	}
	json_t *not_keep =
		json_pack("{s:{s:s, s:{s:{s:s, s:s}}, s:s}}", "match", "op", "!=", "left",
			  "payload", "protocol", "ip", "field", "daddr", "right", keep);
	/* DNS over TCP first, to whatever server (as over UDP): port 53 is the
	 * stub's even if the operator lists it among the TCP ports. */
	if (spec->dns_tcp_to)
		json_array_append_new(cmds, redirect_dns("tcp", spec->dns_tcp_to));
	if (spec->n_tcp_ports)
		json_array_append_new(
			cmds, rule("redirect",
				   json_pack("[o,o,o,o]", match_meta_ne("oifname", "lo"), not_keep,
					     match_payload("tcp", "dport",
							   json_pack("{s:o}", "set", ports)),
					     redirect_to(spec->tcp_to))));
	else {
		json_decref(ports);
		json_decref(not_keep);
	}
	if (spec->dns_to)
		json_array_append_new(cmds, redirect_dns("udp", spec->dns_to));
	return json_pack("{s:O}", "nftables", cmds);
}

/* Runs one nft command document inside ns_fd; *output gets the JSON reply. */
static int nft_run(int ns_fd, const char *doc, char **output, const char *what, os_error *err)
{
	int saved = -1;
	if (netns_enter(ns_fd, &saved, err) < 0)
		return os_error_prefix(err, "nftables %s", what);
	int rc = -1;
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx) {
		os_error_set(err, ENOMEM, "nftables %s: nft_ctx_new failed", what);
		goto out;
	}
	/* The JSON output flag also makes libnftables parse its input as JSON. */
	nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	if (nft_run_cmd_from_buffer(ctx, doc) != 0) {
		const char *msg = nft_ctx_get_error_buffer(ctx);
		os_error_set(err, EPROTO, "nftables %s rejected: %s", what,
			     msg && *msg ? msg : "(no message)");
		goto out;
	}
	if (output) {
		*output = strdup(nft_ctx_get_output_buffer(ctx));
		if (!*output) {
			os_error_set(err, ENOMEM, "nftables %s: out of memory", what);
			goto out;
		}
	}
	rc = 0;
out:
	if (ctx)
		nft_ctx_free(ctx);
	netns_leave(saved);
	return rc;
}

int nft_apply(int ns_fd, const json_t *ruleset, os_error *err)
{
	_cleanup_free_ char *doc = json_to_string(ruleset);
	if (!doc)
		return os_error_set(err, ENOMEM, "nftables: serialising the ruleset");
	return nft_run(ns_fd, doc, NULL, "transaction", err);
}
