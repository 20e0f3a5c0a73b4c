/* xfer_send.c - the encoding side of the transfer stream (see xfer.h): walks
 * a file or a tree from an fd, each entry opened relative to its directory's
 * fd with O_NOFOLLOW, so a link or a rename planted during the walk can
 * never take it outside the tree it started in. A file is sent with the size
 * it had when opened: one that shrinks meanwhile fails the transfer. */
#include "xfer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 65536

bool xfer_name_ok(const char *name, size_t len)
{
	return len >= 1 && len <= XFER_NAME_MAX && memchr(name, '/', len) == NULL &&
	       memchr(name, '\0', len) == NULL && !(len == 1 && name[0] == '.') &&
	       !(len == 2 && name[0] == '.' && name[1] == '.');
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static int send_head(struct xfer_out *o, uint8_t type, const struct stat *st, const char *name,
		     os_error *err)
{
	uint8_t h[1 + 4 + 8 + 2 + XFER_NAME_MAX + 8];
	size_t nl = strlen(name), n = 0;
	h[n++] = type;
	put_be(h + n, st->st_mode & XFER_MODE_MASK, 4);
	put_be(h + n + 4, (uint64_t)st->st_mtim.tv_sec, 8);
	put_be(h + n + 12, nl, 2);
	n += 14;
	memcpy(h + n, name, nl);
	n += nl;
	if (type == 'f') {
		put_be(h + n, (uint64_t)st->st_size, 8);
		n += 8;
	}
	return o->sink(o->user, h, n, err);
}

static int send_file(int fd, const struct stat *st, const char *name, const char *path,
		     struct xfer_out *o, os_error *err)
{
	static char chunk[CHUNK];
	if (send_head(o, 'f', st, name, err) < 0)
		return -1;
	for (uint64_t left = (uint64_t)st->st_size; left > 0;) {
		ssize_t n = read(fd, chunk, left < CHUNK ? (size_t)left : CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return os_error_errno(err, "%s: reading", path);
		if (n == 0)
			return os_error_set(err, EIO, "%s: shrank while it was being sent", path);
		if (o->sink(o->user, chunk, (size_t)n, err) < 0)
			return -1;
		left -= (uint64_t)n;
		o->bytes += (uint64_t)n;
	}
	o->files++;
	return 0;
}

static int send_entry(int fd, const char *name, char *path, size_t plen, int depth,
		      struct xfer_out *o, os_error *err);

static void warn(struct xfer_out *o, const char *path, const char *what)
{
	char msg[XFER_PATH_MAX + 128];
	snprintf(msg, sizeof msg, "%s: skipped (%s)", path, what);
	if (o->warn)
		o->warn(o->user, msg);
}

/* The directory's entries, each opened relative to dfd without following a
 * link (O_NONBLOCK: a FIFO must not hang the open). */
static int send_children(int dfd, char *path, size_t plen, int depth, struct xfer_out *o,
			 os_error *err)
{
	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return os_error_errno(err, "%s: listing", path);
	}
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
		size_t nl = strlen(e->d_name);
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		int n = snprintf(path + plen, XFER_PATH_MAX - plen, "/%s", e->d_name);
		if (n < 0 || (size_t)n >= XFER_PATH_MAX - plen || !xfer_name_ok(e->d_name, nl)) {
			path[plen] = '\0';
			rc = os_error_set(err, ENAMETOOLONG, "%s/%s: path too long", path,
					  e->d_name);
			break;
		}
		/* Looked at before it is opened: opening a device can act on it. */
		struct stat st;
		int cfd = -1;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			rc = os_error_errno(err, "%s", path);
		else if (S_ISLNK(st.st_mode))
			warn(o, path, "a symbolic link; transfers never follow links");
		else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
			warn(o, path, "not a regular file or a directory");
		else if ((cfd = openat(dfd, e->d_name,
				       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0)
			/* ELOOP: swapped for a link since the look */
			rc = os_error_errno(err, "%s: opening", path);
		else {
			rc = send_entry(cfd, e->d_name, path, plen + (size_t)n, depth + 1, o, err);
			close(cfd);
		}
		path[plen] = '\0';
	}
	if (rc == 0 && errno != 0)
		rc = os_error_errno(err, "%s: listing", path);
	closedir(d);
	return rc;
}

static int send_entry(int fd, const char *name, char *path, size_t plen, int depth,
		      struct xfer_out *o, os_error *err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return os_error_errno(err, "%s: stat", path);
	if (S_ISREG(st.st_mode)) {
		if (fcntl(fd, F_SETFL, 0) < 0) /* O_NONBLOCK off: a plain read loop */
			return os_error_errno(err, "%s", path);
		return send_file(fd, &st, name, path, o, err);
	}
	if (!S_ISDIR(st.st_mode)) {
		if (depth == 0)
			return os_error_set(err, EINVAL, "%s: not a regular file or a directory",
					    path);
		warn(o, path, "not a regular file or a directory");
		return 0;
	}
	if (depth >= XFER_DEPTH_MAX)
		return os_error_set(err, ELOOP, "%s: more than %d directory levels", path,
				    XFER_DEPTH_MAX);
	uint8_t up = 'u';
	if (send_head(o, 'd', &st, name, err) < 0 ||
	    send_children(fd, path, plen, depth, o, err) < 0 || o->sink(o->user, &up, 1, err) < 0)
		return -1;
	return 0;
}

int xfer_send(int fd, const char *as_name, const char *label, struct xfer_out *o, os_error *err)
{
	char path[XFER_PATH_MAX];
	if (!xfer_name_ok(as_name, strlen(as_name)))
		return os_error_set(err, EINVAL, "%s: \"%s\" cannot be a file name", label,
				    as_name);
	int n = snprintf(path, sizeof path, "%s", label);
	if (n < 0 || (size_t)n >= sizeof path)
		return os_error_set(err, ENAMETOOLONG, "%.64s...: path too long", label);
	uint8_t end = 'z';
	if (send_entry(fd, as_name, path, (size_t)n, 0, o, err) < 0 ||
	    o->sink(o->user, &end, 1, err) < 0)
		return -1;
	return 0;
}
