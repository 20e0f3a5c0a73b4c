/* privs.c - dropping privileges for good (see privs.h).
 * Order matters: groups and gid while we still may, capabilities before the
 * uid change, then verification by trying to become root again. */
#include "privs.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CAP_PROBE_MAX 64

static int caps_get(struct __user_cap_data_struct data[2], os_error *err)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	if (syscall(SYS_capget, &hdr, data) < 0)
		return os_error_errno(err, "capget");
	return 0;
}

/* Empties the bounding set (needs CAP_SETPCAP) and the ambient set. */
static int caps_drop_bounding(os_error *err)
{
	for (int cap = 0; cap < CAP_PROBE_MAX; cap++) {
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break; /* EINVAL: past the kernel's last capability */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return os_error_errno(err, "dropping capability %d from the bounding set",
					      cap);
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 0)
			return os_error_set(err, EPERM, "capability %d still in the bounding set",
					    cap);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return os_error_errno(err, "clearing the ambient capability set");
	return 0;
}

static int change_ids(uid_t uid, gid_t gid, os_error *err)
{
	if (setgroups(0, NULL) < 0)
		return os_error_errno(err, "clearing supplementary groups");
	if (setresgid(gid, gid, gid) < 0)
		return os_error_errno(err, "setresgid %u", (unsigned)gid);
	if (caps_drop_bounding(err) < 0)
		return -1;
	if (setresuid(uid, uid, uid) < 0)
		return os_error_errno(err, "setresuid %u", (unsigned)uid);
	/* The uid change cleared permitted/effective; clear inheritable too. */
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	if (syscall(SYS_capset, &hdr, data) < 0)
		return os_error_errno(err, "clearing capabilities");
	return 0;
}

/* Tries to undo the drop; any success is a failure of the step. */
static int verify_dropped(uid_t uid, gid_t gid, os_error *err)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;
	struct __user_cap_data_struct data[2];
	if (getresuid(&r, &e, &s) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return os_error_errno(err, "reading back ids");
	if (r != uid || e != uid || s != uid || rg != gid || eg != gid || sg != gid)
		return os_error_set(err, EPERM, "ids are %u/%u/%u:%u/%u/%u, expected %u:%u",
				    (unsigned)r, (unsigned)e, (unsigned)s, (unsigned)rg,
				    (unsigned)eg, (unsigned)sg, (unsigned)uid, (unsigned)gid);
	if (setuid(0) == 0 || seteuid(0) == 0)
		return os_error_set(err, EPERM, "verification failed: setuid(0) succeeded");
	if (setgid(0) == 0 || setegid(0) == 0)
		return os_error_set(err, EPERM, "verification failed: setgid(0) succeeded");
	if (caps_get(data, err) < 0)
		return -1;
	for (int i = 0; i < 2; i++)
		if (data[i].effective || data[i].permitted || data[i].inheritable)
			return os_error_set(err, EPERM, "capabilities remain after the drop");
	return 0;
}

int privs_drop(uid_t uid, gid_t gid, os_error *err)
{
	if (uid == 0 || gid == 0)
		return os_error_set(err, EPERM, "refusing to run the agent as root");
	if (geteuid() == 0) {
		if (change_ids(uid, gid, err) < 0)
			return -1;
	} else if (getuid() != uid || getgid() != gid) {
		return os_error_set(err, EPERM,
				    "started as uid %u gid %u without privilege: cannot become "
				    "%u:%u",
				    (unsigned)getuid(), (unsigned)getgid(), (unsigned)uid,
				    (unsigned)gid);
	}
	if (verify_dropped(uid, gid, err) < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return os_error_errno(err, "PR_SET_NO_NEW_PRIVS");
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return os_error_set(err, EPERM, "PR_SET_NO_NEW_PRIVS did not stick");
	return 0;
}

static int set_limit(int resource, rlim_t value, os_error *err)
{
	struct rlimit rl = { .rlim_cur = value, .rlim_max = value };
	if (setrlimit(resource, &rl) < 0)
		return os_error_errno(err, "setrlimit(%d, %llu)", resource,
				      (unsigned long long)value);
	if (getrlimit(resource, &rl) < 0 || rl.rlim_cur != value || rl.rlim_max != value)
		return os_error_set(err, EPERM, "rlimit %d did not stick", resource);
	return 0;
}

int privs_limits(const struct launch_spec *s, os_error *err)
{
	if (set_limit(RLIMIT_CORE, 0, err) < 0)
		return -1;
	for (size_t i = 0; i < s->n_rlimits; i++)
		if (set_limit(s->rlimits[i].resource, s->rlimits[i].value, err) < 0)
			return -1;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return os_error_errno(err, "PR_SET_DUMPABLE");
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		return os_error_set(err, EPERM, "still dumpable");
	return 0;
}
