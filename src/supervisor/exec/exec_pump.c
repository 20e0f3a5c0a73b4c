/* exec_pump.c - the exec relay process (see exec.h): starts the command
 * through openshell-sandbox with the sandbox's pidfd to join, then moves
 * bytes: stdin frames to the command, its stdout/stderr (or its terminal)
 * back as frames, and its exit status last. A blocking, single-purpose
 * process: a slow client slows the command, never the supervisor. */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "execframe.h"
#include "fdutil.h"
#include "launcher_env.h"
#include "spawn.h"

#define CHUNK 65536
#define STDIN_PENDING_MAX (1u << 20)

struct pump {
	struct exec_sock sock;
	int in_w; /* command's stdin (pipe or pty master); -1 once closed */
	int out_r, err_r; /* command's stdout/stderr (tty: out_r is the master) */
	int launcher_pidfd; /* agent: the fd the exit status arrives on */
	pid_t launcher; /* -1 for the agent's own stdio: nothing of ours to kill */
	bool tty, stdin_eof;
	bool tee; /* output also goes to our fds 1/2 (the supervisor's log) */
	struct buf from_client; /* undecoded bytes from the socket */
	struct buf stdin_pending;
	struct buf frame; /* scratch for outgoing frames */
};

static void stop_command(struct pump *p)
{
	if (p->launcher > 0)
		kill(p->launcher, SIGKILL);
}

__attribute__((noreturn)) static void fail(struct pump *p, const char *what)
{
	char msg[512];
	snprintf(msg, sizeof msg, "exec: %s: %s", what, strerror(errno));
	buf_reset(&p->frame);
	execframe_put(&p->frame, EXECFRAME_ERROR, msg, strlen(msg), NULL);
	exec_sock_write_all(&p->sock, p->frame.data, p->frame.len);
	stop_command(p);
	_exit(125);
}

static void send_frame(struct pump *p, uint8_t type, const void *data, size_t len)
{
	buf_reset(&p->frame);
	if (execframe_put(&p->frame, type, data, len, NULL) < 0 ||
	    exec_sock_write_all(&p->sock, p->frame.data, p->frame.len) < 0) {
		/* The client is gone: nobody is left to see the command. */
		stop_command(p);
		_exit(0);
	}
}

__attribute__((noreturn)) static void launcher_child(const struct exec_pump_args *a,
						     char *const envp[], pid_t parent, int in,
						     int out, int err, int spec_r)
{
	/* 0-2 stdio, 3 EXEC_JOIN_FD, 4 EXEC_SPEC_FD */
	const int fds[] = { in, out, err, a->join_pidfd, spec_r };
	char *const argv[] = { (char *)a->launcher, "--spec-fd", "4", NULL };
	const struct spawn_child c = {
		.path = a->launcher,
		.argv = argv,
		.envp = envp,
		.fds = fds,
		.n_fds = ARRAY_SIZE(fds),
		.first_fd = 0,
		.parent = parent,
		.new_session = a->tty,
		.netns_fd = -1,
	};
	const char *what = NULL;
	spawn_child_exec(&c, &what);
	_exit(what == a->launcher ? 127 : 125); /* 127: execve itself failed */
}

static void start(struct pump *p, const struct exec_pump_args *a)
{
	int child[3], parent[3], spec[2];
	os_error why = { 0 };
	if (pipe2(spec, O_CLOEXEC) < 0)
		fail(p, "spec pipe");
	if (exec_stdio_open(a->tty, a->rows, a->cols, child, parent, &why) < 0) {
		errno = why.code;
		fail(p, why.msg);
	}
	struct launcher_env env;
	launcher_env_init(&env);
	pid_t parent_pid = getpid();
	p->launcher = fork();
	if (p->launcher < 0)
		fail(p, "fork");
	if (p->launcher == 0)
		launcher_child(a, env.envp, parent_pid, child[0], child[1], child[2], spec[0]);
	close(spec[0]);
	close(child[0]);
	if (!a->tty) {
		close(child[1]);
		close(child[2]);
	}
	close(a->join_pidfd);
	p->launcher_pidfd = pidfd_open(p->launcher, 0);
	if (p->launcher_pidfd < 0)
		fail(p, "pidfd of the launcher");
	if (fd_write_all(spec[1], a->spec, strlen(a->spec), NULL) < 0)
		fail(p, "handing the launcher its spec");
	close(spec[1]);
	p->in_w = parent[0];
	p->out_r = parent[1];
	p->err_r = parent[2];
	fd_set_nonblock(p->in_w, true, NULL);
}

/* The agent's own stdio, already open: nothing to start. */
static void adopt(struct pump *p, const struct exec_pump_args *a)
{
	p->in_w = a->agent_fds[0];
	p->out_r = a->agent_fds[1];
	p->err_r = a->agent_fds[2];
	p->launcher_pidfd = a->end_fd;
	p->launcher = -1;
	p->tee = true;
	fd_set_nonblock(p->in_w, true, NULL);
}

/* Returns false once the client sent something we cannot follow. */
static bool take_client_frames(struct pump *p)
{
	struct execframe f;
	long n;
	os_error err = { 0 };
	while ((n = execframe_take((const uint8_t *)p->from_client.data, p->from_client.len, &f,
				   &err)) > 0) {
		uint16_t rows, cols;
		if (f.type == EXECFRAME_STDIN && !p->stdin_eof) {
			if (buf_append(&p->stdin_pending, f.payload, f.len, NULL) < 0)
				return false;
		} else if (f.type == EXECFRAME_STDIN_EOF) {
			p->stdin_eof = true;
			/* A terminal has no half-close: EOF is the VEOF character. */
			if (p->tty && buf_append(&p->stdin_pending, "\x04", 1, NULL) < 0)
				return false;
		} else if (execframe_resize(&f, &rows, &cols) == 0) {
			if (p->tty)
				ioctl(p->out_r, TIOCSWINSZ,
				      &(struct winsize){ .ws_row = rows, .ws_col = cols });
		} else {
			return false;
		}
		buf_consume(&p->from_client, (size_t)n);
	}
	return n == 0;
}

static void write_stdin(struct pump *p)
{
	while (p->in_w >= 0 && p->stdin_pending.len > 0) {
		ssize_t n = write(p->in_w, p->stdin_pending.data, p->stdin_pending.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) { /* the command closed its stdin: drop the rest */
			buf_reset(&p->stdin_pending);
			break;
		}
		buf_consume(&p->stdin_pending, (size_t)n);
	}
	if (p->in_w >= 0 && p->stdin_eof && p->stdin_pending.len == 0 && !p->tty) {
		close(p->in_w);
		p->in_w = -1;
	}
}

/* One read from an output fd into a frame; false at EOF (a terminal
 * reports EIO once every slave fd is closed). */
static bool forward(struct pump *p, int fd, uint8_t type)
{
	static char chunk[CHUNK];
	ssize_t n;
	do
		n = read(fd, chunk, sizeof chunk);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return true;
	if (n <= 0)
		return false;
	if (p->tee)
		fd_write_all(type == EXECFRAME_STDOUT ? STDOUT_FILENO : STDERR_FILENO, chunk,
			     (size_t)n, NULL);
	send_frame(p, type, chunk, (size_t)n);
	return true;
}

/* The command's exit status: the launcher's, or what the supervisor wrote
 * for its agent (1 when it went away without a word). */
static uint32_t exit_code(struct pump *p)
{
	if (p->launcher < 0) {
		uint8_t be[4];
		size_t got = 0;
		while (got < sizeof be) {
			ssize_t n = read(p->launcher_pidfd, be + got, sizeof be - got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return 1;
			got += (size_t)n;
		}
		return (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 | (uint32_t)be[2] << 8 | be[3];
	}
	siginfo_t si = { 0 };
	waitid(P_PIDFD, (id_t)p->launcher_pidfd, &si, WEXITED);
	return si.si_code == CLD_EXITED ? (uint32_t)si.si_status : 128u + (uint32_t)si.si_status;
}

/* The command ended: send what its output still holds, then the code. */
__attribute__((noreturn)) static void finish(struct pump *p)
{
	uint32_t code = exit_code(p);
	int fds[2] = { p->out_r, p->err_r };
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		fd_set_nonblock(fds[i], true, NULL);
		while (forward(p, fds[i], i == 0 ? EXECFRAME_STDOUT : EXECFRAME_STDERR)) {
			struct pollfd pf = { .fd = fds[i], .events = POLLIN };
			if (poll(&pf, 1, 0) != 1)
				break;
		}
	}
	buf_reset(&p->frame);
	execframe_put_u32(&p->frame, EXECFRAME_EXIT, code, NULL);
	exec_sock_write_all(&p->sock, p->frame.data, p->frame.len);
	exec_sock_end(&p->sock);
	_exit(0);
}

void exec_pump_main(const struct exec_pump_args *a)
{
	struct pump p = { .sock = a->sock, .in_w = -1, .out_r = -1, .err_r = -1, .tty = a->tty };
	buf_init(&p.from_client, EXECFRAME_MAX_PAYLOAD + 2 * EXECFRAME_HEAD + 65536);
	buf_init(&p.stdin_pending, STDIN_PENDING_MAX + EXECFRAME_MAX_PAYLOAD);
	buf_init(&p.frame, EXECFRAME_MAX_PAYLOAD + EXECFRAME_HEAD);
	fd_set_nonblock(p.sock.fd, false, NULL);
	if (a->agent)
		adopt(&p, a);
	else
		start(&p, a);
	if (a->early_len && buf_append(&p.from_client, a->early, a->early_len, NULL) < 0)
		fail(&p, "early frames");
	for (;;) {
		if (!take_client_frames(&p)) {
			errno = EPROTO;
			fail(&p, "the client sent a frame this relay does not take");
		}
		write_stdin(&p);
		/* Stop reading the client while its stdin has not drained. */
		bool take = p.stdin_pending.len < STDIN_PENDING_MAX;
		/* Bytes OpenSSL already decrypted never wake poll: look, don't wait. */
		bool buffered = take && exec_sock_pending(&p.sock);
		struct pollfd pf[5] = {
			{ .fd = p.launcher_pidfd, .events = POLLIN },
			{ .fd = take ? p.sock.fd : -1, .events = POLLIN },
			{ .fd = p.out_r, .events = POLLIN },
			{ .fd = p.err_r, .events = POLLIN },
			{ .fd = p.stdin_pending.len ? p.in_w : -1, .events = POLLOUT },
		};
		if (poll(pf, 5, buffered ? 0 : -1) < 0) {
			if (errno == EINTR)
				continue;
			fail(&p, "poll");
		}
		if (buffered)
			pf[1].revents |= POLLIN;
		if (pf[2].revents && !forward(&p, p.out_r, EXECFRAME_STDOUT)) {
			if (!p.tty)
				close(p.out_r);
			p.out_r = p.tty ? p.out_r : -1;
			if (p.tty) /* the terminal is done; keep the fd for resize, stop polling */
				pf[2].fd = -1;
		}
		if (pf[3].revents && !forward(&p, p.err_r, EXECFRAME_STDERR)) {
			close(p.err_r);
			p.err_r = -1;
		}
		if (pf[1].revents) {
			char chunk[CHUNK];
			ssize_t n = exec_sock_read(&p.sock, chunk, sizeof chunk);
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				stop_command(&p); /* the client left */
				_exit(0);
			}
			if (n > 0 && buf_append(&p.from_client, chunk, (size_t)n, NULL) < 0)
				fail(&p, "buffering client frames");
		}
		if (pf[0].revents)
			finish(&p);
	}
}
