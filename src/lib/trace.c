/* trace.c - see trace.h. The file is opened on the first mark, not at init,
 * so a process that never marks never touches it, and kept open (CLOEXEC:
 * children open their own). */
#include "trace.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *trace_component = "?";
static int trace_fd = -1;
static bool trace_off;

void trace_init(const char *component)
{
	trace_component = component;
}

static bool trace_open(void)
{
	if (trace_fd >= 0)
		return true;
	if (trace_off)
		return false;
	const char *path = getenv("OPENSHELL_TRACE");
	if (!path || !*path) {
		trace_off = true;
		return false;
	}
	trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	trace_off = trace_fd < 0;
	return !trace_off;
}

void trace_mark(const char *fmt, ...)
{
	if (!trace_open())
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char event[160], line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(event, sizeof(event), fmt, ap);
	va_end(ap);
	int n = snprintf(line, sizeof(line), "%lld %d %s %s\n",
			 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, (int)getpid(),
			 trace_component, event);
	if (n > 0)
		(void)!write(trace_fd, line,
			     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}
