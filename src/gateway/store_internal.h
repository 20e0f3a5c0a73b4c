/* store_internal.h - shared between the store's files: the handle and the
 * prepared-statement helpers. Not for use outside store*.c. */
#ifndef OS_GATEWAY_STORE_INTERNAL_H
#define OS_GATEWAY_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

struct store {
	sqlite3 *db;
};

static inline void cleanup_stmtp(sqlite3_stmt **st)
{
	if (*st)
		sqlite3_finalize(*st);
}
#define _cleanup_stmt_ __attribute__((cleanup(cleanup_stmtp)))

/* Prepares sql; the error names what was being done. */
int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, os_error *err);
/* Reports the database's last error for `what` (maps constraint to EEXIST). */
int store_fail(struct store *s, int rc, const char *what, os_error *err);
/* Column as a malloc-free borrowed string ("" for NULL). */
const char *store_col_text(sqlite3_stmt *st, int col);
/* Runs one statement that returns no rows. */
int store_exec(struct store *s, const char *sql, os_error *err);

#endif
