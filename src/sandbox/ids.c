/* ids.c - /etc/passwd and /etc/group lookups by name (see ids.h).
 * The files are the image's, so they are parsed as untrusted text: bounded
 * fields, decimal ids only, and a malformed matching line is an error. */
#include "ids.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define IDS_FILE_CAP (4u << 20)
#define IDS_MAX_ID 4294967294u

/* Splits line[0..len) at ':' into at most nf fields; returns the count. */
static size_t split_fields(const char *line, size_t len, const char *f[], size_t fl[], size_t nf)
{
	size_t n = 0;
	const char *p = line, *end = line + len;
	while (n < nf) {
		const char *c = memchr(p, ':', (size_t)(end - p));
		f[n] = p;
		fl[n] = c ? (size_t)(c - p) : (size_t)(end - p);
		n++;
		if (!c)
			break;
		p = c + 1;
	}
	return n;
}

/* Finds the line whose first field is name; fills its fields. 1 = found. */
static int find_line(const char *text, size_t len, const char *name, const char *f[], size_t fl[],
		     size_t nf, size_t *got)
{
	size_t nlen = strlen(name);
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (ll > nlen && p[nlen] == ':' && memcmp(p, name, nlen) == 0) {
			*got = split_fields(p, ll, f, fl, nf);
			return 1;
		}
		p += ll + 1;
	}
	return 0;
}

static int parse_id(const char *s, size_t len, const char *what, const char *name, uint64_t *out,
		    os_error *err)
{
	if (parse_u64(s, len, 0, IDS_MAX_ID, out, err) < 0)
		return os_error_prefix(err, "%s of \"%s\"", what, name);
	if (*out == 0)
		return os_error_set(err, EPERM, "\"%s\" has %s 0 (root is not allowed)", name,
				    what);
	return 0;
}

int ids_find_user(const char *text, size_t len, const char *name, uid_t *uid, gid_t *gid,
		  os_error *err)
{
	const char *f[4];
	size_t fl[4], got = 0;
	uint64_t u, g;
	if (!find_line(text, len, name, f, fl, 4, &got))
		return os_error_set(err, ENOENT, "user \"%s\" not found in /etc/passwd", name);
	if (got < 4)
		return os_error_set(err, EINVAL, "/etc/passwd: malformed line for \"%s\"", name);
	if (parse_id(f[2], fl[2], "uid", name, &u, err) < 0 ||
	    parse_id(f[3], fl[3], "gid", name, &g, err) < 0)
		return os_error_prefix(err, "/etc/passwd");
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int ids_find_group(const char *text, size_t len, const char *name, gid_t *gid, os_error *err)
{
	const char *f[3];
	size_t fl[3], got = 0;
	uint64_t g;
	if (!find_line(text, len, name, f, fl, 3, &got))
		return os_error_set(err, ENOENT, "group \"%s\" not found in /etc/group", name);
	if (got < 3)
		return os_error_set(err, EINVAL, "/etc/group: malformed line for \"%s\"", name);
	if (parse_id(f[2], fl[2], "gid", name, &g, err) < 0)
		return os_error_prefix(err, "/etc/group");
	*gid = (gid_t)g;
	return 0;
}

int ids_resolve_user(const char *name, uid_t *uid, gid_t *gid, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (file_read_all("/etc/passwd", IDS_FILE_CAP, &text, &len, err) < 0)
		return os_error_prefix(err, "resolving user \"%s\"", name);
	return ids_find_user(text, len, name, uid, gid, err);
}

int ids_resolve_group(const char *name, gid_t *gid, os_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (file_read_all("/etc/group", IDS_FILE_CAP, &text, &len, err) < 0)
		return os_error_prefix(err, "resolving group \"%s\"", name);
	return ids_find_group(text, len, name, gid, err);
}
