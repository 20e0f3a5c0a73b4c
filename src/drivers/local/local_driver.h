/* local_driver.h - the `local` compute driver: sandboxes on this host, each
 * an openshell-supervisor (inpod backend) detached from the gateway, with a
 * workspace kept across stop/start and removed on delete.
 *
 * State on disk, STATE_DIR/sandboxes/ID/ (0700): workspace/, supervisor.log,
 * audit.log, supervisor.pid, exit, stop_requested, and the 0600 files the
 * supervisor takes (policy.yaml, credentials.json, inference.json, token,
 * gateway.url).
 * The disk is the truth about processes: a gateway that restarts re-adopts
 * whatever supervisor.pid still names (pid + start time). A supervisor that
 * has exited but whose monitor has not yet written "exit" reports phase
 * "Stopping"; only once it is gone are its directories removed or reused.
 * Each supervisor's --run-dir is /run/openshell/ID (LOCAL_RUN_DIR); the
 * driver removes it once the supervisor is gone (one killed with SIGKILL
 * could not), on delete and when status finds it dead.
 *
 * Supervisor session: when the supervisor takes --gateway, it is started
 * with --gateway URL (the file gateway.url) --token-file STATE/.../token and
 * keeps a session with the gateway, which pushes policy updates on it;
 * status() then says "session_required": true (Ready needs a live session)
 * and configure() only rewrites policy.yaml for the next start.
 *
 * Fallback for supervisors without --gateway: configure() rewrites
 * policy.yaml and sends SIGHUP; the supervisor answers with an audit record
 * {"event":"policy","reason":"policy_loaded"|"policy_invalid"} that status()
 * reports as "policy_events" (count) and "policy_last". */
#ifndef OS_LOCAL_DRIVER_H
#define OS_LOCAL_DRIVER_H

#include "driver.h"

struct local_driver_config {
	const char *state_dir; /* required */
	const char *supervisor_binary; /* required, absolute */
	const char *sandbox_binary; /* NULL: the supervisor's own default */
	unsigned proxy_port; /* 0: 3128 */
	unsigned stop_grace_s; /* SIGTERM -> SIGKILL; 0: 10 */
	/* Operator settings handed to every supervisor's proxy (NULL: unset). */
	const char *hosts_file, *dns_servers, *upstream_ca_file;
	/* Operator limits on each agent (supervisor rlimits); 0 = none. */
	long long max_processes, max_memory_mb;
	const char *sandbox_uid_range; /* "FIRST-LAST" (local_uid.h), NULL: none */
	/* The proxy's limits per sandbox (--proxy-memory-mb,
	 * --max-upstream-connections); 0 = the supervisor's default. */
	long long proxy_memory_mb, max_upstream_connections;
	const char *transparent_ports; /* --transparent-ports, NULL: the default */
};

/* At most as many as the supervisor takes (BACKEND_TRANSPARENT_PORTS_MAX). */
#define LOCAL_TRANSPARENT_PORTS_MAX 16

int local_driver_new(const struct local_driver_config *cfg, struct driver **out, os_error *err);

/* Validates a sandbox spec for this driver (exposed for unit tests):
 * {"command": [..], "env": {..}, "labels": {..}, "runtime_class_name"}. */
int local_spec_validate(const json_t *spec, os_error *err);

#endif
