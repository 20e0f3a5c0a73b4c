/* identity.c - kernel-derived caller identity for the proxy (see identity.h).
 * Reads only /proc and sock_diag answers; the executable's content is hashed through /proc/PID/exe
 * (the file the process really runs, not a path that may have been swapped). */
#include "identity.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdutil.h"
#include "parse.h"
#include "procfs.h"
#include "sha256.h"
#include "sockdiag.h"

#define PIN_MAX 1024 /* distinct executables pinned per sandbox */

struct exe_pin {
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	unsigned char first_sha[32]; /* hash at first use: the pin */
	unsigned char sha[32]; /* hash of the stat-identified current content */
};

struct identity_ctx {
	pid_t entry_pid;
	pid_t extra[IDENTITY_EXTRA_MAX]; /* 0: free slot */
	ino_t netns_ino;
	struct exe_pin *pins;
	size_t n_pins;
	/* The policy's read-only tree: code mapped from elsewhere makes a
	 * process "not that binary" (injection.h). Unset: not checked. */
	bool has_tree;
	struct injection_tree tree;
	char **tree_paths; /* owns the strings tree points to */
	size_t n_tree_paths;
	/* The exact 4-tuple lookups, answered for the sandbox's namespace. */
	struct sockdiag *diag;
	/* Where owners are looked for: the sandbox's cgroup when it has one
	 * (members only), else every process in its network namespace. */
	int cgroup_fd;
	/* Between identity_batch_begin and _end: one snapshot of the socket
	 * owners, made at first use. */
	bool batch, batch_indexed;
	struct procfs_socket_index index;
};

const char *identity_failure_name(enum identity_failure f)
{
	static const char *const names[] = {
		[IDENTITY_OK] = "ok",
		[IDENTITY_NO_SOCKET] = "identity_no_socket",
		[IDENTITY_NO_OWNER] = "identity_no_owner",
		[IDENTITY_OWNERS_DISAGREE] = "identity_owners_disagree",
		[IDENTITY_OUTSIDE] = "identity_outside_sandbox",
		[IDENTITY_HASH_MISMATCH] = "binary_hash_mismatch",
		[IDENTITY_PROC_ERROR] = "identity_proc_error",
		[IDENTITY_INJECTED] = "identity_code_injected",
		[IDENTITY_CHANGED] = "identity_changed",
	};
	return (unsigned)f < ARRAY_SIZE(names) ? names[f] : "identity_unknown";
}

static int ns_inode(pid_t pid, const char *ns, ino_t *out)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, ns);
	if (stat(path, &st) < 0)
		return -1;
	*out = st.st_ino;
	return 0;
}

/* A sock_diag socket of the entry's network namespace (our own when it is
 * the same: no thread has to join it then). */
static int open_diag(struct identity_ctx *c, os_error *err)
{
	char path[64];
	ino_t own;
	if (ns_inode(getpid(), "net", &own) < 0)
		return os_error_errno(err, "reading our own network namespace");
	if (own == c->netns_ino)
		return sockdiag_open(-1, &c->diag, err);
	snprintf(path, sizeof path, "/proc/%d/ns/net", (int)c->entry_pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return os_error_errno(err, "opening %s", path);
	if (st.st_ino != c->netns_ino) /* the pid was reused meanwhile */
		return os_error_set(err, ESRCH, "pid %d left its network namespace",
				    (int)c->entry_pid);
	return sockdiag_open(fd, &c->diag, err);
}

int identity_ctx_new(pid_t entry_pid, struct identity_ctx **out, os_error *err)
{
	struct identity_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return os_error_set(err, ENOMEM, "out of memory");
	c->entry_pid = entry_pid;
	c->cgroup_fd = -1;
	if (ns_inode(entry_pid, "net", &c->netns_ino) < 0) {
		free(c);
		return os_error_errno(err, "reading network namespace of pid %d", (int)entry_pid);
	}
	if (open_diag(c, err) < 0) {
		free(c);
		return os_error_prefix(err, "caller lookups in the namespace of pid %d",
				       (int)entry_pid);
	}
	*out = c;
	return 0;
}

int identity_ctx_set_cgroup(struct identity_ctx *ctx, const char *dir, os_error *err)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return os_error_errno(err, "opening the sandbox's cgroup %s", dir);
	if (ctx->cgroup_fd >= 0)
		close(ctx->cgroup_fd);
	ctx->cgroup_fd = fd;
	return 0;
}

static void free_tree(struct identity_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_tree_paths; i++)
		free(ctx->tree_paths[i]);
	free(ctx->tree_paths);
	ctx->tree_paths = NULL;
	ctx->n_tree_paths = 0;
	ctx->has_tree = false;
}

void identity_batch_begin(struct identity_ctx *ctx)
{
	ctx->batch = true;
}

void identity_batch_end(struct identity_ctx *ctx)
{
	procfs_socket_index_free(&ctx->index);
	ctx->batch = ctx->batch_indexed = false;
}

void identity_ctx_free(struct identity_ctx *ctx)
{
	if (!ctx)
		return;
	identity_batch_end(ctx);
	sockdiag_close(ctx->diag);
	if (ctx->cgroup_fd >= 0)
		close(ctx->cgroup_fd);
	free_tree(ctx);
	free(ctx->pins);
	free(ctx);
}

int identity_ctx_set_tree(struct identity_ctx *ctx, const struct injection_tree *t, os_error *err)
{
	size_t n = t->n_read_only + t->n_read_write;
	free_tree(ctx);
	ctx->tree_paths = calloc(n ? n : 1, sizeof(char *));
	if (!ctx->tree_paths)
		return os_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *p =
			i < t->n_read_only ? t->read_only[i] : t->read_write[i - t->n_read_only];
		if (!(ctx->tree_paths[i] = strdup(p))) {
			free_tree(ctx);
			return os_error_set(err, ENOMEM, "out of memory");
		}
		ctx->n_tree_paths++;
	}
	ctx->tree = (struct injection_tree){
		.read_only = (const char *const *)ctx->tree_paths,
		.n_read_only = t->n_read_only,
		.read_write = (const char *const *)ctx->tree_paths + t->n_read_only,
		.n_read_write = t->n_read_write,
	};
	ctx->has_tree = true;
	return 0;
}

/* Foreign code loaded into pid (running slot) makes it someone else. */
static enum identity_failure check_injected(struct identity_ctx *ctx, pid_t p, const char *exe,
					    os_error *err)
{
	char why[INJECTION_WHY_MAX];
	if (!ctx->has_tree)
		return IDENTITY_OK;
	int rc = injection_check(p, &ctx->tree, why, sizeof why, err);
	if (rc < 0)
		return IDENTITY_PROC_ERROR;
	if (rc > 0) {
		os_error_set(err, EPERM, "pid %d (%s) is not that binary: %s", (int)p, exe, why);
		return IDENTITY_INJECTED;
	}
	return IDENTITY_OK;
}

/* The agent's socket of this connection: from its side local=peer and
 * remote=our local address, in whatever family it was made (an AF_INET6
 * socket connected to a v4-mapped address is found from the IPv4 pair). */
static enum identity_failure find_socket_inode(struct identity_ctx *ctx,
					       const struct sockaddr *peer,
					       const struct sockaddr *local, unsigned long *inode,
					       uid_t *uid, os_error *err)
{
	struct sockdiag_tcp sk;
	int rc = sockdiag_tcp_find(ctx->diag, peer, local, &sk, err);
	if (rc < 0)
		return IDENTITY_PROC_ERROR;
	if (rc == 0) {
		os_error_set(err, ENOENT, "no socket for this connection in the sandbox");
		return IDENTITY_NO_SOCKET;
	}
	if (sk.inode == 0) { /* closed by every holder (TIME_WAIT, orphaned) */
		os_error_set(err, ESRCH, "the caller's socket has no holder left (state %u)",
			     (unsigned)sk.state);
		return IDENTITY_NO_OWNER;
	}
	*inode = sk.inode;
	*uid = sk.uid;
	return IDENTITY_OK;
}

static pid_t read_ppid(pid_t pid)
{
	struct procfs_stat st;
	return procfs_stat_read(pid, &st, NULL) < 0 ? -1 : st.ppid;
}

static int read_exe(pid_t pid, char *out, size_t cap)
{
	char link[64];
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, out, cap - 1);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	return 0;
}

static int sha256_fd(int fd, unsigned char md[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (!c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(c);
		return -1;
	}
	char chunk[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		EVP_DigestUpdate(c, chunk, (size_t)n);
	}
	unsigned len = 32;
	if (rc == 0 && EVP_DigestFinal_ex(c, md, &len) != 1)
		rc = -1;
	EVP_MD_CTX_free(c);
	return rc;
}

static struct exe_pin *pin_lookup(struct identity_ctx *ctx, const char *path)
{
	for (size_t i = 0; i < ctx->n_pins; i++)
		if (strcmp(ctx->pins[i].path, path) == 0)
			return &ctx->pins[i];
	return NULL;
}

static bool pin_stat_same(const struct exe_pin *p, const struct stat *st)
{
	return p->dev == st->st_dev && p->ino == st->st_ino && p->size == st->st_size &&
	       p->mtime.tv_sec == st->st_mtim.tv_sec && p->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       p->ctime.tv_sec == st->st_ctim.tv_sec && p->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static void pin_set_stat(struct exe_pin *p, const struct stat *st)
{
	p->dev = st->st_dev;
	p->ino = st->st_ino;
	p->size = st->st_size;
	p->mtime = st->st_mtim;
	p->ctime = st->st_ctim;
}

/* Checks the running executable of pid against the pin for its path: the
 * first use pins the SHA-256; later a changed (dev, ino, size, mtime, ctime)
 * triggers a re-hash, and a different hash is a mismatch. */
static enum identity_failure verify_pin(struct identity_ctx *ctx, pid_t pid, const char *path,
					os_error *err)
{
	char link[64];
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	_cleanup_close_ int fd = open(link, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		os_error_errno(err, "opening executable of pid %d", (int)pid);
		return IDENTITY_PROC_ERROR;
	}
	struct exe_pin *p = pin_lookup(ctx, path);
	if (p && pin_stat_same(p, &st))
		return memcmp(p->sha, p->first_sha, 32) == 0 ? IDENTITY_OK : IDENTITY_HASH_MISMATCH;
	unsigned char md[32];
	if (sha256_fd(fd, md) < 0) {
		os_error_errno(err, "hashing %s", path);
		return IDENTITY_PROC_ERROR;
	}
	if (!p) {
		if (ctx->n_pins == PIN_MAX) {
			os_error_set(err, ENOSPC, "more than %d distinct executables", PIN_MAX);
			return IDENTITY_PROC_ERROR;
		}
		struct exe_pin *np = realloc(ctx->pins, (ctx->n_pins + 1) * sizeof *np);
		if (!np) {
			os_error_set(err, ENOMEM, "out of memory");
			return IDENTITY_PROC_ERROR;
		}
		ctx->pins = np;
		p = &ctx->pins[ctx->n_pins++];
		memset(p, 0, sizeof *p);
		snprintf(p->path, sizeof p->path, "%s", path);
		memcpy(p->first_sha, md, 32);
	}
	pin_set_stat(p, &st);
	memcpy(p->sha, md, 32);
	if (memcmp(md, p->first_sha, 32) != 0) {
		os_error_set(err, EPERM, "%s changed since its first use", path);
		return IDENTITY_HASH_MISMATCH;
	}
	return IDENTITY_OK;
}

static bool is_entry(const struct identity_ctx *ctx, pid_t p)
{
	if (p == ctx->entry_pid)
		return true;
	for (size_t i = 0; i < IDENTITY_EXTRA_MAX; i++)
		if (ctx->extra[i] == p)
			return true;
	return false;
}

int identity_ctx_add_entry(struct identity_ctx *ctx, pid_t pid, os_error *err)
{
	for (size_t i = 0; i < IDENTITY_EXTRA_MAX; i++)
		if (ctx->extra[i] == 0) {
			ctx->extra[i] = pid;
			return 0;
		}
	return os_error_set(err, EBUSY, "more than %d exec sessions at once", IDENTITY_EXTRA_MAX);
}

void identity_ctx_remove_entry(struct identity_ctx *ctx, pid_t pid)
{
	for (size_t i = 0; i < IDENTITY_EXTRA_MAX; i++)
		if (ctx->extra[i] == pid)
			ctx->extra[i] = 0;
}

/* Fills the exe chain from pid up to an entry process. */
static enum identity_failure build_chain(struct identity_ctx *ctx, pid_t pid, struct identity *out,
					 os_error *err)
{
	out->n_chain = 0;
	for (pid_t p = pid; out->n_chain < IDENTITY_CHAIN_MAX; p = read_ppid(p)) {
		if (p <= 0) {
			os_error_set(err, ESRCH, "pid %d is not inside the sandbox", (int)pid);
			return IDENTITY_OUTSIDE;
		}
		char *slot = out->chain[out->n_chain];
		if (read_exe(p, slot, PATH_MAX) < 0) {
			os_error_errno(err, "reading executable of pid %d", (int)p);
			return IDENTITY_PROC_ERROR;
		}
		enum identity_failure f = verify_pin(ctx, p, slot, err);
		/* Entry processes are ours (the launcher, exec relays forked from
		 * the supervisor): their maps name the supervisor's own tree, not
		 * the agent's, and no agent code runs in them. */
		if (f == IDENTITY_OK && !is_entry(ctx, p))
			f = check_injected(ctx, p, slot, err);
		if (f != IDENTITY_OK)
			return f;
		out->n_chain++;
		if (is_entry(ctx, p))
			return IDENTITY_OK;
	}
	os_error_set(err, ELOOP, "pid %d: ancestor chain longer than %d", (int)pid,
		     IDENTITY_CHAIN_MAX);
	return IDENTITY_OUTSIDE;
}

/* Consecutive equal entries are one (a process that forked without exec
 * shares its parent's executable): the ancestry, as policy sees it. */
static bool same_ancestry(const struct identity *a, const struct identity *b)
{
	size_t i = 0, j = 0;
	while (i < a->n_chain && j < b->n_chain) {
		if (strcmp(a->chain[i], b->chain[j]) != 0)
			return false;
		while (i + 1 < a->n_chain && !strcmp(a->chain[i + 1], a->chain[i]))
			i++;
		while (j + 1 < b->n_chain && !strcmp(b->chain[j + 1], b->chain[j]))
			j++;
		i++;
		j++;
	}
	return i == a->n_chain && j == b->n_chain;
}

/* Every holder of the socket is judged, not one: each must be inside the
 * sandbox, unpinned-content-free and free of foreign code, with the same
 * ancestry as the one reported, or the socket may be serving a process the
 * policy would refuse. */
static enum identity_failure every_owner_agrees(struct identity_ctx *ctx, const pid_t *pids,
						size_t n, const struct identity *reported,
						os_error *err)
{
	if (n == 1)
		return IDENTITY_OK;
	_cleanup_free_ struct identity *other = malloc(sizeof *other);
	if (!other) {
		os_error_set(err, ENOMEM, "out of memory");
		return IDENTITY_PROC_ERROR;
	}
	for (size_t i = 0; i < n; i++) {
		if (pids[i] == reported->pid)
			continue;
		enum identity_failure f = build_chain(ctx, pids[i], other, err);
		if (f != IDENTITY_OK)
			return f;
		if (!same_ancestry(reported, other)) {
			os_error_set(err, EPERM,
				     "socket shared by pids %d and %d with different ancestry",
				     (int)reported->pid, (int)pids[i]);
			return IDENTITY_OWNERS_DISAGREE;
		}
	}
	return IDENTITY_OK;
}

void identity_digest(const struct identity *id, uint8_t out[SHA256_LEN])
{
	struct sha256 c;
	sha256_init(&c);
	for (size_t i = 0; i < id->n_chain; i++)
		sha256_update(&c, id->chain[i], strlen(id->chain[i]) + 1);
	sha256_final(&c, out);
}

/* Our own fds hold the other end, never the caller: our pid is skipped. */
static int find_owners(struct identity_ctx *ctx, unsigned long inode, struct procfs_owners *out,
		       os_error *err)
{
	struct procfs_scope scope = { ctx->netns_ino, ctx->cgroup_fd, getpid() };
	if (!ctx->batch)
		return procfs_scope_socket_owners(&scope, inode, out, err);
	if (!ctx->batch_indexed) {
		if (procfs_scope_index_build(&scope, &ctx->index, err) < 0)
			return -1;
		ctx->batch_indexed = true;
	}
	return procfs_socket_index_owners(&ctx->index, inode, out, err);
}

enum identity_failure identity_resolve(struct identity_ctx *ctx, const struct sockaddr *peer,
				       const struct sockaddr *local, struct identity *out,
				       os_error *err)
{
	unsigned long inode = 0;
	enum identity_failure found = find_socket_inode(ctx, peer, local, &inode, &out->uid, err);
	if (found != IDENTITY_OK)
		return found;
	/* All of them, or none: a list cut short could hide the one that differs.
	 * Our own fds hold the other end, never the caller. */
	_cleanup_procfs_owners_ struct procfs_owners owners = { 0 };
	if (find_owners(ctx, inode, &owners, err) < 0) {
		os_error_prefix(err, "owners of socket inode %lu", inode);
		return IDENTITY_PROC_ERROR;
	}
	const pid_t *pids = owners.pid;
	size_t n = owners.n;
	if (n == 0) {
		os_error_set(err, ESRCH, "no process owns socket inode %lu", inode);
		return IDENTITY_NO_OWNER;
	}
	/* Every owner must run the same executable, else the caller is ambiguous. */
	char first[PATH_MAX], other[PATH_MAX];
	pid_t lowest = pids[0];
	if (read_exe(pids[0], first, sizeof first) < 0) {
		os_error_errno(err, "reading executable of pid %d", (int)pids[0]);
		return IDENTITY_PROC_ERROR;
	}
	for (size_t i = 1; i < n; i++) {
		if (read_exe(pids[i], other, sizeof other) < 0 || strcmp(first, other) != 0) {
			os_error_set(err, EPERM,
				     "socket shared by processes running different executables");
			return IDENTITY_OWNERS_DISAGREE;
		}
		if (pids[i] < lowest)
			lowest = pids[i];
	}
	out->pid = lowest;
	enum identity_failure f = build_chain(ctx, lowest, out, err);
	return f == IDENTITY_OK ? every_owner_agrees(ctx, pids, n, out, err) : f;
}
