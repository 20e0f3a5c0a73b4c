/* fuzz_toml.c - libFuzzer target for the TOML parser and the configuration
 * loader on top of it. Checks tree invariants (depth cap, every key found by
 * lookup, date/times formattable) and aborts on any violation. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_tree(const struct toml_value *v, unsigned depth)
{
	char text[64];
	os_error err;
	if (depth > TOML_MAX_DEPTH || v->pos.line == 0 || v->pos.col == 0)
		abort();
	if (v->type == TOML_TABLE) {
		for (size_t i = 0; i < v->u.table.len; i++) {
			const struct toml_entry *e = &v->u.table.entries[i];
			if (toml_table_find(v, e->key, e->key_len) != e)
				abort(); /* keys are unique and the index agrees */
			check_tree(e->value, depth + 1);
		}
	} else if (v->type == TOML_ARRAY) {
		for (size_t i = 0; i < v->u.array.len; i++)
			check_tree(v->u.array.items[i], depth + 1);
	} else if (v->type >= TOML_DATETIME) {
		if (toml_datetime_format(&v->u.dt, v->type, text, sizeof text, &err) < 0)
			abort();
	} else if (v->type == TOML_STRING && v->u.str.s[v->u.str.len] != '\0') {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	os_error err;
	struct toml_value *doc = toml_parse((const char *)data, size, "fuzz", &err);
	if (doc) {
		check_tree(doc, 0);
		toml_free(doc);
	} else if (strncmp(err.msg, "fuzz:", 5) != 0 && err.code != ENOMEM) {
		abort(); /* every parse error names the input */
	}
	struct config *cfg = config_new(config_sections_all, config_sections_all_len, &err);
	if (!cfg)
		abort();
	config_load_toml(cfg, (const char *)data, size, "fuzz", &err);
	config_free(cfg);
	return 0;
}
