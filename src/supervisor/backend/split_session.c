/* split_session.c - the split backend's side of the launcher session:
 * confirm accepts launchers until one proves knowledge of the sandbox's key
 * (the others are audited and dropped), then has it try to break its fence
 * from inside the workload, and checks the claim against a canary of its
 * own; start_agent sends the launch spec (the launcher's "go") and judges
 * its status lines; afterwards only the agent's exit is expected. Never
 * sends the spec before the break test passed; never trusts a frame whose
 * tag does not verify. */
#include "split.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auditrec.h"
#include "cleanup.h"
#include "json.h"
#include "parse.h"

#define HANDSHAKE_MS 5000
#define REPORT_MS 20000

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* decision/reason: allow/launcher_authenticated for the launcher that
 * proved the key, deny/... for one that did not and for a failed break test. */
static void audit(const struct split *s, const char *event, const char *decision,
		  const char *reason, const char *peer, const char *detail)
{
	_cleanup_json_ json_t *rec = auditrec_new(s->id, event, decision, reason);
	if (!rec)
		return;
	json_object_set_new(rec, "peer", json_string(peer));
	json_object_set_new(rec, "detail", json_string(detail ? detail : ""));
	if (s->ctx.audit)
		s->ctx.audit(s->ctx.audit_user, rec);
}

static int accept_one(struct split *s, int64_t deadline, char *peer, size_t cap, os_error *err)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return os_error_set(err, ETIMEDOUT,
					    "no authenticated launcher within %u ms",
					    s->confirm_ms);
		struct pollfd p = { .fd = s->control_fd, .events = POLLIN };
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return os_error_errno(err, "waiting for the launcher");
		if (n <= 0)
			continue;
		struct sockaddr_in sin;
		socklen_t len = sizeof(sin);
		int fd = accept4(s->control_fd, (struct sockaddr *)&sin, &len, SOCK_CLOEXEC);
		if (fd < 0)
			continue; /* EAGAIN, ECONNABORTED...: wait for the next one */
		char a[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &sin.sin_addr, a, sizeof(a));
		snprintf(peer, cap, "%s:%u", a, ntohs(sin.sin_port));
		return fd;
	}
}

/* Accepts until one launcher proves the key; one session per sandbox, ever. */
static int authenticate(struct split *s, int64_t deadline, os_error *err)
{
	for (;;) {
		char peer[64];
		int fd = accept_one(s, deadline, peer, sizeof(peer), err);
		if (fd < 0)
			return -1;
		int64_t left = deadline - now_ms();
		os_error local = { 0 };
		splitchan_init(&s->chan, fd);
		if (splitchan_handshake_supervisor(&s->chan, s->key,
						   left < HANDSHAKE_MS ? (int)left : HANDSHAKE_MS,
						   &local) == 0) {
			s->conn_fd = fd;
			s->chan_ready = true;
			audit(s, "split_launcher_authenticated", "allow", "launcher_authenticated",
			      peer, NULL);
			close(s->control_fd); /* nobody else may pose as this launcher later */
			s->control_fd = -1;
			return 0;
		}
		audit(s, "split_auth_failed", "deny", "launcher_auth_failed", peer, local.msg);
		splitchan_release(&s->chan);
		close(fd);
	}
}

static int hostport(struct in_addr a, uint16_t port, char *out, size_t cap, os_error *err)
{
	char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a, text, sizeof(text));
	return str_format(out, cap, err, "%s:%u", text, port);
}

/* The launcher's claims, checked one by one. */
static int judge_report(const char *text, size_t len, const char *canary, os_error *err)
{
	static const char *const keys[] = { "probes", "proxy", NULL };
	_cleanup_json_ json_t *r = json_parse_strict(text, len, 65536, err);
	const char *proxy = NULL, *addr = NULL, *result = NULL;
	json_t *probes = r ? json_object_get(r, "probes") : NULL;
	json_t *p0 = json_array_get(probes, 0);
	if (!r || json_check_keys(r, keys, "break-test report", err) < 0 ||
	    json_get_string(r, "proxy", true, &proxy, err) < 0)
		return -1;
	if (json_array_size(probes) != 1 || json_get_string(p0, "addr", true, &addr, err) < 0 ||
	    json_get_string(p0, "result", true, &result, err) < 0 || strcmp(addr, canary) != 0)
		return err->code ? -1
				 : os_error_set(err, EPROTO,
						"break-test report does not answer the probe");
	if (strcmp(result, "connected") == 0)
		return os_error_set(err, EPERM,
				    "a direct connect from inside the workload to %s succeeded",
				    canary);
	if (strcmp(proxy, "connected") != 0)
		return os_error_set(err, EHOSTUNREACH,
				    "the proxy is not reachable from inside the workload (%s)",
				    proxy);
	return 0;
}

static int break_test(struct split *s, os_error *err)
{
	char canary[64], proxy[64];
	if (hostport(s->advertise_addr, s->canary_port, canary, sizeof(canary), err) < 0 ||
	    hostport(s->advertise_addr, s->proxy_port, proxy, sizeof(proxy), err) < 0)
		return -1;
	_cleanup_json_ json_t *req = json_pack("{s:[s], s:s}", "probes", canary, "proxy", proxy);
	enum splitchan_type type;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (!req || splitchan_send_json(&s->chan, SPLITCHAN_PROBE, req, err) < 0 ||
	    splitchan_recv(&s->chan, REPORT_MS, &type, &text, &len, err) < 0)
		return os_error_prefix(err, "break test");
	if (type != SPLITCHAN_REPORT)
		return os_error_set(err, EPROTO, "break test: expected a report, got frame %d",
				    (int)type);
	if (judge_report(text, len, canary, err) < 0)
		return os_error_prefix(err, "break test");
	/* Our own evidence, whatever the launcher said: the canary saw nobody. */
	int fd = accept4(s->canary_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
		if (fd >= 0)
			close(fd);
		return os_error_set(err, EPERM, "break test: the canary %s was reached", canary);
	}
	return 0;
}

static void send_abort(struct split *s, const char *reason)
{
	_cleanup_json_ json_t *j = json_pack("{s:s}", "reason", reason);
	if (j)
		splitchan_send_json(&s->chan, SPLITCHAN_ABORT, j, NULL);
}

int split_confirm(void *state, os_error *err)
{
	struct split *s = state;
	if (authenticate(s, now_ms() + s->confirm_ms, err) < 0)
		return os_error_prefix(err, "launcher");
	/* The launcher is inside: the namespace needs no name any more. While
	 * it waits for the probes, the kernel tells us which process it is. */
	if (s->mode == SPLIT_LOCAL) {
		split_net_unname(s);
		if (split_net_launcher_pid(s, &s->launcher_pid, err) < 0) {
			send_abort(s, err->msg);
			return os_error_prefix(err, "finding the launcher");
		}
	}
	if (break_test(s, err) < 0) {
		send_abort(s, err->msg);
		audit(s, "split_break_test_failed", "deny", "break_test_failed", "", err->msg);
		return -1;
	}
	return 0;
}

void split_session_close(struct split *s)
{
	if (s->conn_fd < 0)
		return;
	splitchan_release(&s->chan);
	close(s->conn_fd);
	s->conn_fd = -1;
	s->chan_ready = false;
}
