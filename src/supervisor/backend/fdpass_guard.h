/* fdpass_guard.h - keeps a proxied socket from changing hands by descriptor
 * passing inside a sandbox: a BPF LSM program (fdpass_guard.bpf.c) attached
 * to the sandbox's cgroup2 directory refuses every AF_INET/AF_INET6 socket a
 * process of the sandbox would receive (SCM_RIGHTS and the like). Caller
 * identity then holds for a socket parked in flight: whoever parks it never
 * gets it back. It never refuses other descriptors, and never attaches
 * anywhere but the directory it is given. */
#ifndef OS_SUPERVISOR_FDPASS_GUARD_H
#define OS_SUPERVISOR_FDPASS_GUARD_H

#include <stdint.h>

#include "error.h"

struct fdpass_guard;

/* Loads the program, attaches it to cgroup_dir (a cgroup2 directory) and
 * proves it: a process placed in that cgroup tries to receive an inet
 * socket over a socketpair (must be refused) and a pipe (must arrive). The
 * cgroup is empty again afterwards. < 0 with err naming what is missing (a
 * kernel without the BPF LSM active, without BPF_LSM_CGROUP, BTF) and
 * nothing left attached. */
int fdpass_guard_attach(const char *cgroup_dir, struct fdpass_guard **out, os_error *err);

/* Inet sockets refused so far (the self-test's one included); 0 on NULL. */
uint64_t fdpass_guard_refusals(const struct fdpass_guard *g);

/* Detaches and frees; NULL is fine. Removing the cgroup detaches it too. */
void fdpass_guard_free(struct fdpass_guard *g);

#endif
