/* test_gateway_store.c - the gateway's store and secrets: resource versions
 * refuse stale writes, names are unique, sealed secrets round-trip and any
 * tampering or wrong key is refused, key files wider than 0600 are refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "json.h"
#include "local_driver.h"
#include "secret.h"
#include "store.h"

static char dir[] = "/tmp/osgw-unit-XXXXXX";

static struct store *open_store(void)
{
	char path[128];
	struct store *s = NULL;
	os_error err = { 0 };
	snprintf(path, sizeof(path), "%s/db-%d", dir, rand());
	assert_int_equal(store_open(path, &s, &err), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	return s;
}

static json_t *row(const char *id, const char *name)
{
	return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:n, s:s, s:[]}", "id", id, "name", name,
			 "record", "phase", "Provisioning", "desired", "running", "message", "",
			 "exit_code", "token_hash", id, "providers");
}

static void stale_write_is_estale_current_write_succeeds(void **state)
{
	struct store *s = open_store();
	os_error err = { 0 };
	_cleanup_json_ json_t *a = row("id1", "one"), *b = NULL;
	assert_int_equal(store_sandbox_insert(s, a, &err), 0);
	assert_int_equal(store_sandbox_get(s, "one", &b, &err), 0);
	json_object_set_new(a, "phase", json_string("Ready"));
	assert_int_equal(store_sandbox_update(s, a, &err), 0); /* current: ok */
	json_object_set_new(b, "phase", json_string("Error"));
	assert_int_equal(store_sandbox_update(s, b, &err), -1); /* read before a's write */
	assert_int_equal(err.code, ESTALE);
	json_decref(b);
	assert_int_equal(store_sandbox_get(s, "id1", &b, &err), 0);
	assert_string_equal(json_string_value(json_object_get(b, "phase")), "Ready");
	store_close(s);
}

static void duplicate_name_is_eexist(void **state)
{
	struct store *s = open_store();
	os_error err = { 0 };
	_cleanup_json_ json_t *a = row("id1", "same"), *b = row("id2", "same"),
			      *c = row("id3", "other");
	assert_int_equal(store_sandbox_insert(s, a, &err), 0);
	assert_int_equal(store_sandbox_insert(s, b, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(store_sandbox_insert(s, c, &err), 0);
	store_close(s);
}

static void policy_revisions_count_up_per_sandbox(void **state)
{
	struct store *s = open_store();
	os_error err = { 0 };
	int64_t r1 = 0, r2 = 0, r3 = 0;
	assert_int_equal(store_policy_add(s, "a", "h", "v: 1", "pending", "", 0, &r1, &err), 0);
	assert_int_equal(store_policy_add(s, "a", "h", "v: 2", "pending", "", 0, &r2, &err), 0);
	assert_int_equal(store_policy_add(s, "b", "h", "v: 1", "pending", "", 0, &r3, &err), 0);
	assert_int_equal(r1, 1);
	assert_int_equal(r2, 2);
	assert_int_equal(r3, 1);
	_cleanup_json_ json_t *latest = NULL;
	assert_int_equal(store_policy_latest(s, "a", &latest, &err), 0);
	assert_string_equal(json_string_value(json_object_get(latest, "policy")), "v: 2");
	store_close(s);
}

static void sealed_secret_round_trips_and_refuses_tampering(void **state)
{
	struct secret_key k1, k2;
	char p1[128], p2[128];
	os_error err = { 0 };
	snprintf(p1, sizeof(p1), "%s/k1", dir);
	snprintf(p2, sizeof(p2), "%s/k2", dir);
	assert_int_equal(secret_key_load_or_create(p1, &k1, &err), 0);
	assert_int_equal(secret_key_load_or_create(p2, &k2, &err), 0);
	_cleanup_free_ char *sealed = NULL, *plain = NULL, *bad = NULL;
	assert_int_equal(secret_seal(&k1, "hunter2", 7, &sealed, &err), 0);
	assert_null(strstr(sealed, "hunter2"));
	assert_int_equal(secret_open(&k1, sealed, &plain, NULL, &err), 0);
	assert_string_equal(plain, "hunter2");
	assert_int_equal(secret_open(&k2, sealed, &bad, NULL, &err), -1); /* wrong key */
	sealed[10] = sealed[10] == 'A' ? 'B' : 'A';
	assert_int_equal(secret_open(&k1, sealed, &bad, NULL, &err), -1); /* tampered */
	/* Reloading gives the same key. */
	struct secret_key again;
	assert_int_equal(secret_key_load_or_create(p1, &again, &err), 0);
	assert_memory_equal(again.k, k1.k, SECRET_KEY_LEN);
}

static void key_file_readable_by_others_is_refused(void **state)
{
	struct secret_key k;
	char p[128];
	os_error err = { 0 };
	snprintf(p, sizeof(p), "%s/wide", dir);
	assert_int_equal(secret_key_load_or_create(p, &k, &err), 0);
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(secret_key_load_or_create(p, &k, &err), -1);
	assert_non_null(strstr(err.msg, "0600"));
}

static void local_spec_refuses_what_it_cannot_honour(void **state)
{
	os_error err = { 0 };
	_cleanup_json_ json_t *ok =
		json_pack("{s:[s], s:{s:s}}", "command", "true", "env", "A", "b");
	_cleanup_json_ json_t *proxy =
		json_pack("{s:[s], s:{s:s}}", "command", "true", "env", "HTTPS_PROXY", "x");
	_cleanup_json_ json_t *rc =
		json_pack("{s:[s], s:s}", "command", "true", "runtime_class_name", "kata");
	_cleanup_json_ json_t *label =
		json_pack("{s:[s], s:{s:s}}", "command", "true", "labels", "openshell.ai/x", "y");
	assert_int_equal(local_spec_validate(ok, &err), 0);
	assert_int_equal(local_spec_validate(proxy, &err), -1);
	assert_non_null(strstr(err.msg, "HTTPS_PROXY"));
	assert_int_equal(local_spec_validate(rc, &err), -1);
	assert_non_null(strstr(err.msg, "runtime_class_name"));
	assert_int_equal(local_spec_validate(label, &err), -1);
	assert_non_null(strstr(err.msg, "openshell.ai/"));
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stale_write_is_estale_current_write_succeeds),
		cmocka_unit_test(duplicate_name_is_eexist),
		cmocka_unit_test(policy_revisions_count_up_per_sandbox),
		cmocka_unit_test(sealed_secret_round_trips_and_refuses_tampering),
		cmocka_unit_test(key_file_readable_by_others_is_refused),
		cmocka_unit_test(local_spec_refuses_what_it_cannot_honour),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	return rc;
}
