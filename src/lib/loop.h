/* loop.h - the single-threaded epoll event loop shared by the supervisor's
 * proxy and the gateway: fd watches, timers, signals, child exits, deferred calls.
 * It never blocks in a callback's place and never frees a source under a pending event.
 *
 * Ownership and lifetime
 * - Every add function hands back a handle that stays valid until the matching
 *   remove (or, for one-shot sources, until their callback returns). Removing is
 *   allowed from any callback, including removing a source whose event is pending
 *   in the same epoll batch: removal only marks the source, and memory is freed
 *   after the batch, so a removed source's callback is never called again.
 * - The loop never closes the fds you watch; remove the watch before closing
 *   the fd (epoll tracks open file descriptions, not numbers).
 * - Timers use CLOCK_MONOTONIC and millisecond delays; a heap plus one timerfd
 *   per loop keeps 10k+ timers (one idle timeout per connection) cheap.
 * - Signals are blocked in the calling thread while watched and read through a
 *   signalfd. Children inherit the mask: call loop_sigmask_reset() after fork
 *   and before exec. Threads started before the watch do not block the signal
 *   and may take it instead: add signal watches before starting threads.
 * - loop_stop() lets the current iteration finish (so edge-triggered events in
 *   the batch are not lost), then loop_run() returns. */
#ifndef OS_LOOP_H
#define OS_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/types.h>

#include "error.h"

/* Hard cap on armed timers per loop: going over is an error, not a resize. */
#define LOOP_TIMERS_MAX (1u << 20)

struct loop;
struct loop_io;
struct loop_timer;
struct loop_signal;
struct loop_child;
struct loop_defer;

/* Event bits for fd watches. LOOP_HUP and LOOP_ERR are always reported. */
enum {
	LOOP_IN = 1u << 0,
	LOOP_OUT = 1u << 1,
	LOOP_HUP = 1u << 2, /* peer hung up (EPOLLHUP or EPOLLRDHUP) */
	LOOP_ERR = 1u << 3,
};

/* Registration flags for loop_io_add. Level-triggered is the default: the
 * callback fires every iteration while the fd is ready. With LOOP_EDGE it
 * fires once per readiness change; the callback must drain to EAGAIN. */
enum {
	LOOP_EDGE = 1u << 0,
};

/* How a watched child ended. code is CLD_EXITED, CLD_KILLED or CLD_DUMPED;
 * 0 means the status was lost (someone else reaped the child). status is the
 * exit code or the signal number. */
struct loop_exit {
	pid_t pid;
	int code;
	int status;
};

typedef void (*loop_io_fn)(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data);
typedef void (*loop_timer_fn)(struct loop *l, struct loop_timer *t, void *data);
typedef void (*loop_signal_fn)(struct loop *l, struct loop_signal *s,
			       const struct signalfd_siginfo *info, void *data);
typedef void (*loop_child_fn)(struct loop *l, struct loop_child *c, const struct loop_exit *exit,
			      void *data);
typedef void (*loop_defer_fn)(struct loop *l, void *data);

int loop_new(struct loop **out, os_error *err);
/* Frees the loop and every source still registered (restoring signal masks,
 * closing signalfds and pidfds). Watched fds are not closed. NULL is a no-op. */
void loop_free(struct loop *l);

/* Runs iterations until loop_stop(). Returns 0 after a stop, < 0 if epoll
 * itself fails. Not reentrant: calling it from a callback is an error. */
int loop_run(struct loop *l, os_error *err);
/* One iteration: pending deferred calls, then wait up to timeout_ms (-1 =
 * until something happens, 0 = poll) and dispatch. Returns the number of
 * callbacks dispatched (>= 0) or < 0 on error. */
int loop_run_once(struct loop *l, int timeout_ms, os_error *err);
void loop_stop(struct loop *l);

/* Monotonic clock in milliseconds / nanoseconds. */
uint64_t loop_now_ms(void);
uint64_t loop_now_ns(void);

/* fd watches. events is a mask of LOOP_IN / LOOP_OUT (0 is allowed: only HUP
 * and ERR are then reported). One watch per open file description. */
int loop_io_add(struct loop *l, int fd, unsigned events, unsigned flags, loop_io_fn cb, void *data,
		struct loop_io **out, os_error *err);
int loop_io_modify(struct loop_io *w, unsigned events, os_error *err);
unsigned loop_io_events(const struct loop_io *w);
int loop_io_fd(const struct loop_io *w);
void loop_io_remove(struct loop_io *w);

/* Timers fire once after after_ms, then (when every_ms > 0) every every_ms.
 * A periodic timer that falls behind skips missed ticks instead of bursting.
 * Timers with the same deadline fire in the order they were armed. */
int loop_timer_add(struct loop *l, uint64_t after_ms, uint64_t every_ms, loop_timer_fn cb,
		   void *data, struct loop_timer **out, os_error *err);
/* Re-arms an existing timer (armed or not): the cheap way to push an idle
 * timeout forward. */
int loop_timer_set(struct loop_timer *t, uint64_t after_ms, uint64_t every_ms, os_error *err);
/* Disarms without freeing; loop_timer_set arms it again. */
void loop_timer_disarm(struct loop_timer *t);
bool loop_timer_armed(const struct loop_timer *t);
void loop_timer_remove(struct loop_timer *t);

/* Signal watches: one per signal number per loop. The signal is blocked while
 * watched; removing discards instances still pending and restores the
 * previous blocked state. Standard signals coalesce: several raises before
 * the loop reads may arrive as one callback. */
int loop_signal_add(struct loop *l, int signo, loop_signal_fn cb, void *data,
		    struct loop_signal **out, os_error *err);
void loop_signal_remove(struct loop_signal *s);

/* Child watches via pidfd: the callback runs once when the child exits, after
 * the loop reaped it (waitid P_PIDFD). The watch is removed automatically
 * before the callback runs, so the handle is dead once the callback returns.
 * pid must be an unreaped child of this process. */
int loop_child_add(struct loop *l, pid_t pid, loop_child_fn cb, void *data, struct loop_child **out,
		   os_error *err);
/* Stops watching (does not kill or reap the child). */
void loop_child_remove(struct loop_child *c);

/* Deferred calls run at the start of the next iteration, in FIFO order; ones
 * added while deferred calls run wait for the iteration after. out may be
 * NULL; a handle stays valid until its callback starts or it is cancelled. */
int loop_defer(struct loop *l, loop_defer_fn cb, void *data, struct loop_defer **out,
	       os_error *err);
void loop_defer_cancel(struct loop_defer *d);

/* Unblocks every signal in the calling thread; async-signal-safe, for a
 * forked child before exec. */
int loop_sigmask_reset(os_error *err);

#endif
