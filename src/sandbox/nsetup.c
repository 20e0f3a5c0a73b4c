/* nsetup.c - namespace steps (see nsetup.h).
 * The joined netns is checked to be a network namespace by setns itself
 * (nstype CLONE_NEWNET), so a wrong fd or path fails instead of joining. */
#include "nsetup.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "cleanup.h"

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

int ns_setup_mounts(const struct launch_spec *s, os_error *err)
{
	/* First, so nothing below can propagate to the host's mount table. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return os_error_errno(err, "making / private%s",
				      errno == EINVAL ? " (/ is not a mount point: a bare chroot?)"
						      : "");
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
	if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
		return os_error_errno(err, "setting hostname");
	return 0;
}
