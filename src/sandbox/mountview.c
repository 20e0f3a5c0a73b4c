/* mountview.c - the agent's filesystem view (see mountview.h). Every path
 * here comes from the operator's policy, never from the agent, and this
 * runs before any agent code exists in the namespace. */
#include "mountview.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"
#include "pathutil.h"

/* Staging: a mount over /tmp, private to this namespace (the view gets a
 * fresh /tmp of its own, so nothing is lost by covering it). */
#define VIEW_STAGING "/tmp"
#define VIEW_MAX_ENTRIES (4 * SPEC_MAX_PATHS)

struct view_entry {
	char path[PATH_MAX]; /* where the agent sees it */
	char source[PATH_MAX]; /* what is bound there, resolved in this namespace */
	bool rw;
	bool dir;
	bool device; /* a char/block device named by the policy itself */
};

struct view {
	struct view_entry *e;
	size_t n;
	bool whole_root; /* "/" itself is read_only: the view starts as a copy of it */
};

/* POSIX shared memory: world-writable and shared by every process of the
 * host. Bound from the host it was a channel between sandboxes (and into
 * host programs' segments), so wherever the view would show it, it is the
 * sandbox's own tmpfs instead (see shm_view). */
#define VIEW_SHM "/dev/shm"

/* /proc, /tmp and /dev/shm are the namespace's own (fresh) ones: entries at
 * or below them are covered by those mounts and Landlock, not bound. */
static bool fresh_mount_covers(const char *path)
{
	static const char *const fresh[] = { "/proc", "/tmp", VIEW_SHM };
	for (size_t i = 0; i < ARRAY_SIZE(fresh); i++)
		if (!strcmp(path, fresh[i]) || path_is_inside(path, fresh[i]))
			return true;
	return false;
}

static int add_entry(struct view *v, const char *path, const char *source, bool rw,
		     const struct stat *st, os_error *err)
{
	if (v->n == VIEW_MAX_ENTRIES)
		return os_error_set(err, E2BIG, "more than %d paths in the filesystem view",
				    VIEW_MAX_ENTRIES);
	struct view_entry *e = &v->e[v->n];
	if (str_copy(e->path, sizeof e->path, path, err) < 0 ||
	    str_copy(e->source, sizeof e->source, source, err) < 0)
		return -1;
	e->rw = rw;
	e->dir = S_ISDIR(st->st_mode);
	e->device = S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode);
	v->n++;
	return 0;
}

/* One policy path: where it is named and, when that is a symlink (/lib ->
 * usr/lib), where it really is, so both spellings work as under Landlock,
 * which grants the target. Missing paths are skipped (Landlock reports
 * them in hard_requirement mode). */
/* The read_write entry path lies strictly inside, or NULL: there the agent
 * (of an earlier run: the workspace persists) may have planted symlinks. */
static const char *writable_parent(const struct launch_spec *s, const char *path)
{
	for (size_t i = 0; i < s->n_rw; i++)
		if (path_is_inside(path, s->rw_paths[i]))
			return s->rw_paths[i];
	return NULL;
}

/* Inside an agent-writable tree a policy path is taken only when no
 * component of it is a symlink: following one would bind whatever host
 * path the agent pointed it at into its own view. Outside such trees
 * symlinks are the operator's (/lib -> usr/lib) and followed. */
static int refuse_planted_symlink(const struct launch_spec *s, const char *path, bool rw,
				  os_error *err)
{
	const char *parent = writable_parent(s, path);
	if (!parent)
		return 0;
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == ELOOP)
		return os_error_set(
			err, EPERM,
			"read_%s path %s lies inside read_write %s and passes through a "
			"symlink: refused (it could point anywhere on the host)",
			rw ? "write" : "only", path, parent);
	return errno == ENOENT || errno == ENOTDIR
		       ? 0
		       : os_error_errno(err, "read_%s path %s", rw ? "write" : "only", path);
}

static int add_policy_path(struct view *v, const struct launch_spec *s, const char *path, bool rw,
			   os_error *err)
{
	char real[PATH_MAX];
	struct stat st;
	if (!strcmp(path, "/")) {
		v->whole_root |= !rw;
		return 0;
	}
	if (fresh_mount_covers(path))
		return 0;
	if (refuse_planted_symlink(s, path, rw, err) < 0)
		return -1;
	if (!realpath(path, real) || stat(real, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return os_error_errno(err, "read_%s path %s", rw ? "write" : "only", path);
	}
	if (add_entry(v, path, real, rw, &st, err) < 0)
		return -1;
	if (strcmp(path, real) != 0 && !fresh_mount_covers(real))
		return add_entry(v, real, real, rw, &st, err);
	return 0;
}

/* The shortest read_write entry path lies strictly inside, or NULL. */
static const char *outermost_writable_parent(const struct launch_spec *s, const char *path)
{
	const char *outer = NULL;
	for (size_t i = 0; i < s->n_rw; i++)
		if (path_is_inside(path, s->rw_paths[i]) &&
		    (!outer || strlen(s->rw_paths[i]) < strlen(outer)))
			outer = s->rw_paths[i];
	return outer;
}

static bool has_entry(const struct view *v, const char *path)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->e[i].path, path))
			return true;
	return false;
}

/* A read_only entry inside a read_write tree is held at its place: every
 * directory between the outermost such tree and it is bound onto itself
 * (writable as before) and so becomes a mount point, which the kernel
 * never renames, removes or replaces (EBUSY). Without that the agent
 * renames a parent away (the read-only mount moves along with it), makes a
 * new directory and writes its own file under the policy's read-only
 * name, in the view and on the host, for every later run. The check is by
 * dentry, so another spelling of the same directory is held too. */
static int pin_parents(struct view *v, const struct launch_spec *s, const char *path, os_error *err)
{
	const char *outer = outermost_writable_parent(s, path);
	char dir[PATH_MAX], real[PATH_MAX];
	struct stat st;
	if (!outer)
		return 0;
	if (str_copy(dir, sizeof dir, path, err) < 0)
		return -1;
	size_t outer_len = strlen(outer);
	for (char *slash = strrchr(dir, '/'); slash && (size_t)(slash - dir) > outer_len;
	     slash = strrchr(dir, '/')) {
		*slash = '\0';
		if (has_entry(v, dir))
			continue; /* a policy entry: a mount point already */
		if (!realpath(dir, real) || stat(real, &st) < 0)
			return os_error_errno(err, "parent %s of read_only %s", dir, path);
		if (add_entry(v, dir, real, true, &st, err) < 0)
			return -1;
	}
	return 0;
}

static int by_length(const void *a, const void *b)
{
	const struct view_entry *x = a, *y = b;
	size_t lx = strlen(x->path), ly = strlen(y->path);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return (int)x->rw - (int)y->rw; /* same path in both lists: read_write wins */
}

static int collect(const struct launch_spec *s, struct view *v, os_error *err)
{
	v->e = calloc(VIEW_MAX_ENTRIES, sizeof(*v->e));
	if (!v->e)
		return os_error_set(err, ENOMEM, "filesystem view");
	for (size_t i = 0; i < s->n_ro; i++)
		if (add_policy_path(v, s, s->ro_paths[i], false, err) < 0)
			return -1;
	for (size_t i = 0; i < s->n_rw; i++)
		if (add_policy_path(v, s, s->rw_paths[i], true, err) < 0)
			return -1;
	/* After every policy entry, so a pin never shadows one (by_length puts
	 * read_write after read_only for the same path). */
	for (size_t i = 0, n = v->n; i < n; i++)
		if (!v->e[i].rw && pin_parents(v, s, v->e[i].path, err) < 0)
			return -1;
	/* A terminal session's fd 0 is a /dev/pts node (the agent's, or later
	 * an exec'd command's): ttyname() must find it. Bound as it is;
	 * opening anything there is still Landlock's call. */
	if (add_policy_path(v, s, "/dev/pts", true, err) < 0)
		return -1;
	/* Clients that read only the system's roots (GnuTLS: wget) trust the
	 * sandbox CA too: the bundle (system roots + it) is shown read-only in
	 * their place, where the image has that file (it is longer than any
	 * parent it lies in, so it is bound after them). */
	struct stat st, sys;
	char real[PATH_MAX];
	if (s->system_trust && stat(SPEC_SYSTEM_TRUST_PATH, &sys) == 0 && S_ISREG(sys.st_mode) &&
	    realpath(s->system_trust, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode) &&
	    add_entry(v, SPEC_SYSTEM_TRUST_PATH, real, false, &st, err) < 0)
		return -1;
	qsort(v->e, v->n, sizeof(*v->e), by_length);
	return 0;
}

/* mkdir -p of the mount point's parents inside the staging tree, then the
 * mount point itself (a directory, or an empty file for a file). Existing
 * ones (inside a bound tree) are used as they are. */
static int mount_point(const char *target, bool dir, os_error *err)
{
	char parent[PATH_MAX];
	struct stat st;
	/* Inside a bound tree it usually exists; never open it (a device
	 * under a nodev mount would refuse, and opening has effects). */
	if (lstat(target, &st) == 0)
		return 0;
	if (str_copy(parent, sizeof parent, target, err) < 0)
		return -1;
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (dir_create_parents(parent, 0755) < 0)
			return os_error_errno(err, "creating %s in the filesystem view", parent);
	}
	if (dir) {
		if (mkdir(target, 0755) < 0 && errno != EEXIST)
			return os_error_errno(err, "creating mount point %s", target);
		return 0;
	}
	int fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return os_error_errno(err, "creating mount point %s", target);
	close(fd);
	return 0;
}

static int set_attrs(const char *target, uint64_t attrs, bool recursive, os_error *err)
{
	struct mount_attr a = { .attr_set = attrs };
	if (syscall(SYS_mount_setattr, AT_FDCWD, target, recursive ? AT_RECURSIVE : 0, &a,
		    sizeof a) < 0)
		return os_error_errno(err, "making %s read-only", target);
	return 0;
}

/* Read-only entries: ro and nosuid on the whole bound subtree, nodev too
 * unless the policy names a device (/dev/urandom) itself. Attributes are
 * only ever added, so a mount that was noexec or ro stays so. */
static uint64_t read_only_attrs(bool device)
{
	return MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | (device ? 0 : MOUNT_ATTR_NODEV);
}

static int bind_entry(const struct view_entry *e, os_error *err)
{
	char target[PATH_MAX];
	if (str_format(target, sizeof target, err, "%s%s", VIEW_STAGING, e->path) < 0 ||
	    mount_point(target, e->dir, err) < 0)
		return -1;
	if (mount(e->source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
		return os_error_errno(err, "binding %s into the filesystem view", e->path);
	/* A read_write entry keeps the flags of the mount it comes from. */
	return e->rw ? 0 : set_attrs(target, read_only_attrs(e->device), true, err);
}

static int stage_root(const struct view *v, os_error *err)
{
	if (v->whole_root) {
		if (mount("/", VIEW_STAGING, NULL, MS_BIND | MS_REC, NULL) < 0)
			return os_error_errno(err, "binding / into the filesystem view");
		return set_attrs(VIEW_STAGING, read_only_attrs(false), true, err);
	}
	if (mount("tmpfs", VIEW_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
		return os_error_errno(err, "mounting the filesystem view's root");
	return 0;
}

/* How the view shows /dev/shm: absent (0) unless an entry covers it (it,
 * /dev or /); then a fresh tmpfs, writable (2) when a read_write entry
 * covers it, else empty and read-only (1). */
static int shm_view(const struct launch_spec *s, const struct view *v)
{
	bool ro = v->whole_root;
	for (size_t i = 0; i < s->n_rw; i++)
		if (!strcmp(s->rw_paths[i], VIEW_SHM) || path_is_inside(VIEW_SHM, s->rw_paths[i]))
			return 2;
	for (size_t i = 0; i < s->n_ro; i++)
		ro |= !strcmp(s->ro_paths[i], VIEW_SHM) || path_is_inside(VIEW_SHM, s->ro_paths[i]);
	return ro ? 1 : 0;
}

static int fresh_shm(int mode, os_error *err)
{
	if (mode == 0)
		return 0;
	if (mount_point(VIEW_STAGING VIEW_SHM, true, err) < 0)
		return -1;
	unsigned long ro = mode == 1 ? MS_RDONLY : 0;
	if (mount("tmpfs", VIEW_STAGING VIEW_SHM, "tmpfs", MS_NOSUID | MS_NODEV | ro, "mode=1777") <
	    0)
		return os_error_errno(err, "mounting %s in the view", VIEW_SHM);
	return 0;
}

/* The namespace's own /proc (its PID namespace) and a fresh /tmp. */
static int fresh_mounts(os_error *err)
{
	if (mount_point(VIEW_STAGING "/proc", true, err) < 0)
		return -1;
	if (mount("proc", VIEW_STAGING "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return os_error_errno(err, "mounting /proc in the view");
	if (mount_point(VIEW_STAGING "/tmp", true, err) < 0)
		return -1;
	if (mount("tmpfs", VIEW_STAGING "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
		return os_error_errno(err, "mounting /tmp in the view");
	return 0;
}

/* A working directory that exists exists in the view too, even when the
 * policy does not name it (empty, root-owned), as before there was a view;
 * a missing one stays missing (step cwd fails). */
static int cwd_point(const char *cwd, os_error *err)
{
	char target[PATH_MAX];
	struct stat st;
	if (!cwd || !strcmp(cwd, "/") || stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if (str_format(target, sizeof target, err, "%s%s", VIEW_STAGING, cwd) < 0)
		return -1;
	if (stat(target, &st) == 0)
		return 0;
	return mount_point(target, true, err);
}

/* The staging tree becomes "/"; the old root is detached, so nothing the
 * policy does not name stays reachable. */
static int enter_view(bool root_is_tmpfs, os_error *err)
{
	if (chdir(VIEW_STAGING) < 0)
		return os_error_errno(err, "entering the filesystem view");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return os_error_errno(err, "pivot_root into the filesystem view");
	if (umount2(".", MNT_DETACH) < 0)
		return os_error_errno(err, "detaching the old root");
	if (chdir("/") < 0)
		return os_error_errno(err, "chdir / in the filesystem view");
	/* Mount points exist now; the view's own root takes no new files. */
	if (root_is_tmpfs &&
	    set_attrs("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, false, err) <
		    0)
		return -1;
	return 0;
}

static int build_staging(const struct launch_spec *s, struct view *v, os_error *err)
{
	if (collect(s, v, err) < 0 || stage_root(v, err) < 0)
		return -1;
	for (size_t i = 0; i < v->n; i++)
		if (bind_entry(&v->e[i], err) < 0)
			return -1;
	if (fresh_mounts(err) < 0 || fresh_shm(shm_view(s, v), err) < 0)
		return -1;
	return cwd_point(s->cwd, err);
}

int mountview_build(const struct launch_spec *s, os_error *err)
{
	struct view v = { 0 };
	int rc = build_staging(s, &v, err);
	free(v.e);
	return rc < 0 ? -1 : enter_view(!v.whole_root, err);
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
