/* fdutil.c - fd helpers (see fdutil.h). */
#include "fdutil.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "cleanup.h"

int fd_set_nonblock(int fd, bool on, os_error *err)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return os_error_errno(err, "fcntl(F_GETFL)");
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	if (fcntl(fd, F_SETFL, fl) < 0)
		return os_error_errno(err, "fcntl(F_SETFL)");
	return 0;
}

int fd_set_cloexec(int fd, bool on, os_error *err)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0)
		return os_error_errno(err, "fcntl(F_GETFD)");
	fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
	if (fcntl(fd, F_SETFD, fl) < 0)
		return os_error_errno(err, "fcntl(F_SETFD)");
	return 0;
}

int fd_write_all(int fd, const void *data, size_t len, os_error *err)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return os_error_errno(err, "write");
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fd_read_all(int fd, size_t cap, char **out, size_t *out_len, os_error *err)
{
	_cleanup_buf_ struct buf b;
	buf_init(&b, cap);
	char chunk[16384];
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return os_error_errno(err, "read");
		}
		if (n == 0)
			break;
		if (buf_append(&b, chunk, (size_t)n, err) < 0)
			return -1;
	}
	if (buf_append(&b, "", 0, err) < 0)
		return -1;
	if (out_len)
		*out_len = b.len;
	*out = buf_steal(&b);
	return 0;
}

int file_read_all(const char *path, size_t cap, char **out, size_t *out_len, os_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return os_error_errno(err, "opening %s", path);
	if (fd_read_all(fd, cap, out, out_len, err) < 0)
		return os_error_prefix(err, "reading %s", path);
	return 0;
}

/* The temp beside path: "PATH.tmp.PID". */
static int temp_name(const char *path, char tmp[4096], os_error *err)
{
	int n = snprintf(tmp, 4096, "%s.tmp.%d", path, (int)getpid());
	if (n < 0 || n >= 4096)
		return os_error_set(err, ENAMETOOLONG, "path too long: %s", path);
	return 0;
}

static int temp_write(const char *path, const void *data, size_t len, mode_t mode, int *fd,
		      os_error *err)
{
	char tmp[4096];
	if (temp_name(path, tmp, err) < 0)
		return -1;
	*fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (*fd < 0)
		return os_error_errno(err, "creating %s", tmp);
	if (fchmod(*fd, mode) < 0 || fd_write_all(*fd, data, len, err) < 0) {
		if (err && err->code == 0)
			os_error_errno(err, "writing %s", tmp);
		return -1;
	}
	return 0;
}

/* Closes the temps this call created and removes those not yet renamed
 * (from renamed on). */
static void temps_drop(const char *const *paths, const int *fds, size_t renamed, size_t n)
{
	char tmp[4096];
	for (size_t i = 0; i < n; i++) {
		if (fds[i] < 0)
			continue;
		close(fds[i]);
		if (i >= renamed && temp_name(paths[i], tmp, NULL) == 0)
			unlink(tmp);
	}
}

static int write_set(const char *const *paths, const char *const *data, const size_t *lens,
		     size_t n, mode_t mode, enum file_durability d, os_error *err)
{
	int fds[FILE_SET_MAX];
	char tmp[4096];
	size_t i, renamed = 0;
	if (n > FILE_SET_MAX)
		return os_error_set(err, E2BIG, "at most %d files at once", FILE_SET_MAX);
	for (i = 0; i < n; i++)
		fds[i] = -1;
	for (i = 0; i < n; i++)
		if (temp_write(paths[i], data[i], lens[i], mode, &fds[i], err) < 0)
			goto fail;
	for (i = 0; d == FILE_DURABLE && i < n; i++)
		if (fsync(fds[i]) < 0) {
			os_error_errno(err, "writing %s", paths[i]);
			goto fail;
		}
	for (i = 0; i < n; i++) {
		if (temp_name(paths[i], tmp, err) < 0)
			goto fail;
		if (rename(tmp, paths[i]) < 0) {
			os_error_errno(err, "renaming %s to %s", tmp, paths[i]);
			goto fail;
		}
		renamed = i + 1;
	}
fail:
	temps_drop(paths, fds, renamed, n);
	return renamed == n ? 0 : -1;
}

int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode, os_error *err)
{
	const char *d = data;
	return write_set(&path, &d, &len, 1, mode, FILE_DURABLE, err);
}

int file_write_atomic_set(const struct file_put *files, size_t n, mode_t mode,
			  enum file_durability d, os_error *err)
{
	const char *paths[FILE_SET_MAX], *data[FILE_SET_MAX];
	size_t lens[FILE_SET_MAX];
	if (n > FILE_SET_MAX)
		return os_error_set(err, E2BIG, "at most %d files at once", FILE_SET_MAX);
	for (size_t i = 0; i < n; i++) {
		paths[i] = files[i].path;
		data[i] = files[i].data;
		lens[i] = strlen(files[i].data);
	}
	return write_set(paths, data, lens, n, mode, d, err);
}

static bool fd_is_kept(int fd, const int *keep, size_t nkeep)
{
	for (size_t i = 0; i < nkeep; i++)
		if (keep[i] == fd)
			return true;
	return false;
}

int fd_close_from(int lowfd, const int *keep, size_t nkeep, os_error *err)
{
	/* Walk /proc/self/fd rather than guessing a maximum: works with huge
	 * RLIMIT_NOFILE and closes exactly what is open. */
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return os_error_errno(err, "opening /proc/self/fd");
	int dfd = dirfd(d);
	int to_close[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		if (*end != '\0' || e->d_name[0] == '.' || v < lowfd || v == dfd)
			continue;
		if (fd_is_kept((int)v, keep, nkeep))
			continue;
		if (n < ARRAY_SIZE(to_close))
			to_close[n++] = (int)v;
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		close(to_close[i]);
	if (n == ARRAY_SIZE(to_close))
		return fd_close_from(lowfd, keep, nkeep, err); /* more remained */
	return 0;
}

int dir_create_parents(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, mode) < 0 && errno != EEXIST ? -1 : 0;
}
