/* cmd_files.c - `openshell sandbox upload NAME LOCAL [REMOTE]` and
 * `openshell sandbox download NAME REMOTE [LOCAL]` (docs/files.md): a file
 * or a directory tree as a transfer stream (xfer.h) over one upgraded
 * connection, streamed both ways (nothing is held whole in memory). The
 * sandbox's side is the launcher, confined like the agent; this side treats
 * what comes back as hostile too: it never follows or replaces a link and
 * keeps permission bits only. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "execframe.h"
#include "fdutil.h"
#include "json.h"
#include "relay_conn.h"
#include "xfer.h"

#define FRAME_DATA 65536
#define IN_MAX (EXECFRAME_MAX_PAYLOAD + 65536)

/* The frames from the sandbox side: its stderr is shown as it comes,
 * stdout goes to on_stdout, the status ends it. */
struct conv {
	struct tls_stream s;
	struct buf in; /* undecoded frames */
	struct buf out; /* stream bytes not yet sent as a frame */
	int code; /* -1 until the 'x' or 'E' frame */
	char error[OS_ERROR_MSG_MAX];
	int (*on_stdout)(struct conv *c, const uint8_t *p, size_t n, os_error *err);
	struct xfer_in *rx; /* download */
	struct buf summary; /* upload: the sandbox's summary line */
};

static int take_frames(struct conv *c, os_error *err)
{
	struct execframe f;
	long n = 0;
	while (c->code < 0 &&
	       (n = execframe_take((const uint8_t *)c->in.data, c->in.len, &f, err)) > 0) {
		uint32_t code;
		if (f.type == EXECFRAME_STDERR)
			fd_write_all(STDERR_FILENO, f.payload, f.len, NULL);
		else if (f.type == EXECFRAME_STDOUT && c->on_stdout(c, f.payload, f.len, err) < 0)
			return -1;
		else if (f.type == EXECFRAME_EXIT && execframe_u32(&f, &code) == 0)
			c->code = (int)(code > 255 ? 255 : code);
		else if (f.type == EXECFRAME_ERROR) {
			snprintf(c->error, sizeof c->error, "%.*s", (int)f.len, f.payload);
			c->code = 125;
		} else if (f.type != EXECFRAME_STDOUT)
			return os_error_set(err, EPROTO, "unexpected frame '%c' from the sandbox",
					    f.type);
		buf_consume(&c->in, (size_t)n);
	}
	return n < 0 ? -1 : 0;
}

/* One read from the connection into c->in; 0 at EOF. */
static int read_some(struct conv *c, os_error *err)
{
	char chunk[16384];
	for (;;) {
		ssize_t r = tls_stream_read(&c->s, chunk, sizeof chunk, err);
		if (r < 0 && (err->code == EINTR || err->code == EAGAIN))
			continue;
		if (r <= 0)
			return (int)r;
		if (buf_append(&c->in, chunk, (size_t)r, err) < 0)
			return -1;
		return take_frames(c, err) < 0 ? -1 : 1;
	}
}

/* Until the status arrives. */
static int wait_status(struct conv *c, os_error *err)
{
	while (c->code < 0) {
		int r = read_some(c, err);
		if (r < 0)
			return -1;
		if (r == 0)
			return os_error_set(err, EPIPE,
					    "the connection to the sandbox was lost before the "
					    "transfer ended");
	}
	return 0;
}

/* Upload: stream bytes go out as stdin frames; what the sandbox says
 * meanwhile (an early refusal) is read between frames, so a refused upload
 * stops at once instead of sending the rest into the void. */
static int flush(struct conv *c, os_error *err)
{
	if (c->out.len == 0)
		return 0;
	struct pollfd pf = { .fd = c->s.fd, .events = POLLIN };
	if ((tls_stream_pending(&c->s) || poll(&pf, 1, 0) == 1) && read_some(c, err) < 0)
		return -1;
	if (c->code >= 0)
		return os_error_set(err, ECANCELED, "refused by the sandbox");
	if (relay_send_frame(&c->s, EXECFRAME_STDIN, c->out.data, c->out.len) < 0)
		return os_error_set(err, EPIPE, "the connection to the sandbox was lost");
	buf_reset(&c->out);
	return 0;
}

static int sink_frames(void *user, const void *data, size_t len, os_error *err)
{
	struct conv *c = user;
	const char *p = data;
	while (len > 0) {
		size_t n = FRAME_DATA - c->out.len;
		n = n < len ? n : len;
		if (buf_append(&c->out, p, n, err) < 0 ||
		    (c->out.len == FRAME_DATA && flush(c, err) < 0))
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static void warn_stderr(void *user, const char *msg)
{
	(void)user;
	fprintf(stderr, "openshell: warning: %s\n", msg);
}

static int keep_summary(struct conv *c, const uint8_t *p, size_t n, os_error *err)
{
	return buf_append(&c->summary, p, n, err);
}

static int feed_download(struct conv *c, const uint8_t *p, size_t n, os_error *err)
{
	return xfer_in_feed(c->rx, p, n, err) < 0 ? -1 : 0;
}

static int conv_open(struct cli *cli, const char *name, const char *route, const char *path,
		     struct conv *c)
{
	char seg[256];
	if (cli_segment(seg, sizeof seg, name) < 0)
		return CLI_USAGE;
	_cleanup_json_ json_t *body = json_pack("{s:s}", "path", path);
	_cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (!text)
		return cli_fail("%s: out of memory", route);
	c->code = -1;
	buf_init(&c->in, IN_MAX);
	buf_init(&c->out, FRAME_DATA);
	buf_init(&c->summary, 2 * XFER_PATH_MAX);
	signal(SIGPIPE, SIG_IGN);
	int rc = relay_open(cli, name, seg, route, text, &c->s, &c->in);
	if (rc == 0 && take_frames(c, &(os_error){ 0 }) < 0)
		rc = cli_fail("%s: a malformed frame from the sandbox", route);
	return rc;
}

static void conv_close(struct conv *c)
{
	if (c->s.fd >= 0) {
		tls_stream_end(&c->s);
		close(c->s.fd);
		c->s.fd = -1;
	}
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->summary);
}

/* The sandbox's status: its own message was on stderr already. */
static int sandbox_verdict(const struct conv *c, const char *route)
{
	if (c->code > 0 && c->error[0])
		return cli_fail("%s: %s", route, c->error);
	if (c->code > 0)
		return cli_fail("%s failed in the sandbox (status %d)", route, c->code);
	return CLI_OK;
}

/* LOCAL's name in the stream: its last component ("." is the current
 * directory's own name). */
static int local_name(const char *local, char *name, size_t cap)
{
	char real[PATH_MAX];
	if (!realpath(local, real))
		return cli_fail("upload: %s: %s", local, strerror(errno));
	const char *b = strrchr(real, '/') + 1;
	if (!*b)
		return cli_fail("upload: %s: cannot upload the root directory", local);
	snprintf(name, cap, "%s", b);
	return 0;
}

static int upload(struct cli *cli, const char *name, const char *local, const char *remote)
{
	char as[XFER_NAME_MAX + 1];
	if (local_name(local, as, sizeof as) != 0)
		return CLI_FAIL;
	/* The user's own path may be a link (as cp follows its arguments);
	 * nothing inside a directory is followed. */
	_cleanup_close_ int fd = open(local, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return cli_fail("upload: %s: %s", local, strerror(errno));
	struct conv c = { .s.fd = -1, .on_stdout = keep_summary };
	int rc = conv_open(cli, name, "upload", remote, &c);
	if (rc != 0) {
		conv_close(&c);
		return rc;
	}
	os_error err = { 0 }, why = { 0 };
	struct xfer_out o = { .sink = sink_frames, .warn = warn_stderr, .user = &c };
	int sent = xfer_send(fd, as, local, &o, &err);
	if (sent == 0)
		sent = flush(&c, &err);
	bool refused = sent < 0 && err.code == ECANCELED;
	/* Even after a failure here: the sandbox sees the end and gives up. */
	if (!refused)
		relay_send_frame(&c.s, EXECFRAME_STDIN_EOF, NULL, 0);
	int waited = wait_status(&c, &why);
	if (sent < 0 && !refused)
		rc = cli_fail("upload: %s", err.msg);
	else if (waited < 0)
		rc = cli_fail("upload: %s", why.msg);
	else
		rc = sandbox_verdict(&c, "upload");
	if (rc == CLI_OK) {
		char *tab = memchr(c.summary.data, '\t', c.summary.len);
		printf("uploaded %llu file%s (%llu bytes) to %s:%.*s\n",
		       (unsigned long long)o.files, o.files == 1 ? "" : "s",
		       (unsigned long long)o.bytes, name, tab ? (int)(tab - c.summary.data) : 0,
		       c.summary.data);
	}
	conv_close(&c);
	return rc;
}

/* Where a download lands, as cp places it: into LOCAL when it is a
 * directory (under the sandbox's name), else as LOCAL itself. */
static int local_dest(const char *local, char *label, size_t cap, const char **name)
{
	struct stat st;
	*name = NULL;
	if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(label, cap, "%s", local);
		return open(local, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	static char copy[PATH_MAX], base[PATH_MAX];
	snprintf(copy, sizeof copy, "%s", local);
	snprintf(base, sizeof base, "%s", local);
	*name = basename(base);
	const char *dir = dirname(copy);
	snprintf(label, cap, "%s", dir);
	if (!xfer_name_ok(*name, strlen(*name))) {
		errno = EINVAL;
		return -1;
	}
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static int download(struct cli *cli, const char *name, const char *remote, const char *local)
{
	char label[PATH_MAX];
	const char *as;
	_cleanup_close_ int dir = local_dest(local, label, sizeof label, &as);
	if (dir < 0)
		return cli_fail("download: %s: %s", local, strerror(errno));
	struct xfer_in rx;
	xfer_in_init(&rx, dir, as, label);
	struct conv c = { .s.fd = -1, .on_stdout = feed_download, .rx = &rx };
	int rc = conv_open(cli, name, "download", remote, &c);
	os_error err = { 0 };
	if (rc == 0 && wait_status(&c, &err) < 0)
		rc = cli_fail("download: %s", err.msg);
	else if (rc == 0 && c.code == 0 && !xfer_in_done(&rx))
		rc = cli_fail("download: %s: the stream ended before its end", remote);
	else if (rc == 0)
		rc = sandbox_verdict(&c, "download");
	if (rc == CLI_OK)
		printf("downloaded %llu file%s (%llu bytes) from %s:%s\n",
		       (unsigned long long)rx.files, rx.files == 1 ? "" : "s",
		       (unsigned long long)rx.bytes, name, remote);
	xfer_in_free(&rx);
	conv_close(&c);
	return rc;
}

int cmd_upload(struct cli *cli, int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		return cli_usage("usage: openshell sandbox upload NAME LOCAL [REMOTE]");
	return upload(cli, argv[0], argv[1], argc == 3 ? argv[2] : ".");
}

int cmd_download(struct cli *cli, int argc, char **argv)
{
	if (argc < 2 || argc > 3)
		return cli_usage("usage: openshell sandbox download NAME REMOTE [LOCAL]");
	return download(cli, argv[0], argv[1], argc == 3 ? argv[2] : ".");
}
