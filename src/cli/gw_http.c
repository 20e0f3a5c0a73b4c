/* gw_http.c - see gw_http.h. */
#include "gw_http.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "http.h"
#include "parse.h"

#define HEAD_MAX 65536
#define BODY_MAX (64u << 20)

static int refused(const struct client *c, os_error *err)
{
	return os_error_set(err, ECONNREFUSED,
			    "no gateway answers at %s: start one with `openshell gateway start` "
			    "(or check OPENSHELL_GATEWAY)",
			    c->url);
}

static int connect_fd(int fd, const struct sockaddr *sa, socklen_t len, const struct client *c,
		      os_error *err)
{
	if (fd >= 0 && connect(fd, sa, len) == 0)
		return fd;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (e == ECONNREFUSED || e == ENOENT)
		return refused(c, err);
	errno = e;
	return os_error_errno(err, "connecting to the gateway at %s", c->url);
}

int gw_dial(const struct client *c, char *host, size_t host_cap, os_error *err)
{
	host[0] = '\0';
	if (str_has_prefix(c->url, "unix:")) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		if (str_copy(sun.sun_path, sizeof sun.sun_path, c->url + 5, err) < 0)
			return -1;
		return connect_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
				  (struct sockaddr *)&sun, sizeof sun, c, err);
	}
	char port[16];
	const char *hp = strstr(c->url, "://") + 3; /* client_init allows only http[s]:// here */
	const char *colon = strrchr(hp, ':');
	if (!colon || (size_t)(colon - hp) >= host_cap || strlen(colon + 1) >= sizeof port)
		return os_error_set(err, EINVAL, "gateway %s: expected http[s]://HOST:PORT",
				    c->url);
	memcpy(host, hp, (size_t)(colon - hp));
	host[colon - hp] = '\0';
	snprintf(port, sizeof port, "%s", colon + 1);
	port[strcspn(port, "/")] = '\0';
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0)
		return os_error_set(err, EINVAL, "gateway %s: %s", c->url, gai_strerror(rc));
	int fd = connect_fd(socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), res->ai_addr,
			    res->ai_addrlen, c, err);
	freeaddrinfo(res);
	return fd;
}

int gw_open(const struct client *c, struct tls_stream *s, os_error *err)
{
	char host[256];
	*s = (struct tls_stream){ .fd = -1 };
	int fd = gw_dial(c, host, sizeof host, err);
	if (fd < 0)
		return -1;
	s->fd = fd;
	if (str_has_prefix(c->url, "https://") && tls_stream_start(s, fd, &c->tls, host, err) < 0) {
		close(fd);
		s->fd = -1;
		return -1;
	}
	return 0;
}

/* More bytes into in; 0 at EOF, -1 on error. */
static ssize_t fill(struct tls_stream *s, struct buf *in, os_error *err)
{
	char chunk[16384]; /* a whole TLS record, so none stays pending */
	for (;;) {
		ssize_t r = tls_stream_read(s, chunk, sizeof chunk, err);
		if (r < 0 && (err->code == EINTR || err->code == EAGAIN))
			continue;
		if (r > 0 && buf_append(in, chunk, (size_t)r, err) < 0)
			return -1;
		return r;
	}
}

static int send_request(const struct client *c, struct tls_stream *s, const char *method,
			const char *path, const char *body, os_error *err)
{
	_cleanup_buf_ struct buf req;
	char auth[300];
	buf_init(&req, (size_t)HEAD_MAX + (body ? strlen(body) : 0));
	snprintf(auth, sizeof auth, "Bearer %s", c->token);
	if (http_write_request_line(&req, method, path, err) < 0 ||
	    http_write_header(&req, "Host", "openshell", err) < 0 ||
	    (c->token[0] && http_write_header(&req, "Authorization", auth, err) < 0) ||
	    (body && http_write_header(&req, "Content-Type", "application/json", err) < 0) ||
	    ((body || strcmp(method, "GET") != 0) &&
	     http_write_content_length(&req, body ? strlen(body) : 0, err) < 0) ||
	    http_write_header(&req, "Connection", "close", err) < 0 ||
	    http_write_head_end(&req, err) < 0 || (body && buf_append_str(&req, body, err) < 0))
		return os_error_prefix(err, "request %s %s", method, path);
	return tls_stream_write_all(s, req.data, req.len, err);
}

/* The body after the head: by length, chunked, or to the end. */
static int read_body(struct tls_stream *s, struct buf *in, enum http_body_kind kind,
		     uint64_t length, gw_body_fn on_body, void *user, os_error *err)
{
	struct http_chunked ch;
	http_chunked_init(&ch, BODY_MAX);
	for (;;) {
		if (kind == HTTP_BODY_CHUNKED) {
			for (;;) {
				size_t used = 0;
				struct http_slice data;
				int r = http_chunked_feed(&ch, in->data, in->len, &used, &data,
							  err);
				if (r < 0)
					return os_error_prefix(err, "the gateway's answer");
				buf_consume(in, used);
				if (r == HTTP_PARSE_DONE)
					return 0;
				if (r == HTTP_PARSE_NEED_MORE)
					break;
				if (on_body(data.p, data.len, user) < 0)
					return 0;
			}
		} else if (in->len) {
			size_t n = kind == HTTP_BODY_LENGTH && length < in->len ? (size_t)length
										: in->len;
			if (on_body(in->data, n, user) < 0)
				return 0;
			buf_consume(in, n);
			length -= kind == HTTP_BODY_LENGTH ? n : 0;
		}
		if (kind == HTTP_BODY_LENGTH && length == 0)
			return 0;
		ssize_t r = fill(s, in, err);
		if (r < 0)
			return -1;
		if (r == 0)
			return kind == HTTP_BODY_UNTIL_CLOSE
				       ? 0
				       : os_error_set(
						 err, EPIPE,
						 "the gateway closed the connection mid-answer");
	}
}

int gw_http(const struct client *c, const char *method, const char *path, const char *body,
	    gw_body_fn on_body, void *user, long *status, os_error *out_err)
{
	os_error local = { 0 }, *err = out_err ? out_err : &local; /* callers may pass NULL */
	struct tls_stream s;
	if (gw_open(c, &s, err) < 0)
		return -1;
	_cleanup_buf_ struct buf in;
	buf_init(&in, (size_t)HEAD_MAX + 65536);
	struct http_parser p;
	struct http_response resp;
	size_t head = 0;
	int rc = send_request(c, &s, method, path, body, err);
	http_parser_init(&p, NULL);
	while (rc == 0) {
		http_parser_reset(&p);
		int r = http_parse_response(&p, in.data, in.len, &resp, &head, err);
		if (r == HTTP_PARSE_DONE)
			break;
		if (r < 0) {
			rc = os_error_prefix(err, "the gateway's answer");
		} else {
			ssize_t n = fill(&s, &in, err);
			if (n == 0)
				rc = os_error_set(err, EPIPE,
						  "the gateway closed the connection without an "
						  "answer");
			else if (n < 0)
				rc = -1;
		}
	}
	if (rc == 0) {
		*status = resp.status;
		enum http_body_kind kind =
			http_response_body(&resp, !strcmp(method, "HEAD"), false);
		uint64_t length = resp.framing.content_length;
		buf_consume(&in, head);
		if (kind != HTTP_BODY_NONE)
			rc = read_body(&s, &in, kind, length, on_body, user, err);
	}
	tls_stream_end(&s);
	close(s.fd);
	return rc;
}
