/* error.c - implementation of the os_error convention (see error.h).
 * Never allocates: messages are truncated to OS_ERROR_MSG_MAX, never overflow. */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void os_error_clear(os_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

int os_error_set(os_error *err, int code, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	err->code = code;
	return -1;
}

int os_error_errno(os_error *err, const char *fmt, ...)
{
	int saved = errno;
	if (!err)
		return -1;
	char head[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	snprintf(err->msg, sizeof err->msg, "%s: %s", head, strerror(saved));
	err->code = saved;
	errno = saved;
	return -1;
}

int os_error_prefix(os_error *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char head[OS_ERROR_MSG_MAX];
	char old[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	snprintf(err->msg, sizeof err->msg, "%s: %s", head, old);
	return -1;
}
