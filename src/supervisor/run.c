/* run.c - one supervisor run (see run.h): the backend contract's steps in
 * order, each a function that stops at the first error, then the loop, then
 * teardown in the reverse order of what it holds. Nothing untrusted runs
 * until confirm has tried to break the boundary. */
#include "run.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit_sink.h"
#include "cleanup.h"
#include "egress.h"
#include "exec.h"
#include "exit_status.h"
#include "foreground.h"
#include "json.h"
#include "launch_spec.h"
#include "sandbox_limits.h"
#include "log.h"
#include "reload.h"
#include "selfguard.h"
#include "session.h"
#include "session_wiring.h"
#include "trace.h"

/* Test-only hook: OPENSHELL_TEST_FAIL_STEP=proxy leaves the proxy unstarted,
 * the real condition confirm must catch (nothing answers on the proxy port). */
static bool proxy_withheld(void)
{
	const char *v = getenv("OPENSHELL_TEST_FAIL_STEP");
	return v && strcmp(v, "proxy") == 0;
}

static void on_backend_event(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct sup_run *r = data;
	os_error err = { 0 };
	if (backend_dispatch(r->inst, &err) < 0)
		log_warn("bypass monitor: %s", err.msg);
}

static int open_loop(const struct sup_options *o, struct sup_run *r, os_error *err)
{
	if (loop_new(&r->loop, err) < 0 || exit_status_watch_signals(r, err) < 0 ||
	    reload_watch_signal(r, err) < 0 || session_wiring_start(o, r, err) < 0)
		return -1;
	return 0;
}

/* attach, the proxy on the backend's endpoint, confirm. The proxy listens
 * before confirm: confirm must reach it. */
static int boundary_up(const struct sup_options *o, const struct backend_context *ctx,
		       struct sup_run *r, struct sockaddr_storage *paddr, backend_ready *ready,
		       os_error *err)
{
	backend_bound bound = { 0 };
	socklen_t plen = 0;
	if (backend_attach(&o->desc, ctx, &r->inst, &bound, err) < 0)
		return -1;
	trace_mark("attached");
	if (backend_proxy_endpoint(&bound, paddr, &plen, err) < 0 ||
	    (!proxy_withheld() && egress_start(r->loop, (struct sockaddr *)paddr, plen, &o->egress,
					       &r->egress, err) < 0))
		return os_error_prefix(err, "proxy");
	struct backend_transparent tp;
	backend_transparent_take(&bound, &tp);
	if (!r->egress) { /* the test hook withheld the proxy: nothing serves them */
		if (tp.tcp_fd >= 0)
			close(tp.tcp_fd);
		if (tp.dns_fd >= 0)
			close(tp.dns_fd);
		if (tp.dns_tcp_fd >= 0)
			close(tp.dns_tcp_fd);
	} else if (egress_serve_transparent(r->egress, tp.tcp_fd, tp.dns_fd, tp.dns_tcp_fd,
					    o->desc.transparent_ports, o->desc.n_transparent_ports,
					    err) < 0)
		return os_error_prefix(err, "transparent path");
	trace_mark("proxy-listening");
	if (backend_confirm(&bound, ready, err) < 0)
		return -1;
	trace_mark("confirmed");
	return 0;
}

/* The limits, the launch spec, the agent: only now does workload code run. */
static int agent_up(const struct sup_options *o, struct sup_run *r, backend_ready *ready,
		    const char *url, struct sandbox_cgroups *cg, json_t **spec,
		    backend_running *running, os_error *err)
{
	limits_apply(ready, o, cg);
	*spec = launch_spec_new(o, url);
	if (!*spec)
		return os_error_set(err, ENOMEM, "building the launch spec: out of memory");
	limits_fill_spec(*spec, o, cg);
	/* The workspace is this host's, and so are the launcher's passwd and group. */
	if (egress_fill_spec(r->egress, *spec, url, err) < 0 ||
	    (o->egress.workdir && launch_spec_sandbox_account(*spec, err) < 0) ||
	    (o->sandbox_uid && launch_spec_sandbox_uid(*spec, o->sandbox_uid) < 0) ||
	    (o->egress.workdir && launch_spec_workdir(*spec, o->egress.workdir, err) < 0))
		return os_error_prefix(err, "building the launch spec");
	if (guards_apply(&r->guards, cg, *spec, err) < 0)
		return -1;
	if (foreground_prepare(o, r, ready, *spec, err) < 0 ||
	    backend_start_agent(ready, *spec, running, err) < 0)
		return -1;
	trace_mark("agent-started");
	r->running = running;
	return foreground_started(r, err);
}

/* Caller identity is rooted at a local process: the launcher we forked, or
 * the one a remote backend found. A remote backend with none (split in pod
 * mode) binds no identity, and the proxy then denies by binary. Identity is
 * read from the root's network namespace: an agent that already exited
 * (`true`) has none left to read, nothing of it can connect any more, so
 * that is no error; its exit is reported as usual. */
static int bind_identity(struct sup_run *r, pid_t entry, const json_t *spec, os_error *err)
{
	bool local = backend_agent_local(r->running);
	if (entry <= 0)
		return local ? os_error_set(err, ESRCH, "the agent's launcher has no pid") : 0;
	/* Every process of the sandbox is in each of its cgroups (the launcher
	 * and exec relays join them first): one is enough to find them all. */
	const char *cgroup = json_string_value(json_array_get(json_object_get(spec, "cgroups"), 0));
	if (egress_bind_agent(r->egress, entry, cgroup, err) == 0)
		return 0;
	/* The entry may be gone (a zombie has no namespaces to read) a moment
	 * before the launcher's pidfd says so: when its namespace is what is
	 * missing, wait briefly for that word instead of failing the run. */
	bool gone = err->code == ENOENT || err->code == ESRCH;
	struct pollfd p = { .fd = local ? backend_agent_fd(r->running) : -1, .events = POLLIN };
	if (local && poll(&p, 1, gone ? 2000 : 0) == 1) {
		memset(err, 0, sizeof(*err));
		return 0;
	}
	return -1;
}

static int watch_agent(const struct sup_options *o, struct sup_run *r, const json_t *spec,
		       os_error *err)
{
	pid_t entry = backend_agent_entry_pid(r->running);
	int efd = backend_event_fd(r->inst);
	if (bind_identity(r, entry, spec, err) < 0 ||
	    session_wiring_exec(o, r, spec, entry, err) < 0 ||
	    exit_status_watch_agent(r, err) < 0 ||
	    (efd >= 0 && loop_io_add(r->loop, efd, LOOP_IN, 0, on_backend_event, r, NULL, err) < 0))
		return os_error_prefix(err, "watching the agent");
	return 0;
}

static void teardown(struct sup_run *r, struct sandbox_cgroups *cg)
{
	backend_teardown(&r->inst); /* kills the agent if still running */
	exec_service_free(r->exec); /* kills relays still running */
	exec_attach_free(r->attach);
	limits_release(cg); /* last: anything still in the sandbox's cgroups is killed */
	guards_release(&r->guards);
	gw_session_free(r->gateway);
	egress_free(r->egress);
	if (r->loop)
		loop_run_once(r->loop, 0, NULL); /* deferred frees of closed connections */
	loop_free(r->loop);
}

int sup_run(const struct sup_options *o, int audit_fd, int *exit_code, os_error *err)
{
	struct backend_context ctx = { .audit = audit_sink_write, .audit_user = &audit_fd };
	struct sup_run r = { 0 };
	backend_ready ready = { 0 };
	backend_running running = { 0 };
	struct sockaddr_storage paddr;
	struct sandbox_cgroups cg = { .v2 = -1 };
	_cleanup_json_ json_t *spec = NULL;
	char url[64];
	int rc = -1;

	trace_mark("start %s", o->desc.sandbox_id);
	if (open_loop(o, &r, err) < 0 || boundary_up(o, &ctx, &r, &paddr, &ready, err) < 0 ||
	    launch_spec_proxy_url(&paddr, url, sizeof url, err) < 0 ||
	    agent_up(o, &r, &ready, url, &cg, &spec, &running, err) < 0 ||
	    watch_agent(o, &r, spec, err) < 0)
		goto out;
	/* Setup is over: from here on the supervisor only parses hostile input. */
	if (selfguard_apply(err) < 0)
		goto out;
	trace_mark("running");
	log_info("sandbox %s running (backend %s, proxy %s, fd-passing guard %s)",
		 o->desc.sandbox_id, o->desc.backend, url, guards_fdpass_state(&r.guards));
	if (loop_run(r.loop, err) < 0)
		goto out;
	*exit_code = exit_status_code(&r);
	rc = 0;
out:
	teardown(&r, &cg);
	return rc;
}
