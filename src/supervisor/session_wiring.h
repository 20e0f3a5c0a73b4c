/* session_wiring.h - what the supervisor hangs on its session with the
 * gateway (--gateway): pushed policies (reload.h) and sandbox exec requests,
 * served by the exec service once the agent runs on this host; where it runs
 * elsewhere (split) each request is answered at once with why not. */
#ifndef OS_SUPERVISOR_SESSION_WIRING_H
#define OS_SUPERVISOR_SESSION_WIRING_H

#include <jansson.h>
#include <sys/types.h>

#include "error.h"
#include "options.h"
#include "run.h"

/* Dials the gateway when o names one (r->gateway), else does nothing. */
int session_wiring_start(const struct sup_options *o, struct sup_run *r, os_error *err);
/* With a session: the exec service for the running agent (its launch spec
 * and launcher pid); r->running must be set. */
int session_wiring_exec(const struct sup_options *o, struct sup_run *r, const json_t *spec,
			pid_t launcher, os_error *err);

#endif
