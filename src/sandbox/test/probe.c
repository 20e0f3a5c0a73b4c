/* probe.c - sandbox-probe, a test-only agent: tries things a confined agent
 * must not be able to do and prints what the kernel answered, one line each
 * ("NAME ERRNO", 0 = allowed). Never decides pass/fail itself: the tests do.
 * usage: sandbox-probe syscalls|int80|x32|fds|tiocsti|creds|rlimit-core
 *        sandbox-probe open-read PATH | open-write PATH | kill PID | ptrace PID */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <signal.h>
#include <unistd.h>

#include "decimal_arg.h"

#define BAD_PID 0x7ffffff0L

static void report(const char *name, long rc)
{
	printf("%s %d\n", name, rc < 0 ? errno : 0);
}

/* Each call has arguments that fail early (EFAULT/EBADF/EINVAL) when the
 * syscall is allowed, so running the probe unconfined changes nothing. */
static void probe_syscalls(void)
{
	report("ptrace", syscall(SYS_ptrace, PTRACE_PEEKUSER, BAD_PID, 0, 0));
	report("process_vm_readv", syscall(SYS_process_vm_readv, BAD_PID, NULL, 0, NULL, 0, 1));
	report("process_vm_writev", syscall(SYS_process_vm_writev, BAD_PID, NULL, 0, NULL, 0, 1));
	report("pidfd_getfd", syscall(SYS_pidfd_getfd, -1, 0, 0));
	report("kcmp", syscall(SYS_kcmp, BAD_PID, BAD_PID, 0, 0, 0));
	report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1, NULL, 0));
	report("name_to_handle_at", syscall(SYS_name_to_handle_at, -1, NULL, NULL, NULL, 0));
	report("bpf", syscall(SYS_bpf, -1, NULL, 0));
	report("perf_event_open", syscall(SYS_perf_event_open, NULL, -1, -1, -1, ~0UL));
	report("userfaultfd", syscall(SYS_userfaultfd, ~0));
	report("io_uring_setup", syscall(SYS_io_uring_setup, 0, NULL));
	report("io_uring_enter", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
	report("io_uring_register", syscall(SYS_io_uring_register, -1, 0, NULL, 0));
	report("mount", syscall(SYS_mount, NULL, NULL, NULL, 0, NULL));
	report("umount2", syscall(SYS_umount2, NULL, ~0));
	report("fsopen", syscall(SYS_fsopen, NULL, ~0));
	report("fsconfig", syscall(SYS_fsconfig, -1, ~0, NULL, NULL, 0));
	report("fsmount", syscall(SYS_fsmount, -1, ~0, 0));
	report("fspick", syscall(SYS_fspick, -1, NULL, ~0));
	report("open_tree", syscall(SYS_open_tree, -1, NULL, ~0));
	report("move_mount", syscall(SYS_move_mount, -1, NULL, -1, NULL, ~0));
	report("mount_setattr", syscall(SYS_mount_setattr, -1, NULL, ~0, NULL, 0));
	report("pivot_root", syscall(SYS_pivot_root, NULL, NULL));
	report("setns", syscall(SYS_setns, -1, 0));
	report("unshare_newuser", syscall(SYS_unshare, CLONE_NEWUSER | 0xff));
	report("clone_newuser", syscall(SYS_clone, CLONE_NEWUSER | CLONE_THREAD, 0, 0, 0, 0));
	report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, ~0UL));
	report("kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, NULL, ~0UL));
	report("init_module", syscall(SYS_init_module, NULL, 0, NULL));
	report("finit_module", syscall(SYS_finit_module, -1, NULL, ~0));
	report("delete_module", syscall(SYS_delete_module, NULL, ~0));
	report("keyctl", syscall(SYS_keyctl, -1, 0, 0, 0, 0));
	report("add_key", syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));
	report("request_key", syscall(SYS_request_key, NULL, NULL, NULL, 0));
	report("ioctl_tiocsti", syscall(SYS_ioctl, -1, TIOCSTI, NULL));
	report("ioctl_tiocsti_highbits", syscall(SYS_ioctl, -1, (1UL << 32) | TIOCSTI, NULL));
	report("ioctl_tioclinux", syscall(SYS_ioctl, -1, TIOCLINUX, NULL));
	report("socket_packet", syscall(SYS_socket, AF_PACKET, ~0, 0));
	report("socket_netlink_audit", syscall(SYS_socket, AF_NETLINK, ~0, NETLINK_AUDIT));
	report("socket_vsock", syscall(SYS_socket, AF_VSOCK, ~0, 0));
	report("execveat_empty_path", syscall(SYS_execveat, -1, "", NULL, NULL, AT_EMPTY_PATH));
	report("clone3", syscall(SYS_clone3, NULL, 0));
	/* Allowed neighbours: the same calls the filter must let through. */
	report("allowed_ioctl_tcgets", syscall(SYS_ioctl, -1, TCGETS, NULL));
	report("allowed_socket_unix", syscall(SYS_socket, AF_UNIX, ~0, 0));
	report("allowed_socket_inet", syscall(SYS_socket, AF_INET, ~0, 0));
	report("allowed_socket_inet6", syscall(SYS_socket, AF_INET6, ~0, 0));
	report("allowed_socket_netlink_route", syscall(SYS_socket, AF_NETLINK, ~0, NETLINK_ROUTE));
	report("allowed_execveat", syscall(SYS_execveat, -1, "", NULL, NULL, 0));
	report("allowed_unshare", syscall(SYS_unshare, 0xff));
	report("allowed_getpid", syscall(SYS_getpid));
}

/* The i386 entry point: getpid is 20 there. Killed (SIGSYS) when filtered. */
static void probe_int80(void)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
	printf("int80 returned %ld\n", ret);
}

static void probe_x32(void)
{
	errno = 0;
	long rc = syscall(0x40000000L | SYS_getpid);
	printf("x32 returned %ld errno %d\n", rc, rc < 0 ? errno : 0);
}

static void probe_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	if (!d) {
		printf("error %d\n", errno);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && strtol(e->d_name, NULL, 10) != dirfd(d))
			printf("fd %s\n", e->d_name);
	closedir(d);
}

static void probe_creds(void)
{
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	printf("uid %u %u %u\n", r, e, s);
	report("setuid0", setuid(0));
	report("setresuid0", setresuid(0, 0, 0));
}

static void probe_rlimit_core(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_CORE, &rl);
	printf("core %llu %llu\n", (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max);
	rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	report("raise_core", setrlimit(RLIMIT_CORE, &rl));
}

static long pid_arg(const char *s)
{
	long long v;
	if (decimal_arg(s, -1, 1 << 30, &v) < 0) {
		fprintf(stderr, "sandbox-probe: bad pid\n");
		exit(2);
	}
	return (long)v;
}

/* connect() to a path-named unix socket: Landlock has no right for it, so
 * only the filesystem view (an absent path) can refuse it. */
static void probe_connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path) {
		printf("connect_unix %d\n", ENAMETOOLONG);
		return;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	report("connect_unix", fd < 0 ? fd : connect(fd, (struct sockaddr *)&sa, sizeof sa));
}

/* Metadata changes a file's owner may make on a writable mount, each
 * refused (EROFS) on a read-only one whatever Landlock says. */
static void probe_meta(const char *path)
{
	report("chmod", chmod(path, 0600));
	report("utime", utimensat(AT_FDCWD, path, NULL, 0));
	report("setxattr", setxattr(path, "user.openshell", "x", 1, 0));
	report("chown", chown(path, getuid(), getgid()));
	report("truncate", truncate(path, 0));
}

static int run(const char *cmd, const char *arg)
{
	if (strcmp(cmd, "syscalls") == 0)
		probe_syscalls();
	else if (strcmp(cmd, "int80") == 0)
		probe_int80();
	else if (strcmp(cmd, "x32") == 0)
		probe_x32();
	else if (strcmp(cmd, "fds") == 0)
		probe_fds();
	else if (strcmp(cmd, "creds") == 0)
		probe_creds();
	else if (strcmp(cmd, "rlimit-core") == 0)
		probe_rlimit_core();
	else if (strcmp(cmd, "tiocsti") == 0) {
		report("tiocsti", ioctl(0, TIOCSTI, "x"));
		struct winsize ws;
		report("tiocgwinsz", ioctl(0, TIOCGWINSZ, &ws));
	} else if (strcmp(cmd, "open-read") == 0 && arg)
		report("open_read", open(arg, O_RDONLY | O_CLOEXEC));
	else if (strcmp(cmd, "open-write") == 0 && arg)
		report("open_write", open(arg, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	else if (strcmp(cmd, "connect-unix") == 0 && arg)
		probe_connect_unix(arg);
	else if (strcmp(cmd, "meta") == 0 && arg)
		probe_meta(arg);
	else if (strcmp(cmd, "kill") == 0)
		report("kill", kill((pid_t)pid_arg(arg), 0));
	else if (strcmp(cmd, "ptrace") == 0)
		report("ptrace_attach", ptrace(PTRACE_ATTACH, (pid_t)pid_arg(arg), 0, 0));
	else
		return 2;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || run(argv[1], argc > 2 ? argv[2] : NULL) != 0) {
		fprintf(stderr, "sandbox-probe: unknown command\n");
		return 2;
	}
	fflush(stdout);
	return 0;
}
