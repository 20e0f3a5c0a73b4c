/* supervise.c - signal forwarding and reaping (see supervise.h).
 * Synchronous (sigwaitinfo) rather than handlers: no async-signal-safety
 * traps, and a signal arriving before the loop starts stays pending. */
#include "supervise.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

static const int forwarded[] = { SIGHUP,  SIGINT,   SIGQUIT, SIGTERM, SIGUSR1,
				 SIGUSR2, SIGWINCH, SIGALRM, SIGCONT };

static void watched_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(set, forwarded[i]);
}

int supervise_prepare(sigset_t *old_mask, os_error *err)
{
	sigset_t set;
	watched_set(&set);
	if (signal(SIGCHLD, SIG_DFL) == SIG_ERR)
		return os_error_errno(err, "resetting SIGCHLD");
	if (sigprocmask(SIG_BLOCK, &set, old_mask) < 0)
		return os_error_errno(err, "blocking signals");
	return 0;
}

static int status_to_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 125;
}

/* Reaps what has exited; returns the watched child's code or -1 if alive. */
static int reap(pid_t child)
{
	int code = -1, st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		if (p == child)
			code = status_to_code(st);
	return code;
}

int supervise_child(pid_t child)
{
	sigset_t set;
	watched_set(&set);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig < 0) {
			if (errno == EINTR)
				continue;
			/* Cannot wait for signals: fall back to a plain blocking wait. */
			int st;
			while (waitpid(child, &st, 0) < 0)
				if (errno != EINTR)
					return 125;
			return status_to_code(st);
		}
		if (sig != SIGCHLD) {
			kill(child, sig);
			continue;
		}
		int code = reap(child);
		if (code >= 0)
			return code;
	}
}
