/* yamltree.c - builds a ytree from libyaml events (see yamltree.h).
 * Must never return a partial tree, recurse deeper than YTREE_MAX_DEPTH, or
 * accept a YAML feature (anchor, alias, tag) that could change meaning or size. */
#include "yamltree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

struct frame {
	struct ynode *node;
	size_t cap;
};

struct builder {
	const char *name;
	struct ytree *tree;
	struct frame stack[YTREE_MAX_DEPTH];
	size_t depth;
	size_t docs;
};

static int at(os_error *err, const struct builder *b, yaml_mark_t m, const char *msg)
{
	return os_error_set(err, EINVAL, "%s:%zu:%zu: %s", b->name, m.line + 1, m.column + 1, msg);
}

static void node_free(struct ynode *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case YNODE_SCALAR:
		free(n->scalar.value);
		break;
	case YNODE_SEQUENCE:
		for (size_t i = 0; i < n->seq.n; i++)
			node_free(n->seq.items[i]);
		free(n->seq.items);
		break;
	case YNODE_MAPPING:
		for (size_t i = 0; i < n->map.n; i++) {
			node_free(n->map.pairs[i].key);
			node_free(n->map.pairs[i].value);
		}
		free(n->map.pairs);
		break;
	}
	free(n);
}

void ytree_free(struct ytree *t)
{
	if (!t)
		return;
	node_free(t->root);
	free(t);
}

/* Grows a collection's array by one slot; the tree owns n from here on. */
static int attach(struct builder *b, struct ynode *n, yaml_mark_t m, os_error *err)
{
	if (b->depth == 0) {
		b->tree->root = n;
		return 0;
	}
	struct frame *f = &b->stack[b->depth - 1];
	struct ynode *p = f->node;
	if (p->kind == YNODE_SEQUENCE) {
		if (p->seq.n == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 4;
			struct ynode **items = reallocarray(p->seq.items, cap, sizeof *items);
			if (!items) {
				node_free(n);
				return os_error_set(err, ENOMEM, "out of memory");
			}
			p->seq.items = items;
			f->cap = cap;
		}
		p->seq.items[p->seq.n++] = n;
		return 0;
	}
	bool is_key = p->map.n == 0 || p->map.pairs[p->map.n - 1].value;
	if (!is_key) {
		p->map.pairs[p->map.n - 1].value = n;
		return 0;
	}
	if (n->kind != YNODE_SCALAR || ynode_is_null(n)) {
		node_free(n);
		return at(err, b, m, "mapping keys must be non-empty strings");
	}
	if (p->map.n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 4;
		struct ypair *pairs = reallocarray(p->map.pairs, cap, sizeof *pairs);
		if (!pairs) {
			node_free(n);
			return os_error_set(err, ENOMEM, "out of memory");
		}
		p->map.pairs = pairs;
		f->cap = cap;
	}
	p->map.pairs[p->map.n++] = (struct ypair){ .key = n, .value = NULL };
	return 0;
}

static struct ynode *node_new(struct builder *b, enum ynode_kind kind, yaml_mark_t m, os_error *err)
{
	if (b->tree->n_nodes >= YTREE_MAX_NODES) {
		at(err, b, m, "too many nodes (limit 262144)");
		return NULL;
	}
	struct ynode *n = calloc(1, sizeof *n);
	if (!n) {
		os_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	n->kind = kind;
	n->line = (unsigned)m.line + 1;
	n->col = (unsigned)m.column + 1;
	b->tree->n_nodes++;
	return n;
}

static int on_scalar(struct builder *b, const yaml_event_t *ev, os_error *err)
{
	size_t len = ev->data.scalar.length;
	if (len > YTREE_MAX_SCALAR)
		return at(err, b, ev->start_mark, "scalar longer than 65536 bytes");
	if (memchr(ev->data.scalar.value, '\0', len))
		return at(err, b, ev->start_mark, "scalar contains a NUL byte");
	struct ynode *n = node_new(b, YNODE_SCALAR, ev->start_mark, err);
	if (!n)
		return -1;
	n->scalar.value = str_ndup((const char *)ev->data.scalar.value, len);
	if (!n->scalar.value) {
		free(n);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	n->scalar.len = len;
	n->scalar.style =
		ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? YSCALAR_PLAIN : YSCALAR_QUOTED;
	return attach(b, n, ev->start_mark, err);
}

static int on_start(struct builder *b, const yaml_event_t *ev, enum ynode_kind kind, os_error *err)
{
	if (b->depth >= YTREE_MAX_DEPTH)
		return at(err, b, ev->start_mark, "nesting deeper than 64 levels");
	struct ynode *n = node_new(b, kind, ev->start_mark, err);
	if (!n)
		return -1;
	if (attach(b, n, ev->start_mark, err) < 0)
		return -1;
	b->stack[b->depth++] = (struct frame){ .node = n, .cap = 0 };
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct ypair *const *x = a, *const *y = b;
	int c = strcmp((*x)->key->scalar.value, (*y)->key->scalar.value);
	if (c)
		return c;
	return *x < *y ? -1 : *x > *y;
}

/* Sorting keeps duplicate detection O(n log n) for huge mappings; the error
 * names the duplicate that comes first in the document. */
static int check_duplicates(struct builder *b, const struct ynode *map, os_error *err)
{
	size_t n = map->map.n;
	if (n < 2)
		return 0;
	_cleanup_free_ const struct ypair **v = calloc(n, sizeof *v);
	if (!v)
		return os_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = &map->map.pairs[i];
	qsort(v, n, sizeof *v, key_cmp);
	const struct ypair *dup = NULL, *first = NULL;
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i]->key->scalar.value, v[i - 1]->key->scalar.value) != 0)
			continue;
		if (!dup || v[i] < dup) {
			dup = v[i];
			first = v[i - 1];
		}
	}
	if (!dup)
		return 0;
	return os_error_set(err, EINVAL, "%s:%u:%u: duplicate key \"%.64s\" (first at line %u)",
			    b->name, dup->key->line, dup->key->col, dup->key->scalar.value,
			    first->key->line);
}

static int on_end(struct builder *b, os_error *err)
{
	struct ynode *n = b->stack[--b->depth].node;
	if (n->kind == YNODE_MAPPING)
		return check_duplicates(b, n, err);
	return 0;
}

static int check_props(struct builder *b, const yaml_event_t *ev, os_error *err)
{
	const yaml_char_t *anchor = NULL, *tag = NULL;
	if (ev->type == YAML_SCALAR_EVENT) {
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
	} else if (ev->type == YAML_SEQUENCE_START_EVENT) {
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
	} else if (ev->type == YAML_MAPPING_START_EVENT) {
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
	}
	if (anchor)
		return at(err, b, ev->start_mark, "anchors are not allowed");
	if (tag)
		return at(err, b, ev->start_mark, "tags are not allowed");
	return 0;
}

static int on_event(struct builder *b, const yaml_event_t *ev, bool *done, os_error *err)
{
	if (check_props(b, ev, err) < 0)
		return -1;
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (b->docs++ > 0)
			return at(err, b, ev->start_mark, "only one YAML document is allowed");
		if (ev->data.document_start.tag_directives.start !=
		    ev->data.document_start.tag_directives.end)
			return at(err, b, ev->start_mark, "tag directives are not allowed");
		return 0;
	case YAML_STREAM_END_EVENT:
		*done = true;
		if (b->docs == 0)
			return at(err, b, ev->start_mark, "empty document");
		return 0;
	case YAML_ALIAS_EVENT:
		return at(err, b, ev->start_mark, "aliases are not allowed");
	case YAML_SCALAR_EVENT:
		return on_scalar(b, ev, err);
	case YAML_SEQUENCE_START_EVENT:
		return on_start(b, ev, YNODE_SEQUENCE, err);
	case YAML_MAPPING_START_EVENT:
		return on_start(b, ev, YNODE_MAPPING, err);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_end(b, err);
	default:
		return 0;
	}
}

static int parser_error(const struct builder *b, const yaml_parser_t *p, os_error *err)
{
	if (p->error == YAML_MEMORY_ERROR)
		return os_error_set(err, ENOMEM, "%s: out of memory", b->name);
	yaml_mark_t m = p->problem_mark;
	if (p->error == YAML_READER_ERROR)
		return os_error_set(err, EINVAL, "%s: byte %zu: %s", b->name, p->problem_offset,
				    p->problem ? p->problem : "unreadable input");
	if (p->context)
		return os_error_set(err, EINVAL, "%s:%zu:%zu: %s %s", b->name, m.line + 1,
				    m.column + 1, p->problem ? p->problem : "syntax error",
				    p->context);
	return os_error_set(err, EINVAL, "%s:%zu:%zu: %s", b->name, m.line + 1, m.column + 1,
			    p->problem ? p->problem : "syntax error");
}

static int run_parser(struct builder *b, yaml_parser_t *p, os_error *err)
{
	bool done = false;
	while (!done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(p, &ev))
			return parser_error(b, p, err);
		int r = on_event(b, &ev, &done, err);
		yaml_event_delete(&ev);
		if (r < 0)
			return -1;
	}
	return 0;
}

int ytree_parse(const char *name, const char *data, size_t len, struct ytree **out, os_error *err)
{
	if (len > YTREE_MAX_INPUT)
		return os_error_set(err, EMSGSIZE, "%s: larger than 4 MiB (%zu bytes)", name, len);
	struct builder b = { .name = name };
	b.tree = calloc(1, sizeof *b.tree);
	if (!b.tree)
		return os_error_set(err, ENOMEM, "out of memory");
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		free(b.tree);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	int r = run_parser(&b, &p, err);
	yaml_parser_delete(&p);
	if (r == 0 && !b.tree->root)
		r = os_error_set(err, EINVAL, "%s:1:1: empty document", name);
	if (r < 0) {
		ytree_free(b.tree);
		return -1;
	}
	*out = b.tree;
	return 0;
}

int ytree_load_file(const char *path, struct ytree **out, os_error *err)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (file_read_all(path, YTREE_MAX_INPUT, &data, &len, err) < 0)
		return os_error_prefix(err, "%s", path);
	return ytree_parse(path, data, len, out, err);
}

const struct ynode *ynode_map_get(const struct ynode *map, const char *key)
{
	if (!map || map->kind != YNODE_MAPPING)
		return NULL;
	for (size_t i = 0; i < map->map.n; i++)
		if (strcmp(map->map.pairs[i].key->scalar.value, key) == 0)
			return map->map.pairs[i].value;
	return NULL;
}

bool ynode_is_null(const struct ynode *n)
{
	if (!n || n->kind != YNODE_SCALAR || n->scalar.style != YSCALAR_PLAIN)
		return false;
	const char *v = n->scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

bool ynode_scalar_eq(const struct ynode *n, const char *s)
{
	return n && n->kind == YNODE_SCALAR && strcmp(n->scalar.value, s) == 0;
}

const char *ynode_kind_name(const struct ynode *n)
{
	if (!n || ynode_is_null(n))
		return "null";
	switch (n->kind) {
	case YNODE_MAPPING:
		return "a mapping";
	case YNODE_SEQUENCE:
		return "a sequence";
	default:
		return "a scalar";
	}
}
