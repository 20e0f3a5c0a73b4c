/* denials.h - the sandbox's recent denials, kept so that the agent (or its
 * harness) can ask why a request failed: `GET http://policy.local/v1/denials`
 * through the proxy. A fixed ring: memory never grows with the number of
 * denials. Records carry no detail text, query string or header value (an
 * upstream's words could echo a secret); only closed-set codes, the host,
 * the canonical path and the calling binary. */
#ifndef OS_SUPERVISOR_DENIALS_H
#define OS_SUPERVISOR_DENIALS_H

#include <jansson.h>
#include <stdint.h>

#define DENIALS_KEPT 100 /* upstream's most for ?last=N */
#define DENIALS_DEFAULT_LAST 10 /* upstream's default */
#define DENIALS_HOST "policy.local"

struct denial {
	const char *error; /* "policy_denied", "ssrf_denied", "dns_error", ... */
	const char *reason; /* closed-set reason code */
	const char *policy;
	const char *host;
	uint16_t port;
	const char *method; /* NULL for a CONNECT */
	const char *path; /* canonical, query removed */
	const char *binary;
};

struct denials;

struct denials *denials_new(void);
void denials_free(struct denials *d);
/* Copies what it keeps (each field cut at a bound); the oldest goes first. */
void denials_record(struct denials *d, const struct denial *rec);
/* {"denials":[...the newest `last`, newest first...], "dropped": N} where N
 * counts denials no longer kept; NULL on ENOMEM. */
json_t *denials_json(const struct denials *d, size_t last);

#endif
