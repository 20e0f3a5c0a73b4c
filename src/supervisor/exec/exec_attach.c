/* exec_attach.c - the agent's own stdin/stdout/stderr for a foreground
 * `sandbox create` (supervisor --attach; see exec.h). The agent starts on
 * pipes (or a terminal) whose other ends this supervisor holds until one
 * client attaches through the gateway; a relay then pumps them as exec
 * frames, copying the agent's output into the log as it goes. Nothing is
 * read before the client comes, so nothing is lost or reordered: a full
 * pipe holds the agent back. The run ends only once the client has the
 * exit status, or is gone, or never came (ATTACH_WAIT_MS). */
#include "exec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "log.h"

#define ATTACH_WAIT_MS 30000

enum attach_state { WAITING, ATTACHED, OVER };

struct exec_attach {
	struct loop *loop;
	bool tty;
	int child[3]; /* the agent's fds 0-2 until it started */
	int parent[3]; /* stdin's write end, stdout's and stderr's read ends (tty: master x2, -1) */
	int end_r, end_w; /* the agent's exit status (u32) for the relay */
	struct loop_timer *deadline;
	enum attach_state state;
	bool agent_exited;
	exec_attach_over_fn over;
	void *user;
};

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		/* A terminal's master sits in two slots: close it once. */
		for (size_t j = i + 1; j < n; j++)
			if (fds[j] == fds[i])
				fds[j] = -1;
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int exec_stdio_open(bool tty, uint16_t rows, uint16_t cols, int child[3], int parent[3],
		    os_error *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	if (tty) {
		int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
			os_error_errno(err, "allocating a terminal");
			if (m >= 0)
				close(m);
			return -1;
		}
		int s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (s < 0) {
			os_error_errno(err, "opening the terminal");
			close(m);
			return -1;
		}
		if (rows && cols)
			ioctl(m, TIOCSWINSZ, &(struct winsize){ .ws_row = rows, .ws_col = cols });
		child[0] = child[1] = child[2] = s;
		parent[0] = parent[1] = m;
		parent[2] = -1;
		return 0;
	}
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
		os_error_errno(err, "stdio pipes");
		int all[] = { in[0], in[1], out[0], out[1], er[0], er[1] };
		close_all(all, ARRAY_SIZE(all));
		return -1;
	}
	child[0] = in[0], child[1] = out[1], child[2] = er[1];
	parent[0] = in[1], parent[1] = out[0], parent[2] = er[0];
	return 0;
}

int exec_attach_new(struct loop *l, const struct exec_attach_opts *o, exec_attach_over_fn over,
		    void *user, struct exec_attach **out, os_error *err)
{
	struct exec_attach *a = calloc(1, sizeof(*a));
	if (!a)
		return os_error_set(err, ENOMEM, "foreground stdio");
	*a = (struct exec_attach){ .loop = l,
				   .tty = o->tty,
				   .child = { -1, -1, -1 },
				   .parent = { -1, -1, -1 },
				   .end_r = -1,
				   .end_w = -1,
				   .over = over,
				   .user = user };
	int end[2];
	if (exec_stdio_open(o->tty, o->rows, o->cols, a->child, a->parent, err) < 0 ||
	    pipe2(end, O_CLOEXEC) < 0) {
		if (!err->msg[0])
			os_error_errno(err, "exit status pipe");
		exec_attach_free(a);
		return os_error_prefix(err, "the agent's foreground stdio");
	}
	a->end_r = end[0];
	a->end_w = end[1];
	*out = a;
	return 0;
}

const int *exec_attach_agent_fds(const struct exec_attach *a)
{
	return a->child;
}

static void finish(struct exec_attach *a)
{
	a->state = OVER;
	loop_timer_remove(a->deadline);
	a->deadline = NULL;
	close_all(a->parent, 3);
	a->over(a->user, a->agent_exited);
}

static void on_deadline(struct loop *l, struct loop_timer *t, void *data)
{
	struct exec_attach *a = data;
	log_warn("no foreground client attached to the agent within %d s%s", ATTACH_WAIT_MS / 1000,
		 a->agent_exited ? "" : ": stopping it");
	finish(a);
}

int exec_attach_started(struct exec_attach *a, os_error *err)
{
	/* Only the agent holds its ends now: its stdout ends when it does. */
	close_all(a->child, 3);
	return loop_timer_add(a->loop, ATTACH_WAIT_MS, 0, on_deadline, a, &a->deadline, err);
}

const char *exec_attach_claim(struct exec_attach *a, struct exec_pump_args *args)
{
	if (a->state == ATTACHED)
		return "the agent's stdio is already attached to a client";
	if (a->state == OVER)
		return "the agent's foreground client came and went (or never came in time): "
		       "see `openshell sandbox logs`";
	loop_timer_remove(a->deadline);
	a->deadline = NULL;
	a->state = ATTACHED;
	args->agent = true;
	memcpy(args->agent_fds, a->parent, sizeof(args->agent_fds));
	args->end_fd = a->end_r;
	args->tty = a->tty;
	return NULL;
}

void exec_attach_handed(struct exec_attach *a, bool forked)
{
	/* The relay holds them now; our copy of stdin's write end would keep
	 * the agent from ever seeing EOF. */
	close_all(a->parent, 3);
	close_all(&a->end_r, 1);
	if (!forked)
		finish(a);
}

void exec_attach_relay_exited(struct exec_attach *a)
{
	if (a->state == ATTACHED)
		finish(a);
}

bool exec_attach_agent_exited(struct exec_attach *a, int code)
{
	uint32_t be = htonl((uint32_t)code);
	a->agent_exited = true;
	if (a->state == OVER)
		return false;
	/* 4 bytes into an empty pipe: never blocks, never torn. */
	if (fd_write_all(a->end_w, &be, sizeof be, NULL) < 0)
		log_warn("foreground stdio: handing the relay the exit status: %s",
			 strerror(errno));
	close_all(&a->end_w, 1);
	return true;
}

void exec_attach_free(struct exec_attach *a)
{
	if (!a)
		return;
	loop_timer_remove(a->deadline);
	close_all(a->child, 3);
	close_all(a->parent, 3);
	close_all(&a->end_r, 1);
	close_all(&a->end_w, 1);
	free(a);
}
