/* local_driver.c - the local compute driver's vtable (see local_driver.h):
 * builds the supervisor's command line from the record and the files on
 * disk, and turns process state into driver phases. Never starts a
 * supervisor for a sandbox whose previous one is still alive. */
#include "local_driver.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "trace.h"
#include "local_disk.h"
#include "local_proc.h"
#include "local_uid.h"
#include "parse.h"

#define ARGS_MAX 2200

struct local_driver {
	struct driver base;
	char *state_dir, *supervisor, *launcher;
	/* operator settings passed to every supervisor: flag, value (NULL = unset) */
	char *proxy_flags[8][2];
	unsigned proxy_port, grace_s;
	struct local_caps caps;
	struct local_uid_range uids; /* 0-0: agents keep the policy's user */
};

#define LD(d) ((struct local_driver *)(d))

static const char *rec_id(const json_t *record)
{
	return json_string_value(json_object_get(record, "id"));
}

static void set_phase(json_t *record, const char *phase, const char *message)
{
	json_object_set_new(record, "phase", json_string(phase));
	json_object_set_new(record, "message", json_string(message ? message : ""));
}

static int local_validate(struct driver *d, const json_t *req, json_t **record, os_error *err)
{
	static const char *const keys[] = { "id", "name", "spec", "policy", NULL };
	if (json_check_keys(req, keys, "request", err) < 0)
		return err->code = EINVAL, -1;
	const char *id = json_string_value(json_object_get(req, "id"));
	const char *name = json_string_value(json_object_get(req, "name"));
	if (!id || !*id || strlen(id) > 40 ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(id))
		return os_error_set(err, EINVAL, "id: expected 1..40 of [a-z0-9-]");
	if (!name)
		return os_error_set(err, EINVAL, "name: required");
	const json_t *spec = json_object_get(req, "spec");
	if (local_spec_validate(spec, err) < 0)
		return -1;
	_cleanup_json_ json_t *kept = json_deep_copy(spec);
	/* A supervisor without --attach runs the agent on its log, as before:
	 * the record says so by holding no attach. */
	if (kept && !LD(d)->caps.attach)
		json_object_del(kept, "attach");
	*record = json_pack("{s:s, s:s, s:s, s:O, s:{s:s, s:s}, s:s, s:s, s:[]}", "id", id, "name",
			    name, "driver", "local", "spec", kept, "placement", "host", "localhost",
			    "state_dir", LD(d)->state_dir, "phase", "Provisioning", "message", "",
			    "conditions");
	if (!*record)
		return os_error_set(err, ENOMEM, "record");
	/* Resolved once, like the rest of the placement: start reuses it. */
	uint32_t uid;
	if (LD(d)->uids.first) {
		if (local_uid_claim(LD(d)->state_dir, &LD(d)->uids, id, &uid, err) < 0) {
			json_decref(steal_ptr(*record));
			return -1;
		}
		json_object_set_new(json_object_get(*record, "placement"), "uid",
				    json_integer(uid));
	}
	return 0;
}

static int add_arg(const char **argv, size_t *n, const char *a, os_error *err)
{
	if (*n + 2 >= ARGS_MAX)
		return os_error_set(err, E2BIG, "supervisor command line too long");
	argv[(*n)++] = a;
	argv[*n] = NULL;
	return 0;
}

/* "--sandbox-uid N" for a sandbox placed with its own uid. */
static int add_uid_args(const json_t *record, const char **argv, size_t *n, char *buf,
			os_error *err)
{
	const json_t *u = json_object_get(json_object_get(record, "placement"), "uid");
	if (!json_is_integer(u))
		return 0;
	snprintf(buf, 24, "%lld", (long long)json_integer_value(u));
	if (add_arg(argv, n, "--sandbox-uid", err) < 0 || add_arg(argv, n, buf, err) < 0)
		return -1;
	return 0;
}

/* Adds "--flag STATE/sandboxes/ID/file" when the file exists and the
 * supervisor takes the flag; paths live in bufs (caller-owned). */
static int add_file_arg(struct local_driver *ld, const char *id, const char **argv, size_t *n,
			bool cap, const char *flag, const char *file, char *buf, os_error *err)
{
	if (!cap || !local_file_exists(ld->state_dir, id, file))
		return 0;
	if (local_path(ld->state_dir, id, file, buf, err) < 0 || add_arg(argv, n, flag, err) < 0)
		return -1;
	return add_arg(argv, n, buf, err);
}

/* Appends env settings: "--env K=V" before "--" when the supervisor takes
 * it (before=true), else "/usr/bin/env K=V..." as the command's prefix
 * (before=false): same effect, and the policy still sees the real program
 * because env(1) execs it. */
static int add_env(struct local_driver *ld, const json_t *spec, bool before, const char **argv,
		   size_t *n, json_t *strs, os_error *err)
{
	const json_t *env = json_object_get(spec, "env");
	const char *k;
	json_t *v;
	if (!env || json_object_size(env) == 0 || before != ld->caps.env)
		return 0;
	if (!before && add_arg(argv, n, "/usr/bin/env", err) < 0)
		return -1;
	json_object_foreach ((json_t *)env, k, v) {
		json_t *kv = json_sprintf("%s=%s", k, json_string_value(v));
		if (!kv || json_array_append_new(strs, kv) < 0)
			return os_error_set(err, ENOMEM, "env");
		if ((before && add_arg(argv, n, "--env", err) < 0) ||
		    add_arg(argv, n, json_string_value(kv), err) < 0)
			return -1;
	}
	return 0;
}

static int base_args(struct local_driver *ld, const char *id, const char **argv, size_t *n,
		     char bufs[][LOCAL_PATH_MAX], char *port, os_error *err)
{
	snprintf(port, 16, "%u", ld->proxy_port);
	if (add_arg(argv, n, ld->supervisor, err) < 0 || add_arg(argv, n, "--backend", err) < 0 ||
	    add_arg(argv, n, "inpod", err) < 0 || add_arg(argv, n, "--sandbox-id", err) < 0 ||
	    add_arg(argv, n, id, err) < 0 || add_arg(argv, n, "--proxy-port", err) < 0 ||
	    add_arg(argv, n, port, err) < 0 ||
	    local_path(ld->state_dir, id, "audit.log", bufs[0], err) < 0 ||
	    add_arg(argv, n, "--audit-log", err) < 0 || add_arg(argv, n, bufs[0], err) < 0)
		return -1;
	/* Named here, not left to the supervisor's default: the driver removes
	 * this directory after a supervisor that could not (SIGKILL). */
	if (ld->caps.run_dir &&
	    (local_run_dir(id, bufs[9], err) < 0 || add_arg(argv, n, "--run-dir", err) < 0 ||
	     add_arg(argv, n, bufs[9], err) < 0))
		return -1;
	if (ld->launcher &&
	    (add_arg(argv, n, "--launcher", err) < 0 || add_arg(argv, n, ld->launcher, err) < 0))
		return -1;
	/* On this host the sandbox's host is this host: host.openshell.internal
	 * and its aliases reach it at the host side of the sandbox's veth (the
	 * proxy's address), judged by the policy like any address. */
	if (ld->caps.host_gateway &&
	    (add_arg(argv, n, "--host-gateway", err) < 0 || add_arg(argv, n, "proxy", err) < 0))
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(ld->proxy_flags); i++)
		if (ld->proxy_flags[i][0] && (add_arg(argv, n, ld->proxy_flags[i][0], err) < 0 ||
					      add_arg(argv, n, ld->proxy_flags[i][1], err) < 0))
			return -1;
	const struct local_caps *c = &ld->caps;
	if (add_file_arg(ld, id, argv, n, c->policy, "--policy", "policy.yaml", bufs[1], err) < 0 ||
	    add_file_arg(ld, id, argv, n, c->credentials, "--credentials", "credentials.json",
			 bufs[2], err) < 0 ||
	    add_file_arg(ld, id, argv, n, c->inference, "--inference", "inference.json", bufs[3],
			 err) < 0 ||
	    add_file_arg(ld, id, argv, n, c->workdir, "--workdir", "workspace", bufs[4], err) < 0)
		return -1;
	return 0;
}

/* True when this sandbox's supervisor keeps a session with the gateway:
 * it takes the flags and the gateway handed over its URL and token. */
static bool has_session(struct local_driver *ld, const char *id)
{
	return ld->caps.gateway && local_file_exists(ld->state_dir, id, "token") &&
	       local_file_exists(ld->state_dir, id, "gateway.url");
}

/* "--gateway URL --token-file PATH": the token stays in its 0600 file,
 * never in argv or the environment. */
static int add_session_args(struct local_driver *ld, const char *id, const char **argv, size_t *n,
			    char *url, char *tok, os_error *err)
{
	char path[LOCAL_PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (!has_session(ld, id))
		return 0;
	if (local_path(ld->state_dir, id, "gateway.url", path, err) < 0 ||
	    file_read_all(path, LOCAL_PATH_MAX - 1, &text, &len, err) < 0)
		return -1;
	while (len > 0 && text[len - 1] == '\n')
		text[--len] = '\0';
	if (str_copy(url, LOCAL_PATH_MAX, text, err) < 0 ||
	    local_path(ld->state_dir, id, "token", tok, err) < 0 ||
	    add_arg(argv, n, "--gateway", err) < 0 || add_arg(argv, n, url, err) < 0 ||
	    add_arg(argv, n, "--token-file", err) < 0 || add_arg(argv, n, tok, err) < 0)
		return -1;
	return 0;
}

/* "--attach pipes|tty [--attach-rows N --attach-cols N] [--attach-term T]"
 * for a foreground create's first run (a restart has no client waiting). */
static int add_attach_args(const json_t *spec, const char **argv, size_t *n, char bufs[2][8],
			   os_error *err)
{
	const json_t *a = json_object_get(spec, "attach");
	if (!a)
		return 0;
	bool tty = json_is_true(json_object_get(a, "tty"));
	json_int_t rows = json_integer_value(json_object_get(a, "rows"));
	json_int_t cols = json_integer_value(json_object_get(a, "cols"));
	const char *term = json_string_value(json_object_get(a, "term"));
	if (add_arg(argv, n, "--attach", err) < 0 ||
	    add_arg(argv, n, tty ? "tty" : "pipes", err) < 0)
		return -1;
	snprintf(bufs[0], 8, "%d", (int)rows);
	snprintf(bufs[1], 8, "%d", (int)cols);
	if (tty && rows > 0 && cols > 0 &&
	    (add_arg(argv, n, "--attach-rows", err) < 0 || add_arg(argv, n, bufs[0], err) < 0 ||
	     add_arg(argv, n, "--attach-cols", err) < 0 || add_arg(argv, n, bufs[1], err) < 0))
		return -1;
	if (tty && term &&
	    (add_arg(argv, n, "--attach-term", err) < 0 || add_arg(argv, n, term, err) < 0))
		return -1;
	return 0;
}

static int spawn(struct local_driver *ld, json_t *record, bool first, os_error *err)
{
	const char *id = rec_id(record);
	const json_t *spec = json_object_get(record, "spec");
	const char *argv[ARGS_MAX] = { NULL };
	char bufs[10][LOCAL_PATH_MAX], port[16], uid[24], size[2][8];
	size_t n = 0, i;
	json_t *a;
	_cleanup_json_ json_t *strs = json_array();
	/* Such a supervisor would only fail on its missing --policy flag. */
	if (ld->caps.policy && !local_file_exists(ld->state_dir, id, "policy.yaml"))
		return os_error_set(err, ENOENT,
				    "sandbox %s has no policy.yaml in its state directory: the "
				    "gateway never wrote it",
				    id);
	if (base_args(ld, id, argv, &n, bufs, port, err) < 0 ||
	    add_uid_args(record, argv, &n, uid, err) < 0 ||
	    add_session_args(ld, id, argv, &n, bufs[7], bufs[8], err) < 0 ||
	    (first && has_session(ld, id) && add_attach_args(spec, argv, &n, size, err) < 0) ||
	    add_env(ld, spec, true, argv, &n, strs, err) < 0 || add_arg(argv, &n, "--", err) < 0 ||
	    add_env(ld, spec, false, argv, &n, strs, err) < 0)
		return -1;
	json_array_foreach (json_object_get(spec, "command"), i, a) {
		if (add_arg(argv, &n, json_string_value(a), err) < 0)
			return -1;
	}
	if (local_path(ld->state_dir, id, "supervisor.log", bufs[5], err) < 0 ||
	    local_path(ld->state_dir, id, NULL, bufs[6], err) < 0)
		return -1;
	local_file_remove(ld->state_dir, id, "exit");
	local_file_remove(ld->state_dir, id, "stop_requested");
	struct local_pid pid;
	trace_mark("supervisor-spawn");
	int rc = local_proc_spawn(bufs[6], bufs[5], (char *const *)argv, &pid, err);
	trace_mark("supervisor-spawned");
	return rc;
}

static int read_pid(struct local_driver *ld, const char *id, struct local_pid *pid)
{
	char dir[LOCAL_PATH_MAX];
	if (local_path(ld->state_dir, id, NULL, dir, NULL) < 0)
		return -1;
	return local_proc_read_pid(dir, pid, NULL);
}

static bool is_alive(struct local_driver *ld, const char *id)
{
	struct local_pid pid;
	return read_pid(ld, id, &pid) == 0 && local_proc_alive(&pid);
}

/* No supervisor, not even an exited one whose monitor is still writing its
 * exit status: only then may the sandbox's directories be reused or removed. */
static bool is_gone(struct local_driver *ld, const char *id)
{
	struct local_pid pid;
	return read_pid(ld, id, &pid) < 0 || local_proc_gone(&pid);
}

/* first: the sandbox's first run (create), whose foreground client, if
 * any, is waiting for it. */
static int run_supervisor(struct driver *d, json_t *record, bool first, os_error *err)
{
	struct local_driver *ld = LD(d);
	const char *id = rec_id(record);
	if (!is_gone(ld, id))
		return os_error_set(err, EEXIST, "sandbox %s already has a running supervisor", id);
	if (local_dirs_create(ld->state_dir, id, err) < 0 || spawn(ld, record, first, err) < 0) {
		set_phase(record, "Failed", err->msg);
		return -1;
	}
	set_phase(record, "Provisioning", "supervisor started");
	return 0;
}

static int local_create(struct driver *d, json_t *record, os_error *err)
{
	return run_supervisor(d, record, true, err);
}

static int local_start(struct driver *d, json_t *record, os_error *err)
{
	return run_supervisor(d, record, false, err);
}

/* SIGTERM first; SIGKILL once the grace period is over. Called again and again
 * by the gateway until status says the process is gone. */
static int local_stop(struct driver *d, json_t *record, os_error *err)
{
	struct local_driver *ld = LD(d);
	const char *id = rec_id(record);
	struct local_pid pid;
	if (read_pid(ld, id, &pid) < 0 || !local_proc_alive(&pid))
		return 0;
	char when[32], path[LOCAL_PATH_MAX];
	time_t now = time(NULL);
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	uint64_t t0 = 0;
	if (local_path(ld->state_dir, id, "stop_requested", path, err) < 0)
		return -1;
	if (file_read_all(path, 64, &data, &len, NULL) < 0 ||
	    parse_u64(data, strcspn(data, "\n"), 0, UINT64_MAX, &t0, NULL) < 0) {
		snprintf(when, sizeof(when), "%lld\n", (long long)now);
		if (local_file_put(ld->state_dir, id, "stop_requested", when, err) < 0)
			return -1;
		return local_proc_signal(&pid, SIGTERM, err);
	}
	if ((uint64_t)now >= t0 + ld->grace_s)
		return local_proc_signal(&pid, SIGKILL, err);
	return 0;
}

static int local_delete(struct driver *d, json_t *record, os_error *err)
{
	struct local_driver *ld = LD(d);
	const char *id = rec_id(record);
	if (!is_gone(ld, id)) {
		if (is_alive(ld, id) && local_stop(d, record, err) < 0)
			return -1;
		return os_error_set(err, EAGAIN, "sandbox %s: waiting for the supervisor to exit",
				    id);
	}
	/* A supervisor removes its run dir when it exits; one killed with
	 * SIGKILL left it behind. */
	if (local_run_dir_remove(id, err) < 0 || local_dirs_remove(ld->state_dir, id, err) < 0)
		return -1;
	const json_t *uid = json_object_get(json_object_get(record, "placement"), "uid");
	if (json_is_integer(uid))
		local_uid_release(ld->state_dir, (uint32_t)json_integer_value(uid), id);
	set_phase(record, "Deleted", "");
	return 0;
}

static void dead_phase(struct local_driver *ld, const char *id, const char *dir, json_t *st,
		       const char *last, bool ran)
{
	int code = 0, signo = 0;
	bool have = local_proc_exit_code(dir, &code, &signo) == 1;
	char msg[1200];
	if (have)
		json_object_set_new(st, "exit_code", json_integer(code));
	if (local_file_exists(ld->state_dir, id, "stop_requested")) {
		set_phase(st, "Stopped", "stopped on request");
		return;
	}
	if (!have)
		snprintf(msg, sizeof(msg),
			 "lost: the supervisor is gone and left no exit status (host reboot or "
			 "killed monitor)");
	else if (signo)
		snprintf(
			msg, sizeof(msg),
			"the supervisor was killed by signal %d (SIG%s)%s: the agent's exit status "
			"is unknown",
			signo, sigabbrev_np(signo) ? sigabbrev_np(signo) : "?",
			ran ? "" : " while setting up");
	else if (ran)
		snprintf(msg, sizeof(msg), "the agent exited with code %d", code);
	else
		snprintf(msg, sizeof(msg), "supervisor exited with code %d%s%s", code,
			 last ? ": " : "", last ? last : "");
	/* The gateway's Succeeded/Failed (the agent's own end) versus Error. */
	if (have && !signo && ran)
		json_object_set_new(st, "agent_exited", json_true());
	set_phase(st, "Failed", msg);
}

static int local_status(struct driver *d, json_t *record, json_t **out, os_error *err)
{
	struct local_driver *ld = LD(d);
	const char *id = rec_id(record);
	char dir[LOCAL_PATH_MAX], log[LOCAL_PATH_MAX], audit[LOCAL_PATH_MAX];
	if (local_path(ld->state_dir, id, NULL, dir, err) < 0 ||
	    local_path(ld->state_dir, id, "supervisor.log", log, err) < 0 ||
	    local_path(ld->state_dir, id, "audit.log", audit, err) < 0)
		return -1;
	json_t *st =
		json_pack("{s:s, s:O*, s:O*}", "id", id, "name", json_object_get(record, "name"),
			  "placement", json_object_get(record, "placement"));
	if (!st)
		return os_error_set(err, ENOMEM, "status");
	struct local_pid pid;
	_cleanup_free_ char *last = NULL;
	if (local_proc_read_pid(dir, &pid, NULL) < 0) {
		json_object_set_new(st, "absent", json_true());
		set_phase(st, "Stopped", "no supervisor was ever started");
	} else {
		bool running = local_log_running(log, id, pid.log_mark, &last);
		json_object_set_new(st, "pid", json_integer(pid.pid));
		if (local_proc_alive(&pid)) {
			set_phase(st, running ? "Running" : "Provisioning",
				  running ? "" : "supervisor setting up the boundary");
		} else if (!local_proc_gone(&pid)) {
			/* Exited a moment ago; its exit status is not on disk yet. A
			 * phase the gateway waits on, so it never records "lost". */
			set_phase(st, "Stopping",
				  "the supervisor exited: recording its exit status");
		} else {
			dead_phase(ld, id, dir, st, last, running);
			/* Left behind only by a killed supervisor; best effort here,
			 * delete retries and reports a failure. */
			local_run_dir_remove(id, NULL);
		}
	}
	json_t *plast = NULL;
	json_object_set_new(st, "policy_events", json_integer(local_audit_policy(audit, &plast)));
	json_object_set_new(st, "policy_last", plast ? plast : json_null());
	json_object_set_new(st, "policy_supported", json_boolean(ld->caps.policy));
	json_object_set_new(st, "session_required", json_boolean(has_session(ld, id)));
	*out = st;
	return 0;
}

static bool known(json_t *const *records, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(str_or(rec_id(records[i]), ""), id))
			return true;
	return false;
}

/* An unknown sandbox directory: its supervisor (if any) is stopped and the
 * directory removed, so nothing runs that the gateway does not know about. */
static void remove_orphan(struct local_driver *ld, const char *id, json_t *report)
{
	struct local_pid pid;
	if (read_pid(ld, id, &pid) == 0 && !local_proc_gone(&pid)) {
		local_proc_signal(&pid, SIGTERM, NULL);
		for (int i = 0; i < 40 && !local_proc_gone(&pid); i++)
			nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
		local_proc_signal(&pid, SIGKILL, NULL);
		for (int i = 0; i < 40 && !local_proc_gone(&pid); i++)
			nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
	os_error err = { 0 };
	if (local_run_dir_remove(id, &err) < 0 || local_dirs_remove(ld->state_dir, id, &err) < 0)
		json_array_append_new(report, json_pack("{s:s, s:s}", "id", id, "error", err.msg));
	else
		json_array_append_new(report, json_pack("{s:s, s:s}", "id", id, "action",
							"removed unknown sandbox"));
}

static int local_reconcile(struct driver *d, json_t *const *records, size_t n, json_t **report,
			   os_error *err)
{
	struct local_driver *ld = LD(d);
	char path[LOCAL_PATH_MAX];
	if (str_format(path, sizeof(path), err, "%s/sandboxes", ld->state_dir) < 0)
		return -1;
	json_t *rep = json_array();
	DIR *dir = opendir(path);
	if (dir) {
		struct dirent *e;
		while ((e = readdir(dir)) != NULL) {
			if (e->d_name[0] == '.' || known(records, n, e->d_name))
				continue;
			remove_orphan(ld, e->d_name, rep);
		}
		closedir(dir);
	}
	*report = rep;
	return 0;
}

static int local_configure(struct driver *d, json_t *record, const struct driver_material *m,
			   os_error *err)
{
	struct local_driver *ld = LD(d);
	const char *id = rec_id(record);
	const char *const names[] = { "policy.yaml", "credentials.json", "inference.json", "token",
				      "gateway.url" };
	const char *const texts[] = { m->policy_yaml, m->credentials_json, m->inference_json,
				      m->sandbox_token, m->gateway_url };
	char paths[ARRAY_SIZE(names)][LOCAL_PATH_MAX];
	struct file_put files[ARRAY_SIZE(names)];
	size_t n = 0;
	if (local_dirs_create(ld->state_dir, id, err) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (!texts[i])
			continue;
		if (local_path(ld->state_dir, id, names[i], paths[n], err) < 0)
			return -1;
		files[n].path = paths[n];
		files[n].data = texts[i];
		n++;
	}
	/* Durable (the row that names them is stored next), in one journal
	 * commit: one fsync per file cost ~5 ms each on every create. */
	if (file_write_atomic_set(files, n, 0600, FILE_DURABLE, err) < 0)
		return -1;
	if (!m->policy_yaml && !m->credentials_json && !m->inference_json)
		return 0;
	if (has_session(ld, id))
		return 0; /* the gateway pushes policies on the session; files serve the next start */
	struct local_pid pid;
	if (read_pid(ld, id, &pid) < 0 || !local_proc_alive(&pid))
		return 0; /* read at the next start */
	if (!ld->caps.policy)
		return os_error_set(err, ENOTSUP,
				    "this openshell-supervisor cannot reload a policy (no --policy "
				    "support); stop and start the sandbox");
	return local_proc_signal(&pid, SIGHUP, err);
}

static void local_free(struct driver *d)
{
	struct local_driver *ld = LD(d);
	free(ld->state_dir);
	free(ld->supervisor);
	free(ld->launcher);
	for (size_t i = 0; i < ARRAY_SIZE(ld->proxy_flags); i++) {
		free(ld->proxy_flags[i][0]);
		free(ld->proxy_flags[i][1]);
	}
	free(ld);
}

static const struct driver_ops local_ops = {
	.name = "local",
	.attach = true,
	.validate_spec = local_validate,
	.create = local_create,
	.stop = local_stop,
	.start = local_start,
	.delete = local_delete,
	.status = local_status,
	.reconcile = local_reconcile,
	.free = local_free,
	.configure = local_configure,
};

int local_driver_new(const struct local_driver_config *cfg, struct driver **out, os_error *err)
{
	if (!cfg->state_dir || !cfg->supervisor_binary || cfg->supervisor_binary[0] != '/')
		return os_error_set(err, EINVAL,
				    "local driver: state_dir and an absolute supervisor_binary are "
				    "required");
	if (access(cfg->supervisor_binary, X_OK) < 0)
		return os_error_errno(err, "local driver: supervisor %s", cfg->supervisor_binary);
	struct local_driver *ld = calloc(1, sizeof(*ld));
	if (!ld)
		return os_error_set(err, ENOMEM, "local driver");
	ld->base.ops = &local_ops;
	ld->state_dir = strdup(cfg->state_dir);
	ld->supervisor = strdup(cfg->supervisor_binary);
	ld->launcher = cfg->sandbox_binary ? strdup(cfg->sandbox_binary) : NULL;
	ld->proxy_port = cfg->proxy_port ? cfg->proxy_port : 3128;
	if (cfg->sandbox_uid_range &&
	    local_uid_range_parse(cfg->sandbox_uid_range, &ld->uids, err) < 0) {
		local_free(&ld->base);
		return -1;
	}
	ld->grace_s = cfg->stop_grace_s ? cfg->stop_grace_s : 10;
	if (!ld->state_dir || !ld->supervisor || (cfg->sandbox_binary && !ld->launcher)) {
		local_free(&ld->base);
		return os_error_set(err, ENOMEM, "local driver");
	}
	char procs[24], mem[24], pmem[24], ups[24];
	snprintf(procs, sizeof procs, "%lld", cfg->max_processes);
	snprintf(mem, sizeof mem, "%lld", cfg->max_memory_mb);
	snprintf(pmem, sizeof pmem, "%lld", cfg->proxy_memory_mb);
	snprintf(ups, sizeof ups, "%lld", cfg->max_upstream_connections);
	const char *flags[8][2] = {
		{ "--max-processes", cfg->max_processes > 0 ? procs : NULL },
		{ "--max-memory-mb", cfg->max_memory_mb > 0 ? mem : NULL },
		{ "--hosts", cfg->hosts_file },
		{ "--dns", cfg->dns_servers },
		{ "--upstream-ca", cfg->upstream_ca_file },
		{ "--proxy-memory-mb", cfg->proxy_memory_mb > 0 ? pmem : NULL },
		{ "--max-upstream-connections", cfg->max_upstream_connections > 0 ? ups : NULL },
		{ "--transparent-ports", cfg->transparent_ports },
	};
	for (size_t i = 0; i < ARRAY_SIZE(ld->proxy_flags); i++) {
		if (!flags[i][1])
			continue;
		ld->proxy_flags[i][0] = strdup(flags[i][0]);
		ld->proxy_flags[i][1] = strdup(flags[i][1]);
		if (!ld->proxy_flags[i][0] || !ld->proxy_flags[i][1]) {
			local_free(&ld->base);
			return os_error_set(err, ENOMEM, "local driver");
		}
	}
	local_probe_caps(ld->supervisor, &ld->caps);
	*out = &ld->base;
	return 0;
}
