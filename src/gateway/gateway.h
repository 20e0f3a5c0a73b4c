/* gateway.h - the gateway's shared state and the seams between its files:
 * server (connections, HTTP), api_* (routes), lifecycle (phases, driver
 * polling, reconcile at start). The gateway never enforces egress itself and
 * never trusts a driver or a caller with another sandbox's identity. */
#ifndef OS_GATEWAY_H
#define OS_GATEWAY_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "error.h"
#include "secret.h"
#include "store.h"

/* Request bodies: more is a 413. Room for a sandbox command of 2 MiB (the
 * kernel's ARG_MAX, src/drivers/local/local_spec.c) and its JSON escapes. */
#define GW_BODY_MAX (4u << 20)
#define GW_VERSION OPENSHELL_VERSION /* meson.build project version */
#define EXEC_ID_HEX 32 /* exec ids: 16 random bytes as hex */
#define EXEC_ATTACH_MS 10000 /* how long a client waits for the relay */

struct conn;
struct loop;
struct loop_timer;
struct server;
struct sessions;
struct driver_host;
struct execs;

struct gateway {
	struct loop *loop;
	struct store *store;
	struct driver *driver;
	struct secret_key key;
	char admin_token[SECRET_TOKEN_HEX + 1];
	char state_dir[PATH_MAX];
	char url[PATH_MAX + 16]; /* how supervisors reach us */
	struct loop_timer *tick;
	struct server *server;
	struct sessions *sessions; /* live supervisor sessions (sessions.c) */
	struct driver_host *host; /* how the loop drives the driver (driver_host.c) */
	struct execs *execs; /* exec clients waiting for their relay (exec.c) */
	/* storage_faults.c: sandbox id -> what could not be saved, and the
	 * lifecycle pass's interval (backs off while writes fail). */
	json_t *storage_notes;
	bool storage_failed_in_pass;
	uint64_t pass_ms;
};

/* One API call as the server parsed it. */
struct api_request {
	const char *method;
	const char *path; /* NUL-terminated, without the query */
	const char *query; /* NUL-terminated, "" when absent */
	const char *body;
	size_t body_len;
	const char *bearer; /* token from Authorization, or NULL */
	bool upgrade_exec; /* "Upgrade: openshell-exec" with "Connection: Upgrade" */
	/* mTLS (tls_client_ca_file): the connection came through the TLS
	 * listener that asks for client certificates, and whether it presented
	 * one that verified. Without one only supervisor routes are served. */
	bool client_cert_asked;
	bool client_cert_verified;
};

/* What the handler answers: a JSON body, or a log stream the server pumps. */
struct api_response {
	int status;
	json_t *body; /* owned */
	bool stream;
	char stream_path[PATH_MAX];
	uint64_t stream_offset;
	bool follow;
	/* Streamed from this pipe (non-blocking, closed with the connection)
	 * instead of stream_path: a driver's log (driver_ops.logs). */
	bool stream_pipe;
	int stream_fd;
	char stream_sandbox[64]; /* follow until this sandbox stops running */
	bool session; /* a supervisor session stream for stream_sandbox */
	/* sandbox exec (exec.c): the client's connection waits for the relay
	 * (exec_park), or the relay's connection joins its client (exec_attach). */
	bool exec_park, exec_attach;
	bool watch; /* a sandbox watch stream (watch.c); stream_sandbox = name filter */
	unsigned watch_timeout_s; /* ?timeout_s=N: the watch ends after N s (0: never) */
	bool authenticated; /* a valid admin or sandbox token came with it */
	char exec_id[EXEC_ID_HEX + 1];
	char exec_sandbox[64];
};

void api_handle(struct gateway *gw, const struct api_request *req, struct api_response *resp);
/* Sets resp to {"error": code, "message": msg} with status. */
void api_error(struct api_response *resp, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Maps an os_error code to a status and error code (ENOENT 404, EEXIST 409 ...). */
void api_fail(struct api_response *resp, const os_error *err);

/* Route families (api_sandbox.c, api_policy.c, api_provider.c). Each returns
 * false when the path is not theirs. parts are the path's segments after /v1. */
bool api_sandbox_route(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
		       struct api_response *resp);
bool api_policy_route(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
		      struct api_response *resp);
bool api_provider_route(struct gateway *gw, const struct api_request *req, char **parts, size_t n,
			struct api_response *resp);
bool api_supervisor_route(struct gateway *gw, const struct api_request *req, const json_t *caller,
			  char **parts, size_t n, struct api_response *resp);

/* Public view of a sandbox row (no token hash, no driver internals). */
json_t *api_sandbox_view(const json_t *row);
/* The same, with a storage failure (storage_note) as its message. */
json_t *api_sandbox_view_of(const struct gateway *gw, const json_t *row);
/* Parses the body as a JSON object with only allowed keys; 400 on failure. */
json_t *api_body(const struct api_request *req, const char *const allowed[],
		 struct api_response *resp);

/* lifecycle.c */
int lifecycle_start(struct gateway *gw, os_error *err);
/* One pass over every sandbox: drive phases toward what was asked. */
void lifecycle_tick(struct gateway *gw);
/* The same for one sandbox (by id), e.g. the moment its session opens. */
void lifecycle_drive_one(struct gateway *gw, const char *id);
/* True while the sandbox's supervisor runs (log followers stop after it). */
bool lifecycle_running(struct gateway *gw, const char *id);
/* Stopped, Error, or the agent's own end: Succeeded (exit 0) / Failed. */
bool lifecycle_phase_ended(const char *phase);
/* A Ready sandbox whose supervisor session went away (the supervisor froze
 * or died, the gateway restarted): Provisioning with this message, and the
 * API's view says "session": "lost", until the supervisor redials. */
#define LIFECYCLE_SESSION_LOST "supervisor session lost: waiting for it to reconnect"
bool lifecycle_session_lost(const json_t *row);
/* Material (policy, credentials, inference, token) handed to the driver. */
int lifecycle_configure(struct gateway *gw, json_t *row, const char *policy_yaml, const char *token,
			os_error *err);
/* Applies an action (create/start/stop/delete) now; persists intent first. */
int lifecycle_act(struct gateway *gw, json_t *row, const char *action, os_error *err);

/* storage_faults.c - surviving an unwritable state directory. */
/* ENOSPC or EDQUOT: the API's 507. */
bool storage_is_full(int code);
/* Records that saving sandbox id failed doing `what`: logged once per
 * distinct failure, shown as the sandbox's message, backs the pass off. */
void storage_fault(struct gateway *gw, const char *id, const char *name, const char *what,
		   const os_error *err);
/* A save of id succeeded: its note goes (logged once). */
void storage_ok(struct gateway *gw, const char *id, const char *name);
/* What could not be saved for id, or NULL. */
const char *storage_note(const struct gateway *gw, const char *id);
/* The next pass's delay: doubled (to 10 s) after a pass with a failure. */
uint64_t storage_next_pass_ms(struct gateway *gw);
void storage_faults_free(struct gateway *gw);

/* server.c */
struct gateway_listen {
	const char *tcp; /* "127.0.0.1:17670" or NULL */
	const char *unix_path; /* or NULL */
	/* TLS on tcp when cert and key are set (tls.h); the Unix socket stays
	 * plain. A client CA makes client certificates required for the
	 * admin API (mTLS); supervisor routes take their sandbox token alone. */
	const char *tls_cert, *tls_key, *tls_client_ca;
};
int server_start(struct gateway *gw, const struct gateway_listen *ls, os_error *err);
void server_free(struct server *s);
/* A sandbox row was written: every watch stream looks now instead of at its
 * next tick (up to 200 ms later, on every create a CLI waits for). Kicks
 * before the tick coalesce into one look. */
void server_sandboxes_changed(struct gateway *gw);
/* Queues one chunk on a streaming connection; it is sent from the loop, so
 * this never closes c under the caller. < 0 when the output cap is hit. */
int server_conn_send(struct conn *c, const char *data, size_t len);
void server_conn_close(struct conn *c);
/* Answers a waiting (parked) connection with a JSON error and closes it. */
void server_conn_fail(struct conn *c, int status, const char *code, const char *msg);
/* Answers 101 on both connections and relays bytes between them untouched
 * until either side closes. */
void server_conn_relay(struct conn *client, struct conn *relay);

/* sessions.c - supervisor sessions: at most one live stream per sandbox,
 * policy revisions pushed on it, heartbeats and policy-status reports. */
/* Registers c as id's session (an older one is closed) and sends hello and
 * the newest deliverable revision. */
int sessions_attach(struct gateway *gw, const char *id, struct conn *c, os_error *err);
/* Called by the server when a session connection closes. */
void sessions_detach(struct gateway *gw, struct conn *c);
/* True while id has an open stream whose supervisor sent a heartbeat lately. */
bool sessions_live(struct gateway *gw, const char *id);
void sessions_heartbeat(struct gateway *gw, const char *id);
/* Pushes a stored revision to id's session; false when none is open. */
bool sessions_push_policy(struct gateway *gw, const char *id, int64_t revision, const char *yaml);
void sessions_free(struct gateway *gw);
/* watch.c: appends NDJSON events for what changed since seen (id -> last
 * resource_version, updated); name filters when non-empty; first adds SYNCED. */
struct buf;
int watch_poll(struct gateway *gw, json_t *seen, const char *name, bool first, struct buf *out,
	       os_error *err);

/* Sends one message (a JSON object) on id's session; false when none is open. */
bool sessions_push(struct gateway *gw, const char *id, json_t *msg);

/* exec.c - sandbox exec: clients parked until their relay dials back. */
int exec_park(struct gateway *gw, const char *sandbox, const char *exec_id, struct conn *c,
	      os_error *err);
/* Pairs the relay's connection with the parked client; ENOENT when no
 * client waits with that id for that sandbox. */
int exec_attach(struct gateway *gw, const char *sandbox, const char *exec_id, struct conn *relay,
		os_error *err);
/* Called by the server when a parked connection closes. */
void exec_forget(struct gateway *gw, struct conn *c);
void execs_free(struct gateway *gw);
/* api_exec.c: POST /v1/sandboxes/NAME/exec and the relay's attach route. */
/* agent: POST .../attach, the agent's own stdio (a foreground create), else exec. */
bool api_exec_route(struct gateway *gw, const struct api_request *req, const json_t *row,
		    bool agent, struct api_response *resp);
/* POST /v1/sandboxes/NAME/upload, /download and /port-forward: relayed
 * like exec (docs/files.md). */
#define TRANSFER_PATH_MAX 4096
bool api_transfer_route(struct gateway *gw, const struct api_request *req, const json_t *row,
			bool upload, struct api_response *resp);
bool api_forward_route(struct gateway *gw, const struct api_request *req, const json_t *row,
		       struct api_response *resp);
void api_exec_attach_route(struct gateway *gw, const struct api_request *req, const char *id,
			   const char *exec_id, struct api_response *resp);

/* api_session.c: /v1/supervisor/sandboxes/ID/{session,policy-status,heartbeat}. */
bool api_session_route(struct gateway *gw, const struct api_request *req, const char *id,
		       const char *leaf, struct api_response *resp);

#endif
