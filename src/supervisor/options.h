/* options.h - the supervisor's command line: the operator's flags parsed
 * into one struct (docs/supervisor.md). Owns the flag table and the usage
 * text; never opens a file or touches the system. */
#ifndef OS_SUPERVISOR_OPTIONS_H
#define OS_SUPERVISOR_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "egress.h"
#include "error.h"

struct sup_options {
	struct backend_descriptor desc;
	struct egress_options egress;
	const char *audit_log; /* NULL: audit records on stderr */
	const char *user, *group;
	/* The operator's uid (= gid) for this sandbox's agent, 0 = none: it wins
	 * over the policy's run_as_user/run_as_group (sandboxes apart by DAC). */
	uint64_t sandbox_uid;
	char **argv; /* the agent command */
	uint64_t max_processes, max_memory_mb; /* operator limits, 0 = none */
	const char *gateway_url, *token_file; /* session with the gateway, or NULL */
	const char *gateway_ca; /* https: CA that signed the gateway's certificate */
	bool transparent_set; /* --transparent-ports given (else 80,443) */
	/* --attach: a foreground create. The agent's stdio are pipes (or, with
	 * tty, a terminal of rows x cols whose TERM is term) that one client
	 * attaches to through the gateway (exec/exec.h, exec_attach.c). */
	struct {
		bool on, tty;
		uint16_t rows, cols;
		const char *term;
	} attach;
	char run_dir_buf[PATH_MAX];
	char launcher_buf[PATH_MAX];
};

/* Fills *o from argv (values point into argv); < 0 on a bad or missing flag. */
int sup_options_parse(int argc, char **argv, struct sup_options *o, os_error *err);
/* The usage text, several lines ending with a newline. */
const char *sup_options_usage(void);

#endif
