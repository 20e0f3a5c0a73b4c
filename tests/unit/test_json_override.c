/* test_json_override.c - the streamed `_method` finder of JSON bodies
 * (src/supervisor/egress/json_override.c): top-level members only, names
 * decoded and compared without case, strings with brackets and quotes
 * inside skipped, non-string values refused, and every split of a body
 * into reads giving the same answer as the whole. Each finding has a body
 * beside it that holds the same words but no override. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "json_override.h"

/* The overrides found in body, fed in reads of step bytes, joined by ','
 * into out ("" for none, "!" when the scan failed). */
static const char *scan(const char *body, size_t step, char *out, size_t cap)
{
	struct json_override j;
	json_override_init(&j);
	size_t n = strlen(body);
	for (size_t i = 0; i < n; i += step)
		json_override_feed(&j, body + i, n - i < step ? n - i : step);
	out[0] = '\0';
	if (j.failed) {
		snprintf(out, cap, "!");
		return out;
	}
	for (size_t i = 0; i < j.found.n; i++) {
		if (i)
			strncat(out, ",", cap - strlen(out) - 1);
		strncat(out, j.found.method[i], cap - strlen(out) - 1);
	}
	return out;
}

static void expect(const char *body, const char *want)
{
	char whole[128], split[128];
	assert_string_equal(scan(body, strlen(body) + 1, whole, sizeof whole), want);
	for (size_t step = 1; step < 8; step++)
		assert_string_equal(scan(body, step, split, sizeof split), want);
}

static void top_level_members_found(void **state)
{
	(void)state;
	expect("{\"_method\":\"DELETE\"}", "DELETE");
	expect(" {\n \"a\" : 1, \"_Method\" : \"put\" , \"_method\":\"PATCH\"}", "PUT,PATCH");
	expect("{\"\\u005fmethod\":\"DEL\\u0045TE\"}", "DELETE");
	expect("{\"a\":\"}\\\"{[\",\"_method\":\"DELETE\"}", "DELETE");
	expect("{\"a\":{\"b\":[1,{\"c\":2}]},\"_method\":\"DELETE\"}", "DELETE");
}

static void same_words_without_an_override(void **state)
{
	(void)state;
	expect("{\"a\":{\"_method\":\"DELETE\"}}", "");
	expect("[{\"_method\":\"DELETE\"}]", "");
	expect("{\"note\":\"_method\",\"x\":\"DELETE\"}", "");
	expect("{\"x\":\"\\\"_method\\\":\\\"DELETE\"}", "");
	expect("{\"_methods\":\"DELETE\",\"__method\":\"PUT\",\"_m\\u00e9thod\":\"X\"}", "");
	expect("\"_method\"", "");
	expect("", "");
}

static void values_that_are_not_methods_fail(void **state)
{
	(void)state;
	expect("{\"_method\":[\"DELETE\"]}", "!");
	expect("{\"_method\":{\"a\":1}}", "!");
	expect("{\"_method\":null}", "!");
	expect("{\"_method\":12}", "!");
	expect("{\"_method\":\"DE LETE\"}", "!");
	expect("{\"_method\":\"D\\u00c9LETE\"}", "!");
	expect("{\"_method\":\"\"}", "!");
	/* More overrides than a request may carry. */
	char many[400];
	size_t len = (size_t)snprintf(many, sizeof many, "{");
	for (int i = 0; i < SHAPE_OVERRIDES_MAX + 1; i++)
		len += (size_t)snprintf(many + len, sizeof many - len, "%s\"_method\":\"GET\"",
					i ? "," : "");
	snprintf(many + len, sizeof many - len, "}");
	expect(many, "!");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(top_level_members_found),
		cmocka_unit_test(same_words_without_an_override),
		cmocka_unit_test(values_that_are_not_methods_fail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
