/* audit_sink.c - the backends' audit sink (see audit_sink.h): a record is
 * written whole with one newline, or reported as lost in the log. */
#include "audit_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "log.h"

int audit_sink_open(const char *path, int *fd, os_error *err)
{
	if (!path) {
		*fd = STDERR_FILENO;
		return 0;
	}
	*fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (*fd < 0)
		return os_error_errno(err, "audit log %s", path);
	return 0;
}

void audit_sink_write(void *user, const json_t *record)
{
	int fd = *(int *)user;
	_cleanup_free_ char *line = json_to_string(record);
	if (!line)
		return;
	size_t n = strlen(line);
	line[n] = '\n';
	/* json_to_string's buffer has room for the NUL we just replaced. */
	if (fd_write_all(fd, line, n + 1, NULL) < 0)
		log_error("audit write failed: %s", strerror(errno));
}
