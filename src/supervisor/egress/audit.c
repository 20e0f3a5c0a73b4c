/* audit.c - JSON-lines audit sink (see audit.h). One write() per record so
 * concurrent writers never interleave; a failed write is counted, never fatal. */
#include "audit.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auditrec.h"
#include "json.h"

struct audit {
	int fd;
	char *sandbox;
	uint64_t written, failed;
};

int audit_open(const char *path, const char *sandbox_id, struct audit **out, os_error *err)
{
	struct audit *a = calloc(1, sizeof *a);
	if (!a || !(a->sandbox = strdup(sandbox_id ? sandbox_id : ""))) {
		free(a);
		return os_error_set(err, ENOMEM, "out of memory");
	}
	a->fd = 2;
	if (path) {
		a->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (a->fd < 0) {
			free(a->sandbox);
			free(a);
			return os_error_errno(err, "opening audit log %s", path);
		}
	}
	*out = a;
	return 0;
}

void audit_close(struct audit *a)
{
	if (!a)
		return;
	if (a->fd > 2)
		close(a->fd);
	free(a->sandbox);
	free(a);
}

static void set_str(json_t *o, const char *k, const char *v)
{
	if (v)
		json_object_set_new(o, k, json_string(v));
}

void audit_write(struct audit *a, const struct audit_record *r)
{
	_cleanup_json_ json_t *o = auditrec_new(a->sandbox, r->event, r->decision, r->reason);
	if (!o)
		return;
	set_str(o, "policy", r->policy);
	set_str(o, "rule", r->rule);
	set_str(o, "proto", r->proto);
	set_str(o, "host", r->host);
	set_str(o, "dst", r->dst);
	if (r->port)
		json_object_set_new(o, "dport", json_integer(r->port));
	set_str(o, "method", r->method);
	set_str(o, "path", r->path);
	set_str(o, "binary", r->binary);
	if (r->pid > 0)
		json_object_set_new(o, "pid", json_integer(r->pid));
	if (r->uid >= 0 && (r->pid > 0 || r->uid > 0))
		json_object_set_new(o, "uid", json_integer(r->uid));
	set_str(o, "detail", r->detail);
	if (r->generation)
		json_object_set_new(o, "generation", json_integer((json_int_t)r->generation));
	char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!line)
		return;
	size_t n = strlen(line);
	char *full = realloc(line, n + 2);
	if (!full) {
		free(line);
		return;
	}
	full[n] = '\n';
	full[n + 1] = '\0';
	ssize_t w = write(a->fd, full, n + 1);
	if (w == (ssize_t)(n + 1))
		a->written++;
	else
		a->failed++;
	free(full);
}

uint64_t audit_count(const struct audit *a)
{
	return a->written;
}
