/* transfer.c - the launcher's transfer mode (`sandbox upload` / `download`,
 * docs/files.md): instead of exec'ing a command, the fully confined process
 * (the agent's namespaces, uid, Landlock rules and seccomp filter) reads a
 * transfer stream on stdin into the workspace or writes one of a workspace
 * path on stdout. It can never write where the agent could not. Paths are
 * resolved beneath the workspace's fd with openat2 (no "..", no link on the
 * way, the last component included), so neither a link the agent planted
 * nor one it swaps in during the transfer leads outside. */
#include "transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "xfer.h"

#define CHUNK 65536

/* REMOTE as a path relative to the workspace ("" for the workspace itself):
 * relative paths are the workspace's already; an absolute one must lie in
 * it. ".." is refused outright, not resolved. */
int transfer_rel_path(const char *path, char *rel, size_t cap, os_error *err)
{
	const char *ws = SPEC_WORKSPACE_TARGET;
	size_t wl = strlen(ws), n = 0;
	const char *p = path;
	if (path[0] == '/') {
		if (strncmp(path, ws, wl) != 0 || (path[wl] != '\0' && path[wl] != '/'))
			return os_error_set(err, EACCES, "%s: outside the workspace %s", path, ws);
		p += wl;
	}
	while (*p) {
		size_t len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return os_error_set(err, EACCES, "%s: \"..\" is not allowed", path);
		if (len > 0 && !(len == 1 && p[0] == '.')) {
			if (n + len + 2 > cap || len > XFER_NAME_MAX)
				return os_error_set(err, ENAMETOOLONG, "%s: path too long", path);
			if (n)
				rel[n++] = '/';
			memcpy(rel + n, p, len);
			n += len;
		}
		p += len + (p[len] == '/');
	}
	rel[n] = '\0';
	return 0;
}

/* rel under the workspace fd, never through a link, never leaving it. */
static int open_beneath(int ws, const char *rel, uint64_t flags, const char *label, os_error *err)
{
	struct open_how how = { .flags = flags | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, ws, rel[0] ? rel : ".", &how, sizeof how);
	if (fd >= 0)
		return fd;
	if (errno == ELOOP)
		os_error_set(err, ELOOP,
			     "%s: is or passes through a symbolic link (transfers never "
			     "follow links)",
			     label);
	else if (errno == EXDEV)
		os_error_set(err, EACCES, "%s: outside the workspace", label);
	else if (errno == ENOSYS)
		os_error_set(err, ENOSYS, "%s: this kernel has no openat2 (Linux 5.6 or later)",
			     label);
	else
		os_error_errno(err, "%s", label);
	return -1;
}

static int workspace_fd(os_error *err)
{
	int fd = open(SPEC_WORKSPACE_TARGET, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return os_error_errno(err, "the workspace %s", SPEC_WORKSPACE_TARGET);
	return fd;
}

static void report(const char *path, uint64_t files, uint64_t bytes)
{
	char line[XFER_PATH_MAX + 128];
	int n = snprintf(line, sizeof line, "%s\t%llu\t%llu\n", path, (unsigned long long)files,
			 (unsigned long long)bytes);
	if (n > 0 && (size_t)n < sizeof line)
		fd_write_all(STDOUT_FILENO, line, (size_t)n, NULL);
}

/* Where an upload lands, as cp places it: into REMOTE when it is a
 * directory (under the sender's name), else as REMOTE itself. */
static int place(int ws, const char *rel, char *label, size_t cap, const char **name, os_error *err)
{
	snprintf(label, cap, "%s%s%s", SPEC_WORKSPACE_TARGET, rel[0] ? "/" : "", rel);
	int fd = open_beneath(ws, rel, O_PATH | O_DIRECTORY, label, err);
	*name = NULL;
	if (fd >= 0 || (err->code != ENOENT && err->code != ENOTDIR))
		return fd;
	char *slash = strrchr(rel, '/');
	*name = slash ? slash + 1 : rel;
	if (slash)
		*slash = '\0';
	snprintf(label, cap, "%s%s%s", SPEC_WORKSPACE_TARGET, slash ? "/" : "", slash ? rel : "");
	os_error_clear(err);
	return open_beneath(ws, slash ? rel : "", O_PATH | O_DIRECTORY, label, err);
}

static int upload(int ws, char *rel, bool into_dir, os_error *err)
{
	char label[XFER_PATH_MAX];
	const char *name;
	_cleanup_close_ int dest = place(ws, rel, label, sizeof label, &name, err);
	if (dest < 0)
		return -1;
	if (into_dir && name) /* "dir/" names a directory, as with cp */
		return os_error_set(err, ENOTDIR, "%s/%s/: no such directory", label, name);
	struct xfer_in in;
	xfer_in_init(&in, dest, name, label);
	static char chunk[CHUNK];
	int rc = 0;
	while (rc == 0) {
		ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? os_error_errno(err, "reading the upload")
				   : os_error_set(err, EPIPE, "%s: the upload ended before its end",
						  label);
			break;
		}
		rc = xfer_in_feed(&in, chunk, (size_t)n, err);
	}
	/* The root entry's path, for the client's summary line. */
	char root[XFER_PATH_MAX];
	size_t root_len = in.depth ? in.stack[0].path_len : strlen(in.path);
	snprintf(root, sizeof root, "%.*s", (int)root_len, in.path);
	xfer_in_free(&in);
	if (rc < 0)
		return -1;
	report(root, in.files, in.bytes);
	return 0;
}

static int sink_stdout(void *user, const void *data, size_t len, os_error *err)
{
	(void)user;
	if (fd_write_all(STDOUT_FILENO, data, len, err) < 0)
		return os_error_prefix(err, "sending the download");
	return 0;
}

static void warn_stderr(void *user, const char *msg)
{
	(void)user;
	fprintf(stderr, "warning: %s\n", msg);
}

static int download(int ws, const char *rel, os_error *err)
{
	char label[XFER_PATH_MAX];
	snprintf(label, sizeof label, "%s%s%s", SPEC_WORKSPACE_TARGET, rel[0] ? "/" : "", rel);
	_cleanup_close_ int fd = open_beneath(ws, rel, O_RDONLY | O_NONBLOCK, label, err);
	if (fd < 0)
		return -1;
	const char *base = strrchr(label, '/') + 1;
	struct xfer_out o = { .sink = sink_stdout, .warn = warn_stderr };
	return xfer_send(fd, base, label, &o, err);
}

int transfer_run(const struct launch_spec *s)
{
	os_error err = { 0 };
	char rel[XFER_PATH_MAX];
	int rc = transfer_rel_path(s->transfer_path, rel, sizeof rel, &err);
	_cleanup_close_ int ws = rc < 0 ? -1 : workspace_fd(&err);
	if (ws >= 0)
		rc = s->transfer_upload
			     ? upload(ws, rel,
				      s->transfer_path[strlen(s->transfer_path) - 1] == '/', &err)
			     : download(ws, rel, &err);
	if (ws < 0 || rc < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return 0;
}
