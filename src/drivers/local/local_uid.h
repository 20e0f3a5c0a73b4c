/* local_uid.h - each local sandbox's own uid (= gid), from the operator's
 * `sandbox_uid_range`, so agents of different sandboxes are apart by plain
 * file permissions too (a path two policies both name is not a channel).
 * The allocation table is a directory of claim files, STATE/uids/UID, each
 * holding the sandbox id: created O_EXCL, so two creates never share one,
 * and it survives gateway restarts. */
#ifndef OS_LOCAL_UID_H
#define OS_LOCAL_UID_H

#include <stdint.h>

#include "error.h"

struct local_uid_range {
	uint32_t first, last; /* 0, 0: not configured */
};

/* "FIRST-LAST" with 1000 <= FIRST <= LAST <= 2^31-1; EINVAL names the key. */
int local_uid_range_parse(const char *text, struct local_uid_range *out, os_error *err);

/* The uid claimed for id (the same one again for the same id); ENOSPC when
 * every uid of the range is taken. */
int local_uid_claim(const char *state_dir, const struct local_uid_range *r, const char *id,
		    uint32_t *uid, os_error *err);
/* Frees id's claim on uid (nothing when the claim is another's). */
void local_uid_release(const char *state_dir, uint32_t uid, const char *id);

#endif
