/* test_sandbox_ids.c - unit tests for the launcher's /etc/passwd and
 * /etc/group parsing (src/sandbox/ids.c): names resolve, root never does,
 * malformed or prefix-only matches are errors, not guesses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/sandbox/ids.h"

static const char passwd[] = "root:x:0:0:root:/root:/bin/sh\n"
			     "sandboxer:x:7:7::/:/bin/sh\n"
			     "sandbox:x:1234:2345::/home/sandbox:/bin/sh\n"
			     "toor:x:0:5::/:/bin/sh\n"
			     "broken:x:12\n"
			     "hexy:x:0x10:5::/:/bin/sh\n"
			     "last:x:99:98::/:/bin/sh";

static void test_user_resolves_uid_and_primary_gid(void **state)
{
	uid_t uid = 0;
	gid_t gid = 0;
	os_error err = { 0 };
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "sandbox", &uid, &gid, &err), 0);
	assert_int_equal(uid, 1234);
	assert_int_equal(gid, 2345);
	/* The last line has no trailing newline and still resolves. */
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "last", &uid, &gid, &err), 0);
	assert_int_equal(uid, 99);
}

static void test_name_prefix_does_not_match(void **state)
{
	uid_t uid = 0;
	gid_t gid = 0;
	os_error err = { 0 };
	/* "sandboxer" precedes "sandbox": only the exact name may match. */
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "sandbox", &uid, &gid, &err), 0);
	assert_int_equal(uid, 1234);
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "sand", &uid, &gid, &err), -1);
	assert_int_equal(err.code, ENOENT);
}

static void test_root_ids_are_refused(void **state)
{
	uid_t uid = 0;
	gid_t gid = 0;
	os_error err = { 0 };
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "root", &uid, &gid, &err), -1);
	assert_int_equal(err.code, EPERM);
	/* Another name with uid 0 is root too. */
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "toor", &uid, &gid, &err), -1);
	assert_int_equal(err.code, EPERM);
	assert_non_null(strstr(err.msg, "root"));
}

static void test_malformed_lines_are_errors(void **state)
{
	uid_t uid = 0;
	gid_t gid = 0;
	os_error err = { 0 };
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "broken", &uid, &gid, &err), -1);
	assert_int_equal(err.code, EINVAL);
	assert_int_equal(ids_find_user(passwd, strlen(passwd), "hexy", &uid, &gid, &err), -1);
	assert_non_null(strstr(err.msg, "hexy"));
}

static void test_group_resolves_and_refuses_root(void **state)
{
	static const char group[] = "root:x:0:\nsandbox:x:2345:\nwheel:x:10:a,b\n";
	gid_t gid = 0;
	os_error err = { 0 };
	assert_int_equal(ids_find_group(group, strlen(group), "sandbox", &gid, &err), 0);
	assert_int_equal(gid, 2345);
	assert_int_equal(ids_find_group(group, strlen(group), "root", &gid, &err), -1);
	assert_int_equal(err.code, EPERM);
	assert_int_equal(ids_find_group(group, strlen(group), "nogroup", &gid, &err), -1);
	assert_int_equal(err.code, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_resolves_uid_and_primary_gid),
		cmocka_unit_test(test_name_prefix_does_not_match),
		cmocka_unit_test(test_root_ids_are_refused),
		cmocka_unit_test(test_malformed_lines_are_errors),
		cmocka_unit_test(test_group_resolves_and_refuses_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
