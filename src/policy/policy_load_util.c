/* policy_load_util.c - the loader's error collection and typed accessors.
 * Must never echo more than a short, escaped excerpt of a value in a message
 * (a policy field can be 64 KiB of anything). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "policy_load_int.h"

size_t kp_push(struct lctx *c, const char *fmt, ...)
{
	size_t old = c->plen;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(c->path + c->plen, sizeof c->path - c->plen, fmt, ap);
	va_end(ap);
	if (n > 0)
		c->plen += (size_t)n < sizeof c->path - c->plen ? (size_t)n
								: sizeof c->path - c->plen - 1;
	return old;
}

void kp_pop(struct lctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

void lerr_oom(struct lctx *c)
{
	if (!c->oom)
		os_error_set(c->err, ENOMEM, "%s: out of memory", c->file);
	c->oom = true;
	c->failed = true;
}

static void record(struct lctx *c, const char *msg)
{
	if (!c->failed)
		os_error_set(c->err, EINVAL, "%s", msg);
	c->failed = true;
	if (!c->diag || c->diag->n >= POLICY_MAX_ERRORS)
		return;
	char **v = reallocarray(c->diag->msgs, c->diag->n + 1, sizeof *v);
	if (!v)
		return;
	c->diag->msgs = v;
	v[c->diag->n] = strdup(msg);
	if (v[c->diag->n])
		c->diag->n++;
}

/* "FILE:LINE:COL: [tag]key.path: body" into msg. */
__attribute__((format(printf, 6, 0))) static void format_at(struct lctx *c, const struct ynode *n,
							    const char *tag, char *msg, size_t cap,
							    const char *fmt, va_list ap)
{
	char body[512];
	vsnprintf(body, sizeof body, fmt, ap);
	unsigned line = n ? n->line : 1, col = n ? n->col : 1;
	if (c->plen)
		snprintf(msg, cap, "%s:%u:%u: %s%s: %s", c->file, line, col, tag, c->path, body);
	else
		snprintf(msg, cap, "%s:%u:%u: %s%s", c->file, line, col, tag, body);
}

void lerr(struct lctx *c, const struct ynode *n, const char *fmt, ...)
{
	char msg[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	format_at(c, n, "", msg, sizeof msg, fmt, ap);
	va_end(ap);
	record(c, msg);
}

void lwarn(struct lctx *c, const struct ynode *n, const char *fmt, ...)
{
	struct policy_doc *d = c->doc;
	if (d->n_warnings >= POLICY_MAX_WARNINGS) {
		d->n_warnings_dropped++;
		return;
	}
	char msg[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	format_at(c, n, "warning: ", msg, sizeof msg, fmt, ap);
	va_end(ap);
	char **v = reallocarray(d->warnings, d->n_warnings + 1, sizeof *v);
	if (!v) {
		lerr_oom(c);
		return;
	}
	d->warnings = v;
	if (!(v[d->n_warnings] = strdup(msg))) {
		lerr_oom(c);
		return;
	}
	d->n_warnings++;
}

/* Short, quoted, escaped excerpt of a scalar for messages. */
static void describe(const struct ynode *n, char *out, size_t cap)
{
	if (!n || n->kind != YNODE_SCALAR || ynode_is_null(n)) {
		snprintf(out, cap, "%s", ynode_kind_name(n));
		return;
	}
	size_t o = 0;
	out[o++] = '"';
	for (size_t i = 0; i < n->scalar.len && o + 6 < cap; i++) {
		unsigned char ch = (unsigned char)n->scalar.value[i];
		if (i == 40) {
			o += (size_t)snprintf(out + o, cap - o, "...");
			break;
		}
		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
		else
			out[o++] = (char)ch;
	}
	out[o++] = '"';
	out[o] = '\0';
}

void lerr_expected(struct lctx *c, const struct ynode *n, const char *what)
{
	char got[128];
	describe(n, got, sizeof got);
	lerr(c, n, "expected %s, got %s", what, got);
}

void check_keys(struct lctx *c, const struct ynode *map, const char *const allowed[])
{
	for (size_t i = 0; i < map->map.n; i++) {
		const struct ynode *k = map->map.pairs[i].key;
		bool ok = false;
		for (size_t j = 0; allowed[j] && !ok; j++)
			ok = strcmp(allowed[j], k->scalar.value) == 0;
		if (ok)
			continue;
		char list[256] = "";
		size_t o = 0;
		for (size_t j = 0; allowed[j] && o < sizeof list; j++)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "",
					      allowed[j]);
		size_t old = kp_push(c, "%s%.64s", c->plen ? "." : "", k->scalar.value);
		lerr(c, k, "unknown key (expected one of: %s)", list);
		kp_pop(c, old);
	}
}

bool want_map(struct lctx *c, const struct ynode *n)
{
	if (n && n->kind == YNODE_MAPPING)
		return true;
	lerr_expected(c, n, "a mapping");
	return false;
}

bool want_seq(struct lctx *c, const struct ynode *n, bool nonempty)
{
	if (!n || n->kind != YNODE_SEQUENCE) {
		lerr_expected(c, n, "a sequence");
		return false;
	}
	if (nonempty && n->seq.n == 0) {
		lerr(c, n, "expected a non-empty sequence, got []");
		return false;
	}
	return true;
}

bool get_str(struct lctx *c, const struct ynode *n, const char *what, const char **out)
{
	if (!n || n->kind != YNODE_SCALAR || ynode_is_null(n)) {
		lerr_expected(c, n, what);
		return false;
	}
	*out = n->scalar.value;
	return true;
}

bool get_bool(struct lctx *c, const struct ynode *n, bool *out)
{
	/* YAML 1.1 spellings (yes/on/True) and quoted booleans are refused:
	 * one spelling, one meaning. */
	if (n && n->kind == YNODE_SCALAR && n->scalar.style == YSCALAR_PLAIN) {
		if (!strcmp(n->scalar.value, "true") || !strcmp(n->scalar.value, "false")) {
			*out = n->scalar.value[0] == 't';
			return true;
		}
	}
	lerr_expected(c, n, "true or false");
	return false;
}

bool get_uint(struct lctx *c, const struct ynode *n, uint64_t min, uint64_t max, const char *what,
	      uint64_t *out)
{
	if (n && n->kind == YNODE_SCALAR && n->scalar.style == YSCALAR_PLAIN && n->scalar.len &&
	    n->scalar.len <= 20 &&
	    parse_u64(n->scalar.value, n->scalar.len, min, max, out, NULL) == 0)
		return true;
	lerr_expected(c, n, what);
	return false;
}

char *ldup(struct lctx *c, const char *s)
{
	char *p = strdup(s);
	if (!p)
		lerr_oom(c);
	return p;
}
