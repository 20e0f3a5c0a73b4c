/* injection.c - foreign code in an allowed binary (see injection.h). The
 * texts parsed here are written by the kernel but describe a process the
 * agent controls: every field is bounded and a line that does not parse is
 * a refusal, never a skip. */
#include "injection.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "pathutil.h"

/* Variables that make the loader or a library load code named by a path. */
static const char *const loader_vars[] = { "LD_PRELOAD",      "LD_AUDIT",	 "OPENSSL_CONF",
					   "OPENSSL_MODULES", "OPENSSL_ENGINES", "GCONV_PATH" };

static size_t covers(const char *path, const char *entry)
{
	if (!strcmp(path, entry) || path_is_inside(path, entry))
		return strlen(entry);
	return 0;
}

bool injection_path_trusted(const struct injection_tree *t, const char *path)
{
	size_t best_ro = 0, best_rw = 0;
	for (size_t i = 0; i < t->n_read_only; i++) {
		size_t n = covers(path, t->read_only[i]);
		best_ro = n > best_ro ? n : best_ro;
	}
	for (size_t i = 0; i < t->n_read_write; i++) {
		size_t n = covers(path, t->read_write[i]);
		best_rw = n > best_rw ? n : best_rw;
	}
	return best_ro > 0 && best_ro > best_rw;
}

/* Fields of one maps line: "start-end perms offset dev inode   path". */
static const char *skip_fields(const char *p, const char *end, int n)
{
	for (int i = 0; i < n; i++) {
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
	}
	return p;
}

/* At most this much of an agent-chosen path or value goes into a reason. */
static int clip(size_t len)
{
	return len > 200 ? 200 : (int)len;
}

__attribute__((format(printf, 3, 4))) static int flag(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return 1;
}

static int scan_map_line(const char *line, const char *end, const char *exe,
			 const struct injection_tree *t, char *why, size_t cap)
{
	const char *perms = skip_fields(line, end, 1);
	if (end - perms < 4)
		return flag(why, cap, "unreadable maps line \"%.*s\"", clip((size_t)(end - line)),
			    line);
	if (perms[2] != 'x')
		return 0;
	const char *path = skip_fields(perms, end, 4);
	size_t len = (size_t)(end - path);
	if (len == 0 || path[0] == '[')
		return 0; /* anonymous (JIT) or a kernel pseudo-mapping */
	char buf[PATH_MAX];
	if (path[0] != '/' || len >= sizeof buf)
		return flag(why, cap, "code mapped from \"%.*s\"", clip(len), path);
	memcpy(buf, path, len);
	buf[len] = '\0';
	if (exe && !strcmp(buf, exe))
		return 0;
	if (len > 10 && !strcmp(buf + len - 10, " (deleted)"))
		return flag(why, cap, "code mapped from a deleted file %.*s", clip(len), path);
	if (!injection_path_trusted(t, buf))
		return flag(why, cap, "code mapped from %.*s, outside the read-only tree",
			    clip(len), path);
	return 0;
}

int injection_scan_maps(const char *maps, size_t len, const char *exe,
			const struct injection_tree *t, char *why, size_t cap)
{
	const char *p = maps, *end = maps + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;
		if (line_end > p) {
			int rc = scan_map_line(p, line_end, exe, t, why, cap);
			if (rc)
				return rc;
		}
		p = line_end + 1;
	}
	return 0;
}

/* Each ':' or ' ' separated entry of the value must be a trusted path. */
static bool value_trusted(const char *v, size_t len, const struct injection_tree *t)
{
	const char *end = v + len;
	while (v < end) {
		size_t n = strcspn(v, ": ");
		if (n > (size_t)(end - v))
			n = (size_t)(end - v);
		if (n > 0) {
			char buf[PATH_MAX];
			if (n >= sizeof buf || v[0] != '/')
				return false;
			memcpy(buf, v, n);
			buf[n] = '\0';
			if (!injection_path_trusted(t, buf))
				return false;
		}
		v += n + 1;
	}
	return true;
}

int injection_scan_environ(const char *env, size_t len, const struct injection_tree *t, char *why,
			   size_t cap)
{
	const char *p = env, *end = env + len;
	while (p < end) {
		size_t n = strnlen(p, (size_t)(end - p));
		const char *eq = memchr(p, '=', n);
		for (size_t i = 0; eq && i < ARRAY_SIZE(loader_vars); i++) {
			size_t k = strlen(loader_vars[i]);
			if ((size_t)(eq - p) != k || memcmp(p, loader_vars[i], k) != 0)
				continue;
			if (!value_trusted(eq + 1, n - k - 1, t))
				return flag(why, cap, "%.*s names code outside the read-only tree",
					    clip(n), p);
		}
		p += n + 1;
	}
	return 0;
}

static int read_proc(pid_t pid, const char *what, size_t cap, char **out, size_t *len,
		     os_error *err)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
	return file_read_all(path, cap, out, len, err);
}

int injection_check(pid_t pid, const struct injection_tree *t, char *why, size_t cap, os_error *err)
{
	char exe[PATH_MAX], link[64];
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof exe - 1);
	if (n <= 0)
		return os_error_errno(err, "reading the executable of pid %d", (int)pid);
	exe[n] = '\0';
	_cleanup_free_ char *maps = NULL, *env = NULL;
	size_t maps_len, env_len;
	if (read_proc(pid, "maps", INJECTION_MAPS_CAP, &maps, &maps_len, err) < 0 ||
	    read_proc(pid, "environ", INJECTION_ENVIRON_CAP, &env, &env_len, err) < 0)
		return -1;
	int rc = injection_scan_maps(maps, maps_len, exe, t, why, cap);
	if (rc == 0)
		rc = injection_scan_environ(env, env_len, t, why, cap);
	return rc;
}
