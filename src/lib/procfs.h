/* procfs.h - the /proc readers several components share: the fields of
 * /proc/PID/stat (parsed from the last ')', since comm is the process's own
 * choice and may hold ')' and spaces), and every process in a network
 * namespace that holds a given socket. Reads only; never signals a process. */
#ifndef OS_PROCFS_H
#define OS_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* The /proc/PID/stat fields callers use. */
struct procfs_stat {
	char state; /* field 3: R, S, D, Z, T, ... */
	pid_t ppid; /* field 4; 0 for a process whose parent is outside its pid namespace */
	uint64_t start_time; /* field 22: clock ticks after boot */
};

/* Parses the text of a /proc/PID/stat file: the fields start after the
 * last ')' of the text. -1 (EINVAL) when the text is not in that shape. */
int procfs_stat_parse(const char *text, size_t len, struct procfs_stat *out, os_error *err);

/* Reads and parses /proc/PID/stat; -1 with errno ENOENT/ESRCH-style codes
 * when the process is gone. */
int procfs_stat_read(pid_t pid, struct procfs_stat *out, os_error *err);

/* More owners than this of one socket is an error, never a shorter list: a
 * caller deciding on "every owner" must not decide on some of them. */
#define PROCFS_SOCKET_OWNERS_MAX 65536

struct procfs_owners {
	pid_t *pid; /* in /proc's directory order */
	size_t n, cap;
};

/* Every process in the network namespace netns_ino (st_ino of its
 * /proc/PID/ns/net) with an fd on socket:[inode], except skip (0: none).
 * 0 with out->n possibly 0; -1 when /proc cannot be read, memory runs out,
 * or more than PROCFS_SOCKET_OWNERS_MAX processes hold it (E2BIG): callers
 * treat -1 as "owner unknown" and deny. out is reset first; free it with
 * procfs_owners_free, also after an error. */
int procfs_socket_owners(ino_t netns_ino, unsigned long inode, pid_t skip,
			 struct procfs_owners *out, os_error *err);
void procfs_owners_free(struct procfs_owners *o);
#define _cleanup_procfs_owners_ __attribute__((cleanup(procfs_owners_free)))

/* Where the owners of a socket are looked for. With cgroup_fd >= 0 (an
 * O_PATH or directory fd of a cgroup): the processes of that cgroup and of
 * every cgroup below it, in whatever network namespace, and nobody else: a
 * walk that does not grow with the machine. Else every process on the
 * machine whose network namespace is netns_ino. skip: a pid left out (0:
 * none). */
#define PROCFS_CGROUP_DEPTH_MAX 16
struct procfs_scope {
	ino_t netns_ino;
	int cgroup_fd;
	pid_t skip;
};

int procfs_scope_socket_owners(const struct procfs_scope *scope, unsigned long inode,
			       struct procfs_owners *out, os_error *err);

/* Both walks include the fd tables of threads created without CLONE_FILES
 * (invisible in /proc/PID/fd), reported under their process's pid. */

/* A snapshot of every socket fd in a namespace, for many lookups made at
 * one moment (a batch of accepted connections): one walk instead of one
 * per lookup. More than PROCFS_SOCKET_INDEX_MAX socket fds is an error. */
#define PROCFS_SOCKET_INDEX_MAX (1u << 22)

struct procfs_socket_ref {
	unsigned long inode;
	pid_t pid;
};

struct procfs_socket_index {
	struct procfs_socket_ref *ref; /* sorted by inode, then pid */
	size_t n, cap;
};

int procfs_socket_index_build(ino_t netns_ino, pid_t skip, struct procfs_socket_index *out,
			      os_error *err);
int procfs_scope_index_build(const struct procfs_scope *scope, struct procfs_socket_index *out,
			     os_error *err);
/* The owners of inode in the snapshot, each pid once, lowest first. */
int procfs_socket_index_owners(const struct procfs_socket_index *idx, unsigned long inode,
			       struct procfs_owners *out, os_error *err);
void procfs_socket_index_free(struct procfs_socket_index *idx);

#endif
