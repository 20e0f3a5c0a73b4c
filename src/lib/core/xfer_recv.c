/* xfer_recv.c - the decoding side of the transfer stream (see xfer.h): a
 * push parser that writes as bytes arrive (no file is ever held in memory).
 * Each entry is created relative to the fd of the directory it belongs to,
 * never through a link: a directory is entered with O_NOFOLLOW, a file is
 * written under a fresh temporary name (O_EXCL) and renamed over its target,
 * so an existing hard or symbolic link is replaced, never written through,
 * and a reader never sees half a file. */
#include "xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { ST_TYPE, ST_HEAD, ST_DATA, ST_DONE, ST_FAILED };

#define FIXED (1 + 4 + 8 + 2) /* type, mode, mtime, name length */

void xfer_in_init(struct xfer_in *in, int dest_dir, const char *dest_name, const char *label)
{
	memset(in, 0, sizeof(*in));
	in->dest_dir = dest_dir;
	in->dest_name = dest_name;
	in->label = label;
	in->file_fd = -1;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static int top(const struct xfer_in *in)
{
	return in->depth ? in->stack[in->depth - 1].fd : in->dest_dir;
}

/* path[] = the parent's path + "/" + name. */
static int set_path(struct xfer_in *in, const char *name, os_error *err)
{
	size_t base = in->depth ? in->stack[in->depth - 1].path_len : 0;
	if (!in->depth)
		base = (size_t)snprintf(in->path, sizeof in->path, "%s", in->label);
	int n = snprintf(in->path + base, sizeof in->path - base, "/%s", name);
	if (base >= sizeof in->path || n < 0 || (size_t)n >= sizeof in->path - base)
		return os_error_set(err, ENAMETOOLONG, "%.200s...: path too long", in->path);
	return 0;
}

static int enter_dir(struct xfer_in *in, const char *name, uint32_t mode, int64_t mtime,
		     os_error *err)
{
	if (in->depth >= XFER_DEPTH_MAX)
		return os_error_set(err, ELOOP, "%s: more than %d directory levels", in->path,
				    XFER_DEPTH_MAX);
	if (mkdirat(top(in), name, 0700) < 0 && errno != EEXIST)
		return os_error_errno(err, "%s: creating the directory", in->path);
	int fd = openat(top(in), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	/* O_DIRECTORY on a link fails with ENOTDIR: look at what is there. */
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
	    fstatat(top(in), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return os_error_set(err, ELOOP,
				    "%s: is a symbolic link (transfers never follow links)",
				    in->path);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
		return os_error_set(err, ENOTDIR, "%s: exists and is not a directory", in->path);
	if (fd < 0)
		return os_error_errno(err, "%s", in->path);
	in->stack[in->depth++] = (struct xfer_level){
		.fd = fd, .mode = mode, .mtime = mtime, .path_len = strlen(in->path)
	};
	return 0;
}

static int leave_dir(struct xfer_in *in, os_error *err)
{
	if (in->depth == 0)
		return os_error_set(err, EPROTO, "%s: the transfer stream left its root",
				    in->label);
	struct xfer_level *l = &in->stack[--in->depth];
	in->path[l->path_len] = '\0';
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = l->mtime } };
	int rc = 0;
	if (fchmod(l->fd, l->mode) < 0 || futimens(l->fd, t) < 0)
		rc = os_error_errno(err, "%s: setting its mode and time", in->path);
	close(l->fd);
	return rc;
}

static int open_file(struct xfer_in *in, const char *name, os_error *err)
{
	static unsigned seq;
	for (int tries = 0; tries < 100; tries++) {
		snprintf(in->tmp_name, sizeof in->tmp_name, ".openshell-transfer.%d.%u",
			 (int)getpid(), seq++);
		in->file_fd = openat(top(in), in->tmp_name,
				     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (in->file_fd >= 0 || errno != EEXIST)
			break;
	}
	if (in->file_fd < 0)
		return os_error_errno(err, "%s: creating", in->path);
	snprintf(in->file_name, sizeof in->file_name, "%s", name);
	return 0;
}

/* The whole file arrived: its mode and time, then the rename into place. */
static int close_file(struct xfer_in *in, os_error *err)
{
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = in->file_mtime } };
	struct stat st;
	int rc = 0;
	if (fchmod(in->file_fd, in->file_mode) < 0 || futimens(in->file_fd, t) < 0)
		rc = os_error_errno(err, "%s: setting its mode and time", in->path);
	else if (fstatat(top(in), in->file_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		 S_ISLNK(st.st_mode))
		rc = os_error_set(
			err, ELOOP,
			"%s: is a symbolic link (transfers never follow or replace links)",
			in->path);
	else if (renameat(top(in), in->tmp_name, top(in), in->file_name) < 0)
		rc = os_error_errno(err, "%s", in->path);
	close(in->file_fd);
	in->file_fd = -1;
	if (rc < 0)
		unlinkat(top(in), in->tmp_name, 0);
	else
		in->files++;
	return rc;
}

/* A complete 'd' or 'f' head is in in->head. */
static int take_head(struct xfer_in *in, os_error *err)
{
	const uint8_t *h = in->head;
	size_t nl = (size_t)get_be(h + 13, 2);
	char name[XFER_NAME_MAX + 1];
	memcpy(name, h + FIXED, nl);
	name[nl] = '\0';
	if (!xfer_name_ok(name, nl))
		return os_error_set(err, EPROTO, "%s: the transfer stream names an entry \"%.*s\"",
				    in->label, (int)nl, name);
	if (!in->depth && in->root_seen)
		return os_error_set(err, EPROTO, "%s: the transfer stream has two roots",
				    in->label);
	if (!in->depth && in->dest_name)
		snprintf(name, sizeof name, "%s", in->dest_name);
	in->root_seen = true;
	uint32_t mode = (uint32_t)get_be(h + 1, 4) & XFER_MODE_MASK;
	int64_t mtime = (int64_t)get_be(h + 5, 8);
	if (set_path(in, name, err) < 0)
		return -1;
	if (h[0] == 'd')
		return enter_dir(in, name, mode, mtime, err);
	in->file_mode = mode;
	in->file_mtime = mtime;
	in->file_left = get_be(h + FIXED + nl, 8);
	if (open_file(in, name, err) < 0)
		return -1;
	in->state = ST_DATA;
	return in->file_left == 0 ? (in->state = ST_TYPE, close_file(in, err)) : 0;
}

static int take_type(struct xfer_in *in, uint8_t t, os_error *err)
{
	in->head[0] = t;
	in->head_len = 1;
	if (t == 'd' || t == 'f') {
		in->head_want = FIXED;
		in->state = ST_HEAD;
		return 0;
	}
	if (t == 'u')
		return leave_dir(in, err);
	if (t == 'z' && in->depth == 0 && in->root_seen) {
		in->state = ST_DONE;
		return 1;
	}
	return os_error_set(err, EPROTO, "%s: the transfer stream is corrupt (record 0x%02x)",
			    in->label, t);
}

static int write_data(struct xfer_in *in, const uint8_t *p, size_t n, os_error *err)
{
	while (n > 0) {
		ssize_t w = write(in->file_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return os_error_errno(err, "%s: writing", in->path);
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static long step(struct xfer_in *in, const uint8_t *p, size_t len, os_error *err)
{
	if (in->state == ST_TYPE)
		return take_type(in, p[0], err) < 0 ? -1 : 1;
	if (in->state == ST_DATA) {
		size_t n = len < in->file_left ? len : (size_t)in->file_left;
		if (write_data(in, p, n, err) < 0)
			return -1;
		in->file_left -= n;
		in->bytes += n;
		if (in->file_left == 0) {
			in->state = ST_TYPE;
			if (close_file(in, err) < 0)
				return -1;
		}
		return (long)n;
	}
	/* ST_HEAD: the fixed part, then the name (and a file's size). */
	size_t n = in->head_want - in->head_len;
	n = len < n ? len : n;
	memcpy(in->head + in->head_len, p, n);
	in->head_len += n;
	if (in->head_len < in->head_want)
		return (long)n;
	if (in->head_want == FIXED) {
		in->head_want += (size_t)get_be(in->head + 13, 2) + (in->head[0] == 'f' ? 8 : 0);
		if (in->head_want > sizeof in->head)
			return os_error_set(err, EPROTO, "%s: the transfer stream is corrupt",
					    in->label);
		if (in->head_want > in->head_len)
			return (long)n;
	}
	in->state = ST_TYPE;
	return take_head(in, err) < 0 ? -1 : (long)n;
}

int xfer_in_feed(struct xfer_in *in, const void *data, size_t len, os_error *err)
{
	const uint8_t *p = data;
	if (in->state == ST_FAILED)
		return os_error_set(err, EPROTO, "%s: the transfer already failed", in->label);
	while (len > 0) {
		if (in->state == ST_DONE) {
			in->state = ST_FAILED;
			return os_error_set(err, EPROTO, "%s: bytes after the end of the transfer",
					    in->label);
		}
		long n = step(in, p, len, err);
		if (n < 0) {
			in->state = ST_FAILED;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return in->state == ST_DONE;
}

bool xfer_in_done(const struct xfer_in *in)
{
	return in->state == ST_DONE;
}

void xfer_in_free(struct xfer_in *in)
{
	if (in->file_fd >= 0) {
		close(in->file_fd);
		unlinkat(top(in), in->tmp_name, 0);
		in->file_fd = -1;
	}
	while (in->depth > 0)
		close(in->stack[--in->depth].fd);
}
