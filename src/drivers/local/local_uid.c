/* local_uid.c - per-sandbox uids from the operator's range (local_uid.h). */
#include "local_uid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define UID_FIRST_MIN 1000u /* below: system accounts */
#define UID_LAST_MAX 2147483647u

int local_uid_range_parse(const char *text, struct local_uid_range *out, os_error *err)
{
	const char *dash = text ? strchr(text, '-') : NULL;
	uint64_t a, b;
	*out = (struct local_uid_range){ 0 };
	if (!dash ||
	    parse_u64(text, (size_t)(dash - text), UID_FIRST_MIN, UID_LAST_MAX, &a, NULL) < 0 ||
	    parse_u64_str(dash + 1, UID_FIRST_MIN, UID_LAST_MAX, &b, NULL) < 0 || a > b)
		return os_error_set(err, EINVAL,
				    "drivers.local.sandbox_uid_range: expected FIRST-LAST with "
				    "%u <= FIRST <= LAST <= %u, got \"%s\"",
				    UID_FIRST_MIN, UID_LAST_MAX, text ? text : "");
	out->first = (uint32_t)a;
	out->last = (uint32_t)b;
	return 0;
}

static int claim_path(const char *state_dir, uint32_t uid, char *out, size_t cap, os_error *err)
{
	return str_format(out, cap, err, "%s/uids/%u", state_dir, uid);
}

/* 1 = ours now (or already), 0 = another sandbox's, -1 = error. */
static int try_claim(const char *path, const char *id, os_error *err)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd_write_all(fd, id, strlen(id), err) < 0 ? -1 : 1;
	if (errno != EEXIST)
		return os_error_errno(err, "claiming %s", path);
	_cleanup_free_ char *owner = NULL;
	size_t len = 0;
	if (file_read_all(path, 256, &owner, &len, NULL) < 0)
		return 0;
	return len == strlen(id) && memcmp(owner, id, len) == 0;
}

/* FNV-1a: where the search starts, so ids spread over the range. */
static uint32_t spread(const char *id)
{
	uint32_t h = 2166136261u;
	for (const char *p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

int local_uid_claim(const char *state_dir, const struct local_uid_range *r, const char *id,
		    uint32_t *uid, os_error *err)
{
	char dir[4096], path[4200];
	if (str_format(dir, sizeof dir, err, "%s/uids", state_dir) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return os_error_errno(err, "creating %s", dir);
	uint64_t n = (uint64_t)r->last - r->first + 1;
	uint64_t start = spread(id) % n;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)(r->first + (start + i) % n);
		if (claim_path(state_dir, u, path, sizeof path, err) < 0)
			return -1;
		int rc = try_claim(path, id, err);
		if (rc < 0)
			return -1;
		if (rc == 1) {
			*uid = u;
			return 0;
		}
	}
	return os_error_set(err, ENOSPC,
			    "drivers.local.sandbox_uid_range %u-%u: every uid is taken by a "
			    "sandbox",
			    r->first, r->last);
}

void local_uid_release(const char *state_dir, uint32_t uid, const char *id)
{
	char path[4200];
	_cleanup_free_ char *owner = NULL;
	size_t len = 0;
	if (claim_path(state_dir, uid, path, sizeof path, NULL) < 0 ||
	    file_read_all(path, 256, &owner, &len, NULL) < 0)
		return;
	if (len == strlen(id) && memcmp(owner, id, len) == 0)
		unlink(path);
}
