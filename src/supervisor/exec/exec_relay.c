/* exec_relay.c - the supervisor's exec service (see exec.h): turns an exec
 * request from the session into a relay process, and keeps the proxy's
 * identity roots in step with the relays alive. Runs on the supervisor's
 * loop; only the forked relay ever blocks. */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "egress.h"
#include "execframe.h"
#include "fdutil.h"
#include "json.h"
#include "log.h"
#include "parse.h"
#include "procfs.h"
#include "session_tls.h"

#define RELAYS_MAX 32
#define HANDSHAKE_MS 10000
#define HEAD_MAX 16384

struct relay {
	struct exec_service *x;
	pid_t pid;
	struct loop_child *watch;
	bool agent; /* it pumps the agent's own stdio (exec_attach.c) */
};

struct exec_service {
	struct exec_host h;
	json_t *spec; /* the agent's launch spec */
	struct gw_session *session;
	struct relay *relays[RELAYS_MAX];
	struct exec_attach *attach; /* the agent's stdio, or NULL (not ours) */
};

int exec_service_new(const struct exec_host *h, struct exec_service **out, os_error *err)
{
	struct exec_service *x = calloc(1, sizeof(*x));
	if (!x || !(x->spec = json_deep_copy(h->agent_spec))) {
		free(x);
		return os_error_set(err, ENOMEM, "exec service");
	}
	x->h = *h;
	x->h.agent_spec = NULL;
	x->h.unsupported = h->unsupported; /* a static string */
	*out = x;
	return 0;
}

void exec_service_set_session(struct exec_service *x, struct gw_session *s)
{
	x->session = s;
}

void exec_service_set_attach(struct exec_service *x, struct exec_attach *a)
{
	x->attach = a;
}

/* The agent's spec joined instead of created: what creates a sandbox
 * goes; what confines one stays (user, env, filesystem, Landlock mode,
 * rlimits, cgroups, cwd). */
static json_t *joining_spec(const json_t *agent, int join_fd, os_error *err)
{
	if (!json_is_true(json_object_get(agent, "new_namespaces"))) {
		os_error_set(
			err, ENOTSUP,
			"exec needs a sandbox with its own namespaces (the local host layout)");
		return NULL;
	}
	json_t *s = json_deep_copy(agent);
	if (!s) {
		os_error_set(err, ENOMEM, "exec spec");
		return NULL;
	}
	static const char *const creating[] = { "new_namespaces", "netns", "hostname",
						"workspace" };
	for (size_t i = 0; i < ARRAY_SIZE(creating); i++)
		json_object_del(s, creating[i]);
	json_object_set_new(s, "join", json_integer(join_fd));
	return s;
}

json_t *exec_spec_for_transfer(const json_t *agent, bool upload, const char *path, int join_fd,
			       os_error *err)
{
	json_t *s = joining_spec(agent, join_fd, err);
	if (!s)
		return NULL;
	json_object_del(s, "argv");
	json_object_del(s, "tty");
	json_object_set_new(
		s, "transfer",
		json_pack("{s:s, s:s}", "op", upload ? "upload" : "download", "path", path));
	return s;
}

json_t *exec_spec_from_agent(const json_t *agent, const json_t *argv, bool tty, const char *term,
			     int join_fd, os_error *err)
{
	json_t *s = joining_spec(agent, join_fd, err);
	if (!s)
		return NULL;
	json_object_set_new(s, "argv", json_deep_copy(argv));
	json_object_set_new(s, "tty", json_boolean(tty));
	/* The client's terminal, so a shell and full-screen programs draw for
	 * it; everything else in env stays the agent's. */
	json_t *env = json_object_get(s, "env");
	if (term && tty && json_is_object(env))
		json_object_set_new(env, "TERM", json_string(term));
	else if (term && tty)
		json_object_set_new(s, "env", json_pack("{s:s}", "TERM", term));
	return s;
}

/* The sandbox's pid 1 is the agent launcher's only child. A pidfd, then a
 * check that its parent is still the launcher, so a recycled pid is never
 * joined. */
static int sandbox_init_pidfd(pid_t launcher, os_error *err)
{
	char path[96], text[64];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)launcher, (int)launcher);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
	if (n <= 0)
		return os_error_set(err, ESRCH, "the sandbox is not running (no pid 1 under %d)",
				    (int)launcher);
	text[n] = '\0';
	uint64_t init = 0;
	if (parse_u64(text, strspn(text, "0123456789"), 1, INT32_MAX, &init, err) < 0)
		return os_error_prefix(err, "the sandbox's pid 1 under %d", (int)launcher);
	int pfd = pidfd_open((pid_t)init, 0);
	if (pfd < 0)
		return os_error_errno(err, "pidfd of the sandbox's pid 1");
	struct procfs_stat st;
	if (procfs_stat_read((pid_t)init, &st, NULL) < 0 || st.ppid != launcher) {
		close(pfd);
		return os_error_set(err, ESRCH, "the sandbox's pid 1 went away");
	}
	return pfd;
}

static int wait_fd(int fd, short ev, const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long ms = (deadline->tv_sec - now.tv_sec) * 1000 +
		  (deadline->tv_nsec - now.tv_nsec) / 1000000;
	struct pollfd p = { .fd = fd, .events = ev };
	return ms > 0 && poll(&p, 1, (int)ms) == 1 ? 0 : -1;
}

/* The TLS handshake under the deadline; a failure is logged with its
 * reason (a wrong CA, a certificate for another host). */
static int handshake(struct exec_sock *sock, SSL_CTX *tls, const char *name,
		     const struct timespec *deadline)
{
	os_error err = { 0 };
	if (!(sock->ssl = session_tls_new(tls, sock->fd, name, &err)))
		goto fail;
	for (;;) {
		unsigned want = 0;
		int r = session_tls_handshake(sock->ssl, name, &want, &err);
		if (r < 0)
			goto fail;
		if (r == 0)
			return 0;
		if (wait_fd(sock->fd, want == LOOP_IN ? POLLIN : POLLOUT, deadline) < 0) {
			os_error_set(&err, ETIMEDOUT, "TLS handshake with the gateway %s timed out",
				     name);
			goto fail;
		}
	}
fail:
	log_error("exec: %s", err.msg);
	return -1;
}

/* In the relay: connect (TLS for an https:// gateway), send the attach
 * request, read up to the end of the 101 head. Bytes after the head are
 * early frames for the pump (or still inside OpenSSL: the pump looks). */
static int dial_back(const struct gw_endpoint *ep, SSL_CTX *tls, const struct buf *req,
		     struct buf *rest, struct exec_sock *sock)
{
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += HANDSHAKE_MS / 1000;
	*sock = (struct exec_sock){ .fd = -1 };
	sock->fd = socket(ep->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (sock->fd < 0)
		return -1;
	if (connect(sock->fd, (const struct sockaddr *)&ep->addr, ep->addr_len) < 0 &&
	    errno != EINPROGRESS)
		goto fail;
	if (wait_fd(sock->fd, POLLOUT, &deadline) < 0 ||
	    (tls && handshake(sock, tls, ep->name, &deadline) < 0) ||
	    exec_sock_write_all(sock, req->data, req->len) < 0)
		goto fail;
	char chunk[4096];
	for (;;) {
		if (!exec_sock_pending(sock) && wait_fd(sock->fd, POLLIN, &deadline) < 0)
			goto fail;
		ssize_t n = exec_sock_read(sock, chunk, sizeof chunk);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0 || buf_append(rest, chunk, (size_t)n, NULL) < 0)
			goto fail;
		const char *end = memmem(rest->data, rest->len, "\r\n\r\n", 4);
		if (!end)
			continue;
		if (rest->len < 12 || strncmp(rest->data, "HTTP/1.1 101", 12) != 0) {
			log_error("exec: the gateway refused: %.200s", rest->data);
			goto fail;
		}
		buf_consume(rest, (size_t)(end + 4 - rest->data));
		return fd_set_nonblock(sock->fd, false, NULL) < 0 ? -1 : 0;
	}
fail:
	SSL_free(sock->ssl);
	close(sock->fd);
	*sock = (struct exec_sock){ .fd = -1 };
	return -1;
}

__attribute__((noreturn)) static void relay_main(const struct gw_endpoint *ep, SSL_CTX *tls,
						 const struct buf *req, struct exec_pump_args *a,
						 const char *error)
{
	os_error err = { 0 };
	/* Forked from the supervisor: shed its descriptors (proxy sockets, the
	 * audit log, the session, the event loop) before anything else; only
	 * the sandbox's pidfd goes on, or the agent's stdio (stdio stays: the
	 * supervisor's log). The TLS context is memory (the CA was read at
	 * start), not an fd. */
	int keep[5];
	size_t n_keep = 0;
	const int mine[] = { a->join_pidfd, a->agent_fds[0], a->agent_fds[1], a->agent_fds[2],
			     a->end_fd };
	for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
		if (mine[i] >= 0)
			keep[n_keep++] = mine[i];
	if (fd_close_from(3, keep, n_keep, &err) < 0 || loop_sigmask_reset(&err) < 0 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(125);
	struct buf rest;
	buf_init(&rest, HEAD_MAX + EXECFRAME_MAX_PAYLOAD);
	if (dial_back(ep, tls, req, &rest, &a->sock) < 0)
		_exit(125);
	if (error) {
		struct buf out;
		buf_init(&out, 8192);
		execframe_put(&out, EXECFRAME_ERROR, error, strlen(error), NULL);
		exec_sock_write_all(&a->sock, out.data, out.len);
		exec_sock_end(&a->sock);
		_exit(125);
	}
	a->early = (const uint8_t *)rest.data;
	a->early_len = rest.len;
	if (a->forward_port)
		exec_forward_main(a);
	exec_pump_main(a);
}

static void relay_exited(struct loop *l, struct loop_child *c, const struct loop_exit *exit,
			 void *data)
{
	struct relay *r = data;
	struct exec_service *x = r->x;
	if (!r->agent)
		egress_remove_entry(x->h.egress, r->pid);
	for (size_t i = 0; i < RELAYS_MAX; i++)
		if (x->relays[i] == r)
			x->relays[i] = NULL;
	bool agent = r->agent;
	free(r);
	if (agent && x->attach)
		exec_attach_relay_exited(x->attach); /* may end the run: last */
}

/* What the launcher runs: the command, or a transfer. A forwarded
 * connection starts no launcher: its relay only needs something to say the
 * sandbox can be joined (the agent's spec says it has namespaces). */
static json_t *spec_for(const struct exec_service *x, const struct session_msg *m, os_error *err)
{
	if (m->type == SESSION_MSG_TRANSFER)
		return exec_spec_for_transfer(x->spec, m->transfer_upload, m->transfer_path,
					      EXEC_JOIN_FD, err);
	if (m->type == SESSION_MSG_FORWARD)
		return joining_spec(x->spec, EXEC_JOIN_FD, err);
	return exec_spec_from_agent(x->spec, m->exec_argv, m->exec_tty, m->exec_term, EXEC_JOIN_FD,
				    err);
}

void exec_service_request(void *user, const struct session_msg *m)
{
	struct exec_service *x = user;
	os_error err = { 0 };
	size_t slot = RELAYS_MAX;
	for (size_t i = 0; i < RELAYS_MAX && slot == RELAYS_MAX; i++)
		if (!x->relays[i])
			slot = i;
	struct buf req;
	buf_init(&req, 16384);
	if (!x->session || gw_session_exec_request(x->session, m->exec_id, &req, &err) < 0) {
		log_warn("exec %s: %s", m->exec_id, err.msg[0] ? err.msg : "no session");
		buf_free(&req);
		return;
	}
	/* Everything that can fail is tried here, so the relay can at least
	 * tell the client why. */
	_cleanup_close_ int join = -1;
	_cleanup_free_ char *spec_text = NULL;
	const char *error = NULL;
	char why[OS_ERROR_MSG_MAX];
	_cleanup_json_ json_t *spec = NULL;
	struct exec_pump_args a = { .join_pidfd = -1,
				    .agent_fds = { -1, -1, -1 },
				    .end_fd = -1,
				    .launcher = x->h.launcher,
				    .tty = m->exec_tty,
				    .rows = m->exec_rows,
				    .cols = m->exec_cols,
				    .forward_port =
					    m->type == SESSION_MSG_FORWARD ? m->forward_port : 0 };
	bool agent = m->type == SESSION_MSG_EXEC && m->exec_agent;
	if (agent) {
		error = !x->attach ? "this sandbox's agent runs detached: its output is in "
				     "`openshell sandbox logs`"
			: slot == RELAYS_MAX ? "too many exec sessions at once"
					     : exec_attach_claim(x->attach, &a);
		agent = !error; /* a refused attach is an ordinary relay that says why */
	} else if (x->h.unsupported) {
		os_error_set(&err, ENOTSUP, "%s", x->h.unsupported);
	} else if (slot == RELAYS_MAX) {
		os_error_set(&err, EBUSY, "too many exec sessions at once (max %d)", RELAYS_MAX);
	} else if ((join = sandbox_init_pidfd(x->h.agent_launcher, &err)) >= 0 &&
		   (spec = spec_for(x, m, &err)) != NULL) {
		spec_text = json_to_string(spec);
	}
	if (!m->exec_agent && !spec_text) {
		snprintf(why, sizeof why, "%s", err.msg[0] ? err.msg : "out of memory");
		error = why;
	}
	a.join_pidfd = join;
	a.spec = spec_text;
	SSL_CTX *tls = NULL;
	const struct gw_endpoint *ep = gw_session_endpoint(x->session, &tls);
	pid_t pid = fork();
	if (pid == 0)
		relay_main(ep, tls, &req, &a, error);
	buf_free(&req);
	if (agent)
		exec_attach_handed(x->attach, pid > 0);
	if (pid < 0) {
		log_warn("exec %s: fork: %s", m->exec_id, strerror(errno));
		return;
	}
	struct relay *r = calloc(1, sizeof(*r));
	if (!r || loop_child_add(x->h.loop, pid, relay_exited, r, &r->watch, &err) < 0) {
		kill(pid, SIGKILL);
		free(r);
		log_warn("exec %s: cannot watch the relay: %s", m->exec_id, err.msg);
		if (agent)
			exec_attach_relay_exited(x->attach);
		return;
	}
	r->x = x;
	r->pid = pid;
	r->agent = agent;
	/* A relay refused for want of a slot only says so and exits: it is
	 * watched, not tabled (the table has no room for it; writing it at
	 * RELAYS_MAX was one past the end). */
	if (slot < RELAYS_MAX)
		x->relays[slot] = r;
	/* Only a command makes connections of its own for the proxy to judge;
	 * a transfer, a forward or the agent's own stdio never goes through it. */
	if (!error && !agent && m->type == SESSION_MSG_EXEC &&
	    egress_add_entry(x->h.egress, pid, &err) < 0)
		log_warn("exec %s: the command's connections will be unidentified: %s", m->exec_id,
			 err.msg);
	log_info("%s %s: relay %d started%s%s", m->exec_agent ? "attach" : "exec", m->exec_id,
		 (int)pid, error ? ": " : "", error ? error : "");
}

void exec_service_free(struct exec_service *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < RELAYS_MAX; i++)
		if (x->relays[i]) {
			loop_child_remove(x->relays[i]->watch);
			kill(x->relays[i]->pid, SIGKILL);
			free(x->relays[i]);
		}
	json_decref(x->spec);
	free(x);
}
