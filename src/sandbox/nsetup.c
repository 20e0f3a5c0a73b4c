/* nsetup.c - namespace steps (see nsetup.h).
 * The joined netns is checked to be a network namespace by setns itself
 * (nstype CLONE_NEWNET), so a wrong fd or path fails instead of joining. */
#include "nsetup.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "mountview.h"
#include "parse.h"

int ns_join_net(const struct launch_spec *s, os_error *err)
{
	_cleanup_close_ int opened = -1;
	int fd = s->netns_fd;
	if (s->netns_path) {
		opened = open(s->netns_path, O_RDONLY | O_CLOEXEC);
		if (opened < 0)
			return os_error_errno(err, "opening %s", s->netns_path);
		fd = opened;
	}
	if (fd < 0)
		return 0;
	if (setns(fd, CLONE_NEWNET) < 0) {
		if (s->netns_path)
			return os_error_errno(err, "joining network namespace %s", s->netns_path);
		return os_error_errno(err, "joining network namespace fd %d", fd);
	}
	return 0;
}

int ns_unshare(os_error *err)
{
	if (unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		return os_error_errno(err, "unshare(PID|mount|IPC|UTS)");
	return 0;
}

/* The workspace appears at /sandbox whatever its host path. The mount point
 * is created on the host when missing (an empty root-owned directory): a
 * mount namespace cannot conjure a directory the image lacks. */
static int bind_workspace(const char *src, os_error *err)
{
	struct stat st;
	if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode))
		return os_error_errno(err, "workspace %s", src);
	if (mkdir(SPEC_WORKSPACE_TARGET, 0755) < 0 && errno != EEXIST)
		return os_error_errno(err, "creating the mount point %s", SPEC_WORKSPACE_TARGET);
	if (mount(src, SPEC_WORKSPACE_TARGET, NULL, MS_BIND, NULL) < 0)
		return os_error_errno(err, "bind-mounting workspace %s on %s", src,
				      SPEC_WORKSPACE_TARGET);
	if (mount(NULL, SPEC_WORKSPACE_TARGET, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		return os_error_errno(err, "making %s nosuid,nodev", SPEC_WORKSPACE_TARGET);
	return 0;
}

int ns_setup_mounts(const struct launch_spec *s, os_error *err)
{
	/* First, so nothing below can propagate to the host's mount table. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return os_error_errno(err, "making / private%s",
				      errno == EINVAL ? " (/ is not a mount point: a bare chroot?)"
						      : "");
	/* Before the private /tmp: a workspace under the host's /tmp (a
	 * gateway state directory made by mktemp -d) would be hidden by it. */
	if (s->workspace && bind_workspace(s->workspace, err) < 0)
		return -1;
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return os_error_errno(err, "mounting a private /proc");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		return os_error_errno(err, "mounting a private /tmp");
	/* Landlock does not govern memfds: without this an agent could write a
	 * program to a memfd and execve("/proc/self/fd/N") it. 2 = memfds of
	 * this PID namespace are never executable (MFD_EXEC refused); children
	 * cannot lower it. Kernels before 6.3 lack the knob (ENOENT). */
	int fd = open("/proc/sys/vm/memfd_noexec", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		bool ok = write(fd, "2", 1) == 1;
		close(fd);
		if (!ok)
			return os_error_errno(err, "setting vm.memfd_noexec in the sandbox");
	} else if (errno != ENOENT) {
		return os_error_errno(err, "opening /proc/sys/vm/memfd_noexec");
	}
	/* Last: the view is built from what exists now (the workspace too). */
	if (mountview_build(s, err) < 0)
		return -1;
	if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
		return os_error_errno(err, "setting hostname");
	return 0;
}

int ns_join_sandbox(const struct launch_spec *s, os_error *err)
{
	if (s->join_pidfd < 0)
		return 0;
	/* One call, all or nothing: a process half inside (network but not
	 * mounts) would see the host's files with the sandbox's network. */
	if (setns(s->join_pidfd,
		  CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID) < 0)
		return os_error_errno(err, "joining the sandbox's namespaces (pidfd %d)",
				      s->join_pidfd);
	close(s->join_pidfd);
	return 0;
}

/* Pids in a cgroup.procs file, one per line: is ours among them? */
static bool pid_listed(const char *dir, pid_t pid)
{
	char path[SPEC_MAX_PATH_LEN + 16], line[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	bool found = false;
	uint64_t v;
	while (f && !found && fgets(line, sizeof line, f))
		found = parse_u64(line, strspn(line, "0123456789"), 1, INT32_MAX, &v, NULL) == 0 &&
			v == (uint64_t)pid;
	if (f)
		fclose(f);
	return found;
}

int ns_join_cgroups(const struct launch_spec *s, os_error *err)
{
	for (size_t i = 0; i < s->n_cgroups; i++) {
		char path[SPEC_MAX_PATH_LEN + 16];
		snprintf(path, sizeof path, "%s/cgroup.procs", s->cgroups[i]);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return os_error_errno(err, "opening %s", path);
		/* "0" moves the writer; everything forked afterwards stays inside. */
		if (write(fd, "0", 1) != 1)
			return os_error_errno(err, "joining cgroup %s", s->cgroups[i]);
		if (!pid_listed(s->cgroups[i], getpid()))
			return os_error_set(err, ESRCH, "cgroup %s: our pid is not in cgroup.procs",
					    s->cgroups[i]);
	}
	return 0;
}
