/* proxy_relay.c - moving bytes once a decision is made: opaque tunnels with
 * splice() (no copy through user space) and HTTP exchanges whose framing is
 * checked both ways, so one response can never be mistaken for two. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "json_override.h"
#include "log.h"
#include "parse.h"
#include "proxy_internal.h"
#include "secret_echo.h"

#define SPLICE_CHUNK PROXY_PIPE_BULK

int tunnel_start(struct conn *c)
{
	for (int d = 0; d < 2; d++)
		if (pipe2(c->pipes[d], O_CLOEXEC | O_NONBLOCK) < 0)
			return -1;
	conn_set_state(c, ST_TUNNEL);
	return 0;
}

/* Bulk tunnels get a 1 MiB pipe once they move a full default pipe's worth:
 * fewer wake-ups per byte, while idle tunnels keep the small default (pipe
 * memory counts against a per-user quota, and what a pipe holds against
 * the sandbox's budget). Failure just keeps 64 KiB. */
static void grow_pipe(struct conn *c, int d)
{
	if (c->pipe_grown[d])
		return;
	c->pipe_grown[d] = true;
	fcntl(c->pipes[d][1], F_SETPIPE_SZ, PROXY_PIPE_BULK);
}

/* Fills the pipe from src; returns true if bytes moved. */
static bool splice_in(struct conn *c, int d, int src, int dst)
{
	if (c->piped[d] != 0 || c->half_closed[d])
		return false;
	/* Bytes in the pipe are the proxy's: the budget says how many. */
	size_t want = conn_read_room(c, SPLICE_CHUNK);
	if (want == 0)
		return false;
	ssize_t n =
		splice(src, NULL, c->pipes[d][1], NULL, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n > 0) {
		c->piped[d] += (size_t)n;
		conn_charge(c);
		if (n >= 65536)
			grow_pipe(c, d);
		return true;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		c->half_closed[d] = true; /* EOF or error: the peer sees EOF */
		shutdown(dst, SHUT_WR);
	}
	return false;
}

/* Drains the pipe into dst; returns false when dst would block or is gone. */
static bool splice_out(struct conn *c, int d, int dst)
{
	while (c->piped[d] > 0) {
		ssize_t n = splice(c->pipes[d][0], NULL, dst, NULL, c->piped[d],
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n > 0) {
			c->piped[d] -= (size_t)n;
			conn_charge(c);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return false;
		/* the destination is gone: drop what is buffered, stop this way */
		c->piped[d] = 0;
		conn_charge(c);
		c->half_closed[d] = true;
		return false;
	}
	return true;
}

/* One direction: src socket -> pipe -> dst socket, until the kernel says
 * EAGAIN (bounded, to stay fair to the other connections on this loop).
 * True when the pipe ends up holding a different amount than it started
 * with: bytes now wait for dst, or waiting bytes went out. */
static bool splice_dir(struct conn *c, int d, int src, int dst)
{
	size_t held = c->piped[d];
	for (int round = 0; round < 8; round++) {
		bool in = splice_in(c, d, src, dst);
		if (!splice_out(c, d, dst) || !in)
			break;
	}
	return c->piped[d] != held;
}

/* Progress is a pipe's fill changing; bytes that pass straight through in
 * one step leave the fill where it was and let the step end there (one
 * round of splicing per event; note they do not re-arm the idle timer). */
enum step_result tunnel_step(struct conn *c)
{
	if (c->cout.len > 0)
		return STEP_WAIT; /* the 200 goes first */
	bool moved;
	if (tunnel_sni_pending(c)) { /* agent bytes wait for the SNI check */
		enum step_result r = tunnel_sni_step(c);
		if (r == STEP_CLOSED)
			return r;
		moved = r == STEP_PROGRESS;
	} else {
		moved = splice_dir(c, 0, c->client.fd, c->upstream.fd);
	}
	moved |= splice_dir(c, 1, c->upstream.fd, c->client.fd);
	if (c->half_closed[0] && c->half_closed[1] && !c->piped[0] && !c->piped[1]) {
		conn_close(c);
		return STEP_CLOSED;
	}
	return moved ? STEP_PROGRESS : STEP_WAIT;
}

int body_init_request(struct body *b, const struct http_request *req, os_error *err)
{
	b->scan = b->found = false;
	b->tail_len = 0;
	b->json = NULL;
	switch (http_request_body(req)) {
	case HTTP_BODY_LENGTH:
		b->state = req->framing.content_length ? BODY_LENGTH : BODY_DONE;
		b->remaining = req->framing.content_length;
		return 0;
	case HTTP_BODY_CHUNKED:
		b->state = BODY_CHUNKED;
		http_chunked_init(&b->chunked, UINT64_MAX >> 1);
		return 0;
	case HTTP_BODY_NONE:
		b->state = BODY_DONE;
		return 0;
	default:
		return os_error_set(err, EPROTO, "request body framing not supported");
	}
}

ssize_t body_pump(struct body *b, struct buf *in, struct buf *out, os_error *err)
{
	size_t room = out->cap - out->len;
	if (b->state == BODY_DONE || in->len == 0 || room == 0)
		return 0;
	size_t n = in->len < room ? in->len : room;
	if (b->state == BODY_LENGTH) {
		if (n > b->remaining)
			n = (size_t)b->remaining;
		if (b->scan)
			body_scan_feed(b, in->data, n);
		if (b->json)
			json_override_feed(b->json, in->data, n);
		b->remaining -= n;
		if (b->remaining == 0)
			b->state = BODY_DONE;
	} else if (b->state == BODY_CHUNKED) {
		/* Validate the chunked framing; forward the raw bytes it accepted
		 * (or, decoding, only the data: decoded <= raw, so it fits). */
		size_t total = 0;
		while (total < n) {
			size_t used = 0;
			struct http_slice data = { 0 };
			int r = http_chunked_feed(&b->chunked, in->data + total, n - total, &used,
						  &data, err);
			if (r < 0)
				return -1;
			if (b->scan && data.len)
				body_scan_feed(b, data.p, data.len);
			if (b->json && data.len)
				json_override_feed(b->json, data.p, data.len);
			if (b->decode && data.len && buf_append(out, data.p, data.len, err) < 0)
				return -1;
			total += used;
			if (r == HTTP_PARSE_DONE) {
				b->state = BODY_DONE;
				break;
			}
			if (r == HTTP_PARSE_NEED_MORE || used == 0)
				break;
		}
		n = total;
		if (b->decode) {
			buf_consume(in, n);
			return (ssize_t)n;
		}
	}
	if (buf_append(out, in->data, n, err) < 0)
		return -1;
	buf_consume(in, n);
	return (ssize_t)n;
}

/* Reads from one side into b: bounded by b's cap (a full buffer is
 * backpressure: the bytes stay in the kernel, the peer is slowed by TCP)
 * and by what the sandbox's budget still has for this connection. */
bool conn_read_side(struct conn *c, struct stream *s, struct buf *b, bool *eof)
{
	char chunk[16384];
	size_t room = b->cap - b->len;
	if (room == 0 || s->fd < 0)
		return false;
	room = conn_read_room(c, room < sizeof chunk ? room : sizeof chunk);
	if (room == 0)
		return false;
	ssize_t n = stream_read(s, chunk, room);
	if (n == STREAM_AGAIN)
		return false;
	if (n <= 0) {
		*eof = true;
		s->eof = true; /* an error ends the stream too: nothing more will come */
		return false;
	}
	buf_append(b, chunk, (size_t)n, NULL); /* fits: n <= room <= cap - len */
	conn_charge(c);
	return true;
}

/* A coded body (gzip, br, ...) could carry a secret past the scrubber. */
static bool encoded(const struct http_response *resp)
{
	for (size_t i = 0; i < resp->headers.n; i++) {
		const struct http_header *h = &resp->headers.v[i];
		if (str_ieq(h->name.p, h->name.len, "content-encoding", 16) &&
		    !str_ieq(h->value.p, h->value.len, "identity", 8))
			return true;
	}
	return false;
}

static bool framing_header(struct http_slice n)
{
	static const char *const names[] = { "transfer-encoding", "content-length", "connection",
					     "keep-alive", "trailer" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (str_ieq(n.p, n.len, names[i], strlen(names[i])))
			return true;
	return false;
}

/* The head of a chunked answer that is scrubbed: a chunk boundary inside a
 * secret would hide it from the scrubber, so the body is relayed decoded,
 * delimited by the end of the connection. */
int conn_write_response_head(struct conn *c, const struct http_response *resp,
			     bool (*skip)(struct http_slice name), os_error *err)
{
	char reason[128];
	size_t rl = resp->reason.len < sizeof reason ? resp->reason.len : sizeof reason - 1;
	memcpy(reason, resp->reason.p, rl);
	reason[rl] = '\0';
	if (http_write_status_line(&c->cout, resp->status, reason, err) < 0)
		return -1;
	for (size_t i = 0; i < resp->headers.n; i++) {
		const struct http_header *h = &resp->headers.v[i];
		if (!skip(h->name) && http_write_header_slice(&c->cout, h->name, h->value, err) < 0)
			return -1;
	}
	return 0;
}

static int unchunked_head(struct conn *c, const struct http_response *resp, os_error *err)
{
	if (conn_write_response_head(c, resp, framing_header, err) < 0 ||
	    http_write_header(&c->cout, "Connection", "close", err) < 0)
		return -1;
	return buf_append_str(&c->cout, "\r\n", err);
}

/* Parses the upstream's response head and queues it for the agent: 1 for
 * the final head, 0 when more is needed or after an interim (1xx) head,
 * which sets *took like the final one does, 2 after a WebSocket's 101. */
static int response_head(struct conn *c, bool *took, os_error *err)
{
	struct http_response resp;
	size_t consumed;
	int r = http_parse_response(&c->rparser, c->uin.data, c->uin.len, &resp, &consumed, err);
	if (r <= 0)
		return r;
	http_parser_reset(&c->rparser);
	if (resp.status == 101) /* the connection becomes a WebSocket, or fails */
		return proxy_ws_accept(c, &resp, consumed, err) < 0 ? -1 : 2;
	c->masking = c->injected || c->inference || conn_holds_secret(c);
	bool final = resp.status < 100 || resp.status >= 200;
	if (c->masking && encoded(&resp))
		return os_error_set(err, EPROTO,
				    "this upstream holds a secret and answered with a "
				    "Content-Encoding the proxy cannot scrub");
	/* An MCP event stream is judged event by event: events may be dropped,
	 * so it is relayed unframed, ending with the connection. */
	enum mcp_answer mcp = final ? proxy_mcp_answer_kind(c, &resp) : MCP_ANSWER_NONE;
	bool sse = mcp != MCP_ANSWER_NONE; /* judged before the agent sees it */
	if (sse && encoded(&resp))
		return os_error_set(err, EPROTO,
				    "an MCP answer with a Content-Encoding cannot be judged");
	if (sse && proxy_sse_start(c, mcp == MCP_ANSWER_JSON, err) < 0)
		return -1;
	bool decode = final && (c->masking || sse) &&
		      http_response_body(&resp, c->req_is_head, false) == HTTP_BODY_CHUNKED;
	if ((decode || sse ? unchunked_head(c, &resp, err)
			   : buf_append(&c->cout, c->uin.data, consumed, err)) < 0)
		return -1;
	buf_consume(&c->uin, consumed);
	*took = true;
	if (!final)
		return 0; /* interim: the real head follows */
	c->resp_head_done = true;
	c->upstream_close = resp.framing.close;
	c->client_close |= sse;
	switch (http_response_body(&resp, c->req_is_head, false)) {
	case HTTP_BODY_LENGTH:
		c->resp_body.state = resp.framing.content_length ? BODY_LENGTH : BODY_DONE;
		c->resp_body.remaining = resp.framing.content_length;
		break;
	case HTTP_BODY_CHUNKED:
		c->resp_body.state = BODY_CHUNKED;
		http_chunked_init(&c->resp_body.chunked, UINT64_MAX >> 1);
		/* Decoded, the body ends where the agent's connection does. */
		c->resp_body.decode = c->masking || sse;
		c->client_close |= c->masking || sse;
		break;
	case HTTP_BODY_UNTIL_CLOSE:
		c->resp_body.state = BODY_UNTIL_CLOSE;
		c->upstream_close = true;
		break;
	default:
		c->resp_body.state = BODY_DONE;
	}
	return 1;
}

static void exchange_done(struct conn *c)
{
	bool own_upstream = c->mode == MODE_HTTP || c->inference;
	if (c->client_close || (c->upstream_close && !own_upstream)) {
		conn_set_state(c, ST_CLOSING);
		return;
	}
	/* Inference backends get a fresh connection per request; plain HTTP
	 * keeps its upstream alive unless the upstream said close. */
	if (c->inference || c->upstream_close)
		upstream_drop(c);
	conn_set_state(c, ST_READ_HEAD);
}

/* Request body: agent -> cin -> uout. */
static enum step_result forward_request(struct conn *c, bool *moved)
{
	os_error err = { 0 };
	bool ceof = false;
	while (c->req_body.state != BODY_DONE && conn_read_side(c, &c->client, &c->cin, &ceof))
		*moved = true;
	ssize_t n = body_pump(&c->req_body, &c->cin, &c->uout, &err);
	if (n < 0) {
		reply_error(c, 400, "bad_request", err.msg, "bad_request_body");
		return STEP_PROGRESS;
	}
	if (c->req_body.found)
		return body_scan_refuse(c);
	enum step_result judged = proxy_json_watch_judge(c);
	if (judged != STEP_WAIT)
		return judged;
	*moved |= n > 0;
	if (ceof && c->req_body.state != BODY_DONE) {
		conn_close(c);
		return STEP_CLOSED;
	}
	return STEP_WAIT;
}

/* Response body: uin -> cout, framed or until the upstream closes. */
static int forward_response_body(struct conn *c, bool ueof, bool *moved, os_error *err)
{
	if (c->sse)
		return proxy_sse_pump(c, ueof, moved, err);
	if (c->resp_body.state != BODY_UNTIL_CLOSE) {
		ssize_t n = body_pump(&c->resp_body, &c->uin, &c->cout, err);
		*moved |= n > 0;
		return n < 0 ? -1 : 0;
	}
	/* Move only what fits; the rest waits in uin for the agent. */
	size_t room = c->cout.cap - c->cout.len;
	size_t n = c->uin.len < room ? c->uin.len : room;
	if (n && buf_append(&c->cout, c->uin.data, n, NULL) == 0) {
		buf_consume(&c->uin, n);
		*moved = true;
	}
	if (ueof && c->uin.len == 0)
		c->resp_body.state = BODY_DONE;
	return 0;
}

enum step_result forward_step(struct conn *c)
{
	os_error err = { 0 };
	bool ueof = false, moved = false;
	enum step_result r = forward_request(c, &moved);
	if (r != STEP_WAIT)
		return r;
	while (conn_read_side(c, &c->upstream, &c->uin, &ueof))
		moved = true;
	/* Sticky: a full uin is not read, so this step may not see the EOF again. */
	ueof = ueof || c->upstream.eof;
	if (!c->resp_head_done) {
		int h = response_head(c, &moved, &err);
		if (h < 0) {
			reply_error(c, 502, "bad_gateway", err.msg, "bad_upstream_response");
			return STEP_PROGRESS;
		}
		if (h == 2)
			return STEP_PROGRESS; /* switched to ST_WEBSOCKET */
		if (h == 0 && ueof) {
			reply_error(c, 502, "bad_gateway", "upstream closed without a response",
				    "upstream_closed");
			return STEP_PROGRESS;
		}
		if (!c->resp_head_done)
			return moved ? STEP_PROGRESS : STEP_WAIT;
	}
	if (forward_response_body(c, ueof, &moved, &err) < 0) {
		log_warn("proxy: bad response body from %s: %s", c->host, err.msg);
		conn_close(c);
		return STEP_CLOSED;
	}
	if (c->resp_body.state == BODY_DONE && c->req_body.state == BODY_DONE &&
	    proxy_sse_drained(c)) {
		proxy_sse_stop(c); /* an unfinished event is dropped, as clients do */
		exchange_done(c);
		return STEP_PROGRESS;
	}
	/* The upstream is done but the body is not: truncated, unless what is
	 * still in uin only waits for the agent to read (cout full). Closing
	 * then would cut a complete answer short. */
	if (ueof && c->resp_body.state != BODY_DONE && c->cout.len < c->cout.cap) {
		conn_close(c); /* truncated: the agent must not see a complete message */
		return STEP_CLOSED;
	}
	return moved ? STEP_PROGRESS : STEP_WAIT;
}
