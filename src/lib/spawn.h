/* spawn.h - the set-up a forked child does before it execs the launcher
 * (openshell-sandbox): default signal state, death with its parent, the
 * descriptors it is handed on fixed numbers and no others. Only for the
 * child side of fork(); it never returns on success. */
#ifndef OS_SPAWN_H
#define OS_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SPAWN_FDS_MAX 8

struct spawn_child {
	const char *path; /* executable */
	char *const *argv, *const *envp;
	const int *fds; /* fds[i] becomes fd first_fd + i; every fd above is closed */
	size_t n_fds; /* at most SPAWN_FDS_MAX */
	int first_fd;
	pid_t parent; /* getpid() before fork: the child gives up if it was reparented */
	bool new_session; /* setsid(): a terminal on the fds becomes controlling */
	int netns_fd; /* >= 0: setns(CLONE_NEWNET) before the fds are placed */
};

/* In the child: empties the signal mask, restores SIGPIPE, asks for SIGKILL
 * when the parent dies, then the optional steps, then the fds, then execve.
 * Returns only on failure, with errno set and *what naming the step. */
void spawn_child_exec(const struct spawn_child *c, const char **what);

#endif
