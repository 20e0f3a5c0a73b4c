/* state_lock.h - one gateway per state directory: a lock on STATE/gateway.lock
 * held for the gateway's lifetime. A POSIX record lock, so the driver's
 * forked monitors do not inherit it and the next gateway can start while
 * sandboxes run on. */
#ifndef OS_GATEWAY_STATE_LOCK_H
#define OS_GATEWAY_STATE_LOCK_H

#include "error.h"

/* Locks dir for this process; *fd keeps it (never close it while serving).
 * EBUSY, naming the holder's pid, when another gateway has it. */
int state_lock_take(const char *dir, int *fd, os_error *err);

#endif
