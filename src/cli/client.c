/* client.c - calls to the gateway (TCP, TLS or Unix socket, through
 * gw_http.c; see client.h). Response bodies are capped; a gateway that is
 * down is reported with what to do. */
#include "client.h"
#include "gw_http.h"
#include "selfpath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"

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
};

static int on_lines(struct sink *s, const char *p, size_t len)
{
	if (buf_append(&s->b, p, len, NULL) < 0)
		return -1;
	char *nl;
	while ((nl = memchr(s->b.data, '\n', s->b.len)) != NULL) {
		size_t n = (size_t)(nl - s->b.data);
		if (s->line(s->b.data, n, s->user) < 0)
			return -1;
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

int client_start_gateway(struct client *c, os_error *err)
{
	char bin[PATH_MAX], log[PATH_MAX + 32];
	if (exe_sibling("../gateway", "openshell-gateway", bin, sizeof(bin)) < 0)
		return os_error_set(err, ENOENT, "openshell-gateway not found next to openshell");
	if (dir_create_parents(c->state_dir, 0700) < 0)
		return os_error_errno(err, "creating %s", c->state_dir);
	snprintf(log, sizeof(log), "%s/gateway.log", c->state_dir);
	pid_t pid = fork();
	if (pid < 0)
		return os_error_errno(err, "fork");
	if (pid == 0) {
		/* Detached: a new session, so the CLI's terminal and signals never reach it. */
		if (setsid() < 0 || fork() != 0)
			_exit(0);
		/* dup2 below clears CLOEXEC on the standard fds it makes. */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (null < 0 || fd < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		fd_close_from(3, NULL, 0, NULL);
		execl(bin, bin, "--state-dir", c->state_dir, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	for (int i = 0; i < 200; i++) {
		if (healthy(c)) {
			read_token(c);
			c->started = true;
			return 0;
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
	fprintf(stderr, "openshell: no gateway running; starting a local one (state in %s)\n",
		c->state_dir);
	return client_start_gateway(c, err);
}
