/* identity.h - who is on the other end of a proxy connection, as the kernel
 * says: socket 4-tuple -> inode (an exact sock_diag lookup in the sandbox's
 * network namespace, any socket family) -> owning processes -> /proc/PID/exe and the ancestor chain up to the
 * sandbox's entry process. Never trusts argv, comm or anything the caller
 * writes about itself; owners that disagree, or none found, are an error. */
#ifndef OS_SUPERVISOR_IDENTITY_H
#define OS_SUPERVISOR_IDENTITY_H

#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "error.h"
#include "injection.h"
#include "sha256.h"

#define IDENTITY_CHAIN_MAX 32 /* ancestors considered, entry process included */

enum identity_failure {
	IDENTITY_OK = 0,
	IDENTITY_NO_SOCKET, /* no socket with that 4-tuple in the namespace */
	IDENTITY_NO_OWNER, /* socket found but no process holds it */
	IDENTITY_OWNERS_DISAGREE, /* processes with different executables share it */
	IDENTITY_OUTSIDE, /* owner is not a descendant of the entry process */
	IDENTITY_HASH_MISMATCH, /* executable content changed since first use */
	IDENTITY_PROC_ERROR, /* /proc could not be read */
	IDENTITY_INJECTED, /* foreign code is loaded into a process of the chain */
	IDENTITY_CHANGED, /* who holds the socket changed between two lookups */
};

struct identity {
	pid_t pid; /* one owning process (lowest pid) */
	uid_t uid; /* socket owner uid as the kernel records it */
	size_t n_chain; /* chain[0] = owner's exe, then parent's, ... entry's */
	char chain[IDENTITY_CHAIN_MAX][PATH_MAX];
};

struct identity_ctx;

/* entry_pid: the sandbox's entry process (its net namespace is where sockets
 * are looked up; only its descendants are accepted as owners). */
int identity_ctx_new(pid_t entry_pid, struct identity_ctx **out, os_error *err);
void identity_ctx_free(struct identity_ctx *ctx);
/* The sandbox's cgroup (its processes, and nobody else, may hold its
 * sockets): owners are then looked for among its members only, not among
 * every process on the machine. Without one, every process in the
 * network namespace is looked at. */
int identity_ctx_set_cgroup(struct identity_ctx *ctx, const char *dir, os_error *err);

/* More entry processes in the same sandbox: the relays of `sandbox exec`,
 * whose commands enter the sandbox beside the agent, not below it. */
#define IDENTITY_EXTRA_MAX 64
int identity_ctx_add_entry(struct identity_ctx *ctx, pid_t pid, os_error *err);
void identity_ctx_remove_entry(struct identity_ctx *ctx, pid_t pid);

/* peer/local: the addresses as seen from the proxy side of the connection,
 * i.e. peer is the agent's socket address and local the proxy's. */
enum identity_failure identity_resolve(struct identity_ctx *ctx, const struct sockaddr *peer,
				       const struct sockaddr *local, struct identity *out,
				       os_error *err);

const char *identity_failure_name(enum identity_failure f);

/* The policy's filesystem lists (copied): from now on a process with code
 * mapped from outside the read-only tree, or loader variables naming it, is
 * not the binary it runs (IDENTITY_INJECTED). */
int identity_ctx_set_tree(struct identity_ctx *ctx, const struct injection_tree *t, os_error *err);

/* Lookups made between these two (the connections of one accept batch)
 * share one snapshot of the sockets and their owners: one /proc walk
 * instead of one per lookup. Lookups outside a batch always walk afresh. */
void identity_batch_begin(struct identity_ctx *ctx);
void identity_batch_end(struct identity_ctx *ctx);

/* A digest of the ancestry (the executables of the chain), to compare two
 * lookups of one connection without keeping both chains. */
void identity_digest(const struct identity *id, uint8_t out[SHA256_LEN]);

#endif
