/* inpod_agent.c - start the agent through openshell-sandbox inside the
 * sandbox namespace, and stop it. The launcher itself already runs in the
 * namespace (setns before exec) and is told the same namespace in its launch
 * spec; the agent is "running" only after the launcher reported exec. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "buf.h"
#include "cleanup.h"
#include "fdutil.h"
#include "inpod.h"
#include "json.h"
#include "launcher_env.h"
#include "log.h"
#include "spawn.h"

/* Fixed fd numbers in the launcher: spec, status, network namespace. */
enum { CHILD_SPEC_FD = 3, CHILD_STATUS_FD = 4, CHILD_NETNS_FD = 5 };
#define STATUS_CAP (64 * 1024)
#define STATUS_TIMEOUT_MS 30000

__attribute__((noreturn)) static void die_child(const char *what)
{
	log_error("starting the launcher: %s: %s", what, strerror(errno));
	_exit(125);
}

__attribute__((noreturn)) static void child_exec(const struct inpod *p, char *const envp[],
						 pid_t parent, int spec_fd, int status_fd)
{
	/* With the agent's own stdio the fds start at 0; the numbers of the
	 * spec, status and netns fds stay the same either way. */
	const int fds[] = {
		p->stdio[0], p->stdio[1], p->stdio[2], spec_fd, status_fd, p->netns_fd
	};
	const size_t skip = p->has_stdio ? 0 : 3;
	char *const argv[] = { (char *)p->launcher, "--spec-fd", "3", "--status-fd", "4", NULL };
	const struct spawn_child c = {
		.path = p->launcher,
		.argv = argv,
		.envp = envp,
		.fds = fds + skip,
		.n_fds = ARRAY_SIZE(fds) - skip,
		.first_fd = (int)skip,
		.parent = parent,
		.netns_fd = p->netns_fd,
	};
	const char *what = "exec";
	spawn_child_exec(&c, &what);
	die_child(what);
}

/* Reads the launcher's status lines until EOF (exec done, or launcher gone). */
static int read_status(int fd, struct buf *out, os_error *err)
{
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, STATUS_TIMEOUT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return os_error_set(err, ETIMEDOUT, "launcher status: %s",
					    n == 0 ? "no answer within 30 s" : strerror(errno));
		char chunk[4096];
		ssize_t r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return os_error_errno(err, "reading launcher status");
		if (r == 0)
			return 0;
		if (buf_append(out, chunk, (size_t)r, err) < 0)
			return os_error_prefix(err, "launcher status");
	}
}

/* Interprets the status lines: 0 when the last progress was exec and no failure came. */
static int judge_status(const char *text, os_error *err)
{
	bool exec_ok = false;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		_cleanup_json_ json_t *j =
			len ? json_parse_strict(line, len, STATUS_CAP, NULL) : NULL;
		const char *step = NULL, *msg = NULL;
		if (j && json_get_string(j, "step", false, &step, NULL) >= 0 && step &&
		    json_get_string(j, "message", false, &msg, NULL) == 0 && msg)
			return os_error_set(err, EPERM, "launcher step %s failed: %s", step, msg);
		if (j && step && strcmp(step, "exec") == 0 &&
		    json_is_true(json_object_get(j, "ok")))
			exec_ok = true;
		line = nl ? nl + 1 : NULL;
	}
	if (!exec_ok)
		return os_error_set(err, EPIPE, "launcher exited before starting the agent");
	return 0;
}

static int spawn(struct inpod *p, const char *doc, int *status_fd, os_error *err)
{
	int spec_pipe[2], status_pipe[2];
	if (pipe2(spec_pipe, O_CLOEXEC) < 0)
		return os_error_errno(err, "spec pipe");
	if (pipe2(status_pipe, O_CLOEXEC) < 0) {
		close(spec_pipe[0]);
		close(spec_pipe[1]);
		return os_error_errno(err, "status pipe");
	}
	struct launcher_env env;
	launcher_env_init(&env);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		child_exec(p, env.envp, parent, spec_pipe[0], status_pipe[1]);
	close(spec_pipe[0]);
	close(status_pipe[1]);
	if (pid < 0) {
		close(spec_pipe[1]);
		close(status_pipe[0]);
		return os_error_errno(err, "fork");
	}
	p->agent_pid = pid; /* owned from here: inpod_stop_agent kills and reaps it */
	p->agent_pidfd = pidfd_open(pid, 0);
	int rc = fd_write_all(spec_pipe[1], doc, strlen(doc), err);
	close(spec_pipe[1]);
	if (rc == 0 && p->agent_pidfd < 0)
		rc = os_error_errno(err, "pidfd_open");
	if (rc < 0) {
		close(status_pipe[0]);
		return -1;
	}
	*status_fd = status_pipe[0];
	return 0;
}

int inpod_start_agent(void *state, const json_t *launch_spec, os_error *err)
{
	struct inpod *p = state;
	if (!p->launcher[0])
		return os_error_set(err, EINVAL, "no launcher (openshell-sandbox) configured");
	_cleanup_json_ json_t *spec = json_deep_copy(launch_spec);
	if (!spec || !json_is_object(spec) ||
	    json_object_set_new(spec, "netns", json_integer(CHILD_NETNS_FD)) < 0)
		return os_error_set(err, EINVAL, "launch spec must be a JSON object");
	_cleanup_free_ char *doc = json_to_string(spec);
	if (!doc)
		return os_error_set(err, ENOMEM, "serialising the launch spec");
	_cleanup_close_ int status_fd = -1;
	if (spawn(p, doc, &status_fd, err) < 0) {
		inpod_stop_agent(p);
		return -1;
	}
	_cleanup_buf_ struct buf status;
	buf_init(&status, STATUS_CAP);
	if (read_status(status_fd, &status, err) < 0 ||
	    judge_status(status.data ? status.data : "", err) < 0) {
		inpod_stop_agent(p);
		return -1;
	}
	return 0;
}

int inpod_agent_stdio(void *state, const int fds[3], os_error *err)
{
	struct inpod *p = state;
	for (int i = 0; i < 3; i++)
		if (fds[i] < 0)
			return os_error_set(err, EBADF, "agent stdio: fd %d is not open", i);
	memcpy(p->stdio, fds, sizeof(p->stdio));
	p->has_stdio = true;
	return 0;
}

int inpod_agent_fd(void *state)
{
	const struct inpod *p = state;
	return p->agent_pidfd;
}

int inpod_reap_agent(void *state, int *wait_status, os_error *err)
{
	struct inpod *p = state;
	if (p->agent_reaped)
		return os_error_set(err, ECHILD, "agent already reaped");
	pid_t r;
	while ((r = waitpid(p->agent_pid, wait_status, WNOHANG)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return os_error_errno(err, "waitpid agent %d", (int)p->agent_pid);
	if (r == 0)
		return os_error_set(err, EAGAIN, "agent %d still running", (int)p->agent_pid);
	p->agent_reaped = true;
	return 0;
}

void inpod_stop_agent(struct inpod *p)
{
	if (p->agent_pid > 0 && !p->agent_reaped) {
		/* Through the pidfd when we have one: immune to pid reuse. */
		if (p->agent_pidfd >= 0)
			pidfd_send_signal(p->agent_pidfd, SIGKILL, NULL, 0);
		else
			kill(p->agent_pid, SIGKILL);
		while (waitpid(p->agent_pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->agent_reaped = true;
	}
	if (p->agent_pidfd >= 0) {
		close(p->agent_pidfd);
		p->agent_pidfd = -1;
	}
}
