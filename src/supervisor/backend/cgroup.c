/* cgroup.c - see cgroup.h. The operator's process and memory limits hold for
 * the whole sandbox (every uid, every process it forks), which rlimits
 * cannot do. It must never signal a process outside the sandbox's cgroup,
 * nor leave a cgroup behind on an error path. */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"

#define MOUNTINFO_PATH "/proc/self/mountinfo"
#define MOUNTINFO_CAP (4u << 20)
#define MOUNTINFO_MAX_FIELDS 64
#define CONTROLLERS_CAP 4096
#define PARENT_NAME "openshell"
/* Teardown waits at most this long for killed processes to leave. */
#define DESTROY_ROUNDS 500
#define DESTROY_ROUND_NS (10 * 1000 * 1000)
/* cgroup.procs is read whole: 4 MiB is ~500k pids. */
#define PROCS_CAP (4u << 20)
/* Pidfds held at once while signalling. */
#define KILL_BATCH 256

struct field {
	const char *p;
	size_t n;
};

static bool field_is(const struct field *f, const char *s)
{
	return f->n == strlen(s) && memcmp(f->p, s, f->n) == 0;
}

/* Is word one of the sep-separated items of list[len]? */
static bool list_has(const char *list, size_t len, const char *seps, const char *word)
{
	size_t wl = strlen(word);
	for (size_t i = 0; i < len;) {
		size_t n = 0;
		while (i + n < len && !strchr(seps, list[i + n]))
			n++;
		if (n == wl && memcmp(list + i, word, wl) == 0)
			return true;
		i += n + 1;
	}
	return false;
}

/* Mount points escape space, tab, newline and backslash as \ooo. */
static int unescape_path(const struct field *f, char *out, size_t cap, os_error *err)
{
	size_t o = 0;
	for (size_t i = 0; i < f->n; i++) {
		unsigned char c = (unsigned char)f->p[i];
		if (c == '\\') {
			if (i + 3 >= f->n)
				return os_error_set(err, EINVAL, "truncated escape in mount point");
			unsigned v = 0;
			for (size_t k = 1; k <= 3; k++) {
				char d = f->p[i + k];
				if (d < '0' || d > '7')
					return os_error_set(err, EINVAL,
							    "bad escape in mount point");
				v = v * 8 + (unsigned)(d - '0');
			}
			if (v == 0 || v > 255)
				return os_error_set(err, EINVAL, "bad escape in mount point");
			c = (unsigned char)v;
			i += 3;
		}
		if (o + 1 >= cap)
			return os_error_set(err, ENAMETOOLONG, "mount point too long");
		out[o++] = (char)c;
	}
	out[o] = '\0';
	if (out[0] != '/')
		return os_error_set(err, EINVAL, "mount point is not absolute");
	return 0;
}

/* Splits one line at single spaces into at most MOUNTINFO_MAX_FIELDS fields. */
static size_t split_fields(const char *line, size_t len, struct field *f)
{
	size_t n = 0;
	for (size_t i = 0; i < len && n < MOUNTINFO_MAX_FIELDS;) {
		size_t k = 0;
		while (i + k < len && line[i + k] != ' ')
			k++;
		f[n++] = (struct field){ line + i, k };
		i += k + 1;
	}
	return n;
}

/* Takes path as the controller's hierarchy when it offers the controller
 * and none was found before; a v1 one displaces a v2 one (a controller bound
 * to a v1 hierarchy is not usable in v2 at the same time). */
static void consider(struct cgroup_mount *m, enum cgroup_version v, const char *path, bool offered)
{
	if (!offered || m->version == CGROUP_V1 || (m->version == CGROUP_V2 && v == CGROUP_V2))
		return;
	m->version = v;
	memcpy(m->root, path, strlen(path) + 1);
}

static int parse_line(const char *line, size_t len, size_t lineno, cgroup_controllers_fn fn,
		      void *user, struct cgroup_layout *out, os_error *err)
{
	struct field f[MOUNTINFO_MAX_FIELDS];
	size_t n = split_fields(line, len, f), dash = 0;
	for (size_t i = 6; i < n && !dash; i++)
		if (field_is(&f[i], "-"))
			dash = i;
	/* ... OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS */
	if (!dash || dash + 3 >= n)
		return os_error_set(err, EINVAL, "mountinfo line %zu: malformed", lineno);
	const struct field *fstype = &f[dash + 1], *opts = &f[dash + 3];
	bool v1 = field_is(fstype, "cgroup"), v2 = field_is(fstype, "cgroup2");
	if (!v1 && !v2)
		return 0;
	char path[PATH_MAX];
	if (unescape_path(&f[4], path, sizeof path, err) < 0)
		return os_error_prefix(err, "mountinfo line %zu", lineno);
	if (v1) {
		consider(&out->pids, CGROUP_V1, path, list_has(opts->p, opts->n, ",", "pids"));
		consider(&out->memory, CGROUP_V1, path, list_has(opts->p, opts->n, ",", "memory"));
		return 0;
	}
	if (out->unified.version == CGROUP_NONE) {
		out->unified.version = CGROUP_V2;
		memcpy(out->unified.root, path, strlen(path) + 1);
	}
	char ctl[CONTROLLERS_CAP];
	if (fn(path, ctl, sizeof ctl, user) < 0)
		return 0; /* unreadable: not a hierarchy we can use */
	size_t cl = strnlen(ctl, sizeof ctl);
	consider(&out->pids, CGROUP_V2, path, list_has(ctl, cl, " \n", "pids"));
	consider(&out->memory, CGROUP_V2, path, list_has(ctl, cl, " \n", "memory"));
	return 0;
}

int cgroup_layout_parse(const char *text, size_t len, cgroup_controllers_fn fn, void *user,
			struct cgroup_layout *out, os_error *err)
{
	memset(out, 0, sizeof *out);
	size_t lineno = 0;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
		lineno++;
		if (n && parse_line(text + i, n, lineno, fn, user, out, err) < 0)
			return -1;
		i += n + 1;
	}
	return 0;
}

static int read_controllers(const char *mount, char *buf, size_t cap, void *user)
{
	(void)user;
	char path[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	if (str_format(path, sizeof path, NULL, "%s/cgroup.controllers", mount) < 0 ||
	    file_read_all(path, cap, &text, NULL, NULL) < 0)
		return -1;
	return str_copy(buf, cap, text, NULL);
}

/* Writes value to dir/name in one write(), as cgroupfs wants. A missing file
 * is fine when optional (a knob this kernel or configuration lacks). */
static int write_knob(const char *dir, const char *name, const char *value, bool optional,
		      os_error *err)
{
	char path[PATH_MAX];
	if (str_format(path, sizeof path, err, "%s/%s", dir, name) < 0)
		return -1;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && optional && errno == ENOENT)
		return 0;
	if (fd < 0)
		return os_error_errno(err, "opening %s", path);
	size_t len = strlen(value);
	ssize_t w = write(fd, value, len);
	if (w < 0 || (size_t)w != len)
		return os_error_errno(err, "writing \"%s\" to %s", value, path);
	return 0;
}

/* v2: a child sees a controller only when its parent enabled it. */
static int enable_v2(const char *dir, const char *ctl, os_error *err)
{
	char path[PATH_MAX], plus[32];
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	if (str_format(path, sizeof path, err, "%s/cgroup.subtree_control", dir) < 0 ||
	    str_format(plus, sizeof plus, err, "+%s", ctl) < 0)
		return -1;
	if (file_read_all(path, CONTROLLERS_CAP, &text, &len, err) < 0)
		return -1;
	if (list_has(text, len, " \n", ctl))
		return 0;
	return write_knob(dir, "cgroup.subtree_control", plus, false, err);
}

/* <root>/openshell/<id>, with ctl enabled down to it on v2; recorded in out
 * as soon as it exists so that an error later removes it. */
static int make_dir(const struct cgroup_mount *m, const char *const *ctl, size_t nctl,
		    const char *id, struct sandbox_cgroups *out, os_error *err)
{
	char parent[PATH_MAX], *dir = out->dirs[out->n];
	if (str_format(parent, sizeof parent, err, "%s/" PARENT_NAME, m->root) < 0 ||
	    str_format(dir, PATH_MAX, err, "%s/%s", parent, id) < 0)
		return -1;
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return os_error_errno(err, "creating cgroup %s", parent);
	for (size_t i = 0; m->version == CGROUP_V2 && i < nctl; i++)
		if (enable_v2(m->root, ctl[i], err) < 0 || enable_v2(parent, ctl[i], err) < 0)
			return os_error_prefix(err, "enabling the %s controller", ctl[i]);
	if (mkdir(dir, 0755) < 0) {
		/* A crashed run's leftover is empty and goes; one that holds
		 * processes belongs to a live sandbox and rmdir refuses it. */
		if (errno != EEXIST)
			return os_error_errno(err, "creating cgroup %s", dir);
		if (rmdir(dir) < 0)
			return os_error_errno(err,
					      "cgroup %s already exists and cannot be replaced "
					      "(in use by another sandbox with this id?)",
					      dir);
		if (mkdir(dir, 0755) < 0)
			return os_error_errno(err, "re-creating cgroup %s", dir);
	}
	out->n++;
	return 0;
}

static int write_memory(const char *dir, enum cgroup_version v, uint64_t bytes, os_error *err)
{
	char val[32];
	if (str_format(val, sizeof val, err, "%llu", (unsigned long long)bytes) < 0)
		return -1;
	/* Swap would let the sandbox hold more than the limit: none at all. */
	if (v == CGROUP_V2)
		return write_knob(dir, "memory.max", val, false, err) < 0 ||
				       write_knob(dir, "memory.swap.max", "0", true, err) < 0
			       ? -1
			       : 0;
	/* v1: memsw (memory + swap) may not be set below limit_in_bytes. */
	return write_knob(dir, "memory.limit_in_bytes", val, false, err) < 0 ||
			       write_knob(dir, "memory.memsw.limit_in_bytes", val, true, err) < 0
		       ? -1
		       : 0;
}

/* Can a process move into dir? A child tries and exits (the directory is
 * empty again at once): the launcher's join must not be the first try. */
static bool joinable(const char *dir)
{
	char path[PATH_MAX];
	if (str_format(path, sizeof path, NULL, "%s/cgroup.procs", dir) < 0)
		return false;
	pid_t pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		_exit(fd >= 0 && write(fd, "0", 1) == 1 ? 0 : 1);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The cgroup2 directory of the sandbox: one of the limits' directories when
 * they live in the cgroup2 hierarchy, else one of its own (no controller
 * needed: membership and BPF attachment are the core's). */
static int place_membership(const char *id, const struct cgroup_layout *lay,
			    struct sandbox_cgroups *out, os_error *err)
{
	if (lay->unified.version != CGROUP_V2)
		return 0;
	char want[PATH_MAX];
	if (str_format(want, sizeof want, err, "%s/" PARENT_NAME "/%s", lay->unified.root, id) < 0)
		return -1;
	for (size_t i = 0; i < out->n; i++)
		if (strcmp(out->dirs[i], want) == 0) {
			out->v2 = (int)i;
			return 0;
		}
	/* Membership was not asked for: where the hierarchy is not ours to
	 * use (a read-only or undelegated cgroupfs in a Pod), the sandbox goes
	 * without, as before, rather than failing the launcher's join. */
	os_error local = { 0 };
	if (make_dir(&lay->unified, NULL, 0, id, out, &local) < 0)
		return 0;
	if (!joinable(want)) {
		rmdir(want);
		out->n--;
		return 0;
	}
	out->v2 = (int)out->n - 1;
	return 0;
}

static int place(const char *id, const struct cgroup_limits *lim, const struct cgroup_layout *lay,
		 struct sandbox_cgroups *out, os_error *err)
{
	static const char *const both[] = { "pids", "memory" };
	const struct cgroup_mount *pm = lim->max_processes ? &lay->pids : NULL;
	const struct cgroup_mount *mm = lim->max_memory_bytes ? &lay->memory : NULL;
	/* One directory when both live in one hierarchy (v2, or co-mounted v1). */
	bool shared = pm && mm && strcmp(pm->root, mm->root) == 0;
	if (pm) {
		char val[32];
		if (make_dir(pm, both, shared ? 2 : 1, id, out, err) < 0 ||
		    str_format(val, sizeof val, err, "%llu",
			       (unsigned long long)lim->max_processes) < 0 ||
		    write_knob(out->dirs[out->n - 1], "pids.max", val, false, err) < 0)
			return -1;
	}
	if (mm) {
		if (!shared && make_dir(mm, both + 1, 1, id, out, err) < 0)
			return -1;
		if (write_memory(out->dirs[out->n - 1], mm->version, lim->max_memory_bytes, err) <
		    0)
			return -1;
	}
	return place_membership(id, lay, out, err);
}

int cgroup_create(const char *sandbox_id, const struct cgroup_limits *lim,
		  struct sandbox_cgroups *out, os_error *err)
{
	out->n = 0;
	out->v2 = -1;
	if (!sandbox_id || !*sandbox_id || strchr(sandbox_id, '/') ||
	    strcmp(sandbox_id, ".") == 0 || strcmp(sandbox_id, "..") == 0)
		return os_error_set(err, EINVAL,
				    "cgroup: sandbox id \"%s\" cannot name a directory",
				    sandbox_id ? sandbox_id : "");
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct cgroup_layout lay;
	if (file_read_all(MOUNTINFO_PATH, MOUNTINFO_CAP, &text, &len, err) < 0 ||
	    cgroup_layout_parse(text, len, read_controllers, NULL, &lay, err) < 0)
		return os_error_prefix(err, "cgroup: finding the controllers");
	if (lim->max_processes && lay.pids.version == CGROUP_NONE)
		return os_error_set(err, ENOENT,
				    "max_processes set but no pids cgroup controller is mounted "
				    "(none in " MOUNTINFO_PATH ")");
	if (lim->max_memory_bytes && lay.memory.version == CGROUP_NONE)
		return os_error_set(err, ENOENT,
				    "max_memory_mb set but no memory cgroup controller is mounted "
				    "(none in " MOUNTINFO_PATH ")");
	if (place(sandbox_id, lim, &lay, out, err) < 0) {
		cgroup_destroy(out, NULL); /* nothing half-made stays */
		return os_error_prefix(err, "cgroup");
	}
	return 0;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* The pids listed in dir/cgroup.procs, sorted (malloc'd into *out). */
static int read_pids(const char *dir, pid_t **out, size_t *n, os_error *err)
{
	char path[PATH_MAX];
	_cleanup_free_ char *text = NULL;
	size_t len = 0, k = 0;
	if (str_format(path, sizeof path, err, "%s/cgroup.procs", dir) < 0 ||
	    file_read_all(path, PROCS_CAP, &text, &len, err) < 0)
		return -1;
	pid_t *v = calloc(len / 2 + 1, sizeof *v); /* every entry takes >= 2 bytes */
	if (!v)
		return os_error_set(err, ENOMEM, "reading %s: out of memory", path);
	for (size_t i = 0; i < len;) {
		size_t d = strspn(text + i, "0123456789");
		uint64_t pid;
		if (d == 0 || parse_u64(text + i, d, 1, INT32_MAX, &pid, NULL) < 0 ||
		    (text[i + d] != '\n' && text[i + d] != '\0')) {
			free(v);
			return os_error_set(err, EINVAL, "%s: malformed near byte %zu", path, i);
		}
		v[k++] = (pid_t)pid;
		i += d + 1;
	}
	qsort(v, k, sizeof *v, pid_cmp);
	*out = v;
	*n = k;
	return 0;
}

/* SIGKILLs up to KILL_BATCH listed processes. A pidfd pins each pid before
 * the listing is read again, so a pid that left and was reused by another
 * process on the host in between is never signalled. */
static int kill_listed(const char *dir, const pid_t *pids, size_t n, os_error *err)
{
	int fds[KILL_BATCH];
	size_t m = n < KILL_BATCH ? n : KILL_BATCH;
	for (size_t i = 0; i < m; i++)
		fds[i] = pidfd_open(pids[i], 0); /* ESRCH: already gone */
	_cleanup_free_ pid_t *again = NULL;
	size_t na = 0;
	int rc = read_pids(dir, &again, &na, err);
	for (size_t i = 0; i < m; i++) {
		if (fds[i] < 0)
			continue;
		if (rc == 0 && bsearch(&pids[i], again, na, sizeof *again, pid_cmp))
			pidfd_send_signal(fds[i], SIGKILL, NULL, 0);
		close(fds[i]);
	}
	return rc;
}

static void pause_round(void)
{
	struct timespec ts = { 0, DESTROY_ROUND_NS };
	nanosleep(&ts, NULL);
}

/* Empties and removes one cgroup directory. v2 (5.14+) has cgroup.kill:
 * the kernel kills the whole cgroup at once, forks racing it included; v1
 * has no such file, so the listed processes are killed one by one, round
 * after round, until none is left. */
static int destroy_dir(const char *dir, os_error *err)
{
	char kill_path[PATH_MAX];
	if (str_format(kill_path, sizeof kill_path, err, "%s/cgroup.kill", dir) < 0)
		return -1;
	bool has_kill = access(kill_path, F_OK) == 0;
	for (int round = 0; round < DESTROY_ROUNDS; round++) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0;
		if (read_pids(dir, &pids, &n, err) < 0)
			return err->code == ENOENT ? 0 : -1; /* already gone */
		if (n == 0) {
			if (rmdir(dir) == 0 || errno == ENOENT)
				return 0;
			if (errno != EBUSY)
				return os_error_errno(err, "removing cgroup %s", dir);
		} else if (has_kill) {
			if (write_knob(dir, "cgroup.kill", "1", false, err) < 0)
				return -1;
		} else if (kill_listed(dir, pids, n, err) < 0) {
			return -1;
		}
		pause_round();
	}
	return os_error_set(err, EBUSY,
			    "cgroup %s still holds processes after %d ms; left in place", dir,
			    DESTROY_ROUNDS * (DESTROY_ROUND_NS / 1000000));
}

int cgroup_destroy(struct sandbox_cgroups *cg, os_error *err)
{
	int rc = 0;
	os_error local = { 0 };
	for (size_t i = 0; i < cg->n; i++)
		if (destroy_dir(cg->dirs[i], &local) < 0 && rc == 0) {
			rc = -1;
			if (err)
				*err = local;
		}
	cg->n = 0;
	cg->v2 = -1;
	return rc;
}
