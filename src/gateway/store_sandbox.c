/* store_sandbox.c - sandbox rows and policy revisions (see store.h). Every
 * sandbox update is "UPDATE ... WHERE version = read version": two writers
 * that read the same row cannot both win. */
#include "store_internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "json.h"

#define SANDBOX_COLS                                                                               \
	"id, name, record, phase, desired, message, exit_code, version, token_hash, providers, "   \
	"created_at, client_request_id"

static json_t *sandbox_row(sqlite3_stmt *st)
{
	json_t *exit_code = sqlite3_column_type(st, 6) == SQLITE_NULL
				    ? json_null()
				    : json_integer(sqlite3_column_int64(st, 6));
	return json_pack("{s:s, s:s, s:o*, s:s, s:s, s:s, s:o, s:I, s:s, s:o*, s:I, s:s}", "id",
			 store_col_text(st, 0), "name", store_col_text(st, 1), "record",
			 json_loads(store_col_text(st, 2), 0, NULL), "phase", store_col_text(st, 3),
			 "desired", store_col_text(st, 4), "message", store_col_text(st, 5),
			 "exit_code", exit_code, "resource_version",
			 (json_int_t)sqlite3_column_int64(st, 7), "token_hash",
			 store_col_text(st, 8), "providers",
			 json_loads(store_col_text(st, 9), 0, NULL), "created_at",
			 (json_int_t)sqlite3_column_int64(st, 10), "client_request_id",
			 store_col_text(st, 11));
}

static const char *str_of(const json_t *row, const char *key)
{
	const char *v = json_string_value(json_object_get(row, key));
	return v ? v : "";
}

/* Binds the mutable columns at 1..7: record, phase, desired, message,
 * exit_code, providers, then the caller binds the rest. */
static int bind_mutable(sqlite3_stmt *st, const json_t *row, char **rec, char **prov, os_error *err)
{
	*rec = json_to_string(json_object_get(row, "record"));
	*prov = json_to_string(json_object_get(row, "providers"));
	if (!*rec || !*prov)
		return os_error_set(err, ENOMEM, "sandbox row");
	sqlite3_bind_text(st, 1, *rec, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, str_of(row, "phase"), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, str_of(row, "desired"), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, str_of(row, "message"), -1, SQLITE_STATIC);
	const json_t *ec = json_object_get(row, "exit_code");
	if (json_is_integer(ec))
		sqlite3_bind_int64(st, 5, json_integer_value(ec));
	else
		sqlite3_bind_null(st, 5);
	sqlite3_bind_text(st, 6, *prov, -1, SQLITE_STATIC);
	return 0;
}

int store_sandbox_insert(struct store *s, json_t *row, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *rec = NULL, *prov = NULL;
	if (store_prepare(
		    s,
		    "INSERT INTO sandboxes (record, phase, desired, message, exit_code,"
		    " providers, id, name, token_hash, version, created_at, client_request_id)"
		    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)",
		    &st, err) < 0 ||
	    bind_mutable(st, row, &rec, &prov, err) < 0)
		return -1;
	sqlite3_bind_text(st, 7, str_of(row, "id"), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, str_of(row, "name"), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, str_of(row, "token_hash"), -1, SQLITE_STATIC);
	time_t now = time(NULL);
	sqlite3_bind_int64(st, 10, (sqlite3_int64)now);
	sqlite3_bind_text(st, 11, str_of(row, "client_request_id"), -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		if ((rc & 0xff) == SQLITE_CONSTRAINT)
			return os_error_set(err, EEXIST, "a sandbox named \"%s\" already exists",
					    str_of(row, "name"));
		return store_fail(s, rc, "inserting a sandbox", err);
	}
	json_object_set_new(row, "resource_version", json_integer(1));
	json_object_set_new(row, "created_at", json_integer(now));
	return 0;
}

int store_sandbox_update(struct store *s, json_t *row, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *rec = NULL, *prov = NULL;
	json_int_t v = json_integer_value(json_object_get(row, "resource_version"));
	if (store_prepare(s,
			  "UPDATE sandboxes SET record = ?, phase = ?, desired = ?, message = ?,"
			  " exit_code = ?, providers = ?, version = version + 1"
			  " WHERE id = ? AND version = ?",
			  &st, err) < 0 ||
	    bind_mutable(st, row, &rec, &prov, err) < 0)
		return -1;
	sqlite3_bind_text(st, 7, str_of(row, "id"), -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, v);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		return store_fail(s, rc, "updating a sandbox", err);
	if (sqlite3_changes(s->db) == 0)
		return os_error_set(err, ESTALE,
				    "sandbox \"%s\" changed since resource version %lld was read",
				    str_of(row, "name"), (long long)v);
	json_object_set_new(row, "resource_version", json_integer(v + 1));
	return 0;
}

static int get_one(struct store *s, const char *sql, const char *key, json_t **row, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, sql, &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_bind_parameter_count(st) > 1)
		sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return os_error_set(err, ENOENT, "no sandbox \"%s\"", key);
	if (rc != SQLITE_ROW)
		return store_fail(s, rc, "reading a sandbox", err);
	*row = sandbox_row(st);
	return *row ? 0 : os_error_set(err, ENOMEM, "sandbox row");
}

int store_sandbox_get(struct store *s, const char *key, json_t **row, os_error *err)
{
	return get_one(s, "SELECT " SANDBOX_COLS " FROM sandboxes WHERE name = ? OR id = ?", key,
		       row, err);
}

int store_sandbox_by_token(struct store *s, const char *hash, json_t **row, os_error *err)
{
	return get_one(s, "SELECT " SANDBOX_COLS " FROM sandboxes WHERE token_hash = ?", hash, row,
		       err);
}

int store_sandbox_by_request(struct store *s, const char *request_id, json_t **row, os_error *err)
{
	return get_one(s,
		       "SELECT " SANDBOX_COLS " FROM sandboxes WHERE client_request_id = ?"
		       " AND client_request_id != ''",
		       request_id, row, err);
}

int store_sandbox_list(struct store *s, json_t **rows, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "SELECT " SANDBOX_COLS " FROM sandboxes ORDER BY created_at, name",
			  &st, err) < 0)
		return -1;
	json_t *arr = json_array();
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(arr, sandbox_row(st));
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		return store_fail(s, rc, "listing sandboxes", err);
	}
	*rows = arr;
	return 0;
}

int store_sandbox_delete(struct store *s, const char *id, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "DELETE FROM sandboxes WHERE id = ?", &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		return store_fail(s, rc, "deleting a sandbox", err);
	return store_policy_delete_all(s, id, err);
}

int store_policy_add(struct store *s, const char *sandbox_id, const char *hash, const char *body,
		     const char *status, const char *message, int64_t audit_mark, int64_t *revision,
		     os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s,
			  "INSERT INTO policy_revisions SELECT ?1, COALESCE(MAX(revision), 0) + 1,"
			  " ?2, ?3, ?4, ?5, ?6, ?7 FROM policy_revisions WHERE sandbox_id = ?1"
			  " RETURNING revision",
			  &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, body, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, status, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, message, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, audit_mark);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW)
		return store_fail(s, rc, "adding a policy revision", err);
	*revision = sqlite3_column_int64(st, 0);
	return 0;
}

int store_policy_set_status(struct store *s, const char *sandbox_id, int64_t revision,
			    const char *status, const char *message, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s,
			  "UPDATE policy_revisions SET status = ?, message = ?"
			  " WHERE sandbox_id = ? AND revision = ?",
			  &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, message, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, revision);
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : store_fail(s, rc, "updating a policy revision", err);
}

static json_t *policy_row(sqlite3_stmt *st)
{
	return json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:I}", "revision",
			 (json_int_t)sqlite3_column_int64(st, 0), "hash", store_col_text(st, 1),
			 "policy", store_col_text(st, 2), "status", store_col_text(st, 3),
			 "message", store_col_text(st, 4), "audit_mark",
			 (json_int_t)sqlite3_column_int64(st, 5), "created_at",
			 (json_int_t)sqlite3_column_int64(st, 6));
}

int store_policy_list(struct store *s, const char *sandbox_id, json_t **revs, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s,
			  "SELECT revision, hash, body, status, message, audit_mark, created_at"
			  " FROM policy_revisions WHERE sandbox_id = ? ORDER BY revision DESC",
			  &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
	json_t *arr = json_array();
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(arr, policy_row(st));
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		return store_fail(s, rc, "listing policy revisions", err);
	}
	*revs = arr;
	return 0;
}

int store_policy_latest(struct store *s, const char *sandbox_id, json_t **rev, os_error *err)
{
	_cleanup_json_ json_t *all = NULL;
	if (store_policy_list(s, sandbox_id, &all, err) < 0)
		return -1;
	if (json_array_size(all) == 0)
		return os_error_set(err, ENOENT, "the sandbox has no policy");
	*rev = json_incref(json_array_get(all, 0));
	return 0;
}

int store_policy_delete_all(struct store *s, const char *sandbox_id, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "DELETE FROM policy_revisions WHERE sandbox_id = ?", &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : store_fail(s, rc, "deleting policy revisions", err);
}
