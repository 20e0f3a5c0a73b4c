/* client.c - calls to the gateway (TCP, TLS or Unix socket, through
 * gw_http.c; see client.h). Response bodies are capped; a gateway that is
 * down is reported with what to do. */
#include "client.h"
#include "gw_http.h"
#include "selfpath.h"

#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"
#include "procfs.h"

#define RESP_MAX (16u << 20)

static int default_state_dir(char *out, size_t cap, os_error *err)
{
	const char *sd = getenv("OPENSHELL_GATEWAY_STATE_DIR");
	const char *home = getenv("HOME");
	if (sd && *sd)
		return str_copy(out, cap, sd, err);
	if (geteuid() == 0 || !home)
		return str_copy(out, cap, "/var/lib/openshell", err);
	return str_format(out, cap, err, "%s/.local/state/openshell", home);
}

static void read_token(struct client *c)
{
	const char *t = getenv("OPENSHELL_TOKEN");
	char path[PATH_MAX + 32];
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (t && *t) {
		str_copy(c->token, sizeof(c->token), t, NULL);
		return;
	}
	snprintf(path, sizeof(path), "%s/admin.token", c->state_dir);
	if (file_read_all(path, sizeof(c->token) - 1, &data, &len, NULL) < 0)
		return;
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		data[--len] = '\0';
	memcpy(c->token, data, len + 1);
}

int client_init(struct client *c, const char *gateway, os_error *err)
{
	memset(c, 0, sizeof(*c));
	if (!gateway)
		gateway = getenv("OPENSHELL_GATEWAY");
	if (default_state_dir(c->state_dir, sizeof(c->state_dir), err) < 0)
		return -1;
	if (gateway && *gateway) {
		c->explicit_gateway = true;
		bool tls = str_has_prefix(gateway, "https://");
		if (!tls && !str_has_prefix(gateway, "http://") &&
		    !str_has_prefix(gateway, "unix:"))
			return os_error_set(err, EINVAL,
					    "gateway \"%s\": expected http://HOST:PORT, "
					    "https://HOST:PORT or unix:/PATH",
					    gateway);
		if (str_copy(c->url, sizeof(c->url), gateway, err) < 0 ||
		    (tls && tls_settings_from_env(&c->tls, err) < 0))
			return -1;
	} else {
		const char *us = getenv("OPENSHELL_GATEWAY_UNIX_SOCKET");
		if (us && *us)
			snprintf(c->url, sizeof(c->url), "unix:%s", us);
		else
			snprintf(c->url, sizeof(c->url), "unix:%s/gateway.sock", c->state_dir);
	}
	read_token(c);
	return 0;
}

struct sink {
	struct buf b;
	int fd;
	client_line_fn line; /* NDJSON streams: called per complete line */
	void *user;
	bool stopped; /* line returned < 0: the rest is not read */
};

static int on_lines(struct sink *s, const char *p, size_t len)
{
	if (buf_append(&s->b, p, len, NULL) < 0)
		return -1;
	char *nl;
	while ((nl = memchr(s->b.data, '\n', s->b.len)) != NULL) {
		size_t n = (size_t)(nl - s->b.data);
		if (s->line(s->b.data, n, s->user) < 0) {
			s->stopped = true;
			return -1;
		}
		buf_consume(&s->b, n + 1);
	}
	return 0;
}

static int on_data(const char *p, size_t len, void *data)
{
	struct sink *s = data;
	if (s->line)
		return on_lines(s, p, len);
	if (s->fd >= 0)
		return fd_write_all(s->fd, p, len, NULL);
	return buf_append(&s->b, p, len, NULL);
}

static int perform(struct client *c, const char *method, const char *path, const char *body,
		   struct sink *sink, long *status, os_error *err)
{
	*status = 0;
	return gw_http(c, method, path, body, on_data, sink, status, err);
}

int client_call(struct client *c, const char *method, const char *path, const json_t *body,
		long *status, json_t **out, os_error *err)
{
	_cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct sink s = { .fd = -1 };
	buf_init(&s.b, RESP_MAX);
	*out = NULL;
	int rc = perform(c, method, path, text, &s, status, err);
	if (rc == 0 && s.b.len > 0)
		*out = json_loadb(s.b.data, s.b.len, 0, NULL);
	buf_free(&s.b);
	return rc;
}

int client_stream(struct client *c, const char *path, int fd, os_error *err)
{
	struct sink s = { .fd = fd };
	long status = 0;
	buf_init(&s.b, 0);
	if (perform(c, "GET", path, NULL, &s, &status, err) < 0)
		return -1;
	if (status != 200)
		return os_error_set(err, EIO, "logs: the gateway answered %ld", status);
	return 0;
}

int client_stream_lines(struct client *c, const char *path, client_line_fn line, void *user,
			os_error *err)
{
	struct sink s = { .fd = -1, .line = line, .user = user };
	long status = 0;
	buf_init(&s.b, RESP_MAX);
	int rc = perform(c, "GET", path, NULL, &s, &status, err);
	/* A last line without its newline (an agent's final output) still counts. */
	if (rc == 0 && status == 200 && !s.stopped && s.b.len > 0 &&
	    line(s.b.data, s.b.len, user) < 0)
		rc = -1;
	buf_free(&s.b);
	if (rc < 0)
		return -1;
	if (status != 200)
		return os_error_set(err, EIO, "%s: the gateway answered %ld", path, status);
	return 0;
}

/* 0 when /v1/health answers 200; else err says what answered instead. */
static int health(struct client *c, os_error *err)
{
	_cleanup_json_ json_t *out = NULL;
	long status = 0;
	if (client_call(c, "GET", "/v1/health", NULL, &status, &out, err) < 0)
		return -1;
	if (status == 200)
		return 0;
	const char *msg = json_string_value(json_object_get(out, "message"));
	return os_error_set(err, EPROTO, "the gateway at %s answered %ld%s%s", c->url, status,
			    msg ? ": " : "", msg ? msg : "");
}

static bool healthy(struct client *c)
{
	return health(c, NULL) == 0;
}

/* The local driver runs supervisors that make namespaces, nftables fences
 * and drop to the agent's user: root, or these capabilities. */
static bool can_run_local_sandboxes(void)
{
	static const int needed[] = { CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETUID, CAP_SETGID };
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	if (syscall(SYS_capget, &h, d) < 0)
		return geteuid() == 0;
	for (size_t i = 0; i < ARRAY_SIZE(needed); i++)
		if (!(d[needed[i] / 32].effective & (1u << (needed[i] % 32))))
			return false;
	return true;
}

/* Starting a gateway that could not create a sandbox helps nobody: say what
 * is needed instead, and where root's gateway is when one runs. */
static int refuse_unprivileged_start(struct client *c, os_error *err)
{
	const char *driver = getenv("OPENSHELL_GATEWAY_DEFAULT_DRIVER");
	if ((driver && *driver && strcmp(driver, "local") != 0) || can_run_local_sandboxes())
		return 0;
	static const char root_sock[] = "/var/lib/openshell/gateway.sock";
	struct stat st;
	bool root_runs = strcmp(c->state_dir, "/var/lib/openshell") != 0 &&
			 stat(root_sock, &st) == 0 && S_ISSOCK(st.st_mode);
	return os_error_set(err, EPERM,
			    "no gateway runs for %s, and one started by this user could not "
			    "create sandboxes: the local driver needs root (or CAP_SYS_ADMIN, "
			    "CAP_NET_ADMIN, CAP_SETUID and CAP_SETGID)%s%s%s; nothing was started",
			    c->state_dir,
			    root_runs ? ". root's gateway runs at "
				      : ": run as root, or set "
					"OPENSHELL_GATEWAY to a "
					"gateway's address",
			    root_runs ? root_sock : "",
			    root_runs ? ", but its socket and token are root's: run the command as "
					"root (sudo), or ask for a token and set OPENSHELL_GATEWAY "
					"and OPENSHELL_TOKEN"
				      : "");
}

/* The last error the gateway logged after offset from (its log is JSON lines
 * when it is not a terminal), into out; false when there is none. */
static bool last_logged_error(const char *log, off_t from, char *out, size_t cap)
{
	_cleanup_close_ int fd = open(log, O_RDONLY | O_CLOEXEC);
	char buf[16384];
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, from);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	bool found = false;
	for (char *line = buf, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		_cleanup_json_ json_t *rec = json_loads(line, 0, NULL);
		const char *lvl = json_string_value(json_object_get(rec, "level"));
		const char *msg = json_string_value(json_object_get(rec, "msg"));
		if (lvl && msg && !strcmp(lvl, "error")) {
			snprintf(out, cap, "%s", msg);
			found = true;
		} else if (!rec && !strncmp(line, "openshell-gateway: ", 19)) {
			snprintf(out, cap, "%s", line + 19); /* flag errors, before logging */
			found = true;
		}
		if (!nl)
			break;
	}
	return found;
}

/* Forks the detached gateway; *gateway is its pid (the grandchild's). */
static int spawn_detached(const char *bin, const char *state_dir, const char *log, pid_t *gateway,
			  os_error *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return os_error_errno(err, "pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return os_error_errno(err, "fork");
	}
	if (pid == 0) {
		/* Detached: a new session, so the CLI's terminal and signals never reach it. */
		pid_t g = setsid() < 0 ? -1 : fork();
		if (g != 0) {
			(void)!write(p[1], &g, sizeof(g));
			_exit(0);
		}
		/* dup2 below clears CLOEXEC on the standard fds it makes. */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (null < 0 || fd < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		fd_close_from(3, NULL, 0, NULL);
		execl(bin, bin, "--state-dir", state_dir, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	waitpid(pid, NULL, 0);
	ssize_t n = read(p[0], gateway, sizeof(*gateway));
	close(p[0]);
	if (n != (ssize_t)sizeof(*gateway) || *gateway <= 0)
		return os_error_set(err, ECHILD, "starting the gateway: could not fork it");
	return 0;
}

int client_start_gateway(struct client *c, os_error *err)
{
	char bin[PATH_MAX], log[PATH_MAX + 32], why[1024];
	if (refuse_unprivileged_start(c, err) < 0)
		return -1;
	if (exe_sibling("../gateway", "openshell-gateway", bin, sizeof(bin)) < 0)
		return os_error_set(err, ENOENT, "openshell-gateway not found next to openshell");
	if (dir_create_parents(c->state_dir, 0700) < 0)
		return os_error_errno(err, "creating %s", c->state_dir);
	snprintf(log, sizeof(log), "%s/gateway.log", c->state_dir);
	struct stat st;
	off_t from = stat(log, &st) == 0 ? st.st_size : 0; /* what this start writes */
	pid_t pid = 0;
	if (spawn_detached(bin, c->state_dir, log, &pid, err) < 0)
		return -1;
	for (int i = 0; i < 200; i++) {
		if (healthy(c)) {
			read_token(c);
			c->started = true;
			return 0;
		}
		/* Exited (reaped by init, or a zombie): say why at once, not in 10 s. */
		struct procfs_stat ps;
		if (kill(pid, 0) < 0 ||
		    (procfs_stat_read(pid, &ps, NULL) == 0 && ps.state == 'Z')) {
			if (last_logged_error(log, from, why, sizeof(why)))
				return os_error_set(err, EIO, "the gateway could not start: %s",
						    why);
			return os_error_set(err, EIO, "the gateway exited at once: see %s", log);
		}
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
	return os_error_set(err, ETIMEDOUT, "the gateway did not come up within 10 s: see %s", log);
}

int client_ensure(struct client *c, os_error *err)
{
	os_error why = { 0 };
	if (health(c, &why) == 0)
		return 0;
	/* Something answered but not well (TLS, a wrong port): say what. */
	if (c->explicit_gateway && why.code != ECONNREFUSED)
		return os_error_set(err, why.code, "%s", why.msg);
	if (c->explicit_gateway)
		return os_error_set(err, ECONNREFUSED,
				    "no gateway answers at %s (set by OPENSHELL_GATEWAY/--gateway)",
				    c->url);
	if (refuse_unprivileged_start(c, err) < 0)
		return -1;
	fprintf(stderr, "openshell: no gateway running; starting a local one (state in %s)\n",
		c->state_dir);
	return client_start_gateway(c, err);
}
