/* audit.h - the supervisor's audit log: one JSON line per decision (connect,
 * request, bypass, policy load, inference). Reason codes come from closed
 * sets owned by the deciding module; secrets and query strings never reach
 * this module (callers pass redacted paths). */
#ifndef OS_SUPERVISOR_AUDIT_H
#define OS_SUPERVISOR_AUDIT_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct audit;

/* Fields left NULL / 0 are omitted from the line. */
struct audit_record {
	const char *event; /* "connect", "http", "bypass", "policy", "inference" */
	const char *decision; /* "allow", "deny", "audit" */
	const char *reason; /* closed-set reason code */
	const char *policy;
	const char *rule;
	const char *proto; /* "tcp", "udp", ... (bypass) */
	const char *host;
	const char *dst; /* resolved address */
	uint16_t port;
	const char *method;
	const char *path; /* canonical path, query already removed */
	const char *binary;
	pid_t pid;
	long uid; /* -1 = unknown */
	const char *detail;
	uint64_t generation; /* policy generation that decided */
};

/* path NULL = stderr. The file is opened O_APPEND, mode 0600. */
int audit_open(const char *path, const char *sandbox_id, struct audit **out, os_error *err);
void audit_close(struct audit *a);
void audit_write(struct audit *a, const struct audit_record *rec);
/* Number of records written (tests, status). */
uint64_t audit_count(const struct audit *a);

#endif
