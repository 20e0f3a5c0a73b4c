/* relay_conn.c - the CLI's side of the upgraded connections the gateway
 * relays to a sandbox's supervisor: exec, upload, download, port-forward
 * (docs/exec.md, docs/files.md). Dials (starting a local gateway when none
 * answers), asks for the upgrade, waits a bounded time for a sandbox whose
 * supervisor session is coming back, and says what became of the sandbox
 * when a connection is lost. */
#include "relay_conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "execframe.h"
#include "gw_http.h"
#include "json.h"
#include "parse.h"

/* Reads until the end of the response head (and whatever follows it). */
static int read_head(struct tls_stream *s, const char *route, struct buf *rest, const char **end,
		     os_error *err)
{
	char chunk[16384]; /* a whole TLS record, so none stays pending */
	os_error why = { 0 };
	*end = NULL;
	while (!*end) {
		ssize_t r = tls_stream_read(s, chunk, sizeof chunk, &why);
		if (r < 0 && (why.code == EINTR || why.code == EAGAIN))
			continue;
		if (r < 0) /* a TLS alert (no or a refused client certificate) lands here */
			return os_error_set(err, EPROTO, "%s: %s", route, why.msg);
		if (r == 0 || buf_append(rest, chunk, (size_t)r, NULL) < 0)
			break;
		*end = memmem(rest->data, rest->len, "\r\n\r\n", 4);
	}
	if (!*end)
		return os_error_set(err, EPROTO,
				    "%s: the gateway closed the connection without an answer",
				    route);
	return 0;
}

/* Sends the request; returns 0 on 101 (rest holds early frames), else -1
 * with the gateway's message in err: EAGAIN when it said not_ready (the
 * sandbox has no live supervisor session right now). */
static int upgrade(struct tls_stream *s, const struct client *c, const char *name,
		   const char *route, const char *body, struct buf *rest, os_error *err)
{
	char head[1024];
	os_error why = { 0 };
	int n = snprintf(head, sizeof head,
			 "POST /v1/sandboxes/%s/%s HTTP/1.1\r\nHost: openshell\r\n"
			 "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nUpgrade: " EXECFRAME_UPGRADE
			 "\r\nConnection: Upgrade\r\n\r\n",
			 name, route, c->token, strlen(body));
	if (n < 0 || (size_t)n >= sizeof head ||
	    tls_stream_write_all(s, head, (size_t)n, &why) < 0 ||
	    tls_stream_write_all(s, body, strlen(body), &why) < 0)
		return os_error_set(err, EIO, "%s: sending the request to the gateway failed%s%s",
				    route, why.msg[0] ? ": " : "", why.msg);
	const char *end;
	if (read_head(s, route, rest, &end, err) < 0)
		return -1;
	if (rest->len >= 12 && !strncmp(rest->data, "HTTP/1.1 101", 12)) {
		buf_consume(rest, (size_t)(end + 4 - rest->data));
		return 0;
	}
	/* An error answer: its JSON body says what went wrong. */
	char chunk[16384];
	while (1) {
		ssize_t r = tls_stream_read(s, chunk, sizeof chunk, &why);
		if (r < 0 && (why.code == EINTR || why.code == EAGAIN))
			continue;
		if (r <= 0 || buf_append(rest, chunk, (size_t)r, NULL) < 0)
			break;
	}
	end = memmem(rest->data, rest->len, "\r\n\r\n", 4);
	_cleanup_json_ json_t *j =
		json_loadb(end + 4, rest->len - (size_t)(end + 4 - rest->data), 0, NULL);
	const char *msg = json_string_value(json_object_get(j, "message"));
	const char *code = json_string_value(json_object_get(j, "error"));
	return os_error_set(err, code && !strcmp(code, "not_ready") ? EAGAIN : EPERM, "%s",
			    msg ? msg : "refused by the gateway");
}

int relay_send_frame(struct tls_stream *s, uint8_t type, const void *p, size_t n)
{
	struct buf b;
	buf_init(&b, EXECFRAME_MAX_PAYLOAD + EXECFRAME_HEAD);
	int rc = execframe_put(&b, type, p, n, NULL) < 0
			 ? -1
			 : tls_stream_write_all(s, b.data, b.len, NULL);
	buf_free(&b);
	return rc;
}

/* After a lost connection or a command killed by a signal: what became of
 * the sandbox, in words, or NULL when it still runs (the message about the
 * connection, or the status alone, then stands). */
const char *relay_what_happened(struct cli *cli, const char *name, const char *seg, bool lost,
				char *out, size_t cap)
{
	char path[512];
	long status = 0;
	os_error err = { 0 };
	_cleanup_json_ json_t *row = NULL;
	snprintf(path, sizeof path, "/v1/sandboxes/%s", seg);
	if (client_call(&cli->client, "GET", path, NULL, &status, &row, &err) < 0) {
		if (!lost)
			return NULL;
		snprintf(out, cap, "lost the gateway at %s: %s", cli->client.url, err.msg);
		return out;
	}
	const char *phase = str_or(json_string_value(json_object_get(row, "phase")), "");
	if (status == 404 || !strcmp(phase, "Deleting"))
		snprintf(out, cap, "sandbox %s was deleted while this session ran", name);
	else if (!strcmp(phase, "Stopping") || !strcmp(phase, "Stopped"))
		snprintf(out, cap, "sandbox %s was stopped while this session ran", name);
	else if (!strcmp(phase, "Error") || !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))
		snprintf(out, cap, "sandbox %s ended (%s: %s) while this session ran", name, phase,
			 str_or(json_string_value(json_object_get(row, "message")), ""));
	else
		return NULL;
	return out;
}

/* How long a relayed request waits for a sandbox whose supervisor session is not live
 * yet: after a gateway restart a running supervisor redials within its
 * backoff cap (3 s), and a sandbox just created is still coming up. */
#define SESSION_WAIT_S 60
#define SESSION_POLL_MS 200

/* Dials the gateway (starting a local one when none answers) and asks for
 * the upgrade; 0 with s open and in holding early frames, else -1 with err
 * (EAGAIN: not ready). On -1 nothing stays open. */
static int open_relay(struct cli *cli, const char *seg, const char *route, const char *body,
		      struct tls_stream *s, struct buf *in, os_error *err)
{
	/* Straight to the gateway: a health call first would cost a round trip
	 * on every request. Only when nothing answers is a local one started. */
	char host[256] = "";
	int fd = gw_dial(&cli->client, host, sizeof host, err);
	if (fd < 0) {
		os_error first = *err;
		if (client_ensure(&cli->client, err) < 0) {
			if (err->code == ECONNREFUSED)
				*err = first;
			return -1;
		}
		fd = gw_dial(&cli->client, host, sizeof host, err);
	}
	if (fd < 0)
		return -1;
	*s = (struct tls_stream){ .fd = fd };
	if (str_has_prefix(cli->client.url, "https://") &&
	    tls_stream_start(s, fd, &cli->client.tls, host, err) < 0) {
		close(fd);
		s->fd = -1;
		return -1;
	}
	if (upgrade(s, &cli->client, seg, route, body, in, err) < 0) {
		tls_stream_end(s);
		close(s->fd);
		s->fd = -1;
		buf_reset(in);
		return -1;
	}
	return 0;
}

/* Whether a not_ready sandbox is worth waiting for: one whose phase says it
 * runs or is coming up (its session is back within seconds), not one that
 * stopped, ended or is going away. */
static bool session_coming(struct cli *cli, const char *seg, char *phase, size_t cap)
{
	char path[512];
	long status = 0;
	os_error err = { 0 };
	_cleanup_json_ json_t *row = NULL;
	snprintf(path, sizeof path, "/v1/sandboxes/%s", seg);
	if (client_call(&cli->client, "GET", path, NULL, &status, &row, &err) < 0 || status != 200)
		return false;
	const char *p = str_or(json_string_value(json_object_get(row, "phase")), "");
	snprintf(phase, cap, "%s", p);
	return !strcmp(p, "Provisioning") || !strcmp(p, "Starting") || !strcmp(p, "Ready");
}

/* open_relay, waiting (bounded, with a progress line) while the gateway says
 * not_ready for a sandbox whose session is coming back. */
int relay_open(struct cli *cli, const char *name, const char *seg, const char *route,
	       const char *body, struct tls_stream *s, struct buf *in)
{
	os_error err = { 0 };
	bool said = false;
	char phase[64] = "";
	for (int i = 0; i <= SESSION_WAIT_S * 1000 / SESSION_POLL_MS; i++) {
		if (open_relay(cli, seg, route, body, s, in, &err) == 0) {
			if (said && isatty(STDERR_FILENO))
				fprintf(stderr, "\r\033[K");
			return 0;
		}
		if (err.code != EAGAIN || !session_coming(cli, seg, phase, sizeof phase))
			break;
		if (!said || isatty(STDERR_FILENO))
			fprintf(stderr,
				"%sopenshell: waiting for sandbox %s's supervisor session (%s)%s",
				isatty(STDERR_FILENO) ? "\r\033[K" : "", name, phase,
				isatty(STDERR_FILENO) ? "" : "\n");
		said = true;
		nanosleep(&(struct timespec){ .tv_nsec = SESSION_POLL_MS * 1000L * 1000L }, NULL);
	}
	if (said && isatty(STDERR_FILENO))
		fprintf(stderr, "\n");
	if (err.code == EAGAIN && said)
		return cli_fail("%s (waited %d s)", err.msg, SESSION_WAIT_S);
	return cli_fail("%s", err.msg);
}
