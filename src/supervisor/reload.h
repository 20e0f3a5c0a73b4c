/* reload.h - policy updates of a running sandbox: SIGHUP re-reads --policy,
 * and a policy the gateway pushes on the session goes through the same rules
 * (egress_reload / egress_apply_policy_text). A refused update keeps the
 * running policy; nothing here touches the boundary. */
#ifndef OS_SUPERVISOR_RELOAD_H
#define OS_SUPERVISOR_RELOAD_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "run.h"

/* SIGHUP on r's loop reloads r->egress's policy file. */
int reload_watch_signal(struct sup_run *r, os_error *err);
/* gw_session_apply_fn; user is the struct sup_run. */
int reload_apply_pushed(void *user, const char *yaml, size_t len, uint64_t revision, os_error *err);

#endif
