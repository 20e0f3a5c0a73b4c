/* error.h - the one error convention of the project.
 * Fallible functions return < 0 and fill an os_error (errno + message);
 * callers add context while propagating. Only main() and API boundaries print. */
#ifndef OS_ERROR_H
#define OS_ERROR_H

#include <stddef.h>

#define OS_ERROR_MSG_MAX 1024

typedef struct os_error {
	int code; /* errno-style code, 0 when unset */
	char msg[OS_ERROR_MSG_MAX]; /* human message, always NUL-terminated */
} os_error;

/* Sets err (if non-NULL) to code + formatted message; returns -1. */
int os_error_set(os_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like os_error_set with the current errno appended as ": strerror". */
int os_error_errno(os_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "context: " to the existing message, keeping the code; returns -1. */
int os_error_prefix(os_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Resets err to the empty state. */
void os_error_clear(os_error *err);

#endif
