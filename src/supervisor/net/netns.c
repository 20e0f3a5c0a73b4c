/* netns.c - create and temporarily enter network namespaces by fd.
 * Only the calling thread moves; it always comes back (or the process aborts). */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"

static int open_own_netns(int *out, os_error *err)
{
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return os_error_errno(err, "opening /proc/thread-self/ns/net");
	*out = fd;
	return 0;
}

int netns_create(int *out_fd, os_error *err)
{
	_cleanup_close_ int saved = -1;
	if (open_own_netns(&saved, err) < 0)
		return -1;
	if (unshare(CLONE_NEWNET) < 0)
		return os_error_errno(err, "unshare(CLONE_NEWNET)");
	int fresh = -1;
	int rc = open_own_netns(&fresh, err);
	netns_leave(steal_fd(saved)); /* always go back, even if the open failed */
	if (rc < 0)
		return -1;
	*out_fd = fresh;
	return 0;
}

int netns_enter(int ns_fd, int *saved_fd, os_error *err)
{
	_cleanup_close_ int saved = -1;
	if (open_own_netns(&saved, err) < 0)
		return -1;
	if (setns(ns_fd, CLONE_NEWNET) < 0)
		return os_error_errno(err, "setns into sandbox network namespace");
	*saved_fd = steal_fd(saved);
	return 0;
}

void netns_leave(int saved_fd)
{
	if (setns(saved_fd, CLONE_NEWNET) < 0) {
		/* Not recoverable: every later socket would land in the sandbox. */
		log_error("netns: cannot return to the original network namespace: %s",
			  strerror(errno));
		abort();
	}
	close(saved_fd);
}

int netns_inode(int ns_fd, ino_t *out, os_error *err)
{
	struct stat st;
	if (fstat(ns_fd, &st) < 0)
		return os_error_errno(err, "fstat network namespace fd");
	*out = st.st_ino;
	return 0;
}
