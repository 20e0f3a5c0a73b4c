/* landlock.h - step 6: the filesystem policy as a Landlock domain.
 * Paths are opened (O_PATH) before the privilege drop; the rule set uses the
 * highest ABI the kernel offers. hard_requirement never degrades silently. */
#ifndef OS_SANDBOX_LANDLOCK_H
#define OS_SANDBOX_LANDLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "error.h"
#include "spec.h"

struct landlock_rule {
	int fd; /* O_PATH, close-on-exec */
	uint64_t access;
};

struct landlock_plan {
	int abi; /* 0: Landlock not applied (best_effort only) */
	bool hard;
	struct landlock_rule rules[SPEC_MAX_PATHS];
	size_t n;
};

/* Probes the ABI and opens every path. best_effort writes a warning status
 * line for each thing it skips; hard_requirement fails instead. */
int landlock_prepare(const struct launch_spec *s, struct landlock_plan *plan, os_error *err);
/* Creates the ruleset, adds the rules, restricts this thread; closes the fds. */
int landlock_apply(struct landlock_plan *plan, os_error *err);

#endif
