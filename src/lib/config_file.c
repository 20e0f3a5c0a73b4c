/* config_file.c - the TOML side of the configuration: walks [openshell.*],
 * matches every table and key against the declared sections, checks types.
 * Never ignores an unknown key: every error names file, line, column and key. */
#include "config_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "parse.h"

static const char *expected_name(const struct config_key *k)
{
	switch (k->type) {
	case CONFIG_STRING:
		return "a string";
	case CONFIG_INT:
		return "an integer";
	case CONFIG_BOOL:
		return "a boolean";
	case CONFIG_ENUM:
		return "a string";
	case CONFIG_STRING_ARRAY:
		return "an array of strings";
	case CONFIG_STRING_MAP:
		return "a table of strings";
	case CONFIG_TABLE_ARRAY:
		return "an array of tables";
	}
	return "?";
}

/* Values from environment or command-line text have no position (line 0). */
static int fail_at(os_error *err, const char *file, const struct toml_value *tv, const char *name,
		   const char *what)
{
	if (tv->pos.line == 0)
		return os_error_set(err, EINVAL, "%s: %s: %s", file, name, what);
	return os_error_set(err, EINVAL, "%s:%u:%u: %s: %s", file, tv->pos.line, tv->pos.col, name,
			    what);
}

static int wrong_type(const struct config_key *k, const char *name, const struct toml_value *tv,
		      const char *file, os_error *err)
{
	char what[128];
	snprintf(what, sizeof what, "expected %s, found %s", expected_name(k),
		 toml_type_name(tv->type));
	return fail_at(err, file, tv, name, what);
}

/* A string value usable as a C string (no embedded NUL). */
static int check_cstring(const char *name, const struct toml_value *tv, const char *file,
			 os_error *err)
{
	if (strlen(tv->u.str.s) != tv->u.str.len)
		return fail_at(err, file, tv, name, "must not contain a NUL character");
	return 0;
}

static int check_enum(const struct config_key *k, const char *name, const struct toml_value *tv,
		      const char *file, os_error *err)
{
	char what[512];
	size_t w;
	for (size_t i = 0; k->choices[i]; i++)
		if (strcmp(k->choices[i], tv->u.str.s) == 0)
			return 0;
	w = (size_t)snprintf(what, sizeof what, "'%.64s' is not one of", tv->u.str.s);
	for (size_t i = 0; k->choices[i] && w < sizeof what; i++)
		w += (size_t)snprintf(what + w, sizeof what - w, "%s %s", i ? "," : "",
				      k->choices[i]);
	return fail_at(err, file, tv, name, what);
}

static int check_elements(const struct config_key *k, const char *name, const struct toml_value *tv,
			  const char *file, os_error *err);

int config_check_toml(const struct config_key *k, const char *name, const struct toml_value *tv,
		      const char *file, os_error *err)
{
	char what[160];
	switch (k->type) {
	case CONFIG_STRING:
	case CONFIG_ENUM:
		if (tv->type != TOML_STRING)
			return wrong_type(k, name, tv, file, err);
		if (check_cstring(name, tv, file, err) < 0)
			return -1;
		return k->type == CONFIG_ENUM ? check_enum(k, name, tv, file, err) : 0;
	case CONFIG_INT:
		if (tv->type != TOML_INTEGER)
			return wrong_type(k, name, tv, file, err);
		if (tv->u.integer < k->min || tv->u.integer > k->max) {
			snprintf(what, sizeof what, "%lld is out of range [%lld, %lld]",
				 (long long)tv->u.integer, (long long)k->min, (long long)k->max);
			return fail_at(err, file, tv, name, what);
		}
		return 0;
	case CONFIG_BOOL:
		return tv->type == TOML_BOOL ? 0 : wrong_type(k, name, tv, file, err);
	default:
		return check_elements(k, name, tv, file, err);
	}
}

static int check_table_element(const struct config_key *k, const char *name,
			       const struct toml_value *tv, const char *file, os_error *err)
{
	char sub_name[256];
	for (size_t i = 0; i < tv->u.table.len; i++) {
		const struct toml_entry *e = &tv->u.table.entries[i];
		const struct config_key *sk = NULL;
		for (size_t j = 0; j < k->n_sub && !sk; j++)
			if (strlen(k->sub[j].name) == e->key_len &&
			    memcmp(k->sub[j].name, e->key, e->key_len) == 0)
				sk = &k->sub[j];
		snprintf(sub_name, sizeof sub_name, "%s.%s", name, e->key);
		if (!sk)
			return os_error_set(err, EINVAL, "%s:%u:%u: unknown key '%s'", file,
					    e->pos.line, e->pos.col, sub_name);
		if (config_check_toml(sk, sub_name, e->value, file, err) < 0)
			return -1;
	}
	for (size_t j = 0; j < k->n_sub; j++) {
		if (k->sub[j].required && !toml_table_get(tv, k->sub[j].name)) {
			snprintf(sub_name, sizeof sub_name, "missing required key '%s'",
				 k->sub[j].name);
			return fail_at(err, file, tv, name, sub_name);
		}
	}
	return 0;
}

/* String arrays, string maps and table arrays. */
static int check_elements(const struct config_key *k, const char *name, const struct toml_value *tv,
			  const char *file, os_error *err)
{
	char elem_name[256];
	bool is_map = k->type == CONFIG_STRING_MAP;
	if (tv->type != (is_map ? TOML_TABLE : TOML_ARRAY))
		return wrong_type(k, name, tv, file, err);
	size_t n = is_map ? tv->u.table.len : tv->u.array.len;
	for (size_t i = 0; i < n; i++) {
		const struct toml_value *item =
			is_map ? tv->u.table.entries[i].value : tv->u.array.items[i];
		if (is_map)
			snprintf(elem_name, sizeof elem_name, "%s.%s", name,
				 tv->u.table.entries[i].key);
		else
			snprintf(elem_name, sizeof elem_name, "%s[%zu]", name, i);
		enum toml_type want = k->type == CONFIG_TABLE_ARRAY ? TOML_TABLE : TOML_STRING;
		if (item->type != want)
			return wrong_type(k, name, item, file, err);
		if (want == TOML_STRING && check_cstring(elem_name, item, file, err) < 0)
			return -1;
		if (want == TOML_TABLE && check_table_element(k, elem_name, item, file, err) < 0)
			return -1;
	}
	return 0;
}

static void value_clear(struct config_value *val)
{
	free(val->str);
	val->str = NULL;
	for (size_t i = 0; i < val->n_strv; i++)
		free(val->strv[i]);
	free(val->strv);
	val->strv = NULL;
	val->n_strv = 0;
	val->toml = NULL;
}

static int copy_strv(struct config_value *val, const struct toml_value *tv, os_error *err)
{
	char **v = calloc(tv->u.array.len + 1, sizeof *v);
	if (!v)
		return os_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < tv->u.array.len; i++) {
		v[i] = strdup(tv->u.array.items[i]->u.str.s);
		if (!v[i]) {
			while (i--)
				free(v[i]);
			free(v);
			return os_error_set(err, ENOMEM, "out of memory");
		}
	}
	value_clear(val);
	val->strv = v;
	val->n_strv = tv->u.array.len;
	return 0;
}

int config_assign_toml(struct config_value *val, const struct toml_value *tv,
		       enum config_source src, const char *origin, os_error *err)
{
	if (src < val->source)
		return 0; /* something of higher precedence already set it */
	switch (val->key->type) {
	case CONFIG_STRING:
	case CONFIG_ENUM: {
		char *s = strdup(tv->u.str.s);
		if (!s)
			return os_error_set(err, ENOMEM, "out of memory");
		value_clear(val);
		val->str = s;
		break;
	}
	case CONFIG_INT:
		val->integer = tv->u.integer;
		break;
	case CONFIG_BOOL:
		val->boolean = tv->u.boolean;
		break;
	case CONFIG_STRING_ARRAY:
		if (copy_strv(val, tv, err) < 0)
			return -1;
		break;
	case CONFIG_STRING_MAP:
	case CONFIG_TABLE_ARRAY:
		value_clear(val);
		val->toml = tv;
		break;
	}
	val->source = src;
	snprintf(val->origin, sizeof val->origin, "%s", origin);
	return 0;
}

/* A table/key name usable in a section path: no dot, no NUL. */
static bool plain_key(const struct toml_entry *e)
{
	return !memchr(e->key, '.', e->key_len) && strlen(e->key) == e->key_len;
}

static int load_section(struct config *cfg, const struct config_section *sec,
			const struct toml_value *tbl, const char *file, os_error *err)
{
	char name[256], origin[300];
	for (size_t i = 0; i < tbl->u.table.len; i++) {
		const struct toml_entry *e = &tbl->u.table.entries[i];
		struct config_value *val =
			plain_key(e)
				? config_find(cfg, sec->name, strlen(sec->name), e->key, e->key_len)
				: NULL;
		if (!val)
			return os_error_set(err, EINVAL,
					    "%s:%u:%u: unknown key '%s' in [openshell.%s]", file,
					    e->pos.line, e->pos.col, e->key, sec->name);
		snprintf(name, sizeof name, "openshell.%s.%s", sec->name, e->key);
		if (config_check_toml(val->key, name, e->value, file, err) < 0)
			return -1;
		snprintf(origin, sizeof origin, "%s:%u:%u", file, e->value->pos.line,
			 e->value->pos.col);
		if (config_assign_toml(val, e->value, CONFIG_SRC_FILE, origin, err) < 0)
			return -1;
	}
	return 0;
}

static const struct config_section *section_named(const struct config *cfg, const char *path)
{
	for (size_t i = 0; i < cfg->n_sections; i++)
		if (strcmp(cfg->sections[i]->name, path) == 0)
			return cfg->sections[i];
	return NULL;
}

/* True if some section lies below path ("drivers" for "drivers.local"). */
static bool section_below(const struct config *cfg, const char *path)
{
	size_t n = strlen(path);
	for (size_t i = 0; i < cfg->n_sections; i++) {
		const char *s = cfg->sections[i]->name;
		if (strncmp(s, path, n) == 0 && s[n] == '.')
			return true;
	}
	return false;
}

static int walk(struct config *cfg, const struct toml_value *tbl, const char *prefix,
		const char *file, os_error *err)
{
	char path[256];
	for (size_t i = 0; i < tbl->u.table.len; i++) {
		const struct toml_entry *e = &tbl->u.table.entries[i];
		const struct config_section *sec = NULL;
		bool inner = false;
		if (plain_key(e) && str_format(path, sizeof path, NULL, "%s%s%s", prefix,
					       *prefix ? "." : "", e->key) == 0) {
			sec = section_named(cfg, path);
			inner = !sec && section_below(cfg, path);
		}
		if (!sec && !inner)
			return os_error_set(err, EINVAL, "%s:%u:%u: unknown key 'openshell.%s%s%s'",
					    file, e->pos.line, e->pos.col, prefix,
					    *prefix ? "." : "", e->key);
		if (e->value->type != TOML_TABLE)
			return os_error_set(err, EINVAL,
					    "%s:%u:%u: openshell.%s: expected a table, found %s",
					    file, e->value->pos.line, e->value->pos.col, path,
					    toml_type_name(e->value->type));
		int rc = sec ? load_section(cfg, sec, e->value, file, err)
			     : walk(cfg, e->value, path, file, err);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Takes ownership of doc and applies its [openshell] tree. */
static int load_doc(struct config *cfg, struct toml_value *doc, const char *file, os_error *err)
{
	if (config_keep_doc(cfg, doc, err) < 0)
		return -1;
	for (size_t i = 0; i < doc->u.table.len; i++) {
		const struct toml_entry *e = &doc->u.table.entries[i];
		if (e->key_len != 9 || memcmp(e->key, "openshell", 9) != 0)
			return os_error_set(err, EINVAL,
					    "%s:%u:%u: unknown top-level key '%s' (only "
					    "[openshell] is read)",
					    file, e->pos.line, e->pos.col, e->key);
		if (e->value->type != TOML_TABLE)
			return os_error_set(err, EINVAL,
					    "%s:%u:%u: openshell: expected a table, found %s", file,
					    e->value->pos.line, e->value->pos.col,
					    toml_type_name(e->value->type));
		if (walk(cfg, e->value, "", file, err) < 0)
			return -1;
	}
	return 0;
}

int config_load_toml(struct config *cfg, const char *data, size_t len, const char *file,
		     os_error *err)
{
	struct toml_value *doc = toml_parse(data, len, file, err);
	return doc ? load_doc(cfg, doc, file, err) : -1;
}

int config_load_file(struct config *cfg, const char *path, os_error *err)
{
	struct toml_value *doc = toml_parse_file(path, err);
	return doc ? load_doc(cfg, doc, path, err) : -1;
}
