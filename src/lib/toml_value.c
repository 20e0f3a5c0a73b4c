/* toml_value.c - the TOML value tree: construction, table lookup through a
 * hash index (documents may hold many keys), freeing and formatting.
 * Never grows anything without checked arithmetic. */
#include "toml_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checked.h"
#include "parse.h"

/* Tables at most this long are searched linearly. */
#define TOML_INDEX_MIN 8

struct toml_value *toml_value_new(enum toml_type type, struct toml_pos pos)
{
	struct toml_value *v = calloc(1, sizeof *v);
	if (v) {
		v->type = type;
		v->pos = pos;
	}
	return v;
}

void toml_free(struct toml_value *v)
{
	if (!v)
		return;
	switch (v->type) {
	case TOML_STRING:
		free(v->u.str.s);
		break;
	case TOML_TABLE:
		for (size_t i = 0; i < v->u.table.len; i++) {
			free(v->u.table.entries[i].key);
			toml_free(v->u.table.entries[i].value);
		}
		free(v->u.table.entries);
		free(v->u.table.index);
		break;
	case TOML_ARRAY:
		for (size_t i = 0; i < v->u.array.len; i++)
			toml_free(v->u.array.items[i]);
		free(v->u.array.items);
		break;
	default:
		break;
	}
	free(v);
}

static uint32_t key_hash(const char *key, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 16777619u;
	}
	return h;
}

/* Index slots hold entry number + 1; 0 is empty. index_cap is a power of 2. */
static void index_insert(struct toml_value *t, size_t entry)
{
	const struct toml_entry *e = &t->u.table.entries[entry];
	size_t mask = t->u.table.index_cap - 1;
	size_t slot = key_hash(e->key, e->key_len) & mask;
	while (t->u.table.index[slot] != 0)
		slot = (slot + 1) & mask;
	t->u.table.index[slot] = (uint32_t)(entry + 1);
}

static int index_rebuild(struct toml_value *t, size_t cap)
{
	uint32_t *idx = calloc(cap, sizeof *idx);
	if (!idx)
		return -1;
	free(t->u.table.index);
	t->u.table.index = idx;
	t->u.table.index_cap = cap;
	for (size_t i = 0; i < t->u.table.len; i++)
		index_insert(t, i);
	return 0;
}

static struct toml_entry *find_entry(const struct toml_value *t, const char *key, size_t len)
{
	if (!t || t->type != TOML_TABLE)
		return NULL;
	if (!t->u.table.index) {
		for (size_t i = 0; i < t->u.table.len; i++) {
			struct toml_entry *e = &t->u.table.entries[i];
			if (e->key_len == len && memcmp(e->key, key, len) == 0)
				return e;
		}
		return NULL;
	}
	size_t mask = t->u.table.index_cap - 1;
	for (size_t slot = key_hash(key, len) & mask; t->u.table.index[slot];
	     slot = (slot + 1) & mask) {
		struct toml_entry *e = &t->u.table.entries[t->u.table.index[slot] - 1];
		if (e->key_len == len && memcmp(e->key, key, len) == 0)
			return e;
	}
	return NULL;
}

const struct toml_entry *toml_table_find(const struct toml_value *t, const char *key,
					 size_t key_len)
{
	return find_entry(t, key, key_len);
}

const struct toml_value *toml_table_get(const struct toml_value *t, const char *key)
{
	const struct toml_entry *e = find_entry(t, key, strlen(key));
	return e ? e->value : NULL;
}

struct toml_value *toml_table_lookup(struct toml_value *t, const char *key, size_t key_len)
{
	struct toml_entry *e = find_entry(t, key, key_len);
	return e ? e->value : NULL;
}

/* Grows a pointer array of elem-sized items so that one more fits. */
static int grow(void **items, size_t *alloc, size_t len, size_t elem)
{
	if (len < *alloc)
		return 0;
	size_t n = *alloc ? *alloc : 4, bytes;
	if (!checked_mul(n, 2, &n) || !checked_mul(n, elem, &bytes))
		return -1;
	void *p = realloc(*items, bytes);
	if (!p)
		return -1;
	*items = p;
	*alloc = n;
	return 0;
}

int toml_table_add(struct toml_value *t, char *key, size_t key_len, struct toml_pos pos,
		   struct toml_value *value)
{
	if (t->u.table.len >= UINT32_MAX - 1)
		return -1;
	if (grow((void **)&t->u.table.entries, &t->u.table.alloc, t->u.table.len,
		 sizeof *t->u.table.entries) < 0)
		return -1;
	size_t n = t->u.table.len;
	t->u.table.entries[n] = (struct toml_entry){ key, key_len, pos, value };
	t->u.table.len++;
	if (t->u.table.len <= TOML_INDEX_MIN)
		return 0;
	/* Keep the load factor at or below one half. */
	if (t->u.table.len * 2 > t->u.table.index_cap) {
		size_t cap = 32;
		while (cap < t->u.table.len * 4)
			cap *= 2;
		if (index_rebuild(t, cap) < 0) {
			t->u.table.len--;
			return -1;
		}
		return 0;
	}
	index_insert(t, n);
	return 0;
}

int toml_array_push(struct toml_value *a, struct toml_value *item)
{
	if (grow((void **)&a->u.array.items, &a->u.array.alloc, a->u.array.len,
		 sizeof *a->u.array.items) < 0)
		return -1;
	a->u.array.items[a->u.array.len++] = item;
	return 0;
}

void toml_freeze(struct toml_value *v)
{
	v->flags |= TOML_F_FROZEN;
	if (v->type == TOML_TABLE) {
		for (size_t i = 0; i < v->u.table.len; i++)
			toml_freeze(v->u.table.entries[i].value);
	} else if (v->type == TOML_ARRAY) {
		for (size_t i = 0; i < v->u.array.len; i++)
			toml_freeze(v->u.array.items[i]);
	}
}

const char *toml_type_name(enum toml_type type)
{
	switch (type) {
	case TOML_TABLE:
		return "table";
	case TOML_ARRAY:
		return "array";
	case TOML_STRING:
		return "string";
	case TOML_INTEGER:
		return "integer";
	case TOML_FLOAT:
		return "float";
	case TOML_BOOL:
		return "bool";
	case TOML_DATETIME:
		return "datetime";
	case TOML_DATETIME_LOCAL:
		return "datetime-local";
	case TOML_DATE_LOCAL:
		return "date-local";
	case TOML_TIME_LOCAL:
		return "time-local";
	}
	return "unknown";
}

static int format_time(const struct toml_datetime *dt, char *out, size_t cap, os_error *err)
{
	if (str_format(out, cap, err, "%02d:%02d:%02d", dt->hour, dt->minute, dt->second) < 0)
		return -1;
	if (dt->frac_digits == 0)
		return 0;
	uint32_t frac = dt->nanosecond;
	for (int i = dt->frac_digits; i < 9; i++)
		frac /= 10;
	size_t used = strlen(out);
	return str_format(out + used, cap - used, err, ".%0*u", (int)dt->frac_digits, frac);
}

int toml_datetime_format(const struct toml_datetime *dt, enum toml_type type, char *out, size_t cap,
			 os_error *err)
{
	size_t used = 0;
	if (type == TOML_TIME_LOCAL)
		return format_time(dt, out, cap, err);
	if (type != TOML_DATETIME && type != TOML_DATETIME_LOCAL && type != TOML_DATE_LOCAL)
		return os_error_set(err, EINVAL, "not a date/time type: %s", toml_type_name(type));
	if (str_format(out, cap, err, "%04d-%02d-%02d", dt->year, dt->month, dt->day) < 0)
		return -1;
	if (type == TOML_DATE_LOCAL)
		return 0;
	used = strlen(out);
	if (str_format(out + used, cap - used, err, "T") < 0 ||
	    format_time(dt, out + used + 1, cap - used - 1, err) < 0)
		return -1;
	if (type == TOML_DATETIME_LOCAL)
		return 0;
	used = strlen(out);
	if (dt->offset_z)
		return str_format(out + used, cap - used, err, "Z");
	int off = dt->offset_minutes < 0 ? -dt->offset_minutes : dt->offset_minutes;
	return str_format(out + used, cap - used, err, "%c%02d:%02d",
			  dt->offset_minutes < 0 ? '-' : '+', off / 60, off % 60);
}
