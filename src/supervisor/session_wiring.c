/* session_wiring.c - the session's callbacks into this run (see
 * session_wiring.h). Whether exec can join the agent is the backend's to
 * say (backend_agent_local), never guessed from its name. */
#include "session_wiring.h"

#include "exec.h"
#include "log.h"
#include "reload.h"
#include "session.h"

/* An exec request on the session: served once the agent runs. */
static void on_exec(void *user, const struct session_msg *m)
{
	struct sup_run *r = user;
	if (r->exec)
		exec_service_request(r->exec, m);
	else
		log_warn("exec %s refused: no local agent to join (yet)", m->exec_id);
}

int session_wiring_start(const struct sup_options *o, struct sup_run *r, os_error *err)
{
	if (!o->gateway_url)
		return 0;
	struct gw_session_options go = { .gateway_url = o->gateway_url,
					 .gateway_ca = o->gateway_ca,
					 .token_file = o->token_file,
					 .sandbox_id = o->desc.sandbox_id,
					 .apply = reload_apply_pushed,
					 .apply_user = r,
					 .exec = on_exec,
					 .exec_user = r };
	if (gw_session_new(r->loop, &go, &r->gateway, err) < 0)
		return os_error_prefix(err, "gateway session");
	return 0;
}

int session_wiring_exec(const struct sup_options *o, struct sup_run *r, const json_t *spec,
			pid_t launcher, os_error *err)
{
	bool local = backend_agent_local(r->running);
	struct exec_host h = { .loop = r->loop,
			       .egress = r->egress,
			       .launcher = o->desc.launcher,
			       .agent_spec = spec,
			       .agent_launcher = launcher,
			       .unsupported =
				       local ? NULL
					     : "exec, upload, download and port-forward are "
					       "not supported by this sandbox's backend (its "
					       "agent runs in another Pod)" };
	if (!r->gateway)
		return 0;
	if (exec_service_new(&h, &r->exec, err) < 0)
		return -1;
	exec_service_set_session(r->exec, r->gateway);
	exec_service_set_attach(r->exec, r->attach);
	return 0;
}
