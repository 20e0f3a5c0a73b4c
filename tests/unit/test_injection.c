/* test_injection.c - foreign code in an allowed binary: the trusted-tree
 * rule, the maps and environ scanners on crafted texts, and a real child
 * with a preloaded copy of a system library outside the read-only tree. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdutil.h"
#include "injection.h"

static const char *const ro[] = { "/usr", "/lib", "/etc", "/sandbox/tools" };
static const char *const rw[] = { "/tmp", "/sandbox", "/usr/local/scratch" };
static const struct injection_tree tree = { ro, 4, rw, 3 };

static void most_specific_entry_decides(void **state)
{
	(void)state;
	assert_true(injection_path_trusted(&tree, "/usr/lib/libc.so.6"));
	assert_true(injection_path_trusted(&tree, "/sandbox/tools/lib.so"));
	assert_false(injection_path_trusted(&tree, "/sandbox/evil.so"));
	assert_false(injection_path_trusted(&tree, "/usr/local/scratch/x.so"));
	assert_false(injection_path_trusted(&tree, "/tmp/x.so"));
	assert_false(injection_path_trusted(&tree, "/opt/x.so")); /* not listed at all */
	assert_false(injection_path_trusted(&tree, "/usrx/y.so"));
}

#define LINE(perms, path) "7f0000000000-7f0000001000 " perms " 00000000 08:01 1234    " path "\n"

static int maps(const char *text, char *why)
{
	return injection_scan_maps(text, strlen(text), "/sandbox/bin/agent", &tree, why,
				   INJECTION_WHY_MAX);
}

static void maps_flag_code_from_writable_places(void **state)
{
	(void)state;
	char why[INJECTION_WHY_MAX] = "";
	const char *clean = LINE("r-xp", "/usr/lib/x86_64-linux-gnu/libc.so.6")
		LINE("r-xp", "/sandbox/bin/agent") /* the executable itself */
		LINE("rw-p", "/tmp/data.bin") /* data, not code */
		LINE("r-xp", "") /* anonymous: JIT */
		LINE("r-xp", "[vdso]");
	assert_int_equal(maps(clean, why), 0);
	assert_int_equal(maps(LINE("r-xp", "/tmp/evil.so"), why), 1);
	assert_non_null(strstr(why, "/tmp/evil.so"));
	assert_int_equal(maps(LINE("r-xp", "/sandbox/evil.so"), why), 1);
	assert_int_equal(maps(LINE("r-xp", "/usr/lib/x.so (deleted)"), why), 1);
	assert_non_null(strstr(why, "deleted"));
	assert_int_equal(maps(LINE("r-xp", "/memfd:payload (deleted)"), why), 1);
	assert_int_equal(maps("garbage\n", why), 1);
}

static int env(const char *text, size_t len, char *why)
{
	return injection_scan_environ(text, len, &tree, why, INJECTION_WHY_MAX);
}

#define ENV(s) s, sizeof(s) - 1

static void environ_flags_loader_variables_naming_writable_code(void **state)
{
	(void)state;
	char why[INJECTION_WHY_MAX] = "";
	assert_int_equal(env(ENV("PATH=/usr/bin\0HOME=/sandbox\0"), why), 0);
	assert_int_equal(env(ENV("LD_PRELOAD=/usr/lib/libjemalloc.so.2\0"), why), 0);
	assert_int_equal(env(ENV("MY_LD_PRELOAD=/tmp/x.so\0"), why), 0);
	assert_int_equal(env(ENV("PATH=/bin\0LD_PRELOAD=/tmp/x.so\0"), why), 1);
	assert_non_null(strstr(why, "LD_PRELOAD"));
	assert_int_equal(env(ENV("LD_PRELOAD=/usr/lib/a.so /tmp/b.so\0"), why), 1);
	assert_int_equal(env(ENV("LD_AUDIT=/usr/lib/a.so:/sandbox/b.so\0"), why), 1);
	assert_int_equal(env(ENV("OPENSSL_CONF=/sandbox/openssl.cnf\0"), why), 1);
	assert_int_equal(env(ENV("OPENSSL_MODULES=providers\0"), why), 1); /* relative */
	assert_int_equal(env(ENV("GCONV_PATH=/tmp/gconv\0"), why), 1);
}

/* A real process: /bin/sleep with a copy of libm preloaded from a scratch
 * directory is flagged; the same binary without it is not. */
static pid_t start_sleep(const char *preload)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Until the dynamic loader has mapped libc into the new image (preloads
 * are mapped before it), or 5 s. */
static void wait_loaded(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	for (int i = 0; i < 500; i++) {
		char *maps = NULL;
		size_t len = 0;
		bool done = file_read_all(path, 8u << 20, &maps, &len, NULL) == 0 &&
			    strstr(maps, "/sleep") && strstr(maps, "libc.so");
		free(maps);
		if (done)
			return;
		usleep(10000);
	}
}

static int check_when_started(pid_t pid, const struct injection_tree *t, char *why)
{
	wait_loaded(pid);
	os_error err = { 0 };
	return injection_check(pid, t, why, INJECTION_WHY_MAX, &err);
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void a_preloaded_copy_outside_the_tree_is_found(void **state)
{
	(void)state;
	static const char *const sys_ro[] = { "/usr", "/lib", "/lib64", "/bin" };
	char dir[] = "/var/tmp/osinj-XXXXXX", lib[64], why[INJECTION_WHY_MAX] = "";
	assert_non_null(mkdtemp(dir));
	const char *const sys_rw[] = { dir };
	struct injection_tree t = { sys_ro, 4, sys_rw, 1 };
	snprintf(lib, sizeof lib, "%s/libm.so.6", dir);
	char *data = NULL;
	size_t len = 0;
	os_error err = { 0 };
	const char *src = access("/usr/lib/x86_64-linux-gnu/libm.so.6", R_OK) == 0
				  ? "/usr/lib/x86_64-linux-gnu/libm.so.6"
				  : "/lib/x86_64-linux-gnu/libm.so.6";
	assert_int_equal(file_read_all(src, 64u << 20, &data, &len, &err), 0);
	assert_int_equal(file_write_atomic(lib, data, len, 0755, &err), 0);
	free(data);

	pid_t clean = start_sleep(NULL);
	assert_int_equal(check_when_started(clean, &t, why), 0);
	stop(clean);

	pid_t injected = start_sleep(lib);
	assert_int_equal(check_when_started(injected, &t, why), 1);
	assert_non_null(strstr(why, dir));
	stop(injected);
	unlink(lib);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(most_specific_entry_decides),
		cmocka_unit_test(maps_flag_code_from_writable_places),
		cmocka_unit_test(environ_flags_loader_variables_naming_writable_code),
		cmocka_unit_test(a_preloaded_copy_outside_the_tree_is_found),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
