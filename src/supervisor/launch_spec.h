/* launch_spec.h - the agent's launch spec as the supervisor starts it
 * (docs/launch-spec.md): the command, the proxy environment, user and group,
 * the default filesystem view, and the workspace handed to the agent's user.
 * The policy's static part is added by egress_fill_spec, the limits by
 * limits_fill_spec. Never widens what the policy grants. */
#ifndef OS_SUPERVISOR_LAUNCH_SPEC_H
#define OS_SUPERVISOR_LAUNCH_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <sys/socket.h>

#include "error.h"
#include "options.h"

/* "http://ADDR:PORT" of the proxy's IPv4 endpoint into url. */
int launch_spec_proxy_url(const struct sockaddr_storage *proxy, char *url, size_t cap,
			  os_error *err);
/* The spec's base for o's agent command, its proxy at proxy_url; NULL on ENOMEM. */
json_t *launch_spec_new(const struct sup_options *o, const char *proxy_url);
/* The workspace: owned by the agent's user (while root still owns it), its
 * cwd and HOME; bound on /sandbox when the launcher makes namespaces. */
int launch_spec_workdir(json_t *spec, const char *workdir, os_error *err);

/* A policy's `sandbox` user or group that this host has no account for
 * becomes LAUNCH_SPEC_SANDBOX_ID, which needs none (logged once); an error
 * when another account owns that id. For launchers that share this host's
 * passwd and group files (the local driver's). */
#define LAUNCH_SPEC_SANDBOX_ID 65533
int launch_spec_sandbox_account(json_t *spec, os_error *err);

/* The sandbox's own uid and gid (--sandbox-uid) replace whatever user and
 * group the policy chose; a policy that asked for another is logged. */
int launch_spec_sandbox_uid(json_t *spec, uint64_t uid);

#endif
