/* selfguard.h - the supervisor confines itself once the agent is running:
 * no new privileges, and a seccomp filter refusing the kernel calls it never
 * needs after setup. It must never take away what the running supervisor
 * still uses (netlink, nftables, /proc reads for caller identity, setns for
 * teardown) nor drop capabilities: only syscalls are blocked. */
#ifndef OS_SUPERVISOR_SELFGUARD_H
#define OS_SUPERVISOR_SELFGUARD_H

#include "error.h"

/* Sets PR_SET_NO_NEW_PRIVS, loads the filter on every thread (TSYNC) and
 * verifies it: /proc/self/status must report NoNewPrivs 1 and Seccomp 2, and
 * a probing mount() must fail with EPERM. */
int selfguard_apply(os_error *err);

#endif
