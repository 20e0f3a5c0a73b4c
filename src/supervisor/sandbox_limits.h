/* sandbox_limits.h - the operator's limits (--max-processes, --max-memory-mb) for the
 * whole sandbox: the sandbox's cgroups where the backend can make them
 * (backend_make_cgroups), else the weaker per-uid / per-process rlimits in
 * the launch spec. Owns the cgroups from their making to their removal. */
#ifndef OS_SUPERVISOR_SANDBOX_LIMITS_H
#define OS_SUPERVISOR_SANDBOX_LIMITS_H

#include <jansson.h>

#include "backend.h"
#include "cgroup.h"
#include "options.h"

/* Makes the cgroups through the backend; where none can be made, logs a
 * warning and leaves cg empty (the rlimits then stand in). Never fails. */
void limits_apply(const backend_ready *ready, const struct sup_options *o,
		  struct sandbox_cgroups *cg);
/* Adds "cgroups", or without them "rlimits", to the launch spec. */
void limits_fill_spec(json_t *spec, const struct sup_options *o, const struct sandbox_cgroups *cg);
/* Last at teardown: kills whatever is still counted in the cgroups, removes them. */
void limits_release(struct sandbox_cgroups *cg);

#endif
