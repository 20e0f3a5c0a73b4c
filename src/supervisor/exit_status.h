/* exit_status.h - how a run ends and what it reports: the agent's exit (seen
 * on the backend's agent fd), SIGTERM/SIGINT (stop; 128+signal), and the exit
 * code the supervisor returns (the agent's, 128+signal when it was killed). */
#ifndef OS_SUPERVISOR_EXIT_STATUS_H
#define OS_SUPERVISOR_EXIT_STATUS_H

#include "error.h"
#include "run.h"

/* SIGTERM and SIGINT stop the loop (the agent is torn down after it). */
int exit_status_watch_signals(struct sup_run *r, os_error *err);
/* The agent's end stops the loop; r->running must be set. */
int exit_status_watch_agent(struct sup_run *r, os_error *err);
/* The code to exit with once the loop stopped. */
int exit_status_code(const struct sup_run *r);

#endif
