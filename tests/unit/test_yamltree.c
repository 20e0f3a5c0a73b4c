/* test_yamltree.c - unit tests of the strict YAML tree loader: structure and
 * positions, scalar styles, and each rejected feature beside an accepted twin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "yamltree.h"

static struct ytree *parse_ok(const char *text)
{
	struct ytree *t = NULL;
	os_error err = { 0 };
	int r = ytree_parse("t.yaml", text, strlen(text), &t, &err);
	if (r < 0)
		fail_msg("unexpected error: %s", err.msg);
	return t;
}

/* Parses text expecting failure; returns the message. */
static const char *parse_err(const char *text, size_t len)
{
	static os_error err;
	struct ytree *t = NULL;
	os_error_clear(&err);
	assert_int_equal(ytree_parse("t.yaml", text, len, &t, &err), -1);
	assert_null(t);
	return err.msg;
}

static void builds_tree_with_positions(void **state)
{
	struct ytree *t = parse_ok("a: 1\nb:\n  - x\n  - {c: d}\n");
	const struct ynode *r = t->root;
	assert_int_equal(r->kind, YNODE_MAPPING);
	assert_int_equal(r->map.n, 2);
	assert_string_equal(r->map.pairs[0].key->scalar.value, "a");
	const struct ynode *b = ynode_map_get(r, "b");
	assert_non_null(b);
	assert_int_equal(b->kind, YNODE_SEQUENCE);
	assert_int_equal(b->seq.n, 2);
	assert_int_equal(b->seq.items[0]->line, 3);
	assert_int_equal(b->seq.items[0]->col, 5);
	const struct ynode *c = ynode_map_get(b->seq.items[1], "c");
	assert_true(ynode_scalar_eq(c, "d"));
	assert_int_equal(c->line, 4);
	assert_int_equal(c->col, 9);
	assert_null(ynode_map_get(r, "missing"));
	assert_int_equal(t->n_nodes, 9); /* root, a, 1, b, seq, x, map, c, d */
	ytree_free(t);
}

static void keeps_scalar_style(void **state)
{
	struct ytree *t = parse_ok("p: true\nq: \"true\"\nr: 'x'\ns: |\n  lit\nn: ~\ne:\n");
	assert_int_equal(ynode_map_get(t->root, "p")->scalar.style, YSCALAR_PLAIN);
	assert_int_equal(ynode_map_get(t->root, "q")->scalar.style, YSCALAR_QUOTED);
	assert_int_equal(ynode_map_get(t->root, "r")->scalar.style, YSCALAR_QUOTED);
	assert_int_equal(ynode_map_get(t->root, "s")->scalar.style, YSCALAR_QUOTED);
	assert_string_equal(ynode_map_get(t->root, "s")->scalar.value, "lit\n");
	assert_true(ynode_is_null(ynode_map_get(t->root, "n")));
	assert_true(ynode_is_null(ynode_map_get(t->root, "e")));
	assert_false(ynode_is_null(ynode_map_get(t->root, "q")));
	ytree_free(t);
}

static void rejects_duplicate_keys(void **state)
{
	ytree_free(parse_ok("a: 1\nb: 1\n")); /* control */
	const char *m = parse_err("a: 1\nb: 2\na: 3\n", 15);
	assert_non_null(strstr(m, "t.yaml:3:1: duplicate key \"a\" (first at line 1)"));
	/* Quoting does not make a different key. */
	m = parse_err("a: 1\n\"a\": 2\n", 12);
	assert_non_null(strstr(m, "2:1: duplicate key"));
}

static void rejects_anchors_aliases_and_tags(void **state)
{
	ytree_free(parse_ok("a: [1]\nb: [1]\n")); /* control: same content, no anchor */
	assert_non_null(
		strstr(parse_err("a: &x [1]\nb: *x\n", 16), "1:4: anchors are not allowed"));
	assert_non_null(strstr(parse_err("b: *x\n", 6), "aliases are not allowed"));
	assert_non_null(strstr(parse_err("a: !!str 1\n", 11), "1:4: tags are not allowed"));
	assert_non_null(strstr(parse_err("a: !custom {}\n", 14), "tags are not allowed"));
	assert_non_null(strstr(parse_err("%TAG !e! tag:x,2000:\n---\na: 1\n", 29),
			       "tag directives are not allowed"));
}

static void rejects_multiple_and_empty_documents(void **state)
{
	ytree_free(parse_ok("---\na: 1\n...\n")); /* control: one explicit document */
	assert_non_null(strstr(parse_err("a: 1\n---\nb: 2\n", 14),
			       "2:1: only one YAML document is allowed"));
	assert_non_null(strstr(parse_err("", 0), "empty document"));
	assert_non_null(strstr(parse_err("# only a comment\n", 17), "empty document"));
}

static void rejects_non_string_keys(void **state)
{
	ytree_free(parse_ok("\"1\": x\n")); /* control */
	assert_non_null(strstr(parse_err("[a]: 1\n", 7), "mapping keys must be non-empty strings"));
	assert_non_null(strstr(parse_err("? {a: 1}\n: 2\n", 13), "mapping keys"));
	assert_non_null(strstr(parse_err("~: 1\n", 5), "mapping keys"));
}

static void enforces_depth_cap(void **state)
{
	char deep[2 * (YTREE_MAX_DEPTH + 1) + 1];
	size_t n = 0;
	for (int i = 0; i < YTREE_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (int i = 0; i < YTREE_MAX_DEPTH; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	ytree_free(parse_ok(deep)); /* exactly the cap: fine */
	char deeper[sizeof deep + 2];
	snprintf(deeper, sizeof deeper, "[%s]", deep);
	assert_non_null(strstr(parse_err(deeper, strlen(deeper)), "nesting deeper than 64"));
}

static void enforces_size_caps(void **state)
{
	size_t len = YTREE_MAX_INPUT + 1;
	char *big = malloc(len);
	assert_non_null(big);
	memset(big, ' ', len);
	big[0] = 'a';
	big[1] = ':';
	assert_non_null(strstr(parse_err(big, len), "larger than 4 MiB"));
	free(big);

	size_t slen = YTREE_MAX_SCALAR + 8;
	char *s = malloc(slen + 1);
	assert_non_null(s);
	memcpy(s, "a: ", 3);
	memset(s + 3, 'x', slen - 3);
	s[YTREE_MAX_SCALAR + 3] = '\0'; /* exactly the cap: accepted */
	ytree_free(parse_ok(s));
	s[YTREE_MAX_SCALAR + 3] = 'x';
	s[slen] = '\0';
	assert_non_null(strstr(parse_err(s, slen), "scalar longer than 65536"));
	free(s);
}

static void enforces_node_cap(void **state)
{
	/* A flow sequence of YTREE_MAX_NODES + 1 short items. */
	struct buf b;
	os_error err = { 0 };
	buf_init(&b, YTREE_MAX_INPUT);
	assert_int_equal(buf_append_str(&b, "[", &err), 0);
	for (size_t i = 0; i < YTREE_MAX_NODES; i++)
		assert_int_equal(buf_append_str(&b, "1,", &err), 0);
	assert_int_equal(buf_append_str(&b, "1]", &err), 0);
	assert_non_null(strstr(parse_err(b.data, b.len), "too many nodes"));
	buf_free(&b);
	ytree_free(parse_ok("[1, 2, 3]")); /* control */
}

static void rejects_nul_in_scalar(void **state)
{
	ytree_free(parse_ok("a: \"x\\ty\"\n")); /* control: other escapes are fine */
	assert_non_null(strstr(parse_err("a: \"x\\0y\"\n", 10), "NUL"));
}

static void reports_syntax_errors_with_position(void **state)
{
	const char *m = parse_err("a: [1, 2\nb: 3\n", 14);
	assert_non_null(strstr(m, "t.yaml:"));
	assert_non_null(strstr(m, ":2:"));
}

static void loads_files(void **state)
{
	struct ytree *t = NULL;
	os_error err = { 0 };
	assert_int_equal(ytree_load_file("/nonexistent/x.yaml", &t, &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/x.yaml"));
	char path[] = "/tmp/test_yamltree_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "k: v\n", 5), 5);
	close(fd);
	assert_int_equal(ytree_load_file(path, &t, &err), 0);
	assert_true(ynode_scalar_eq(ynode_map_get(t->root, "k"), "v"));
	ytree_free(t);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(builds_tree_with_positions),
		cmocka_unit_test(keeps_scalar_style),
		cmocka_unit_test(rejects_duplicate_keys),
		cmocka_unit_test(rejects_anchors_aliases_and_tags),
		cmocka_unit_test(rejects_multiple_and_empty_documents),
		cmocka_unit_test(rejects_non_string_keys),
		cmocka_unit_test(enforces_depth_cap),
		cmocka_unit_test(enforces_size_caps),
		cmocka_unit_test(enforces_node_cap),
		cmocka_unit_test(rejects_nul_in_scalar),
		cmocka_unit_test(reports_syntax_errors_with_position),
		cmocka_unit_test(loads_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
