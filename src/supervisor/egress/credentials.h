/* credentials.h - provider secrets held only in the supervisor's memory and
 * the placeholders the agent sees instead (`openshell:resolve:env:KEY`).
 * Secrets are never logged, never written, never put in the agent's env. */
#ifndef OS_PROXY_CREDENTIALS_H
#define OS_PROXY_CREDENTIALS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "error.h"

#define CRED_PLACEHOLDER_PREFIX "openshell:resolve:env:"

struct credentials;

/* JSON: {"providers": {"NAME": {"KEY": "secret", ...}, ...}}; the file must
 * not be readable by group or others. */
int credentials_load(const char *path, struct credentials **out, os_error *err);
int credentials_parse(const char *json, size_t len, struct credentials **out, os_error *err);
void credentials_free(struct credentials *c);

/* Writes "KEY=placeholder" lines for the agent's environment into env (NULL-
 * terminated array of malloc'd strings, caller frees). */
int credentials_agent_env(const struct credentials *c, char ***env, size_t *n, os_error *err);

/* The secret for KEY and the provider that holds it, or NULL. */
const char *credentials_lookup(const struct credentials *c, const char *key, size_t key_len,
			       const char **provider);

/* Callback deciding whether provider's secrets may go to the current request's host:port. */
typedef bool (*cred_allowed_fn)(void *data, const char *provider);

enum cred_result { CRED_OK = 0, CRED_NONE, CRED_UNKNOWN_KEY, CRED_ENDPOINT_MISMATCH, CRED_ERROR };

/* Rewrites one header value: a bare placeholder, "Bearer <ph>", or "Basic
 * base64(user:<ph>)" (either half). Appends the result to out. Returns
 * CRED_NONE (value copied unchanged) when no placeholder is present. */
enum cred_result credentials_rewrite_value(const struct credentials *c, const char *value,
					   size_t len, cred_allowed_fn allowed, void *data,
					   struct buf *out, const char **provider, os_error *err);

/* Every placeholder anywhere in s[0..len) (a WebSocket text message, a
 * request body), appended to out with the rest; CRED_NONE when there is
 * none. */
enum cred_result credentials_rewrite_text(const struct credentials *c, const char *s, size_t len,
					  cred_allowed_fn allowed, void *data, struct buf *out,
					  const char **provider, os_error *err);

/* '*' over every occurrence of secret in data; how many. */
size_t secret_mask_one(const char *secret, char *data, size_t len);
/* Overwrites every occurrence of any secret in data with '*' (same length,
 * so framing stays valid); returns how many were masked. */
size_t credentials_mask(const struct credentials *c, char *data, size_t len);
/* Length of the longest secret (0 without credentials). */
size_t credentials_max_len(const struct credentials *c);

#endif
