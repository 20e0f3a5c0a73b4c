/* main.c - openshell-supervisor: parse the operator's flags, then run the
 * isolation backend contract in order (attach -> proxy -> confirm -> start
 * agent -> wait -> teardown). Uses nothing backend-specific outside the
 * backend vtable; prints every step error and never starts the agent after one. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"
#include "proxy.h"

struct options {
	struct backend_descriptor desc;
	const char *audit_log;
	const char *user, *group;
	char **argv; /* the agent command */
	char launcher_buf[PATH_MAX];
};

static void usage(void)
{
	fprintf(stderr,
		"usage: openshell-supervisor --backend inpod --sandbox-id ID --proxy-port N\n"
		"         [--launcher PATH] [--audit-log FILE] [--user U] [--group G]"
		" -- CMD [ARG...]\n");
}

/* openshell-sandbox next to us (installed) or in the build tree's sibling folder. */
static void default_launcher(struct options *o)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return;
	*slash = '\0';
	const char *cands[] = { "../sandbox/openshell-sandbox", "openshell-sandbox" };
	for (size_t i = 0; i < ARRAY_SIZE(cands); i++) {
		if (str_format(o->launcher_buf, sizeof(o->launcher_buf), NULL, "%s/%s", self,
			       cands[i]) == 0 &&
		    access(o->launcher_buf, X_OK) == 0) {
			o->desc.launcher = o->launcher_buf;
			return;
		}
	}
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
		else if (strcmp(a, "--group") == 0)
			o->group = v;
		else
			return os_error_set(err, EINVAL, "unknown option %s", a);
	}
	if (!o->desc.backend || !o->desc.sandbox_id || !o->desc.proxy_port)
		return os_error_set(err, EINVAL,
				    "--backend, --sandbox-id and --proxy-port are required");
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

static json_t *build_spec(const struct options *o, const struct sockaddr_storage *proxy)
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
	return spec;
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

/* Waits for the agent while serving the proxy and the backend monitor. */
static int serve(struct backend_instance *inst, backend_running *run, const struct proxy_ops *px,
		 void *pstate, int sigfd, int *agent_status)
{
	os_error err = { 0 };
	for (;;) {
		struct pollfd pfd[4] = {
			{ .fd = backend_agent_fd(run), .events = POLLIN },
			{ .fd = backend_event_fd(inst), .events = POLLIN },
			{ .fd = px->fd(pstate), .events = POLLIN },
			{ .fd = sigfd, .events = POLLIN },
		};
		if (poll(pfd, 4, -1) < 0 && errno != EINTR)
			return os_error_errno(&err, "poll"), -1;
		if (pfd[1].revents && backend_dispatch(inst, &err) < 0)
			fprintf(stderr, "openshell-supervisor: bypass monitor: %s\n", err.msg);
		if (pfd[2].revents && px->dispatch(pstate, &err) < 0)
			fprintf(stderr, "openshell-supervisor: proxy: %s\n", err.msg);
		if (pfd[3].revents) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof(si)) == sizeof(si))
				fprintf(stderr, "openshell-supervisor: signal %u: stopping\n",
					si.ssi_signo);
			*agent_status = 128 + SIGTERM;
			return 0;
		}
		if (pfd[0].revents) {
			if (backend_reap_agent(run, agent_status, &err) < 0) {
				fprintf(stderr, "openshell-supervisor: %s\n", err.msg);
				return -1;
			}
			backend_dispatch(inst, &err); /* last bypass records */
			return 0;
		}
	}
}

static int run(const struct options *o, int audit_fd, int sigfd)
{
	struct backend_context ctx = { .audit = audit_write, .audit_user = &audit_fd };
	struct backend_instance *inst = NULL;
	backend_bound bound = { 0 };
	backend_ready ready = { 0 };
	backend_running running = { 0 };
	const struct proxy_ops *px = &proxy_placeholder_ops;
	void *pstate = NULL;
	struct sockaddr_storage paddr;
	socklen_t plen = 0;
	os_error err = { 0 };
	int code = 1, status = 0;
	_cleanup_json_ json_t *spec = NULL;

	if (backend_attach(&o->desc, &ctx, &inst, &bound, &err) < 0)
		goto fail;
	if (backend_proxy_endpoint(&bound, &paddr, &plen, &err) < 0 ||
	    (!proxy_withheld() && px->start((struct sockaddr *)&paddr, plen, &pstate, &err) < 0)) {
		os_error_prefix(&err, "proxy");
		goto fail;
	}
	if (backend_confirm(&bound, &ready, &err) < 0)
		goto fail;
	spec = build_spec(o, &paddr);
	if (!spec) {
		os_error_set(&err, ENOMEM, "building the launch spec");
		goto fail;
	}
	if (backend_start_agent(&ready, spec, &running, &err) < 0)
		goto fail;
	fprintf(stderr, "openshell-supervisor: sandbox %s running (backend %s)\n",
		o->desc.sandbox_id, o->desc.backend);
	if (serve(inst, &running, px, pstate, sigfd, &status) == 0)
		code = exit_code(status);
	goto out;
fail:
	fprintf(stderr, "openshell-supervisor: %s\n", err.msg);
	code = 1;
out:
	backend_teardown(&inst);
	if (pstate)
		px->stop(pstate);
	return code;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	os_error err = { 0 };
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
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		fprintf(stderr, "openshell-supervisor: signalfd: %s\n", strerror(errno));
		return 1;
	}
	int code = run(&o, audit_fd, sigfd);
	close(sigfd);
	return code;
}
