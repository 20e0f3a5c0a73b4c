/* test_procfs.c - the shared /proc readers (src/lib/procfs.c): stat fields
 * found after the last ')' whatever the command name holds, malformed stat
 * text refused, and the socket-owner scan returning every holder of a real
 * socket (no silent cap), none for a closed one, and skipping the caller. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfs.h"

/* Fields 5..21 and 23..52 as the kernel prints them for a sleeping task. */
#define MID "0 0 0 -1 4194560 105 0 0 0 0 0 0 0 20 0 1 0"
#define TAIL                                                                                       \
	"0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 "  \
	"0 0 "                                                                                     \
	"0\n"

static int parse_with_comm(const char *comm, const char *state, struct procfs_stat *st,
			   os_error *err)
{
	char text[1024];
	int n = snprintf(text, sizeof text, "4242 (%s) %s 77 " MID " 123456 " TAIL, comm, state);
	assert_true(n > 0 && (size_t)n < sizeof text);
	return procfs_stat_parse(text, (size_t)n, st, err);
}

static void stat_fields_follow_the_last_paren(void **state)
{
	(void)state;
	/* comm values a process can give itself (prctl PR_SET_NAME, argv[0]). */
	const char *hostile[] = {
		"sleep",   "a) R 1 (",
		") Z 0 (", "a b c",
		"))))",	   "(",
		")",	   "x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 999 ",
		"",
	};
	for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
		struct procfs_stat st = { 0 };
		os_error err = { 0 };
		assert_int_equal(parse_with_comm(hostile[i], "S", &st, &err), 0);
		assert_int_equal(st.state, 'S');
		assert_int_equal(st.ppid, 77);
		assert_int_equal(st.start_time, 123456);
	}
	struct procfs_stat st;
	assert_int_equal(parse_with_comm("kworker", "Z", &st, NULL), 0);
	assert_int_equal(st.state, 'Z');
}

static void stat_refuses_malformed_text(void **state)
{
	(void)state;
	struct procfs_stat st;
	os_error err = { 0 };
	const char *bad[] = {
		"",
		"4242 sleep S 77 " MID " 1 " TAIL, /* no parentheses */
		"4242 (sleep)",
		"4242 (sleep) S",
		"4242 (sleep)  S 77 " MID " 1 " TAIL, /* two spaces */
		"4242 (sleep) S  77 " MID " 1 " TAIL,
		"4242 (sleep) S -1 " MID " 1 " TAIL, /* negative ppid */
		"4242 (sleep) S 77x " MID " 1 " TAIL,
		"4242 (sleep) S 2147483648 " MID " 1 " TAIL, /* over a pid */
		"4242 (sleep) S 77 " MID "\n", /* ends before field 22 */
		"4242 (sleep) S 77 " MID " 18446744073709551616 " TAIL, /* over u64 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err.code = 0;
		assert_int_equal(procfs_stat_parse(bad[i], strlen(bad[i]), &st, &err), -1);
		assert_int_not_equal(err.code, 0);
	}
	/* The length is honoured: a NUL-free prefix of a good text is not read past. */
	char good[512];
	int n = snprintf(good, sizeof good, "1 (init) S 0 " MID " 5 " TAIL);
	assert_int_equal(procfs_stat_parse(good, (size_t)n, &st, &err), 0);
	assert_int_equal(st.ppid, 0);
	assert_int_equal(st.start_time, 5);
	assert_int_equal(procfs_stat_parse(good, 20, &st, &err), -1);
}

static void stat_read_of_a_real_child_with_a_hostile_name(void **state)
{
	(void)state;
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_NAME, "a) R 1 (", 0, 0, 0);
		close(go[0]);
		close(go[1]); /* named: the parent may look */
		pause();
		_exit(0);
	}
	close(go[1]);
	char c;
	assert_int_equal(read(go[0], &c, 1), 0);
	close(go[0]);
	struct procfs_stat st;
	os_error err = { 0 };
	assert_int_equal(procfs_stat_read(child, &st, &err), 0);
	assert_int_equal(st.ppid, getpid());
	assert_true(st.start_time > 0);
	struct procfs_stat self;
	assert_int_equal(procfs_stat_read(getpid(), &self, &err), 0);
	assert_int_equal(self.ppid, getppid());
	assert_int_equal(self.state, 'R');
	assert_true(st.start_time >= self.start_time);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(procfs_stat_read(child, &st, &err), -1); /* reaped: gone */
}

static ino_t own_netns(void)
{
	struct stat st;
	assert_int_equal(stat("/proc/self/ns/net", &st), 0);
	return st.st_ino;
}

static unsigned long inode_of(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return (unsigned long)st.st_ino;
}

/* A child that holds fd (inherited) and, with own_netns, lives in a network
 * namespace of its own: the socket was made in ours and is used from
 * another. */
static pid_t fork_holder(bool own_netns)
{
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		if (own_netns && unshare(CLONE_NEWNET) < 0)
			_exit(1);
		close(ready[0]);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 0);
	close(ready[0]);
	return kid;
}

/* Forks n children that each hold fd and wait to be killed. */
static void fork_holders(int fd, pid_t *kids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kids[i] = fork_holder(false); /* the child's copy of fd exists */
	(void)fd;
}

static void reap(pid_t *kids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
}

static bool has_pid(const struct procfs_owners *o, pid_t p)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->pid[i] == p)
			return true;
	return false;
}

static void owners_of_a_socket_held_by_a_child(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	unsigned long held = inode_of(sv[1]), ours = inode_of(sv[0]);
	pid_t kid;
	fork_holders(sv[1], &kid, 1);
	close(sv[1]); /* only the child holds this end now */
	_cleanup_procfs_owners_ struct procfs_owners o = { 0 };
	os_error err = { 0 };
	assert_int_equal(procfs_socket_owners(own_netns(), held, 0, &o, &err), 0);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.pid[0], kid);
	/* Positive control for the skip: our end is ours... */
	assert_int_equal(procfs_socket_owners(own_netns(), ours, 0, &o, &err), 0);
	assert_true(has_pid(&o, getpid()));
	/* ...and skipped when we ask to be left out (the child closed nothing:
	 * it inherited our end too, so it stays). */
	assert_int_equal(procfs_socket_owners(own_netns(), ours, getpid(), &o, &err), 0);
	assert_false(has_pid(&o, getpid()));
	assert_true(has_pid(&o, kid));
	/* Another namespace inode: nobody here counts. */
	assert_int_equal(procfs_socket_owners(own_netns() + 1, held, 0, &o, &err), 0);
	assert_int_equal(o.n, 0);
	reap(&kid, 1);
	assert_int_equal(procfs_socket_owners(own_netns(), held, 0, &o, &err), 0);
	assert_int_equal(o.n, 0); /* the socket is gone with its last holder */
	close(sv[0]);
}

/* The copies this scan replaced stopped at 64 owners; an "every owner must
 * agree" check needs them all. */
#define MANY_HOLDERS 80

static void owners_are_all_returned(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	unsigned long held = inode_of(sv[1]);
	pid_t kids[MANY_HOLDERS];
	fork_holders(sv[1], kids, MANY_HOLDERS);
	_cleanup_procfs_owners_ struct procfs_owners o = { 0 };
	os_error err = { 0 };
	assert_int_equal(procfs_socket_owners(own_netns(), held, getpid(), &o, &err), 0);
	assert_int_equal(o.n, MANY_HOLDERS);
	for (size_t i = 0; i < MANY_HOLDERS; i++)
		assert_true(has_pid(&o, kids[i]));
	assert_int_equal(procfs_socket_owners(own_netns(), held, 0, &o, &err), 0);
	assert_int_equal(o.n, MANY_HOLDERS + 1); /* and us, when not skipped */
	reap(kids, MANY_HOLDERS);
	close(sv[0]);
	close(sv[1]);
}

/* A thread made without CLONE_FILES: its fd table is its own, and its
 * socket does not appear under /proc/PID/fd (the leader's table). */
static int private_table_thread(void *arg)
{
	int *report = arg, sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		_exit(1);
	unsigned long ino = inode_of(sv[0]);
	if (write(report[1], &ino, sizeof ino) != (ssize_t)sizeof ino)
		_exit(1);
	for (;;)
		pause();
}

static pid_t fork_with_private_table_thread(unsigned long *inode)
{
	int report[2];
	assert_int_equal(pipe(report), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		size_t size = 256 * 1024;
		char *stack = malloc(size);
		if (!stack || clone(private_table_thread, stack + size,
				    CLONE_VM | CLONE_SIGHAND | CLONE_THREAD, report) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(report[1]); /* a thread that failed then ends the read */
	assert_int_equal(read(report[0], inode, sizeof *inode), (ssize_t)sizeof *inode);
	close(report[0]);
	return kid;
}

static void a_thread_with_its_own_fd_table_is_an_owner(void **state)
{
	(void)state;
	unsigned long inode;
	pid_t kid = fork_with_private_table_thread(&inode);
	_cleanup_procfs_owners_ struct procfs_owners o = { 0 };
	os_error err = { 0 };
	assert_int_equal(procfs_socket_owners(own_netns(), inode, 0, &o, &err), 0);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.pid[0], kid);
	reap(&kid, 1);
}

static void the_index_answers_like_the_walk(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	unsigned long held = inode_of(sv[1]), hidden;
	pid_t kids[3];
	fork_holders(sv[1], kids, 2);
	kids[2] = fork_with_private_table_thread(&hidden);
	struct procfs_socket_index idx = { 0 };
	_cleanup_procfs_owners_ struct procfs_owners o = { 0 };
	os_error err = { 0 };
	assert_int_equal(procfs_socket_index_build(own_netns(), getpid(), &idx, &err), 0);
	assert_int_equal(procfs_socket_index_owners(&idx, held, &o, &err), 0);
	assert_int_equal(o.n, 3); /* the third child inherited it too */
	assert_true(has_pid(&o, kids[0]) && has_pid(&o, kids[1]) && has_pid(&o, kids[2]));
	assert_int_equal(procfs_socket_index_owners(&idx, hidden, &o, &err), 0);
	assert_int_equal(o.n, 1);
	assert_int_equal(o.pid[0], kids[2]);
	/* Our own end was skipped; an unknown inode has no owner. */
	assert_int_equal(procfs_socket_index_owners(&idx, inode_of(sv[0]), &o, &err), 0);
	assert_false(has_pid(&o, getpid()));
	assert_int_equal(procfs_socket_index_owners(&idx, 1, &o, &err), 0);
	assert_int_equal(o.n, 0);
	procfs_socket_index_free(&idx);
	reap(kids, 3);
	close(sv[0]);
	close(sv[1]);
}

/* A writable cgroup hierarchy of this machine (v1 pids, or the unified
 * v2 one), where a test cgroup can be made; NULL when there is none. */
static const char *cgroup_base(void)
{
	static const char *const roots[] = { "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified",
					     "/sys/fs/cgroup" };
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		char probe[256];
		snprintf(probe, sizeof probe, "%s/cgroup.procs", roots[i]);
		if (access(probe, W_OK) == 0)
			return roots[i];
	}
	return NULL;
}

static void cgroup_move(const char *dir, pid_t pid)
{
	char path[300], text[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	int n = snprintf(text, sizeof text, "%d\n", (int)pid);
	assert_int_equal(fwrite(text, 1, (size_t)n, f), (size_t)n);
	assert_int_equal(fclose(f), 0);
}

/* The cgroup scope: every member holding the socket, in a cgroup below the
 * sandbox's too and whatever its network namespace, and nobody outside. */
static void cgroup_scope_finds_its_members_only(void **state)
{
	(void)state;
	const char *base = cgroup_base();
	if (!base || geteuid() != 0)
		skip();
	char top[256], sub[300];
	snprintf(top, sizeof top, "%s/openshell-test-procfs-%d", base, (int)getpid());
	snprintf(sub, sizeof sub, "%s/nested", top);
	assert_int_equal(mkdir(top, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	unsigned long held = inode_of(sv[1]);
	pid_t kids[4] = { fork_holder(false), fork_holder(false), fork_holder(true),
			  fork_holder(false) };
	cgroup_move(top, kids[0]);
	cgroup_move(sub, kids[1]);
	cgroup_move(top, kids[2]); /* kids[3] stays outside */
	int fd = open(top, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct procfs_scope scope = { .netns_ino = own_netns(), .cgroup_fd = fd, .skip = getpid() };
	_cleanup_procfs_owners_ struct procfs_owners o = { 0 };
	os_error err = { 0 };
	assert_int_equal(procfs_scope_socket_owners(&scope, held, &o, &err), 0);
	bool members =
		o.n == 3 && has_pid(&o, kids[0]) && has_pid(&o, kids[1]) && has_pid(&o, kids[2]);
	/* Control: the namespace scope sees the outsider, and not the member
	 * that moved to another network namespace. */
	_cleanup_procfs_owners_ struct procfs_owners n = { 0 };
	assert_int_equal(procfs_socket_owners(own_netns(), held, getpid(), &n, &err), 0);
	bool netns_view = has_pid(&n, kids[3]) && !has_pid(&n, kids[2]);
	struct procfs_socket_index idx = { 0 };
	assert_int_equal(procfs_scope_index_build(&scope, &idx, &err), 0);
	assert_int_equal(procfs_socket_index_owners(&idx, held, &n, &err), 0);
	bool index_agrees = n.n == 3 && !has_pid(&n, kids[3]);
	procfs_socket_index_free(&idx);
	reap(kids, 4);
	close(fd);
	close(sv[0]);
	close(sv[1]);
	rmdir(sub);
	rmdir(top);
	assert_true(members);
	assert_true(netns_view);
	assert_true(index_agrees);
}

/* Out of descriptors while walking: the walk fails, it never returns a
 * list with the holders it could not look at left out. Runs in a child,
 * which keeps exactly one fd free: enough to list /proc, not a process's
 * fd table. */
static void a_walk_out_of_fds_fails_instead_of_skipping(void **state)
{
	(void)state;
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
			_exit(10);
		unsigned long held = inode_of(sv[1]);
		ino_t ns = own_netns();
		struct rlimit lim = { 64, 64 };
		if (setrlimit(RLIMIT_NOFILE, &lim) < 0)
			_exit(11);
		int last = -1, fd;
		while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
			last = fd;
		close(last); /* one free: /proc itself opens, a process's fd dir does not */
		struct procfs_owners o = { 0 };
		os_error err = { 0 };
		int rc = procfs_socket_owners(ns, held, 0, &o, &err);
		/* Control: with fds to spare the same walk finds us. */
		for (int i = 3; i <= last; i++)
			if (i != sv[0] && i != sv[1])
				close(i);
		int ok = procfs_socket_owners(ns, held, 0, &o, &err) == 0 && has_pid(&o, getpid());
		_exit(rc == -1 && ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stat_fields_follow_the_last_paren),
		cmocka_unit_test(stat_refuses_malformed_text),
		cmocka_unit_test(stat_read_of_a_real_child_with_a_hostile_name),
		cmocka_unit_test(owners_of_a_socket_held_by_a_child),
		cmocka_unit_test(owners_are_all_returned),
		cmocka_unit_test(a_thread_with_its_own_fd_table_is_an_owner),
		cmocka_unit_test(the_index_answers_like_the_walk),
		cmocka_unit_test(cgroup_scope_finds_its_members_only),
		cmocka_unit_test(a_walk_out_of_fds_fails_instead_of_skipping),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
