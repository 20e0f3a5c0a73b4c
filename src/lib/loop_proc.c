/* loop_proc.c - the event loop's process events: signals through a signalfd
 * per watched signal, child exits through a pidfd per child (waitid P_PIDFD).
 * It never reaps a child it was not asked to watch (no waitpid(-1)). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loop_internal.h"

/* ---- signals ---- */

int loop_signal_add(struct loop *l, int signo, loop_signal_fn cb, void *data,
		    struct loop_signal **out, os_error *err)
{
	if (!cb || signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
		return os_error_set(err, EINVAL, "cannot watch signal %d", signo);
	if (sigismember(&l->watched_signals, signo) == 1)
		return os_error_set(err, EEXIST, "signal %d is already watched", signo);
	struct loop_signal *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "allocating signal watch");
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, signo);
	int rc = pthread_sigmask(SIG_BLOCK, &set, &old);
	if (rc != 0) {
		free(s);
		errno = rc;
		return os_error_errno(err, "blocking signal %d", signo);
	}
	s->signo = signo;
	s->was_blocked = sigismember(&old, signo) == 1;
	s->cb = cb;
	s->data = data;
	s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sfd < 0)
		os_error_errno(err, "signalfd for signal %d", signo);
	if (s->sfd < 0 || loop_epoll_add(l, s->sfd, EPOLLIN, &s->src, err) < 0) {
		if (s->sfd >= 0)
			close(s->sfd);
		if (!s->was_blocked)
			pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		free(s);
		return -1;
	}
	sigaddset(&l->watched_signals, signo);
	loop_source_link(l, &s->src, LOOP_SRC_SIGNAL);
	if (out)
		*out = s;
	return 0;
}

void loop_signal_remove(struct loop_signal *s)
{
	if (!s || s->src.removed)
		return;
	struct loop *l = s->src.loop;
	struct signalfd_siginfo info;
	loop_epoll_del(l, s->sfd);
	/* discard instances already pending: unblocking would deliver them */
	while (read(s->sfd, &info, sizeof(info)) == (ssize_t)sizeof(info))
		;
	close(s->sfd);
	s->sfd = -1;
	if (!s->was_blocked) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, s->signo);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	sigdelset(&l->watched_signals, s->signo);
	loop_source_retire(&s->src);
}

int loop_signal_dispatch(struct loop_signal *s)
{
	int n = 0;
	struct signalfd_siginfo info;
	/* the callback may remove s (closing sfd): check before every read */
	while (!s->src.removed) {
		if (read(s->sfd, &info, sizeof(info)) != (ssize_t)sizeof(info))
			break;
		s->cb(s->src.loop, s, &info, s->data);
		n++;
	}
	return n;
}

int loop_sigmask_reset(os_error *err)
{
	sigset_t empty;
	sigemptyset(&empty);
	if (sigprocmask(SIG_SETMASK, &empty, NULL) < 0)
		return os_error_errno(err, "resetting the signal mask");
	return 0;
}

/* ---- children ---- */

int loop_child_add(struct loop *l, pid_t pid, loop_child_fn cb, void *data, struct loop_child **out,
		   os_error *err)
{
	if (!cb || pid <= 0)
		return os_error_set(err, EINVAL, "cannot watch child pid %d", (int)pid);
	struct loop_child *c = calloc(1, sizeof(*c));
	if (!c)
		return os_error_set(err, ENOMEM, "allocating child watch");
	/* pidfds are always close-on-exec */
	c->pidfd = pidfd_open(pid, 0);
	if (c->pidfd < 0) {
		os_error_errno(err, "pidfd_open(%d)", (int)pid);
		free(c);
		return -1;
	}
	c->pid = pid;
	c->cb = cb;
	c->data = data;
	if (loop_epoll_add(l, c->pidfd, EPOLLIN, &c->src, err) < 0) {
		close(c->pidfd);
		free(c);
		return -1;
	}
	loop_source_link(l, &c->src, LOOP_SRC_CHILD);
	if (out)
		*out = c;
	return 0;
}

void loop_child_remove(struct loop_child *c)
{
	if (!c || c->src.removed)
		return;
	loop_epoll_del(c->src.loop, c->pidfd);
	close(c->pidfd);
	c->pidfd = -1;
	loop_source_retire(&c->src);
}

int loop_child_dispatch(struct loop_child *c)
{
	siginfo_t info = { 0 };
	struct loop_exit ex = { .pid = c->pid };
	if (waitid(P_PIDFD, (id_t)c->pidfd, &info, WEXITED | WNOHANG) == 0) {
		if (info.si_pid == 0)
			return 0; /* not exited yet */
		ex.code = info.si_code;
		ex.status = info.si_status;
	} else if (errno == EINTR) {
		return 0; /* level-triggered: retried next iteration */
	}
	/* otherwise (ECHILD) someone else reaped it: report the status as lost */
	loop_child_remove(c); /* one-shot: c stays readable until the batch ends */
	c->cb(c->src.loop, c, &ex, c->data);
	return 1;
}
