/* main.c - openshell-supervisor: parse the operator's flags, then run the
 * isolation backend contract in order (attach -> proxy -> confirm -> start
 * agent -> wait -> teardown). Uses nothing backend-specific outside the
 * backend vtable; prints every step error and never starts the agent after one. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "cgroup.h"
#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"
#include "egress.h"
#include "exec.h"
#include "selfpath.h"
#include "log.h"
#include "loop.h"
#include "selfguard.h"
#include "session.h"

struct options {
	struct backend_descriptor desc;
	struct egress_options egress;
	const char *audit_log;
	const char *user, *group;
	char run_dir_buf[PATH_MAX];
	char **argv; /* the agent command */
	char launcher_buf[PATH_MAX];
	uint64_t max_processes, max_memory_mb; /* operator limits, 0 = none */
	const char *gateway_url, *token_file; /* session with the gateway, or NULL */
	const char *gateway_ca; /* https: CA that signed the gateway's certificate */
};

static void usage(void)
{
	fprintf(stderr,
		"usage: openshell-supervisor --backend inpod|split --sandbox-id ID --proxy-port N\n"
		"         [--max-processes N] [--max-memory-mb M]"
		" [--binary-identity kernel|endpoint-only]\n"
		"         [--launcher PATH] [--audit-log FILE] [--user U] [--group G]"
		" -- CMD [ARG...]\n"
		"         [--gateway unix:/PATH|http://HOST:PORT|https://HOST:PORT"
		" --token-file FILE [--gateway-ca FILE]]\n"
		"       split: --split-key FILE --split-control-port N [--split-mode local|pod]\n"
		"         [--split-listen IP] [--split-advertise IP] [--split-confirm-timeout "
		"MS]\n");
}

/* openshell-sandbox next to us (installed) or in the build tree's sibling folder. */
static void default_launcher(struct options *o)
{
	if (exe_sibling("../sandbox", "openshell-sandbox", o->launcher_buf,
			sizeof(o->launcher_buf)) == 0)
		o->desc.launcher = o->launcher_buf;
}

/* The split backend's flags (--split-NAME VALUE), see docs/split-backend.md. */
static int split_arg(const char *name, const char *v, struct backend_descriptor *d, os_error *err)
{
	uint64_t n = 0;
	if (strcmp(name, "mode") == 0)
		d->split_mode = v;
	else if (strcmp(name, "key") == 0)
		d->key_file = v;
	else if (strcmp(name, "listen") == 0)
		d->listen_addr = v;
	else if (strcmp(name, "advertise") == 0)
		d->advertise_addr = v;
	else if (strcmp(name, "control-port") == 0) {
		if (parse_u64_str(v, 1, 65535, &n, err) < 0)
			return os_error_prefix(err, "--split-control-port");
		d->control_port = (uint16_t)n;
	} else if (strcmp(name, "confirm-timeout") == 0) {
		if (parse_u64_str(v, 1, 3600000, &n, err) < 0)
			return os_error_prefix(err, "--split-confirm-timeout");
		d->confirm_timeout_ms = (unsigned)n;
	} else
		return os_error_set(err, EINVAL, "unknown option --split-%s", name);
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o, os_error *err)
{
	uint64_t port = 0;
	o->user = "nobody";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			o->argv = argv + i + 1;
			break;
		}
		if (i + 1 >= argc)
			return os_error_set(err, EINVAL, "%s: missing value", a);
		const char *v = argv[++i];
		if (strcmp(a, "--backend") == 0)
			o->desc.backend = v;
		else if (strcmp(a, "--sandbox-id") == 0)
			o->desc.sandbox_id = v;
		else if (strcmp(a, "--proxy-port") == 0) {
			if (parse_u64_str(v, 1, 65535, &port, err) < 0)
				return os_error_prefix(err, "--proxy-port");
			o->desc.proxy_port = (uint16_t)port;
		} else if (strcmp(a, "--launcher") == 0)
			o->desc.launcher = v;
		else if (strcmp(a, "--audit-log") == 0)
			o->audit_log = v;
		else if (strcmp(a, "--user") == 0)
			o->user = v;
		else if (strcmp(a, "--policy") == 0)
			o->egress.policy_path = v;
		else if (strcmp(a, "--credentials") == 0)
			o->egress.credentials_path = v;
		else if (strcmp(a, "--inference") == 0)
			o->egress.inference_path = v;
		else if (strcmp(a, "--hosts") == 0)
			o->egress.hosts_file = v;
		else if (strcmp(a, "--dns") == 0)
			o->egress.dns_servers = v;
		else if (strcmp(a, "--upstream-ca") == 0)
			o->egress.upstream_ca = v;
		else if (strcmp(a, "--run-dir") == 0)
			o->egress.run_dir = v;
		else if (strcmp(a, "--workdir") == 0)
			o->egress.workdir = v;
		else if (strcmp(a, "--binary-identity") == 0) {
			if (strcmp(v, "endpoint-only") != 0 && strcmp(v, "kernel") != 0)
				return os_error_set(err, EINVAL,
						    "--binary-identity: expected kernel or "
						    "endpoint-only, got \"%s\"",
						    v);
			o->egress.endpoint_only = strcmp(v, "endpoint-only") == 0;
		} else if (strcmp(a, "--max-processes") == 0) {
			if (parse_u64_str(v, 1, 1u << 22, &o->max_processes, err) < 0)
				return os_error_prefix(err, "--max-processes");
		} else if (strcmp(a, "--max-memory-mb") == 0) {
			if (parse_u64_str(v, 16, 1u << 24, &o->max_memory_mb, err) < 0)
				return os_error_prefix(err, "--max-memory-mb");
		} else if (strcmp(a, "--group") == 0)
			o->group = v;
		else if (strcmp(a, "--gateway") == 0)
			o->gateway_url = v;
		else if (strcmp(a, "--token-file") == 0)
			o->token_file = v;
		else if (strcmp(a, "--gateway-ca") == 0)
			o->gateway_ca = v;
		else if (strncmp(a, "--split-", 8) == 0) {
			if (split_arg(a + 8, v, &o->desc, err) < 0)
				return -1;
		} else
			return os_error_set(err, EINVAL, "unknown option %s", a);
	}
	if (!o->desc.backend || !o->desc.sandbox_id || !o->desc.proxy_port ||
	    !o->egress.policy_path)
		return os_error_set(
			err, EINVAL,
			"--backend, --sandbox-id, --proxy-port and --policy are required");
	if (!o->gateway_url != !o->token_file)
		return os_error_set(err, EINVAL, "--gateway and --token-file go together");
	if (o->gateway_ca && !o->gateway_url)
		return os_error_set(err, EINVAL, "--gateway-ca needs --gateway https://...");
	o->egress.sandbox_id = o->desc.sandbox_id;
	o->egress.audit_log = o->audit_log;
	if (!o->egress.run_dir) {
		if (str_format(o->run_dir_buf, sizeof o->run_dir_buf, err, "/run/openshell/%s",
			       o->desc.sandbox_id) < 0)
			return -1;
		o->egress.run_dir = o->run_dir_buf;
	}
	if (!o->argv || !o->argv[0])
		return os_error_set(err, EINVAL, "missing agent command after --");
	if (!o->desc.launcher)
		default_launcher(o);
	return 0;
}

static void audit_write(void *user, const json_t *record)
{
	int fd = *(int *)user;
	_cleanup_free_ char *line = json_to_string(record);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n';
	/* json_to_string's buffer has room for the NUL we just replaced. */
	if (fd_write_all(fd, line, n + 1, NULL) < 0)
		fprintf(stderr, "openshell-supervisor: audit write failed: %s\n", strerror(errno));
}

static json_t *build_spec(const struct options *o, const struct sockaddr_storage *proxy,
			  const struct sandbox_cgroups *cg)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)proxy;
	char addr[INET_ADDRSTRLEN], url[64];
	inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr));
	if (str_format(url, sizeof(url), NULL, "http://%s:%u", addr, ntohs(sin->sin_port)) < 0)
		return NULL;
	json_t *args = json_array();
	for (char **a = o->argv; *a; a++)
		json_array_append_new(args, json_string(*a));
	json_t *spec = json_pack(
		"{s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:{s:[s], s:[s,s]}, s:b}",
		"argv", args, "env", "PATH", "/usr/local/bin:/usr/bin:/bin", "HOME", "/tmp",
		"HTTP_PROXY", url, "HTTPS_PROXY", url, "http_proxy", url, "https_proxy", url,
		"NO_PROXY", "localhost,127.0.0.1", "user", o->user, "cwd", "/", "filesystem",
		"read_only", "/", "read_write", "/tmp", "/dev/null", "new_namespaces", 1);
	if (spec && o->group)
		json_object_set_new(spec, "group", json_string(o->group));
	/* The sandbox's cgroups hold the operator's limits for all of it; only
	 * without them do the weaker per-uid / per-process rlimits stand in. */
	json_t *rl = json_object();
	if (spec && cg->n) {
		json_t *dirs = json_array();
		for (size_t i = 0; i < cg->n; i++)
			json_array_append_new(dirs, json_string(cg->dirs[i]));
		json_object_set_new(spec, "cgroups", dirs);
	}
	if (o->max_processes && !cg->n)
		json_object_set_new(rl, "nproc", json_integer((json_int_t)o->max_processes));
	if (o->max_memory_mb && !cg->n)
		json_object_set_new(rl, "as", json_integer((json_int_t)(o->max_memory_mb << 20)));
	if (spec && json_object_size(rl))
		json_object_set_new(spec, "rlimits", rl);
	else
		json_decref(rl);
	return spec;
}

/* Operator limits on the local host: a cgroup for the whole sandbox. Where
 * none can be made, say so; build_spec then falls back to rlimits. */
static void limits_setup(const struct options *o, struct sandbox_cgroups *cg)
{
	struct cgroup_limits lim = { o->max_processes, o->max_memory_mb << 20 };
	os_error err = { 0 };
	if (strcmp(o->desc.backend, "inpod") == 0 &&
	    cgroup_create(o->desc.sandbox_id, &lim, cg, &err) < 0)
		fprintf(stderr,
			"openshell-supervisor: warning: %s; falling back to rlimits "
			"(RLIMIT_NPROC per uid, RLIMIT_AS per process)\n",
			err.msg);
}

/* True when every ancestor of path lets uid/gid search it. */
static bool reachable_by(const char *path, uid_t uid, gid_t gid)
{
	char buf[PATH_MAX];
	if (str_copy(buf, sizeof buf, path, NULL) < 0)
		return false;
	for (char *slash = buf; (slash = strchr(slash + 1, '/')) != NULL;) {
		*slash = '\0';
		struct stat st;
		bool ok = stat(buf, &st) == 0 &&
			  ((st.st_uid == uid && (st.st_mode & S_IXUSR)) ||
			   (st.st_gid == gid && (st.st_mode & S_IXGRP)) || (st.st_mode & S_IXOTH));
		*slash = '/';
		if (!ok)
			return false;
	}
	return true;
}

/* The agent's workspace: owned by the agent's user (when root still owns
 * it) and its working directory, so it can use what persists across
 * stop/start. The user comes from the launch spec (name or number),
 * resolved through this host's passwd/group as the launcher will. */
static int hand_over_workdir(json_t *spec, const char *workdir, os_error *err)
{
	json_t *u = json_object_get(spec, "user"), *g = json_object_get(spec, "group");
	uid_t uid;
	gid_t gid;
	if (json_is_integer(u)) {
		uid = (uid_t)json_integer_value(u);
		gid = (gid_t)uid;
	} else {
		struct passwd *pw = getpwnam(json_string_value(u) ? json_string_value(u) : "");
		if (!pw)
			return os_error_set(err, ENOENT, "workspace: unknown user %s",
					    json_string_value(u) ? json_string_value(u) : "?");
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (json_is_integer(g)) {
		gid = (gid_t)json_integer_value(g);
	} else if (json_is_string(g)) {
		struct group *gr = getgrnam(json_string_value(g));
		if (!gr)
			return os_error_set(err, ENOENT, "workspace: unknown group %s",
					    json_string_value(g));
		gid = gr->gr_gid;
	}
	struct stat st;
	if (lstat(workdir, &st) < 0 || !S_ISDIR(st.st_mode))
		return os_error_errno(err, "workspace %s", workdir);
	if (st.st_uid == 0 && chown(workdir, uid, gid) < 0)
		return os_error_errno(err, "giving workspace %s to uid %u", workdir, (unsigned)uid);
	if (json_is_true(json_object_get(spec, "new_namespaces"))) {
		/* The launcher binds it on /sandbox: reachable whatever its parents. */
		json_object_set_new(spec, "workspace", json_string(workdir));
		workdir = "/sandbox";
	} else if (!reachable_by(workdir, uid, gid)) {
		/* e.g. a state directory under root's 0700 home: keep cwd "/" */
		fprintf(stderr,
			"openshell-supervisor: workspace %s is not reachable by uid %u "
			"(a parent directory is closed to it); the agent starts in /\n",
			workdir, (unsigned)uid);
		return 0;
	}
	json_object_set_new(spec, "cwd", json_string(workdir));
	json_object_set_new(json_object_get(spec, "env"), "HOME", json_string(workdir));
	return 0;
}

/* Test-only hook: OPENSHELL_TEST_FAIL_STEP=proxy leaves the proxy unstarted,
 * the real condition confirm must catch (nothing answers on the proxy port). */
static bool proxy_withheld(void)
{
	const char *v = getenv("OPENSHELL_TEST_FAIL_STEP");
	return v && strcmp(v, "proxy") == 0;
}

static int exit_code(int ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return 1;
}

/* Everything the running supervisor waits on, on one event loop. */
struct session {
	struct loop *loop;
	struct backend_instance *inst;
	backend_running *running;
	struct egress *egress;
	struct gw_session *gateway;
	struct exec_service *exec; /* sandbox exec, once the agent runs locally */
	int status;
	bool stopped_by_signal;
	bool failed;
};

static void on_agent_exit(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct session *s = data;
	os_error err = { 0 };
	loop_io_remove(w);
	if (backend_reap_agent(s->running, &s->status, &err) < 0) {
		fprintf(stderr, "openshell-supervisor: %s\n", err.msg);
		s->failed = true;
	}
	backend_dispatch(s->inst, &err); /* last bypass records */
	loop_stop(l);
}

static void on_backend_event(struct loop *l, struct loop_io *w, int fd, unsigned ev, void *data)
{
	struct session *s = data;
	os_error err = { 0 };
	if (backend_dispatch(s->inst, &err) < 0)
		fprintf(stderr, "openshell-supervisor: bypass monitor: %s\n", err.msg);
}

static void on_stop_signal(struct loop *l, struct loop_signal *sig,
			   const struct signalfd_siginfo *si, void *data)
{
	struct session *s = data;
	fprintf(stderr, "openshell-supervisor: signal %u: stopping\n", si->ssi_signo);
	s->status = (128 + (int)si->ssi_signo) << 8; /* reported as exit 128+sig */
	s->stopped_by_signal = true;
	loop_stop(l);
}

static void on_reload_signal(struct loop *l, struct loop_signal *sig,
			     const struct signalfd_siginfo *si, void *data)
{
	struct session *s = data;
	os_error err = { 0 };
	if (egress_reload(s->egress, &err) < 0)
		fprintf(stderr,
			"openshell-supervisor: policy update refused (running policy kept): %s\n",
			err.msg);
	else
		fprintf(stderr, "openshell-supervisor: policy updated\n");
}

/* A policy the gateway pushed on the session: same rules as a reload. */
static int apply_pushed(void *user, const char *yaml, size_t len, uint64_t revision, os_error *err)
{
	struct session *s = user;
	if (!s->egress)
		return os_error_set(err, EAGAIN, "the proxy is not running");
	return egress_apply_policy_text(s->egress, yaml, len, revision, err);
}

/* Caller identity is read from the entry process's network namespace. An
 * agent that already exited (`true`) has none left to read: nothing of it
 * can connect any more, so that is no error; its exit is reported as usual. */
static int bind_identity(struct session *s, bool local, pid_t entry, os_error *err)
{
	if (egress_bind_agent(s->egress, entry, err) == 0)
		return 0;
	struct pollfd p = { .fd = local ? backend_agent_fd(s->running) : -1, .events = POLLIN };
	if (local && poll(&p, 1, 0) == 1) {
		memset(err, 0, sizeof(*err));
		return 0;
	}
	return -1;
}

/* An exec request on the session: served once the agent runs. */
static void on_exec(void *user, const struct session_msg *m)
{
	struct session *s = user;
	if (s->exec)
		exec_service_request(s->exec, m);
	else
		log_warn("exec %s refused: no local agent to join (yet)", m->exec_id);
}

/* sandbox exec joins the agent's sandbox: only where we launched it here;
 * elsewhere (split) each request is answered at once with why not. */
static int start_exec_service(const struct options *o, struct session *s, const json_t *spec,
			      pid_t launcher, bool local, os_error *err)
{
	struct exec_host h = { .loop = s->loop,
			       .egress = s->egress,
			       .launcher = o->desc.launcher,
			       .agent_spec = spec,
			       .agent_launcher = launcher,
			       .unsupported = local ? NULL
						    : "exec is not supported by this sandbox's "
						      "backend (its agent runs in another Pod)" };
	if (!s->gateway)
		return 0;
	if (exec_service_new(&h, &s->exec, err) < 0)
		return -1;
	exec_service_set_session(s->exec, s->gateway);
	return 0;
}

static int start_gateway_session(const struct options *o, struct session *s, os_error *err)
{
	if (!o->gateway_url)
		return 0;
	struct gw_session_options go = { .gateway_url = o->gateway_url,
					 .gateway_ca = o->gateway_ca,
					 .token_file = o->token_file,
					 .sandbox_id = o->desc.sandbox_id,
					 .apply = apply_pushed,
					 .apply_user = s,
					 .exec = on_exec,
					 .exec_user = s };
	if (gw_session_new(s->loop, &go, &s->gateway, err) < 0)
		return os_error_prefix(err, "gateway session");
	return 0;
}

/* The launcher's pid, from the pidfd the backend holds (immune to reuse). */
static pid_t pidfd_pid(int pidfd)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
	_cleanup_free_ char *text = NULL;
	if (file_read_all(path, 65536, &text, NULL, NULL) < 0)
		return -1;
	const char *p = strstr(text, "\nPid:");
	if (!p)
		return -1;
	p += 5;
	while (*p == ' ' || *p == '\t')
		p++;
	uint64_t v;
	size_t n = strspn(p, "0123456789");
	if (parse_u64(p, n, 1, INT32_MAX, &v, NULL) < 0)
		return -1;
	return (pid_t)v;
}

static int watch_session(struct session *s, os_error *err)
{
	if (loop_io_add(s->loop, backend_agent_fd(s->running), LOOP_IN, 0, on_agent_exit, s, NULL,
			err) < 0)
		return -1;
	int efd = backend_event_fd(s->inst);
	if (efd >= 0 && loop_io_add(s->loop, efd, LOOP_IN, 0, on_backend_event, s, NULL, err) < 0)
		return -1;
	return 0;
}

static int run(const struct options *o, int audit_fd)
{
	struct backend_context ctx = { .audit = audit_write, .audit_user = &audit_fd };
	struct session s = { 0 };
	backend_bound bound = { 0 };
	backend_ready ready = { 0 };
	backend_running running = { 0 };
	struct sockaddr_storage paddr;
	socklen_t plen = 0;
	os_error err = { 0 };
	int code = 1;
	char url[64];
	_cleanup_json_ json_t *spec = NULL;
	struct sandbox_cgroups cg = { 0 };

	if (loop_new(&s.loop, &err) < 0 ||
	    loop_signal_add(s.loop, SIGTERM, on_stop_signal, &s, NULL, &err) < 0 ||
	    loop_signal_add(s.loop, SIGINT, on_stop_signal, &s, NULL, &err) < 0 ||
	    loop_signal_add(s.loop, SIGHUP, on_reload_signal, &s, NULL, &err) < 0 ||
	    start_gateway_session(o, &s, &err) < 0)
		goto fail;
	if (backend_attach(&o->desc, &ctx, &s.inst, &bound, &err) < 0)
		goto fail;
	/* The proxy listens before confirm: confirm must reach it, and nothing
	 * untrusted runs until confirm has tried to break the boundary. */
	if (backend_proxy_endpoint(&bound, &paddr, &plen, &err) < 0 ||
	    (!proxy_withheld() && egress_start(s.loop, (struct sockaddr *)&paddr, plen, &o->egress,
					       &s.egress, &err) < 0)) {
		os_error_prefix(&err, "proxy");
		goto fail;
	}
	if (backend_confirm(&bound, &ready, &err) < 0)
		goto fail;
	limits_setup(o, &cg);
	spec = build_spec(o, &paddr, &cg);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&paddr;
	char addr[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof addr);
	if (!spec ||
	    str_format(url, sizeof url, &err, "http://%s:%u", addr, ntohs(sin->sin_port)) < 0 ||
	    egress_fill_spec(s.egress, spec, url, &err) < 0 ||
	    (o->egress.workdir && hand_over_workdir(spec, o->egress.workdir, &err) < 0)) {
		os_error_prefix(&err, "building the launch spec");
		goto fail;
	}
	if (backend_start_agent(&ready, spec, &running, &err) < 0)
		goto fail;
	s.running = &running;
	/* Caller identity is rooted at a local process: the launcher we forked,
	 * or the one a remote backend found. A backend with none (split in pod
	 * mode) binds no identity, and the proxy then denies by binary. */
	bool local = backend_agent_local(&running);
	pid_t entry =
		local ? pidfd_pid(backend_agent_fd(&running)) : backend_agent_entry_pid(&running);
	if (((local || entry > 0) && (entry <= 0 || bind_identity(&s, local, entry, &err) < 0)) ||
	    start_exec_service(o, &s, spec, entry, local, &err) < 0 ||
	    watch_session(&s, &err) < 0) {
		os_error_prefix(&err, "watching the agent");
		goto fail;
	}
	/* Setup is over: from here on the supervisor only parses hostile input. */
	if (selfguard_apply(&err) < 0)
		goto fail;
	fprintf(stderr, "openshell-supervisor: sandbox %s running (backend %s, proxy %s)\n",
		o->desc.sandbox_id, o->desc.backend, url);
	if (loop_run(s.loop, &err) < 0)
		goto fail;
	code = s.failed ? 1 : exit_code(s.status);
	goto out;
fail:
	fprintf(stderr, "openshell-supervisor: %s\n", err.msg);
	code = 1;
out:
	backend_teardown(&s.inst); /* kills the agent if still running */
	exec_service_free(s.exec); /* kills relays still running */
	/* Last: anything still counted in the sandbox's cgroups is killed. */
	if (cgroup_destroy(&cg, &err) < 0)
		fprintf(stderr, "openshell-supervisor: %s\n", err.msg);
	gw_session_free(s.gateway);
	egress_free(s.egress);
	if (s.loop)
		loop_run_once(s.loop, 0, NULL); /* deferred frees of closed connections */
	loop_free(s.loop);
	return code;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	os_error err = { 0 };
	signal(SIGPIPE, SIG_IGN);
	log_init("openshell-supervisor", LOG_LVL_INFO, LOG_FMT_AUTO, 2);
	if (parse_args(argc, argv, &o, &err) < 0) {
		fprintf(stderr, "openshell-supervisor: %s\n", err.msg);
		usage();
		return 2;
	}
	int audit_fd = STDERR_FILENO;
	if (o.audit_log) {
		audit_fd = open(o.audit_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (audit_fd < 0) {
			fprintf(stderr, "openshell-supervisor: audit log %s: %s\n", o.audit_log,
				strerror(errno));
			return 1;
		}
	}
	return run(&o, audit_fd);
}
