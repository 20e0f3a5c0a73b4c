/* loop.c - the event loop core: iterations, epoll dispatch, fd watches and
 * deferred calls. Removed sources are only freed after the epoll batch that
 * may still point at them, never while an event for them can be dispatched. */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "loop_internal.h"

/* Events handled per epoll_wait; more simply wait for the next iteration. */
#define LOOP_BATCH 256

uint64_t loop_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t loop_now_ms(void)
{
	return loop_now_ns() / 1000000u;
}

int loop_new(struct loop **out, os_error *err)
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return os_error_set(err, ENOMEM, "allocating event loop");
	l->tfd = -1;
	sigemptyset(&l->watched_signals);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		os_error_errno(err, "epoll_create1");
		free(l);
		return -1;
	}
	if (loop_timers_init(l, err) < 0) {
		close(l->epfd);
		free(l);
		return -1;
	}
	*out = l;
	return 0;
}

static void free_zombies(struct loop *l)
{
	while (l->zombies) {
		struct loop_source *s = l->zombies;
		l->zombies = s->zombie_next;
		/* the source is the first member of its container */
		free(s);
	}
}

static void remove_source(struct loop_source *s)
{
	switch (s->kind) {
	case LOOP_SRC_IO:
		loop_io_remove((struct loop_io *)s);
		break;
	case LOOP_SRC_TIMER:
		loop_timer_remove((struct loop_timer *)s);
		break;
	case LOOP_SRC_SIGNAL:
		loop_signal_remove((struct loop_signal *)s);
		break;
	case LOOP_SRC_CHILD:
		loop_child_remove((struct loop_child *)s);
		break;
	case LOOP_SRC_TIMERFD:
		break;
	}
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	while (l->sources)
		remove_source(l->sources);
	free_zombies(l);
	while (l->defer_head) {
		struct loop_defer *d = l->defer_head;
		l->defer_head = d->next;
		free(d);
	}
	loop_timers_fini(l);
	close(l->epfd);
	free(l);
}

void loop_source_link(struct loop *l, struct loop_source *s, enum loop_kind kind)
{
	s->kind = kind;
	s->loop = l;
	s->removed = false;
	s->prev = NULL;
	s->next = l->sources;
	if (l->sources)
		l->sources->prev = s;
	l->sources = s;
}

void loop_source_retire(struct loop_source *s)
{
	struct loop *l = s->loop;
	if (s->removed)
		return;
	s->removed = true;
	if (s->prev)
		s->prev->next = s->next;
	else
		l->sources = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->zombie_next = l->zombies;
	l->zombies = s;
}

int loop_epoll_add(struct loop *l, int fd, uint32_t events, struct loop_source *s, os_error *err)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return os_error_errno(err, "epoll_ctl ADD fd %d", fd);
	return 0;
}

void loop_epoll_del(struct loop *l, int fd)
{
	/* ENOENT/EBADF: the fd was closed first, which already dropped it */
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* ---- fd watches ---- */

static uint32_t io_epoll_events(unsigned events, unsigned flags)
{
	uint32_t ev = 0;
	if (events & LOOP_IN)
		ev |= EPOLLIN | EPOLLRDHUP; /* RDHUP only with IN: else it would spin */
	if (events & LOOP_OUT)
		ev |= EPOLLOUT;
	if (flags & LOOP_EDGE)
		ev |= EPOLLET;
	return ev;
}

static unsigned io_loop_events(uint32_t ev)
{
	unsigned out = 0;
	if (ev & EPOLLIN)
		out |= LOOP_IN;
	if (ev & EPOLLOUT)
		out |= LOOP_OUT;
	if (ev & (EPOLLHUP | EPOLLRDHUP))
		out |= LOOP_HUP;
	if (ev & EPOLLERR)
		out |= LOOP_ERR;
	return out;
}

int loop_io_add(struct loop *l, int fd, unsigned events, unsigned flags, loop_io_fn cb, void *data,
		struct loop_io **out, os_error *err)
{
	if (fd < 0 || !cb || (events & ~(unsigned)(LOOP_IN | LOOP_OUT)) || (flags & ~LOOP_EDGE))
		return os_error_set(err, EINVAL, "loop_io_add: bad fd %d, events %#x or flags %#x",
				    fd, events, flags);
	struct loop_io *w = calloc(1, sizeof(*w));
	if (!w)
		return os_error_set(err, ENOMEM, "allocating fd watch");
	w->fd = fd;
	w->events = events;
	w->flags = flags;
	w->cb = cb;
	w->data = data;
	if (loop_epoll_add(l, fd, io_epoll_events(events, flags), &w->src, err) < 0) {
		free(w);
		return -1;
	}
	loop_source_link(l, &w->src, LOOP_SRC_IO);
	if (out)
		*out = w;
	return 0;
}

int loop_io_modify(struct loop_io *w, unsigned events, os_error *err)
{
	if (w->src.removed || (events & ~(unsigned)(LOOP_IN | LOOP_OUT)))
		return os_error_set(err, EINVAL, "loop_io_modify: removed watch or bad events %#x",
				    events);
	if (events == w->events)
		return 0;
	struct epoll_event ev = { .events = io_epoll_events(events, w->flags),
				  .data.ptr = &w->src };
	if (epoll_ctl(w->src.loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
		return os_error_errno(err, "epoll_ctl MOD fd %d", w->fd);
	w->events = events;
	return 0;
}

unsigned loop_io_events(const struct loop_io *w)
{
	return w->events;
}

int loop_io_fd(const struct loop_io *w)
{
	return w->fd;
}

void loop_io_remove(struct loop_io *w)
{
	if (!w || w->src.removed)
		return;
	loop_epoll_del(w->src.loop, w->fd);
	loop_source_retire(&w->src);
}

static int io_dispatch(struct loop_io *w, uint32_t ev)
{
	/* mask bits whose interest was dropped earlier in this batch */
	unsigned events = io_loop_events(ev) & (w->events | LOOP_HUP | LOOP_ERR);
	if (!events)
		return 0;
	w->cb(w->src.loop, w, w->fd, events, w->data);
	return 1;
}

/* ---- deferred calls ---- */

int loop_defer(struct loop *l, loop_defer_fn cb, void *data, struct loop_defer **out, os_error *err)
{
	if (!cb)
		return os_error_set(err, EINVAL, "loop_defer: no callback");
	struct loop_defer *d = calloc(1, sizeof(*d));
	if (!d)
		return os_error_set(err, ENOMEM, "allocating deferred call");
	d->cb = cb;
	d->data = data;
	if (l->defer_tail)
		l->defer_tail->next = d;
	else
		l->defer_head = d;
	l->defer_tail = d;
	if (out)
		*out = d;
	return 0;
}

void loop_defer_cancel(struct loop_defer *d)
{
	if (d)
		d->cancelled = true; /* freed by the queue run that reaches it */
}

static int run_defers(struct loop *l)
{
	/* detach first: calls deferred from here run in the next iteration */
	struct loop_defer *d = l->defer_head;
	l->defer_head = l->defer_tail = NULL;
	int n = 0;
	while (d) {
		struct loop_defer *next = d->next;
		if (!d->cancelled) {
			d->cancelled = true;
			d->cb(l, d->data);
			n++;
		}
		free(d);
		d = next;
	}
	return n;
}

/* ---- iterations ---- */

static int dispatch(struct loop *l, const struct epoll_event *ev, os_error *err)
{
	struct loop_source *s = ev->data.ptr;
	if (s->removed)
		return 0; /* removed earlier in this batch: memory still valid, skip */
	switch (s->kind) {
	case LOOP_SRC_IO:
		return io_dispatch((struct loop_io *)s, ev->events);
	case LOOP_SRC_TIMERFD:
		return loop_timers_expire(l, err);
	case LOOP_SRC_SIGNAL:
		return loop_signal_dispatch((struct loop_signal *)s);
	case LOOP_SRC_CHILD:
		return loop_child_dispatch((struct loop_child *)s);
	case LOOP_SRC_TIMER:
		break;
	}
	return 0;
}

static int wait_and_dispatch(struct loop *l, int timeout_ms, os_error *err)
{
	struct epoll_event evs[LOOP_BATCH];
	if (loop_timers_sync(l, err) < 0)
		return -1;
	int nev = epoll_wait(l->epfd, evs, LOOP_BATCH, timeout_ms);
	if (nev < 0) {
		if (errno == EINTR)
			return 0;
		return os_error_errno(err, "epoll_wait");
	}
	int total = 0, result = 0;
	for (int i = 0; i < nev; i++) {
		int r = dispatch(l, &evs[i], err);
		if (r < 0)
			result = -1; /* finish the batch: edge events must not be lost */
		else
			total += r;
	}
	return result < 0 ? -1 : total;
}

int loop_run_once(struct loop *l, int timeout_ms, os_error *err)
{
	if (l->running)
		return os_error_set(err, EBUSY, "event loop re-entered from a callback");
	l->running = true;
	int n = run_defers(l);
	/* work done or queued, or a stop pending: poll instead of blocking */
	if (n > 0 || l->defer_head || l->stop)
		timeout_ms = 0;
	int r = wait_and_dispatch(l, timeout_ms, err);
	free_zombies(l);
	l->running = false;
	return r < 0 ? -1 : n + r;
}

int loop_run(struct loop *l, os_error *err)
{
	if (l->running)
		return os_error_set(err, EBUSY, "event loop re-entered from a callback");
	int result = 0;
	while (!l->stop) {
		if (loop_run_once(l, -1, err) < 0) {
			result = -1;
			break;
		}
	}
	l->stop = false;
	return result;
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}
