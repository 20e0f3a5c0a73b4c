/* loop_internal.h - the event loop's private structures, shared by loop.c
 * (core, fd watches, deferred calls), loop_timer.c and loop_proc.c.
 * Nothing outside those three files may include it. */
#ifndef OS_LOOP_INTERNAL_H
#define OS_LOOP_INTERNAL_H

#include <signal.h>
#include <stddef.h>

#include "loop.h"

enum loop_kind { LOOP_SRC_IO, LOOP_SRC_TIMER, LOOP_SRC_SIGNAL, LOOP_SRC_CHILD, LOOP_SRC_TIMERFD };

/* First member of every source; epoll's data.ptr points here. */
struct loop_source {
	enum loop_kind kind;
	bool removed; /* set by remove; the memory is freed after the batch */
	struct loop *loop;
	struct loop_source *prev, *next; /* all live sources, for loop_free */
	struct loop_source *zombie_next; /* removed, waiting to be freed */
};

struct loop_io {
	struct loop_source src;
	int fd;
	unsigned events;
	unsigned flags;
	loop_io_fn cb;
	void *data;
};

struct loop_timer {
	struct loop_source src;
	uint64_t deadline_ns;
	uint64_t every_ns;
	uint64_t seq; /* arming order: ties on deadline fire first-armed first */
	size_t heap_index; /* LOOP_NOT_ARMED when not in the heap */
	loop_timer_fn cb;
	void *data;
};
#define LOOP_NOT_ARMED ((size_t)-1)

struct loop_signal {
	struct loop_source src;
	int signo;
	int sfd;
	bool was_blocked; /* restore this on removal */
	loop_signal_fn cb;
	void *data;
};

struct loop_child {
	struct loop_source src;
	pid_t pid;
	int pidfd;
	loop_child_fn cb;
	void *data;
};

struct loop_defer {
	bool cancelled;
	loop_defer_fn cb;
	void *data;
	struct loop_defer *next;
};

struct loop {
	int epfd;
	bool running, stop;
	struct loop_source *sources; /* live list head */
	struct loop_source *zombies;

	/* timers: binary min-heap on (deadline_ns, seq) and one timerfd */
	struct loop_source timerfd_src;
	int tfd;
	struct loop_timer **heap;
	size_t heap_len, heap_cap;
	uint64_t next_seq;
	uint64_t tfd_armed_ns; /* deadline the timerfd is set to; 0 = disarmed */

	struct loop_defer *defer_head, *defer_tail;
	sigset_t watched_signals;
};

/* core helpers (loop.c) */
void loop_source_link(struct loop *l, struct loop_source *s, enum loop_kind kind);
/* Unlinks from the live list, marks removed, queues for freeing. */
void loop_source_retire(struct loop_source *s);
int loop_epoll_add(struct loop *l, int fd, uint32_t events, struct loop_source *s, os_error *err);
void loop_epoll_del(struct loop *l, int fd);

/* timers (loop_timer.c) */
int loop_timers_init(struct loop *l, os_error *err);
void loop_timers_fini(struct loop *l);
int loop_timers_sync(struct loop *l, os_error *err); /* re-arm timerfd for the heap head */
int loop_timers_expire(struct loop *l, os_error *err); /* returns callbacks run */

/* signals and children (loop_proc.c) */
int loop_signal_dispatch(struct loop_signal *s);
int loop_child_dispatch(struct loop_child *c);

#endif
