/* local_proc.c - detached supervisor processes for the local driver (see
 * local_proc.h). Double fork: the gateway reaps the intermediate at once,
 * the monitor lives on in a new session (so a gateway crash or a Ctrl-C on
 * the CLI never takes sandboxes down) and is the supervisor's parent. */
#include "local_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "loop.h"
#include "parse.h"
#include "procfs.h"
#include "proctitle.h"

uint64_t local_proc_start_time(pid_t pid)
{
	struct procfs_stat st;
	if (procfs_stat_read(pid, &st, NULL) < 0)
		return 0;
	/* A zombie has exited: it is not running any more. */
	return st.state == 'Z' ? 0 : st.start_time;
}

static int write_small(const char *dir, const char *name, const char *text, enum file_durability d,
		       os_error *err)
{
	char path[4096];
	if (str_format(path, sizeof(path), err, "%s/%s", dir, name) < 0)
		return -1;
	const struct file_put f = { path, text };
	return file_write_atomic_set(&f, 1, 0600, d, err);
}

/* ARG_MAX is a quarter of the soft stack limit (and at most 6 MiB): 16 MiB
 * lets an agent command of 2 MiB (local_spec.c) pass the supervisor's exec
 * and the agent's beside their environments and flags. Best effort: a hard
 * limit below it leaves the usual one, and a long command then fails with
 * E2BIG at the exec. */
static void raise_stack_limit(void)
{
	struct rlimit rl;
	const rlim_t want = 16u << 20;
	if (getrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	(void)setrlimit(RLIMIT_STACK, &rl);
}

/* The monitor: runs in the new session, never returns. */
static void __attribute__((noreturn))
monitor(const char *dir, const char *log_path, char *const argv[], int report_fd)
{
	/* A fork of the gateway: without this, ps shows another openshell-gateway. */
	char title[128];
	const char *id = strrchr(dir, '/');
	snprintf(title, sizeof(title), "openshell-monitor %s", id ? id + 1 : dir);
	proctitle_set(title, "openshell-mon");
	int keep[] = { report_fd };
	if (fd_close_from(3, keep, 1, NULL) < 0)
		_exit(120);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int log = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (null < 0 || log < 0 || dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
		_exit(121);
	struct stat st;
	uint64_t mark = fstat(log, &st) == 0 ? (uint64_t)st.st_size : 0;
	if (loop_sigmask_reset(NULL) < 0)
		_exit(122);
	pid_t sup = fork();
	if (sup < 0)
		_exit(123);
	if (sup == 0) {
		raise_stack_limit();
		execv(argv[0], argv);
		fprintf(stderr, "openshell-local: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	/* Its start time as it is, zombie or not: a supervisor that already
	 * exited (it cannot be reaped before our waitid) would otherwise be
	 * recorded with 0, which reads as "gone" before "exit" is written. */
	struct procfs_stat pst;
	unsigned long long start = procfs_stat_read(sup, &pst, NULL) == 0 ? pst.start_time : 0;
	char line[96];
	snprintf(line, sizeof(line), "%d %llu %llu\n", (int)sup, start, (unsigned long long)mark);
	/* FILE_THIS_BOOT: it names a process that a reboot ends, and is only
	 * read against that process's start time; a lost or empty one reads as
	 * gone, which after a power loss it is. The gateway waits for it on
	 * every create, an fsync there cost one journal commit each. */
	if (write_small(dir, "supervisor.pid", line, FILE_THIS_BOOT, NULL) < 0) {
		/* Unrecorded, it would be an orphan nobody can stop; the driver
		 * learns why ("E errno"), e.g. a full disk it can wait out. */
		int saved = errno;
		kill(sup, SIGKILL);
		snprintf(line, sizeof(line), "E %d\n", saved);
		(void)!write(report_fd, line, strlen(line));
		while (waitpid(sup, NULL, 0) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	(void)!write(report_fd, line, strlen(line));
	close(report_fd);
	/* WNOWAIT: the supervisor stays a zombie until "exit" is written, so
	 * whoever sees its pid gone (local_proc_gone) knows this monitor has
	 * nothing left to write in dir: a delete that removed dir as soon as the
	 * supervisor stopped running raced with this write (ENOTEMPTY), and a
	 * status read in that window reported a lost supervisor. */
	siginfo_t si = { 0 };
	while (waitid(P_PID, (id_t)sup, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	/* "CODE" for an exit, "signal N" for a kill: a killed supervisor is not
	 * an agent that exited with 128+N. */
	if (si.si_code == CLD_EXITED)
		snprintf(line, sizeof(line), "%d\n", si.si_status);
	else
		snprintf(line, sizeof(line), "signal %d\n", si.si_status);
	/* A full disk is waited out: without this file the sandbox would read
	 * as lost instead of exited with its code (it stays "recording its exit
	 * status" meanwhile, the supervisor a zombie). */
	os_error werr = { 0 };
	while (write_small(dir, "exit", line, FILE_DURABLE, &werr) < 0 &&
	       (werr.code == ENOSPC || werr.code == EDQUOT))
		sleep(1);
	while (waitpid(sup, NULL, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

static int parse_pid_line(const char *s, struct local_pid *out, os_error *err)
{
	uint64_t v[3] = { 0 };
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		const char *e = p;
		while (*e >= '0' && *e <= '9')
			e++;
		if (parse_u64(p, (size_t)(e - p), 0, UINT64_MAX, &v[i], err) < 0)
			return os_error_prefix(err, "supervisor.pid field %d", i + 1);
		p = *e ? e + 1 : e;
	}
	if (v[0] < 2 || v[0] > INT32_MAX)
		return os_error_set(err, EINVAL, "supervisor.pid: bad pid %llu",
				    (unsigned long long)v[0]);
	out->pid = (pid_t)v[0];
	out->start_time = v[1];
	out->log_mark = v[2];
	return 0;
}

static int wait_report(int fd, struct local_pid *out, os_error *err)
{
	char line[96];
	size_t have = 0;
	while (have < sizeof(line) - 1) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = poll(&pfd, 1, 10000);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return os_error_set(err, ETIMEDOUT, "the monitor did not report a pid");
		ssize_t n = read(fd, line + have, sizeof(line) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		if (memchr(line, '\n', have))
			break;
	}
	line[have] = '\0';
	if (!memchr(line, '\n', have))
		return os_error_set(err, EIO, "the monitor died before starting the supervisor");
	uint64_t code = 0;
	if (line[0] == 'E' &&
	    parse_u64(line + 2, strcspn(line + 2, "\n"), 1, 4095, &code, NULL) == 0)
		return os_error_set(err, (int)code, "recording the supervisor's pid: %s",
				    strerror((int)code));
	return parse_pid_line(line, out, err);
}

int local_proc_spawn(const char *dir, const char *log_path, char *const argv[],
		     struct local_pid *out, os_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return os_error_errno(err, "pipe");
	_cleanup_close_ int rd = p[0];
	_cleanup_close_ int wr = p[1];
	pid_t mid = fork();
	if (mid < 0)
		return os_error_errno(err, "fork");
	if (mid == 0) {
		close(rd);
		if (setsid() < 0)
			_exit(124);
		pid_t m = fork();
		if (m < 0)
			_exit(125);
		if (m > 0)
			_exit(0);
		monitor(dir, log_path, argv, wr);
	}
	close(steal_fd(wr));
	int ws = 0;
	while (waitpid(mid, &ws, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		return os_error_set(err, ECHILD, "detaching the supervisor failed (status %d)", ws);
	if (wait_report(rd, out, err) < 0)
		return os_error_prefix(err, "starting %s", argv[0]);
	return 0;
}

int local_proc_read_pid(const char *dir, struct local_pid *out, os_error *err)
{
	char path[4096];
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (str_format(path, sizeof(path), err, "%s/supervisor.pid", dir) < 0 ||
	    file_read_all(path, 256, &data, &len, err) < 0)
		return -1;
	return parse_pid_line(data, out, err);
}

bool local_proc_alive(const struct local_pid *p)
{
	return p->pid > 1 && p->start_time != 0 && local_proc_start_time(p->pid) == p->start_time;
}

bool local_proc_gone(const struct local_pid *p)
{
	struct procfs_stat st;
	return p->pid <= 1 || p->start_time == 0 || procfs_stat_read(p->pid, &st, NULL) < 0 ||
	       st.start_time != p->start_time;
}

int local_proc_signal(const struct local_pid *p, int sig, os_error *err)
{
	if (!local_proc_alive(p))
		return 0; /* gone, or the pid now belongs to someone else: never signal it */
	if (kill(p->pid, sig) < 0 && errno != ESRCH)
		return os_error_errno(err, "signal %d to supervisor pid %d", sig, (int)p->pid);
	return 0;
}

int local_proc_exit_code(const char *dir, int *code, int *signo)
{
	char path[4096];
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	uint64_t v = 0;
	if (str_format(path, sizeof(path), NULL, "%s/exit", dir) < 0 ||
	    file_read_all(path, 64, &data, &len, NULL) < 0)
		return 0;
	while (len > 0 && data[len - 1] == '\n')
		data[--len] = '\0';
	static const char killed[] = "signal ";
	bool by_signal = len > strlen(killed) && !strncmp(data, killed, strlen(killed));
	size_t skip = by_signal ? strlen(killed) : 0;
	if (parse_u64(data + skip, len - skip, by_signal ? 1 : 0, by_signal ? 64 : 255, &v, NULL) <
	    0)
		return 0;
	*signo = by_signal ? (int)v : 0;
	*code = by_signal ? 128 + (int)v : (int)v; /* the shell's convention */
	return 1;
}
