/* test_local_proc.c - the local driver's detached supervisors: once a
 * supervisor is "gone" (local_proc_gone) its exit status is on disk and its
 * monitor writes nothing more in the sandbox directory, so a delete can
 * remove the directory and a status read never mistakes a just-exited
 * supervisor for a lost one. Real processes; /bin/sh stands in for the
 * supervisor. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "local_disk.h"
#include "local_proc.h"

struct fixture {
	char dir[64], log[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/oslp-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->log, sizeof(f->log), "%s/supervisor.log", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	static const char *const made[] = { "supervisor.pid", "exit", "supervisor.log" };
	char p[128];
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, made[i]);
		unlink(p);
	}
	int rc = rmdir(f->dir); /* fails if the monitor left anything else */
	free(f);
	return rc;
}

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 },
		  NULL);
}

/* Polls for local_proc_gone for up to 10 s, tightly: the first moment it
 * holds is the one a racing reader would see. */
static bool wait_gone(const struct local_pid *p)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (local_proc_gone(p))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - t0.tv_sec < 10);
	return false;
}

static void spawn(struct fixture *f, const char *script, struct local_pid *pid)
{
	char *const argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	os_error err = { 0 };
	assert_int_equal(local_proc_spawn(f->dir, f->log, argv, pid, &err), 0);
	struct local_pid read = { 0 };
	assert_int_equal(local_proc_read_pid(f->dir, &read, &err), 0);
	assert_int_equal(read.pid, pid->pid);
	assert_int_equal(read.start_time, pid->start_time);
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(path, "re");
	assert_non_null(fp);
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	assert_non_null(p);
	return (pid_t)strtol(p + 4, NULL, 10); /* ") S PPID" */
}

static void gone_means_the_exit_status_is_on_disk(void **state)
{
	struct fixture *f = *state;
	for (int i = 0; i < 20; i++) {
		struct local_pid pid;
		int code = -1, signo = -1;
		spawn(f, "exit 3", &pid);
		assert_true(wait_gone(&pid));
		assert_false(local_proc_alive(&pid));
		assert_int_equal(local_proc_exit_code(f->dir, &code, &signo), 1);
		assert_int_equal(code, 3);
		assert_int_equal(signo, 0); /* an exit, not a kill */
		char exit_path[96];
		snprintf(exit_path, sizeof(exit_path), "%s/exit", f->dir);
		assert_int_equal(unlink(exit_path), 0); /* the next run must write its own */
	}
}

/* The window the fix closes: the supervisor has exited (a zombie) but its
 * monitor has not written "exit" yet. A stopped monitor holds it open. */
static void exited_but_unrecorded_is_not_gone(void **state)
{
	struct fixture *f = *state;
	struct local_pid pid;
	int code = -1, signo = -1;
	spawn(f, "exec sleep 30", &pid);
	assert_true(local_proc_alive(&pid)); /* positive control */
	assert_false(local_proc_gone(&pid));
	pid_t monitor = parent_of(pid.pid);
	assert_true(monitor > 1);
	assert_int_equal(kill(monitor, SIGSTOP), 0);
	assert_int_equal(kill(pid.pid, SIGKILL), 0);
	for (int i = 0; i < 1000 && local_proc_alive(&pid); i++)
		sleep_ms(10);
	assert_false(local_proc_alive(&pid));
	sleep_ms(100);
	assert_false(local_proc_gone(&pid));
	assert_int_equal(local_proc_exit_code(f->dir, &code, &signo), 0);
	assert_int_equal(kill(monitor, SIGCONT), 0);
	assert_true(wait_gone(&pid));
	assert_int_equal(local_proc_exit_code(f->dir, &code, &signo), 1);
	assert_int_equal(code, 128 + SIGKILL);
	assert_int_equal(signo, SIGKILL); /* recorded as a kill, not as exit 137 */
}

static void a_reused_pid_is_gone(void **state)
{
	(void)state;
	/* Our own pid with another start time: someone else's process now. */
	struct local_pid other = { .pid = getpid(), .start_time = 1 };
	struct local_pid self = { .pid = getpid(), .start_time = local_proc_start_time(getpid()) };
	assert_true(local_proc_gone(&other));
	assert_false(local_proc_gone(&self)); /* positive control */
	assert_true(local_proc_alive(&self));
}

static void run_dir_path_and_removal(void **state)
{
	(void)state;
	char p[LOCAL_PATH_MAX];
	os_error err = { 0 };
	assert_int_equal(local_run_dir("abc-1", p, &err), 0);
	assert_string_equal(p, LOCAL_RUN_DIR "/abc-1");
	/* Absent is fine: delete is idempotent. */
	assert_int_equal(local_run_dir_remove("oslp-never-created", &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(gone_means_the_exit_status_is_on_disk, setup,
						teardown),
		cmocka_unit_test_setup_teardown(exited_but_unrecorded_is_not_gone, setup, teardown),
		cmocka_unit_test(a_reused_pid_is_gone),
		cmocka_unit_test(run_dir_path_and_removal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
