/* filter.h - step 7: the agent's seccomp filter (libseccomp, linked static).
 * Default allow with an explicit deny list; foreign architectures (i386 via
 * int 0x80, x32) kill the process. Never installed before the privilege drop. */
#ifndef OS_SANDBOX_FILTER_H
#define OS_SANDBOX_FILTER_H

#include "error.h"

/* Builds and loads the filter on this thread, then verifies it by calling a
 * denied syscall and expecting EPERM. */
int filter_install(os_error *err);

#endif
