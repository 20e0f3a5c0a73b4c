/* local_proc.h - the local driver's processes: a detached monitor that runs
 * openshell-supervisor in its own session with its own log file, records its
 * pid + start time before anything else can happen, and writes the exit
 * status when it ends. Never signals a pid without checking its start time
 * (pids are reused). */
#ifndef OS_LOCAL_PROC_H
#define OS_LOCAL_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* Contents of DIR/supervisor.pid. */
struct local_pid {
	pid_t pid;
	uint64_t start_time; /* /proc/PID/stat field 22 */
	uint64_t log_mark; /* size of the log when this run began */
};

/* Starts argv[0] (absolute path) detached; stdout/stderr appended to
 * log_path; dir receives supervisor.pid (before this returns) and, when the
 * supervisor ends, "exit" holding its exit code. */
int local_proc_spawn(const char *dir, const char *log_path, char *const argv[],
		     struct local_pid *out, os_error *err);

/* Reads DIR/supervisor.pid; ENOENT when the sandbox never ran. */
int local_proc_read_pid(const char *dir, struct local_pid *out, os_error *err);
/* True when pid still runs and started at start_time. */
bool local_proc_alive(const struct local_pid *p);
/* True when that process is gone for good, zombie included: its monitor has
 * written "exit" (or died) and will touch the sandbox directory no more.
 * Between !alive and gone the supervisor has exited and is being recorded. */
bool local_proc_gone(const struct local_pid *p);
/* Signals the recorded process if it is still the same one. */
int local_proc_signal(const struct local_pid *p, int sig, os_error *err);
/* Reads DIR/exit: 1 and *code when present, 0 when absent. A supervisor
 * killed by a signal: *signo is it and *code 128 + it; else *signo is 0. */
int local_proc_exit_code(const char *dir, int *code, int *signo);
/* Start time (field 22 of /proc/PID/stat), or 0 when the pid is gone. */
uint64_t local_proc_start_time(pid_t pid);

#endif
