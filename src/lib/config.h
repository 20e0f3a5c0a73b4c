/* config.h - the gateway configuration: a schema-driven loader for the
 * [openshell.*] tree of a TOML file, OPENSHELL_* environment variables and
 * command-line overrides. Each section declares its keys once (name, type,
 * range or choices, default); anything not declared is rejected, never ignored.
 *
 * Precedence, whatever the order of the calls:
 *     CLI (config_set_cli) > environment (config_load_env) > file > default.
 *
 * Environment names: OPENSHELL_<SECTION>_<KEY>, upper-cased, with the
 * section's dots turned into '_':
 *     [openshell.gateway] listen_address           -> OPENSHELL_GATEWAY_LISTEN_ADDRESS
 *     [openshell.drivers.kubernetes] sandbox_uid   -> OPENSHELL_DRIVERS_KUBERNETES_SANDBOX_UID
 * Text values (environment, CLI, defaults) are read by type: strings and enums
 * as-is; integers in decimal; booleans "true"/"false"; string arrays either
 * comma-separated ("a,b"; "" is empty) or as a TOML array ("[\"a\", \"b\"]");
 * string maps and table arrays as a TOML inline value ({k = "v"}, [{...}]).
 * Other OPENSHELL_* variables are none of this module's business and ignored.
 * A load that fails may have applied part of its input: discard the config. */
#ifndef OS_CONFIG_H
#define OS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "toml.h"

enum config_type {
	CONFIG_STRING,
	CONFIG_INT, /* int64 within [min, max] */
	CONFIG_BOOL,
	CONFIG_ENUM, /* a string from choices */
	CONFIG_STRING_ARRAY,
	CONFIG_STRING_MAP, /* table of string values */
	CONFIG_TABLE_ARRAY, /* array of tables, each checked against sub */
};

struct config_key {
	const char *name;
	enum config_type type;
	const char *def; /* default as text (see above); NULL: unset */
	int64_t min, max; /* CONFIG_INT */
	const char *const *choices; /* CONFIG_ENUM, NULL-terminated */
	const struct config_key *sub; /* CONFIG_TABLE_ARRAY element keys */
	size_t n_sub;
	bool required; /* only for keys of a table-array element */
	const char *help;
};

struct config_section {
	const char *name; /* below [openshell]: "gateway", "drivers.kubernetes" */
	const struct config_key *keys;
	size_t n_keys;
};

enum config_source {
	CONFIG_SRC_UNSET, /* no default and not configured */
	CONFIG_SRC_DEFAULT,
	CONFIG_SRC_FILE,
	CONFIG_SRC_ENV,
	CONFIG_SRC_CLI,
};

/* A resolved key. Only the member matching key->type is meaningful. */
struct config_value {
	const struct config_section *section;
	const struct config_key *key;
	enum config_source source;
	char origin[300]; /* "FILE:LINE:COL", "OPENSHELL_...", "--set ...", "default" */
	char *str; /* CONFIG_STRING, CONFIG_ENUM */
	int64_t integer;
	bool boolean;
	char **strv; /* CONFIG_STRING_ARRAY */
	size_t n_strv;
	const struct toml_value *toml; /* CONFIG_STRING_MAP, CONFIG_TABLE_ARRAY */
};

/* The sections declared so far, and all of them (for the gateway). */
extern const struct config_section config_section_gateway;
extern const struct config_section config_section_kubernetes;
extern const struct config_section config_section_local;
extern const struct config_section *const config_sections_all[];
extern const size_t config_sections_all_len;

struct config;

/* Builds a configuration holding the defaults; fails if the schema itself is
 * inconsistent (bad default, duplicate key, two keys with one env name). */
struct config *config_new(const struct config_section *const *sections, size_t n, os_error *err);
void config_free(struct config *cfg);

static inline void cleanup_config_freep(struct config **cfg)
{
	config_free(*cfg);
}
#define _cleanup_config_ __attribute__((cleanup(cleanup_config_freep)))

/* Reads a TOML file; its only top-level table is [openshell]. Errors name
 * the file, line and column, the key and (for type errors) what was expected. */
int config_load_file(struct config *cfg, const char *path, os_error *err);
/* Same for a document in memory; file names it in errors. */
int config_load_toml(struct config *cfg, const char *data, size_t len, const char *file,
		     os_error *err);
/* Applies OPENSHELL_* variables from envp (NULL-terminated, like environ). */
int config_load_env(struct config *cfg, char *const *envp, os_error *err);
/* A command-line override: name is "SECTION.KEY" ("gateway.listen_address",
 * "drivers.kubernetes.namespace"), value is text as described above. */
int config_set_cli(struct config *cfg, const char *name, const char *value, os_error *err);

/* Lookup by section and key name; NULL if the pair is not declared. */
const struct config_value *config_get(const struct config *cfg, const char *section,
				      const char *key);
/* Typed getters: NULL / 0 / false when the key is unset or undeclared. */
const char *config_get_string(const struct config *cfg, const char *section, const char *key);
int64_t config_get_int(const struct config *cfg, const char *section, const char *key);
bool config_get_bool(const struct config *cfg, const char *section, const char *key);
/* All resolved values in schema order (for `gateway status`). */
const struct config_value *config_values(const struct config *cfg, size_t *n);

/* "unset", "default", "file", "env", "cli". */
const char *config_source_name(enum config_source source);
/* Writes the environment variable name of a key into out[cap]. */
int config_env_name(const struct config_section *section, const struct config_key *key, char *out,
		    size_t cap, os_error *err);

#endif
