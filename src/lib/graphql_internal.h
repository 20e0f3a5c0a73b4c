/* graphql_internal.h - the lexer the GraphQL parser reads tokens from
 * (graphql_lex.c). Tokens point into the source; nothing is copied. */
#ifndef OS_GRAPHQL_INTERNAL_H
#define OS_GRAPHQL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

enum gq_tok { GQ_EOF = 0, GQ_PUNCT, GQ_SPREAD, GQ_NAME, GQ_INT, GQ_FLOAT, GQ_STRING };

struct gq_token {
	enum gq_tok kind;
	char punct; /* GQ_PUNCT: one of ! $ & ( ) : = @ [ ] { | } */
	const char *p; /* first byte of the token */
	size_t len;
	unsigned line;
	const char *line_start;
};

struct gq_lexer {
	const char *s, *end, *line_start;
	unsigned line;
	size_t ntok;
	struct gq_token cur;
	os_error *err;
};

/* Checks the whole source is UTF-8 without forbidden control characters
 * and reads the first token; < 0 with err set on failure. */
int gq_lex_init(struct gq_lexer *l, const char *s, size_t len, os_error *err);
/* Moves to the next token. */
int gq_next(struct gq_lexer *l);
/* "line L, column C: MESSAGE" at token t (columns count characters). */
int gq_fail(const struct gq_lexer *l, const struct gq_token *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline bool gq_is_punct(const struct gq_token *t, char c)
{
	return t->kind == GQ_PUNCT && t->punct == c;
}

#endif
