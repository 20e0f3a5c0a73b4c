/* mountview.h - the agent's filesystem view: a mount-namespace tree that
 * holds only what the policy names (bubblewrap-style), realised under
 * Landlock. Without it an unlisted path is still there (Landlock refuses
 * opening it, but connect() on a unix socket file is not a Landlock right,
 * so a socket anywhere, another sandbox's included, was reachable);
 * Landlock only adds rights, so a read_only path inside a read_write one
 * stayed writable; and the owner of a "read-only" file could chmod, utime,
 * setxattr, chown or truncate it. In the view, unlisted paths are absent,
 * read_only entries are read-only mounts, and the kernel refuses all of
 * that (ENOENT, EROFS). Never loosens a mount: attributes are only added. */
#ifndef OS_SANDBOX_MOUNTVIEW_H
#define OS_SANDBOX_MOUNTVIEW_H

#include "error.h"
#include "spec.h"

/* Run in the new mount namespace once its /proc and the workspace exist:
 * a tmpfs root (or, when "/" itself is read_only, a read-only copy of "/")
 * with each policy path bound at its place, parents before children so the
 * most specific entry wins: read_only entries ro,nosuid (and nodev unless
 * the entry is a device node itself), read_write ones with the flags of
 * the mount they come from; a symlinked entry (/lib -> usr/lib) appears
 * under both names; the directories between a read_write entry and a
 * read_only one inside it are bound onto themselves, so none of them can
 * be renamed or removed (EBUSY) to move the read-only mount away from its
 * name. /dev/shm, where an entry would show it, is a tmpfs of its own.
 * The view's /proc and /tmp are its own, and the working
 * directory exists (empty) even when unlisted. Then pivot_root into it and
 * detach the old root. Missing paths are skipped (Landlock reports them). */
int mountview_build(const struct launch_spec *s, os_error *err);

/* Without a mount namespace nothing can make a read_only path inside a
 * read_write one read-only: refuse such a spec (EINVAL, naming both)
 * rather than run with less than the policy says. */
int mountview_check_without_namespace(const struct launch_spec *s, os_error *err);

#endif
