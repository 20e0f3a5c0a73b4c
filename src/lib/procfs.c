/* procfs.c - shared /proc readers (see procfs.h). Everything read here is
 * written by the kernel but named or shaped by processes we do not trust
 * (comm, fd counts), so parsing is bounded and pointer-advancing, and a
 * list that would grow past its cap fails instead of being cut short. */
#include "procfs.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define PROCFS_STAT_CAP 4096 /* comm is at most 16 bytes; the rest is numbers */
#define STAT_FIELD_PPID 4
#define STAT_FIELD_START_TIME 22

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

/* Is /proc/<pid> (a directory name) in the namespace and holding want? */
static bool pid_holds(const char *pid, ino_t netns_ino, const char *want)
{
	char path[64];
	struct stat st;
	/* Cheap filter first: most host processes live in another netns. */
	if (str_format(path, sizeof path, NULL, "/proc/%s/ns/net", pid) < 0 ||
	    stat(path, &st) < 0 || st.st_ino != netns_ino)
		return false;
	if (str_format(path, sizeof path, NULL, "/proc/%s/fd", pid) < 0)
		return false;
	DIR *d = opendir(path);
	if (!d)
		return false; /* exited meanwhile */
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d)) != NULL) {
		char link[96], target[64];
		if (e->d_name[0] == '.' ||
		    str_format(link, sizeof link, NULL, "%s/%s", path, e->d_name) < 0)
			continue;
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		found = strcmp(target, want) == 0;
	}
	closedir(d);
	return found;
}

static int owners_add(struct procfs_owners *o, pid_t pid, os_error *err)
{
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

int procfs_socket_owners(ino_t netns_ino, unsigned long inode, pid_t skip,
			 struct procfs_owners *out, os_error *err)
{
	procfs_owners_free(out);
	char want[48];
	if (str_format(want, sizeof want, err, "socket:[%lu]", inode) < 0)
		return -1;
	DIR *d = opendir("/proc");
	if (!d)
		return os_error_errno(err, "opening /proc");
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		uint64_t v;
		if (parse_u64_str(e->d_name, 1, INT32_MAX, &v, NULL) < 0 || (pid_t)v == skip)
			continue;
		if (pid_holds(e->d_name, netns_ino, want))
			rc = owners_add(out, (pid_t)v, err);
	}
	closedir(d);
	return rc;
}

void procfs_owners_free(struct procfs_owners *o)
{
	free(o->pid);
	*o = (struct procfs_owners){ 0 };
}
