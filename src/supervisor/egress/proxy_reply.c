/* proxy_reply.c - what the agent sees when the proxy says no, and the audit
 * record of every decision. Bodies are JSON; query strings and secrets are
 * never part of them. Every error answer closes the connection. */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

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
		.detail = detail,
		.generation = c->gen_serial + 1,
	};
	audit_write(cfg->audit, &r);
}

/* Queues a complete answer and switches to closing once it is flushed. */
void reply_json(struct conn *c, int status, json_t *body, const char *policy_header)
{
	char *text = json_dumps(body, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(body);
	buf_reset(&c->cout);
	os_error err = { 0 };
	size_t len = text ? strlen(text) : 0;
	int rc = buf_printf(&c->cout, &err,
			    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			    "Content-Length: %zu\r\nConnection: close\r\n",
			    status, status_reason(status), len + 1);
	if (rc == 0 && policy_header)
		rc = http_write_header(&c->cout, "X-OpenShell-Policy", policy_header, &err);
	if (rc == 0)
		rc = buf_printf(&c->cout, &err, "\r\n%s\n", text ? text : "");
	free(text);
	if (rc < 0)
		log_warn("proxy: building a %d answer: %s", status, err.msg);
	conn_set_state(c, ST_CLOSING);
}

void reply_error(struct conn *c, int status, const char *error, const char *detail,
		 const char *reason)
{
	json_t *o = json_pack("{s:s, s:s}", "error", error, "detail", detail);
	if (reason)
		json_object_set_new(o, "reason", json_string(reason));
	audit_decision(c, c->mode == MODE_MITM || c->mode == MODE_HTTP ? "http" : "connect", "deny",
		       reason ? reason : error, NULL, NULL, detail);
	reply_json(c, status, o, NULL);
}

void reply_policy_denied(struct conn *c, const struct policy_decision *d, const char *method,
			 const char *path)
{
	const char *reason = policy_reason_name(d->reason);
	if (!method) { /* L4: the CONNECT itself */
		char detail[400];
		snprintf(detail, sizeof detail, "CONNECT %s:%u not permitted by policy", c->host,
			 c->port);
		json_t *o = json_pack("{s:s, s:s, s:s}", "error", "policy_denied", "detail", detail,
				      "reason", reason);
		audit_decision(c, "connect", "deny", reason, NULL, NULL, d->detail);
		reply_json(c, 403, o, NULL);
		return;
	}
	const char *policy = d->policy ? d->policy : c->policy_name;
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s}", "error",
			      "policy_denied", "policy", policy, "rule", d->rule, "method", method,
			      "path", path ? path : "", "host", c->host, "port", (int)c->port,
			      "binary", caller_binary(c) ? caller_binary(c) : "", "reason", reason);
	audit_decision(c, "http", "deny", reason, method, path, d->detail);
	reply_json(c, 403, o, policy[0] ? policy : NULL);
}
