/* test_toml.c - unit tests of the TOML parser beyond the toml-test suite:
 * positions in values and errors, input and depth limits, table rules,
 * UTF-8 validation, integer bounds, big tables, date/time formatting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "cleanup.h"
#include "toml.h"

static struct toml_value *parse(const char *doc, os_error *err)
{
	os_error_clear(err);
	return toml_parse(doc, strlen(doc), "t.toml", err);
}

/* Asserts that doc is rejected with a message starting with want. */
static void assert_rejects(const char *doc, const char *want)
{
	os_error err;
	struct toml_value *v = parse(doc, &err);
	if (v) {
		toml_free(v);
		fail_msg("accepted: %s", doc);
	}
	if (strncmp(err.msg, want, strlen(want)) != 0)
		fail_msg("for %s\n  got:  %s\n  want: %s...", doc, err.msg, want);
}

static void assert_accepts(const char *doc)
{
	os_error err;
	struct toml_value *v = parse(doc, &err);
	if (!v)
		fail_msg("rejected %s: %s", doc, err.msg);
	toml_free(v);
}

static void values_and_positions_are_recorded(void **state)
{
	os_error err;
	_cleanup_toml_ struct toml_value *doc = parse("# head\n"
						      "s = \"a\\tb\\u00e9\"\n"
						      "[t]\n"
						      "  n = 1_000\n"
						      "  f = 6.5e-1\n"
						      "  b = true\n"
						      "  d = 1979-05-27 07:32:00.5-07:00\n"
						      "  a = [1, 'x', [2]]\n",
						      &err);
	assert_non_null(doc);
	const struct toml_entry *s = toml_table_find(doc, "s", 1);
	assert_non_null(s);
	assert_int_equal(s->pos.line, 2);
	assert_int_equal(s->pos.col, 1);
	assert_int_equal(s->value->pos.col, 5);
	assert_string_equal(s->value->u.str.s, "a\tb\xc3\xa9");
	const struct toml_value *t = toml_table_get(doc, "t");
	assert_non_null(t);
	assert_int_equal(t->pos.line, 3); /* a table records its header */
	const struct toml_entry *n = toml_table_find(t, "n", 1);
	assert_int_equal(n->pos.line, 4);
	assert_int_equal(n->pos.col, 3);
	assert_int_equal(n->value->u.integer, 1000);
	assert_true(toml_table_get(t, "f")->u.flt == 0.65);
	assert_true(toml_table_get(t, "b")->u.boolean);
	const struct toml_value *d = toml_table_get(t, "d");
	assert_int_equal(d->type, TOML_DATETIME);
	assert_int_equal(d->u.dt.offset_minutes, -420);
	char text[64];
	assert_int_equal(toml_datetime_format(&d->u.dt, d->type, text, sizeof text, &err), 0);
	assert_string_equal(text, "1979-05-27T07:32:00.5-07:00");
	const struct toml_value *a = toml_table_get(t, "a");
	assert_int_equal(a->type, TOML_ARRAY);
	assert_int_equal(a->u.array.len, 3);
	assert_int_equal(a->u.array.items[1]->pos.line, 8);
	assert_int_equal(a->u.array.items[1]->pos.col, 11);
	assert_int_equal(a->u.array.items[2]->u.array.items[0]->u.integer, 2);
}

static void errors_name_file_line_and_column(void **state)
{
	assert_rejects("a = 1\nb = \n", "t.toml:2:5: expected a value, found end of line");
	assert_rejects("a = 1\na = 2\n", "t.toml:2:1: duplicate key 'a' (first defined at 1:1)");
	assert_rejects("x = \"ab\\qc\"", "t.toml:1:8: invalid escape sequence \\q");
	assert_rejects("\n\n  s = \"abc\n", "t.toml:3:11: newline in a single-line string");
	assert_rejects("s = '''abc", "t.toml:1:5: unterminated string");
	assert_rejects("# ok\n# bad \x01 here\n",
		       "t.toml:2:7: control character U+0001 in comment");
	assert_rejects("a = 1 b = 2", "t.toml:1:7: expected end of line, found 'b'");
	assert_rejects("[a]\nb = 1\n[a]\n", "t.toml:3:1: table 'a' is already defined at 1:1");
	assert_rejects("a = 99999999999999999999", "t.toml:1:5: integer '99999999999999999999' "
						   "does not fit in 64 bits");
	assert_rejects("a = 2023-02-29", "t.toml:1:5: invalid date '2023-02-29'");
	assert_rejects("a = -0x1", "t.toml:1:5: a sign is not allowed on '-0x1'");
	assert_rejects("a = {x = 1,}", "t.toml:1:12: trailing comma in an inline table");
	/* positive controls for the same constructs */
	assert_accepts("a = 1\nb = 2\n");
	assert_accepts("x = \"ab\\\\qc\"");
	assert_accepts("a = 2024-02-29");
	assert_accepts("a = {x = 1}");
	assert_accepts("a = 9223372036854775807\nb = -9223372036854775808");
	assert_rejects("a = 9223372036854775808", "t.toml:1:5: integer");
	assert_rejects("a = -9223372036854775809", "t.toml:1:5: integer");
}

static void input_cap_is_enforced(void **state)
{
	os_error err;
	_cleanup_free_ char *big = malloc(TOML_MAX_INPUT + 1);
	assert_non_null(big);
	memset(big, ' ', TOML_MAX_INPUT + 1);
	big[0] = '#';
	struct toml_value *v = toml_parse(big, TOML_MAX_INPUT, "big", &err); /* at the cap: ok */
	assert_non_null(v);
	toml_free(v);
	v = toml_parse(big, TOML_MAX_INPUT + 1, "big", &err);
	assert_null(v);
	assert_int_equal(err.code, EFBIG);
	assert_non_null(strstr(err.msg, "big: document is larger than"));
}

/* A document nesting `levels` arrays / inline tables below one key. */
static char *nested(const char *open, const char *close, size_t levels)
{
	struct buf b;
	os_error err;
	buf_init(&b, 1 << 22);
	assert_int_equal(buf_append_str(&b, "k = ", &err), 0);
	for (size_t i = 0; i < levels; i++)
		assert_int_equal(buf_append_str(&b, open, &err), 0);
	assert_int_equal(buf_append_str(&b, "1", &err), 0);
	for (size_t i = 0; i < levels; i++)
		assert_int_equal(buf_append_str(&b, close, &err), 0);
	return buf_steal(&b);
}

static void depth_bombs_are_rejected(void **state)
{
	/* The value of k is at depth 1; TOML_MAX_DEPTH - 1 arrays put the 1
	 * at exactly TOML_MAX_DEPTH. */
	_cleanup_free_ char *ok = nested("[", "]", TOML_MAX_DEPTH - 1);
	_cleanup_free_ char *over = nested("[", "]", TOML_MAX_DEPTH);
	_cleanup_free_ char *bomb = nested("[", "]", 200000);
	_cleanup_free_ char *tbl_ok = nested("{a=", "}", TOML_MAX_DEPTH - 1);
	_cleanup_free_ char *tbl_bomb = nested("{a=", "}", 200000);
	assert_accepts(ok);
	assert_rejects(over, "t.toml:1:");
	assert_rejects(bomb, "t.toml:1:");
	assert_accepts(tbl_ok);
	assert_rejects(tbl_bomb, "t.toml:1:");
	os_error err;
	assert_null(parse(bomb, &err));
	assert_non_null(strstr(err.msg, "nesting deeper than"));

	/* dotted keys and headers count too */
	struct buf key;
	buf_init(&key, 1 << 20);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(buf_append_str(&key, i ? ".a" : "a", &err), 0);
	_cleanup_free_ char *dotted = NULL, *header = NULL;
	assert_true(asprintf(&dotted, "%s = 1", key.data) > 0);
	assert_true(asprintf(&header, "[%s]", key.data) > 0);
	buf_free(&key);
	assert_rejects(dotted, "t.toml:1:");
	assert_rejects(header, "t.toml:1:");
	assert_accepts("a.b.c.d.e.f.g.h = 1\n[x.y.z.w]\n");
}

static void table_definition_rules(void **state)
{
	/* implicit tables may be defined once, later */
	assert_accepts("[a.b.c]\n[a]\nx = 1\n");
	assert_rejects("[a.b]\n[a]\n[a]\n", "t.toml:3:1: table 'a' is already defined");
	/* dotted-key tables cannot be reopened by a header ... */
	assert_rejects("[f]\napple.color = 1\n[f.apple]\n",
		       "t.toml:3:1: table 'f.apple' was already defined by dotted keys");
	/* ... but sub-tables of them can be added */
	assert_accepts("[f]\napple.color = 1\n[f.apple.texture]\nsmooth = true\n");
	/* header tables cannot be extended by dotted keys */
	assert_rejects("[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n",
		       "t.toml:4:1: table 'b' was defined at 1:4 and cannot be "
		       "extended by a dotted key");
	/* inline tables and static arrays are immutable */
	assert_rejects("a = {b = 1}\n[a]\n", "t.toml:2:1: cannot define table 'a': it is an "
					     "inline table (at 1:5)");
	assert_rejects("a = {b = 1}\na.c = 2\n", "t.toml:2:1: inline table 'a' cannot be extended");
	assert_rejects("a = []\n[[a]]\n", "t.toml:2:1: cannot define array of tables 'a': it "
					  "is a static array (at 1:5)");
	/* arrays of tables: each [[x]] appends; [x.y] goes into the last element */
	_cleanup_toml_ struct toml_value *doc = NULL;
	os_error err;
	doc = parse("[[x]]\nn = 1\n[[x]]\nn = 2\n[x.y]\nz = 3\n", &err);
	assert_non_null(doc);
	const struct toml_value *x = toml_table_get(doc, "x");
	assert_int_equal(x->u.array.len, 2);
	assert_null(toml_table_get(x->u.array.items[0], "y"));
	assert_non_null(toml_table_get(x->u.array.items[1], "y"));
}

static void utf8_is_validated(void **state)
{
	assert_accepts("s = \"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
	assert_rejects("s = \"\xc0\xaf\"", "t.toml:1:6: invalid UTF-8 byte 0xC0"); /* overlong */
	assert_rejects("s = \"\xed\xa0\x80\"", "t.toml:1:6: invalid UTF-8"); /* surrogate */
	assert_rejects("s = \"\xf4\x90\x80\x80\"", "t.toml:1:6: invalid UTF-8"); /* > U+10FFFF */
	assert_rejects("s = \"\xe2\x82\"", "t.toml:1:6: invalid UTF-8"); /* truncated */
	assert_rejects("s = \"\\uD800\"", "t.toml:1:6: escape \\uD800 is not a Unicode scalar");
	assert_rejects("a = 1\r\nb = 2\r", "t.toml:2:6: carriage return not followed");
	assert_accepts("a = 1\r\nb = 2\r\n");
}

static void strings_keep_embedded_nul(void **state)
{
	os_error err;
	_cleanup_toml_ struct toml_value *doc = parse("\"k\\u0000x\" = \"a\\u0000b\"", &err);
	assert_non_null(doc);
	const struct toml_entry *e = &doc->u.table.entries[0];
	assert_int_equal(e->key_len, 3);
	assert_memory_equal(e->key, "k\0x", 3);
	assert_int_equal(e->value->u.str.len, 3);
	assert_memory_equal(e->value->u.str.s, "a\0b", 3);
	assert_non_null(toml_table_find(doc, "k\0x", 3));
	assert_null(toml_table_get(doc, "k")); /* a C-string lookup stops at the NUL */
}

static void big_tables_use_the_index(void **state)
{
	struct buf b;
	os_error err;
	buf_init(&b, 1 << 22);
	for (int i = 0; i < 20000; i++)
		assert_int_equal(buf_printf(&b, &err, "k%d = %d\n", i, i), 0);
	_cleanup_free_ char *ok = strdup(b.data);
	assert_int_equal(buf_append_str(&b, "k12345 = 0\n", &err), 0);
	_cleanup_free_ char *dup = buf_steal(&b);
	_cleanup_toml_ struct toml_value *doc = parse(ok, &err);
	assert_non_null(doc);
	char key[16];
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof key, "k%d", i);
		const struct toml_value *v = toml_table_get(doc, key);
		assert_non_null(v);
		assert_int_equal(v->u.integer, i);
	}
	assert_null(toml_table_get(doc, "k20000"));
	assert_rejects(dup, "t.toml:20001:1: duplicate key 'k12345' (first defined at 12346:1)");
}

static void datetimes_are_checked_and_formatted(void **state)
{
	os_error err;
	_cleanup_toml_ struct toml_value *doc = parse("a = 2000-02-29T23:59:60.123456789123Z\n"
						      "b = 07:32:00\n"
						      "c = 1979-05-27t00:32:00\n"
						      "d = 1979-05-27\n",
						      &err);
	assert_non_null(doc);
	char text[64];
	const char *want[][2] = { { "a", "2000-02-29T23:59:60.123456789Z" },
				  { "b", "07:32:00" },
				  { "c", "1979-05-27T00:32:00" },
				  { "d", "1979-05-27" } };
	for (size_t i = 0; i < 4; i++) {
		const struct toml_value *v = toml_table_get(doc, want[i][0]);
		assert_int_equal(toml_datetime_format(&v->u.dt, v->type, text, sizeof text, &err),
				 0);
		assert_string_equal(text, want[i][1]);
	}
	assert_string_equal(toml_type_name(toml_table_get(doc, "b")->type), "time-local");
	assert_rejects("a = 1979-05-27T24:00:00", "t.toml:1:5: invalid date-time");
	assert_rejects("a = 1979-05-27T07:32:00+24:00", "t.toml:1:5: invalid date-time offset");
	assert_rejects("a = 2100-02-29", "t.toml:1:5: invalid date"); /* not a leap year */
}

static void parse_file_reads_and_locates(void **state)
{
	os_error err;
	char path[] = "/tmp/test_toml_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char doc[] = "a = 1\nb = [\n";
	assert_int_equal(write(fd, doc, sizeof doc - 1), (ssize_t)(sizeof doc - 1));
	close(fd);
	assert_null(toml_parse_file(path, &err));
	char want[128];
	snprintf(want, sizeof want, "%s:3:1: expected a value, found end of input", path);
	assert_string_equal(err.msg, want);
	unlink(path);
	assert_null(toml_parse_file(path, &err));
	assert_int_equal(err.code, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(values_and_positions_are_recorded),
		cmocka_unit_test(errors_name_file_line_and_column),
		cmocka_unit_test(input_cap_is_enforced),
		cmocka_unit_test(depth_bombs_are_rejected),
		cmocka_unit_test(table_definition_rules),
		cmocka_unit_test(utf8_is_validated),
		cmocka_unit_test(strings_keep_embedded_nul),
		cmocka_unit_test(big_tables_use_the_index),
		cmocka_unit_test(datetimes_are_checked_and_formatted),
		cmocka_unit_test(parse_file_reads_and_locates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
