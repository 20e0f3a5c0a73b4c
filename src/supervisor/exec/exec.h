/* exec.h - `sandbox exec` on the supervisor's side (docs/exec.md). The
 * gateway asks on the session; the supervisor forks a relay that dials the
 * gateway back (POST .../exec/ID, upgraded), starts the command through
 * openshell-sandbox with `join` (the agent's namespaces, cgroups, user,
 * Landlock rules and seccomp filter) and pumps the exec frames between the
 * command's stdio and that connection. The relay is an identity root of the
 * proxy, so the command's connections are judged like the agent's. */
#ifndef OS_SUPERVISOR_EXEC_H
#define OS_SUPERVISOR_EXEC_H

#include <jansson.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "buf.h"
#include "error.h"
#include "loop.h"
#include "session.h"

struct egress;
struct exec_service;

/* Fixed fds in the exec launcher: the sandbox's pidfd (the spec's `join`)
 * and the spec pipe. */
enum { EXEC_JOIN_FD = 3, EXEC_SPEC_FD = 4 };

struct exec_host {
	struct loop *loop;
	struct egress *egress; /* identity roots for the relays */
	const char *launcher; /* openshell-sandbox */
	const json_t *agent_spec; /* the agent's launch spec (copied) */
	pid_t agent_launcher; /* its child is the sandbox's pid 1 */
	const char *unsupported; /* non-NULL: every request is answered with this */
};

int exec_service_new(const struct exec_host *h, struct exec_service **out, os_error *err);
/* The session to dial back through; set once the session exists. */
void exec_service_set_session(struct exec_service *x, struct gw_session *s);
/* gw_session_exec_fn: starts one exec (failures are logged and, when the
 * gateway can be reached, reported to the client as an error frame). */
void exec_service_request(void *user, const struct session_msg *m);
void exec_service_free(struct exec_service *x);

/* The exec launch spec: the agent's, with argv and tty replaced, TERM set
 * to term when given (a tty's, checked by the session parser), and the
 * sandbox-creating fields swapped for `join` (fd join_fd). Exposed for tests. */
json_t *exec_spec_from_agent(const json_t *agent, const json_t *argv, bool tty, const char *term,
			     int join_fd, os_error *err);

/* The transfer launch spec (docs/files.md): the agent's, joined, with
 * "transfer" in place of argv. Exposed for tests. */
json_t *exec_spec_for_transfer(const json_t *agent, bool upload, const char *path, int join_fd,
			       os_error *err);

/* exec_sock.c: the relay's connection to the gateway, through TLS when ssl
 * is set (an https:// gateway). Reads: bytes, 0 at the end, -1 with errno
 * (EAGAIN: a TLS record that carried no data, or nothing yet on a
 * non-blocking fd). */
struct exec_sock {
	int fd;
	SSL *ssl;
};
ssize_t exec_sock_read(struct exec_sock *s, void *buf, size_t len);
int exec_sock_write_all(struct exec_sock *s, const void *buf, size_t len);
/* Decrypted bytes wait inside OpenSSL: read before blocking in poll. */
bool exec_sock_pending(const struct exec_sock *s);
/* The relay is done writing: close_notify (TLS), then half-close. */
void exec_sock_end(struct exec_sock *s);

/* exec_pump.c: the relay process. Runs the launcher and pumps frames
 * between sock (already upgraded) and the command until it exits; never
 * returns. */
struct exec_pump_args {
	struct exec_sock sock; /* upgraded connection to the gateway */
	/* agent: the agent's own stdio (exec_attach.c) instead of a launcher:
	 * agent_fds are stdin's write end and stdout's and stderr's read ends
	 * (tty: the master twice, -1), end_fd gives the agent's exit status
	 * (u32, big-endian) once it ended. Output is also copied to fds 1/2
	 * (the supervisor's log). */
	bool agent;
	int agent_fds[3];
	int end_fd;
	int join_pidfd; /* the sandbox's pid 1 */
	const char *launcher;
	const char *spec; /* JSON text */
	bool tty;
	uint16_t rows, cols;
	const uint8_t *early; /* frames that arrived with the 101 answer */
	size_t early_len;
	uint16_t forward_port; /* non-zero: a forwarded connection, no launcher */
};
__attribute__((noreturn)) void exec_pump_main(const struct exec_pump_args *a);

/* exec_forward.c: the relay of one forwarded connection (`sandbox
 * port-forward`): enters the sandbox's network namespace, connects to
 * 127.0.0.1:forward_port there and moves bytes as frames until either side
 * is done; never returns. */
__attribute__((noreturn)) void exec_forward_main(const struct exec_pump_args *a);
/* exec_attach.c: the agent's stdio for a foreground create (--attach). */
struct exec_attach;
struct exec_attach_opts {
	bool tty;
	uint16_t rows, cols;
};
/* Called once the attachment is over: the client has the exit status, or
 * left, or never came in time. agent_exited false: the agent must be
 * stopped (nobody is left to see it: a foreground run ends with its client). */
typedef void (*exec_attach_over_fn)(void *user, bool agent_exited);
/* The pipes (or terminal) for the agent, before it starts. */
int exec_attach_new(struct loop *l, const struct exec_attach_opts *o, exec_attach_over_fn over,
		    void *user, struct exec_attach **out, os_error *err);
/* The agent's fds 0-2, valid until exec_attach_started. */
const int *exec_attach_agent_fds(const struct exec_attach *a);
/* The agent runs: closes its ends here and starts waiting for the client. */
int exec_attach_started(struct exec_attach *a, os_error *err);
/* The agent's end. True when the run must wait for over (a client is
 * attached, or may still come, to be handed the status); false when over
 * was already called. */
bool exec_attach_agent_exited(struct exec_attach *a, int code);
void exec_attach_free(struct exec_attach *a);
/* For exec_relay.c: NULL and args filled when a client may attach now,
 * else why not. After the fork, handed (forked false: it failed). */
const char *exec_attach_claim(struct exec_attach *a, struct exec_pump_args *args);
void exec_attach_handed(struct exec_attach *a, bool forked);
void exec_attach_relay_exited(struct exec_attach *a);
/* The exec service serves the agent's attach requests ("agent" exec
 * messages) from a, which it does not own. */
void exec_service_set_attach(struct exec_service *x, struct exec_attach *a);
/* Pipes, or a terminal (child: its slave three times; parent: its master
 * twice and -1) of rows x cols, all O_CLOEXEC. */
int exec_stdio_open(bool tty, uint16_t rows, uint16_t cols, int child[3], int parent[3],
		    os_error *err);

#endif
