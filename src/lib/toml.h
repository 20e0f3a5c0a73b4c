/* toml.h - a strict TOML 1.0.0 parser producing a read-only value tree in
 * which every key and value remembers its line and column. It never accepts
 * input the specification rejects and never reads past the (capped) input. */
#ifndef OS_TOML_H
#define OS_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Largest document accepted (bytes); larger input is an error, not truncated. */
#define TOML_MAX_INPUT (4u << 20)
/* Deepest tree accepted: tables, arrays and dotted-key levels all count. */
#define TOML_MAX_DEPTH 64

enum toml_type {
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_DATETIME, /* offset date-time */
	TOML_DATETIME_LOCAL,
	TOML_DATE_LOCAL,
	TOML_TIME_LOCAL,
};

/* 1-based; the column counts bytes from the start of the line. */
struct toml_pos {
	uint32_t line;
	uint32_t col;
};

struct toml_datetime {
	int year, month, day; /* 0 for a local time */
	int hour, minute, second; /* 0 for a local date */
	uint32_t nanosecond;
	uint8_t frac_digits; /* fraction digits written (at most 9 kept) */
	bool offset_z; /* written as Z; offset_minutes is then 0 */
	int offset_minutes; /* offset date-times only: east of UTC */
};

struct toml_value;

struct toml_entry {
	char *key; /* NUL-terminated; may also contain NUL (see key_len) */
	size_t key_len;
	struct toml_pos pos; /* where the key was written */
	struct toml_value *value;
};

struct toml_value {
	enum toml_type type;
	struct toml_pos pos; /* where the value (or table header) starts */
	uint8_t flags; /* parser bookkeeping (TOML_F_*), see toml_internal.h */
	uint16_t depth; /* 0 for the root table */
	union {
		struct {
			char *s; /* NUL-terminated; may also contain NUL (see len) */
			size_t len;
		} str;
		int64_t integer;
		double flt;
		bool boolean;
		struct toml_datetime dt;
		struct {
			struct toml_entry *entries; /* in document order */
			size_t len, alloc;
			uint32_t *index; /* hash index over entries (NULL when small) */
			size_t index_cap;
		} table;
		struct {
			struct toml_value **items;
			size_t len, alloc;
		} array;
	} u;
};

/* Parses len bytes of TOML. file names the source in error messages, which
 * read "FILE:LINE:COL: message". Returns the root table, or NULL with err set. */
struct toml_value *toml_parse(const char *data, size_t len, const char *file, os_error *err);
/* Reads (at most TOML_MAX_INPUT bytes of) path and parses it. */
struct toml_value *toml_parse_file(const char *path, os_error *err);
void toml_free(struct toml_value *v);

static inline void cleanup_toml_freep(struct toml_value **v)
{
	toml_free(*v);
}
#define _cleanup_toml_ __attribute__((cleanup(cleanup_toml_freep)))

/* Looks key up in a table; NULL when absent or when t is not a table. */
const struct toml_entry *toml_table_find(const struct toml_value *t, const char *key,
					 size_t key_len);
const struct toml_value *toml_table_get(const struct toml_value *t, const char *key);

/* "table", "array", "string", "integer", "float", "bool", "datetime",
 * "datetime-local", "date-local", "time-local" (toml-test's names). */
const char *toml_type_name(enum toml_type type);

/* Writes the RFC 3339 form of a date/time value of the given type into
 * out[cap] (at least 40 bytes suffice). */
int toml_datetime_format(const struct toml_datetime *dt, enum toml_type type, char *out, size_t cap,
			 os_error *err);

#endif
