/* transfer.h - the launcher's transfer mode (transfer.c): a confined process
 * that receives or sends a transfer stream (xfer.h) for a workspace path
 * instead of exec'ing a command. */
#ifndef OS_SANDBOX_TRANSFER_H
#define OS_SANDBOX_TRANSFER_H

#include <stddef.h>

#include "error.h"
#include "spec.h"

/* Runs the spec's transfer on stdin/stdout; errors go to stderr. Returns
 * the exit status: 0 done, 1 failed. */
int transfer_run(const struct launch_spec *s);

/* path (relative to the workspace, or absolute inside it) as a relative
 * path without "." or empty components; "" is the workspace itself. ".."
 * and absolute paths elsewhere are errors. Exposed for tests. */
int transfer_rel_path(const char *path, char *rel, size_t cap, os_error *err);

#endif
