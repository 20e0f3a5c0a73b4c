/* injection.h - is a process still the binary its /proc/PID/exe names, or
 * is foreign code loaded into it? Per-binary policy trusts an executable's
 * code; a library preloaded or loaded by configuration (LD_PRELOAD,
 * LD_AUDIT, OPENSSL_CONF/OPENSSL_MODULES/OPENSSL_ENGINES, GCONV_PATH) from
 * a place the agent can write makes it someone else's code. The check
 * reads /proc/PID/maps (every executable file mapping must come from the
 * policy's read-only tree, or be the executable itself) and
 * /proc/PID/environ (those variables may only name read-only paths).
 * Detected, not prevented: code copied into anonymous memory and the file
 * unmapped, or an environment scrubbed in place, leaves no trace here. */
#ifndef OS_SUPERVISOR_INJECTION_H
#define OS_SUPERVISOR_INJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define INJECTION_WHY_MAX 256
#define INJECTION_MAPS_CAP (8u << 20) /* larger maps cannot be verified: refused */
#define INJECTION_ENVIRON_CAP (1u << 20)

/* The policy's filesystem lists as the agent sees them. A path is trusted
 * when the most specific entry covering it is read_only. */
struct injection_tree {
	const char *const *read_only;
	size_t n_read_only;
	const char *const *read_write;
	size_t n_read_write;
};

bool injection_path_trusted(const struct injection_tree *t, const char *path);

/* 0: nothing foreign found; 1: injected, why says what and where; -1:
 * /proc unreadable (err), which callers treat as "not that binary". */
int injection_check(pid_t pid, const struct injection_tree *t, char *why, size_t cap,
		    os_error *err);

/* Test seams over the text of /proc/PID/maps and /proc/PID/environ. */
int injection_scan_maps(const char *maps, size_t len, const char *exe,
			const struct injection_tree *t, char *why, size_t cap);
int injection_scan_environ(const char *env, size_t len, const struct injection_tree *t, char *why,
			   size_t cap);

#endif
