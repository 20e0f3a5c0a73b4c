/* foreground.h - a foreground create (--attach) in this run: the agent
 * starts on pipes or a terminal that one client attaches to through the
 * gateway (exec/exec_attach.c); the run ends when that client has the exit
 * status, and a client that leaves (or never comes) stops the agent. */
#ifndef OS_SUPERVISOR_FOREGROUND_H
#define OS_SUPERVISOR_FOREGROUND_H

#include <jansson.h>

#include "error.h"
#include "options.h"
#include "run.h"

/* Before the agent starts: its stdio, handed to the backend, and spec's
 * tty and TERM. Nothing without --attach. */
int foreground_prepare(const struct sup_options *o, struct sup_run *r, backend_ready *ready,
		       json_t *spec, os_error *err);
/* Once the agent runs: starts waiting for the client. */
int foreground_started(struct sup_run *r, os_error *err);

#endif
