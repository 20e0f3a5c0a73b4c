/* yamltree.h - strict YAML loading into a small tree (mapping, sequence,
 * scalar) with 1-based line/column on every node, for configuration files.
 * Never accepts anchors, aliases, tags, duplicate keys or several documents. */
#ifndef OS_YAMLTREE_H
#define OS_YAMLTREE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define YTREE_MAX_INPUT (4u * 1024 * 1024) /* bytes per document */
#define YTREE_MAX_DEPTH 64 /* nested collections */
#define YTREE_MAX_NODES 262144 /* nodes per document */
#define YTREE_MAX_SCALAR (64u * 1024) /* bytes per scalar */

enum ynode_kind { YNODE_SCALAR, YNODE_SEQUENCE, YNODE_MAPPING };

/* Plain scalars are the only ones YAML would type (`true`, `1`, `~`);
 * quoted and block scalars are always strings. */
enum yscalar_style { YSCALAR_PLAIN, YSCALAR_QUOTED };

struct ynode;

struct ypair {
	struct ynode *key; /* always a scalar */
	struct ynode *value;
};

struct ynode {
	enum ynode_kind kind;
	unsigned line, col; /* 1-based */
	union {
		struct {
			char *value; /* NUL-terminated, never contains NUL */
			size_t len;
			enum yscalar_style style;
		} scalar;
		struct {
			struct ynode **items;
			size_t n;
		} seq;
		struct {
			struct ypair *pairs; /* in document order */
			size_t n;
		} map;
	};
};

struct ytree {
	struct ynode *root;
	size_t n_nodes;
};

/* Parses exactly one document from data[len]. name prefixes errors:
 * "NAME:LINE:COL: message". */
int ytree_parse(const char *name, const char *data, size_t len, struct ytree **out, os_error *err);
/* Reads path (at most YTREE_MAX_INPUT bytes) and parses it. */
int ytree_load_file(const char *path, struct ytree **out, os_error *err);
void ytree_free(struct ytree *t);

static inline void cleanup_ytreep(struct ytree **t)
{
	if (*t)
		ytree_free(*t);
}
#define _cleanup_ytree_ __attribute__((cleanup(cleanup_ytreep)))

/* Value of key in a mapping, NULL when absent or when map is not a mapping. */
const struct ynode *ynode_map_get(const struct ynode *map, const char *key);
/* True for a plain scalar spelling YAML null: empty, `~`, `null`, `Null`, `NULL`. */
bool ynode_is_null(const struct ynode *n);
/* True when n is a scalar equal to s. */
bool ynode_scalar_eq(const struct ynode *n, const char *s);
/* "a mapping", "a sequence", "null" or "a scalar"; for messages. */
const char *ynode_kind_name(const struct ynode *n);

#endif
