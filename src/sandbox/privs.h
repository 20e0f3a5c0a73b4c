/* privs.h - step 4 (privilege drop) and step 5 (core dumps, rlimits, dumpable).
 * Each restriction is verified after it is applied by trying to undo it;
 * a restriction that cannot be verified is a failure, never a warning. */
#ifndef OS_SANDBOX_PRIVS_H
#define OS_SANDBOX_PRIVS_H

#include <sys/types.h>

#include "error.h"
#include "spec.h"

/* Supplementary groups, gid, capability bounding/ambient/inheritable sets,
 * uid; verifies root cannot be regained; sets PR_SET_NO_NEW_PRIVS. When not
 * started as root, uid/gid must already be the target ones. */
int privs_drop(uid_t uid, gid_t gid, os_error *err);

/* RLIMIT_CORE 0/0, the spec's rlimits (soft = hard), not dumpable; read back. */
int privs_limits(const struct launch_spec *s, os_error *err);

#endif
