/* session_stream.h - the supervisor's reader of the gateway session stream:
 * an HTTP/1.1 response head, then a chunked body of NDJSON messages
 * (hello, policy, ping). Pure bytes-in, messages-out: no I/O, no allocation
 * beyond named caps, and it never hands a malformed message to its caller.
 *
 * Messages (one JSON object per line):
 *   {"type":"hello","sandbox":ID,"policy_revision":N}     N = 0: none yet
 *   {"type":"policy","revision":N,"policy":"<yaml>"}      N >= 1
 *   {"type":"ping"}
 *   {"type":"exec","id":HEX,"argv":[...],"tty":B,"rows":N,"cols":N}
 *                         run a command in the sandbox (docs/exec.md)
 *   {"type":"transfer","id":HEX,"op":"upload"|"download","path":P}
 *   {"type":"forward","id":HEX,"port":N}
 *                         a file transfer or one forwarded connection, relayed
 *                         like an exec (docs/files.md)
 *   {"type":"exec","id":HEX,"agent":true}
 *                         attach a foreground create's client to the
 *                         agent's own stdio (no argv, tty, size or term)
 * Unknown types are skipped (the gateway may add kinds); a known type with
 * missing, extra or mistyped fields ends the stream with an error. */
#ifndef OS_SUPERVISOR_SESSION_STREAM_H
#define OS_SUPERVISOR_SESSION_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "http.h"

#define SESSION_HEAD_MAX 16384 /* response head */
#define SESSION_LINE_MAX (4u << 20) /* one NDJSON message, JSON-escaped */
#define SESSION_POLICY_MAX (1u << 20) /* policy text (the gateway's body cap) */
#define SESSION_ID_MAX 64

enum session_msg_type {
	SESSION_MSG_HELLO,
	SESSION_MSG_POLICY,
	SESSION_MSG_PING,
	SESSION_MSG_EXEC,
	SESSION_MSG_TRANSFER,
	SESSION_MSG_FORWARD,
};

#define SESSION_EXEC_ID_MAX 64
#define SESSION_EXEC_ARGV_MAX 256
#define SESSION_TRANSFER_PATH_MAX 4096

struct session_msg {
	enum session_msg_type type;
	const char *sandbox; /* hello */
	uint64_t revision; /* hello: latest policy revision; policy: its revision */
	const char *policy; /* policy: NUL-terminated YAML */
	size_t policy_len;
	const char *exec_id; /* exec, transfer, forward: [0-9a-f], 16..63 chars */
	const struct json_t *exec_argv; /* exec: array of 1..256 strings */
	bool exec_tty;
	uint16_t exec_rows, exec_cols; /* exec with tty: initial size (0: unknown) */
	const char *exec_term; /* exec with tty: the client's TERM (execframe_term_ok), or NULL */
	const char *transfer_path; /* transfer: the workspace path, 1..4096 bytes */
	bool transfer_upload; /* transfer: upload (else download) */
	uint16_t forward_port; /* forward: the port on the sandbox's loopback */
	bool exec_agent; /* exec: the agent's own stdio, not a new command */
};

/* Returns < 0 (err set) to end the stream. */
typedef int (*session_msg_fn)(void *user, const struct session_msg *m, os_error *err);

struct session_stream {
	int state;
	int status; /* HTTP status once the head is read */
	struct http_parser hp;
	struct http_chunked ch;
	struct buf raw; /* received, not yet consumed */
	struct buf line; /* the NDJSON line being assembled */
	uint64_t messages;
};

void session_stream_init(struct session_stream *s);
void session_stream_free(struct session_stream *s);

/* Feeds received bytes. Returns 0 (need more), 1 (the gateway ended the
 * stream cleanly) or < 0: a protocol error, a refused session (err code
 * EACCES for 401/403, EPROTO otherwise, with the gateway's message) or an
 * error from cb. After 1 or < 0 the stream takes no more bytes. */
int session_stream_feed(struct session_stream *s, const char *data, size_t len, session_msg_fn cb,
			void *user, os_error *err);

/* Parses one NDJSON line into m (pointing into *holder, which the caller
 * json_decref's). Exposed for tests. 1: m set; 0: unknown type, skip. */
struct json_t;
int session_msg_parse(const char *line, size_t len, struct json_t **holder, struct session_msg *m,
		      os_error *err);

#endif
