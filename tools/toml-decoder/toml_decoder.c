/* toml_decoder.c - the toml-test "decoder": reads TOML on stdin and prints
 * toml-test's tagged JSON on stdout, or exits 1 with the error on stderr.
 * Only a test harness; it never reads more than TOML_MAX_INPUT bytes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "json.h"
#include "toml.h"

static json_t *tagged(const char *type, const char *value)
{
	return json_pack("{s:s, s:s}", "type", type, "value", value);
}

static json_t *scalar_json(const struct toml_value *v)
{
	char text[64];
	os_error err;
	switch (v->type) {
	case TOML_STRING:
		return json_pack("{s:s, s:s%}", "type", "string", "value", v->u.str.s,
				 v->u.str.len);
	case TOML_INTEGER:
		snprintf(text, sizeof text, "%" PRId64, v->u.integer);
		break;
	case TOML_FLOAT:
		if (isnan(v->u.flt))
			snprintf(text, sizeof text, "nan");
		else if (isinf(v->u.flt))
			snprintf(text, sizeof text, "%sinf", v->u.flt < 0 ? "-" : "");
		else
			snprintf(text, sizeof text, "%.17g", v->u.flt);
		break;
	case TOML_BOOL:
		snprintf(text, sizeof text, "%s", v->u.boolean ? "true" : "false");
		break;
	default:
		if (toml_datetime_format(&v->u.dt, v->type, text, sizeof text, &err) < 0)
			return NULL;
		break;
	}
	return tagged(toml_type_name(v->type), text);
}

static json_t *to_json(const struct toml_value *v)
{
	json_t *out;
	if (v->type == TOML_TABLE) {
		out = json_object();
		for (size_t i = 0; out && i < v->u.table.len; i++) {
			const struct toml_entry *e = &v->u.table.entries[i];
			json_t *child = to_json(e->value);
			if (!child || json_object_setn_new(out, e->key, e->key_len, child) < 0) {
				json_decref(out);
				return NULL;
			}
		}
		return out;
	}
	if (v->type == TOML_ARRAY) {
		out = json_array();
		for (size_t i = 0; out && i < v->u.array.len; i++) {
			if (json_array_append_new(out, to_json(v->u.array.items[i])) < 0) {
				json_decref(out);
				return NULL;
			}
		}
		return out;
	}
	return scalar_json(v);
}

int main(void)
{
	_cleanup_buf_ struct buf in;
	os_error err = { 0 };
	char chunk[65536];
	buf_init(&in, TOML_MAX_INPUT);
	for (;;) {
		ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
		if (n < 0) {
			perror("toml-decoder: reading stdin");
			return 2;
		}
		if (n == 0)
			break;
		if (buf_append(&in, chunk, (size_t)n, &err) < 0) {
			fprintf(stderr, "toml-decoder: <stdin>: input larger than %u bytes\n",
				TOML_MAX_INPUT);
			return 1;
		}
	}
	_cleanup_toml_ struct toml_value *doc =
		toml_parse(in.data ? in.data : "", in.len, "<stdin>", &err);
	if (!doc) {
		fprintf(stderr, "toml-decoder: %s\n", err.msg);
		return 1;
	}
	_cleanup_json_ json_t *j = to_json(doc);
	if (!j || json_dumpf(j, stdout, JSON_COMPACT) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "toml-decoder: cannot write JSON\n");
		return 2;
	}
	return 0;
}
