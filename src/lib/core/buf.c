/* buf.c - capped growable buffer (see buf.h). */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"

void buf_init(struct buf *b, size_t cap)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->cap = cap;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->alloc = 0;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

int buf_reserve(struct buf *b, size_t need, os_error *err)
{
	size_t want;
	if (!checked_add(need, 1, &want))
		return os_error_set(err, EOVERFLOW, "buffer size overflow");
	if (want <= b->alloc)
		return 0;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < want) {
		if (!checked_mul(n, 2, &n))
			return os_error_set(err, EOVERFLOW, "buffer size overflow");
	}
	if (n > b->cap + 1)
		n = b->cap + 1;
	char *p = realloc(b->data, n);
	if (!p)
		return os_error_set(err, ENOMEM, "out of memory growing buffer to %zu bytes", n);
	b->data = p;
	b->alloc = n;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t len, os_error *err)
{
	size_t need;
	if (!checked_add(b->len, len, &need) || need > b->cap)
		return os_error_set(err, EMSGSIZE, "buffer limit of %zu bytes exceeded", b->cap);
	if (buf_reserve(b, need, err) < 0)
		return -1;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len = need;
	b->data[b->len] = '\0';
	return 0;
}

int buf_append_str(struct buf *b, const char *s, os_error *err)
{
	return buf_append(b, s, strlen(s), err);
}

int buf_printf(struct buf *b, os_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return os_error_set(err, EINVAL, "bad format");
	size_t need;
	if (!checked_add(b->len, (size_t)n, &need) || need > b->cap)
		return os_error_set(err, EMSGSIZE, "buffer limit of %zu bytes exceeded", b->cap);
	if (buf_reserve(b, need, err) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len = need;
	return 0;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *buf_steal(struct buf *b)
{
	char *p = b->data;
	b->data = NULL;
	b->len = b->alloc = 0;
	return p;
}
