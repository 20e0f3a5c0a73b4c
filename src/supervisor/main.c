/* main.c - openshell-supervisor: parse the operator's flags, run the sandbox
 * (run.h), print what failed. Every line it writes is a log record (log.h:
 * JSON lines unless stderr is a terminal), so a supervisor.log holds one
 * stream; the usage text is a record too there. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "audit_sink.h"
#include "log.h"
#include "options.h"
#include "run.h"
#include "trace.h"

static void usage(void)
{
	if (log_is_json())
		log_info("%s", sup_options_usage());
	else
		fputs(sup_options_usage(), stderr);
}

int main(int argc, char **argv)
{
	struct sup_options o;
	os_error err = { 0 };
	int audit_fd = STDERR_FILENO, code = 1;
	if (argc == 2 && !strcmp(argv[1], "--version"))
		return printf("openshell-supervisor %s\n", OPENSHELL_VERSION) < 0;
	signal(SIGPIPE, SIG_IGN);
	trace_init("supervisor");
	trace_mark("main");
	log_init("openshell-supervisor", LOG_LVL_INFO, LOG_FMT_AUTO, STDERR_FILENO);
	if (sup_options_parse(argc, argv, &o, &err) < 0) {
		log_error("%s", err.msg);
		usage();
		return 2;
	}
	if (audit_sink_open(o.audit_log, &audit_fd, &err) < 0 ||
	    sup_run(&o, audit_fd, &code, &err) < 0) {
		log_error("%s", err.msg);
		return 1;
	}
	return code;
}
