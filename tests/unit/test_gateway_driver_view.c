/* test_gateway_driver_view.c - what GET /v1/sandboxes/NAME adds from the
 * driver: only its "pods" and "conditions" (never other status fields), the
 * stored record untouched even when the driver writes to the one it is given,
 * "status_error" when the backend cannot be read; and the policy summary
 * handed to validate_spec (restricts_binaries). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "driver_view.h"
#include "gateway.h"
#include "json.h"

static bool fail_status;

/* Like the kubernetes driver, status writes "conditions" into the record. */
static int fake_status(struct driver *d, json_t *record, json_t **out, os_error *err)
{
	if (fail_status)
		return os_error_set(err, EIO, "GET /api/v1/pods: HTTP 503");
	json_object_set_new(record, "conditions", json_pack("[{s:s}]", "type", "Written"));
	*out = json_pack("{s:s, s:s, s:[{s:s, s:n}], s:[{s:s}]}", "phase", "Running", "internal",
			 "not for the API", "pods", "name", "os-a-supervisor", "runtimeClassName",
			 "conditions", "type", "SupervisorReady");
	return 0;
}

static const struct driver_ops fake_ops = { .name = "fake", .status = fake_status };

static void view_gets_pods_and_conditions_only(void **state)
{
	struct driver drv = { .ops = &fake_ops };
	struct gateway gw = { .driver = &drv };
	_cleanup_json_ json_t *row = json_pack("{s:s, s:{s:s}}", "id", "a", "record", "id", "a");
	_cleanup_json_ json_t *before = json_deep_copy(row);
	_cleanup_json_ json_t *view = json_pack("{s:s}", "name", "a");
	fail_status = false;
	driver_view_add_status(&gw, row, view);
	const json_t *pods = json_object_get(view, "pods");
	assert_int_equal(json_array_size(pods), 1);
	assert_true(json_is_null(json_object_get(json_array_get(pods, 0), "runtimeClassName")));
	assert_int_equal(json_array_size(json_object_get(view, "conditions")), 1);
	assert_null(json_object_get(view, "internal"));
	assert_null(json_object_get(view, "status_error"));
	assert_true(json_equal(row, before)); /* the stored record is not rewritten */
}

static void view_reports_an_unreadable_backend(void **state)
{
	struct driver drv = { .ops = &fake_ops };
	struct gateway gw = { .driver = &drv };
	_cleanup_json_ json_t *row = json_pack("{s:s, s:{}}", "id", "a", "record");
	_cleanup_json_ json_t *view = json_object();
	fail_status = true;
	driver_view_add_status(&gw, row, view);
	assert_string_equal(json_string_value(json_object_get(view, "status_error")),
			    "GET /api/v1/pods: HTTP 503");
	assert_null(json_object_get(view, "pods"));
}

static void policy_summary_flags_binaries(void **state)
{
	const char *with = "version: 1\nnetwork_policies:\n  gh:\n    endpoints:\n"
			   "      - host: api.github.com\n        port: 443\n"
			   "    binaries:\n      - path: /usr/bin/curl\n";
	const char *without = "version: 1\nnetwork_policies:\n  gh:\n    endpoints:\n"
			      "      - host: api.github.com\n        port: 443\n";
	_cleanup_json_ json_t *a = driver_view_policy(with), *b = driver_view_policy(without);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(json_is_true(json_object_get(a, "restricts_binaries")));
	assert_true(json_is_false(json_object_get(b, "restricts_binaries")));
	assert_string_equal(json_string_value(json_object_get(b, "yaml")), without);
}

static void policy_summary_refuses_what_does_not_parse(void **state)
{
	assert_null(driver_view_policy("version: 1\nnot_a_key: [\n"));
	_cleanup_json_ json_t *ok = driver_view_policy("version: 1\n");
	assert_non_null(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(view_gets_pods_and_conditions_only),
		cmocka_unit_test(view_reports_an_unreadable_backend),
		cmocka_unit_test(policy_summary_flags_binaries),
		cmocka_unit_test(policy_summary_refuses_what_does_not_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
