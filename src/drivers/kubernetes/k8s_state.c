/* k8s_state.c - sandbox records as files DIR/ID.json, written atomically.
 * It never builds a path from an id it has not checked (no '/', no dots). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "json.h"
#include "k8s_state.h"
#include "parse.h"

#define RECORD_MAX (1u << 20)

static int record_path(const char *dir, const char *id, const char *ext, char *out, size_t cap,
		       os_error *err)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 64 || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
		return os_error_set(err, EINVAL, "sandbox id '%s' is not a valid id", id ? id : "");
	return str_format(out, cap, err, "%s/%s%s", dir, id, ext);
}

int k8s_state_read(const char *dir, const char *id, json_t **record, os_error *err)
{
	char path[4096];
	if (record_path(dir, id, ".json", path, sizeof path, err) < 0)
		return -1;
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT)
			return os_error_set(err, ENOENT, "no sandbox '%s' (no record in %s)", id,
					    dir);
		return os_error_errno(err, "opening %s", path);
	}
	_cleanup_free_ char *buf = malloc(RECORD_MAX + 1);
	if (!buf)
		return os_error_set(err, ENOMEM, "reading %s: out of memory", path);
	size_t n = fread(buf, 1, RECORD_MAX + 1, f);
	if (ferror(f))
		return os_error_errno(err, "reading %s", path);
	*record = json_parse_strict(buf, n, RECORD_MAX, err);
	if (!*record || !json_is_object(*record)) {
		json_decref(*record);
		*record = NULL;
		return os_error_prefix(err, "record %s", path);
	}
	return 0;
}

int k8s_state_write(const char *dir, const json_t *record, os_error *err)
{
	const char *id = json_string_value(json_object_get(record, "id"));
	char path[4096], tmp[4096];
	if (record_path(dir, id, ".json", path, sizeof path, err) < 0 ||
	    record_path(dir, id, ".json.tmp", tmp, sizeof tmp, err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return os_error_errno(err, "creating %s", dir);
	_cleanup_free_ char *text = json_dumps(record, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!text)
		return os_error_set(err, ENOMEM, "record: out of memory");
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return os_error_errno(err, "creating %s", tmp);
	size_t len = strlen(text), off = 0;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return os_error_errno(err, "writing %s", tmp);
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || rename(tmp, path) < 0)
		return os_error_errno(err, "saving %s", path);
	return 0;
}

int k8s_state_remove(const char *dir, const char *id, os_error *err)
{
	char path[4096];
	if (record_path(dir, id, ".json", path, sizeof path, err) < 0)
		return -1;
	if (unlink(path) < 0 && errno != ENOENT)
		return os_error_errno(err, "removing %s", path);
	return 0;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int k8s_state_list(const char *dir, json_t **records, os_error *err)
{
	DIR *d = opendir(dir);
	char *ids[4096];
	size_t n = 0;
	int r = 0;
	*records = json_array();
	if (!d)
		return errno == ENOENT ? 0 : os_error_errno(err, "opening %s", dir);
	for (struct dirent *e; (e = readdir(d)) && n < ARRAY_SIZE(ids);) {
		if (str_has_suffix(e->d_name, ".json") && e->d_name[0] != '.')
			ids[n++] = str_ndup(e->d_name, strlen(e->d_name) - 5);
	}
	closedir(d);
	qsort(ids, n, sizeof ids[0], by_id);
	for (size_t i = 0; i < n; i++) {
		json_t *rec = NULL;
		if (r == 0 && ids[i] && k8s_state_read(dir, ids[i], &rec, err) == 0)
			json_array_append_new(*records, rec);
		else if (r == 0)
			r = -1;
		free(ids[i]);
	}
	return r;
}
