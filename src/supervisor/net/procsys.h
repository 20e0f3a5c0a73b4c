/* procsys.h - making /proc/sys/net writable for the supervisor where a
 * container runtime mounted /proc/sys read-only (containerd and CRI-O do,
 * in every Pod, privileged or not). */
#ifndef OS_PROCSYS_H
#define OS_PROCSYS_H

#include "error.h"

/* Nothing when /proc/sys/net is writable already (a host, a local sandbox).
 * Otherwise moves this process to a private mount namespace (propagation
 * slave: nothing it mounts leaks to the container's) and bind-mounts
 * /proc/sys/net onto itself read-write there: only the network sysctls
 * become writable, and only to this process and the children it forks
 * afterwards. Fails, naming what was refused, without CAP_SYS_ADMIN. */
int procsys_net_writable(os_error *err);

#endif
