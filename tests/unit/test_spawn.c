/* test_spawn.c - the launcher-child set-up (src/lib/spawn.c) run for real:
 * the handed fds arrive on their numbers, every other fd is closed, the
 * signal mask and SIGPIPE are back to defaults in the exec'd program, and a
 * failed exec comes back naming the program. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "spawn.h"

/* Runs in the exec'd shell: reads fd 3, answers on fd 4 with what it saw. */
static const char script[] = "read -r line <&3; "
			     "if [ -e /proc/$$/fd/9 ]; then extra=leak; else extra=none; fi; "
			     "blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/$$/status); "
			     "ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status); "
			     "echo \"$line $extra $blk $ign\" >&4";

static void child_gets_its_fds_and_default_signals(void **state)
{
	(void)state;
	int to[2], from[2];
	assert_int_equal(pipe2(to, O_CLOEXEC), 0);
	assert_int_equal(pipe2(from, O_CLOEXEC), 0);
	int stray = open("/dev/null", O_RDONLY); /* not CLOEXEC: must still be closed */
	assert_true(stray >= 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sigset_t usr1;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		signal(SIGPIPE, SIG_IGN);
		if (dup2(stray, 9) < 0) /* inherited, not close-on-exec */
			_exit(98);
		const int fds[] = { to[0], from[1] };
		char *const argv[] = { "sh", "-c", (char *)script, NULL };
		char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
		const struct spawn_child c = { .path = "/bin/sh",
					       .argv = argv,
					       .envp = envp,
					       .fds = fds,
					       .n_fds = 2,
					       .first_fd = 3,
					       .parent = parent,
					       .netns_fd = -1 };
		const char *what = NULL;
		spawn_child_exec(&c, &what);
		_exit(99);
	}
	close(stray);
	close(to[0]);
	close(from[1]);
	assert_int_equal(write(to[1], "hello\n", 6), 6);
	close(to[1]);
	char out[256] = { 0 };
	size_t got = 0;
	ssize_t n;
	while ((n = read(from[0], out + got, sizeof out - 1 - got)) > 0)
		got += (size_t)n;
	close(from[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Nothing blocked; nothing ignored (a shell ignores nothing by itself). */
	assert_string_equal(out, "hello none 0000000000000000 0000000000000000\n");
}

static void failures_come_back_named(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *const argv[] = { "nope", NULL };
		const struct spawn_child c = { .path = "/nonexistent/launcher",
					       .argv = argv,
					       .envp = argv + 1,
					       .fds = p,
					       .n_fds = 2,
					       .first_fd = 10,
					       .netns_fd = -1 };
		const char *what = NULL;
		spawn_child_exec(&c, &what);
		int ok = what == c.path && errno == ENOENT;
		const struct spawn_child many = { .path = "/bin/true",
						  .argv = argv,
						  .envp = argv + 1,
						  .fds = p,
						  .n_fds = SPAWN_FDS_MAX + 1,
						  .netns_fd = -1 };
		spawn_child_exec(&many, &what);
		ok = ok && errno == EINVAL && what != many.path;
		_exit(ok ? 42 : 1);
	}
	close(p[0]);
	close(p[1]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(child_gets_its_fds_and_default_signals),
		cmocka_unit_test(failures_come_back_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
