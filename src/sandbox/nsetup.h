/* nsetup.h - steps 2 and 3: joining the given network namespace, and (on
 * the local host) new PID/mount/IPC/UTS namespaces with a private /proc and
 * /tmp. Never lets a mount propagate back to the host. */
#ifndef OS_SANDBOX_NSETUP_H
#define OS_SANDBOX_NSETUP_H

#include "error.h"
#include "spec.h"

/* setns(CLONE_NEWNET) on the spec's fd or path; no-op without one. */
int ns_join_net(const struct launch_spec *s, os_error *err);
/* unshare(PID|mount|IPC|UTS): the next fork is pid 1 of the new namespace. */
int ns_unshare(os_error *err);
/* In the new namespaces' pid 1: private propagation, /proc, /tmp, hostname. */
int ns_setup_mounts(const struct launch_spec *s, os_error *err);

#endif
