/* filter.c - the seccomp deny list (see filter.h and docs/launch-spec.md).
 * Argument comparisons use the width the kernel uses (ioctl's command is
 * 32 bits), so garbage in the upper bits cannot slip a request past a rule. */
#include "filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

#define DENY SCMP_ACT_ERRNO(EPERM)

static const char *const denied_syscalls[] = {
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	/* Taking a copy of another process's descriptor (same uid suffices)
	 * would let an agent borrow a socket an allowed binary holds, or take
	 * one back after exec'ing an allowed binary on it: caller identity
	 * depends on descriptors staying where the kernel put them. kcmp tells
	 * which descriptors two processes share, the reconnaissance for it. */
	"pidfd_getfd",
	"kcmp",
	/* File handles bypass path-based checks (Landlock, the mount view):
	 * refused, as the common container profiles do. */
	"open_by_handle_at",
	"name_to_handle_at",
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	"mount",
	"umount2",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"open_tree",
	"move_mount",
	"mount_setattr",
	"pivot_root",
	"setns",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"keyctl",
	"add_key",
	"request_key",
};

static void ctx_release(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
		const struct scmp_arg_cmp *cmp, os_error *err)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return os_error_set(err, ENOSYS, "libseccomp does not know syscall %s", name);
	int rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (rc < 0)
		return os_error_set(err, -rc, "seccomp rule for %s: %s", name, strerror(-rc));
	return 0;
}

static int socket_rules(scmp_filter_ctx ctx, os_error *err)
{
	for (int fam = 0; fam < AF_MAX; fam++) {
		if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK)
			continue;
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam, 0);
		if (rule(ctx, DENY, "socket", 1, &c, err) < 0)
			return -1;
	}
	struct scmp_arg_cmp high = SCMP_A0(SCMP_CMP_GE, AF_MAX, 0);
	struct scmp_arg_cmp nl[2] = { SCMP_A0(SCMP_CMP_EQ, AF_NETLINK, 0),
				      SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE, 0) };
	if (rule(ctx, DENY, "socket", 1, &high, err) < 0 ||
	    rule(ctx, DENY, "socket", 2, nl, err) < 0)
		return -1;
	return 0;
}

static int arg_rules(scmp_filter_ctx ctx, os_error *err)
{
	struct scmp_arg_cmp sti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
	struct scmp_arg_cmp linux_ = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);
	struct scmp_arg_cmp userns0 = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
	struct scmp_arg_cmp empty = SCMP_A4(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH);
	if (rule(ctx, DENY, "ioctl", 1, &sti, err) < 0 ||
	    rule(ctx, DENY, "ioctl", 1, &linux_, err) < 0 ||
	    rule(ctx, DENY, "unshare", 1, &userns0, err) < 0 ||
	    rule(ctx, DENY, "clone", 1, &userns0, err) < 0 ||
	    rule(ctx, DENY, "execveat", 1, &empty, err) < 0)
		return -1;
	/* clone3 passes flags in memory we cannot inspect: ENOSYS makes libc fall back. */
	return rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err);
}

static int build(scmp_filter_ctx ctx, os_error *err)
{
	/* Only the native arch is in the filter: i386 and x32 entry points hit
	 * the bad-arch action and the process is killed. */
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* libseccomp refuses KILL_PROCESS where it cannot ask the kernel about
	 * actions (gVisor has no SECCOMP_GET_ACTION_AVAIL): killing the thread
	 * still stops the call before it runs, and gVisor has no 32-bit entry. */
	if (rc == -EINVAL)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL);
	if (rc < 0)
		return os_error_set(err, -rc, "seccomp bad-arch action: %s", strerror(-rc));
	for (size_t i = 0; i < ARRAY_SIZE(denied_syscalls); i++)
		if (rule(ctx, DENY, denied_syscalls[i], 0, NULL, err) < 0)
			return -1;
	if (socket_rules(ctx, err) < 0 || arg_rules(ctx, err) < 0)
		return -1;
	return 0;
}

int filter_install(os_error *err)
{
	__attribute__((cleanup(ctx_release))) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return os_error_set(err, ENOMEM, "seccomp_init failed");
	if (build(ctx, err) < 0)
		return -1;
	int rc = seccomp_load(ctx);
	if (rc < 0)
		return os_error_set(err, -rc, "seccomp_load: %s", strerror(-rc));
	/* Try to break it: bpf() with a bad command must now be EPERM, not EINVAL. */
	if (syscall(SYS_bpf, -1, NULL, 0) != -1 || errno != EPERM)
		return os_error_set(err, EPERM, "verification failed: bpf() not denied");
	return 0;
}
