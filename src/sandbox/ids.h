/* ids.h - resolves user and group names through the image's own /etc/passwd
 * and /etc/group (no NSS: the launcher is static and runs in any image).
 * Never returns uid/gid 0: root is rejected here, by name or by number. */
#ifndef OS_SANDBOX_IDS_H
#define OS_SANDBOX_IDS_H

#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Finds name in passwd-format text; stores its uid and primary gid. */
int ids_find_user(const char *text, size_t len, const char *name, uid_t *uid, gid_t *gid,
		  os_error *err);
/* Finds name in group-format text; stores its gid. */
int ids_find_group(const char *text, size_t len, const char *name, gid_t *gid, os_error *err);

/* Reads /etc/passwd (or /etc/group) and resolves name; "where" names the file. */
int ids_resolve_user(const char *name, uid_t *uid, gid_t *gid, os_error *err);
int ids_resolve_group(const char *name, gid_t *gid, os_error *err);

#endif
