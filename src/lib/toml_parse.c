/* toml_parse.c - the TOML document grammar: expressions, [table] and
 * [[array]] headers, key/value pairs, arrays and inline tables, and the rules
 * on which tables may be defined or extended. Never builds a tree deeper than
 * TOML_MAX_DEPTH, so recursion over the result is bounded. */
#include "toml_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"

struct parser {
	struct toml_cur c;
	struct toml_value *root;
	struct toml_value *current; /* table that key/value lines go into */
};

static int parse_value(struct toml_cur *c, unsigned depth, struct toml_value **out);

/* Writes key parts [0, n) as a printable dotted name into out[cap]. */
static const char *key_name(const struct toml_key *key, size_t n, char *out, size_t cap)
{
	size_t w = 0;
	for (size_t i = 0; i < n && w + 8 < cap; i++) {
		if (i > 0)
			out[w++] = '.';
		for (size_t k = 0; k < key->seg[i].len && w + 8 < cap; k++) {
			unsigned char ch = (unsigned char)key->seg[i].s[k];
			if (ch >= 0x20 && ch != 0x7F)
				out[w++] = (char)ch;
			else
				w += (size_t)snprintf(out + w, cap - w, "\\x%02X", ch);
		}
	}
	out[w] = '\0';
	return out;
}

static int oom(struct toml_cur *c)
{
	return os_error_set(c->err, ENOMEM, "%s: out of memory", c->file);
}

static int check_depth(struct toml_cur *c, struct toml_pos pos, unsigned depth)
{
	if (depth > TOML_MAX_DEPTH)
		return toml_fail_at(c, pos, "nesting deeper than %d levels", TOML_MAX_DEPTH);
	return 0;
}

/* Adds a new empty table under key part i of key to t. */
static struct toml_value *add_table(struct toml_cur *c, struct toml_value *t, struct toml_key *key,
				    size_t i, uint8_t flags)
{
	struct toml_key_seg *seg = &key->seg[i];
	if (check_depth(c, seg->pos, t->depth + 1u) < 0)
		return NULL;
	struct toml_value *child = toml_value_new(TOML_TABLE, seg->pos);
	if (!child || toml_table_add(t, seg->s, seg->len, seg->pos, child) < 0) {
		free(child);
		oom(c);
		return NULL;
	}
	seg->s = NULL; /* the table entry owns the key now */
	child->flags = flags;
	child->depth = (uint16_t)(t->depth + 1);
	return child;
}

/* "an inline table", "a static array", "an integer"... for messages. */
static const char *kind(const struct toml_value *v)
{
	switch (v->type) {
	case TOML_TABLE:
		return (v->flags & TOML_F_FROZEN) ? "an inline table" : "a table";
	case TOML_ARRAY:
		return (v->flags & TOML_F_AOT) ? "an array of tables" : "a static array";
	case TOML_STRING:
		return "a string";
	case TOML_INTEGER:
		return "an integer";
	case TOML_FLOAT:
		return "a float";
	case TOML_BOOL:
		return "a boolean";
	case TOML_DATETIME:
		return "a date-time";
	case TOML_DATETIME_LOCAL:
		return "a local date-time";
	case TOML_DATE_LOCAL:
		return "a local date";
	case TOML_TIME_LOCAL:
		return "a local time";
	}
	return "a value";
}

static int not_a_table(struct toml_cur *c, const struct toml_key *key, size_t i,
		       const struct toml_value *v)
{
	char name[256];
	key_name(key, i + 1, name, sizeof name);
	if (v->type == TOML_TABLE && (v->flags & TOML_F_FROZEN))
		return toml_fail_at(c, key->seg[i].pos, "inline table '%s' cannot be extended",
				    name);
	if (v->type == TOML_TABLE)
		return toml_fail_at(c, key->seg[i].pos,
				    "table '%s' was defined at %u:%u and cannot be extended by a "
				    "dotted key",
				    name, v->pos.line, v->pos.col);
	return toml_fail_at(c, key->seg[i].pos, "'%s' is %s (at %u:%u), not a table", name, kind(v),
			    v->pos.line, v->pos.col);
}

/* Stores value under a (possibly dotted) key relative to table t. On
 * success value is owned by the tree; on failure the caller still owns it. */
static int insert_keyval(struct toml_cur *c, struct toml_value *t, struct toml_key *key,
			 struct toml_value *value)
{
	char name[256];
	for (size_t i = 0; i + 1 < key->n; i++) {
		struct toml_value *child = toml_table_lookup(t, key->seg[i].s, key->seg[i].len);
		if (!child)
			child = add_table(c, t, key, i, TOML_F_DOTTED);
		else if (child->type != TOML_TABLE || !(child->flags & TOML_F_DOTTED) ||
			 (child->flags & TOML_F_FROZEN))
			return not_a_table(c, key, i, child);
		if (!child)
			return -1;
		t = child;
	}
	struct toml_key_seg *last = &key->seg[key->n - 1];
	const struct toml_entry *dup = toml_table_find(t, last->s, last->len);
	if (dup)
		return toml_fail_at(c, last->pos, "duplicate key '%s' (first defined at %u:%u)",
				    key_name(key, key->n, name, sizeof name), dup->pos.line,
				    dup->pos.col);
	if (toml_table_add(t, last->s, last->len, last->pos, value) < 0)
		return oom(c);
	last->s = NULL;
	return 0;
}

/* key = value, up to (not including) what follows the value. */
static int parse_keyval(struct toml_cur *c, struct toml_value *t)
{
	char tmp[16];
	struct toml_key key;
	struct toml_value *value = NULL;
	if (toml_scan_key(c, &key) < 0)
		return -1;
	int rc = -1;
	toml_skip_ws(c);
	if (cur_at(c, 0) != '=') {
		toml_fail(c, "expected '=' after a key, found %s",
			  toml_describe(c, tmp, sizeof tmp));
		goto out;
	}
	c->i++;
	toml_skip_ws(c);
	if (parse_value(c, t->depth + (unsigned)key.n, &value) < 0)
		goto out;
	rc = insert_keyval(c, t, &key, value);
	if (rc < 0)
		toml_free(value);
out:
	toml_key_free(&key);
	return rc;
}

static int parse_array(struct toml_cur *c, struct toml_value *a)
{
	char tmp[16];
	c->i++; /* '[' */
	for (;;) {
		if (toml_skip_ws_comments_newlines(c) < 0)
			return -1;
		if (cur_at(c, 0) == ']')
			break;
		struct toml_value *item = NULL;
		if (parse_value(c, a->depth + 1u, &item) < 0)
			return -1;
		if (toml_array_push(a, item) < 0) {
			toml_free(item);
			return oom(c);
		}
		if (toml_skip_ws_comments_newlines(c) < 0)
			return -1;
		if (cur_at(c, 0) == ',') {
			c->i++;
			continue;
		}
		if (cur_at(c, 0) != ']')
			return toml_fail(c, "expected ',' or ']' in an array, found %s",
					 toml_describe(c, tmp, sizeof tmp));
		break;
	}
	c->i++; /* ']' */
	return 0;
}

/* Inline tables are single-line, have no trailing comma and are immutable. */
static int parse_inline_table(struct toml_cur *c, struct toml_value *t)
{
	char tmp[16];
	c->i++; /* '{' */
	toml_skip_ws(c);
	if (cur_at(c, 0) == '}') {
		c->i++;
		return 0;
	}
	for (;;) {
		if (parse_keyval(c, t) < 0)
			return -1;
		toml_skip_ws(c);
		if (cur_at(c, 0) == '}')
			break;
		if (cur_at(c, 0) != ',')
			return toml_fail(c, "expected ',' or '}' in an inline table, found %s",
					 toml_describe(c, tmp, sizeof tmp));
		c->i++;
		toml_skip_ws(c);
		if (cur_at(c, 0) == '}')
			return toml_fail(c, "trailing comma in an inline table");
	}
	c->i++; /* '}' */
	return 0;
}

static int parse_value(struct toml_cur *c, unsigned depth, struct toml_value **out)
{
	char tmp[16];
	struct toml_pos pos = cur_pos(c);
	unsigned char ch = cur_at(c, 0);
	if (check_depth(c, pos, depth) < 0)
		return -1;
	if (cur_eof(c) || ch == '\n' || ch == '\r' || ch == '#')
		return toml_fail(c, "expected a value, found %s",
				 toml_describe(c, tmp, sizeof tmp));
	/* Scalars start as a type that owns no memory, so that freeing a value
	 * that failed half-way never frees a union member it does not hold. */
	enum toml_type type = ch == '[' ? TOML_ARRAY : ch == '{' ? TOML_TABLE : TOML_BOOL;
	if (ch == '"' || ch == '\'')
		type = TOML_STRING;
	struct toml_value *v = toml_value_new(type, pos);
	if (!v)
		return oom(c);
	v->depth = (uint16_t)depth;
	int rc;
	if (ch == '"' || ch == '\'') {
		rc = toml_scan_string(c, true, &v->u.str.s, &v->u.str.len);
	} else if (ch == '[') {
		v->flags = TOML_F_FROZEN; /* static arrays cannot be extended by [[...]] */
		rc = parse_array(c, v);
	} else if (ch == '{') {
		rc = parse_inline_table(c, v);
		if (rc == 0)
			toml_freeze(v);
	} else {
		rc = toml_scan_scalar(c, v);
	}
	if (rc < 0) {
		toml_free(v);
		return -1;
	}
	*out = v;
	return 0;
}

/* Walks the parents of a header, creating implicit tables as needed; the
 * last element of an array of tables stands for the array. */
static struct toml_value *header_parent(struct toml_cur *c, struct toml_value *t,
					struct toml_key *key)
{
	for (size_t i = 0; i + 1 < key->n; i++) {
		struct toml_value *child = toml_table_lookup(t, key->seg[i].s, key->seg[i].len);
		if (!child) {
			child = add_table(c, t, key, i, TOML_F_IMPLICIT);
			if (!child)
				return NULL;
		} else if (child->type == TOML_ARRAY && (child->flags & TOML_F_AOT)) {
			child = child->u.array.items[child->u.array.len - 1];
		} else if (child->type != TOML_TABLE || (child->flags & TOML_F_FROZEN)) {
			not_a_table(c, key, i, child);
			return NULL;
		}
		t = child;
	}
	return t;
}

static struct toml_value *define_table(struct toml_cur *c, struct toml_value *t,
				       struct toml_key *key, struct toml_pos pos)
{
	char name[256];
	size_t last = key->n - 1;
	struct toml_value *v = toml_table_lookup(t, key->seg[last].s, key->seg[last].len);
	if (!v) {
		v = add_table(c, t, key, last, TOML_F_HEADER);
		if (v)
			v->pos = pos;
		return v;
	}
	key_name(key, key->n, name, sizeof name);
	if (v->type == TOML_TABLE && v->flags == TOML_F_IMPLICIT) {
		v->flags = TOML_F_HEADER;
		v->pos = pos;
		return v;
	}
	if (v->type == TOML_TABLE && (v->flags & TOML_F_DOTTED))
		toml_fail_at(c, pos, "table '%s' was already defined by dotted keys at %u:%u", name,
			     v->pos.line, v->pos.col);
	else if (v->type == TOML_TABLE && !(v->flags & TOML_F_FROZEN))
		toml_fail_at(c, pos, "table '%s' is already defined at %u:%u", name, v->pos.line,
			     v->pos.col);
	else
		toml_fail_at(c, pos, "cannot define table '%s': it is %s (at %u:%u)", name, kind(v),
			     v->pos.line, v->pos.col);
	return NULL;
}

static struct toml_value *define_array_table(struct toml_cur *c, struct toml_value *t,
					     struct toml_key *key, struct toml_pos pos)
{
	char name[256];
	size_t last = key->n - 1;
	struct toml_value *arr = toml_table_lookup(t, key->seg[last].s, key->seg[last].len);
	if (!arr) {
		if (check_depth(c, pos, t->depth + 2u) < 0)
			return NULL;
		arr = toml_value_new(TOML_ARRAY, pos);
		if (!arr || toml_table_add(t, key->seg[last].s, key->seg[last].len,
					   key->seg[last].pos, arr) < 0) {
			free(arr);
			oom(c);
			return NULL;
		}
		key->seg[last].s = NULL;
		arr->flags = TOML_F_AOT;
		arr->depth = (uint16_t)(t->depth + 1);
	} else if (arr->type != TOML_ARRAY || !(arr->flags & TOML_F_AOT)) {
		toml_fail_at(c, pos, "cannot define array of tables '%s': it is %s (at %u:%u)",
			     key_name(key, key->n, name, sizeof name), kind(arr), arr->pos.line,
			     arr->pos.col);
		return NULL;
	}
	struct toml_value *elem = toml_value_new(TOML_TABLE, pos);
	if (!elem || toml_array_push(arr, elem) < 0) {
		free(elem);
		oom(c);
		return NULL;
	}
	elem->flags = TOML_F_HEADER;
	elem->depth = (uint16_t)(arr->depth + 1);
	return elem;
}

static int parse_header(struct parser *ps)
{
	struct toml_cur *c = &ps->c;
	struct toml_pos pos = cur_pos(c);
	bool aot = cur_at(c, 1) == '[';
	struct toml_key key;
	c->i += aot ? 2 : 1;
	if (toml_scan_key(c, &key) < 0)
		return -1;
	int rc = -1;
	if (cur_at(c, 0) != ']' || (aot && cur_at(c, 1) != ']')) {
		toml_fail(c, "expected '%s' to close the table header", aot ? "]]" : "]");
		goto out;
	}
	c->i += aot ? 2 : 1;
	if (toml_expect_eol(c) < 0)
		goto out;
	struct toml_value *parent = header_parent(c, ps->root, &key);
	if (!parent)
		goto out;
	struct toml_value *t =
		aot ? define_array_table(c, parent, &key, pos) : define_table(c, parent, &key, pos);
	if (!t)
		goto out;
	ps->current = t;
	rc = 0;
out:
	toml_key_free(&key);
	return rc;
}

static int parse_document(struct parser *ps)
{
	struct toml_cur *c = &ps->c;
	if (toml_check_utf8(c) < 0)
		return -1;
	for (;;) {
		if (toml_skip_ws_comments_newlines(c) < 0)
			return -1;
		if (cur_eof(c))
			return 0;
		if (cur_at(c, 0) == '[') {
			if (parse_header(ps) < 0)
				return -1;
			continue;
		}
		if (parse_keyval(c, ps->current) < 0 || toml_expect_eol(c) < 0)
			return -1;
	}
}

struct toml_value *toml_parse(const char *data, size_t len, const char *file, os_error *err)
{
	struct parser ps = { 0 };
	if (!file)
		file = "<input>";
	if (len > TOML_MAX_INPUT) {
		os_error_set(err, EFBIG, "%s: document is larger than %u bytes", file,
			     TOML_MAX_INPUT);
		return NULL;
	}
	ps.c = (struct toml_cur){ .p = data, .len = len, .line = 1, .file = file, .err = err };
	ps.root = toml_value_new(TOML_TABLE, (struct toml_pos){ 1, 1 });
	if (!ps.root) {
		os_error_set(err, ENOMEM, "%s: out of memory", file);
		return NULL;
	}
	ps.root->flags = TOML_F_HEADER;
	ps.current = ps.root;
	if (parse_document(&ps) < 0) {
		toml_free(ps.root);
		return NULL;
	}
	return ps.root;
}

struct toml_value *toml_parse_file(const char *path, os_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	_cleanup_buf_ struct buf b;
	char chunk[65536];
	buf_init(&b, TOML_MAX_INPUT);
	if (fd < 0) {
		os_error_errno(err, "opening %s", path);
		return NULL;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			os_error_errno(err, "reading %s", path);
			return NULL;
		}
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n, err) < 0) {
			os_error_set(err, EFBIG, "%s: document is larger than %u bytes", path,
				     TOML_MAX_INPUT);
			return NULL;
		}
	}
	return toml_parse(b.data ? b.data : "", b.len, path, err);
}
