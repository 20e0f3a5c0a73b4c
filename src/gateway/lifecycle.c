/* lifecycle.c - sandbox phases: Provisioning -> Ready -> Stopping -> Stopped
 * -> Starting -> Ready, Succeeded / Failed (the agent ended by itself, with
 * its exit code, as a Pod's), Error (with the reason), Deleting. Every action
 * persists the intent ("desired") before the driver acts, and a periodic
 * pass drives each sandbox toward it from what the driver reports, so a
 * gateway that crashed anywhere resumes where it stopped. Never forgets a
 * sandbox silently: what cannot be re-adopted is marked Error with why. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "gateway.h"
#include "json.h"
#include "log.h"
#include "trace.h"
#include "loop.h"

static const char *str(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

static void set(json_t *row, const char *phase, const char *message)
{
	json_object_set_new(row, "phase", json_string(phase));
	if (message)
		json_object_set_new(row, "message", json_string(message));
}

/* Writes row. err may be NULL (the pass's own saves): a failure is then
 * still logged (once, storage_faults.c) and shown as the sandbox's message. */
static int save(struct gateway *gw, json_t *row, os_error *err)
{
	os_error local = { 0 };
	if (!err)
		err = &local;
	if (store_sandbox_update(gw->store, row, err) < 0) {
		if (err->code == ESTALE)
			log_warn("sandbox %s: %s", str(row, "name"), err->msg);
		else
			storage_fault(gw, str(row, "id"), str(row, "name"), "saving its phase",
				      err);
		return -1;
	}
	storage_ok(gw, str(row, "id"), str(row, "name"));
	server_sandboxes_changed(gw);
	return 0;
}

static void set_revision(struct gateway *gw, const json_t *row, json_int_t rev, const char *status,
			 const char *message)
{
	os_error err = { 0 };
	if (store_policy_set_status(gw->store, str(row, "id"), rev, status, message, &err) < 0)
		storage_fault(gw, str(row, "id"), str(row, "name"), "recording a policy status",
			      &err);
}

/* Test-only: OPENSHELL_TEST_GATEWAY_CRASH=after-spawn kills the gateway
 * between the driver's spawn and the write that records it, the worst moment
 * for a crash; the restart must still end consistent. */
static void crash_point(const char *where)
{
	const char *v = getenv("OPENSHELL_TEST_GATEWAY_CRASH");
	if (v && !strcmp(v, where))
		raise(SIGKILL);
}

static int act_create(struct gateway *gw, json_t *row, json_t *rec, os_error *err)
{
	const struct driver_ops *ops = gw->driver->ops;
	bool start = !strcmp(str(row, "phase"), "Starting");
	if ((start ? ops->start : ops->create)(gw->driver, rec, err) < 0) {
		if (!storage_is_full(err->code)) {
			set(row, "Error", err->msg);
			save(gw, row, NULL);
			return -1;
		}
		/* No space for its files: not the sandbox's fault. It keeps its
		 * phase and the pass starts it again once space returns. */
		char msg[OS_ERROR_MSG_MAX + 64];
		snprintf(msg, sizeof(msg), "waiting for disk space to start it: %s", err->msg);
		set(row, str(row, "phase"), msg);
		save(gw, row, NULL);
		storage_fault(gw, str(row, "id"), str(row, "name"), "starting it", err);
		return -1;
	}
	crash_point("after-spawn");
	return save(gw, row, err);
}

int lifecycle_act(struct gateway *gw, json_t *row, const char *action, os_error *err)
{
	json_t *rec = json_object_get(row, "record");
	const char *phase = str(row, "phase");
	if (!strcmp(action, "create"))
		return act_create(gw, row, rec, err);
	if (!strcmp(str(row, "desired"), "deleted"))
		return os_error_set(err, EBUSY, "sandbox \"%s\" is being deleted",
				    str(row, "name"));
	if (!strcmp(action, "start")) {
		if (!lifecycle_phase_ended(phase))
			return os_error_set(err, EBUSY,
					    "sandbox \"%s\" is %s: only a Stopped, Succeeded, "
					    "Failed or Error sandbox can be started",
					    str(row, "name"), phase);
		json_object_set_new(row, "desired", json_string("running"));
		json_object_set_new(row, "exit_code", json_null());
		set(row, "Starting", "");
		if (save(gw, row, err) < 0)
			return -1;
		return act_create(gw, row, rec, err);
	}
	if (!strcmp(action, "stop")) {
		json_object_set_new(row, "desired", json_string("stopped"));
		if (strcmp(phase, "Stopped") != 0)
			set(row, "Stopping", "");
	} else if (!strcmp(action, "delete")) {
		json_object_set_new(row, "desired", json_string("deleted"));
		set(row, "Deleting", "");
	} else
		return os_error_set(err, EINVAL, "unknown action %s", action);
	if (save(gw, row, err) < 0)
		return -1;
	lifecycle_tick(gw);
	return 0;
}

bool lifecycle_phase_ended(const char *phase)
{
	return !strcmp(phase, "Stopped") || !strcmp(phase, "Error") ||
	       !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
}

bool lifecycle_session_lost(const json_t *row)
{
	/* The message is the stored fact: only drive_session writes it, and
	 * the next phase change replaces it. */
	return !strcmp(str(row, "phase"), "Provisioning") &&
	       !strcmp(str(row, "message"), LIFECYCLE_SESSION_LOST);
}

bool lifecycle_running(struct gateway *gw, const char *id)
{
	_cleanup_json_ json_t *row = NULL;
	if (store_sandbox_get(gw->store, id, &row, NULL) < 0)
		return false;
	const char *p = str(row, "phase");
	return !strcmp(p, "Provisioning") || !strcmp(p, "Starting") || !strcmp(p, "Ready") ||
	       !strcmp(p, "Stopping");
}

/* Resolves pending policy revisions from what the supervisor reported. */
static void settle_policies(struct gateway *gw, const json_t *row, const json_t *st,
			    bool became_ready)
{
	const char *id = str(row, "id");
	_cleanup_json_ json_t *revs = NULL;
	os_error err = { 0 };
	if (store_policy_list(gw->store, id, &revs, &err) < 0) {
		storage_fault(gw, id, str(row, "name"), "reading its policy revisions", &err);
		return;
	}
	json_int_t events = json_integer_value(json_object_get(st, "policy_events"));
	const json_t *last = json_object_get(st, "policy_last");
	bool supported = json_is_true(json_object_get(st, "policy_supported"));
	size_t i;
	json_t *r;
	json_array_foreach (revs, i, r) {
		json_int_t rev = json_integer_value(json_object_get(r, "revision"));
		if (strcmp(str(r, "status"), "pending") != 0)
			continue;
		if (!supported) {
			set_revision(gw, row, rev, "failed",
				     "this host's openshell-supervisor cannot load "
				     "policies (no --policy support)");
		} else if (i > 0 && (became_ready || events > json_integer_value(json_object_get(
								      r, "audit_mark")))) {
			set_revision(gw, row, rev, "superseded", "a newer revision replaced it");
		} else if (became_ready) {
			set_revision(gw, row, rev, "loaded", "");
		} else if (events > json_integer_value(json_object_get(r, "audit_mark")) && last) {
			bool ok = !strcmp(str(last, "reason"), "policy_loaded");
			const char *msg = str(last, "message");
			if (!*msg)
				msg = str(last, "detail");
			set_revision(gw, row, rev, ok ? "loaded" : "failed",
				     ok ? "" : (*msg ? msg : "the supervisor rejected it"));
		}
	}
}

static void exit_from(json_t *row, const json_t *st)
{
	const json_t *ec = json_object_get(st, "exit_code");
	json_object_set_new(row, "exit_code",
			    json_is_integer(ec) ? json_incref((json_t *)ec) : json_null());
}

/* Ready = the backend is healthy AND the supervisor's session is live
 * (when the driver says its supervisor keeps one). Losing the session while
 * Ready drops the sandbox back to Provisioning until it redials. */
static void drive_session(struct gateway *gw, json_t *row)
{
	bool live = sessions_live(gw, str(row, "id"));
	bool ready = !strcmp(str(row, "phase"), "Ready");
	if (live && !ready) {
		set(row, "Ready", "");
		save(gw, row, NULL);
		trace_mark("ready-saved %s", str(row, "id"));
	} else if (!live && ready) {
		log_warn("sandbox %s: supervisor session lost", str(row, "name"));
		set(row, "Provisioning", LIFECYCLE_SESSION_LOST);
		save(gw, row, NULL);
	} else if (!live && !strcmp(str(row, "message"), "")) {
		/* Say what Ready still waits for (once: a save bumps the version). */
		set(row, str(row, "phase"), "running; waiting for the supervisor's session");
		save(gw, row, NULL);
	}
}

/* A foreground create with --rm whose driver attached it (spec.attach.remove):
 * deleted here when its agent ends, so that a client killed on the way
 * (which cannot delete it any more) leaves nothing behind. */
static bool removes_itself(const json_t *row)
{
	const json_t *spec = json_object_get(json_object_get(row, "record"), "spec");
	return json_is_true(json_object_get(json_object_get(spec, "attach"), "remove"));
}

/* desired = running: follow the driver; re-issue a create the crash interrupted. */
static void drive_running(struct gateway *gw, json_t *row, const json_t *st)
{
	const char *dp = str(st, "phase"), *phase = str(row, "phase");
	bool session = json_is_true(json_object_get(st, "session_required"));
	os_error err = { 0 };
	if (!strcmp(dp, "Running") && session) {
		drive_session(gw, row);
	} else if (!strcmp(dp, "Running") && strcmp(phase, "Ready") != 0) {
		set(row, "Ready", "");
		if (save(gw, row, NULL) == 0)
			settle_policies(gw, row, st, true);
	} else if (!strcmp(dp, "Running")) {
		settle_policies(gw, row, st, false);
	} else if (!strcmp(dp, "Failed")) {
		exit_from(row, st);
		const json_t *ec = json_object_get(st, "exit_code");
		bool agent =
			json_is_true(json_object_get(st, "agent_exited")) && json_is_integer(ec);
		set(row,
		    !agent			  ? "Error"
		    : json_integer_value(ec) == 0 ? "Succeeded"
						  : "Failed",
		    str(st, "message"));
		save(gw, row, NULL);
		if (!session)
			settle_policies(gw, row, st, false);
		if (agent && removes_itself(row)) {
			log_info("sandbox %s: its agent ended; deleting it (--rm)",
				 str(row, "name"));
			lifecycle_act(gw, row, "delete", &err);
		}
	} else if (!strcmp(dp, "Stopped") && json_is_true(json_object_get(st, "absent"))) {
		if (!storage_note(gw, str(row, "id")))
			log_info("sandbox %s: never started (interrupted create): starting it now",
				 str(row, "name"));
		lifecycle_act(gw, row, "create", &err);
	} else if (!strcmp(dp, "Stopped")) {
		/* The driver's reason when it has one (a kubernetes sandbox failed
		 * closed after its supervisor Pod went away). */
		const char *why = str(st, "message");
		exit_from(row, st);
		set(row, "Error", *why ? why : "the supervisor was stopped outside the gateway");
		save(gw, row, NULL);
	}
}

static void drive(struct gateway *gw, json_t *row)
{
	const char *desired = str(row, "desired"), *phase = str(row, "phase");
	json_t *rec = json_object_get(row, "record");
	os_error err = { 0 };
	_cleanup_json_ json_t *st = NULL;
	if (!strcmp(desired, "deleted")) {
		if (gw->driver->ops->delete (gw->driver, rec, &err) < 0) {
			if (err.code != EAGAIN)
				log_warn("sandbox %s: delete: %s", str(row, "name"), err.msg);
		} else if (store_sandbox_delete(gw->store, str(row, "id"), &err) < 0) {
			storage_fault(gw, str(row, "id"), str(row, "name"), "deleting its row",
				      &err);
		} else {
			storage_ok(gw, str(row, "id"), str(row, "name"));
			server_sandboxes_changed(gw);
			log_info("sandbox %s deleted", str(row, "name"));
		}
		return;
	}
	if (lifecycle_phase_ended(phase))
		return;
	if (gw->driver->ops->status(gw->driver, rec, &st, &err) < 0) {
		log_warn("sandbox %s: status: %s", str(row, "name"), err.msg);
		return;
	}
	if (!strcmp(desired, "running")) {
		drive_running(gw, row, st);
		return;
	}
	const char *dp = str(st, "phase");
	if (!strcmp(dp, "Stopped") || !strcmp(dp, "Failed")) {
		exit_from(row, st);
		set(row, "Stopped", "");
		save(gw, row, NULL);
	} else if (gw->driver->ops->stop(gw->driver, rec, &err) < 0) {
		if (err.code != EAGAIN) /* under way (a driver working off the loop) */
			log_warn("sandbox %s: stop: %s", str(row, "name"), err.msg);
	} else if (!strcmp(str(rec, "phase"), "Stopped")) {
		/* A driver whose status reads the record (kubernetes) learns it
		 * stopped only from the record the stop updated. */
		save(gw, row, NULL);
	}
}

void lifecycle_tick(struct gateway *gw)
{
	_cleanup_json_ json_t *rows = NULL;
	os_error err = { 0 };
	if (store_sandbox_list(gw->store, &rows, &err) < 0) {
		storage_fault(gw, "", "(every sandbox)", "listing sandboxes", &err);
		return;
	}
	storage_ok(gw, "", "(every sandbox)");
	size_t i;
	json_t *row;
	json_array_foreach (rows, i, row)
		drive(gw, row);
}

void lifecycle_drive_one(struct gateway *gw, const char *id)
{
	_cleanup_json_ json_t *row = NULL;
	if (store_sandbox_get(gw->store, id, &row, NULL) == 0)
		drive(gw, row);
}

/* A pass in which a write failed doubles the next delay (to 10 s): a full
 * disk is retried quietly, not every 300 ms, and the first pass after
 * space returns brings the interval back. */
static void on_tick(struct loop *l, struct loop_timer *t, void *data)
{
	struct gateway *gw = data;
	uint64_t before = gw->pass_ms;
	lifecycle_tick(gw);
	uint64_t next = storage_next_pass_ms(gw);
	if (next != before && loop_timer_set(t, next, next, NULL) < 0)
		log_warn("lifecycle pass: could not re-arm its timer");
}

int lifecycle_start(struct gateway *gw, os_error *err)
{
	_cleanup_json_ json_t *rows = NULL, *report = NULL;
	if (store_sandbox_list(gw->store, &rows, err) < 0)
		return -1;
	size_t n = json_array_size(rows);
	_cleanup_json_ json_t *before = json_array();
	json_t **recs = calloc(n + 1, sizeof(*recs));
	if (!recs || !before) {
		free(recs);
		return os_error_set(err, ENOMEM, "reconcile");
	}
	for (size_t i = 0; i < n; i++) {
		recs[i] = json_object_get(json_array_get(rows, i), "record");
		json_array_append_new(before, json_deep_copy(recs[i]));
	}
	int rc = gw->driver->ops->reconcile(gw->driver, recs, n, &report, err);
	/* A record reconcile advanced (e.g. ungated while the gateway was
	 * down) is saved, or the next pass would never see the change again. */
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!json_equal(json_array_get(before, i), recs[i]))
			save(gw, json_array_get(rows, i), NULL);
	free(recs);
	if (rc < 0)
		return os_error_prefix(err, "reconciling with the %s driver",
				       gw->driver->ops->name);
	size_t i;
	json_t *r;
	json_array_foreach (report, i, r) {
		_cleanup_free_ char *line = json_to_string(r);
		log_info("reconcile: %s", line ? line : "?");
	}
	lifecycle_tick(gw);
	gw->pass_ms = storage_next_pass_ms(gw);
	return loop_timer_add(gw->loop, gw->pass_ms, gw->pass_ms, on_tick, gw, &gw->tick, err);
}
