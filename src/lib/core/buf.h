/* buf.h - growable byte buffer with a named cap.
 * Going over the cap is an error (EMSGSIZE), never a silent resize. */
#ifndef OS_BUF_H
#define OS_BUF_H

#include <stddef.h>

#include "error.h"

struct buf {
	char *data; /* always NUL-terminated when non-NULL (not counted in len) */
	size_t len;
	size_t alloc;
	size_t cap; /* maximum len */
};

void buf_init(struct buf *b, size_t cap);
void buf_free(struct buf *b);
void buf_reset(struct buf *b);
/* Room for a len of need (within the cap is the caller's care): appends up
 * to it then never allocate, so they cannot fail part way. */
int buf_reserve(struct buf *b, size_t need, os_error *err);
int buf_append(struct buf *b, const void *data, size_t len, os_error *err);
int buf_append_str(struct buf *b, const char *s, os_error *err);
int buf_printf(struct buf *b, os_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Removes the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Transfers the data to the caller (free() it); the buffer becomes empty. */
char *buf_steal(struct buf *b);

static inline void cleanup_bufp(struct buf *b)
{
	buf_free(b);
}
#define _cleanup_buf_ __attribute__((cleanup(cleanup_bufp)))

#endif
