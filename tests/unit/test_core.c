/* test_core.c - unit tests of the core library: errors, capped buffers,
 * bounded parsing, fd helpers, JSON helpers. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "checked.h"
#include "cleanup.h"
#include "error.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"
#include "pathutil.h"

static void error_chains_context(void **state)
{
	os_error err = { 0 };
	assert_int_equal(os_error_set(&err, ENOENT, "no file %s", "x"), -1);
	os_error_prefix(&err, "loading policy");
	assert_string_equal(err.msg, "loading policy: no file x");
	assert_int_equal(err.code, ENOENT);
	errno = EACCES;
	os_error_errno(&err, "open %s", "/y");
	assert_int_equal(err.code, EACCES);
	assert_non_null(strstr(err.msg, "open /y: Permission denied"));
}

static void buf_respects_cap(void **state)
{
	_cleanup_buf_ struct buf b;
	buf_init(&b, 8);
	os_error err = { 0 };
	assert_int_equal(buf_append_str(&b, "12345678", &err), 0); /* exactly the cap: ok */
	assert_string_equal(b.data, "12345678");
	assert_int_equal(buf_append_str(&b, "9", &err), -1); /* one over: refused */
	assert_int_equal(err.code, EMSGSIZE);
	assert_int_equal(b.len, 8); /* nothing lost, nothing partial */
	buf_consume(&b, 3);
	assert_string_equal(b.data, "45678");
	assert_int_equal(buf_printf(&b, &err, "%d", 123), 0);
	assert_string_equal(b.data, "45678123");
	assert_int_equal(buf_printf(&b, &err, "%d", 4), -1);
}

/* Port lists (--transparent-ports, transparent_ports): every malformed
 * list beside a good twin. */
static void port_list_is_strict(void **state)
{
	(void)state;
	uint16_t p[4];
	size_t n = 0;
	os_error err = { 0 };
	assert_int_equal(parse_port_list("80,443,8443", p, 4, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(p[2], 8443);
	assert_int_equal(parse_port_list("443", p, 4, &n, &err), 0);
	assert_int_equal(n, 1);
	const char *bad[] = { "",      ",",	"80,", ",80", "80,,443",   "0",
			      "65536", "80,80", "8o",  " 80", "1,2,3,4,5", "123456789" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&err, 0, sizeof err);
		assert_int_equal(parse_port_list(bad[i], p, 4, &n, &err), -1);
		assert_true(err.msg[0] != '\0');
	}
	assert_int_equal(parse_port_list("1,2,3,4", p, 4, &n, &err), 0);
}

static void parse_u64_is_strict(void **state)
{
	uint64_t v;
	os_error err = { 0 };
	assert_int_equal(parse_u64_str("443", 1, 65535, &v, &err), 0);
	assert_int_equal(v, 443);
	assert_int_equal(parse_u64_str("65536", 1, 65535, &v, &err), -1);
	assert_int_equal(err.code, ERANGE);
	assert_int_equal(parse_u64_str("", 0, 10, &v, &err), -1);
	assert_int_equal(parse_u64_str("+1", 0, 10, &v, &err), -1);
	assert_int_equal(parse_u64_str(" 1", 0, 10, &v, &err), -1);
	assert_int_equal(parse_u64_str("1x", 0, 10, &v, &err), -1);
	assert_int_equal(parse_u64_str("18446744073709551616", 0, UINT64_MAX, &v, &err), -1);
	assert_int_equal(parse_u64_str("18446744073709551615", 0, UINT64_MAX, &v, &err), 0);
	assert_true(v == UINT64_MAX);
}

static void parse_i64_and_hex(void **state)
{
	int64_t i;
	uint64_t h;
	os_error err = { 0 };
	assert_int_equal(parse_i64("-9223372036854775808", 20, INT64_MIN, INT64_MAX, &i, &err), 0);
	assert_true(i == INT64_MIN);
	assert_int_equal(parse_i64("-5", 2, 0, 10, &i, &err), -1);
	assert_int_equal(parse_hex_u64("fF", 2, 255, &h, &err), 0);
	assert_int_equal(h, 255);
	assert_int_equal(parse_hex_u64("100", 3, 255, &h, &err), -1);
	assert_int_equal(parse_hex_u64("g", 1, 255, &h, &err), -1);
}

static void str_copy_never_truncates(void **state)
{
	char small[4];
	os_error err = { 0 };
	assert_int_equal(str_copy(small, sizeof small, "abc", &err), 0);
	assert_string_equal(small, "abc");
	assert_int_equal(str_copy(small, sizeof small, "abcd", &err), -1);
	assert_int_equal(err.code, ENAMETOOLONG);
	assert_int_equal(str_format(small, sizeof small, &err, "%d", 1234), -1);
	assert_true(str_ieq("Host", 4, "hOST", 4));
	assert_false(str_ieq("Host", 4, "Hosts", 5));
	assert_true(str_has_suffix("a.example.com", ".example.com"));
	assert_false(str_has_suffix("com", ".example.com"));
}

static void checked_arithmetic_detects_overflow(void **state)
{
	size_t r;
	assert_true(checked_mul(1 << 20, 1 << 10, &r));
	assert_false(checked_mul(SIZE_MAX, 2, &r));
	assert_false(checked_add(SIZE_MAX, 1, &r));
	assert_false(checked_sub(0, 1, &r));
}

static void fd_read_all_caps_input(void **state)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	os_error err = { 0 };
	assert_int_equal(fd_write_all(p[1], "hello world", 11, &err), 0);
	close(p[1]);
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(fd_read_all(p[0], 5, &out, &len, &err), -1);
	assert_int_equal(err.code, EMSGSIZE);
	close(p[0]);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(fd_write_all(p[1], "hi", 2, &err), 0);
	close(p[1]);
	assert_int_equal(fd_read_all(p[0], 5, &out, &len, &err), 0);
	assert_string_equal(out, "hi");
	assert_int_equal(len, 2);
	free(out);
	close(p[0]);
}

/* Every file lands whole with its mode; a failure on a later file leaves no
 * temp behind and the files before it renamed; more than FILE_SET_MAX is
 * refused before anything is written. */
static void file_write_atomic_set_writes_each_whole(void **state)
{
	char dir[] = "/tmp/oscore-set.XXXXXX", a[64], b[64], bad[96], tmp[96];
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof a, "%s/a", dir);
	snprintf(b, sizeof b, "%s/b", dir);
	snprintf(bad, sizeof bad, "%s/missing/c", dir);
	os_error err = { 0 };
	for (int d = FILE_DURABLE; d <= FILE_THIS_BOOT; d++) {
		const struct file_put two[] = { { a, "alpha" }, { b, "" } };
		assert_int_equal(file_write_atomic_set(two, 2, 0640, d, &err), 0);
		char *out = NULL;
		size_t len = 0;
		struct stat st;
		assert_int_equal(file_read_all(a, 64, &out, &len, &err), 0);
		assert_string_equal(out, "alpha");
		free(out);
		assert_int_equal(stat(b, &st), 0);
		assert_int_equal(st.st_size, 0);
		assert_int_equal(st.st_mode & 07777, 0640);
	}
	const struct file_put three[] = { { a, "new" }, { bad, "x" }, { b, "never" } };
	assert_int_equal(file_write_atomic_set(three, 3, 0600, FILE_DURABLE, &err), -1);
	assert_non_null(strstr(err.msg, "missing"));
	char *out = NULL;
	size_t len = 0;
	assert_int_equal(file_read_all(a, 64, &out, &len, &err), 0);
	assert_string_equal(out, "alpha"); /* nothing renamed: the write phase failed */
	free(out);
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", a, (int)getpid());
	assert_int_equal(access(tmp, F_OK), -1);
	struct file_put many[FILE_SET_MAX + 1];
	for (size_t i = 0; i < ARRAY_SIZE(many); i++)
		many[i] = (struct file_put){ a, "x" };
	memset(&err, 0, sizeof err);
	assert_int_equal(file_write_atomic_set(many, ARRAY_SIZE(many), 0600, FILE_DURABLE, &err),
			 -1);
	assert_int_equal(err.code, E2BIG);
	unlink(a);
	unlink(b);
	assert_int_equal(rmdir(dir), 0);
}

/* str_join cuts as snprintf does and says the whole length; str_u64 is
 * printf's %llu. */
static void str_join_and_u64_match_snprintf(void **state)
{
	char out[8], want[8], num[21];
	size_t n = str_join(out, sizeof out, "ab", "", "cdef", "ghij", NULL);
	int w = snprintf(want, sizeof want, "%s%s%s%s", "ab", "", "cdef", "ghij");
	assert_int_equal(n, (size_t)w);
	assert_string_equal(out, want);
	assert_int_equal(str_join(out, sizeof out, "abc", NULL), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(str_join(out, 1, "abc", NULL), 3);
	assert_string_equal(out, "");
	assert_int_equal(str_join(NULL, 0, "abc", "d", NULL), 4);
	const uint64_t vals[] = { 0, 7, 10, 65535, UINT64_MAX };
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		char ref[32];
		snprintf(ref, sizeof ref, "%llu", (unsigned long long)vals[i]);
		assert_int_equal(str_u64(num, vals[i]), strlen(ref));
		assert_string_equal(num, ref);
	}
}

static void json_strict_rejects_duplicates_and_unknown_keys(void **state)
{
	os_error err = { 0 };
	const char *dup = "{\"a\":1,\"a\":2}";
	assert_null(json_parse_strict(dup, strlen(dup), 1024, &err));
	const char *ok = "{\"name\":\"x\",\"n\":7,\"b\":true}";
	assert_null(json_parse_strict(ok, strlen(ok), 4, &err));
	assert_int_equal(err.code, EMSGSIZE);
	_cleanup_json_ json_t *v = json_parse_strict(ok, strlen(ok), 1024, &err);
	assert_non_null(v);
	const char *allowed[] = { "name", "n", NULL };
	assert_int_equal(json_check_keys(v, allowed, "body", &err), -1);
	assert_string_equal(err.msg, "body: unknown field \"b\"");
	const char *s = NULL;
	int64_t n = 0;
	bool b = false;
	assert_int_equal(json_get_string(v, "name", true, &s, &err), 0);
	assert_string_equal(s, "x");
	assert_int_equal(json_get_int(v, "n", true, 0, 5, &n, &err), -1);
	assert_int_equal(json_get_int(v, "n", true, 0, 10, &n, &err), 0);
	assert_int_equal(n, 7);
	assert_int_equal(json_get_bool(v, "b", true, &b, &err), 0);
	assert_true(b);
	assert_int_equal(json_get_string(v, "missing", false, &s, &err), 1);
	assert_int_equal(json_get_string(v, "missing", true, &s, &err), -1);
	assert_int_equal(json_get_string(v, "n", true, &s, &err), -1);
}

static void path_is_inside_is_strict_and_component_wise(void **state)
{
	(void)state;
	assert_true(path_is_inside("/a/b", "/a"));
	assert_true(path_is_inside("/a/b/c", "/a"));
	assert_true(path_is_inside("/a", "/"));
	assert_false(path_is_inside("/ab", "/a"));
	assert_false(path_is_inside("/a", "/a"));
	assert_false(path_is_inside("/a/", "/a"));
	assert_false(path_is_inside("/", "/"));
	assert_false(path_is_inside("/a", "/a/b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(error_chains_context),
		cmocka_unit_test(buf_respects_cap),
		cmocka_unit_test(parse_u64_is_strict),
		cmocka_unit_test(port_list_is_strict),
		cmocka_unit_test(parse_i64_and_hex),
		cmocka_unit_test(str_copy_never_truncates),
		cmocka_unit_test(checked_arithmetic_detects_overflow),
		cmocka_unit_test(fd_read_all_caps_input),
		cmocka_unit_test(file_write_atomic_set_writes_each_whole),
		cmocka_unit_test(str_join_and_u64_match_snprintf),
		cmocka_unit_test(json_strict_rejects_duplicates_and_unknown_keys),
		cmocka_unit_test(path_is_inside_is_strict_and_component_wise),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
