/* procfs.c - shared /proc readers (see procfs.h). Everything read here is
 * written by the kernel but named or shaped by processes we do not trust
 * (comm, fd counts), so parsing is bounded and pointer-advancing, and a
 * list that would grow past its cap fails instead of being cut short. */
#include "procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define PROCFS_STAT_CAP 4096 /* comm is at most 16 bytes; the rest is numbers */
#define STAT_FIELD_PPID 4
#define STAT_FIELD_START_TIME 22
/* cgroup.procs is read whole: 4 MiB is ~500k pids. */
#define PROCFS_CGROUP_PROCS_CAP (4u << 20)

/* The field at *p (up to a space, a newline or end) and *p past it and
 * one separating space. */
static size_t take_field(const char **p, const char *end)
{
	const char *s = *p;
	while (s < end && *s != ' ' && *s != '\n')
		s++;
	size_t len = (size_t)(s - *p);
	*p = s < end && *s == ' ' ? s + 1 : s;
	return len;
}

int procfs_stat_parse(const char *text, size_t len, struct procfs_stat *out, os_error *err)
{
	const char *end = text + len;
	const char *p = NULL;
	for (const char *s = text; s < end; s++) /* the last ')': comm may hold more */
		if (*s == ')')
			p = s;
	/* ") S " then field 4 on: one space between fields, none empty. */
	if (!p || end - p < 4 || p[1] != ' ' || p[2] == ' ' || p[3] != ' ')
		return os_error_set(err, EINVAL, "/proc stat: no state after the command name");
	struct procfs_stat st = { .state = p[2] };
	p += 4;
	for (int field = STAT_FIELD_PPID; field <= STAT_FIELD_START_TIME; field++) {
		const char *f = p;
		size_t flen = take_field(&p, end);
		uint64_t v;
		if (flen == 0)
			return os_error_set(err, EINVAL, "/proc stat: field %d is missing", field);
		if (field == STAT_FIELD_PPID) {
			if (parse_u64(f, flen, 0, INT32_MAX, &v, err) < 0)
				return os_error_prefix(err, "/proc stat: parent pid");
			st.ppid = (pid_t)v;
		} else if (field == STAT_FIELD_START_TIME) {
			if (parse_u64(f, flen, 0, UINT64_MAX, &v, err) < 0)
				return os_error_prefix(err, "/proc stat: start time");
			st.start_time = v;
		}
	}
	*out = st;
	return 0;
}

int procfs_stat_read(pid_t pid, struct procfs_stat *out, os_error *err)
{
	char path[64];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (str_format(path, sizeof path, err, "/proc/%d/stat", (int)pid) < 0 ||
	    file_read_all(path, PROCFS_STAT_CAP, &text, &len, err) < 0)
		return -1;
	if (procfs_stat_parse(text, len, out, err) < 0)
		return os_error_prefix(err, "pid %d", (int)pid);
	return 0;
}

/* Visits every socket fd of one fd directory: cb(inode, pid, data); a
 * non-zero return stops the walk and is returned. */
typedef int (*socket_fd_cb)(unsigned long inode, pid_t pid, void *data);

/* A process gone (or going) while we look: nothing of it to judge. Any
 * other failure to read its table is an error, never a skipped holder (a
 * supervisor out of fds must not stop seeing owners). */
static bool gone(int e)
{
	return e == ENOENT || e == ESRCH;
}

static int scan_fd_dir(const char *dir, pid_t pid, socket_fd_cb cb, void *data, os_error *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return gone(errno) ? 0 : os_error_errno(err, "reading %s", dir);
	int rc = 0, dfd = dirfd(d);
	struct dirent *e;
	errno = 0;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		char target[64];
		uint64_t inode;
		if (e->d_name[0] == '.')
			continue;
		/* Relative to the open directory: no path walk per fd. */
		ssize_t n = readlinkat(dfd, e->d_name, target, sizeof target - 1);
		if (n < 10 || memcmp(target, "socket:[", 8) != 0 || target[n - 1] != ']')
			continue; /* closed meanwhile (ENOENT), or not a socket */
		if (parse_u64(target + 8, (size_t)n - 9, 1, UINT64_MAX, &inode, NULL) == 0)
			rc = cb((unsigned long)inode, pid, data);
		errno = 0;
	}
	if (rc == 0 && errno != 0 && !gone(errno))
		rc = os_error_errno(err, "listing %s", dir);
	closedir(d);
	return rc;
}

/* A thread created without CLONE_FILES has an fd table of its own that
 * /proc/PID/fd (the leader's) does not show: an attacker's thread could
 * hold a socket there unseen. Such tasks are found with kcmp(KCMP_FILES)
 * and their tables walked too, reported under the process's pid (threads
 * share its memory, so its executable). */
static int scan_private_task_tables(pid_t pid, socket_fd_cb cb, void *data, os_error *err)
{
	char path[64];
	if (str_format(path, sizeof path, err, "/proc/%d/task", (int)pid) < 0)
		return -1;
	DIR *d = opendir(path);
	if (!d)
		return gone(errno) ? 0 : os_error_errno(err, "reading %s", path);
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		uint64_t tid;
		char fds[96];
		if (parse_u64_str(e->d_name, 1, INT32_MAX, &tid, NULL) < 0 || (pid_t)tid == pid)
			continue;
		if (syscall(SYS_kcmp, pid, (pid_t)tid, KCMP_FILES, 0, 0) == 0)
			continue; /* the same table as the leader's, walked already */
		if (str_format(fds, sizeof fds, NULL, "%s/%s/fd", path, e->d_name) == 0)
			rc = scan_fd_dir(fds, pid, cb, data, err);
	}
	closedir(d);
	return rc;
}

/* One process's socket fds: its fd table and the private tables of its
 * threads. */
static int scan_process(pid_t pid, socket_fd_cb cb, void *data, os_error *err)
{
	char path[64];
	if (str_format(path, sizeof path, err, "/proc/%d/fd", (int)pid) < 0)
		return -1;
	int rc = scan_fd_dir(path, pid, cb, data, err);
	return rc == 0 ? scan_private_task_tables(pid, cb, data, err) : rc;
}

/* Every socket fd of every process in the network namespace, but skip. */
static int scan_namespace(ino_t netns_ino, pid_t skip, socket_fd_cb cb, void *data, os_error *err)
{
	DIR *d = opendir("/proc");
	if (!d)
		return os_error_errno(err, "opening /proc");
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		uint64_t v;
		char path[64];
		struct stat st;
		if (parse_u64_str(e->d_name, 1, INT32_MAX, &v, NULL) < 0 || (pid_t)v == skip)
			continue;
		/* Cheap filter first: most host processes live in another netns. */
		if (str_format(path, sizeof path, NULL, "/proc/%s/ns/net", e->d_name) < 0 ||
		    stat(path, &st) < 0 || st.st_ino != netns_ino)
			continue;
		rc = scan_process((pid_t)v, cb, data, err);
	}
	closedir(d);
	return rc < 0 ? -1 : 0;
}

/* The pids of one cgroup.procs text (one decimal per line), each scanned. */
static int scan_procs_text(const char *text, size_t len, pid_t skip, socket_fd_cb cb, void *data,
			   os_error *err)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < len;) {
		size_t n = 0;
		uint64_t v;
		while (i + n < len && text[i + n] != '\n')
			n++;
		if (n && parse_u64(text + i, n, 1, INT32_MAX, &v, NULL) < 0)
			return os_error_set(err, EINVAL, "cgroup.procs: '%.*s' is not a pid",
					    (int)(n > 32 ? 32 : n), text + i);
		if (n && (pid_t)v != skip)
			rc = scan_process((pid_t)v, cb, data, err);
		i += n + 1;
	}
	return rc;
}

/* Every process of the cgroup dir_fd and of the cgroups below it (an
 * agent cannot create or leave them, but a delegated subtree must not hide
 * anyone): cgroup.procs is read whole, so a process that stays in the
 * cgroup through the read is listed. */
static int scan_cgroup(int dir_fd, int depth, pid_t skip, socket_fd_cb cb, void *data,
		       os_error *err)
{
	if (depth > PROCFS_CGROUP_DEPTH_MAX)
		return os_error_set(err, ELOOP, "cgroups nested deeper than %d",
				    PROCFS_CGROUP_DEPTH_MAX);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	_cleanup_close_ int procs = openat(dir_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (procs < 0)
		return os_error_errno(err, "opening cgroup.procs");
	if (fd_read_all(procs, PROCFS_CGROUP_PROCS_CAP, &text, &len, err) < 0 ||
	    scan_procs_text(text, len, skip, cb, data, err) < 0)
		return -1;
	int self = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = self < 0 ? NULL : fdopendir(self);
	if (!d) {
		if (self >= 0)
			close(self);
		return os_error_errno(err, "listing a cgroup directory");
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		_cleanup_close_ int sub =
			openat(dirfd(d), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		rc = sub < 0 ? os_error_errno(err, "opening cgroup %s", e->d_name)
			     : scan_cgroup(sub, depth + 1, skip, cb, data, err);
	}
	closedir(d);
	return rc < 0 ? -1 : 0;
}

static int scan_scope(const struct procfs_scope *s, socket_fd_cb cb, void *data, os_error *err)
{
	if (s->cgroup_fd >= 0)
		return scan_cgroup(s->cgroup_fd, 0, s->skip, cb, data, err);
	return scan_namespace(s->netns_ino, s->skip, cb, data, err);
}

static int owners_add(struct procfs_owners *o, pid_t pid, os_error *err)
{
	if (o->n && o->pid[o->n - 1] == pid)
		return 0; /* several fds (or tables) of one process: one owner */
	if (o->n == PROCFS_SOCKET_OWNERS_MAX)
		return os_error_set(err, E2BIG, "more than %d processes hold the socket",
				    PROCFS_SOCKET_OWNERS_MAX);
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		if (cap > PROCFS_SOCKET_OWNERS_MAX)
			cap = PROCFS_SOCKET_OWNERS_MAX;
		pid_t *np = realloc(o->pid, cap * sizeof *np);
		if (!np)
			return os_error_set(err, ENOMEM, "socket owners: out of memory");
		o->pid = np;
		o->cap = cap;
	}
	o->pid[o->n++] = pid;
	return 0;
}

struct owners_walk {
	unsigned long inode;
	struct procfs_owners *out;
	os_error *err;
};

static int owners_cb(unsigned long inode, pid_t pid, void *data)
{
	struct owners_walk *w = data;
	return inode == w->inode ? owners_add(w->out, pid, w->err) : 0;
}

int procfs_scope_socket_owners(const struct procfs_scope *scope, unsigned long inode,
			       struct procfs_owners *out, os_error *err)
{
	procfs_owners_free(out);
	struct owners_walk w = { inode, out, err };
	return scan_scope(scope, owners_cb, &w, err);
}

int procfs_socket_owners(ino_t netns_ino, unsigned long inode, pid_t skip,
			 struct procfs_owners *out, os_error *err)
{
	struct procfs_scope scope = { .netns_ino = netns_ino, .cgroup_fd = -1, .skip = skip };
	return procfs_scope_socket_owners(&scope, inode, out, err);
}

/* The index: every (inode, pid) pair of a namespace, sorted by inode. */
struct index_walk {
	struct procfs_socket_index *idx;
	os_error *err;
};

static int index_cb(unsigned long inode, pid_t pid, void *data)
{
	struct index_walk *w = data;
	struct procfs_socket_index *x = w->idx;
	if (x->n == PROCFS_SOCKET_INDEX_MAX)
		return os_error_set(w->err, E2BIG, "more than %d sockets in the namespace",
				    PROCFS_SOCKET_INDEX_MAX);
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 256;
		struct procfs_socket_ref *ne = realloc(x->ref, cap * sizeof *ne);
		if (!ne)
			return os_error_set(w->err, ENOMEM, "socket index: out of memory");
		x->ref = ne;
		x->cap = cap;
	}
	x->ref[x->n++] = (struct procfs_socket_ref){ inode, pid };
	return 0;
}

static int by_inode(const void *a, const void *b)
{
	const struct procfs_socket_ref *x = a, *y = b;
	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

int procfs_socket_index_build(ino_t netns_ino, pid_t skip, struct procfs_socket_index *out,
			      os_error *err)
{
	struct procfs_scope scope = { .netns_ino = netns_ino, .cgroup_fd = -1, .skip = skip };
	return procfs_scope_index_build(&scope, out, err);
}

int procfs_scope_index_build(const struct procfs_scope *scope, struct procfs_socket_index *out,
			     os_error *err)
{
	procfs_socket_index_free(out);
	struct index_walk w = { out, err };
	if (scan_scope(scope, index_cb, &w, err) < 0) {
		procfs_socket_index_free(out);
		return -1;
	}
	if (out->n) /* qsort's array may not be NULL, even for none */
		qsort(out->ref, out->n, sizeof *out->ref, by_inode);
	return 0;
}

int procfs_socket_index_owners(const struct procfs_socket_index *idx, unsigned long inode,
			       struct procfs_owners *out, os_error *err)
{
	procfs_owners_free(out);
	size_t lo = 0, hi = idx->n;
	while (lo < hi) { /* first entry with this inode */
		size_t mid = lo + (hi - lo) / 2;
		if (idx->ref[mid].inode < inode)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < idx->n && idx->ref[i].inode == inode; i++)
		if (owners_add(out, idx->ref[i].pid, err) < 0)
			return -1;
	return 0;
}

void procfs_socket_index_free(struct procfs_socket_index *idx)
{
	free(idx->ref);
	*idx = (struct procfs_socket_index){ 0 };
}

void procfs_owners_free(struct procfs_owners *o)
{
	free(o->pid);
	*o = (struct procfs_owners){ 0 };
}
