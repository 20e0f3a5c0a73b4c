/* cgroup.h - a sandbox's cgroups on this host: finds where the pids and
 * memory controllers are mounted (cgroup v1 or v2), creates
 * <root>/openshell/<sandbox-id> with the operator's limits, plus one in the
 * cgroup2 hierarchy whatever the limits (membership: caller identity finds
 * the sandbox's processes there, and BPF programs bind to it), and at
 * teardown kills whatever is left in them and removes them. It never touches
 * a cgroup outside openshell/<id> (besides enabling controllers in the v2
 * parents' cgroup.subtree_control). */
#ifndef OS_SUPERVISOR_CGROUP_H
#define OS_SUPERVISOR_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* v1 pids + v1 memory + the v2 membership directory at most. */
#define CGROUP_MAX_DIRS 3

enum cgroup_version { CGROUP_NONE = 0, CGROUP_V1, CGROUP_V2 };

/* Where one controller can be used: the mount point of its hierarchy. */
struct cgroup_mount {
	enum cgroup_version version;
	char root[PATH_MAX];
};

struct cgroup_layout {
	struct cgroup_mount pids, memory;
	/* The first cgroup2 mount, with controllers or not (the empty
	 * "unified" one of hybrid hosts serves membership and BPF). */
	struct cgroup_mount unified;
};

/* Reads the controllers a cgroup2 mount offers (its cgroup.controllers) into
 * buf[cap] as NUL-terminated text; < 0 when they cannot be read. */
typedef int (*cgroup_controllers_fn)(const char *mount, char *buf, size_t cap, void *user);

/* Pure: picks from mountinfo text (the /proc/self/mountinfo format) the
 * hierarchy of each controller: a v1 "cgroup" mount whose options name it,
 * else a "cgroup2" mount whose controllers (read through fn) list it. A v2
 * mount with no controllers (the "unified" one of hybrid hosts) is never
 * chosen for a controller (it is out->unified all the same). A controller
 * found nowhere is left CGROUP_NONE; only malformed text is an error. */
int cgroup_layout_parse(const char *text, size_t len, cgroup_controllers_fn fn, void *user,
			struct cgroup_layout *out, os_error *err);

/* The operator's limits; 0 means no limit. */
struct cgroup_limits {
	uint64_t max_processes;
	uint64_t max_memory_bytes;
};

/* The directories a sandbox was placed in (the launch spec's "cgroups"). */
struct sandbox_cgroups {
	size_t n;
	char dirs[CGROUP_MAX_DIRS][PATH_MAX];
	/* Index in dirs of the cgroup2 one (membership, BPF), or -1. */
	int v2;
};

/* Creates <root>/openshell/<sandbox_id> for each controller a limit needs
 * and writes the limits, and one in the cgroup2 hierarchy when a cgroup2
 * mount exists (the same directory when it also holds the limits; where a
 * process cannot move into it, none, without error: membership was not
 * asked for). An
 * empty leftover directory of a crashed run is replaced; one that still
 * holds processes is an error. On error nothing created is left behind. */
int cgroup_create(const char *sandbox_id, const struct cgroup_limits *lim,
		  struct sandbox_cgroups *out, os_error *err);

/* Kills every process still in the sandbox's cgroups (cgroup.kill on v2,
 * else SIGKILL through a pidfd per listed pid) until they are empty, then
 * removes them. Call once the agent is gone. Safe on an empty set; out->n is
 * 0 afterwards even on error (the error names what was left). */
int cgroup_destroy(struct sandbox_cgroups *cg, os_error *err);

#endif
