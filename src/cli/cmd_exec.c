/* cmd_exec.c - `openshell sandbox exec [-i] [-t] NAME [--] CMD...` and
 * `openshell sandbox connect NAME`: one upgraded connection to the gateway
 * (docs/exec.md; TLS for https:// through tls_client.h) carrying stdin, stdout, stderr, terminal size and the exit
 * status as frames. The CLI exits with the command's status; 125 when the
 * command could not be started, 1 when the connection was lost. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "execframe.h"
#include "fdutil.h"
#include "gw_http.h"
#include "json.h"
#include "parse.h"
#include "relay_conn.h"

#define EXIT_NOT_STARTED 125
#define HEAD_MAX 65536
/* Frames on their way to the gateway: one stdin chunk, a resize, an EOF. */
#define OUT_MAX (65536 + 3 * EXECFRAME_HEAD + 64)

static volatile sig_atomic_t winch;

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
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

void cli_win_size(uint16_t *rows, uint16_t *cols)
{
	struct winsize ws = { 0 };
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
		ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws);
	*rows = ws.ws_row;
	*cols = ws.ws_col;
}

/* What the pump ends with besides an exit code: a message to print once the
 * terminal is back to normal (in raw mode a newline does not return the
 * cursor), and whether the connection was lost before the exit status. */
struct pump_end {
	os_error err;
	bool lost;
	bool mid_line; /* the last byte written to the terminal was not a newline */
};

static int pump_fail(struct pump_end *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int pump_fail(struct pump_end *e, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->err.msg, sizeof e->err.msg, fmt, ap);
	va_end(ap);
	return code;
}

/* Handles the frames in in; returns -1 to go on, else the exit code. */
static int take_frames(struct buf *in, struct pump_end *e)
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
			if (f.len)
				e->mid_line = f.payload[f.len - 1] != '\n';
			break;
		case EXECFRAME_EXIT:
			if (execframe_u32(&f, &code) < 0)
				return pump_fail(e, CLI_FAIL, "exec: malformed exit frame");
			return code > 255 ? 255 : (int)code;
		case EXECFRAME_ERROR:
			return pump_fail(e, EXIT_NOT_STARTED, "%.*s", (int)f.len,
					 (const char *)f.payload);
		default:
			return pump_fail(e, CLI_FAIL,
					 "exec: unexpected frame '%c' from the sandbox", f.type);
		}
		buf_consume(in, (size_t)n);
	}
	if (n < 0)
		return pump_fail(e, CLI_FAIL, "%s", err.msg);
	return -1;
}

static int lost(struct pump_end *e, const char *detail)
{
	e->lost = true;
	return pump_fail(e, CLI_FAIL,
			 "exec: the connection to the sandbox was lost before the command's "
			 "exit status arrived%s%s",
			 detail[0] ? ": " : "", detail);
}

/* Sends what out holds as far as the socket takes it now. */
static int flush_out(struct tls_stream *s, struct buf *out, os_error *err)
{
	while (out->len > 0) {
		ssize_t n = tls_stream_write_some(s, out->data, out->len, err);
		if (n <= 0)
			return (int)n;
		buf_consume(out, (size_t)n);
	}
	return 0;
}

/* Both directions at once on a non-blocking socket: stdin is read only
 * while what it gave is sent, and the socket is always read. A blocking
 * write of stdin would deadlock against a command whose output fills the
 * gateway's buffer towards us while we are not reading it. */
static int pump(struct tls_stream *s, struct buf *in, bool tty, struct pump_end *e)
{
	os_error err = { 0 };
	bool stdin_open = true;
	char chunk[65536];
	struct buf out;
	buf_init(&out, OUT_MAX);
	int code = -1;
	fd_set_nonblock(s->fd, true, NULL);
	while ((code = take_frames(in, e)) < 0) {
		if (winch && tty) {
			winch = 0;
			uint16_t r, c;
			cli_win_size(&r, &c);
			execframe_put_resize(&out, r, c, NULL);
		}
		if (flush_out(s, &out, &err) < 0) {
			code = lost(e, err.msg);
			break;
		}
		struct pollfd pf[2] = {
			{ .fd = s->fd, .events = POLLIN | (out.len ? POLLOUT : 0) },
			{ .fd = stdin_open && out.len == 0 ? STDIN_FILENO : -1, .events = POLLIN },
		};
		bool pending = tls_stream_pending(s); /* decrypted already: poll cannot see it */
		if (poll(pf, 2, pending ? 0 : -1) < 0) {
			if (errno == EINTR)
				continue;
			code = pump_fail(e, CLI_FAIL, "exec: poll: %s", strerror(errno));
			break;
		}
		if (pf[1].revents) {
			ssize_t r = read(STDIN_FILENO, chunk, sizeof chunk);
			if (r < 0 && errno == EINTR)
				continue;
			if (r > 0)
				execframe_put(&out, EXECFRAME_STDIN, chunk, (size_t)r, NULL);
			if (r <= 0) {
				stdin_open = false;
				execframe_put(&out, EXECFRAME_STDIN_EOF, NULL, 0, NULL);
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR) || pending) {
			ssize_t r = tls_stream_read(s, chunk, sizeof chunk, &err);
			if (r < 0 && (err.code == EINTR || err.code == EAGAIN))
				continue;
			if (r <= 0) {
				code = lost(e, r < 0 ? err.msg : "");
				break;
			}
			if (buf_append(in, chunk, (size_t)r, NULL) < 0) {
				code = pump_fail(e, CLI_FAIL, "exec: frame over the size limit");
				break;
			}
		}
	}
	fd_set_nonblock(s->fd, false, NULL);
	buf_free(&out);
	return code;
}

/* Says how the session ended when the status alone would not, then
 * returns rc. */
static int report_end(struct cli *cli, const char *name, const char *seg, bool tty,
		      const struct pump_end *e, int rc)
{
	char why[OS_ERROR_MSG_MAX + 600];
	/* A command killed by a signal may have died with its sandbox
	 * (deleted, stopped): the status alone would not say so. */
	if (!e->err.msg[0] && rc > 128) {
		const char *msg = relay_what_happened(cli, name, seg, false, why, sizeof why);
		if (msg)
			fprintf(stderr, "%sopenshell: %s\n", tty && e->mid_line ? "\n" : "", msg);
		return rc;
	}
	if (!e->err.msg[0])
		return rc;
	/* A terminal session's last output line may be unfinished: the
	 * message starts on a line of its own. */
	if (tty && e->mid_line)
		fputc('\n', stderr);
	const char *msg =
		e->lost ? relay_what_happened(cli, name, seg, true, why, sizeof why) : NULL;
	fprintf(stderr, "openshell: %s\n", msg ? msg : e->err.msg);
	return rc;
}

static int run_exec(struct cli *cli, const char *name, json_t *command, bool tty)
{
	char seg[256];
	if (cli_segment(seg, sizeof seg, name) < 0)
		return CLI_USAGE;
	uint16_t rows = 0, cols = 0;
	if (tty)
		cli_win_size(&rows, &cols);
	_cleanup_json_ json_t *body = json_pack("{s:O, s:b, s:i, s:i}", "command", command, "tty",
						tty, "rows", rows, "cols", cols);
	/* With a tty the command draws for this terminal: its TERM goes along
	 * (one the gateway would refuse is left out rather than failing). */
	const char *term = getenv("TERM");
	if (body && tty && execframe_term_ok(term))
		json_object_set_new(body, "term", json_string(term));
	_cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!text)
		return cli_fail("exec: out of memory");
	return cli_exec_stream(cli, name, "exec", text, tty);
}

int cli_exec_stream(struct cli *cli, const char *name, const char *action, const char *body,
		    bool tty)
{
	char seg[256];
	if (cli_segment(seg, sizeof seg, name) < 0)
		return CLI_USAGE;
	struct tls_stream s = { .fd = -1 };
	struct buf in;
	buf_init(&in, EXECFRAME_MAX_PAYLOAD + HEAD_MAX);
	int rc = relay_open(cli, name, seg, action, body, &s, &in);
	if (rc != 0) {
		buf_free(&in);
		return rc;
	}
	struct term t = { 0 };
	if (tty) {
		signal(SIGWINCH, on_winch);
		term_raw(&t);
	}
	signal(SIGPIPE, SIG_IGN);
	struct pump_end e = { 0 };
	rc = pump(&s, &in, tty, &e);
	tls_stream_end(&s);
	close(s.fd);
	term_restore(&t);
	buf_free(&in);
	return report_end(cli, name, seg, tty, &e, rc);
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
