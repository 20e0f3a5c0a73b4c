/* spec.h - the launch spec: what the backend asks the launcher to do
 * (format in docs/launch-spec.md). Parsing is strict: unknown fields, wrong
 * types, root ids and relative paths are errors naming the field. */
#ifndef OS_SANDBOX_SPEC_H
#define OS_SANDBOX_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "error.h"

#define SPEC_MAX_BYTES (8u << 20) /* an argv of 2 MiB (ARG_MAX), JSON-escaped */
#define SPEC_MAX_ARGV 4096
#define SPEC_MAX_ENV 4096
#define SPEC_MAX_PATHS 256
#define SPEC_MAX_PATH_LEN 4096
#define SPEC_MAX_RLIMITS 8
#define SPEC_MAX_CGROUPS 8
#define SPEC_WORKSPACE_TARGET "/sandbox"

struct spec_rlimit {
	int resource;
	rlim_t value;
};

struct launch_spec {
	json_t *root; /* owns every string below */
	const char **argv; /* NULL-terminated */
	char **envp; /* "K=V", NULL-terminated, OPENSHELL_* removed */
	const char **dropped_env; /* names removed from envp, NULL-terminated */
	const char *cwd;
	uid_t uid;
	gid_t gid;
	const char **ro_paths;
	size_t n_ro;
	const char **rw_paths;
	size_t n_rw;
	bool landlock_hard;
	struct spec_rlimit rlimits[SPEC_MAX_RLIMITS];
	size_t n_rlimits;
	bool tty;
	int netns_fd; /* -1 when none given as a number */
	const char *netns_path; /* NULL when none given as a path */
	bool new_namespaces;
	const char *hostname;
	const char *workspace; /* host dir bind-mounted on /sandbox, or NULL */
	/* A CA bundle shown at the system trust path in the filesystem view
	 * (SPEC_SYSTEM_TRUST_PATH: GnuTLS, OpenSSL without SSL_CERT_FILE), or NULL. */
	const char *system_trust;
	const char **cgroups; /* cgroup dirs joined first, NULL-terminated */
	size_t n_cgroups;
	int join_pidfd; /* pidfd whose namespaces an exec joins, or -1 */
	/* "transfer": instead of exec'ing argv, receive (upload) or send a
	 * workspace path as a transfer stream (transfer.c). */
	const char *transfer_path; /* NULL: no transfer */
	bool transfer_upload;
};

#define SPEC_SYSTEM_TRUST_PATH "/etc/ssl/certs/ca-certificates.crt"

/* Parses and validates len bytes of spec JSON, resolving user/group names
 * through the image's /etc/passwd and /etc/group. */
int spec_parse(const char *data, size_t len, struct launch_spec *out, os_error *err);
void spec_free(struct launch_spec *s);

#endif
