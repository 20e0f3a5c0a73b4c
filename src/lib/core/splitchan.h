/* splitchan.h - the split backend's control channel between a supervisor and
 * its launcher: a mutual HMAC-SHA256 challenge over one TCP connection with
 * a per-sandbox pre-shared key, then frames that are each authenticated,
 * sequenced and bound to that session (docs/split-backend.md). It gives
 * integrity and authenticity, not confidentiality: never put a secret in a frame. */
#ifndef OS_SPLITCHAN_H
#define OS_SPLITCHAN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "sha256.h"

#define SPLITCHAN_KEY_LEN 32
#define SPLITCHAN_NONCE_LEN 32
#define SPLITCHAN_MAX_PAYLOAD (2u << 20) /* a launch spec is at most 1 MiB */

enum splitchan_type {
	SPLITCHAN_PROBE = 1, /* supervisor -> launcher: break-test targets (JSON) */
	SPLITCHAN_REPORT = 2, /* launcher -> supervisor: break-test results (JSON) */
	SPLITCHAN_SPEC = 3, /* supervisor -> launcher: the launch spec, i.e. "go" (JSON) */
	SPLITCHAN_ABORT = 4, /* supervisor -> launcher: do not run anything (JSON reason) */
	SPLITCHAN_STATUS = 5, /* launcher -> supervisor: one launcher status line (JSON) */
	SPLITCHAN_LAUNCHED = 6, /* launcher -> supervisor: status stream ended (empty) */
	SPLITCHAN_EXIT = 7, /* launcher -> supervisor: the agent's exit code (JSON) */
};

struct splitchan {
	int fd; /* borrowed: the caller owns and closes it */
	uint8_t key_tx[SHA256_LEN], key_rx[SHA256_LEN];
	uint64_t seq_tx, seq_rx;
	struct buf in; /* received bytes not yet consumed */
	int eof; /* the peer closed its side */
};

/* Reads a key file: exactly 64 hex digits, optionally followed by one newline. */
int splitchan_load_key(const char *path, uint8_t key[SPLITCHAN_KEY_LEN], os_error *err);

/* Binds ch to a connected socket (not yet authenticated). */
void splitchan_init(struct splitchan *ch, int fd);
/* Wipes keys and frees the buffer; does not close fd. */
void splitchan_release(struct splitchan *ch);

/* Mutual authentication, each side with a deadline in milliseconds. Both
 * fail with EACCES when the peer does not prove knowledge of key. The
 * supervisor proves itself first; the launcher answers only after checking. */
int splitchan_handshake_launcher(struct splitchan *ch, const uint8_t key[SPLITCHAN_KEY_LEN],
				 int timeout_ms, os_error *err);
int splitchan_handshake_supervisor(struct splitchan *ch, const uint8_t key[SPLITCHAN_KEY_LEN],
				   int timeout_ms, os_error *err);

/* Sends one authenticated frame (blocking). */
int splitchan_send(struct splitchan *ch, enum splitchan_type type, const void *payload, size_t len,
		   os_error *err);
/* Sends a JSON value as one frame. */
int splitchan_send_json(struct splitchan *ch, enum splitchan_type type, const json_t *json,
			os_error *err);

/* Reads whatever the socket has now (never blocks). 0 = ok, -1 = error;
 * sets ch->eof when the peer closed. */
int splitchan_pump(struct splitchan *ch, os_error *err);
/* Extracts one complete frame from what was pumped: 1 = *payload (malloc'd,
 * NUL-terminated, caller frees) and *type set; 0 = need more bytes; -1 =
 * malformed or forged (the channel is then unusable). */
int splitchan_take(struct splitchan *ch, enum splitchan_type *type, char **payload, size_t *len,
		   os_error *err);
/* pump + take until a frame arrives or timeout_ms passes (ETIMEDOUT), or the
 * peer closes (EPIPE). */
int splitchan_recv(struct splitchan *ch, int timeout_ms, enum splitchan_type *type, char **payload,
		   size_t *len, os_error *err);

/* Pure helper exposed for tests and the fuzzer: the tag of a frame. */
void splitchan_mac(const uint8_t key[SHA256_LEN], uint64_t seq, uint8_t type, const void *payload,
		   size_t len, uint8_t out[SHA256_LEN]);

#endif
