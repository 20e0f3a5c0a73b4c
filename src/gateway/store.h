/* store.h - the gateway's durable state in SQLite (WAL, file 0600, schema
 * migrations): sandboxes, policy revisions, providers (secrets only sealed),
 * inference routes. Every sandbox write is conditional on the resource
 * version the caller read: a stale write fails with ESTALE (the API's 409).
 * Never stores a provider secret or a sandbox token in clear. */
#ifndef OS_GATEWAY_STORE_H
#define OS_GATEWAY_STORE_H

#include <jansson.h>
#include <stdint.h>

#include "error.h"

struct store;

int store_open(const char *path, struct store **out, os_error *err);
void store_close(struct store *s);

/* One transaction (BEGIN IMMEDIATE ... COMMIT): writes that must land
 * together, e.g. a sandbox and its first policy. rollback never fails. */
int store_begin(struct store *s, os_error *err);
int store_commit(struct store *s, os_error *err);
void store_rollback(struct store *s);

/* Sandbox rows are JSON objects:
 *   {"id", "name", "record": {driver record}, "phase", "desired", "message",
 *    "exit_code": int|null, "resource_version": int, "token_hash",
 *    "providers": [names], "created_at": unix seconds,
 *    "client_request_id": the create's, or ""}
 * insert: EEXIST when the name is taken. get: by id or name, ENOENT. */
int store_sandbox_insert(struct store *s, json_t *row, os_error *err);
int store_sandbox_get(struct store *s, const char *id_or_name, json_t **row, os_error *err);
int store_sandbox_list(struct store *s, json_t **rows, os_error *err);
/* Writes row if its resource_version is still current, then bumps it in row. */
int store_sandbox_update(struct store *s, json_t *row, os_error *err);
int store_sandbox_delete(struct store *s, const char *id, os_error *err);
/* The sandbox a create with this client_request_id made, or ENOENT. */
int store_sandbox_by_request(struct store *s, const char *request_id, json_t **row, os_error *err);
/* The sandbox whose token hashes to token_hash, or ENOENT. */
int store_sandbox_by_token(struct store *s, const char *token_hash, json_t **row, os_error *err);

/* Policy revisions: {"revision", "hash", "status": pending|loaded|failed,
 * "message", "policy", "audit_mark", "created_at"}. */
int store_policy_add(struct store *s, const char *sandbox_id, const char *hash, const char *body,
		     const char *status, const char *message, int64_t audit_mark, int64_t *revision,
		     os_error *err);
int store_policy_set_status(struct store *s, const char *sandbox_id, int64_t revision,
			    const char *status, const char *message, os_error *err);
/* latest: ENOENT when the sandbox has none. list: newest first. */
int store_policy_latest(struct store *s, const char *sandbox_id, json_t **rev, os_error *err);
int store_policy_list(struct store *s, const char *sandbox_id, json_t **revs, os_error *err);
int store_policy_delete_all(struct store *s, const char *sandbox_id, os_error *err);

/* Providers: {"name", "endpoints": [..], "credential_keys": [..], "sealed"}.
 * The sealed blob is the AES-GCM output of the credentials object. */
int store_provider_insert(struct store *s, const json_t *provider, os_error *err);
int store_provider_get(struct store *s, const char *name, json_t **provider, os_error *err);
int store_provider_list(struct store *s, json_t **providers, os_error *err);
int store_provider_delete(struct store *s, const char *name, os_error *err);

/* Small named settings (the inference route): value is JSON text. */
int store_setting_put(struct store *s, const char *key, const char *value, os_error *err);
int store_setting_get(struct store *s, const char *key, char **value, os_error *err);
int store_setting_delete(struct store *s, const char *key, os_error *err);

#endif
