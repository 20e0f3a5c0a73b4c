/* procsys.c - see procsys.h. Why not remount /proc/sys read-write: that
 * would also open kernel.* and vm.* to this process; the supervisor needs
 * only the per-namespace network sysctls (IPv6 off, no forwarding). */
#include "procsys.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#define PROC_SYS_NET "/proc/sys/net"

static int read_only(bool *ro, os_error *err)
{
	struct statvfs st;
	if (statvfs(PROC_SYS_NET, &st) < 0)
		return os_error_errno(err, "statvfs %s", PROC_SYS_NET);
	*ro = (st.f_flag & ST_RDONLY) != 0;
	return 0;
}

int procsys_net_writable(os_error *err)
{
	bool ro = false;
	if (read_only(&ro, err) < 0)
		return -1;
	if (!ro)
		return 0;
	if (unshare(CLONE_NEWNS) < 0)
		return os_error_errno(err,
				      "%s is read-only and a private mount namespace "
				      "to make it writable was refused (CAP_SYS_ADMIN)",
				      PROC_SYS_NET);
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return os_error_errno(err, "making the supervisor's mounts private");
	/* A bind mount inherits the read-only flag of the mount it comes
	 * from; the remount then clears it on the new mount alone. */
	if (mount(PROC_SYS_NET, PROC_SYS_NET, NULL, MS_BIND, NULL) < 0)
		return os_error_errno(err, "bind-mounting %s", PROC_SYS_NET);
	if (mount(NULL, PROC_SYS_NET, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return os_error_errno(err, "remounting %s read-write", PROC_SYS_NET);
	if (read_only(&ro, err) < 0)
		return -1;
	if (ro)
		return os_error_set(err, EROFS, "%s is still read-only after its bind mount",
				    PROC_SYS_NET);
	return 0;
}
