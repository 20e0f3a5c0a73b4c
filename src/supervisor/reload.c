/* reload.c - policy updates (see reload.h): the result of each is logged;
 * the audit record is egress's. Signals are served only by loop_run, once
 * the proxy runs. */
#include "reload.h"

#include <errno.h>
#include <signal.h>

#include "egress.h"
#include "log.h"

static void on_reload_signal(struct loop *l, struct loop_signal *sig,
			     const struct signalfd_siginfo *si, void *data)
{
	struct sup_run *r = data;
	os_error err = { 0 };
	if (egress_reload(r->egress, &err) < 0)
		log_warn("policy update refused (running policy kept): %s", err.msg);
	else
		log_info("policy updated");
}

int reload_watch_signal(struct sup_run *r, os_error *err)
{
	return loop_signal_add(r->loop, SIGHUP, on_reload_signal, r, NULL, err);
}

int reload_apply_pushed(void *user, const char *yaml, size_t len, uint64_t revision, os_error *err)
{
	struct sup_run *r = user;
	if (!r->egress)
		return os_error_set(err, EAGAIN, "the proxy is not running");
	return egress_apply_policy_text(r->egress, yaml, len, revision, err);
}
