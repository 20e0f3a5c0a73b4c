/* server.c - the gateway's listeners and HTTP/1.1 connections on the shared
 * loop: one request per connection (Connection: close), bodies only with
 * Content-Length and at most GW_BODY_MAX, JSON answers or chunked log
 * streams. Never blocks on a slow client: output is buffered and pumped
 * when the socket is writable. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "execframe.h"
#include "gateway.h"
#include "json.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "parse.h"
#include "tls.h"

#define CONN_MAX 512
#define IN_CAP (GW_BODY_MAX + 16384)
#define OUT_CAP (8u << 20)
#define IDLE_MS 30000
#define STREAM_TICK_MS 200
#define STREAM_READ 65536
#define DRAIN_MS 5000
#define DRAIN_MAX (64u << 20)
#define WATCH_FAILURES_MAX 25 /* ticks: 5 s */
#define RELAY_HIGH (1u << 20) /* stop reading one side while the other owes this much */

struct server {
	struct gateway *gw;
	int fds[2];
	struct loop_io *ios[2];
	size_t nconns;
	struct conn *conns; /* every open connection, so shutdown frees them */
	SSL_CTX *tls; /* the TCP listener's, or NULL for plain HTTP */
	bool mtls; /* tls asks for client certificates (tls_client_ca_file) */
};

struct conn {
	struct server *srv;
	struct conn *prev, *next; /* srv->conns */
	int fd;
	SSL *ssl; /* TLS on this connection (tls.c), or NULL */
	bool handshaking;
	struct loop_io *io;
	struct loop_timer *timer;
	struct http_parser parser;
	struct buf in, out;
	bool responded, closing, draining;
	size_t drained;
	size_t consumed; /* bytes of c->in the request used (head + body) */
	bool parked; /* exec client waiting for its relay (exec.c) */
	struct conn *peer; /* exec relay: the other end, or NULL */
	bool relaying;
	json_t *watch_seen; /* watch streams: id -> last resource_version sent */
	unsigned watch_failures; /* consecutive ticks the store could not be read */
	struct api_response resp;
};

static void update_interest(struct conn *c);

static void flush(struct conn *c);

static void conn_close(struct conn *c)
{
	if (c->resp.session)
		sessions_detach(c->srv->gw, c);
	if (c->parked)
		exec_forget(c->srv->gw, c);
	struct conn *peer = c->peer;
	if (peer) {
		/* The other end gets what it is still owed, then closes. */
		peer->peer = NULL;
		c->peer = NULL;
		peer->closing = true;
		loop_io_modify(peer->io, LOOP_OUT, NULL);
	}
	if (c->io)
		loop_io_remove(c->io);
	if (c->timer)
		loop_timer_remove(c->timer);
	SSL_free(c->ssl);
	close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	json_decref(c->resp.body);
	json_decref(c->watch_seen);
	c->srv->nconns--;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

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
	default:
		return status < 500 ? "Client Error" : "Server Error";
	}
}

/* Writes as much buffered output as the socket takes; closes when done. */
static void flush(struct conn *c)
{
	while (c->out.len > 0) {
		ssize_t n = gw_conn_send(c->fd, c->ssl, c->out.data, c->out.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			loop_io_modify(c->io, LOOP_OUT, NULL);
			return;
		}
		if (n <= 0) {
			conn_close(c);
			return;
		}
		buf_consume(&c->out, (size_t)n);
	}
	if (c->closing) {
		/* Drain what the client still sends (an early 413), so closing
		 * with unread bytes does not reset the answer away. */
		gw_tls_close_notify(c->ssl);
		shutdown(c->fd, SHUT_WR);
		c->draining = true;
		loop_io_modify(c->io, LOOP_IN, NULL);
		loop_timer_set(c->timer, DRAIN_MS, 0, NULL);
		return;
	}
	if (c->relaying) {
		update_interest(c);
		if (c->peer)
			update_interest(c->peer); /* it may read again now we drained */
		return;
	}
	/* A session keeps reading: the supervisor's close must be seen at once. */
	loop_io_modify(c->io, c->resp.stream && !c->resp.session ? 0 : LOOP_IN, NULL);
}

/* A relay reads while its peer's backlog is small and writes while it owes. */
static void update_interest(struct conn *c)
{
	unsigned ev = c->out.len ? LOOP_OUT : 0;
	if (c->peer && c->peer->out.len < RELAY_HIGH)
		ev |= LOOP_IN;
	loop_io_modify(c->io, ev, NULL);
}

static void relay_bytes(struct conn *c)
{
	char tmp[65536];
	ssize_t n = gw_conn_recv(c->fd, c->ssl, tmp, sizeof(tmp));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || !c->peer || buf_append(&c->peer->out, tmp, (size_t)n, NULL) < 0) {
		conn_close(c);
		return;
	}
	update_interest(c->peer);
	update_interest(c);
}

/* Bytes after the request (sent before the 101) belong to the peer. */
static int hand_over_rest(struct conn *from, struct conn *to)
{
	size_t rest = from->in.len > from->consumed ? from->in.len - from->consumed : 0;
	int rc = rest ? buf_append(&to->out, from->in.data + from->consumed, rest, NULL) : 0;
	buf_free(&from->in);
	return rc;
}

void server_conn_relay(struct conn *client, struct conn *relay)
{
	static const char head[] = "HTTP/1.1 101 Switching Protocols\r\n"
				   "Upgrade: " EXECFRAME_UPGRADE "\r\n"
				   "Connection: Upgrade\r\n\r\n";
	struct conn *pair[2] = { client, relay };
	for (int i = 0; i < 2; i++) {
		struct conn *c = pair[i];
		c->parked = false;
		c->relaying = c->responded = true;
		c->peer = pair[1 - i];
		loop_timer_disarm(c->timer); /* an interactive shell may idle for hours */
		buf_append(&c->out, head, sizeof(head) - 1, NULL);
	}
	if (hand_over_rest(client, relay) < 0 || hand_over_rest(relay, client) < 0) {
		conn_close(client); /* closes the relay after its 101 */
		return;
	}
	update_interest(client);
	update_interest(relay);
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
	c->responded = true;
	c->closing = true;
	flush(c);
}

static void send_error(struct conn *c, int status, const char *code, const char *msg)
{
	_cleanup_json_ json_t *b = json_pack("{s:s, s:s}", "error", code, "message", msg);
	send_json(c, status, b);
}

void server_conn_fail(struct conn *c, int status, const char *code, const char *msg)
{
	c->parked = false;
	send_error(c, status, code, msg);
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
		conn_close(c);
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
		conn_close(c);
		return;
	}
	c->watch_failures = 0;
	if (events.len)
		http_write_chunk(&c->out, events.data, events.len, NULL);
	buf_free(&events);
	flush(c); /* may free c */
}

static void stream_tick(struct loop *l, struct loop_timer *t, void *data)
{
	struct conn *c = data;
	if (c->out.len > OUT_CAP / 2)
		return;
	if (c->resp.watch) {
		watch_tick(c);
		return;
	}
	bool running = c->resp.follow && lifecycle_running(c->srv->gw, c->resp.stream_sandbox);
	_cleanup_free_ char *chunk = malloc(STREAM_READ);
	ssize_t n = 0;
	int fd = open(c->resp.stream_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && chunk) {
		n = pread(fd, chunk, STREAM_READ, (off_t)c->resp.stream_offset);
		close(fd);
	}
	if (n > 0) {
		c->resp.stream_offset += (uint64_t)n;
		http_write_chunk(&c->out, chunk, (size_t)n, NULL);
	} else if (!running) {
		http_write_last_chunk(&c->out, NULL);
		c->closing = true;
	}
	flush(c); /* may free c */
}

/* A supervisor session: NDJSON chunks pushed by sessions.c until either
 * side closes; no idle timeout (pings keep it busy). */
static void start_session(struct conn *c)
{
	os_error err = { 0 };
	write_head(c, 200, "application/x-ndjson", 0, true);
	c->responded = true;
	loop_timer_disarm(c->timer);
	if (sessions_attach(c->srv->gw, c->resp.stream_sandbox, c, &err) < 0) {
		log_warn("%s", err.msg);
		conn_close(c);
		return;
	}
	flush(c);
}

int server_conn_send(struct conn *c, const char *data, size_t len)
{
	if (c->closing || http_write_chunk(&c->out, data, len, NULL) < 0)
		return -1;
	return loop_io_modify(c->io, LOOP_OUT, NULL);
}

void server_conn_close(struct conn *c)
{
	conn_close(c);
}

static void start_stream(struct conn *c)
{
	if (c->resp.session) {
		start_session(c);
		return;
	}
	write_head(c, 200, c->resp.watch ? "application/x-ndjson" : "text/plain; charset=utf-8", 0,
		   true);
	c->responded = true;
	if (loop_timer_set(c->timer, 0, STREAM_TICK_MS, NULL) < 0) {
		conn_close(c);
		return;
	}
	flush(c);
}

/* An exec client waits (nothing is answered until its relay comes); a relay
 * joins its client or is refused. */
static void start_exec(struct conn *c)
{
	os_error err = { 0 };
	c->responded = true;
	if (c->resp.exec_park) {
		loop_timer_disarm(c->timer); /* exec.c times the wait */
		if (exec_park(c->srv->gw, c->resp.exec_sandbox, c->resp.exec_id, c, &err) < 0) {
			send_error(c, 503, "unavailable", err.msg);
			return;
		}
		c->parked = true;
		loop_io_modify(c->io, LOOP_IN, NULL); /* to see the client leave */
		return;
	}
	if (exec_attach(c->srv->gw, c->resp.exec_sandbox, c->resp.exec_id, c, &err) < 0)
		send_error(c, 404, "not_found", err.msg);
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

static void dispatch(struct conn *c, const struct http_request *hr, const char *body,
		     size_t body_len)
{
	char method[16], path[2048], query[2048], tok[256];
	if (hr->method.len >= sizeof(method) || hr->path.len >= sizeof(path) ||
	    hr->query.len >= sizeof(query)) {
		send_error(c, 414, "uri_too_long", "request target too long");
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

static void on_request_bytes(struct conn *c)
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
		send_error(c, err.code == EMSGSIZE ? 431 : 400, "bad_request", err.msg);
		return;
	}
	if (req.form != HTTP_TARGET_ORIGIN) {
		send_error(c, 400, "bad_request", "request target must be a path");
		return;
	}
	enum http_body_kind kind = http_request_body(&req);
	if (kind == HTTP_BODY_CHUNKED) {
		send_error(c, 411, "length_required",
			   "send the body with Content-Length, not chunked");
		return;
	}
	uint64_t blen = kind == HTTP_BODY_LENGTH ? req.framing.content_length : 0;
	if (blen > GW_BODY_MAX) {
		send_error(c, 413, "body_too_large",
			   "request body over 1 MiB: send less (large policies belong in "
			   "several revisions)");
		return;
	}
	if (c->in.len - head < blen)
		return;
	c->consumed = head + (size_t)blen;
	dispatch(c, &req, c->in.data + head, (size_t)blen);
}

/* TLS first: the idle timer armed at accept also bounds a stalled handshake. */
static void handshake(struct conn *c)
{
	os_error err = { 0 };
	unsigned want = 0;
	int r = gw_tls_handshake(c->ssl, c->fd, &want, &err);
	if (r < 0) {
		log_warn("%s", err.msg);
		/* The alert is sent; drain instead of closing at once, which would
		 * reset the connection and lose the alert the client needs to say why. */
		SSL_free(steal_ptr(c->ssl));
		c->handshaking = false;
		c->responded = c->closing = true;
		flush(c);
		return;
	}
	c->handshaking = r > 0;
	loop_io_modify(c->io, r > 0 ? want : LOOP_IN, NULL);
}

static void on_io(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct conn *c = data;
	if (c->handshaking) {
		handshake(c);
		return;
	}
	if (ev & LOOP_OUT) {
		flush(c);
		return;
	}
	char tmp[16384];
	if (c->draining) {
		ssize_t d = gw_conn_recv(fd, c->ssl, tmp, sizeof(tmp));
		if (d == 0 || (d < 0 && errno != EAGAIN && errno != EINTR) ||
		    (c->drained += d > 0 ? (size_t)d : 0) > DRAIN_MAX)
			conn_close(c);
		return;
	}
	if (c->relaying) {
		relay_bytes(c);
		return;
	}
	if (c->parked) { /* early frames wait in c->in; EOF means the client left */
		ssize_t d = gw_conn_recv(fd, c->ssl, tmp, sizeof(tmp));
		if (d == 0 || (d < 0 && errno != EAGAIN && errno != EINTR) ||
		    (d > 0 && buf_append(&c->in, tmp, (size_t)d, NULL) < 0))
			conn_close(c);
		return;
	}
	if (c->responded && c->resp.session) {
		ssize_t d = gw_conn_recv(fd, c->ssl, tmp,
					 sizeof(tmp)); /* nothing is expected: discard */
		if (d == 0 || (d < 0 && errno != EAGAIN && errno != EINTR))
			conn_close(c);
		return;
	}
	if (c->responded) {
		if (ev & (LOOP_HUP | LOOP_ERR))
			conn_close(c);
		return;
	}
	ssize_t n = gw_conn_recv(fd, c->ssl, tmp, sizeof(tmp));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	if (buf_append(&c->in, tmp, (size_t)n, NULL) < 0) {
		send_error(c, 413, "body_too_large", "request over the size limit");
		return;
	}
	on_request_bytes(c);
}

static void on_idle(struct loop *l, struct loop_timer *t, void *data)
{
	struct conn *c = data;
	if (c->resp.stream && !c->draining) {
		stream_tick(l, t, data);
		return;
	}
	conn_close(c);
}

static void on_accept(struct loop *l, struct loop_io *w, int lfd, unsigned ev, void *data)
{
	struct server *s = data;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct conn *c = s->nconns < CONN_MAX ? calloc(1, sizeof(*c)) : NULL;
		if (!c) {
			close(fd); /* over the connection cap: refuse rather than queue */
			continue;
		}
		c->srv = s;
		c->fd = fd;
		buf_init(&c->in, IN_CAP);
		buf_init(&c->out, OUT_CAP);
		http_parser_init(&c->parser, NULL);
		s->nconns++;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		os_error err = { 0 };
		if (lfd == s->fds[0] && s->tls && !(c->ssl = gw_tls_conn_new(s->tls, fd, &err))) {
			log_warn("%s", err.msg);
			conn_close(c);
			continue;
		}
		c->handshaking = c->ssl != NULL;
		if (loop_io_add(l, fd, LOOP_IN, 0, on_io, c, &c->io, NULL) < 0 ||
		    loop_timer_add(l, IDLE_MS, 0, on_idle, c, &c->timer, NULL) < 0)
			conn_close(c);
	}
}

static int listen_tcp(const char *spec, int *out, os_error *err)
{
	struct http_authority a;
	if (http_parse_authority(spec, strlen(spec), 0, true, &a, err) < 0)
		return os_error_prefix(err, "listen address \"%s\" (want IPV4:PORT)", spec);
	char host[64];
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(a.port) };
	if (a.host.len >= sizeof(host))
		return os_error_set(err, EINVAL, "listen address \"%s\": bad host", spec);
	memcpy(host, a.host.p, a.host.len);
	host[a.host.len] = '\0';
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return os_error_set(err, EINVAL, "listen address \"%s\": not an IPv4 address",
				    spec);
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 256) < 0)
		return os_error_errno(err, "listening on %s", spec);
	*out = steal_fd(fd);
	return 0;
}

static int listen_unix(const char *path, int *out, os_error *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (str_copy(sun.sun_path, sizeof(sun.sun_path), path, err) < 0)
		return os_error_prefix(err, "unix socket path");
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return os_error_errno(err, "socket");
	/* A stale socket file from a crashed gateway: remove only if it is a socket. */
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0 || listen(fd, 256) < 0)
		return os_error_errno(err, "listening on %s", path);
	*out = steal_fd(fd);
	return 0;
}

int server_start(struct gateway *gw, const struct gateway_listen *ls, os_error *err)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "server");
	s->gw = gw;
	s->fds[0] = s->fds[1] = -1;
	gw->server = s;
	struct gateway_tls_config tls = { ls->tls_cert, ls->tls_key, ls->tls_client_ca };
	if (gw_tls_ctx_new(&tls, &s->tls, err) < 0)
		return -1;
	s->mtls = s->tls && ls->tls_client_ca;
	if (s->tls && !ls->tcp)
		return os_error_set(
			err, EINVAL,
			"tls_cert_file is set but listen_address is none: TLS is served "
			"only on the TCP listener");
	if ((ls->tcp && listen_tcp(ls->tcp, &s->fds[0], err) < 0) ||
	    (ls->unix_path && listen_unix(ls->unix_path, &s->fds[1], err) < 0))
		return -1;
	for (int i = 0; i < 2; i++)
		if (s->fds[i] >= 0 &&
		    loop_io_add(gw->loop, s->fds[i], LOOP_IN, 0, on_accept, s, &s->ios[i], err) < 0)
			return -1;
	return 0;
}

void server_free(struct server *s)
{
	if (!s)
		return;
	/* Connections still open at shutdown (streams, sessions, relays, a
	 * client still draining) go first: they reference the tables below. */
	while (s->conns)
		conn_close(s->conns);
	sessions_free(s->gw);
	execs_free(s->gw);
	for (int i = 0; i < 2; i++) {
		if (s->ios[i])
			loop_io_remove(s->ios[i]);
		if (s->fds[i] >= 0)
			close(s->fds[i]);
	}
	SSL_CTX_free(s->tls);
	free(s);
}
