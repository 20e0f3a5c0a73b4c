/* fdpass_guard.c - see fdpass_guard.h. Loads the embedded BPF object with
 * libbpf (CO-RE against the running kernel's BTF), attaches its program with
 * BPF_LSM_CGROUP and tries to break it before any agent runs. A kernel
 * whose LSM list lacks "bpf" loads and attaches the program but never runs
 * it: only the self-test tells, so a guard that did not refuse is an error. */
#include "fdpass_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cleanup.h"
#include "fdpass_guard_obj.h"
#include "parse.h"

#define PROG_NAME "fdpass_refuse_inet"
#define MAP_NAME "refused"
/* libbpf explains a failure in its last line before returning. */
#define LIBBPF_MSG_CAP 256

struct fdpass_guard {
	struct bpf_object *obj;
	struct bpf_link *link;
	struct bpf_map *refused;
};

static char libbpf_last[LIBBPF_MSG_CAP];

/* libbpf prints to stderr by default, which would break our JSON-lines log:
 * keep its first warning (the cause; later ones only repeat that it
 * failed) for the error message instead. */
__attribute__((format(printf, 2, 0))) static int libbpf_print(enum libbpf_print_level level,
							      const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || libbpf_last[0])
		return 0;
	int n = vsnprintf(libbpf_last, sizeof libbpf_last, fmt, ap);
	if (n > 0 && (size_t)n < sizeof libbpf_last && libbpf_last[n - 1] == '\n')
		libbpf_last[n - 1] = '\0';
	return 0;
}

static int libbpf_fail(os_error *err, int code, const char *what)
{
	return os_error_set(err, code, "%s: %s%s%s%s", what, strerror(code),
			    libbpf_last[0] ? " (" : "", libbpf_last, libbpf_last[0] ? ")" : "");
}

/* Self-test outcomes, as the child's exit status. */
enum probe_result { PROBE_REFUSED = 0, PROBE_ARRIVED = 10, PROBE_CONTROL = 11, PROBE_SETUP = 12 };

/* Sends fd over chan[0] and reports whether it arrived on chan[1]. */
static int passes(const int chan[2], int fd)
{
	char byte = 'x', cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &byte, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(chan[0], &m, 0) != 1)
		return -1;
	memset(cbuf, 0, sizeof cbuf);
	m.msg_controllen = sizeof cbuf;
	if (recvmsg(chan[1], &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	return c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int));
}

/* The child: joins the cgroup, then tries both passes. Syscalls only (the
 * supervisor may have threads). */
static _Noreturn void probe_child(const char *cgroup_dir)
{
	char path[PATH_MAX];
	int chan[2], pipefd[2];
	if (str_format(path, sizeof path, NULL, "%s/cgroup.procs", cgroup_dir) < 0)
		_exit(PROBE_SETUP);
	int cg = open(path, O_WRONLY | O_CLOEXEC);
	if (cg < 0 || write(cg, "0", 1) != 1)
		_exit(PROBE_SETUP);
	int inet = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (inet < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0 ||
	    pipe2(pipefd, O_CLOEXEC) < 0)
		_exit(PROBE_SETUP);
	int got_inet = passes(chan, inet);
	if (got_inet < 0)
		_exit(PROBE_SETUP);
	if (got_inet)
		_exit(PROBE_ARRIVED);
	_exit(passes(chan, pipefd[0]) == 1 ? PROBE_REFUSED : PROBE_CONTROL);
}

static int self_test(const char *cgroup_dir, os_error *err)
{
	pid_t pid = fork();
	if (pid < 0)
		return os_error_errno(err, "fd-passing guard self-test: fork");
	if (pid == 0)
		probe_child(cgroup_dir);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return os_error_errno(err, "fd-passing guard self-test: waitpid");
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	switch (code) {
	case PROBE_REFUSED:
		return 0;
	case PROBE_ARRIVED:
		return os_error_set(err, ENOTSUP,
				    "fd-passing guard self-test: an inet socket still passed "
				    "(is \"bpf\" missing from the kernel's LSM list, lsm=?)");
	case PROBE_CONTROL:
		return os_error_set(err, EIO,
				    "fd-passing guard self-test: a pipe no longer passed (the "
				    "guard refuses more than inet sockets)");
	default:
		return os_error_set(err, EIO,
				    "fd-passing guard self-test in %s could not run (status %d)",
				    cgroup_dir, code);
	}
}

static int load(struct fdpass_guard *g, os_error *err)
{
	/* LIBBPF_OPTS would need a GNU statement expression. */
	struct bpf_object_open_opts opts = { .sz = sizeof opts, .object_name = "fdpass_guard" };
	libbpf_last[0] = '\0';
	libbpf_set_print(libbpf_print);
	g->obj = bpf_object__open_mem(fdpass_guard_obj, fdpass_guard_obj_len, &opts);
	if (!g->obj)
		return libbpf_fail(err, errno, "opening the fd-passing guard's BPF object");
	if (bpf_object__load(g->obj) < 0)
		return libbpf_fail(err, errno,
				   "loading the fd-passing guard (BPF LSM, BTF of this kernel)");
	g->refused = bpf_object__find_map_by_name(g->obj, MAP_NAME);
	if (!g->refused)
		return os_error_set(err, ENOENT, "fd-passing guard: no map " MAP_NAME);
	return 0;
}

static int attach(struct fdpass_guard *g, const char *cgroup_dir, os_error *err)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(g->obj, PROG_NAME);
	if (!prog)
		return os_error_set(err, ENOENT, "fd-passing guard: no program " PROG_NAME);
	_cleanup_close_ int cg = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return os_error_errno(err, "opening cgroup %s", cgroup_dir);
	g->link = bpf_program__attach_cgroup(prog, cg);
	if (!g->link)
		return libbpf_fail(err, errno, "attaching the fd-passing guard (BPF_LSM_CGROUP)");
	return 0;
}

int fdpass_guard_attach(const char *cgroup_dir, struct fdpass_guard **out, os_error *err)
{
	struct fdpass_guard *g = calloc(1, sizeof *g);
	if (!g)
		return os_error_set(err, ENOMEM, "fd-passing guard: out of memory");
	if (load(g, err) < 0 || attach(g, cgroup_dir, err) < 0 || self_test(cgroup_dir, err) < 0) {
		fdpass_guard_free(g);
		return -1;
	}
	*out = g;
	return 0;
}

uint64_t fdpass_guard_refusals(const struct fdpass_guard *g)
{
	uint32_t key = 0;
	uint64_t n = 0;
	if (!g || bpf_map__lookup_elem(g->refused, &key, sizeof key, &n, sizeof n, 0) < 0)
		return 0;
	return n;
}

void fdpass_guard_free(struct fdpass_guard *g)
{
	if (!g)
		return;
	bpf_link__destroy(g->link);
	bpf_object__close(g->obj);
	free(g);
}
