/* server_respond.c - a gateway connection's request and answer: the
 * request is parsed strictly (Content-Length bodies of at most GW_BODY_MAX,
 * origin-form targets), handed to api.c, and answered as JSON (Connection:
 * close), a chunked log or watch stream, a supervisor session or an exec
 * park/attach. Never writes to the socket itself: server_conn.c flushes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "execframe.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "parse.h"
#include "server_internal.h"

#define STREAM_READ 65536
#define WATCH_FAILURES_MAX 25 /* ticks: 5 s */

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 504:
		return "Gateway Timeout";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 422:
		return "Unprocessable Content";
	case 431:
		return "Request Header Fields Too Large";
	case 503:
		return "Service Unavailable";
	case 507:
		return "Insufficient Storage";
	default:
		return status < 500 ? "Client Error" : "Server Error";
	}
}

static void write_head(struct conn *c, int status, const char *ctype, size_t len, bool chunked)
{
	http_write_status_line(&c->out, status, reason(status), NULL);
	http_write_header(&c->out, "Content-Type", ctype, NULL);
	if (chunked)
		http_write_header(&c->out, "Transfer-Encoding", "chunked", NULL);
	else
		http_write_content_length(&c->out, len, NULL);
	http_write_header(&c->out, "Connection", "close", NULL);
	http_write_header(&c->out, "Cache-Control", "no-store", NULL);
	http_write_head_end(&c->out, NULL);
}

static void send_json(struct conn *c, int status, json_t *body)
{
	_cleanup_free_ char *text = json_dumps(body, JSON_COMPACT);
	size_t n = text ? strlen(text) : 0;
	write_head(c, status, "application/json", n + 1, false);
	buf_append(&c->out, text ? text : "", n, NULL);
	buf_append(&c->out, "\n", 1, NULL);
	server_conn_set_state(c, GW_WRITING);
	server_conn_flush(c);
}

void server_conn_fail(struct conn *c, int status, const char *code, const char *msg)
{
	_cleanup_json_ json_t *b = json_pack("{s:s, s:s}", "error", code, "message", msg);
	send_json(c, status, b);
}

/* Pumps the log file into chunks; ends when the file is drained and (when
 * following) the sandbox no longer runs. */
static void watch_tick(struct conn *c)
{
	os_error err = { 0 };
	struct buf events;
	bool first = !c->watch_seen;
	buf_init(&events, OUT_CAP / 2);
	if (first && !(c->watch_seen = json_object())) {
		server_conn_close(c);
		return;
	}
	if (watch_poll(c->srv->gw, c->watch_seen, c->resp.stream_sandbox, first, &events, &err) <
	    0) {
		buf_free(&events);
		/* A busy store is retried on the next tick; a lasting failure ends
		 * the watch and the client re-lists, as after any watch ends. */
		if (++c->watch_failures < WATCH_FAILURES_MAX)
			return;
		log_warn("watch ended: %s", err.msg);
		server_conn_close(c);
		return;
	}
	c->watch_failures = 0;
	if (events.len)
		http_write_chunk(&c->out, events.data, events.len, NULL);
	buf_free(&events);
	if (c->watch_end_ms && loop_now_ms() >= c->watch_end_ms) {
		http_write_last_chunk(&c->out, NULL);
		server_conn_set_state(c, GW_WRITING);
	}
	server_conn_flush(c); /* may free c */
}

void server_conn_stream_tick(struct conn *c)
{
	if (c->out.len > OUT_CAP / 2)
		return;
	if (c->resp.watch) {
		watch_tick(c);
		return;
	}
	bool running = c->resp.follow && lifecycle_running(c->srv->gw, c->resp.stream_sandbox);
	_cleanup_free_ char *chunk = malloc(STREAM_READ);
	ssize_t n = 0;
	if (c->resp.stream_pipe) {
		/* A driver's log: its writer ends it (EOF); nothing yet: next tick. */
		n = chunk ? read(c->resp.stream_fd, chunk, STREAM_READ) : -1;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		running = false;
	} else {
		int fd = open(c->resp.stream_path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && chunk) {
			n = pread(fd, chunk, STREAM_READ, (off_t)c->resp.stream_offset);
			close(fd);
		}
	}
	if (n > 0) {
		c->resp.stream_offset += (uint64_t)n;
		http_write_chunk(&c->out, chunk, (size_t)n, NULL);
	} else if (!running) {
		http_write_last_chunk(&c->out, NULL);
		/* The tick repeats until the drain re-arms the timer, so a slow
		 * client can get the last chunk twice (harmless after close). */
		if (c->state == GW_STREAMING)
			server_conn_set_state(c, GW_WRITING);
	}
	server_conn_flush(c); /* may free c */
}

/* A supervisor session: NDJSON chunks pushed by sessions.c until either
 * side closes; no idle timeout (pings keep it busy). */
static void start_session(struct conn *c)
{
	os_error err = { 0 };
	write_head(c, 200, "application/x-ndjson", 0, true);
	server_conn_set_state(c, GW_SESSION);
	loop_timer_disarm(c->timer);
	if (sessions_attach(c->srv->gw, c->resp.stream_sandbox, c, &err) < 0) {
		log_warn("%s", err.msg);
		server_conn_close(c);
		return;
	}
	server_conn_flush(c);
}

static void start_stream(struct conn *c)
{
	if (c->resp.session) {
		start_session(c);
		return;
	}
	write_head(c, 200, c->resp.watch ? "application/x-ndjson" : "text/plain; charset=utf-8", 0,
		   true);
	server_conn_set_state(c, GW_STREAMING);
	if (c->resp.watch_timeout_s)
		c->watch_end_ms = loop_now_ms() + (uint64_t)c->resp.watch_timeout_s * 1000;
	if (loop_timer_set(c->timer, 0, STREAM_TICK_MS, NULL) < 0) {
		server_conn_close(c);
		return;
	}
	server_conn_flush(c);
}

/* An exec client waits (nothing is answered until its relay comes); a relay
 * joins its client or is refused. */
static void start_exec(struct conn *c)
{
	os_error err = { 0 };
	if (c->resp.exec_park) {
		loop_timer_disarm(c->timer); /* exec.c times the wait */
		if (exec_park(c->srv->gw, c->resp.exec_sandbox, c->resp.exec_id, c, &err) < 0) {
			server_conn_fail(c, 503, "unavailable", err.msg);
			return;
		}
		server_conn_set_state(c, GW_PARKED);
		loop_io_modify(c->io, LOOP_IN, NULL); /* to see the client leave */
		return;
	}
	if (exec_attach(c->srv->gw, c->resp.exec_sandbox, c->resp.exec_id, c, &err) < 0)
		server_conn_fail(c, 404, "not_found", err.msg);
}

static const char *bearer_of(const struct http_request *req, char *tok, size_t cap)
{
	const struct http_header *h = http_header_find(&req->headers, "Authorization");
	if (!h || h->value.len < 7 || !str_ieq(h->value.p, 7, "Bearer ", 7) ||
	    h->value.len - 7 >= cap)
		return NULL;
	memcpy(tok, h->value.p + 7, h->value.len - 7);
	tok[h->value.len - 7] = '\0';
	return tok;
}

/* Two Authorization headers are ambiguous (a proxy in front may honour
 * the other one): refused, never first-wins. */
static size_t count_headers(const struct http_request *req, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < req->headers.n; i++)
		n += str_ieq(req->headers.v[i].name.p, req->headers.v[i].name.len, name,
			     strlen(name));
	return n;
}

static void dispatch(struct conn *c, const struct http_request *hr, const char *body,
		     size_t body_len)
{
	char method[16], path[2048], query[2048], tok[256];
	if (count_headers(hr, "Authorization") > 1) {
		server_conn_fail(c, 400, "bad_request",
				 "more than one Authorization header: send exactly one");
		return;
	}
	if (hr->method.len >= sizeof(method) || hr->path.len >= sizeof(path) ||
	    hr->query.len >= sizeof(query)) {
		server_conn_fail(c, 414, "uri_too_long", "request target too long");
		return;
	}
	memcpy(method, hr->method.p, hr->method.len);
	method[hr->method.len] = '\0';
	memcpy(path, hr->path.p, hr->path.len);
	path[hr->path.len] = '\0';
	memcpy(query, hr->query.p, hr->query.len);
	query[hr->query.len] = '\0';
	struct api_request req = {
		.method = method,
		.path = path,
		.query = query,
		.body = body,
		.body_len = body_len,
		.bearer = bearer_of(hr, tok, sizeof(tok)),
		.upgrade_exec = hr->framing.upgrade &&
				str_ieq(hr->framing.upgrade_value.p, hr->framing.upgrade_value.len,
					EXECFRAME_UPGRADE, strlen(EXECFRAME_UPGRADE)),
		.client_cert_asked = c->ssl && c->srv->mtls,
		.client_cert_verified = gw_tls_peer_verified(c->ssl),
	};
	api_handle(c->srv->gw, &req, &c->resp);
	bool long_lived = c->resp.stream || c->resp.exec_park || c->resp.exec_attach;
	if (c->resp.authenticated && server_budget_trust(c, c->resp.session, long_lived) < 0) {
		c->resp.stream = c->resp.exec_park = c->resp.exec_attach = false;
		server_conn_fail(c, 503, "unavailable",
				 "too many open streams and exec connections: the rest is kept "
				 "for supervisor sessions; retry later");
		return;
	}
	if (c->resp.stream) {
		start_stream(c);
		return;
	}
	if (c->resp.exec_park || c->resp.exec_attach) {
		start_exec(c);
		return;
	}
	send_json(c, c->resp.status, c->resp.body);
}

void server_conn_request_bytes(struct conn *c)
{
	struct http_request req;
	size_t head = 0;
	os_error err = { 0 };
	/* Re-parse from the start each time: the head's slices point into c->in,
	 * which may move as the body arrives. */
	http_parser_reset(&c->parser);
	int r = http_parse_request(&c->parser, c->in.data, c->in.len, &req, &head, &err);
	if (r == HTTP_PARSE_NEED_MORE)
		return;
	if (r < 0) {
		server_conn_fail(c, err.code == EMSGSIZE ? 431 : 400, "bad_request", err.msg);
		return;
	}
	server_conn_head_seen(c);
	if (req.form != HTTP_TARGET_ORIGIN) {
		server_conn_fail(c, 400, "bad_request", "request target must be a path");
		return;
	}
	enum http_body_kind kind = http_request_body(&req);
	if (kind == HTTP_BODY_CHUNKED) {
		server_conn_fail(c, 411, "length_required",
				 "send the body with Content-Length, not chunked");
		return;
	}
	uint64_t blen = kind == HTTP_BODY_LENGTH ? req.framing.content_length : 0;
	if (blen > GW_BODY_MAX) {
		server_conn_fail(c, 413, "body_too_large",
				 "request body over 1 MiB: send less (large policies belong in "
				 "several revisions)");
		return;
	}
	if (c->in.len - head < blen)
		return;
	c->consumed = head + (size_t)blen;
	dispatch(c, &req, c->in.data + head, (size_t)blen);
}
