/* spawn.c - pre-exec set-up of a launcher child (see spawn.h). Runs between
 * fork and exec: async-signal-safe calls only, no allocation, no stdio. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fdutil.h"

/* Copies the sources above every target first, so no dup2 clobbers a
 * source that is still to be placed; dup2 clears close-on-exec. */
static int place_fds(const struct spawn_child *c, const char **what)
{
	int tmp[SPAWN_FDS_MAX];
	int above = c->first_fd + (int)c->n_fds;
	for (size_t i = 0; i < c->n_fds; i++)
		if ((tmp[i] = fcntl(c->fds[i], F_DUPFD_CLOEXEC, above)) < 0)
			return *what = "dup", -1;
	for (size_t i = 0; i < c->n_fds; i++)
		if (dup2(tmp[i], c->first_fd + (int)i) < 0)
			return *what = "dup2", -1;
	if (fd_close_from(c->first_fd + (int)c->n_fds, NULL, 0, NULL) < 0)
		return *what = "closing inherited fds", -1;
	return 0;
}

/* An ignored disposition survives exec: every signal back to its default,
 * the realtime ones glibc keeps for itself (32, 33) included, which only
 * the raw syscall reaches. Handlers are reset by exec anyway. */
static void reset_dispositions(void)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} dfl = { 0 }; /* SIG_DFL is 0: the kernel's struct sigaction */
	for (int sig = 1; sig <= 64; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
}

void spawn_child_exec(const struct spawn_child *c, const char **what)
{
	sigset_t none;
	sigemptyset(&none);
	if (c->n_fds > SPAWN_FDS_MAX) {
		errno = EINVAL;
		*what = "too many fds for the launcher";
		return;
	}
	sigprocmask(SIG_SETMASK, &none, NULL); /* the supervisor blocks signals for signalfd */
	reset_dispositions();
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
		*what = "parent death signal";
		return;
	}
	if (c->parent > 0 && getppid() != c->parent) { /* it died before prctl */
		errno = ESRCH;
		*what = "parent death signal";
		return;
	}
	if (c->new_session && setsid() < 0) {
		*what = "new session";
		return;
	}
	if (c->netns_fd >= 0 && setns(c->netns_fd, CLONE_NEWNET) < 0) {
		*what = "joining the sandbox network namespace";
		return;
	}
	if (place_fds(c, what) < 0)
		return;
	execve(c->path, c->argv, c->envp);
	*what = c->path;
}
