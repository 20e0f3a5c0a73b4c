/* backend.h - the isolation backend contract. A backend realises the
 * boundary; the supervisor stays the policy authority. Lifecycle (typestate):
 *   attach(descriptor, context) -> bound -> confirm -> ready -> start_agent -> running
 * Each step consumes the previous handle; a failed step poisons the instance
 * (only teardown remains), so nothing advances past a failure and there is
 * no fallback to a weaker boundary. teardown is safe at any point, idempotent. */
#ifndef OS_SUPERVISOR_BACKEND_H
#define OS_SUPERVISOR_BACKEND_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "error.h"

#define BACKEND_SANDBOX_ID_MAX 63
#define BACKEND_TRANSPARENT_PORTS_MAX 16

struct cgroup_limits;
struct sandbox_cgroups;

/* What the operator configured (supervisor flags/config); never the workload. */
struct backend_descriptor {
	const char *backend; /* registry name, e.g. "inpod" */
	const char *sandbox_id; /* [A-Za-z0-9._-], 1..63 bytes */
	uint16_t proxy_port; /* TCP port the proxy listens on at the backend's endpoint */
	const char *launcher; /* path of openshell-sandbox */
	/* split backend only (docs/split-backend.md); zero/NULL elsewhere. */
	const char *split_mode; /* "local" (default: namespace + veth + fence) or "pod" */
	uint16_t control_port; /* where the authenticated launcher dials in */
	const char *key_file; /* the sandbox's pre-shared key (64 hex digits) */
	const char *listen_addr; /* pod: IPv4 the proxy and control port bind to */
	const char *advertise_addr; /* pod: IPv4 the workload reaches this supervisor at */
	unsigned confirm_timeout_ms; /* 0 = the backend's default */
	/* inpod: direct TCP to these ports becomes a transparent proxy
	 * connection, DNS is answered by the supervisor (docs/network.md);
	 * transparent_off: neither, direct connections are only refused. */
	uint16_t transparent_ports[BACKEND_TRANSPARENT_PORTS_MAX];
	size_t n_transparent_ports;
	bool transparent_off;
};

/* The listeners of the transparent path, made inside the sandbox's network
 * namespace (-1: none). Handed to the proxy, which then owns them. */
struct backend_transparent {
	int tcp_fd; /* TCP, listening: redirected direct connections */
	int dns_fd; /* UDP: redirected DNS queries */
	int dns_tcp_fd; /* TCP, listening: redirected DNS over TCP */
};

/* What the supervisor lends a backend: where audit records go. The record
 * is borrowed for the duration of the call. */
struct backend_context {
	void (*audit)(void *user, const json_t *record);
	void *audit_user;
};

struct backend_instance;

/* Distinct handle types so a step cannot be handed the wrong state. */
typedef struct {
	struct backend_instance *inst;
} backend_bound;
typedef struct {
	struct backend_instance *inst;
} backend_ready;
typedef struct {
	struct backend_instance *inst;
} backend_running;

/* The vtable a backend file implements. state is the backend's own. */
struct backend_ops {
	const char *name;
	int (*attach)(const struct backend_descriptor *d, const struct backend_context *ctx,
		      void **state, os_error *err);
	/* Address the proxy must listen on (known once bound). */
	int (*proxy_endpoint)(void *state, struct sockaddr_storage *addr, socklen_t *len);
	int (*confirm)(void *state, os_error *err);
	int (*start_agent)(void *state, const json_t *launch_spec, os_error *err);
	/* fd readable when the agent has exited; reap collects its wait status. */
	int (*agent_fd)(void *state);
	int (*reap_agent)(void *state, int *wait_status, os_error *err);
	/* Optional monitor (bypass records): fd to poll, and its handler. */
	int (*event_fd)(void *state);
	int (*dispatch)(void *state, os_error *err);
	/* Releases everything, kills the agent if still running; frees state. */
	void (*teardown)(void *state);
	/* True when the agent runs outside this supervisor's process tree (split):
	 * agent_fd is then no pidfd, and sandbox exec cannot join the agent. */
	bool agent_remote;
	/* The local process that is the root of caller identity (the launcher
	 * this supervisor forked, or one found from the kernel, never named by
	 * the workload), 0 = none. Optional. */
	pid_t (*agent_pid)(void *state);
	/* Optional, once ready: the sandbox's cgroups holding the operator's
	 * limits, for a backend whose agent this host's kernel accounts to this
	 * supervisor (inpod). Without it, or when it fails, the limits become
	 * the agent's rlimits. */
	int (*make_cgroups)(void *state, const struct cgroup_limits *lim,
			    struct sandbox_cgroups *out, os_error *err);
	/* Optional, once bound: the transparent path's listeners (ownership
	 * passes to the caller; a second call gets -1s). */
	void (*transparent)(void *state, struct backend_transparent *out);
	/* Optional, once ready and before start_agent: fds 0-2 the agent gets
	 * instead of the supervisor's own (a foreground create's pipes or
	 * terminal). Borrowed until start_agent returns. NULL: the backend's
	 * agent cannot take them (it runs in another Pod). */
	int (*agent_stdio)(void *state, const int fds[3], os_error *err);
};

/* Registry lookup by name; NULL when unknown. */
const struct backend_ops *backend_find(const char *name);

/* attach through the named backend (desc->backend). On success *inst owns
 * the instance (pass it to backend_teardown) and *bound is the first handle. */
int backend_attach(const struct backend_descriptor *desc, const struct backend_context *ctx,
		   struct backend_instance **inst, backend_bound *bound, os_error *err);
/* Same with an explicit vtable (tests, out-of-registry backends). */
int backend_attach_ops(const struct backend_ops *ops, const struct backend_descriptor *desc,
		       const struct backend_context *ctx, struct backend_instance **inst,
		       backend_bound *bound, os_error *err);

int backend_proxy_endpoint(const backend_bound *bound, struct sockaddr_storage *addr,
			   socklen_t *len, os_error *err);
/* The transparent listeners of a bound instance; both -1 when its backend
 * has none (split) or the operator turned the path off. */
void backend_transparent_take(const backend_bound *bound, struct backend_transparent *out);
/* On success *bound is consumed (emptied) and *ready is set. */
int backend_confirm(backend_bound *bound, backend_ready *ready, os_error *err);
/* On success *ready is consumed and *running is set: only now does workload code run. */
int backend_start_agent(backend_ready *ready, const json_t *launch_spec, backend_running *running,
			os_error *err);
/* The sandbox's cgroups for lim (see make_cgroups): 0 with out->n == 0 when
 * the backend makes none. A failure leaves the instance ready. */
int backend_make_cgroups(const backend_ready *ready, const struct cgroup_limits *lim,
			 struct sandbox_cgroups *out, os_error *err);
/* See agent_stdio; ENOTSUP for a backend without it. */
int backend_agent_stdio(const backend_ready *ready, const int fds[3], os_error *err);
int backend_agent_fd(const backend_running *running);
/* False when the backend's agent is not a local process (see agent_remote). */
bool backend_agent_local(const backend_running *running);
/* The identity root (see agent_pid); 0 when none. */
pid_t backend_agent_entry_pid(const backend_running *running);
int backend_reap_agent(backend_running *running, int *wait_status, os_error *err);

/* Monitor of the instance (any state but torn down); -1 when it has none. */
int backend_event_fd(const struct backend_instance *inst);
int backend_dispatch(struct backend_instance *inst, os_error *err);

/* Name of the instance's current state: bound, ready, running, failed. */
const char *backend_state_name(const struct backend_instance *inst);

/* Tears down and frees *inst, setting it to NULL; NULL-safe, idempotent. */
void backend_teardown(struct backend_instance **inst);

/* Checks a sandbox id: 1..63 bytes of [A-Za-z0-9._-], not starting with '-' or '.'. */
int backend_check_sandbox_id(const char *id, os_error *err);

#endif
