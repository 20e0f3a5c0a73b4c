/* store.c - opening the SQLite database (0600, WAL), schema migrations,
 * providers and settings. Migrations only ever append: a shipped schema
 * version is never edited, so every database can be brought forward. */
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "json.h"

static const char *const migrations[] = {
	/* 1: the first schema */
	"CREATE TABLE sandboxes (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
	" record TEXT NOT NULL, phase TEXT NOT NULL, desired TEXT NOT NULL,"
	" message TEXT NOT NULL DEFAULT '', exit_code INTEGER, version INTEGER NOT NULL,"
	" token_hash TEXT NOT NULL UNIQUE, providers TEXT NOT NULL DEFAULT '[]',"
	" created_at INTEGER NOT NULL);"
	"CREATE TABLE policy_revisions (sandbox_id TEXT NOT NULL, revision INTEGER NOT NULL,"
	" hash TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,"
	" message TEXT NOT NULL DEFAULT '', audit_mark INTEGER NOT NULL DEFAULT 0,"
	" created_at INTEGER NOT NULL, PRIMARY KEY (sandbox_id, revision));"
	"CREATE TABLE providers (name TEXT PRIMARY KEY, endpoints TEXT NOT NULL,"
	" credential_keys TEXT NOT NULL, sealed TEXT NOT NULL, created_at INTEGER NOT NULL);"
	"CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
	/* 2: creates are idempotent by the client's request id */
	"ALTER TABLE sandboxes ADD COLUMN client_request_id TEXT NOT NULL DEFAULT '';"
	"CREATE INDEX sandboxes_by_request ON sandboxes (client_request_id)"
	" WHERE client_request_id != '';",
};

int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, os_error *err)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "preparing a query", err);
	return 0;
}

/* A full disk is ENOSPC whichever way SQLite met it (SQLITE_FULL, or an
 * I/O error whose system errno says so), so callers can answer 507. */
static int error_code(struct store *s, int rc)
{
	int sys = sqlite3_system_errno(s->db);
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return EEXIST;
	if ((rc & 0xff) == SQLITE_FULL || sys == ENOSPC)
		return ENOSPC;
	if (sys == EDQUOT)
		return EDQUOT;
	return EIO;
}

int store_fail(struct store *s, int rc, const char *what, os_error *err)
{
	return os_error_set(err, error_code(s, rc), "database: %s: %s", what,
			    sqlite3_errmsg(s->db));
}

const char *store_col_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? (const char *)t : "";
}

int store_exec(struct store *s, const char *sql, os_error *err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		os_error_set(err, error_code(s, rc), "database: %s",
			     msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int store_begin(struct store *s, os_error *err)
{
	return store_exec(s, "BEGIN IMMEDIATE", err);
}

int store_commit(struct store *s, os_error *err)
{
	if (store_exec(s, "COMMIT", err) < 0) {
		store_rollback(s);
		return -1;
	}
	return 0;
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		store_exec(s, "ROLLBACK", NULL);
}

static int current_version(struct store *s, int64_t *v, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &st, err) <
	    0)
		return -1;
	if (sqlite3_step(st) != SQLITE_ROW)
		return store_fail(s, SQLITE_ERROR, "reading the schema version", err);
	*v = sqlite3_column_int64(st, 0);
	return 0;
}

static int migrate(struct store *s, os_error *err)
{
	int64_t have = 0;
	if (store_exec(s,
		       "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY "
		       "KEY, applied_at INTEGER NOT NULL)",
		       err) < 0 ||
	    current_version(s, &have, err) < 0)
		return -1;
	if (have > (int64_t)ARRAY_SIZE(migrations))
		return os_error_set(err, EPROTO,
				    "database schema version %lld is newer than this gateway "
				    "(knows %zu): upgrade the gateway",
				    (long long)have, ARRAY_SIZE(migrations));
	for (size_t i = (size_t)have; i < ARRAY_SIZE(migrations); i++) {
		char mark[128];
		snprintf(mark, sizeof(mark),
			 "INSERT INTO schema_migrations VALUES (%zu, %lld); COMMIT;", i + 1,
			 (long long)time(NULL));
		if (store_exec(s, "BEGIN IMMEDIATE", err) < 0)
			return -1;
		if (store_exec(s, migrations[i], err) < 0 || store_exec(s, mark, err) < 0) {
			store_exec(s, "ROLLBACK", NULL);
			return os_error_prefix(err, "schema migration %zu", i + 1);
		}
	}
	return 0;
}

/* Creates the file 0600 ourselves: SQLite would honour the umask instead. */
static int create_private(const char *path, os_error *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return os_error_errno(err, "creating database %s", path);
	int rc = fchmod(fd, 0600);
	close(fd);
	return rc < 0 ? os_error_errno(err, "chmod 0600 %s", path) : 0;
}

int store_open(const char *path, struct store **out, os_error *err)
{
	if (create_private(path, err) < 0)
		return -1;
	struct store *s = calloc(1, sizeof(*s));
	if (!s)
		return os_error_set(err, ENOMEM, "store");
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		os_error_set(err, EIO, "opening database %s: %s", path, sqlite3_errstr(rc));
		store_close(s);
		return -1;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (store_exec(s,
		       "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
		       " PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON",
		       err) < 0 ||
	    migrate(s, err) < 0) {
		os_error_prefix(err, "%s", path);
		store_close(s);
		return -1;
	}
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	sqlite3_close(s->db);
	free(s);
}

int store_provider_insert(struct store *s, const json_t *p, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	_cleanup_free_ char *eps = json_to_string(json_object_get(p, "endpoints"));
	_cleanup_free_ char *keys = json_to_string(json_object_get(p, "credential_keys"));
	if (!eps || !keys)
		return os_error_set(err, ENOMEM, "provider");
	if (store_prepare(s, "INSERT INTO providers VALUES (?, ?, ?, ?, ?)", &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, json_string_value(json_object_get(p, "name")), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, eps, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, keys, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, json_string_value(json_object_get(p, "sealed")), -1,
			  SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : store_fail(s, rc, "inserting a provider", err);
}

static json_t *provider_row(sqlite3_stmt *st)
{
	return json_pack("{s:s, s:o*, s:o*, s:s, s:I}", "name", store_col_text(st, 0), "endpoints",
			 json_loads(store_col_text(st, 1), 0, NULL), "credential_keys",
			 json_loads(store_col_text(st, 2), 0, NULL), "sealed",
			 store_col_text(st, 3), "created_at",
			 (json_int_t)sqlite3_column_int64(st, 4));
}

int store_provider_get(struct store *s, const char *name, json_t **out, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "SELECT * FROM providers WHERE name = ?", &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return os_error_set(err, ENOENT, "no provider named \"%s\"", name);
	if (rc != SQLITE_ROW)
		return store_fail(s, rc, "reading a provider", err);
	*out = provider_row(st);
	return *out ? 0 : os_error_set(err, ENOMEM, "provider");
}

int store_provider_list(struct store *s, json_t **out, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "SELECT * FROM providers ORDER BY name", &st, err) < 0)
		return -1;
	json_t *arr = json_array();
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		json_array_append_new(arr, provider_row(st));
	if (rc != SQLITE_DONE) {
		json_decref(arr);
		return store_fail(s, rc, "listing providers", err);
	}
	*out = arr;
	return 0;
}

static int delete_by(struct store *s, const char *sql, const char *key, const char *what,
		     os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, sql, &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		return store_fail(s, rc, what, err);
	if (sqlite3_changes(s->db) == 0)
		return os_error_set(err, ENOENT, "%s: \"%s\" not found", what, key);
	return 0;
}

int store_provider_delete(struct store *s, const char *name, os_error *err)
{
	return delete_by(s, "DELETE FROM providers WHERE name = ?", name, "deleting provider", err);
}

int store_setting_put(struct store *s, const char *key, const char *value, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "INSERT OR REPLACE INTO settings VALUES (?, ?)", &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? 0 : store_fail(s, rc, "writing a setting", err);
}

int store_setting_get(struct store *s, const char *key, char **value, os_error *err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(s, "SELECT value FROM settings WHERE key = ?", &st, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return os_error_set(err, ENOENT, "%s is not set", key);
	if (rc != SQLITE_ROW)
		return store_fail(s, rc, "reading a setting", err);
	*value = strdup(store_col_text(st, 0));
	return *value ? 0 : os_error_set(err, ENOMEM, "setting");
}

int store_setting_delete(struct store *s, const char *key, os_error *err)
{
	return delete_by(s, "DELETE FROM settings WHERE key = ?", key, "deleting setting", err);
}
