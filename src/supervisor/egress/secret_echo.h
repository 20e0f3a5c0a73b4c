/* secret_echo.h - keeping secrets an upstream echoes away from the agent.
 * An upstream that has once received a secret (a provider credential or an
 * inference backend's key) may send it back in any later answer, on this
 * connection or another, with or without a placeholder in the request: for
 * the sandbox's lifetime every answer from it is scrubbed. The guard
 * remembers those upstreams; the scrubbing itself runs on what is about to
 * reach the agent, after chunked framing was decoded (a chunk boundary
 * inside a secret would otherwise hide it). */
#ifndef OS_SUPERVISOR_SECRET_ECHO_H
#define OS_SUPERVISOR_SECRET_ECHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credentials.h"
#include "error.h"
#include "inference.h"

/* Upstreams remembered one by one; past this every upstream counts as
 * having received a secret (scrubbing more, never less). */
#define SECRET_ECHO_UPSTREAMS_MAX 256

struct secret_echo;

int secret_echo_new(struct secret_echo **out, os_error *err);
void secret_echo_free(struct secret_echo *g);

/* host:port has now received a secret. */
void secret_echo_mark(struct secret_echo *g, const char *host, uint16_t port);
bool secret_echo_marked(const struct secret_echo *g, const char *host, uint16_t port);

/* Overwrites every occurrence of a credential or inference key in data with
 * '*' (same length, so framing stays valid); how many were masked. */
size_t secret_echo_mask(const struct credentials *creds, const struct inference_routes *inf,
			char *data, size_t len);
/* Length of the longest such secret (0: nothing to scrub). */
size_t secret_echo_max_len(const struct credentials *creds, const struct inference_routes *inf);

#endif
