/* local_disk.h - the local driver's on-disk layout and the scans of what its
 * supervisors wrote (log, audit log). Never follows a symlink out of a
 * sandbox directory when removing it. */
#ifndef OS_LOCAL_DISK_H
#define OS_LOCAL_DISK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define LOCAL_PATH_MAX 4096
/* Where the driver tells each supervisor to put its sandbox's run dir (the
 * CA certificates for the agent): LOCAL_RUN_DIR/ID, the supervisor's own
 * default too. A supervisor removes it when it exits; one killed with
 * SIGKILL cannot, so the driver does (local_run_dir_remove). */
#define LOCAL_RUN_DIR "/run/openshell"

/* STATE/sandboxes/ID[/name] into out. */
int local_path(const char *state_dir, const char *id, const char *name, char *out, os_error *err);
/* Creates STATE/sandboxes/ID/workspace (0700 for the sandbox dir). */
int local_dirs_create(const char *state_dir, const char *id, os_error *err);
/* rm -rf of STATE/sandboxes/ID; absent is fine. */
int local_dirs_remove(const char *state_dir, const char *id, os_error *err);
/* LOCAL_RUN_DIR/ID into out. */
int local_run_dir(const char *id, char *out, os_error *err);
/* rm -rf of LOCAL_RUN_DIR/ID; absent is fine. Only once the supervisor is gone. */
int local_run_dir_remove(const char *id, os_error *err);
/* Writes text to STATE/sandboxes/ID/name with mode 0600 (atomically). */
int local_file_put(const char *state_dir, const char *id, const char *name, const char *text,
		   os_error *err);
bool local_file_exists(const char *state_dir, const char *id, const char *name);
void local_file_remove(const char *state_dir, const char *id, const char *name);

/* True when the log holds, at or after offset mark, the supervisor's
 * "sandbox ID running" record. *last gets the message of its last error
 * record (malloc'd, may be NULL). */
bool local_log_running(const char *log_path, const char *id, uint64_t mark, char **last);
/* Counts {"event":"policy"} records of the audit log; *last (new ref or
 * NULL) is the latest of them. */
int64_t local_audit_policy(const char *audit_path, json_t **last);

/* Flags the supervisor's usage text advertises ("--policy", ...). */
struct local_caps {
	bool policy, credentials, inference, workdir, env, gateway, run_dir, host_gateway, attach;
};
void local_probe_caps(const char *supervisor, struct local_caps *caps);

#endif
