/* test_graphql.c - the GraphQL document parser: the operation a request
 * selects and its real root fields (aliases and fragments seen through),
 * upstream's expected answers, and each refusal with an accepted control. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graphql.h"

/* "type name f1,f2" for an accepted document. */
static void accepted(const char *doc, const char *opname, const char *want)
{
	struct graphql_operation op;
	os_error err = { 0 };
	if (graphql_classify(doc, strlen(doc), opname, &op, &err) < 0)
		fail_msg("%s refused: %s", doc, err.msg);
	char got[512];
	size_t o = (size_t)snprintf(got, sizeof got, "%s %s ", graphql_op_type_name(op.type),
				    op.name ? op.name : "-");
	for (size_t i = 0; i < op.n_fields && o < sizeof got; i++)
		o += (size_t)snprintf(got + o, sizeof got - o, "%s%s", i ? "," : "", op.fields[i]);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got \"%s\", want \"%s\"", doc, got, want);
	graphql_operation_free(&op);
}

static void refused(const char *doc, const char *opname, const char *needle)
{
	struct graphql_operation op;
	os_error err = { 0 };
	if (graphql_classify(doc, strlen(doc), opname, &op, &err) == 0)
		fail_msg("%s accepted, expected \"%s\"", doc, needle);
	if (!strstr(err.msg, needle))
		fail_msg("%s: error \"%s\" lacks \"%s\"", doc, err.msg, needle);
	assert_null(op.fields);
	assert_null(op.name);
}

static void upstream_answers(void **state)
{
	(void)state;
	accepted("query Viewer { viewer { login } }", NULL, "query Viewer viewer");
	accepted("mutation M { safeAlias: volumeDelete(volumeId:\"x\") { id } }", "M",
		 "mutation M volumeDelete");
	accepted("query Q { ...RootFields } fragment RootFields on Query { viewer "
		 "repository(owner:\"o\", name:\"r\") { id } }",
		 NULL, "query Q repository,viewer");
	refused("query A { viewer { login } } query B { rateLimit { limit } }", NULL,
		"2 operations but no operationName");
	accepted("query A { viewer { login } } query B { rateLimit { limit } }", "B",
		 "query B rateLimit");
}

static void aliases_and_fragments_do_not_hide_fields(void **state)
{
	(void)state;
	/* The alias is a harmless-looking name; the field is what runs. */
	accepted("mutation { viewer: deleteRepo(id: 1) { id } }", NULL, "mutation - deleteRepo");
	/* Inline fragments, with and without a type condition, nested. */
	accepted("mutation { ... on Mutation { ... @include(if: true) { deleteRepo(id:1) } } "
		 "safe }",
		 NULL, "mutation - deleteRepo,safe");
	/* A spread chain to the denied field, a fragment used twice. */
	accepted("mutation D { ...A ...A } fragment A on Mutation { ...B } fragment B on "
		 "Mutation { x: deleteRepo }",
		 NULL, "mutation D deleteRepo");
	/* Nested fields are not root fields. */
	accepted("{ viewer { deleteRepo } }", NULL, "query - viewer");
	/* A fragment spread nested under a field does not lift its fields. */
	accepted("{ viewer { ...F } } fragment F on User { deleteRepo }", NULL, "query - viewer");
	/* Cycles are refused; a fragment spread twice (no cycle) is fine. */
	refused("{ ...A } fragment A on Query { a ...B } fragment B on Query { b ...A }", NULL,
		"line 1, column 68: fragment 'A' spreads itself");
	refused("subscription { ...A } fragment A on S { ...A }", NULL, "spreads itself");
	accepted("{ ...A ...B } fragment A on Q { a ...B } fragment B on Q { b }", NULL,
		 "query - a,b");
	accepted("{ __typename }", NULL, "query - __typename");
}

static void names_in_comments_and_strings_are_not_fields(void **state)
{
	(void)state;
	accepted("# deleteRepo\n{ viewer(note: \"deleteRepo }\") }", NULL, "query - viewer");
	accepted("{ viewer(note: \"\"\"\n  { deleteRepo } \\\"\"\" \n\"\"\") }", NULL,
		 "query - viewer");
	accepted("{ viewer(s: \"\\u00e9\\u{1F600}\\n\") }", NULL, "query - viewer");
	accepted("\xEF\xBB\xBF{ a, b,, c }", NULL, "query - a,b,c");
	accepted("query Q($id: ID! = 1, $l: [[Int!]] @d) @op { a(x: $id, y: {k: [1, -2.5e3, "
		 "null, true, ENUM]}) }",
		 NULL, "query Q a");
	accepted("subscription S { onEvent }", NULL, "subscription S onEvent");
}

static void lexical_errors_have_positions(void **state)
{
	(void)state;
	refused("{ a(x: \"open) }", NULL, "line 1, column 8: unterminated string");
	refused("{\n  a(x: 0123) }", NULL, "line 2, column 8: a number cannot have a leading zero");
	refused("{ a(x: 1.) }", NULL, "fractional part");
	refused("{ a(x: 1e) }", NULL, "exponent");
	refused("{ a(x: 12abc) }", NULL, "cannot be followed");
	refused("{ a(x: \"\\q\") }", NULL, "invalid escape");
	refused("{ a(x: \"\\u12\") }", NULL, "four hex digits");
	refused("{ a(x: \"\\u{D800}\") }", NULL, "\\u{...}");
	refused("{ a(x: \"\"\" never closed) }", NULL, "unterminated block string");
	refused("{ a .. }", NULL, "spread");
	refused("{ a ? }", NULL, "unexpected character '?'");
	refused("{ a(x: \"\xff\") }", NULL, "not valid UTF-8");
	refused("{ a(x: \"\xc0\xaf\") }", NULL, "not valid UTF-8"); /* overlong '/' */
	refused("{ a\x01 }", NULL, "control character U+0001");
	refused("{ a(x: \"a\nb\") }", NULL, "line break");
}

static void grammar_errors(void **state)
{
	(void)state;
	refused("", NULL, "empty");
	refused("  # only a comment\n", NULL, "empty");
	refused("{ }", NULL, "expected a field");
	refused("{ a(): b }", NULL, "argument name");
	refused("{ a", NULL, "end of the document");
	refused("query Q($x: Int = $y) { a }", NULL, "variable is not allowed");
	refused("query Q($x) { a }", NULL, "expected ':'");
	refused("type Query { a: Int }", NULL, "type system definitions are not executable");
	refused("\"doc\" scalar X", NULL, "type system definitions are not executable");
	refused("{ ...Missing }", NULL, "fragment 'Missing' is not defined");
	refused("{ a { ...Missing } }", NULL, "fragment 'Missing' is not defined");
	refused("fragment F on Q { a }", NULL, "no operation");
	refused("fragment on on Q { a } { ...on }", NULL, "cannot be named 'on'");
	refused("fragment F Q { a } { ...F }", NULL, "'on' and a type condition");
	refused("query A { a } query A { b }", "A", "operation 'A' is defined twice");
	refused("{ ...F } fragment F on Q { a } fragment F on Q { b }", NULL,
		"fragment 'F' is defined twice");
	refused("{ a } query B { b }", "B", "anonymous operation must be the only");
	refused("query A { a }", "B", "operationName \"B\" was not found");
	refused("query A { a } }", NULL, "expected an operation or a fragment");
}

static void bounds(void **state)
{
	(void)state;
	size_t n = GRAPHQL_DEPTH_MAX + 2, len = 1024;
	char *doc = malloc(len + 1);
	assert_non_null(doc);
	/* Nested lists in an argument deeper than the cap. */
	size_t o = (size_t)snprintf(doc, len + 1, "{a(x:");
	for (size_t i = 0; i < n; i++)
		doc[o++] = '[';
	doc[o] = 0;
	refused(doc, NULL, "deeper than 128");
	/* Nested selection sets within the cap are fine. */
	o = 0;
	for (size_t i = 0; i < 100; i++)
		o += (size_t)snprintf(doc + o, len + 1 - o, "{a");
	for (size_t i = 0; i < 100; i++)
		doc[o++] = '}';
	doc[o] = 0;
	accepted(doc, NULL, "query - a");
	free(doc);
	/* Token cap. */
	size_t big = (GRAPHQL_TOKEN_MAX + 10) * 2 + 8;
	doc = malloc(big);
	assert_non_null(doc);
	o = (size_t)snprintf(doc, big, "{");
	while (o + 4 < big)
		o += (size_t)snprintf(doc + o, big - o, "a ");
	doc[o++] = '}';
	doc[o] = 0;
	refused(doc, NULL, "more than 20000 tokens");
	free(doc);
	/* Root field cap: 257 distinct fields. */
	doc = malloc(8192);
	o = (size_t)snprintf(doc, 8192, "{");
	for (int i = 0; i <= GRAPHQL_FIELDS_MAX; i++)
		o += (size_t)snprintf(doc + o, 8192 - o, " f%d", i);
	snprintf(doc + o, 8192 - o, "}");
	refused(doc, NULL, "more than 256 root fields");
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(upstream_answers),
		cmocka_unit_test(aliases_and_fragments_do_not_hide_fields),
		cmocka_unit_test(names_in_comments_and_strings_are_not_fields),
		cmocka_unit_test(lexical_errors_have_positions),
		cmocka_unit_test(grammar_errors),
		cmocka_unit_test(bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
