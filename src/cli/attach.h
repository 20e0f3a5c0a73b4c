/* attach.h - the foreground `sandbox create`: the agent's output on stdout,
 * the supervisor's messages on stderr only with -v, when the sandbox failed
 * or when they are warnings, Ctrl-C (SIGINT, SIGTERM, SIGHUP) stops the sandbox, --rm deletes
 * it when the agent has ended. */
#ifndef OS_CLI_ATTACH_H
#define OS_CLI_ATTACH_H

#include <stdbool.h>

#include "cli.h"

struct attach_opts {
	bool verbose; /* -v: the supervisor's messages as they come */
	bool rm; /* --rm */
};

/* Follows NAME's output until its agent ends (or shows it, when it already
 * has); the agent's exit code, 130 after Ctrl-C, CLI_FAIL on Error. */
int attach_foreground(struct cli *cli, const char *name, const struct attach_opts *o);

#endif
