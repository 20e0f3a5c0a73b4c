/* audit_read.h - reading what `sandbox logs` streams: the times of records
 * (an audit record's "ts" number, a log record's RFC 3339 "ts" string), the
 * --since argument, and the fields of one audit record (src/lib/auditrec.h)
 * that the audit table and `policy propose` show. Pure parsing: no I/O. */
#ifndef OS_CLI_AUDIT_READ_H
#define OS_CLI_AUDIT_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* RFC 3339 "2026-12-02T01:30:00Z", with optional fraction and an offset
 * ("+02:00") instead of Z; *out is seconds since the epoch. */
int audit_time_parse(const char *s, double *out, os_error *err);

/* --since: a duration before now ("90s", "10m", "2h", "1d", "1h30m") or a
 * time (audit_time_parse). The error names the argument and both forms. */
int audit_since_parse(const char *s, double now, double *out, os_error *err);

/* A record's time: "ts" as a number or as an RFC 3339 string; false when it
 * has none. */
bool audit_record_time(const json_t *rec, double *out);

/* The fields of one audit record, pointing into rec ("-" when absent). */
struct audit_fields {
	const char *decision, *reason, *event, *host, *method, *path, *binary, *proto;
	int64_t port; /* 0 when absent */
};
void audit_fields_of(const json_t *rec, struct audit_fields *f);

/* rec's time as "2026-12-02T01:30:00Z" (UTC) into out; "-" without one. */
void audit_time_format(const json_t *rec, char *out, size_t cap);

#endif
