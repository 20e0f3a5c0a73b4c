/* split_agent.c - the split backend's "go" and what follows: the launch
 * spec goes to the authenticated launcher (adapted to a workload that has
 * no privileges: no new namespaces, no namespace fd), its status lines are
 * judged as the inpod backend judges a local launcher's, and afterwards the
 * only thing accepted from it is the agent's exit. A lost or garbled
 * channel is reported as a failure, never as a clean exit. */
#include "split.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "json.h"
#include "log.h"
#include "parse.h"

#define STATUS_MS 30000
#define STATUS_LINES_MAX 256

static const char *const proxy_vars[] = { "HTTP_PROXY",	 "HTTPS_PROXY", "http_proxy",
					  "https_proxy", "ALL_PROXY",	"all_proxy" };

/* Pod mode: the proxy listens on the listen address, the workload dials the
 * advertised one. */
static int readdress_proxy(const struct split *s, json_t *spec, os_error *err)
{
	json_t *env = json_object_get(spec, "env");
	char a[INET_ADDRSTRLEN], url[64];
	inet_ntop(AF_INET, &s->advertise_addr, a, sizeof(a));
	if (str_format(url, sizeof(url), err, "http://%s:%u", a, s->proxy_port) < 0)
		return -1;
	for (size_t i = 0; json_is_object(env) && i < sizeof(proxy_vars) / sizeof(*proxy_vars); i++)
		if (json_object_get(env, proxy_vars[i]) &&
		    json_object_set_new(env, proxy_vars[i], json_string(url)) < 0)
			return os_error_set(err, ENOMEM,
					    "launch spec: rewriting the proxy address");
	return 0;
}

static void process_buffered(struct split *s);

static json_t *adapt_spec(const struct split *s, const json_t *launch_spec, os_error *err)
{
	_cleanup_json_ json_t *spec = json_deep_copy(launch_spec);
	if (!spec || !json_is_object(spec))
		return os_error_set(err, EINVAL, "launch spec must be a JSON object"), NULL;
	/* The workload is unprivileged and already in its namespace (or Pod). */
	json_object_del(spec, "netns");
	if (json_object_set_new(spec, "new_namespaces", json_false()) < 0)
		return os_error_set(err, ENOMEM, "launch spec"), NULL;
	if (s->mode == SPLIT_POD && readdress_proxy(s, spec, err) < 0)
		return NULL;
	return json_incref(spec);
}

/* One status line: -1 on a failure line, 1 on exec ok, 0 otherwise. */
static int judge_line(const char *text, size_t len, os_error *err)
{
	_cleanup_json_ json_t *j = json_parse_strict(text, len, 65536, NULL);
	const char *step = NULL, *msg = NULL;
	if (!j)
		return 0;
	json_get_string(j, "step", false, &step, NULL);
	if (step && json_get_string(j, "message", false, &msg, NULL) == 0 && msg)
		return os_error_set(err, EPERM, "launcher step %s failed: %s", step, msg);
	return step && strcmp(step, "exec") == 0 && json_is_true(json_object_get(j, "ok"));
}

/* Reads status frames until the launcher says the stream ended. */
static int await_launch(struct split *s, os_error *err)
{
	bool exec_ok = false;
	for (int lines = 0; lines < STATUS_LINES_MAX; lines++) {
		enum splitchan_type type;
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		if (splitchan_recv(&s->chan, STATUS_MS, &type, &text, &len, err) < 0)
			return os_error_prefix(err, "launcher status");
		if (type == SPLITCHAN_LAUNCHED)
			return exec_ok ? 0
				       : os_error_set(err, EPIPE,
						      "launcher ended before starting the agent");
		if (type != SPLITCHAN_STATUS)
			return os_error_set(err, EPROTO,
					    "launcher status: unexpected frame type %d", (int)type);
		int v = judge_line(text, len, err);
		if (v < 0)
			return -1;
		exec_ok |= v == 1;
	}
	return os_error_set(err, E2BIG, "launcher status: over %d lines", STATUS_LINES_MAX);
}

int split_start_agent(void *state, const json_t *launch_spec, os_error *err)
{
	struct split *s = state;
	if (!s->chan_ready)
		return os_error_set(err, EINVAL, "no authenticated launcher");
	_cleanup_json_ json_t *spec = adapt_spec(s, launch_spec, err);
	if (!spec || splitchan_send_json(&s->chan, SPLITCHAN_SPEC, spec, err) < 0)
		return -1;
	s->started = true;
	if (await_launch(s, err) < 0) {
		split_session_close(s); /* the launcher stops whatever it started */
		return -1;
	}
	/* A quick agent's exit may already sit in the buffer: no fd would wake us. */
	process_buffered(s);
	return 0;
}

pid_t split_agent_pid(void *state)
{
	const struct split *s = state;
	return s->launcher_pid;
}

int split_agent_fd(void *state)
{
	const struct split *s = state;
	return s->exit_efd;
}

static void agent_over(struct split *s)
{
	uint64_t one = 1;
	if (write(s->exit_efd, &one, sizeof(one)) < 0)
		log_warn("split: signalling the agent's end: %s", strerror(errno));
}

static void lose(struct split *s, const char *why)
{
	snprintf(s->lost_reason, sizeof(s->lost_reason), "%s", why);
	s->lost = true;
	agent_over(s);
}

/* An EXIT frame: {"code": 0..255}. */
static void take_exit(struct split *s, const char *text, size_t len)
{
	_cleanup_json_ json_t *j = json_parse_strict(text, len, 4096, NULL);
	int64_t code;
	if (!j || json_get_int(j, "code", true, 0, 255, &code, NULL) < 0) {
		lose(s, "malformed exit report");
		return;
	}
	s->exit_code = (int)code;
	s->exited = true;
	agent_over(s);
}

int split_event_fd(void *state)
{
	const struct split *s = state;
	return s->started && s->chan_ready ? s->conn_fd : -1;
}

/* Frames already received: only status lines or the exit may come now. */
static void process_buffered(struct split *s)
{
	os_error local = { 0 };
	while (!s->exited && !s->lost) {
		enum splitchan_type type;
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		int got = splitchan_take(&s->chan, &type, &text, &len, &local);
		if (got < 0) {
			lose(s, local.msg);
			return;
		}
		if (got == 0)
			break;
		if (type == SPLITCHAN_EXIT) {
			take_exit(s, text, len);
			return;
		}
		if (type != SPLITCHAN_STATUS) {
			lose(s, "unexpected frame after the launch");
			return;
		}
	}
	if (!s->exited && !s->lost && s->chan.eof)
		lose(s, "the launcher closed the channel without reporting the agent's exit");
}

int split_dispatch(void *state, os_error *err)
{
	struct split *s = state;
	if (!s->started || !s->chan_ready || s->exited || s->lost)
		return 0;
	os_error local = { 0 };
	if (splitchan_pump(&s->chan, &local) < 0)
		return lose(s, local.msg), 0;
	process_buffered(s);
	(void)err;
	return 0;
}

int split_reap_agent(void *state, int *wait_status, os_error *err)
{
	struct split *s = state;
	if (s->reaped)
		return os_error_set(err, ECHILD, "agent already reaped");
	if (s->lost) {
		s->reaped = true;
		return os_error_set(err, ECONNRESET, "launcher connection lost: %s",
				    s->lost_reason);
	}
	if (!s->exited)
		return os_error_set(err, EAGAIN, "agent still running");
	s->reaped = true;
	*wait_status = (s->exit_code & 0xff) << 8;
	return 0;
}
