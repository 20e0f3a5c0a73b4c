/* pathglob.c - `*` / `**` glob matching of absolute paths (see pathglob.h).
 * Runs as a set-of-states simulation (Thompson NFA): O(len(path) *
 * len(pattern)) worst case, never exponential backtracking on hostile paths.
 *
 * Semantics: `*` matches any run of bytes other than '/'. `**` matches any
 * run of bytes including '/'. When `**` is a whole component (a pattern
 * /a/X/b or a trailing /a/X, X standing for `**`), it also matches zero
 * components: /a/X/b matches /a/b and /a/x/y/b; /a/X matches /a, /a/ and
 * everything below /a. Every other byte matches itself; there is no escaping.
 * (Patterns are spelled with X here because star-star-slash ends a C comment.) */
#include "pathglob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Patterns up to this many bytes simulate on the stack (policy paths are
 * capped at 4096 bytes by the loader); longer ones allocate. */
#define STACK_STATES 4097
#define WORDS(n) (((n) + 63) / 64)

enum tok { TOK_LIT, TOK_STAR, TOK_DSTAR };

static enum tok tok_at(const char *p, size_t i, size_t *next)
{
	if (p[i] == '*' && p[i + 1] == '*') {
		*next = i + 2;
		return TOK_DSTAR;
	}
	*next = i + 1;
	return p[i] == '*' ? TOK_STAR : TOK_LIT;
}

static void set_bit(uint64_t *s, size_t i)
{
	s[i / 64] |= UINT64_C(1) << (i % 64);
}

/* Adds the epsilon moves. They always go forward, so one ascending pass that
 * also visits bits it adds on the way reaches the full closure. */
static void closure(const char *p, size_t m, uint64_t *s, size_t words)
{
	for (size_t w = 0; w < words; w++) {
		uint64_t seen = 0, bits;
		while ((bits = s[w] & ~seen) != 0) {
			unsigned b = (unsigned)__builtin_ctzll(bits);
			seen |= UINT64_C(1) << b;
			size_t i = w * 64 + b, next, after;
			if (i >= m)
				continue;
			enum tok t = tok_at(p, i, &next);
			if (t != TOK_LIT) {
				set_bit(s, next); /* a star may match nothing */
			} else if (p[i] == '/' && next < m &&
				   tok_at(p, next, &after) == TOK_DSTAR &&
				   (after == m || p[after] == '/')) {
				set_bit(s, after); /* whole-component `**`: zero components */
			}
		}
	}
}

/* One input byte: from every state in cur into nxt, then close nxt. */
static bool step(const char *p, size_t m, const uint64_t *cur, uint64_t *nxt, size_t words, char c)
{
	bool any = false;
	memset(nxt, 0, words * sizeof *nxt);
	for (size_t w = 0; w < words; w++) {
		for (uint64_t bits = cur[w]; bits; bits &= bits - 1) {
			size_t i = w * 64 + (unsigned)__builtin_ctzll(bits), next;
			if (i >= m)
				continue;
			enum tok t = tok_at(p, i, &next);
			if (t == TOK_DSTAR || (t == TOK_STAR && c != '/')) {
				set_bit(nxt, i); /* the star absorbs c */
				any = true;
			} else if (t == TOK_LIT && p[i] == c) {
				set_bit(nxt, next);
				any = true;
			}
		}
	}
	if (any)
		closure(p, m, nxt, words);
	return any;
}

static bool simulate(const char *p, size_t m, const char *path, uint64_t *a, uint64_t *b,
		     size_t words)
{
	memset(a, 0, words * sizeof *a);
	set_bit(a, 0);
	closure(p, m, a, words);
	for (const char *c = path; *c; c++) {
		if (!step(p, m, a, b, words, *c))
			return false;
		uint64_t *t = a;
		a = b;
		b = t;
	}
	return (a[m / 64] >> (m % 64)) & 1;
}

bool path_glob_match(const char *pattern, const char *path)
{
	size_t m = strlen(pattern);
	if (m + 1 <= STACK_STATES) {
		uint64_t a[WORDS(STACK_STATES)], b[WORDS(STACK_STATES)];
		return simulate(pattern, m, path, a, b, WORDS(m + 1));
	}
	/* Only reachable if a caller skips the loader's path cap; on ENOMEM we
	 * cannot decide, and report no match. */
	uint64_t *a = calloc(WORDS(m + 1), sizeof *a), *b = calloc(WORDS(m + 1), sizeof *b);
	bool r = a && b && simulate(pattern, m, path, a, b, WORDS(m + 1));
	free(a);
	free(b);
	return r;
}

bool path_glob_is_literal(const char *pattern)
{
	return strchr(pattern, '*') == NULL;
}

/* `*` matches any run of bytes; everything else literally. */
bool glob_star_match(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*pat == '*') {
			star = pat++;
			resume = s;
		} else if (*pat == *s) {
			pat++;
			s++;
		} else if (star) {
			pat = star + 1;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}
