/* status.c - JSON status lines for the backend that started us (see status.h).
 * Writes are single write() calls of one whole line, so a reader never sees
 * half a line even when the launcher and its children share the fd. */
#include "status.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdutil.h"

static int status_fd = -1;

void status_init(int fd)
{
	status_fd = fd;
}

int status_get_fd(void)
{
	return status_fd;
}

void status_forget(void)
{
	status_fd = -1;
}

static void status_emit(json_t *line)
{
	if (!line)
		return;
	if (status_fd >= 0) {
		char *text = json_dumps(line, JSON_COMPACT);
		if (text) {
			size_t n = strlen(text);
			char *withnl = realloc(text, n + 2);
			if (withnl) {
				withnl[n] = '\n';
				withnl[n + 1] = '\0';
				(void)fd_write_all(status_fd, withnl, n + 1, NULL);
				text = withnl;
			}
			free(text);
		}
	}
	json_decref(line);
}

void status_ok(const char *step, int abi)
{
	json_t *line = json_pack("{s:s,s:b}", "step", step, "ok", 1);
	if (line && abi >= 0)
		json_object_set_new(line, "abi", json_integer(abi));
	status_emit(line);
}

void status_warn(const char *step, const char *fmt, ...)
{
	char msg[OS_ERROR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "openshell-sandbox: %s: warning: %s\n", step, msg);
	status_emit(json_pack("{s:s,s:s}", "step", step, "warning", msg));
}

void status_fail(const char *step, const os_error *err)
{
	int code = err->code ? err->code : EINVAL;
	fprintf(stderr, "openshell-sandbox: %s: %s\n", step, err->msg);
	json_t *line = json_pack("{s:s,s:i,s:s}", "step", step, "errno", code, "message", err->msg);
	if (!line) /* jansson refuses invalid UTF-8: still report the step */
		line = json_pack("{s:s,s:i,s:s}", "step", step, "errno", code, "message",
				 "(message is not valid UTF-8; see stderr)");
	status_emit(line);
}

noreturn void status_die(const char *step, const os_error *err, int code)
{
	status_fail(step, err);
	_exit(code);
}
