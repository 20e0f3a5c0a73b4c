/* attach.h - the foreground `sandbox create`: the agent's stdout on
 * stdout, its stderr on stderr, stdin forwarded (a terminal with -t), the
 * supervisor's messages on stderr only with -v, when the sandbox failed or
 * when they are warnings; Ctrl-C (SIGINT, SIGTERM, SIGHUP; with -t the
 * agent's own ^C) stops the sandbox, --rm deletes it when the agent has
 * ended. */
#ifndef OS_CLI_ATTACH_H
#define OS_CLI_ATTACH_H

#include <stdbool.h>

#include "cli.h"

struct attach_opts {
	bool verbose; /* -v: the supervisor's messages as they come */
	bool rm; /* --rm */
	bool tty; /* -t: the agent gets a terminal */
};

/* The create body's "attach" for a foreground run: the agent's own stdio,
 * with a terminal of this one's size and TERM when o->tty. */
json_t *attach_request(const struct attach_opts *o);

/* Runs NAME in the foreground until its agent ends: attached to its stdio
 * when row (the settled sandbox) is Ready and its spec holds attach, else
 * following its output in the log (a driver that cannot attach, or a
 * sandbox that already ended or failed). The agent's exit code, 130 after
 * Ctrl-C, CLI_FAIL on Error. */
int attach_foreground(struct cli *cli, const char *name, const json_t *row,
		      const struct attach_opts *o);

#endif
