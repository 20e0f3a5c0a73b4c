/* sandbox_limits.c - the operator's limits (see sandbox_limits.h). A
 * cgroup that cannot be made is a warning, not a failure, and the limits
 * never silently vanish: they become rlimits. */
#include "sandbox_limits.h"

#include "log.h"

void limits_apply(const backend_ready *ready, const struct sup_options *o,
		  struct sandbox_cgroups *cg)
{
	struct cgroup_limits lim = { o->max_processes, o->max_memory_mb << 20 };
	os_error err = { 0 };
	if (backend_make_cgroups(ready, &lim, cg, &err) < 0 &&
	    (lim.max_processes || lim.max_memory_bytes))
		log_warn("%s; falling back to rlimits (RLIMIT_NPROC per uid, RLIMIT_AS per "
			 "process)",
			 err.msg);
	else if (err.code)
		log_warn("%s; the sandbox has no cgroup (caller identity scans its network "
			 "namespace)",
			 err.msg);
}

void limits_fill_spec(json_t *spec, const struct sup_options *o, const struct sandbox_cgroups *cg)
{
	/* The sandbox's cgroups hold the operator's limits for all of it; only
	 * without them do the weaker per-uid / per-process rlimits stand in. */
	if (cg->n) {
		json_t *dirs = json_array();
		for (size_t i = 0; i < cg->n; i++)
			json_array_append_new(dirs, json_string(cg->dirs[i]));
		json_object_set_new(spec, "cgroups", dirs);
		return;
	}
	json_t *rl = json_object();
	if (o->max_processes)
		json_object_set_new(rl, "nproc", json_integer((json_int_t)o->max_processes));
	if (o->max_memory_mb)
		json_object_set_new(rl, "as", json_integer((json_int_t)(o->max_memory_mb << 20)));
	if (json_object_size(rl))
		json_object_set_new(spec, "rlimits", rl);
	else
		json_decref(rl);
}

void limits_release(struct sandbox_cgroups *cg)
{
	os_error err = { 0 };
	if (cgroup_destroy(cg, &err) < 0)
		log_error("%s", err.msg);
}
