/* exit_status.c - the end of a run (see exit_status.h). The last bypass
 * records are drained before the loop stops, so none is lost with the agent. */
#include "exit_status.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "exec.h"
#include "log.h"

static void on_agent_exit(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct sup_run *r = data;
	os_error err = { 0 };
	loop_io_remove(w);
	if (backend_reap_agent(r->running, &r->status, &err) < 0) {
		log_error("%s", err.msg);
		r->failed = true;
	}
	backend_dispatch(r->inst, &err); /* last bypass records */
	/* A foreground client still to be handed the status: it ends the run. */
	if (r->attach && !r->failed && exec_attach_agent_exited(r->attach, exit_status_code(r)))
		return;
	loop_stop(l);
}

static void on_stop_signal(struct loop *l, struct loop_signal *sig,
			   const struct signalfd_siginfo *si, void *data)
{
	struct sup_run *r = data;
	log_info("signal %u: stopping", si->ssi_signo);
	r->status = (128 + (int)si->ssi_signo) << 8; /* reported as exit 128+sig */
	r->stopped_by_signal = true;
	loop_stop(l);
}

int exit_status_watch_signals(struct sup_run *r, os_error *err)
{
	if (loop_signal_add(r->loop, SIGTERM, on_stop_signal, r, NULL, err) < 0 ||
	    loop_signal_add(r->loop, SIGINT, on_stop_signal, r, NULL, err) < 0)
		return -1;
	return 0;
}

int exit_status_watch_agent(struct sup_run *r, os_error *err)
{
	return loop_io_add(r->loop, backend_agent_fd(r->running), LOOP_IN, 0, on_agent_exit, r,
			   NULL, err);
}

int exit_status_code(const struct sup_run *r)
{
	if (r->failed)
		return 1;
	if (WIFEXITED(r->status))
		return WEXITSTATUS(r->status);
	if (WIFSIGNALED(r->status))
		return 128 + WTERMSIG(r->status);
	return 1;
}
