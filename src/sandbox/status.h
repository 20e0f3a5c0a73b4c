/* status.h - the launcher's status channel: JSON lines on the --status-fd and
 * human lines on stderr (format in docs/launch-spec.md).
 * Never writes anything that came from the agent's environment values. */
#ifndef OS_SANDBOX_STATUS_H
#define OS_SANDBOX_STATUS_H

#include <stdnoreturn.h>

#include "error.h"

/* Exit statuses of the launcher itself (the agent's own are passed through). */
enum {
	SBX_EXIT_LAUNCH_FAILED = 125,
	SBX_EXIT_EXEC_FAILED = 126,
	SBX_EXIT_NOT_FOUND = 127,
	SBX_EXIT_USAGE = 2,
};

/* fd < 0 means "no status fd": only stderr is used. */
void status_init(int fd);
int status_get_fd(void);
/* Forgets the status fd in this process (after closing it). */
void status_forget(void);

/* {"step":S,"ok":true} plus "abi":N when abi >= 0. */
void status_ok(const char *step, int abi);
/* {"step":S,"warning":"..."} and a stderr line. */
void status_warn(const char *step, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* {"step":S,"errno":N,"message":"..."} and a stderr line. */
void status_fail(const char *step, const os_error *err);
/* status_fail then _exit(code): for pre-exec code in a forked child. */
noreturn void status_die(const char *step, const os_error *err, int code);

#endif
