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
/* In the new namespaces' pid 1: private propagation, /proc, /tmp, the
 * workspace on /sandbox, hostname. */
int ns_setup_mounts(const struct launch_spec *s, os_error *err);
/* sandbox exec: setns into every namespace of the spec's join pidfd at once
 * (the next fork lands in its PID namespace); no-op without one. */
int ns_join_sandbox(const struct launch_spec *s, os_error *err);
/* Writes our pid into each spec cgroup's cgroup.procs and checks it is
 * listed there: the agent and all it forks are counted against the limits. */
int ns_join_cgroups(const struct launch_spec *s, os_error *err);

#endif
