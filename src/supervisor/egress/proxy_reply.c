/* proxy_reply.c - what the agent sees when the proxy says no, and the audit
 * record of every decision. Bodies are JSON; query strings and secrets are
 * never part of them. Every error answer closes the connection. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "denials.h"
#include "json.h"
#include "log.h"
#include "proxy_internal.h"

static const char *status_reason(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 417:
		return "Expectation Failed";
	case 431:
		return "Request Header Fields Too Large";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	default:
		return "Error";
	}
}

static const char *caller_binary(const struct conn *c)
{
	return c->n_chain ? c->chain[0] : NULL;
}

void audit_decision(struct conn *c, const char *event, const char *decision, const char *reason,
		    const char *method, const char *path, const char *detail)
{
	const struct proxy_config *cfg = proxy_cfg(c->proxy);
	if (!cfg->audit)
		return;
	struct audit_record r = {
		.event = event,
		.decision = decision,
		.reason = reason,
		.policy = c->policy_name[0] ? c->policy_name : NULL,
		.host = c->host[0] ? c->host : NULL,
		.dst = c->dst[0] ? c->dst : NULL,
		.port = c->port,
		.method = method,
		.path = path,
		.binary = caller_binary(c),
		.pid = c->identified ? c->id_pid : 0,
		.uid = c->identified ? (long)c->id_uid : -1,
		/* A direct connection says so: the agent ignored its proxy. */
		.detail =
			detail || !c->transparent ? detail : "transparent path (direct connection)",
		.generation = c->gen_serial + 1,
	};
	audit_write(cfg->audit, &r);
}

/* RFC 9209 error type for one of our answers: what a client that reads
 * Proxy-Status can act on without knowing our reason codes. */
static const char *proxy_status_type(int status, const char *error, const char *reason)
{
	if (strcmp(error, "ssrf_denied") == 0)
		return "destination_ip_prohibited";
	if (strcmp(error, "dns_error") == 0)
		return "dns_error";
	if (strcmp(error, "upstream_tls") == 0)
		return reason && strcmp(reason, "upstream_certificate") == 0
			       ? "tls_certificate_error"
			       : "tls_protocol_error";
	if (strcmp(error, "upstream_unreachable") == 0)
		return "connection_refused";
	if (strcmp(error, "bad_gateway") == 0)
		return "http_response_incomplete";
	if (status == 503)
		return "connection_limit_reached";
	if (status == 403)
		return "http_request_denied";
	if (status == 408)
		return "http_request_error";
	if (status >= 500)
		return "proxy_internal_error";
	return "http_request_error";
}

/* Appends s keeping only token characters: the codes come from closed sets,
 * this only guarantees a reason phrase can never split the status line. */
static void append_token(char *out, size_t cap, const char *s)
{
	size_t n = strlen(out);
	for (; s && *s && n + 1 < cap; s++) {
		char ch = *s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.')
			out[n++] = ch;
	}
	out[n] = '\0';
}

/* "Forbidden by policy: no_matching_rule": clients that show only the status
 * line of a refused CONNECT (Python's "Tunnel connection failed: ...") still
 * tell the agent why. */
static void reason_phrase(char *out, size_t cap, int status, const char *error, const char *reason)
{
	bool policy = strcmp(error, "policy_denied") == 0;
	snprintf(out, cap, "%s: ", policy ? "Forbidden by policy" : status_reason(status));
	append_token(out, cap, policy && reason ? reason : error);
	if (!policy && reason && strcmp(reason, error) != 0) {
		snprintf(out + strlen(out), cap - strlen(out), " (");
		append_token(out, cap, reason);
		snprintf(out + strlen(out), cap - strlen(out), ")");
	}
}

/* Queues a complete answer (text[0..len) of content_type, and a final
 * newline) and switches to closing once it is flushed. error NULL: a local
 * answer (policy.local), no Proxy-Status error. */
static void send_answer(struct conn *c, int status, const char *content_type, const char *text,
			size_t len, const char *policy_header, const char *error,
			const char *reason)
{
	buf_reset(&c->cout);
	os_error err = { 0 };
	char phrase[160];
	if (error)
		reason_phrase(phrase, sizeof phrase, status, error, reason);
	else
		snprintf(phrase, sizeof phrase, "%s", status == 200 ? "OK" : status_reason(status));
	int rc = buf_printf(
		&c->cout, &err,
		"HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
		"Content-Length: %zu\r\nConnection: close\r\nCache-Control: no-store\r\n",
		status, phrase, content_type, len + 1);
	if (rc == 0 && error) {
		char details[96] = "";
		append_token(details, sizeof details, reason ? reason : error);
		rc = buf_printf(&c->cout, &err,
				"Proxy-Status: openshell; error=%s; details=\"%s\"\r\n",
				proxy_status_type(status, error, reason), details);
	}
	if (rc == 0 && policy_header)
		rc = http_write_header(&c->cout, "X-OpenShell-Policy", policy_header, &err);
	if (rc == 0)
		rc = buf_printf(&c->cout, &err, "\r\n%.*s\n", (int)len, text ? text : "");
	if (rc < 0)
		log_warn("proxy: building a %d answer: %s", status, err.msg);
	if (!transparent_defer_answer(c))
		conn_set_state(c, ST_CLOSING);
}

static void send_json(struct conn *c, int status, json_t *body, const char *policy_header,
		      const char *error, const char *reason)
{
	char *text = json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(body);
	send_answer(c, status, "application/json", text, text ? strlen(text) : 0, policy_header,
		    error, reason);
	free(text);
}

/* Kept for GET http://policy.local/v1/denials (no detail text: see denials.h). */
static void note_denial(struct conn *c, const char *error, const char *reason, const char *method,
			const char *path)
{
	struct denial r = {
		.error = error,
		.reason = reason,
		.policy = c->policy_name[0] ? c->policy_name : NULL,
		.host = c->host[0] ? c->host : NULL,
		.port = c->port,
		.method = method,
		.path = path,
		.binary = caller_binary(c),
	};
	denials_record(proxy_denials(c->proxy), &r);
}

void reply_local_json(struct conn *c, int status, json_t *body)
{
	send_json(c, status, body, NULL, NULL, NULL);
}

/* A protocol-shaped refusal (JSON-RPC error objects): the caller wrote the
 * audit record; the agent still sees why and policy.local lists it. */
void reply_json(struct conn *c, int status, json_t *body, const char *policy_header)
{
	const char *error = status == 403 ? "policy_denied" : "bad_request";
	note_denial(c, error, NULL, NULL, NULL);
	send_json(c, status, body, policy_header, error, NULL);
}

void reply_error(struct conn *c, int status, const char *error, const char *detail,
		 const char *reason)
{
	json_t *o = json_pack("{s:s, s:s}", "error", error, "detail", detail);
	if (reason)
		json_object_set_new(o, "reason", json_string(reason));
	audit_decision(c, c->mode == MODE_MITM || c->mode == MODE_HTTP ? "http" : "connect", "deny",
		       reason ? reason : error, NULL, NULL, detail);
	note_denial(c, error, reason, NULL, NULL);
	send_json(c, status, o, NULL, error, reason);
}

/* Where an agent reads more (upstream's `next_steps` shape). */
static void add_next_steps(json_t *o)
{
	json_object_set_new(o, "next_steps",
			    json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "action",
				      "inspect_policy", "method", "GET", "url",
				      "http://" DENIALS_HOST "/v1/policy/current", "action",
				      "inspect_recent_denials", "method", "GET", "url",
				      "http://" DENIALS_HOST "/v1/denials?last=5"));
}

/* git's first request to a smart-HTTP repository (clone, fetch, push):
 * GET REPO/info/refs. git shows a refusal's body there, line by line as
 * "remote: ...", when it is text/plain (remote-curl.c show_http_message),
 * and nothing of a JSON one; its later requests (the POSTs) show no body
 * at all, whatever its type. */
static bool is_git_discovery(const char *method, const char *path)
{
	static const char suffix[] = "/info/refs";
	size_t n = path ? strlen(path) : 0;
	return strcmp(method, "GET") == 0 && n >= sizeof suffix - 1 &&
	       strcmp(path + n - (sizeof suffix - 1), suffix) == 0;
}

/* The same refusal in the words git prints: the reason first, then where
 * the agent reads more. */
static void send_git_text(struct conn *c, const char *policy, const char *rule, const char *method,
			  const char *path, const char *reason)
{
	char text[1024];
	int n = snprintf(text, sizeof text,
			 "Forbidden by policy: %s (policy %s, rule %s)\n"
			 "%s %.400s on %.253s:%u was refused by the sandbox's network policy.\n"
			 "Recent denials: http://" DENIALS_HOST "/v1/denials?last=5\n"
			 "The policy in force: http://" DENIALS_HOST "/v1/policy/current",
			 reason, policy[0] ? policy : "-", rule[0] ? rule : "-", method, path,
			 c->host, c->port);
	size_t len = n < 0 ? 0 : (size_t)n >= sizeof text ? sizeof text - 1 : (size_t)n;
	send_answer(c, 403, "text/plain; charset=utf-8", text, len, policy[0] ? policy : NULL,
		    "policy_denied", reason);
}

void reply_policy_denied(struct conn *c, const struct policy_decision *d, const char *method,
			 const char *path)
{
	const char *reason = policy_reason_name(d->reason);
	if (!method) { /* L4: the CONNECT itself, or a plain-HTTP request's host:port */
		char detail[400];
		bool plain = c->mode == MODE_HTTP;
		snprintf(detail, sizeof detail, "%s %s:%u not permitted by policy",
			 plain ? "plain HTTP to" : "CONNECT", c->host, c->port);
		json_t *o = json_pack("{s:s, s:s, s:s}", "error", "policy_denied", "detail", detail,
				      "reason", reason);
		add_next_steps(o);
		audit_decision(c, "connect", "deny", reason, NULL, NULL, d->detail);
		note_denial(c, "policy_denied", reason, NULL, NULL);
		send_json(c, 403, o, NULL, "policy_denied", reason);
		return;
	}
	const char *policy = d->policy ? d->policy : c->policy_name;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s}", "error",
			      "policy_denied", "policy", policy, "rule", d->rule, "method", method,
			      "path", path ? path : "", "host", c->host, "port", (int)c->port,
			      "binary", caller_binary(c) ? caller_binary(c) : "", "reason", reason);
	add_next_steps(o);
	audit_decision(c, "http", "deny", reason, method, path, d->detail);
	note_denial(c, "policy_denied", reason, method, path);
	if (is_git_discovery(method, path)) {
		json_decref(o);
		send_git_text(c, policy, d->rule, method, path, reason);
		return;
	}
	send_json(c, 403, o, policy[0] ? policy : NULL, "policy_denied", reason);
}
