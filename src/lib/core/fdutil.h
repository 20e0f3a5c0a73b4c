/* fdutil.h - file-descriptor helpers. Every fd the project creates is
 * close-on-exec; these helpers retry on EINTR and never leak on error. */
#ifndef OS_FDUTIL_H
#define OS_FDUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

int fd_set_nonblock(int fd, bool on, os_error *err);
int fd_set_cloexec(int fd, bool on, os_error *err);
/* Writes all len bytes (blocking fd); EINTR retried. */
int fd_write_all(int fd, const void *data, size_t len, os_error *err);
/* Reads until EOF into a malloc'd NUL-terminated buffer of at most cap bytes. */
int fd_read_all(int fd, size_t cap, char **out, size_t *out_len, os_error *err);
/* Reads a whole file (opened O_RDONLY|O_CLOEXEC) with a size cap. */
int file_read_all(const char *path, size_t cap, char **out, size_t *out_len, os_error *err);
/* Writes a file atomically (temp + rename) with the given mode; its bytes
 * are on disk (fsync) before the rename, so a power loss never leaves it
 * empty under its name. */
int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, os_error *err);

/* The most files one file_write_atomic_set() writes. */
#define FILE_SET_MAX 16
/* One file of a file_write_atomic_set(). */
struct file_put {
	const char *path;
	const char *data; /* NUL-terminated: strlen(data) bytes are written */
};
enum file_durability {
	FILE_DURABLE, /* fsync before the rename: survives a power loss */
	/* Readers and a process crash still only ever see the old or the new
	 * bytes; a power loss may leave an empty file. For what is rebuilt
	 * every boot anyway (pid files of processes the reboot ended, a
	 * sandbox's run directory). */
	FILE_THIS_BOOT,
};
/* Writes n files atomically each, as file_write_atomic does: every temp is
 * written before the first fsync, so with FILE_DURABLE one journal commit
 * covers them all instead of one per file. All-or-nothing it is not: on an
 * error the files already renamed stay, the rest are untouched. */
int file_write_atomic_set(const struct file_put *files, size_t n, mode_t mode,
			  enum file_durability d, os_error *err);
/* mkdir -p: parents 0755, the last component with mode; existing ones are
 * left as they are. 0, or -1 with errno. */
int dir_create_parents(const char *path, mode_t mode);
/* Closes every fd >= lowfd except those listed in keep[nkeep]. */
int fd_close_from(int lowfd, const int *keep, size_t nkeep, os_error *err);

#endif
