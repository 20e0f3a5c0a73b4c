/* proxy.h - the seam where the egress proxy plugs into the supervisor's main
 * sequence. The supervisor learns the listen address from the isolation
 * backend and hands it to a proxy implementation through these ops. */
#ifndef OS_SUPERVISOR_PROXY_H
#define OS_SUPERVISOR_PROXY_H

#include <sys/socket.h>

#include "error.h"

struct proxy_ops {
	const char *name;
	/* Starts listening on addr (before confirm: confirm connects to it). */
	int (*start)(const struct sockaddr *addr, socklen_t len, void **state, os_error *err);
	/* fd to poll for readability, and the handler to call when it is readable. */
	int (*fd)(void *state);
	int (*dispatch)(void *state, os_error *err);
	void (*stop)(void *state);
};

/* PLACEHOLDER until the real proxy (issue 6) lands: accepts a connection and
 * closes it at once. It forwards nothing, so it opens no path anywhere. */
extern const struct proxy_ops proxy_placeholder_ops;

#endif
