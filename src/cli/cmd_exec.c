/* cmd_exec.c - `openshell sandbox exec [-i] [-t] NAME [--] CMD...` and
 * `openshell sandbox connect NAME`: one upgraded connection to the gateway
 * (docs/exec.md; TLS for https:// through tls_client.h) carrying stdin, stdout, stderr, terminal size and the exit
 * status as frames. The CLI exits with the command's status; 125 when the
 * command could not be started, 1 when the connection was lost. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "execframe.h"
#include "fdutil.h"
#include "gw_http.h"
#include "json.h"
#include "parse.h"

#define EXIT_NOT_STARTED 125
#define HEAD_MAX 65536

static volatile sig_atomic_t winch;

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

/* Sends the request; returns 0 on 101 (rest holds early frames), or prints
 * the gateway's JSON error and returns the CLI's exit code. */
static int upgrade(struct tls_stream *s, const struct client *c, const char *name, const char *body,
		   struct buf *rest)
{
	char head[1024];
	os_error err = { 0 };
	int n = snprintf(head, sizeof head,
			 "POST /v1/sandboxes/%s/exec HTTP/1.1\r\nHost: openshell\r\n"
			 "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nUpgrade: " EXECFRAME_UPGRADE
			 "\r\nConnection: Upgrade\r\n\r\n",
			 name, c->token, strlen(body));
	if (n < 0 || (size_t)n >= sizeof head ||
	    tls_stream_write_all(s, head, (size_t)n, &err) < 0 ||
	    tls_stream_write_all(s, body, strlen(body), &err) < 0)
		return cli_fail("exec: sending the request to the gateway failed%s%s",
				err.msg[0] ? ": " : "", err.msg);
	char chunk[16384]; /* a whole TLS record, so none stays pending */
	const char *end = NULL;
	while (!end) {
		ssize_t r = tls_stream_read(s, chunk, sizeof chunk, &err);
		if (r < 0 && (err.code == EINTR || err.code == EAGAIN))
			continue;
		if (r < 0) /* a TLS alert (no or a refused client certificate) lands here */
			return cli_fail("exec: %s", err.msg);
		if (r == 0 || buf_append(rest, chunk, (size_t)r, NULL) < 0)
			break;
		end = memmem(rest->data, rest->len, "\r\n\r\n", 4);
	}
	if (!end)
		return cli_fail("exec: the gateway closed the connection without an answer");
	if (rest->len >= 12 && !strncmp(rest->data, "HTTP/1.1 101", 12)) {
		buf_consume(rest, (size_t)(end + 4 - rest->data));
		return 0;
	}
	/* An error answer: its JSON body says what went wrong. */
	while (1) {
		ssize_t r = tls_stream_read(s, chunk, sizeof chunk, &err);
		if (r < 0 && (err.code == EINTR || err.code == EAGAIN))
			continue;
		if (r <= 0 || buf_append(rest, chunk, (size_t)r, NULL) < 0)
			break;
	}
	end = memmem(rest->data, rest->len, "\r\n\r\n", 4);
	_cleanup_json_ json_t *j =
		json_loadb(end + 4, rest->len - (size_t)(end + 4 - rest->data), 0, NULL);
	const char *msg = json_string_value(json_object_get(j, "message"));
	return cli_fail("%s", msg ? msg : "exec refused by the gateway");
}

struct term {
	bool raw;
	struct termios saved;
};

static void term_raw(struct term *t)
{
	struct termios raw;
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->saved) < 0)
		return;
	raw = t->saved;
	cfmakeraw(&raw);
	t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
}

static void term_restore(struct term *t)
{
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
}

static void win_size(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws = { 0 };
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
		ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	*rows = ws.ws_row;
	*cols = ws.ws_col;
}

static int send_frame(struct tls_stream *s, uint8_t type, const void *p, size_t n)
{
	struct buf b;
	buf_init(&b, EXECFRAME_MAX_PAYLOAD + EXECFRAME_HEAD);
	int rc = execframe_put(&b, type, p, n, NULL) < 0
			 ? -1
			 : tls_stream_write_all(s, b.data, b.len, NULL);
	buf_free(&b);
	return rc;
}

/* Handles the frames in in; returns -1 to go on, else the exit code. */
static int take_frames(struct buf *in)
{
	struct execframe f;
	long n;
	os_error err = { 0 };
	while ((n = execframe_take((const uint8_t *)in->data, in->len, &f, &err)) > 0) {
		uint32_t code;
		switch (f.type) {
		case EXECFRAME_STDOUT:
		case EXECFRAME_STDERR:
			fd_write_all(f.type == EXECFRAME_STDOUT ? STDOUT_FILENO : STDERR_FILENO,
				     f.payload, f.len, NULL);
			break;
		case EXECFRAME_EXIT:
			if (execframe_u32(&f, &code) < 0)
				return cli_fail("exec: malformed exit frame");
			return code > 255 ? 255 : (int)code;
		case EXECFRAME_ERROR:
			fprintf(stderr, "openshell: %.*s\n", (int)f.len, (const char *)f.payload);
			return EXIT_NOT_STARTED;
		default:
			return cli_fail("exec: unexpected frame '%c' from the sandbox", f.type);
		}
		buf_consume(in, (size_t)n);
	}
	if (n < 0)
		return cli_fail("%s", err.msg);
	return -1;
}

static int pump(struct tls_stream *s, struct buf *in, bool tty)
{
	os_error err = { 0 };
	bool stdin_open = true;
	char chunk[65536];
	for (;;) {
		int code = take_frames(in);
		if (code >= 0)
			return code;
		if (winch && tty) {
			winch = 0;
			uint16_t r, c;
			win_size(&r, &c);
			struct buf b;
			buf_init(&b, 64);
			execframe_put_resize(&b, r, c, NULL);
			tls_stream_write_all(s, b.data, b.len, NULL);
			buf_free(&b);
		}
		struct pollfd pf[2] = { { .fd = s->fd, .events = POLLIN },
					{ .fd = stdin_open ? STDIN_FILENO : -1,
					  .events = POLLIN } };
		bool pending = tls_stream_pending(s); /* decrypted already: poll cannot see it */
		if (poll(pf, 2, pending ? 0 : -1) < 0) {
			if (errno == EINTR)
				continue;
			return cli_fail("exec: poll: %s", strerror(errno));
		}
		if (pf[1].revents) {
			ssize_t r = read(STDIN_FILENO, chunk, sizeof chunk);
			if (r < 0 && errno == EINTR)
				continue;
			if (r > 0 && send_frame(s, EXECFRAME_STDIN, chunk, (size_t)r) < 0)
				return cli_fail("exec: the connection to the sandbox was lost");
			if (r <= 0) {
				stdin_open = false;
				send_frame(s, EXECFRAME_STDIN_EOF, NULL, 0);
			}
		}
		if (pf[0].revents || pending) {
			ssize_t r = tls_stream_read(s, chunk, sizeof chunk, &err);
			if (r < 0 && (err.code == EINTR || err.code == EAGAIN))
				continue;
			if (r <= 0)
				return cli_fail("exec: the connection to the sandbox was lost "
						"before the command's exit status arrived%s%s",
						r < 0 ? ": " : "", r < 0 ? err.msg : "");
			if (buf_append(in, chunk, (size_t)r, NULL) < 0)
				return cli_fail("exec: frame over the size limit");
		}
	}
}

static int run_exec(struct cli *cli, const char *name, json_t *command, bool tty)
{
	char seg[256];
	os_error err = { 0 };
	if (cli_segment(seg, sizeof seg, name) < 0)
		return CLI_USAGE;
	uint16_t rows = 0, cols = 0;
	if (tty)
		win_size(&rows, &cols);
	_cleanup_json_ json_t *body = json_pack("{s:O, s:b, s:i, s:i}", "command", command, "tty",
						tty, "rows", rows, "cols", cols);
	_cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!text)
		return cli_fail("exec: out of memory");
	char host[256] = "";
	/* Straight to the gateway: a health call first would cost a round trip
	 * on every exec. Only when nothing answers is a local one started. */
	_cleanup_close_ int fd = gw_dial(&cli->client, host, sizeof host, &err);
	if (fd < 0) {
		os_error first = err;
		if (client_ensure(&cli->client, &err) < 0)
			return cli_fail("%s", err.code == ECONNREFUSED ? first.msg : err.msg);
		fd = gw_dial(&cli->client, host, sizeof host, &err);
	}
	if (fd < 0)
		return cli_fail("%s", err.msg);
	struct tls_stream s = { .fd = fd };
	if (str_has_prefix(cli->client.url, "https://") &&
	    tls_stream_start(&s, fd, &cli->client.tls, host, &err) < 0)
		return cli_fail("exec: %s", err.msg);
	struct buf in;
	buf_init(&in, EXECFRAME_MAX_PAYLOAD + HEAD_MAX);
	int rc = upgrade(&s, &cli->client, seg, text, &in);
	if (rc != 0) {
		tls_stream_end(&s);
		buf_free(&in);
		return rc;
	}
	struct term t = { 0 };
	if (tty) {
		signal(SIGWINCH, on_winch);
		term_raw(&t);
	}
	signal(SIGPIPE, SIG_IGN);
	rc = pump(&s, &in, tty);
	tls_stream_end(&s);
	term_restore(&t);
	buf_free(&in);
	return rc;
}

int cmd_exec(struct cli *cli, int argc, char **argv)
{
	bool tty = false;
	const char *name = NULL;
	int i = 0;
	/* As docker users type it: -i, -t, -it, and NAME CMD... with or without
	 * "--". stdin is always forwarded, so -i only says so. */
	for (; i < argc && strcmp(argv[i], "--") != 0 && !name; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--tty") || !strcmp(a, "-t") || !strcmp(a, "-it") ||
		    !strcmp(a, "-ti"))
			tty = true;
		else if (!strcmp(a, "--interactive") || !strcmp(a, "-i"))
			continue;
		else if (a[0] != '-')
			name = a;
		else
			return cli_usage("sandbox exec: unexpected %s", a);
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (!name || i >= argc)
		return cli_usage("usage: openshell sandbox exec [-i] [-t] NAME [--] CMD [ARG...]");
	_cleanup_json_ json_t *cmd = json_array();
	for (; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	return run_exec(cli, name, cmd, tty);
}

int cmd_connect(struct cli *cli, int argc, char **argv)
{
	if (argc != 1)
		return cli_usage("usage: openshell sandbox connect NAME");
	/* The richest shell the image has, as a login shell. */
	_cleanup_json_ json_t *cmd =
		json_pack("[s, s, s]", "/bin/sh", "-c",
			  "if [ -x /bin/bash ]; then exec /bin/bash -l; fi; exec /bin/sh -l");
	return run_exec(cli, argv[0], cmd, true);
}
