/* landlock.c - Landlock through raw syscalls (see landlock.h).
 * Constants are spelled out here because the build host's headers may be
 * older than the kernel the launcher runs on. */
#include "landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "status.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ABI1_ALL ((1ull << 13) - 1) /* remove/make rights, bits 0..12 */
#define LL_FS_REFER (1ull << 13) /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15) /* ABI 5 */
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1) /* ABI 6 */

/* Rights that make sense on a non-directory; the kernel rejects others. */
#define LL_FS_FILE_RIGHTS                                                                          \
	(LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_FS_READ_RIGHTS (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped; /* ABI 6 */
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

static uint64_t handled_fs(int abi)
{
	uint64_t r = LL_FS_ABI1_ALL;
	if (abi >= 2)
		r |= LL_FS_REFER;
	if (abi >= 3)
		r |= LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= LL_FS_IOCTL_DEV;
	return r;
}

static int probe_abi(bool hard, os_error *err)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
	if (abi >= 1)
		return (int)abi;
	if (hard)
		return os_error_errno(err, "Landlock is unavailable (hard_requirement)");
	status_warn("landlock", "landlock unavailable: %s; filesystem policy NOT applied",
		    strerror(errno));
	return 0;
}

/* Opens one policy path; 1 = skipped (best_effort, warned). */
static int open_rule(const char *path, bool rw, struct landlock_plan *plan, os_error *err)
{
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		if (plan->hard)
			return os_error_errno(err, "opening %s", path);
		status_warn("landlock", "path %s skipped: %s", path, strerror(e));
		return 1;
	}
	uint64_t access = rw ? handled_fs(plan->abi) : LL_FS_READ_RIGHTS;
	if (!S_ISDIR(st.st_mode))
		access &= LL_FS_FILE_RIGHTS;
	plan->rules[plan->n].fd = fd;
	plan->rules[plan->n++].access = access & handled_fs(plan->abi);
	return 0;
}

int landlock_prepare(const struct launch_spec *s, struct landlock_plan *plan, os_error *err)
{
	memset(plan, 0, sizeof(*plan));
	plan->hard = s->landlock_hard;
	if ((plan->abi = probe_abi(plan->hard, err)) < 0)
		return -1;
	if (plan->abi == 0)
		return 0;
	for (size_t i = 0; i < s->n_ro; i++)
		if (open_rule(s->ro_paths[i], false, plan, err) < 0)
			return -1;
	for (size_t i = 0; i < s->n_rw; i++)
		if (open_rule(s->rw_paths[i], true, plan, err) < 0)
			return -1;
	return 0;
}

static void close_rules(struct landlock_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++)
		close(plan->rules[i].fd);
	plan->n = 0;
}

static int add_rules(int ruleset, struct landlock_plan *plan, os_error *err)
{
	for (size_t i = 0; i < plan->n; i++) {
		struct ll_path_beneath_attr pb = { .allowed_access = plan->rules[i].access,
						   .parent_fd = plan->rules[i].fd };
		if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0)
			return os_error_errno(err, "landlock_add_rule (rule %zu)", i);
	}
	return 0;
}

int landlock_apply(struct landlock_plan *plan, os_error *err)
{
	if (plan->abi == 0)
		return 0;
	struct ll_ruleset_attr attr = { .handled_access_fs = handled_fs(plan->abi) };
	size_t size = sizeof(uint64_t); /* ABI 1-3 know only handled_access_fs */
	if (plan->abi >= 4)
		size = 2 * sizeof(uint64_t);
	if (plan->abi >= 6) {
		/* Signals and abstract sockets stay inside the sandbox. */
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	int rc = -1;
	int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0) {
		os_error_errno(err, "landlock_create_ruleset (ABI %d)", plan->abi);
		goto out;
	}
	if (add_rules(ruleset, plan, err) < 0)
		goto out;
	if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0) {
		os_error_errno(err, "landlock_restrict_self");
		goto out;
	}
	rc = 0;
out:
	if (ruleset >= 0)
		close(ruleset);
	close_rules(plan);
	return rc;
}
