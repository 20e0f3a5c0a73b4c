/* config.c - the configuration object: defaults from the schema, text values
 * from the environment and the command line, precedence and lookup.
 * Never lets a lower-precedence source overwrite a higher one. */
#include "config_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "checked.h"
#include "cleanup.h"
#include "parse.h"

struct config_value *config_find(struct config *cfg, const char *section, size_t section_len,
				 const char *key, size_t key_len)
{
	for (size_t i = 0; i < cfg->n_values; i++) {
		struct config_value *v = &cfg->values[i];
		if (strlen(v->section->name) == section_len &&
		    memcmp(v->section->name, section, section_len) == 0 &&
		    strlen(v->key->name) == key_len && memcmp(v->key->name, key, key_len) == 0)
			return v;
	}
	return NULL;
}

int config_keep_doc(struct config *cfg, struct toml_value *doc, os_error *err)
{
	if (cfg->n_docs == cfg->alloc_docs) {
		size_t n = cfg->alloc_docs ? cfg->alloc_docs * 2 : 4, bytes;
		struct toml_value **d = NULL;
		if (checked_mul(n, sizeof *d, &bytes))
			d = realloc(cfg->docs, bytes);
		if (!d) {
			toml_free(doc);
			return os_error_set(err, ENOMEM, "out of memory");
		}
		cfg->docs = d;
		cfg->alloc_docs = n;
	}
	cfg->docs[cfg->n_docs++] = doc;
	return 0;
}

int config_env_name(const struct config_section *section, const struct config_key *key, char *out,
		    size_t cap, os_error *err)
{
	if (str_format(out, cap, err, "OPENSHELL_%s_%s", section->name, key->name) < 0)
		return -1;
	for (char *p = out; *p; p++) {
		if (*p == '.' || *p == '-')
			*p = '_';
		else if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	}
	return 0;
}

/* Text that is a TOML value ("[...]", "{...}"): parsed as the document
 * "v = TEXT", so that errors carry a position (columns include "v = "). */
static int assign_toml_text(struct config *cfg, struct config_value *val, const char *text,
			    enum config_source src, const char *origin, os_error *err)
{
	_cleanup_buf_ struct buf b;
	char name[256];
	buf_init(&b, TOML_MAX_INPUT);
	if (buf_printf(&b, err, "v = %s", text) < 0)
		return -1;
	struct toml_value *doc = toml_parse(b.data, b.len, origin, err);
	if (!doc || config_keep_doc(cfg, doc, err) < 0)
		return -1;
	const struct toml_value *tv = toml_table_get(doc, "v");
	snprintf(name, sizeof name, "%s.%s", val->section->name, val->key->name);
	if (doc->u.table.len != 1 || !tv)
		return os_error_set(err, EINVAL, "%s: %s: expected a single TOML value", origin,
				    name);
	if (config_check_toml(val->key, name, tv, origin, err) < 0)
		return -1;
	return config_assign_toml(val, tv, src, origin, err);
}

/* "a,b,c" as a string array ("" is the empty array). */
static int assign_list_text(struct config *cfg, struct config_value *val, const char *text,
			    enum config_source src, const char *origin, os_error *err)
{
	_cleanup_buf_ struct buf b;
	buf_init(&b, TOML_MAX_INPUT);
	if (buf_append_str(&b, "[", err) < 0)
		return -1;
	for (const char *p = text; *text;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == 0)
			return os_error_set(err, EINVAL, "%s: %s.%s: empty item in list '%s'",
					    origin, val->section->name, val->key->name, text);
		/* Literal strings need no escaping unless the item holds a quote. */
		if (memchr(p, '\'', n) || memchr(p, '\n', n))
			return os_error_set(err, EINVAL,
					    "%s: %s.%s: use TOML array syntax for items with "
					    "quotes or newlines",
					    origin, val->section->name, val->key->name);
		if (buf_printf(&b, err, "'%.*s',", (int)n, p) < 0)
			return -1;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (buf_append_str(&b, "]", err) < 0)
		return -1;
	return assign_toml_text(cfg, val, b.data, src, origin, err);
}

static int assign_text(struct config *cfg, struct config_value *val, const char *text,
		       enum config_source src, const char *origin, os_error *err)
{
	const struct config_key *k = val->key;
	char name[256];
	struct toml_value tv = { .pos = { 0, 0 } }; /* text has no position */
	snprintf(name, sizeof name, "%s.%s", val->section->name, k->name);
	switch (k->type) {
	case CONFIG_STRING:
	case CONFIG_ENUM:
		/* Wrap the text in a value so that both paths share the checks. */
		tv.type = TOML_STRING;
		tv.u.str.s = (char *)text;
		tv.u.str.len = strlen(text);
		break;
	case CONFIG_INT:
		tv.type = TOML_INTEGER;
		if (parse_i64(text, strlen(text), INT64_MIN, INT64_MAX, &tv.u.integer, err) < 0)
			return os_error_set(err, EINVAL, "%s: %s: expected an integer, got '%.64s'",
					    origin, name, text);
		break;
	case CONFIG_BOOL:
		tv.type = TOML_BOOL;
		if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0)
			return os_error_set(err, EINVAL,
					    "%s: %s: expected true or false, got '%.64s'", origin,
					    name, text);
		tv.u.boolean = text[0] == 't';
		break;
	case CONFIG_STRING_ARRAY:
		if (text[0] != '[')
			return assign_list_text(cfg, val, text, src, origin, err);
		return assign_toml_text(cfg, val, text, src, origin, err);
	default:
		return assign_toml_text(cfg, val, text, src, origin, err);
	}
	if (config_check_toml(k, name, &tv, origin, err) < 0)
		return -1;
	return config_assign_toml(val, &tv, src, origin, err);
}

static int check_schema(const struct config *cfg, os_error *err)
{
	char a[256], b[256];
	for (size_t i = 0; i < cfg->n_values; i++) {
		const struct config_value *v = &cfg->values[i];
		if (config_env_name(v->section, v->key, a, sizeof a, err) < 0)
			return -1;
		for (size_t j = 0; j < i; j++) {
			const struct config_value *w = &cfg->values[j];
			if (config_env_name(w->section, w->key, b, sizeof b, err) < 0)
				return -1;
			if (strcmp(a, b) == 0)
				return os_error_set(
					err, EINVAL,
					"configuration schema: %s.%s and %s.%s both map "
					"to %s",
					w->section->name, w->key->name, v->section->name,
					v->key->name, a);
		}
	}
	return 0;
}

static int apply_defaults(struct config *cfg, os_error *err)
{
	for (size_t i = 0; i < cfg->n_values; i++) {
		struct config_value *v = &cfg->values[i];
		if (!v->key->def)
			continue;
		if (assign_text(cfg, v, v->key->def, CONFIG_SRC_DEFAULT, "default", err) < 0)
			return os_error_prefix(err, "configuration schema");
	}
	return 0;
}

struct config *config_new(const struct config_section *const *sections, size_t n, os_error *err)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += sections[i]->n_keys;
	struct config *cfg = calloc(1, sizeof *cfg);
	if (cfg)
		cfg->values = calloc(total ? total : 1, sizeof *cfg->values);
	if (!cfg || !cfg->values) {
		free(cfg);
		os_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	cfg->sections = sections;
	cfg->n_sections = n;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sections[i]->n_keys; k++) {
			struct config_value *v = &cfg->values[cfg->n_values++];
			v->section = sections[i];
			v->key = &sections[i]->keys[k];
			snprintf(v->origin, sizeof v->origin, "unset");
		}
	}
	if (check_schema(cfg, err) < 0 || apply_defaults(cfg, err) < 0) {
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

void config_free(struct config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_values; i++) {
		struct config_value *v = &cfg->values[i];
		free(v->str);
		for (size_t j = 0; j < v->n_strv; j++)
			free(v->strv[j]);
		free(v->strv);
	}
	free(cfg->values);
	for (size_t i = 0; i < cfg->n_docs; i++)
		toml_free(cfg->docs[i]);
	free(cfg->docs);
	free(cfg);
}

/* "OPENSHELL_GATEWAY_", "OPENSHELL_DRIVERS_": the first component of a
 * section's name, where every variable must be a setting. */
static bool in_settings_namespace(const struct config *cfg, const char *var)
{
	char prefix[128];
	for (size_t i = 0; i < cfg->n_sections; i++) {
		const char *name = cfg->sections[i]->name;
		size_t n = strcspn(name, ".");
		if (str_format(prefix, sizeof prefix, NULL, "OPENSHELL_%.*s_", (int)n, name) < 0)
			continue;
		for (char *p = prefix; *p; p++)
			if (*p >= 'a' && *p <= 'z')
				*p = (char)(*p - 'a' + 'A');
		if (!strncmp(var, prefix, strlen(prefix)))
			return true;
	}
	return false;
}

/* A variable in a settings namespace that names no setting is a typo, or a
 * setting of another version: silence would leave the default in force. */
static int check_unknown_env(const struct config *cfg, char *const *envp, os_error *err)
{
	char name[256], var[256], near[256];
	for (char *const *e = envp; e && *e; e++) {
		size_t len = strcspn(*e, "=");
		if (len >= sizeof var)
			continue;
		memcpy(var, *e, len);
		var[len] = '\0';
		if (!in_settings_namespace(cfg, var))
			continue;
		bool known = false;
		size_t best = 0;
		near[0] = '\0';
		for (size_t i = 0; i < cfg->n_values && !known; i++) {
			const struct config_value *v = &cfg->values[i];
			if (config_env_name(v->section, v->key, name, sizeof name, err) < 0)
				return -1;
			known = !strcmp(name, var);
			size_t common = 0;
			while (name[common] && name[common] == var[common])
				common++;
			if (common > best) {
				best = common;
				memcpy(near, name, sizeof near);
			}
		}
		if (!known)
			return os_error_set(
				err, EINVAL,
				"environment variable %s names no setting (closest: %s; "
				"every setting is OPENSHELL_<SECTION>_<KEY>, see "
				"docs/settings.md): unset it or correct its name",
				var, near[0] ? near : "none");
	}
	return 0;
}

int config_load_env(struct config *cfg, char *const *envp, os_error *err)
{
	if (check_unknown_env(cfg, envp, err) < 0)
		return -1;
	char name[256];
	for (size_t i = 0; i < cfg->n_values; i++) {
		struct config_value *v = &cfg->values[i];
		if (config_env_name(v->section, v->key, name, sizeof name, err) < 0)
			return -1;
		size_t len = strlen(name);
		for (char *const *e = envp; e && *e; e++) {
			if (strncmp(*e, name, len) != 0 || (*e)[len] != '=')
				continue;
			if (assign_text(cfg, v, *e + len + 1, CONFIG_SRC_ENV, name, err) < 0)
				return -1;
		}
	}
	return 0;
}

int config_set_cli(struct config *cfg, const char *name, const char *value, os_error *err)
{
	char origin[300];
	const char *dot = strrchr(name, '.');
	struct config_value *v =
		dot ? config_find(cfg, name, (size_t)(dot - name), dot + 1, strlen(dot + 1)) : NULL;
	if (!v)
		return os_error_set(err, EINVAL,
				    "unknown configuration key '%s' (expected SECTION.KEY, e.g. "
				    "gateway.listen_address)",
				    name);
	snprintf(origin, sizeof origin, "command line %s", name);
	return assign_text(cfg, v, value, CONFIG_SRC_CLI, origin, err);
}

const struct config_value *config_get(const struct config *cfg, const char *section,
				      const char *key)
{
	return config_find((struct config *)cfg, section, strlen(section), key, strlen(key));
}

const char *config_get_string(const struct config *cfg, const char *section, const char *key)
{
	const struct config_value *v = config_get(cfg, section, key);
	return v ? v->str : NULL;
}

int64_t config_get_int(const struct config *cfg, const char *section, const char *key)
{
	const struct config_value *v = config_get(cfg, section, key);
	return v ? v->integer : 0;
}

bool config_get_bool(const struct config *cfg, const char *section, const char *key)
{
	const struct config_value *v = config_get(cfg, section, key);
	return v ? v->boolean : false;
}

const struct config_value *config_values(const struct config *cfg, size_t *n)
{
	*n = cfg->n_values;
	return cfg->values;
}

const char *config_source_name(enum config_source source)
{
	switch (source) {
	case CONFIG_SRC_UNSET:
		return "unset";
	case CONFIG_SRC_DEFAULT:
		return "default";
	case CONFIG_SRC_FILE:
		return "file";
	case CONFIG_SRC_ENV:
		return "env";
	case CONFIG_SRC_CLI:
		return "cli";
	}
	return "?";
}
