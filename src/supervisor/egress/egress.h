/* egress.h - the supervisor's policy authority at run time: it owns the
 * egress proxy (on the address the isolation backend chose), the policy
 * generations, the per-sandbox CA, credentials and inference routes, and it
 * translates the policy's static part into the agent's launch spec. Nothing
 * here is backend-specific. */
#ifndef OS_SUPERVISOR_EGRESS_H
#define OS_SUPERVISOR_EGRESS_H

#include <jansson.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "error.h"
#include "loop.h"

struct egress_options {
	const char *sandbox_id;
	const char *policy_path; /* required */
	const char *credentials_path; /* optional, mode 0600 */
	const char *inference_path; /* optional, mode 0600 */
	const char *hosts_file; /* optional name pins for the resolver */
	const char *dns_servers; /* optional "IP[:PORT],..." */
	/* --host-gateway: what host.openshell.internal and the other host
	 * aliases resolve to, an IP or `proxy` (the proxy's address: with the
	 * inpod backend the host side of the sandbox's veth); NULL: resolved
	 * like any other name. */
	const char *host_gateway;
	const char *upstream_ca; /* optional extra CA for upstream TLS */
	const char *audit_log; /* NULL = stderr */
	const char *run_dir; /* CA files for the agent go here (0755 dir) */
	const char *workdir; /* the agent's /sandbox, or NULL */
	bool endpoint_only; /* --binary-identity endpoint-only (operator): split pods */
	bool allow_sni_mismatch; /* --tunnel-sni allow-mismatch (operator) */
	unsigned proxy_memory_mb; /* --proxy-memory-mb, 0 = the proxy's default */
	unsigned max_upstreams; /* --max-upstream-connections, 0 = the default */
};

struct egress;

/* Loads everything, binds and starts the proxy. Before confirm: no agent yet. */
int egress_start(struct loop *l, const struct sockaddr *addr, socklen_t len,
		 const struct egress_options *o, struct egress **out, os_error *err);

#define EGRESS_TRANSPARENT_PORTS_MAX 16

/* Serves the backend's transparent listeners (docs/network.md): tcp_fd
 * (redirected direct connections to ports[0..n_ports)), dns_fd and
 * dns_tcp_fd (redirected DNS queries over UDP and TCP: names no policy
 * allows on those ports are not looked up), -1 for none; all are taken,
 * also on failure. */
int egress_serve_transparent(struct egress *e, int tcp_fd, int dns_fd, int dns_tcp_fd,
			     const uint16_t *ports, size_t n_ports, os_error *err);

/* Fills the launch spec from the policy: filesystem lists, user/group (when
 * the policy sets them), Landlock mode, and the environment (proxy, CA
 * bundle variables, credential placeholders). Keys already present win for
 * user/group only. */
int egress_fill_spec(struct egress *e, json_t *spec, const char *proxy_url, os_error *err);

/* Binds caller identity to the agent's entry process; cgroup_dir (NULL:
 * none) is the sandbox's cgroup, whose members alone are then searched for
 * the holders of a proxied socket. */
int egress_bind_agent(struct egress *e, pid_t entry_pid, const char *cgroup_dir, os_error *err);
/* Another entry process (an exec relay): its descendants are callers of
 * this sandbox too, judged by the same policy. */
int egress_add_entry(struct egress *e, pid_t pid, os_error *err);
void egress_remove_entry(struct egress *e, pid_t pid);

/* Re-reads the policy file: valid -> new generation (audit "policy_loaded"),
 * invalid -> the running policy stays (audit "policy_invalid"). */
int egress_reload(struct egress *e, os_error *err);

/* Same rules and audit records for a policy pushed by the gateway: yaml
 * (len bytes) is validated and swapped in, or refused with the running
 * policy kept. revision (0 = none) goes into the records' detail. */
int egress_apply_policy_text(struct egress *e, const char *yaml, size_t len, uint64_t revision,
			     os_error *err);

void egress_free(struct egress *e);

#endif
