/* mountview.c - read_only paths as read-only bind mounts (see mountview.h).
 * Every path here comes from the operator's policy, never from the agent,
 * and this runs before any agent code exists in the namespace. */
#include "mountview.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "pathutil.h"

#define MOUNTVIEW_MAX_PATHS (2 * SPEC_MAX_PATHS)

struct view_entry {
	const char *path;
	bool rw;
	bool device; /* a char/block device named by the policy itself */
	unsigned long keep; /* MS_* flags the path's mount had before */
};

static int by_length(const void *a, const void *b)
{
	const struct view_entry *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return (int)x->rw - (int)y->rw; /* same path in both lists: read_write wins */
}

static unsigned long statvfs_to_ms(unsigned long f)
{
	unsigned long ms = 0;
	if (f & ST_RDONLY)
		ms |= MS_RDONLY;
	if (f & ST_NOSUID)
		ms |= MS_NOSUID;
	if (f & ST_NODEV)
		ms |= MS_NODEV;
	if (f & ST_NOEXEC)
		ms |= MS_NOEXEC;
	if (f & ST_NOATIME)
		ms |= MS_NOATIME;
	if (f & ST_NODIRATIME)
		ms |= MS_NODIRATIME;
	if (f & ST_RELATIME)
		ms |= MS_RELATIME;
	return ms;
}

/* 1 = recorded, 0 = the path does not exist (skipped). Flags are read
 * before anything is remounted, so a later read-only parent cannot leak
 * into a read_write child's "earlier" flags. */
static int record(struct view_entry *e, const char *path, bool rw, os_error *err)
{
	struct stat st;
	struct statvfs vfs;
	if (stat(path, &st) < 0 || statvfs(path, &vfs) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return os_error_errno(err, "read_%s path %s", rw ? "write" : "only", path);
	}
	*e = (struct view_entry){ .path = path,
				  .rw = rw,
				  .device = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode),
				  .keep = statvfs_to_ms(vfs.f_flag) };
	return 1;
}

static int collect(const struct launch_spec *s, struct view_entry *v, size_t *n, os_error *err)
{
	*n = 0;
	for (size_t i = 0; i < s->n_ro + s->n_rw; i++) {
		bool rw = i >= s->n_ro;
		const char *p = rw ? s->rw_paths[i - s->n_ro] : s->ro_paths[i];
		int rc = record(&v[*n], p, rw, err);
		if (rc < 0)
			return -1;
		*n += (size_t)rc;
	}
	qsort(v, *n, sizeof(*v), by_length);
	return 0;
}

/* Is entry i inside a read_only entry that comes before it? */
static bool under_read_only(const struct view_entry *v, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!v[j].rw && path_is_inside(v[i].path, v[j].path))
			return true;
	return false;
}

static int bind_with(const struct view_entry *e, unsigned long flags, os_error *err)
{
	/* "/" cannot be covered by a bind mount (lookups start below it); its
	 * mount is this namespace's own copy, so remount it in place. */
	if (strcmp(e->path, "/") != 0 && mount(e->path, e->path, NULL, MS_BIND | MS_REC, NULL) < 0)
		return os_error_errno(err, "bind-mounting %s", e->path);
	if (mount(NULL, e->path, NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0)
		return os_error_errno(err, "remounting %s %s", e->path,
				      flags & MS_RDONLY ? "read-only" : "with its own flags");
	return 0;
}

int mountview_apply(const struct launch_spec *s, os_error *err)
{
	struct view_entry v[MOUNTVIEW_MAX_PATHS];
	size_t n;
	if (s->n_ro + s->n_rw > MOUNTVIEW_MAX_PATHS)
		return os_error_set(err, E2BIG, "more than %d filesystem paths",
				    MOUNTVIEW_MAX_PATHS);
	if (collect(s, v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].rw) {
			unsigned long f = v[i].keep | MS_RDONLY | MS_NOSUID;
			if (!v[i].device)
				f |= MS_NODEV;
			if (bind_with(&v[i], f, err) < 0)
				return -1;
		} else if (under_read_only(v, i) && bind_with(&v[i], v[i].keep, err) < 0) {
			return -1;
		}
	}
	return 0;
}

int mountview_check_without_namespace(const struct launch_spec *s, os_error *err)
{
	for (size_t i = 0; i < s->n_ro; i++)
		for (size_t j = 0; j < s->n_rw; j++)
			if (path_is_inside(s->ro_paths[i], s->rw_paths[j]))
				return os_error_set(err, EINVAL,
						    "read_only %s lies inside read_write %s: only "
						    "the launcher's mount namespace "
						    "(new_namespaces) can keep it read-only",
						    s->ro_paths[i], s->rw_paths[j]);
	return 0;
}
