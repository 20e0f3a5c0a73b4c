/* trace.h - a timing trace for benchmarks: when OPENSHELL_TRACE names a file,
 * every trace_mark() appends one line "MONOTONIC_NS PID COMPONENT EVENT" to
 * it, so the CLI, the gateway and the supervisors of one machine write one
 * timeline (bench/cases/sandbox-create prints its breakdown). Unset (the
 * normal case) a mark costs one branch. A mark is one O_APPEND write: lines
 * of concurrent processes never interleave. Never carries secrets: events
 * are fixed words plus a sandbox id or name. */
#ifndef OS_TRACE_H
#define OS_TRACE_H

/* Names the writer in every line (e.g. "gateway"); call once, early. */
void trace_init(const char *component);
/* Appends one line; event is formatted, cut at 160 bytes, spaces kept. */
void trace_mark(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
