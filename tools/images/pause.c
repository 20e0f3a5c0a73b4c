/* pause.c - the pod sandbox process of openshell/pause: PID 1 of a Pod's
 * namespaces, it sleeps until SIGTERM or SIGINT and reaps every orphan
 * re-parented to it. It must never exit on anything else, and links static
 * so its image holds nothing but this binary. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static void reap_all(void)
{
	/* One SIGCHLD may stand for many exits: collect until none is left. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	/* Blocked signals are queued even for PID 1 (the kernel drops only
	 * signals whose disposition is the default and that are not blocked),
	 * so sigwaitinfo sees them without handlers. */
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
		fprintf(stderr, "pause: blocking signals: %s\n", strerror(errno));
		return 1;
	}
	for (;;) {
		int sig = sigwaitinfo(&set, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			return 0;
		if (sig == SIGCHLD)
			reap_all();
		else if (sig < 0 && errno != EINTR) {
			fprintf(stderr, "pause: waiting for signals: %s\n", strerror(errno));
			return 1;
		}
	}
}
