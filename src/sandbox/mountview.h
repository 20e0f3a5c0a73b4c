/* mountview.h - the policy's read_only / read_write split realised as
 * mounts in the launcher's private mount namespace, under Landlock.
 * Landlock alone only adds rights, so it cannot make a read_only path
 * inside a read_write one read-only, and it leaves chmod, utime, setxattr
 * and chown to the owner of a "read-only" file; a read-only bind mount
 * makes the kernel refuse all of them (EROFS). Never loosens a mount: the
 * flags a path had before (nosuid, nodev, noexec, ro) are kept. */
#ifndef OS_SANDBOX_MOUNTVIEW_H
#define OS_SANDBOX_MOUNTVIEW_H

#include "error.h"
#include "spec.h"

/* Run in the new mount namespace after its private /proc, /tmp and the
 * workspace exist: each read_only path becomes a read-only (nosuid, and
 * nodev unless it is a device node itself) bind mount, and each read_write
 * path inside one is bound again with its own earlier flags; parents
 * before children, so the most specific entry wins. Missing paths are
 * skipped (Landlock reports them). */
int mountview_apply(const struct launch_spec *s, os_error *err);

/* Without a mount namespace nothing can make a read_only path inside a
 * read_write one read-only: refuse such a spec (EINVAL, naming both)
 * rather than run with less than the policy says. */
int mountview_check_without_namespace(const struct launch_spec *s, os_error *err);

#endif
