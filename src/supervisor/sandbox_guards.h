/* sandbox_guards.h - kernel guards the supervisor adds to a sandbox's
 * cgroup before the agent starts: today the fd-passing guard
 * (backend/fdpass_guard.h). Where one cannot be had, the run goes on with a
 * warning and the start record says so, unless the policy asks for
 * hard_requirement (as for Landlock): then the agent never starts. */
#ifndef OS_SUPERVISOR_SANDBOX_GUARDS_H
#define OS_SUPERVISOR_SANDBOX_GUARDS_H

#include <jansson.h>

#include "cgroup.h"
#include "error.h"

struct fdpass_guard;

struct sandbox_guards {
	struct fdpass_guard *fdpass; /* NULL: not guarded */
};

/* spec: the launch spec (its "landlock" mode decides best effort). */
int guards_apply(struct sandbox_guards *g, const struct sandbox_cgroups *cg, const json_t *spec,
		 os_error *err);
/* "on" or "off", for the start record. */
const char *guards_fdpass_state(const struct sandbox_guards *g);
void guards_release(struct sandbox_guards *g);

#endif
