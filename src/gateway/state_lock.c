/* state_lock.c - the state directory's lock (see state_lock.h). Two gateways
 * on one directory fought over its socket and pid file, and the one that
 * exited first unlinked both under the other; the second now refuses to
 * start and says who holds the directory. */
#include "state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "parse.h"

int state_lock_take(const char *dir, int *fd, os_error *err)
{
	char path[PATH_MAX + 32];
	if (str_format(path, sizeof(path), err, "%s/gateway.lock", dir) < 0)
		return -1;
	_cleanup_close_ int lfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0)
		return os_error_errno(err, "opening %s", path);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	if (fcntl(lfd, F_SETLK, &fl) < 0) {
		if (errno != EACCES && errno != EAGAIN)
			return os_error_errno(err, "locking %s", path);
		struct flock who = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		char holder[48] = "another process";
		if (fcntl(lfd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK)
			snprintf(holder, sizeof(holder), "pid %d", (int)who.l_pid);
		return os_error_set(err, EBUSY,
				    "state directory %s is in use by another openshell-gateway "
				    "(%s holds %s): one gateway per state directory; stop that one "
				    "(openshell gateway stop) or give this one another directory "
				    "(--state-dir, OPENSHELL_GATEWAY_STATE_DIR)",
				    dir, holder, path);
	}
	*fd = steal_fd(lfd);
	return 0;
}
