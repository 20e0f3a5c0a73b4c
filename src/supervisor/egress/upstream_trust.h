/* upstream_trust.h - what the proxies trust when they speak TLS to an
 * upstream: the system roots plus the operator's --upstream-ca. Loading the
 * system bundle is most of a proxy's start, and most sandboxes never make an
 * upstream TLS connection, so it is loaded when the first one is made, once
 * per process, and shared by every proxy of the process. The operator's file
 * is checked at once: a wrong --upstream-ca still fails the start. */
#ifndef OS_SUPERVISOR_UPSTREAM_TRUST_H
#define OS_SUPERVISOR_UPSTREAM_TRUST_H

#include <openssl/ssl.h>
#include <stdbool.h>

#include "error.h"

struct upstream_trust;

/* The process's trust for extra_ca_file (NULL: the system roots only);
 * the same object for the same file, counted: release it with
 * upstream_trust_put. */
int upstream_trust_get(const char *extra_ca_file, struct upstream_trust **out, os_error *err);
void upstream_trust_put(struct upstream_trust *t);

/* The client context, the system roots loaded into it on the first call.
 * NULL (err set) when they cannot be loaded; a later call tries again. */
SSL_CTX *upstream_trust_ctx(struct upstream_trust *t, os_error *err);

/* Whether the system roots were loaded yet (tests and benchmarks). */
bool upstream_trust_loaded(const struct upstream_trust *t);

#endif
