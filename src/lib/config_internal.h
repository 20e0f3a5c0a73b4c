/* config_internal.h - shared by config.c and config_file.c only: the config
 * object and the typed checks both the file and text paths go through. */
#ifndef OS_CONFIG_INTERNAL_H
#define OS_CONFIG_INTERNAL_H

#include "config.h"

struct config {
	const struct config_section *const *sections;
	size_t n_sections;
	struct config_value *values; /* one per declared key, schema order */
	size_t n_values;
	struct toml_value **docs; /* documents that values' toml members point into */
	size_t n_docs, alloc_docs;
};

/* Finds the value of key (len bytes) in section (len bytes); NULL if undeclared. */
struct config_value *config_find(struct config *cfg, const char *section, size_t section_len,
				 const char *key, size_t key_len);
/* Keeps doc alive as long as cfg (takes ownership, also on failure). */
int config_keep_doc(struct config *cfg, struct toml_value *doc, os_error *err);
/* Checks tv against k; name is the key's full name for messages, file
 * locates tv. */
int config_check_toml(const struct config_key *k, const char *name, const struct toml_value *tv,
		      const char *file, os_error *err);
/* Stores a checked tv into val if src takes precedence over val's source. */
int config_assign_toml(struct config_value *val, const struct toml_value *tv,
		       enum config_source src, const char *origin, os_error *err);

#endif
