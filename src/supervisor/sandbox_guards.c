/* sandbox_guards.c - see sandbox_guards.h. A guard that is missing is never
 * silent: a warning names why, and the start record shows it off. */
#include "sandbox_guards.h"

#include <errno.h>
#include <string.h>

#include "fdpass_guard.h"
#include "log.h"

static bool hard_requirement(const json_t *spec)
{
	const char *mode = json_string_value(json_object_get(spec, "landlock"));
	return mode && strcmp(mode, "hard_requirement") == 0;
}

int guards_apply(struct sandbox_guards *g, const struct sandbox_cgroups *cg, const json_t *spec,
		 os_error *err)
{
	os_error why = { 0 };
	if (cg->v2 < 0 || (size_t)cg->v2 >= cg->n)
		os_error_set(&why, ENOTSUP, "the sandbox has no cgroup2 directory to bind to");
	else if (fdpass_guard_attach(cg->dirs[cg->v2], &g->fdpass, &why) == 0)
		return 0;
	if (hard_requirement(spec))
		return os_error_set(err, why.code, "fd-passing guard (hard_requirement): %s",
				    why.msg);
	/* Info, not a warning: on such a kernel every sandbox would warn (and a
	 * foreground create would show it among the agent's own stderr); the
	 * start line says "fd-passing guard off" and docs/security.md why. */
	log_info("fd-passing guard unavailable: %s; a proxied socket parked in flight or passed "
		 "between processes is not prevented (docs/security.md)",
		 why.msg);
	return 0;
}

const char *guards_fdpass_state(const struct sandbox_guards *g)
{
	return g->fdpass ? "on" : "off";
}

void guards_release(struct sandbox_guards *g)
{
	fdpass_guard_free(g->fdpass);
	g->fdpass = NULL;
}
