/* local_disk.c - paths, directory lifecycle and log/audit scans of the local
 * driver (see local_disk.h). Scans read bounded prefixes/suffixes only: an
 * agent that floods its log cannot make the gateway read gigabytes. */
#include "local_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "json.h"
#include "parse.h"

#define LOG_SCAN_MAX (256u * 1024)
#define AUDIT_SCAN_MAX (16u * 1024 * 1024)

int local_path(const char *state_dir, const char *id, const char *name, char *out, os_error *err)
{
	if (name)
		return str_format(out, LOCAL_PATH_MAX, err, "%s/sandboxes/%s/%s", state_dir, id,
				  name);
	return str_format(out, LOCAL_PATH_MAX, err, "%s/sandboxes/%s", state_dir, id);
}

static int mkdir_mode(const char *path, mode_t mode, os_error *err)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return os_error_errno(err, "mkdir %s", path);
	return 0;
}

int local_dirs_create(const char *state_dir, const char *id, os_error *err)
{
	char p[LOCAL_PATH_MAX];
	if (str_format(p, sizeof(p), err, "%s/sandboxes", state_dir) < 0 ||
	    mkdir_mode(p, 0711, err) < 0 || local_path(state_dir, id, NULL, p, err) < 0 ||
	    mkdir_mode(p, 0711, err) < 0 || local_path(state_dir, id, "workspace", p, err) < 0 ||
	    mkdir_mode(p, 0700, err) < 0)
		return -1;
	/* Directories made by older versions were 0700: let agents traverse. */
	if (str_format(p, sizeof(p), err, "%s/sandboxes", state_dir) < 0 || chmod(p, 0711) < 0 ||
	    local_path(state_dir, id, NULL, p, err) < 0 || chmod(p, 0711) < 0)
		return err && err->code ? -1 : os_error_errno(err, "chmod 0711 %s", p);
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int local_dirs_remove(const char *state_dir, const char *id, os_error *err)
{
	char p[LOCAL_PATH_MAX];
	if (local_path(state_dir, id, NULL, p, err) < 0)
		return -1;
	/* FTW_PHYS: a symlink the agent planted in its workspace is removed, not followed. */
	if (nftw(p, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return os_error_errno(err, "removing %s", p);
	return 0;
}

int local_run_dir(const char *id, char *out, os_error *err)
{
	/* The id was validated ([a-z0-9-], no "." or "/"): it names one entry
	 * of LOCAL_RUN_DIR, never the shared subnets.lock beside it. */
	return str_format(out, LOCAL_PATH_MAX, err, "%s/%s", LOCAL_RUN_DIR, id);
}

int local_run_dir_remove(const char *id, os_error *err)
{
	char p[LOCAL_PATH_MAX];
	if (local_run_dir(id, p, err) < 0)
		return -1;
	if (nftw(p, rm_one, 8, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0 && errno != ENOENT)
		return os_error_errno(err, "removing %s", p);
	return 0;
}

int local_file_put(const char *state_dir, const char *id, const char *name, const char *text,
		   os_error *err)
{
	char p[LOCAL_PATH_MAX];
	if (local_path(state_dir, id, name, p, err) < 0)
		return -1;
	return file_write_atomic(p, text, strlen(text), 0600, err);
}

bool local_file_exists(const char *state_dir, const char *id, const char *name)
{
	char p[LOCAL_PATH_MAX];
	return local_path(state_dir, id, name, p, NULL) == 0 && access(p, F_OK) == 0;
}

void local_file_remove(const char *state_dir, const char *id, const char *name)
{
	char p[LOCAL_PATH_MAX];
	if (local_path(state_dir, id, name, p, NULL) == 0)
		unlink(p);
}

static char *read_range(const char *path, uint64_t off, size_t cap, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *b = malloc(cap + 1);
	if (!b)
		return NULL;
	ssize_t n = pread(fd, b, cap, (off_t)off);
	if (n < 0)
		n = 0;
	b[n] = '\0';
	*len = (size_t)n;
	return b;
}

/* One record of the supervisor's log (log.h: a JSON object per line; other
 * lines are the agent's own output): its message when the supervisor wrote it. */
static const char *supervisor_record(json_t *rec, const char **level)
{
	const char *comp = json_string_value(json_object_get(rec, "component"));
	*level = str_or(json_string_value(json_object_get(rec, "level")), "");
	if (!comp || strcmp(comp, "openshell-supervisor") != 0)
		return NULL;
	return json_string_value(json_object_get(rec, "msg"));
}

bool local_log_running(const char *log_path, const char *id, uint64_t mark, char **last)
{
	size_t len = 0;
	_cleanup_free_ char *b = read_range(log_path, mark, LOG_SCAN_MAX, &len);
	char needle[128];
	bool running = false;
	*last = NULL;
	if (!b || str_format(needle, sizeof(needle), NULL, "sandbox %s running ", id) < 0)
		return false;
	for (char *line = b; line && *line;) {
		char *nl = memchr(line, '\n', len - (size_t)(line - b));
		size_t n = nl ? (size_t)(nl - line) : len - (size_t)(line - b);
		/* An agent's output without a final newline runs into the next
		 * record (the agent shares the log): the record starts mid-line. */
		const char *rs = line[0] == '{' ? line : memmem(line, n, "{\"ts\":\"", 7);
		size_t rn = rs ? n - (size_t)(rs - line) : 0;
		_cleanup_json_ json_t *rec = rs ? json_loadb(rs, rn, 0, NULL) : NULL;
		const char *level, *msg = rec ? supervisor_record(rec, &level) : NULL;
		if (msg && strncmp(msg, needle, strlen(needle)) == 0)
			running = true;
		if (msg && strcmp(level, "error") == 0) {
			free(*last);
			*last = str_ndup(msg, strlen(msg));
		}
		line = nl ? nl + 1 : NULL;
	}
	return running;
}

int64_t local_audit_policy(const char *audit_path, json_t **last)
{
	size_t len = 0;
	_cleanup_free_ char *b = read_range(audit_path, 0, AUDIT_SCAN_MAX, &len);
	int64_t n = 0;
	*last = NULL;
	if (!b)
		return 0;
	for (char *line = b; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(line, "\"policy\"")) {
			json_t *j = json_loads(line, 0, NULL);
			if (j && !strcmp(str_or(json_string_value(json_object_get(j, "event")), ""),
					 "policy")) {
				n++;
				if (*last)
					json_decref(*last);
				*last = json_incref(j);
			}
			json_decref(j);
		}
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

/* Runs `supervisor FLAG x`: one that does not know FLAG says "unknown
 * option"; one that does fails later for the missing required flags. The
 * usage text is not trusted: it lags behind the flags. */
static bool knows_flag(const char *supervisor, const char *flag)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC); /* dup2 clears it on fd 0 */
		dup2(null, 0);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execl(supervisor, supervisor, flag, "x", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	if (pid > 0)
		fd_read_all(p[0], 64 * 1024, &out, &len, NULL);
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return out && !strstr(out, "unknown option");
}

void local_probe_caps(const char *supervisor, struct local_caps *caps)
{
	caps->policy = knows_flag(supervisor, "--policy");
	caps->credentials = knows_flag(supervisor, "--credentials");
	caps->inference = knows_flag(supervisor, "--inference");
	caps->workdir = knows_flag(supervisor, "--workdir");
	caps->env = knows_flag(supervisor, "--env");
	caps->gateway = knows_flag(supervisor, "--gateway");
	caps->run_dir = knows_flag(supervisor, "--run-dir");
	caps->host_gateway = knows_flag(supervisor, "--host-gateway");
	caps->attach = knows_flag(supervisor, "--attach");
}
