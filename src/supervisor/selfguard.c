/* selfguard.c - see selfguard.h. After setup the supervisor holds the agent's
 * secrets and policy; if it is ever subverted through hostile input, the
 * filter keeps it from mounting, loading modules or BPF, or kexec'ing. It
 * never blocks a call the running supervisor makes (see selfguard.h). */
#include "selfguard.h"

#include <errno.h>
#include <seccomp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

/* Denied with EPERM. ptrace stays allowed on purpose: the sanitizer builds'
 * leak checker attaches to the process at exit, and /proc identity reads
 * need no ptrace call (only the capability, which we keep). */
static const char *const denied[] = {
	"mount",	 "umount2",
	"fsopen",	 "fsconfig",
	"fsmount",	 "fspick",
	"open_tree",	 "move_mount",
	"mount_setattr", "pivot_root",
	"chroot",	 "init_module",
	"finit_module",	 "delete_module",
	"kexec_load",	 "kexec_file_load",
	"bpf",		 "open_by_handle_at",
	"reboot",	 "swapon",
	"swapoff",	 "iopl",
	"ioperm",	 "acct",
	"userfaultfd",	 "perf_event_open",
};

/* Value of a "Name:\tN" line of /proc/self/status, or -1. */
static long status_field(const char *text, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, nl) != 0 || p[nl] != ':')
			continue;
		const char *v = p + nl + 1;
		v += strspn(v, " \t");
		uint64_t n;
		if (parse_u64(v, strspn(v, "0123456789"), 0, 1000, &n, NULL) < 0)
			return -1;
		return (long)n;
	}
	return -1;
}

static int build_and_load(os_error *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return os_error_set(err, ENOMEM, "seccomp_init failed");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (rc < 0) {
		os_error_set(err, -rc, "seccomp: thread sync: %s", strerror(-rc));
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(denied); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);
		if (nr == __NR_SCMP_ERROR) {
			rc = os_error_set(err, EINVAL, "seccomp: unknown syscall %s", denied[i]);
			goto out;
		}
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (rc < 0) {
			os_error_set(err, -rc, "seccomp: rule for %s: %s", denied[i],
				     strerror(-rc));
			goto out;
		}
	}
	rc = seccomp_load(ctx);
	if (rc < 0)
		os_error_set(err, -rc, "seccomp: loading the filter: %s", strerror(-rc));
out:
	seccomp_release(ctx);
	return rc < 0 ? -1 : 0;
}

/* Tries to break what was just set up, as the style guide asks. */
static int verify(os_error *err)
{
	_cleanup_free_ char *text = NULL;
	if (file_read_all("/proc/self/status", 1 << 16, &text, NULL, err) < 0)
		return os_error_prefix(err, "reading /proc/self/status");
	if (status_field(text, "NoNewPrivs") != 1)
		return os_error_set(err, EPERM, "NoNewPrivs is not 1 after PR_SET_NO_NEW_PRIVS");
	if (status_field(text, "Seccomp") != 2)
		return os_error_set(err, EPERM, "Seccomp is not 2 (filter) after loading");
	/* Arguments that fail early (EFAULT) if mount were still allowed. */
	errno = 0;
	if (mount(NULL, NULL, NULL, 0, NULL) == 0 || errno != EPERM)
		return os_error_set(err, EPERM, "mount() answered %s instead of EPERM",
				    strerror(errno));
	return 0;
}

int selfguard_apply(os_error *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return os_error_errno(err, "selfguard: PR_SET_NO_NEW_PRIVS");
	if (build_and_load(err) < 0 || verify(err) < 0)
		return os_error_prefix(err, "selfguard");
	return 0;
}
