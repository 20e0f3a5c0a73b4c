/* audit_sink.h - where the backends' audit records (bypass attempts) go: the
 * --audit-log file the egress proxy also appends to, else stderr. One JSON
 * line per record; the sink never blocks the supervisor on a failed write. */
#ifndef OS_SUPERVISOR_AUDIT_SINK_H
#define OS_SUPERVISOR_AUDIT_SINK_H

#include <jansson.h>

#include "error.h"

/* Opens path (O_APPEND, mode 0600) into *fd; path NULL: *fd is stderr. */
int audit_sink_open(const char *path, int *fd, os_error *err);
/* backend_context.audit: user points at the fd. */
void audit_sink_write(void *user, const json_t *record);

#endif
