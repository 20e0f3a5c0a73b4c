/* netns.h - network namespaces held by fd: create one, briefly enter one to
 * open sockets or sysctls inside it. Never leaves the calling thread in the
 * wrong namespace: a failed return to the original namespace aborts. */
#ifndef OS_SUPERVISOR_NETNS_H
#define OS_SUPERVISOR_NETNS_H

#include <sys/types.h>

#include "error.h"

/* Creates a fresh network namespace and returns an O_CLOEXEC fd to it in
 * *out_fd; the calling thread stays in (or returns to) its own namespace. */
int netns_create(int *out_fd, os_error *err);

/* Switches the calling thread into the namespace ns_fd; *saved_fd receives
 * an fd to the previous namespace for netns_leave(). */
int netns_enter(int ns_fd, int *saved_fd, os_error *err);

/* Returns to the namespace saved by netns_enter() and closes saved_fd.
 * Aborts the process if that is impossible: continuing in the sandbox's
 * namespace would silently misplace every later socket. */
void netns_leave(int saved_fd);

/* Inode number identifying the namespace behind ns_fd (for /proc matching). */
int netns_inode(int ns_fd, ino_t *out, os_error *err);

#endif
