/* remote.c - see remote.h. Steps, each named in a failure: connect,
 * authenticate, break-test, go, then the normal launch steps (run by a
 * child, the "runner", whose status lines and exit this process relays).
 * Never forks the runner before the supervisor's authenticated launch spec;
 * losing the channel afterwards kills the agent. */
#include "remote.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"
#include "json.h"
#include "parse.h"
#include "splitchan.h"
#include "status.h"

#define CONNECT_RETRY_MS 30000 /* the supervisor may still be starting */
#define CONNECT_TRY_MS 2000
#define HANDSHAKE_MS 10000
#define PROBE_MS 2000
#define GO_MS 120000
#define STATUS_LINE_CAP 65536
#define MAX_PROBES 16
#define LINGER_MS 10000

struct remote_options {
	const char *supervisor;
	const char *trust;
};

bool remote_requested(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--supervisor") == 0)
			return true;
	return false;
}

static int usage(const char *msg)
{
	fprintf(stderr,
		"openshell-sandbox: %s\n"
		"usage: openshell-sandbox --supervisor ADDR:PORT --trust KEYFILE\n",
		msg);
	return SBX_EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct remote_options *o)
{
	for (int i = 1; i < argc; i += 2) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--supervisor") == 0 && val)
			o->supervisor = val;
		else if (strcmp(argv[i], "--trust") == 0 && val)
			o->trust = val;
		else
			return -1;
	}
	return o->supervisor && o->trust ? 0 : -1;
}

/* "A.B.C.D:PORT" or "[v6]:PORT": literals only, the launcher has no resolver. */
static int parse_hostport(const char *s, struct sockaddr_storage *ss, socklen_t *len, os_error *err)
{
	const char *colon = strrchr(s, ':');
	uint64_t port;
	char host[INET6_ADDRSTRLEN + 2];
	if (!colon || parse_u64_str(colon + 1, 1, 65535, &port, NULL) < 0 ||
	    (size_t)(colon - s) >= sizeof(host))
		return os_error_set(err, EINVAL, "'%s' is not ADDR:PORT", s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	size_t hl = strlen(host);
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		*len = sizeof(*v4);
		return 0;
	}
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &v6->sin6_addr) == 1) {
			v6->sin6_family = AF_INET6;
			v6->sin6_port = htons((uint16_t)port);
			*len = sizeof(*v6);
			return 0;
		}
	}
	return os_error_set(err, EINVAL, "'%s': the address must be an IP literal", s);
}

/* One connect attempt with a deadline: 0 connected, else the errno. */
static int try_connect(const struct sockaddr_storage *ss, socklen_t len, int timeout_ms, int *out)
{
	_cleanup_close_ int fd =
		socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (const struct sockaddr *)ss, len) < 0) {
		if (errno != EINPROGRESS)
			return errno;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int n;
		while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		if (n == 0)
			return ETIMEDOUT;
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			return errno;
		if (soerr)
			return soerr;
	}
	if (out) {
		int flags = fcntl(fd, F_GETFL);
		if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
			return errno;
		*out = steal_fd(fd);
	}
	return 0;
}

static int connect_supervisor(const char *target, int *out, os_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (parse_hostport(target, &ss, &len, err) < 0)
		return -1;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		int e = try_connect(&ss, len, CONNECT_TRY_MS, out);
		if (e == 0)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - start.tv_sec) * 1000 +
			     (now.tv_nsec - start.tv_nsec) / 1000000;
		bool transient = e == ECONNREFUSED || e == ETIMEDOUT || e == ENETUNREACH ||
				 e == EHOSTUNREACH;
		if (!transient || spent >= CONNECT_RETRY_MS)
			return os_error_set(err, e, "supervisor %s: %s", target, strerror(e));
		usleep(200 * 1000);
	}
}

static const char *outcome_name(int e)
{
	switch (e) {
	case 0:
		return "connected";
	case ECONNREFUSED:
		return "refused";
	case ETIMEDOUT:
		return "timeout";
	case ENETUNREACH:
	case EHOSTUNREACH:
		return "unreachable";
	case EPERM:
	case EACCES:
		return "denied";
	default:
		return "error";
	}
}

/* Tries one target as the agent would; returns the outcome's name. */
static const char *probe(const char *target, os_error *err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (parse_hostport(target, &ss, &len, err) < 0)
		return NULL;
	int fd = -1;
	int e = try_connect(&ss, len, PROBE_MS, &fd);
	if (fd >= 0)
		close(fd);
	return outcome_name(e);
}

/* Runs the probes the supervisor named and builds the report. *breached is
 * set when a direct connect succeeded or the proxy did not answer. */
static json_t *break_test(const char *text, size_t len, bool *breached, os_error *err)
{
	static const char *const keys[] = { "probes", "proxy", NULL };
	_cleanup_json_ json_t *req = json_parse_strict(text, len, SPLITCHAN_MAX_PAYLOAD, err);
	const char *proxy = NULL;
	json_t *probes = req ? json_object_get(req, "probes") : NULL;
	if (!req || json_check_keys(req, keys, "probe request", err) < 0 ||
	    json_get_string(req, "proxy", true, &proxy, err) < 0)
		return NULL;
	if (!json_is_array(probes) || json_array_size(probes) == 0 ||
	    json_array_size(probes) > MAX_PROBES)
		return os_error_set(err, EINVAL, "probe request: probes must list 1..%d targets",
				    MAX_PROBES),
		       NULL;
	_cleanup_json_ json_t *results = json_array();
	size_t i;
	json_t *p;
	*breached = false;
	json_array_foreach (probes, i, p) {
		const char *got = json_is_string(p) ? probe(json_string_value(p), err) : NULL;
		if (!got)
			return os_error_prefix(err, "probe %zu", i), NULL;
		*breached |= strcmp(got, "connected") == 0;
		json_array_append_new(results, json_pack("{s:s,s:s}", "addr", json_string_value(p),
							 "result", got));
	}
	const char *pgot = probe(proxy, err);
	if (!pgot)
		return os_error_prefix(err, "proxy"), NULL;
	*breached |= strcmp(pgot, "connected") != 0;
	return json_pack("{s:O,s:s}", "probes", results, "proxy", pgot);
}

static int step_break_test(struct splitchan *ch, os_error *err)
{
	enum splitchan_type type;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	bool breached = false;
	if (splitchan_recv(ch, GO_MS, &type, &text, &len, err) < 0)
		return os_error_prefix(err, "waiting for the probe request");
	if (type != SPLITCHAN_PROBE)
		return os_error_set(err, EPROTO, "expected a probe request, got frame type %d",
				    (int)type);
	_cleanup_json_ json_t *report = break_test(text, len, &breached, err);
	if (!report || splitchan_send_json(ch, SPLITCHAN_REPORT, report, err) < 0)
		return -1;
	if (breached) {
		_cleanup_free_ char *summary = json_dumps(report, JSON_COMPACT);
		return os_error_set(err, EPERM, "the fence does not hold: %s",
				    summary ? summary : "(report)");
	}
	return 0;
}

/* Waits for the supervisor's decision: the launch spec, or an abort. */
static int step_go(struct splitchan *ch, char **spec, size_t *len, os_error *err)
{
	enum splitchan_type type;
	char *text = NULL;
	if (splitchan_recv(ch, GO_MS, &type, &text, len, err) < 0)
		return os_error_prefix(err, "waiting for the launch spec");
	if (type == SPLITCHAN_SPEC) {
		*spec = text;
		return 0;
	}
	_cleanup_free_ char *owned = text; /* freed on every path below */
	(void)owned;
	if (type != SPLITCHAN_ABORT)
		return os_error_set(err, EPROTO, "expected the launch spec, got frame type %d",
				    (int)type);
	_cleanup_json_ json_t *j = json_parse_strict(text, *len, 65536, NULL);
	const char *reason = NULL;
	if (j)
		json_get_string(j, "reason", false, &reason, NULL);
	return os_error_set(err, ECANCELED, "the supervisor refused to start the agent: %s",
			    reason ? reason : "(no reason given)");
}

/* Forwards complete status lines; with flush, also a trailing partial one. */
static int forward_lines(struct splitchan *ch, struct buf *b, bool flush, os_error *err)
{
	for (;;) {
		char *nl = b->len ? memchr(b->data, '\n', b->len) : NULL;
		size_t n = nl ? (size_t)(nl - b->data) : (flush ? b->len : 0);
		if (n == 0 && !nl)
			return 0;
		if (n > 0 && splitchan_send(ch, SPLITCHAN_STATUS, b->data, n, err) < 0)
			return -1;
		buf_consume(b, nl ? n + 1 : n);
	}
}

static int exit_code_of(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return SBX_EXIT_LAUNCH_FAILED;
}

static int reap_runner(pid_t runner)
{
	int st = 0;
	while (waitpid(runner, &st, 0) < 0)
		if (errno != EINTR)
			return SBX_EXIT_LAUNCH_FAILED;
	return exit_code_of(st);
}

/* The status pipe delivered data or EOF; false once it is closed. */
static bool relay_status(struct splitchan *ch, int fd, struct buf *line, os_error *err, int *rc)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	if (n < 0 && errno == EINTR)
		return true;
	if (n > 0) {
		if (buf_append(line, chunk, (size_t)n, err) < 0 ||
		    forward_lines(ch, line, false, err) < 0)
			*rc = -1;
		return true;
	}
	if (forward_lines(ch, line, true, err) < 0 ||
	    splitchan_send(ch, SPLITCHAN_LAUNCHED, "", 0, err) < 0)
		*rc = -1;
	return false;
}

/* Stays until the supervisor hangs up (or LINGER_MS): it may still be
 * looking at this process as the root of the agent's caller identity. */
static void linger(struct splitchan *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	while (poll(&p, 1, LINGER_MS) < 0 && errno == EINTR)
		;
}

/* Relays status lines, then the exit; any word from the supervisor (or its
 * silence by closing) stops the agent. Returns our exit status. */
static int relay(struct splitchan *ch, pid_t runner, int pidfd, int status_rd)
{
	_cleanup_buf_ struct buf line;
	buf_init(&line, STATUS_LINE_CAP);
	os_error err = { 0 };
	bool status_open = true;
	int rc = 0;
	while (rc == 0) {
		struct pollfd p[3] = { { .fd = ch->fd, .events = POLLIN },
				       { .fd = status_open ? -1 : pidfd, .events = POLLIN },
				       { .fd = status_open ? status_rd : -1, .events = POLLIN } };
		if (poll(p, 3, -1) < 0) {
			if (errno != EINTR)
				rc = os_error_errno(&err, "poll");
			continue;
		}
		if (p[2].revents)
			status_open = relay_status(ch, status_rd, &line, &err, &rc);
		if (p[0].revents) { /* the supervisor never speaks after the spec: stop */
			if (splitchan_pump(ch, &err) == 0)
				os_error_set(&err, ECONNRESET, "the supervisor %s",
					     ch->eof ? "closed the control channel"
						     : "sent an unexpected frame");
			rc = -1;
		}
		if (rc == 0 && p[1].revents) {
			int code = reap_runner(runner);
			_cleanup_json_ json_t *j = json_pack("{s:i}", "code", code);
			if (splitchan_send_json(ch, SPLITCHAN_EXIT, j, &err) < 0)
				fprintf(stderr, "openshell-sandbox: reporting the exit: %s\n",
					err.msg);
			else
				linger(ch);
			return code;
		}
	}
	fprintf(stderr, "openshell-sandbox: relay: %s: stopping the agent\n", err.msg);
	kill(runner, SIGKILL); /* the agent dies with it (parent-death signal) */
	reap_runner(runner);
	return 128 + SIGKILL;
}

static noreturn void runner_main(struct splitchan *ch, const struct launch_spec *s, pid_t parent,
				 int status_wr)
{
	/* Nothing of the channel survives into the runner, let alone the agent. */
	close(ch->fd);
	splitchan_release(ch);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(SBX_EXIT_LAUNCH_FAILED);
	status_init(status_wr);
	_exit(sandbox_launch(s));
}

static int run_agent(struct splitchan *ch, const struct launch_spec *s, os_error *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return os_error_errno(err, "status pipe");
	pid_t parent = getpid();
	pid_t runner = fork();
	if (runner == 0) {
		close(pipefd[0]);
		runner_main(ch, s, parent, pipefd[1]);
	}
	close(pipefd[1]);
	_cleanup_close_ int status_rd = pipefd[0];
	if (runner < 0)
		return os_error_errno(err, "fork");
	_cleanup_close_ int pidfd = pidfd_open(runner, 0);
	if (pidfd < 0) {
		os_error_errno(err, "pidfd_open");
		kill(runner, SIGKILL);
		reap_runner(runner);
		return -1;
	}
	return relay(ch, runner, pidfd, status_rd);
}

/* The spec arrived: parse it as the local mode does; failures go back as status. */
static int step_launch(struct splitchan *ch, const char *text, size_t len)
{
	struct launch_spec spec;
	os_error err = { 0 };
	if (spec_parse(text, len, &spec, &err) < 0) {
		status_fail("spec", &err);
		_cleanup_json_ json_t *line =
			json_pack("{s:s,s:i,s:s}", "step", "spec", "errno",
				  err.code ? err.code : EINVAL, "message", err.msg);
		if (line)
			splitchan_send_json(ch, SPLITCHAN_STATUS, line, NULL);
		splitchan_send(ch, SPLITCHAN_LAUNCHED, "", 0, NULL);
		return SBX_EXIT_LAUNCH_FAILED;
	}
	int code = run_agent(ch, &spec, &err);
	if (code < 0) {
		status_fail("session", &err);
		code = SBX_EXIT_LAUNCH_FAILED;
	}
	spec_free(&spec);
	return code;
}

static int fail(const char *step, os_error *err)
{
	status_fail(step, err);
	return SBX_EXIT_LAUNCH_FAILED;
}

int remote_main(int argc, char **argv)
{
	struct remote_options o = { 0 };
	os_error err = { 0 };
	uint8_t key[SPLITCHAN_KEY_LEN];
	if (parse_args(argc, argv, &o) < 0)
		return usage("remote mode needs --supervisor and --trust, and nothing else");
	status_init(-1);
	if (sandbox_prelude(&err) < 0)
		return fail("spec", &err);
	if (splitchan_load_key(o.trust, key, &err) < 0)
		return fail("authenticate", &err);
	_cleanup_close_ int fd = -1;
	if (connect_supervisor(o.supervisor, &fd, &err) < 0) {
		secure_zero(key, sizeof(key));
		return fail("connect", &err);
	}
	struct splitchan ch;
	splitchan_init(&ch, fd);
	int rc = splitchan_handshake_launcher(&ch, key, HANDSHAKE_MS, &err);
	secure_zero(key, sizeof(key)); /* only the session keys are needed from here */
	_cleanup_free_ char *spec = NULL;
	size_t len = 0;
	int code;
	if (rc < 0)
		code = fail("authenticate", &err);
	else if (step_break_test(&ch, &err) < 0)
		code = fail("break-test", &err);
	else if (step_go(&ch, &spec, &len, &err) < 0)
		code = fail("go", &err);
	else
		code = step_launch(&ch, spec, len);
	splitchan_release(&ch);
	return code;
}
