/* cmd_forward.c - `openshell sandbox port-forward NAME LOCAL:REMOTE`
 * (docs/files.md): a listener on this host's 127.0.0.1:LOCAL; each
 * connection is one upgraded connection through the gateway to the
 * sandbox's supervisor, which connects to 127.0.0.1:REMOTE inside the
 * sandbox's network namespace. One child process per connection (a slow
 * one never holds another); the parent watches the sandbox and stops
 * everything, with a message, once it no longer runs. Ctrl-C stops it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "execframe.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"
#include "relay_conn.h"

#define CONNS_MAX 64
#define WATCH_MS 1000

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int parse_ports(const char *spec, uint16_t *local, uint16_t *remote)
{
	const char *colon = strchr(spec, ':');
	uint64_t l, r;
	if (!colon || parse_u64(spec, (size_t)(colon - spec), 1, 65535, &l, NULL) < 0 ||
	    parse_u64_str(colon + 1, 1, 65535, &r, NULL) < 0)
		return -1;
	*local = (uint16_t)l;
	*remote = (uint16_t)r;
	return 0;
}

static int listen_local(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(fd, 64) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The sandbox's frames to the local connection; -1 to go on, else done
 * (1: the sandbox could not be reached, its message printed). */
static int take_frames(struct buf *in, int local, uint16_t remote)
{
	struct execframe f;
	long n;
	while ((n = execframe_take((const uint8_t *)in->data, in->len, &f, NULL)) > 0) {
		if (f.type == EXECFRAME_STDOUT) {
			if (fd_write_all(local, f.payload, f.len, NULL) < 0)
				return 0; /* the local client left */
		} else if (f.type == EXECFRAME_EXIT) {
			return 0;
		} else if (f.type == EXECFRAME_ERROR) {
			fprintf(stderr, "openshell: %.*s\n", (int)f.len, (const char *)f.payload);
			return 1;
		} else {
			fprintf(stderr, "openshell: port-forward to %u: unexpected frame '%c'\n",
				remote, f.type);
			return 1;
		}
		buf_consume(in, (size_t)n);
	}
	return n < 0 ? 1 : -1;
}

struct carrier {
	struct tls_stream s;
	struct buf in; /* frames from the sandbox, undecoded */
	int local;
	uint16_t remote;
	int done; /* -1 while the connection lasts, else take_frames' answer */
};

/* One read from the gateway, its frames passed on; false once it ended. */
static bool take_gateway(struct carrier *c)
{
	char chunk[16384];
	os_error err = { 0 };
	ssize_t r = tls_stream_read(&c->s, chunk, sizeof chunk, &err);
	if (r < 0 && (err.code == EINTR || err.code == EAGAIN))
		return true;
	if (r <= 0 || buf_append(&c->in, chunk, (size_t)r, NULL) < 0) {
		c->done = 0; /* the sandbox went away: its stop is the parent's to say */
		return false;
	}
	c->done = take_frames(&c->in, c->local, c->remote);
	return c->done < 0;
}

/* Sends one frame once the connection can take it, passing on what the
 * sandbox sends meanwhile: blocked in a write while the gateway waits for
 * this side to read, both directions would stall (each side of the relay
 * stops reading while the other owes it a megabyte). */
static void send_servicing(struct carrier *c, uint8_t type, const void *p, size_t n)
{
	while (c->done < 0) {
		struct pollfd pf = { .fd = c->s.fd, .events = POLLIN | POLLOUT };
		bool pending = tls_stream_pending(&c->s);
		if (!pending && poll(&pf, 1, -1) < 0 && errno != EINTR) {
			c->done = 0;
			return;
		}
		if ((pending || (pf.revents & (POLLIN | POLLHUP | POLLERR))) && !take_gateway(c))
			return;
		if (pf.revents & POLLOUT) {
			if (relay_send_frame(&c->s, type, p, n) < 0)
				c->done = 0;
			return;
		}
	}
}

/* One forwarded connection, in its own process. */
static int carry(struct cli *cli, const char *name, const char *seg, int local, uint16_t remote)
{
	char body[64];
	snprintf(body, sizeof body, "{\"port\":%u}", remote);
	struct carrier c = { .s.fd = -1, .local = local, .remote = remote, .done = -1 };
	buf_init(&c.in, EXECFRAME_MAX_PAYLOAD + 65536);
	if (relay_open(cli, name, seg, "port-forward", body, &c.s, &c.in) != 0)
		return CLI_FAIL;
	bool local_open = true;
	char chunk[16384]; /* small frames: a write that fits never blocks for long */
	c.done = take_frames(&c.in, local, remote);
	while (c.done < 0) {
		struct pollfd pf[2] = { { .fd = c.s.fd, .events = POLLIN },
					{ .fd = local_open ? local : -1, .events = POLLIN } };
		bool pending = tls_stream_pending(&c.s);
		if (poll(pf, 2, pending ? 0 : -1) < 0 && errno != EINTR)
			break;
		if ((pf[0].revents || pending) && !take_gateway(&c))
			break;
		if (pf[1].revents) {
			ssize_t r = read(local, chunk, sizeof chunk);
			if (r > 0)
				send_servicing(&c, EXECFRAME_STDIN, chunk, (size_t)r);
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
				local_open = false; /* half-close: the answer may still come */
				send_servicing(&c, EXECFRAME_STDIN_EOF, NULL, 0);
			}
		}
	}
	tls_stream_end(&c.s);
	close(c.s.fd);
	buf_free(&c.in);
	return c.done > 0 ? CLI_FAIL : CLI_OK;
}

static void reap(pid_t *kids, int *n)
{
	pid_t p;
	while ((p = waitpid(-1, NULL, WNOHANG)) > 0)
		for (int i = 0; i < *n; i++)
			if (kids[i] == p)
				kids[i] = kids[--*n];
}

static void spawn(struct cli *cli, const char *name, const char *seg, int listener, int conn,
		  uint16_t remote, pid_t *kids, int *n)
{
	if (*n >= CONNS_MAX) {
		fprintf(stderr, "openshell: port-forward: %d connections already; refusing one\n",
			CONNS_MAX);
		close(conn);
		return;
	}
	pid_t p = fork();
	if (p == 0) {
		close(listener);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		_exit(carry(cli, name, seg, conn, remote));
	}
	close(conn);
	if (p > 0)
		kids[(*n)++] = p;
}

static int forward(struct cli *cli, const char *name, uint16_t local, uint16_t remote)
{
	char seg[256], why[OS_ERROR_MSG_MAX + 256];
	if (cli_segment(seg, sizeof seg, name) < 0)
		return CLI_USAGE;
	char path[512];
	long status = 0;
	snprintf(path, sizeof path, "/v1/sandboxes/%s", seg);
	_cleanup_json_ json_t *row = cli_api(cli, "GET", path, NULL, &status);
	if (!row) /* not found, or no gateway: said already */
		return CLI_FAIL;
	_cleanup_close_ int l = listen_local(local);
	if (l < 0)
		return cli_fail("port-forward: listening on 127.0.0.1:%u: %s", local,
				strerror(errno));
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	fprintf(stderr,
		"openshell: forwarding 127.0.0.1:%u to 127.0.0.1:%u in sandbox %s (Ctrl-C stops)\n",
		local, remote, name);
	pid_t kids[CONNS_MAX];
	int n = 0, rc = CLI_OK;
	int64_t checked = now_ms();
	while (!stop_signal) {
		struct pollfd pf = { .fd = l, .events = POLLIN };
		int r = poll(&pf, 1, WATCH_MS);
		reap(kids, &n);
		if (r == 1) {
			int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				spawn(cli, name, seg, l, c, remote, kids, &n);
		}
		if (now_ms() - checked >= WATCH_MS) {
			checked = now_ms();
			if (relay_what_happened(cli, name, seg, true, why, sizeof why)) {
				rc = cli_fail("port-forward closed: %s", why);
				break;
			}
		}
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGTERM);
	while (n > 0 && waitpid(-1, NULL, 0) > 0)
		n--;
	return rc;
}

int cmd_port_forward(struct cli *cli, int argc, char **argv)
{
	uint16_t local, remote;
	if (argc != 2 || parse_ports(argv[1], &local, &remote) < 0)
		return cli_usage("usage: openshell sandbox port-forward NAME LOCAL:REMOTE (ports "
				 "1..65535)");
	return forward(cli, argv[0], local, remote);
}
