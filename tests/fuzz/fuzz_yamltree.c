/* fuzz_yamltree.c - libFuzzer target for the strict YAML tree loader: any
 * input either yields a tree whose every node is walkable or a clean error. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "yamltree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const struct ynode *n)
{
	size_t count = 1;
	if (n->kind == YNODE_SEQUENCE)
		for (size_t i = 0; i < n->seq.n; i++)
			count += walk(n->seq.items[i]);
	else if (n->kind == YNODE_MAPPING)
		for (size_t i = 0; i < n->map.n; i++)
			count += walk(n->map.pairs[i].key) + walk(n->map.pairs[i].value);
	else if (strlen(n->scalar.value) != n->scalar.len)
		__builtin_trap(); /* scalars never contain NUL */
	return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ytree *t = NULL;
	os_error err = { 0 };
	if (ytree_parse("fuzz", (const char *)data, size, &t, &err) == 0) {
		if (walk(t->root) != t->n_nodes)
			__builtin_trap();
		ytree_free(t);
	}
	return 0;
}
