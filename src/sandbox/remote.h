/* remote.h - openshell-sandbox's remote mode for the split backend: the
 * launcher dials its supervisor, both prove knowledge of the sandbox's key,
 * the launcher tries to break its own fence and reports, and it runs the
 * agent only when the supervisor sends the launch spec (docs/split-backend.md).
 * Nothing is started on any failure before that "go". */
#ifndef OS_SANDBOX_REMOTE_H
#define OS_SANDBOX_REMOTE_H

#include <stdbool.h>

#include "error.h"
#include "spec.h"

/* True when argv asks for remote mode (--supervisor). */
bool remote_requested(int argc, char **argv);
/* The whole remote mode; returns the launcher's exit status. */
int remote_main(int argc, char **argv);

/* From main.c: the common prelude (not dumpable, fds 0-2 open) and the
 * normal launch steps, shared by both modes. */
int sandbox_prelude(os_error *err);
int sandbox_launch(const struct launch_spec *s);

#endif
