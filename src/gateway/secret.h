/* secret.h - secrets at rest: AES-256-GCM under a key file (0600) in the
 * gateway's state dir, and random tokens. Never logs or returns plaintext
 * anywhere but to the caller that asked for it. */
#ifndef OS_GATEWAY_SECRET_H
#define OS_GATEWAY_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct stat;

#define SECRET_KEY_LEN 32
#define SECRET_TOKEN_HEX 64 /* 32 random bytes as hex */
#define SECRET_SHA256_HEX 64

struct secret_key {
	uint8_t k[SECRET_KEY_LEN];
};

/* Reads path (must be 0600, exactly 32 bytes) or creates it with fresh random bytes. */
int secret_key_load_or_create(const char *path, struct secret_key *key, os_error *err);

/* Encrypts plain[len] into a malloc'd "v1:" + base64(nonce|ciphertext|tag) string. */
int secret_seal(const struct secret_key *key, const void *plain, size_t len, char **out,
		os_error *err);
/* Reverses secret_seal; *out is malloc'd and NUL-terminated. Fails on any tampering. */
int secret_open(const struct secret_key *key, const char *sealed, char **out, size_t *out_len,
		os_error *err);

/* 32 random bytes as 64 lower-case hex chars plus NUL into out[65]. */
int secret_random_hex(char out[SECRET_TOKEN_HEX + 1], os_error *err);
/* SHA-256 of s as hex into out[65]. */
void secret_sha256_hex(const char *s, size_t len, char out[SECRET_SHA256_HEX + 1]);
/* Constant-time equality of two NUL-terminated strings. */
int secret_equal(const char *a, const char *b);

/* Nobody else may read the file: no bits for others, no group write, and
 * group read only on a root-owned file in our own group while we are not
 * root: how the kubelet hands a Secret to a non-root container with
 * fsGroup (the Helm chart's gateway Pod), the same rule as a supervisor's
 * token file. */
bool secret_file_private(const struct stat *st);

/* Reads an operator-provided token file (admin_token_file: 64 lower-case
 * hex, private as secret_file_private says); never creates it. */
int secret_token_load(const char *path, char out[SECRET_TOKEN_HEX + 1], os_error *err);
/* Reads a token file (0600) or creates it with a fresh token. */
int secret_token_load_or_create(const char *path, char out[SECRET_TOKEN_HEX + 1], os_error *err);

#endif
