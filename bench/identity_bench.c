/* identity_bench.c - microseconds per caller identity lookup (what the proxy
 * pays per accepted connection) with 10, 1,000 and 10,000 other sockets in
 * the network namespace, half of them established (held by a process beside
 * the sandbox) and half in TIME_WAIT. Each size runs in a fresh network
 * namespace of its own. Printed per size: the lookup with the sandbox's
 * cgroup (owners among its members), without one (every process of the
 * namespace), and the old lookup (read and search /proc/net/tcp, then walk
 * the namespace) as the peer. Never judges a figure.
 * usage: identity_bench [--smoke]   (as root: namespaces, cgroups) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdutil.h"
#include "identity.h"
#include "procfs.h"

#define LOOKUPS 200
#define SMOKE_LOOKUPS 10
#define PROC_NET_CAP (64u << 20)

static const size_t sizes[] = { 10, 1000, 10000 };

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, by_value);
	return v[n / 2];
}

static void die(const char *what)
{
	fprintf(stderr, "identity_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("reading lo");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("bringing lo up");
	close(s);
}

static int listener(struct sockaddr_in *addr)
{
	socklen_t len = sizeof *addr;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	*addr = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd < 0 || bind(fd, (void *)addr, sizeof *addr) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (void *)addr, &len) < 0)
		die("listening");
	return fd;
}

static int dial(const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (const void *)to, sizeof *to) < 0)
		die("connecting");
	return fd;
}

/* The neighbour: n/2 sockets established (n/4 pairs it holds) and n/2
 * that it opened and closed first (TIME_WAIT on its side), then it waits. */
static pid_t start_neighbour(size_t n, int ready_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	struct sockaddr_in at;
	int l = listener(&at);
	for (size_t i = 0; i < n / 4; i++) {
		(void)dial(&at); /* held: established */
		if (accept4(l, NULL, NULL, SOCK_CLOEXEC) < 0)
			die("accepting");
	}
	for (size_t i = 0; i < n / 2; i++) {
		int c = dial(&at), a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (a < 0)
			die("accepting");
		close(c); /* the active close: c goes to TIME_WAIT */
		char b;
		if (read(a, &b, 1) != 0) /* 0: its FIN has arrived */
			die("waiting for the closing side");
		close(a);
	}
	char b = 1;
	if (write(ready_fd, &b, 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

/* The caller: one connection to the proxy per byte read from cmd_fd (the
 * previous one closed, so its own fd table stays the same size through the
 * run); a byte back on done_fd per connection. */
static pid_t start_agent(const struct sockaddr_in *proxy, int cmd_fd, int done_fd)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	char b;
	int held = -1;
	while (read(cmd_fd, &b, 1) == 1) {
		int fd = dial(proxy);
		if (held >= 0)
			close(held);
		held = fd;
		if (write(done_fd, &b, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/* A cgroup the agent alone is put in; "" when this machine has none to
 * spare (the cgroup figure is then not printed). */
static void make_cgroup(char *dir, size_t cap)
{
	static const char *const roots[] = { "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified",
					     "/sys/fs/cgroup" };
	dir[0] = '\0';
	for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
		char probe[256];
		snprintf(probe, sizeof probe, "%s/cgroup.procs", roots[i]);
		if (access(probe, W_OK) != 0)
			continue;
		snprintf(dir, cap, "%s/openshell-bench-identity-%d", roots[i], (int)getpid());
		if (mkdir(dir, 0755) == 0)
			return;
		dir[0] = '\0';
	}
}

static void cgroup_join(const char *dir, pid_t pid)
{
	char path[PATH_MAX], text[32];
	snprintf(path, sizeof path, "%s/cgroup.procs", dir);
	int n = snprintf(text, sizeof text, "%d\n", (int)pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, (size_t)n) != n)
		die("moving the agent into its cgroup");
	close(fd);
}

/* The k-th whitespace-separated field from p on (0: the one at p). */
static const char *nth_field(const char *p, int k)
{
	p += strspn(p, " ");
	for (; p && k > 0; k--) {
		p = strpbrk(p, " \n");
		p = p && *p == ' ' ? p + strspn(p, " ") : NULL;
	}
	return p;
}

/* The old lookup: the namespace's whole tcp table, searched for the line. */
static double old_lookup_us(const struct sockaddr_in *peer, const struct sockaddr_in *local,
			    ino_t netns)
{
	char key[64];
	snprintf(key, sizeof key, "%08X:%04X %08X:%04X", (unsigned)peer->sin_addr.s_addr,
		 ntohs(peer->sin_port), (unsigned)local->sin_addr.s_addr, ntohs(local->sin_port));
	double t0 = now_us();
	char *text = NULL;
	os_error err = { 0 };
	if (file_read_all("/proc/self/net/tcp", PROC_NET_CAP, &text, NULL, &err) < 0) {
		fprintf(stderr, "identity_bench: %s\n", err.msg);
		exit(1);
	}
	const char *line = strstr(text, key);
	/* local rem st tx:rx tr:when retr uid timeout inode */
	const char *f = line ? nth_field(line, 8) : NULL;
	unsigned long inode = f ? strtoul(f, NULL, 10) : 0;
	struct procfs_owners o = { 0 };
	procfs_socket_owners(netns, inode, getpid(), &o, NULL);
	double t = now_us() - t0;
	procfs_owners_free(&o);
	free(text);
	if (!inode) {
		fprintf(stderr, "identity_bench: the old lookup found no socket\n");
		exit(1);
	}
	return t;
}

static void count_sockets(size_t *all, size_t *time_wait)
{
	char *text = NULL;
	*all = *time_wait = 0;
	if (file_read_all("/proc/self/net/tcp", PROC_NET_CAP, &text, NULL, NULL) < 0)
		return;
	for (const char *l = strchr(text, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
		const char *st = nth_field(l + 1, 3); /* sl local rem st */
		(*all)++;
		if (st && strncmp(st, "06 ", 3) == 0) /* TCP_TIME_WAIT */
			(*time_wait)++;
	}
	free(text);
}

struct figures {
	double cgroup, netns, old;
	double held; /* cgroup scope, the established sockets held inside it */
};

static double resolve_us(struct identity_ctx *ctx, const struct sockaddr_in *peer,
			 const struct sockaddr_in *local, struct identity *id)
{
	os_error err = { 0 };
	double t0 = now_us();
	enum identity_failure f =
		identity_resolve(ctx, (const void *)peer, (const void *)local, id, &err);
	double t = now_us() - t0;
	if (f != IDENTITY_OK) {
		fprintf(stderr, "identity_bench: lookup failed: %s (%s)\n",
			identity_failure_name(f), err.msg);
		exit(1);
	}
	return t;
}

/* One size, in this (fresh) network namespace. */
static struct figures measure(size_t n, size_t lookups)
{
	int ready[2], cmd[2], done[2];
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(cmd, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0)
		die("pipes");
	struct sockaddr_in proxy;
	int lfd = listener(&proxy);
	pid_t neighbour = start_neighbour(n, ready[1]);
	char b;
	if (read(ready[0], &b, 1) != 1)
		die("waiting for the neighbour");
	pid_t agent = start_agent(&proxy, cmd[0], done[1]);
	char cg[PATH_MAX];
	make_cgroup(cg, sizeof cg);
	if (cg[0])
		cgroup_join(cg, agent);
	size_t all, tw;
	count_sockets(&all, &tw);
	printf("identity raw: sockets=%zu in namespace (%zu TIME_WAIT)\n", all, tw);
	struct identity_ctx *with_cg = NULL, *without = NULL;
	os_error err = { 0 };
	struct stat st;
	if (identity_ctx_new(getpid(), &without, &err) < 0 ||
	    identity_ctx_new(getpid(), &with_cg, &err) < 0 ||
	    (cg[0] && identity_ctx_set_cgroup(with_cg, cg, &err) < 0) ||
	    stat("/proc/self/ns/net", &st) < 0) {
		fprintf(stderr, "identity_bench: %s\n", err.msg);
		exit(1);
	}
	double *v[4];
	for (int k = 0; k < 4; k++)
		if (!(v[k] = calloc(lookups, sizeof(double))))
			die("memory");
	struct identity *id = calloc(1, sizeof *id);
	/* One pass per method: a walk through the whole table (old) or all of
	 * the namespace's fds (netns) must not leave the caches cold for the
	 * next lookup of another method. */
	for (size_t i = 0; id && i < 4 * lookups; i++) {
		struct sockaddr_in peer, local;
		socklen_t len = sizeof peer;
		if (write(cmd[1], "c", 1) != 1 || read(done[0], &b, 1) != 1)
			die("asking the agent to connect");
		int a = accept4(lfd, (void *)&peer, &len, SOCK_CLOEXEC);
		len = sizeof local;
		if (a < 0 || getsockname(a, (void *)&local, &len) < 0)
			die("accepting the agent");
		/* The old lookup last, so its passes come after every pass of ours. */
		static const size_t order[] = { 0, 1, 3, 2 };
		size_t pass = order[i / lookups], k = i % lookups;
		if (pass == 3 && k == 0 && cg[0]) /* now the sandbox holds them */
			cgroup_join(cg, neighbour);
		if (pass == 0 || pass == 3)
			v[pass][k] = resolve_us(with_cg, &peer, &local, id);
		else if (pass == 1)
			v[1][k] = resolve_us(without, &peer, &local, id);
		else
			v[2][k] = old_lookup_us(&peer, &local, st.st_ino);
		close(a);
	}
	struct figures f = { cg[0] ? median(v[0], lookups) : -1, median(v[1], lookups),
			     median(v[2], lookups), cg[0] ? median(v[3], lookups) : -1 };
	kill(agent, SIGKILL);
	kill(neighbour, SIGKILL);
	waitpid(agent, NULL, 0);
	waitpid(neighbour, NULL, 0);
	if (cg[0])
		rmdir(cg);
	identity_ctx_free(with_cg);
	identity_ctx_free(without);
	for (int k = 0; k < 4; k++)
		free(v[k]);
	free(id);
	return f;
}

/* Each size in a child with a network namespace of its own, so the
 * TIME_WAIT sockets of one size are not counted in the next. */
static int run_size(size_t n, size_t lookups, struct figures *out)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNET) < 0)
			die("unshare(CLONE_NEWNET)");
		loopback_up();
		struct figures f = measure(n, lookups);
		fflush(stdout);
		_exit(write(p[1], &f, sizeof f) == (ssize_t)sizeof f ? 0 : 1);
	}
	close(p[1]);
	ssize_t got = read(p[0], out, sizeof *out);
	int status;
	waitpid(pid, &status, 0);
	close(p[0]);
	return got == (ssize_t)sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0
											    : -1;
}

int main(int argc, char **argv)
{
	bool smoke = argc > 1 && strcmp(argv[1], "--smoke") == 0;
	size_t lookups = smoke ? SMOKE_LOOKUPS : LOOKUPS;
	struct rlimit nofile = { 65536, 65536 };
	if (geteuid() != 0) {
		printf("bench identity: skipped (needs root: network namespaces, cgroups)\n");
		return 77;
	}
	setrlimit(RLIMIT_NOFILE, &nofile);
	struct figures f[sizeof sizes / sizeof sizes[0]];
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		if (run_size(sizes[i], lookups, &f[i]) < 0) {
			fprintf(stderr, "identity_bench: the %zu-socket round failed\n", sizes[i]);
			return 1;
		}
		printf("identity raw: sockets=%zu cgroup=%.1fus netns=%.1fus old=%.1fus "
		       "old/ours=%.1fx held-by-sandbox=%.1fus\n",
		       sizes[i], f[i].cgroup, f[i].netns, f[i].old,
		       f[i].old / (f[i].cgroup > 0 ? f[i].cgroup : f[i].netns), f[i].held);
	}
	size_t last = sizeof sizes / sizeof sizes[0] - 1;
	bool cg = f[last].cgroup > 0 && f[0].cgroup > 0;
	double ours = cg ? f[last].cgroup : f[last].netns, base = cg ? f[0].cgroup : f[0].netns;
	printf("identity raw: flatness 10->10000 sockets: cgroup=%.2fx netns=%.2fx old=%.2fx "
	       "(target <= 1.5x)\n",
	       cg ? f[last].cgroup / f[0].cgroup : 0.0, f[last].netns / f[0].netns,
	       f[last].old / f[0].old);
	printf("bench identity: ours=%.1f peer=%.1f ratio=%.3g unit=us vs=%s-at-10-sockets\n", ours,
	       base, ours / base, cg ? "cgroup-scope" : "netns-scope");
	return 0;
}
