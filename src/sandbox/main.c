/* main.c - openshell-sandbox: reads a launch spec, applies every launch-time
 * control in order, checking each, and execs the agent (docs/launch-spec.md).
 * Holds no credentials; the agent never runs if any step fails. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "filter.h"
#include "landlock.h"
#include "mountview.h"
#include "nsetup.h"
#include "parse.h"
#include "privs.h"
#include "remote.h"
#include "spec.h"
#include "status.h"
#include "supervise.h"
#include "transfer.h"

struct options {
	const char *spec_file;
	int spec_fd;
	int status_fd;
};

static noreturn void usage(const char *msg)
{
	fprintf(stderr,
		"openshell-sandbox: %s\n"
		"usage: openshell-sandbox (--spec FILE | --spec-fd N) [--status-fd N]\n",
		msg);
	exit(SBX_EXIT_USAGE);
}

static int fd_arg(const char *flag, const char *val)
{
	uint64_t v;
	if (!val || parse_u64_str(val, 3, 65535, &v, NULL) < 0 || fcntl((int)v, F_GETFD) < 0) {
		fprintf(stderr, "openshell-sandbox: %s: expected an open fd number >= 3\n", flag);
		exit(SBX_EXIT_USAGE);
	}
	return (int)v;
}

static void parse_args(int argc, char **argv, struct options *o)
{
	o->spec_file = NULL;
	o->spec_fd = o->status_fd = -1;
	for (int i = 1; i < argc; i += 2) { /* every flag takes one value */
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--spec") == 0 && val)
			o->spec_file = val;
		else if (strcmp(argv[i], "--spec-fd") == 0)
			o->spec_fd = fd_arg("--spec-fd", val);
		else if (strcmp(argv[i], "--status-fd") == 0)
			o->status_fd = fd_arg("--status-fd", val);
		else
			usage("unknown or incomplete argument");
	}
	if (!o->spec_file == (o->spec_fd < 0))
		usage("exactly one of --spec and --spec-fd is required");
	if (o->spec_fd >= 0 && o->spec_fd == o->status_fd)
		usage("--spec-fd and --status-fd must differ");
}

/* A closed 0-2 would let a later open() land there and leak into the agent. */
static int ensure_std_fds(os_error *err)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int n = open("/dev/null", O_RDWR); /* no CLOEXEC: it is a standard fd */
		if (n < 0)
			return os_error_errno(err, "fd %d is closed and /dev/null cannot be opened",
					      fd);
		if (n != fd)
			return os_error_set(err, EBADF, "cannot fill closed fd %d", fd);
	}
	return 0;
}

static int load_spec(const struct options *o, struct launch_spec *s, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int rc;
	if (o->spec_file) {
		rc = file_read_all(o->spec_file, SPEC_MAX_BYTES, &text, &len, err);
	} else {
		rc = fd_read_all(o->spec_fd, SPEC_MAX_BYTES, &text, &len, err);
		close(o->spec_fd);
	}
	if (rc < 0)
		return os_error_prefix(err, "reading the launch spec");
	if (spec_parse(text, len, s, err) < 0)
		return -1;
	for (const char **d = s->dropped_env; *d; d++)
		status_warn("spec", "dropped supervisor-only variable %s", *d);
	return 0;
}

/* Closes every fd but 0-2 and the status fd (which is close-on-exec). */
static int sweep_fds(os_error *err)
{
	int keep = status_get_fd();
	int rc = keep < 0 ? close_range(3, ~0u, 0)
			  : (keep > 3 ? close_range(3, (unsigned)keep - 1, 0) : 0) |
				    close_range((unsigned)keep + 1, ~0u, 0);
	if (rc < 0 && errno == ENOSYS)
		return fd_close_from(3, &keep, keep < 0 ? 0 : 1, err);
	if (rc < 0)
		return os_error_errno(err, "close_range");
	return 0;
}

static noreturn void exec_agent(const struct launch_spec *s)
{
	os_error err = { 0 };
	status_ok("exec", -1);
	environ = s->envp; /* execvp searches the agent's PATH, not ours */
	execvp(s->argv[0], (char *const *)s->argv);
	int e = errno;
	os_error_errno(&err, "execve %s", s->argv[0]);
	status_die("exec", &err,
		   e == ENOENT || e == ENOTDIR ? SBX_EXIT_NOT_FOUND : SBX_EXIT_EXEC_FAILED);
}

/* Pre-exec failure in a forked child: errno to the status fd, then exit. */
static noreturn void die_errno(const char *step, const char *what)
{
	os_error err = { 0 };
	os_error_errno(&err, "%s", what);
	status_die(step, &err, SBX_EXIT_LAUNCH_FAILED);
}

/* The agent process: steps 1, 4-8, then exec. parent is who must outlive us. */
static noreturn void agent_main(const struct launch_spec *s, const sigset_t *old_mask, pid_t parent)
{
	static struct landlock_plan plan;
	os_error err = { 0 };
	if (setsid() < 0)
		die_errno("session", "setsid");
	if (s->tty && ioctl(0, TIOCSCTTY, 0) < 0)
		die_errno("session", "making fd 0 the controlling terminal");
	if (landlock_prepare(s, &plan, &err) < 0)
		status_die("landlock", &err, SBX_EXIT_LAUNCH_FAILED);
	if (privs_drop(s->uid, s->gid, &err) < 0)
		status_die("privileges", &err, SBX_EXIT_LAUNCH_FAILED);
	/* Set after the uid change, which clears it; dies with the launcher. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die_errno("privileges", "PR_SET_PDEATHSIG");
	if (getppid() != parent) /* the launcher died before the line above */
		_exit(SBX_EXIT_LAUNCH_FAILED);
	if (privs_limits(s, &err) < 0)
		status_die("rlimits", &err, SBX_EXIT_LAUNCH_FAILED);
	if (chdir(s->cwd) < 0)
		die_errno("cwd", s->cwd);
	if (landlock_apply(&plan, &err) < 0)
		status_die("landlock", &err, SBX_EXIT_LAUNCH_FAILED);
	status_ok("landlock", plan.abi);
	if (filter_install(&err) < 0)
		status_die("seccomp", &err, SBX_EXIT_LAUNCH_FAILED);
	if (sigprocmask(SIG_SETMASK, old_mask, NULL) < 0)
		die_errno("fds", "restoring the signal mask");
	if (sweep_fds(&err) < 0)
		status_die("fds", &err, SBX_EXIT_LAUNCH_FAILED);
	if (s->transfer_path) /* confined like the agent; no program to exec */
		_exit(transfer_run(s));
	exec_agent(s);
}

static void drop_status_fd(void)
{
	if (status_get_fd() >= 0)
		close(status_get_fd());
	status_forget();
}

/* pid 1 of the new PID namespace: private mounts, then the agent as pid 2. */
static noreturn void init_main(const struct launch_spec *s, const sigset_t *old_mask)
{
	os_error err = { 0 };
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		die_errno("namespaces", "PR_SET_PDEATHSIG");
	if (ns_setup_mounts(s, &err) < 0)
		status_die("namespaces", &err, SBX_EXIT_LAUNCH_FAILED);
	pid_t agent = fork();
	if (agent < 0)
		die_errno("namespaces", "fork (agent)");
	if (agent == 0)
		agent_main(s, old_mask, 1);
	drop_status_fd(); /* the agent's copy alone decides when EOF comes */
	_exit(supervise_child(agent));
}

static int fail(const char *step, const os_error *err)
{
	status_fail(step, err);
	return SBX_EXIT_LAUNCH_FAILED;
}

/* Steps run by the launcher itself, then the fork; returns our exit status.
 * Also the remote mode's runner (remote.c). */
int sandbox_launch(const struct launch_spec *s)
{
	os_error err = { 0 };
	sigset_t old_mask;
	pid_t self = getpid();
	if (s->tty && !isatty(0)) {
		os_error_set(&err, ENOTTY, "tty requested but fd 0 is not a terminal");
		return fail("session", &err);
	}
	if (!s->new_namespaces && s->join_pidfd < 0 &&
	    mountview_check_without_namespace(s, &err) < 0)
		return fail("namespaces", &err);
	if (ns_join_cgroups(s, &err) < 0)
		return fail("cgroup", &err);
	if (ns_join_net(s, &err) < 0)
		return fail("netns", &err);
	if (ns_join_sandbox(s, &err) < 0)
		return fail("namespaces", &err);
	if (supervise_prepare(&old_mask, &err) < 0)
		return fail("session", &err);
	if (s->new_namespaces && ns_unshare(&err) < 0)
		return fail("namespaces", &err);
	pid_t child = fork();
	if (child < 0) {
		os_error_errno(&err, "fork");
		return fail("session", &err);
	}
	if (child == 0) {
		if (s->new_namespaces)
			init_main(s, &old_mask);
		/* A joined PID namespace cannot name its parent outside: 0. */
		agent_main(s, &old_mask, s->join_pidfd >= 0 ? 0 : self);
	}
	drop_status_fd(); /* the agent's copy alone decides when EOF comes */
	return supervise_child(child);
}

/* Both modes: nothing in this process may be read through ptrace or a core
 * dump, and fds 0-2 are open. */
int sandbox_prelude(os_error *err)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return os_error_errno(err, "PR_SET_DUMPABLE");
	return ensure_std_fds(err);
}

int main(int argc, char **argv)
{
	struct options o;
	struct launch_spec spec;
	os_error err = { 0 };
	if (remote_requested(argc, argv)) /* split backend: the spec comes from the supervisor */
		return remote_main(argc, argv);
	parse_args(argc, argv, &o);
	if (o.status_fd >= 0 && fd_set_cloexec(o.status_fd, true, &err) < 0)
		usage(err.msg);
	status_init(o.status_fd);
	if (sandbox_prelude(&err) < 0) {
		status_fail("spec", &err);
		return SBX_EXIT_LAUNCH_FAILED;
	}
	if (load_spec(&o, &spec, &err) < 0) {
		status_fail("spec", &err);
		return SBX_EXIT_LAUNCH_FAILED;
	}
	int code = sandbox_launch(&spec);
	spec_free(&spec);
	return code;
}
