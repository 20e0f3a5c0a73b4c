/* supervise.h - the launcher's (and the sandbox init's) life after the fork:
 * forward signals to the child, reap, and turn its end into an exit status.
 * Never runs untrusted code and never exits before the child it watches. */
#ifndef OS_SANDBOX_SUPERVISE_H
#define OS_SANDBOX_SUPERVISE_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/* Blocks the forwarded signals and SIGCHLD (saving the old mask) and resets
 * SIGCHLD to default, so a caller's SIG_IGN cannot auto-reap the child. */
int supervise_prepare(sigset_t *old_mask, os_error *err);
/* Waits for child, forwarding signals to it; reaps every other child too
 * (as a PID namespace's init must). Returns the exit status to report:
 * the child's code, or 128 + the signal that killed it. */
int supervise_child(pid_t child);

#endif
