/* foreground.c - a foreground create in the run (see foreground.h). The
 * agent's stdio belong to exec_attach.c; this file only ties its end to
 * the run's: a client that has the status ends the run, one that is gone
 * takes the agent with it (as Ctrl-C would). */
#include "foreground.h"

#include <errno.h>
#include <signal.h>

#include "exec.h"
#include "log.h"

static void attach_over(void *user, bool agent_exited)
{
	struct sup_run *r = user;
	if (agent_exited) {
		loop_stop(r->loop);
		return;
	}
	/* The launcher is our unreaped child: its pid cannot have been reused. */
	pid_t pid = backend_agent_entry_pid(r->running);
	log_warn("the foreground client is gone: stopping the agent");
	if (pid > 0)
		kill(pid, SIGKILL);
}

int foreground_prepare(const struct sup_options *o, struct sup_run *r, backend_ready *ready,
		       json_t *spec, os_error *err)
{
	if (!o->attach.on)
		return 0;
	const struct exec_attach_opts ao = { .tty = o->attach.tty,
					     .rows = o->attach.rows,
					     .cols = o->attach.cols };
	if (exec_attach_new(r->loop, &ao, attach_over, r, &r->attach, err) < 0 ||
	    backend_agent_stdio(ready, exec_attach_agent_fds(r->attach), err) < 0)
		return -1;
	/* The launcher makes the terminal the agent's controlling one. */
	json_t *env = json_object_get(spec, "env");
	if (json_object_set_new(spec, "tty", json_boolean(o->attach.tty)) < 0 ||
	    (o->attach.term && json_is_object(env) &&
	     json_object_set_new(env, "TERM", json_string(o->attach.term)) < 0))
		return os_error_set(err, ENOMEM, "foreground stdio: out of memory");
	return 0;
}

int foreground_started(struct sup_run *r, os_error *err)
{
	return r->attach ? exec_attach_started(r->attach, err) : 0;
}
