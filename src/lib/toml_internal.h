/* toml_internal.h - shared between the toml_*.c files only: the byte cursor,
 * the value constructors and the scanners. Nothing outside src/lib/toml_*.c
 * includes this; the public surface is toml.h. */
#ifndef OS_TOML_INTERNAL_H
#define OS_TOML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "toml.h"

/* Table flags: how a table came to exist decides what may extend it later. */
#define TOML_F_IMPLICIT 0x01 /* created as a parent by a [a.b] header */
#define TOML_F_HEADER 0x02 /* defined by a [header] or [[header]] */
#define TOML_F_DOTTED 0x04 /* created by a dotted key */
#define TOML_F_FROZEN 0x08 /* inline table or static array: immutable */
#define TOML_F_AOT 0x10 /* array created by [[header]] */

struct toml_cur {
	const char *p;
	size_t len;
	size_t i;
	uint32_t line;
	size_t line_start; /* offset of the first byte of the current line */
	const char *file;
	os_error *err;
};

static inline bool cur_eof(const struct toml_cur *c)
{
	return c->i >= c->len;
}
/* The byte at i + off, or 0 past the end (callers never treat 0 as valid). */
static inline unsigned char cur_at(const struct toml_cur *c, size_t off)
{
	return c->i + off < c->len ? (unsigned char)c->p[c->i + off] : 0;
}
static inline struct toml_pos cur_pos(const struct toml_cur *c)
{
	struct toml_pos pos = { c->line, (uint32_t)(c->i - c->line_start + 1) };
	return pos;
}
/* Advances one byte, keeping line accounting right. */
static inline void cur_next(struct toml_cur *c)
{
	if (c->p[c->i] == '\n') {
		c->line++;
		c->line_start = c->i + 1;
	}
	c->i++;
}

/* Error at pos / at the cursor; both return -1. */
int toml_fail_at(struct toml_cur *c, struct toml_pos pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int toml_fail(struct toml_cur *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* toml_scan.c: whitespace, comments, newlines, strings, keys. */
int toml_check_utf8(struct toml_cur *c);
/* Names the byte at the cursor for error messages ("'x'", "end of line"). */
const char *toml_describe(const struct toml_cur *c, char *tmp, size_t cap);
void toml_skip_ws(struct toml_cur *c);
/* Skips whitespace, comments and newlines (inside arrays). */
int toml_skip_ws_comments_newlines(struct toml_cur *c);
/* After an expression: optional whitespace and comment, then newline or EOF. */
int toml_expect_eol(struct toml_cur *c);
/* Parses any of the four string kinds starting at the cursor; allow_multi
 * false rejects the multi-line ones (keys). *out is malloc'd, NUL-terminated. */
int toml_scan_string(struct toml_cur *c, bool allow_multi, char **out, size_t *out_len);

struct toml_key_seg {
	char *s;
	size_t len;
	struct toml_pos pos;
};
struct toml_key {
	struct toml_key_seg seg[TOML_MAX_DEPTH];
	size_t n;
};
/* Parses a (possibly dotted) key; on failure nothing is left to free. */
int toml_scan_key(struct toml_cur *c, struct toml_key *key);
void toml_key_free(struct toml_key *key);

/* toml_scalar.c: numbers, booleans and date-times. */
int toml_scan_scalar(struct toml_cur *c, struct toml_value *v);

/* toml_value.c: constructors and table operations. */
struct toml_value *toml_value_new(enum toml_type type, struct toml_pos pos);
/* Appends (key, value) to table t, taking ownership of both on success. */
int toml_table_add(struct toml_value *t, char *key, size_t key_len, struct toml_pos pos,
		   struct toml_value *value);
struct toml_value *toml_table_lookup(struct toml_value *t, const char *key, size_t key_len);
int toml_array_push(struct toml_value *a, struct toml_value *item);
/* Marks v and everything below it immutable. */
void toml_freeze(struct toml_value *v);

#endif
