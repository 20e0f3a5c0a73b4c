/* run.h - one supervisor run: the isolation backend contract in order on one
 * event loop (attach -> proxy -> confirm -> limits + launch spec -> start
 * agent -> watch -> teardown). Talks to the backend only through backend.h;
 * never starts the agent after a failed step. struct sup_run is the state
 * the orchestration files (exit_status.c, reload.c, session_wiring.c) share. */
#ifndef OS_SUPERVISOR_RUN_H
#define OS_SUPERVISOR_RUN_H

#include <stdbool.h>

#include "backend.h"
#include "error.h"
#include "loop.h"
#include "options.h"
#include "sandbox_guards.h"

struct egress;
struct gw_session;
struct exec_service;
struct exec_attach;

/* Everything the running supervisor waits on. */
struct sup_run {
	struct loop *loop;
	struct backend_instance *inst;
	backend_running *running; /* set once the agent runs */
	struct egress *egress;
	struct gw_session *gateway;
	struct exec_service *exec; /* sandbox exec, once the agent runs */
	struct sandbox_guards guards;
	struct exec_attach *attach; /* a foreground create's stdio (--attach), or NULL */
	int status; /* the agent's wait status (or 128+signal << 8) */
	bool stopped_by_signal;
	bool failed; /* the agent's end could not be collected */
};

/* Runs the sandbox to its end and tears it down. 0 with *exit_code (the
 * agent's, see exit_status.h) once the agent ran; < 0 when a step failed
 * (the agent never started, or the loop broke). audit_fd: see audit_sink.h. */
int sup_run(const struct sup_options *o, int audit_fd, int *exit_code, os_error *err);

#endif
