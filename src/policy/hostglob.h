/* hostglob.h - host names as the policy sees them: normalisation (ASCII,
 * lower case, no trailing dot) and the endpoint host patterns of POLICY.md.
 * Never matches a bare domain against `*.domain` or `**.domain`. */
#ifndef OS_POLICY_HOSTGLOB_H
#define OS_POLICY_HOSTGLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define HOST_NAME_CAP 254 /* 253 characters + NUL */

/* Normalises len bytes of a host name into out[cap]: lower-cases, strips one
 * trailing dot, rejects empty labels, non-ASCII (IDN must arrive as punycode),
 * bytes outside [a-z0-9-_.] and over-long names/labels. IP literals (v4, and v6
 * without brackets) pass through normalised. */
int host_normalize(const char *in, size_t len, char *out, size_t cap, os_error *err);

/* Validates an endpoint host pattern from a policy: an exact name, an IP
 * literal, or a label glob as OpenShell matches them (`.` separates labels):
 * `*` anywhere in the first label (`*.d`, `*-aiplatform.d`), `**` as the
 * whole first label, `*` as a whole later label (`*.s3.*.amazonaws.com`),
 * followed by a literal name of at least two labels (`*.com`, `*`, `**`,
 * `a*b.*x.d` are rejected). Writes the normalised pattern to out. */
int host_pattern_normalize(const char *in, size_t len, char *out, size_t cap, os_error *err);

/* Both arguments already normalised. Within a label `*` is any run of bytes
 * (so `*.d` is exactly one extra label); a first label `**` is one or more
 * labels; exact patterns compare equal. */
bool host_pattern_match(const char *pattern, const char *host);
bool host_pattern_is_glob(const char *pattern);

/* True when s is an IPv4 or IPv6 literal (strict dotted-quad for v4). */
bool host_is_ip_literal(const char *s);

#endif
