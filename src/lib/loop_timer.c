/* loop_timer.c - the event loop's timers: a binary min-heap on (deadline,
 * arming order) and one CLOCK_MONOTONIC timerfd set to the heap's head.
 * Arming, re-arming and cancelling are O(log n); nothing here scans all timers. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "loop_internal.h"

#define NS_PER_MS 1000000u
#define HEAP_INITIAL_CAP 64

static bool before(const struct loop_timer *a, const struct loop_timer *b)
{
	if (a->deadline_ns != b->deadline_ns)
		return a->deadline_ns < b->deadline_ns;
	return a->seq < b->seq;
}

static void heap_place(struct loop *l, size_t i, struct loop_timer *t)
{
	l->heap[i] = t;
	t->heap_index = i;
}

static void sift_up(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!before(t, l->heap[parent]))
			break;
		heap_place(l, i, l->heap[parent]);
		i = parent;
	}
	heap_place(l, i, t);
}

static void sift_down(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= l->heap_len)
			break;
		if (child + 1 < l->heap_len && before(l->heap[child + 1], l->heap[child]))
			child++;
		if (!before(l->heap[child], t))
			break;
		heap_place(l, i, l->heap[child]);
		i = child;
	}
	heap_place(l, i, t);
}

static int heap_reserve(struct loop *l, os_error *err)
{
	if (l->heap_len < l->heap_cap)
		return 0;
	if (l->heap_cap >= LOOP_TIMERS_MAX)
		return os_error_set(err, ENOSPC, "more than %u armed timers", LOOP_TIMERS_MAX);
	size_t cap = l->heap_cap ? l->heap_cap * 2 : HEAP_INITIAL_CAP;
	if (cap > LOOP_TIMERS_MAX)
		cap = LOOP_TIMERS_MAX;
	struct loop_timer **heap = reallocarray(l->heap, cap, sizeof(*heap));
	if (!heap)
		return os_error_set(err, ENOMEM, "growing timer heap to %zu", cap);
	l->heap = heap;
	l->heap_cap = cap;
	return 0;
}

/* Capacity must have been reserved. */
static void heap_push(struct loop *l, struct loop_timer *t)
{
	heap_place(l, l->heap_len++, t);
	sift_up(l, t->heap_index);
}

static void heap_remove(struct loop *l, struct loop_timer *t)
{
	size_t i = t->heap_index;
	struct loop_timer *last = l->heap[--l->heap_len];
	t->heap_index = LOOP_NOT_ARMED;
	if (last == t)
		return;
	heap_place(l, i, last);
	if (i > 0 && before(last, l->heap[(i - 1) / 2]))
		sift_up(l, i);
	else
		sift_down(l, i);
}

int loop_timers_init(struct loop *l, os_error *err)
{
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->tfd < 0)
		return os_error_errno(err, "timerfd_create");
	l->timerfd_src.kind = LOOP_SRC_TIMERFD;
	l->timerfd_src.loop = l;
	if (loop_epoll_add(l, l->tfd, EPOLLIN, &l->timerfd_src, err) < 0) {
		close(l->tfd);
		l->tfd = -1;
		return -1;
	}
	return 0;
}

void loop_timers_fini(struct loop *l)
{
	if (l->tfd >= 0)
		close(l->tfd);
	l->tfd = -1;
	free(l->heap);
	l->heap = NULL;
	l->heap_len = l->heap_cap = 0;
}

int loop_timers_sync(struct loop *l, os_error *err)
{
	uint64_t head = l->heap_len ? l->heap[0]->deadline_ns : 0;
	if (head == l->tfd_armed_ns)
		return 0;
	/* an all-zero value disarms; deadlines are never 0 on CLOCK_MONOTONIC */
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(head / 1000000000u),
						.tv_nsec = (long)(head % 1000000000u) } };
	if (timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return os_error_errno(err, "timerfd_settime");
	l->tfd_armed_ns = head;
	return 0;
}

static int arm(struct loop_timer *t, uint64_t after_ms, uint64_t every_ms, os_error *err)
{
	struct loop *l = t->src.loop;
	uint64_t after_ns, every_ns, deadline;
	if (__builtin_mul_overflow(after_ms, NS_PER_MS, &after_ns) ||
	    __builtin_mul_overflow(every_ms, NS_PER_MS, &every_ns) ||
	    __builtin_add_overflow(loop_now_ns(), after_ns, &deadline) ||
	    __builtin_add_overflow(deadline, every_ns, &deadline))
		return os_error_set(err, EINVAL,
				    "timer delay %" PRIu64 " ms / period %" PRIu64
				    " ms out of range",
				    after_ms, every_ms);
	if (t->heap_index != LOOP_NOT_ARMED)
		heap_remove(l, t); /* frees the slot the push below needs */
	else if (heap_reserve(l, err) < 0)
		return -1;
	t->deadline_ns = deadline - every_ns;
	t->every_ns = every_ns;
	t->seq = l->next_seq++;
	heap_push(l, t);
	return 0;
}

int loop_timer_add(struct loop *l, uint64_t after_ms, uint64_t every_ms, loop_timer_fn cb,
		   void *data, struct loop_timer **out, os_error *err)
{
	if (!cb)
		return os_error_set(err, EINVAL, "loop_timer_add: no callback");
	struct loop_timer *t = calloc(1, sizeof(*t));
	if (!t)
		return os_error_set(err, ENOMEM, "allocating timer");
	t->src.loop = l;
	t->heap_index = LOOP_NOT_ARMED;
	t->cb = cb;
	t->data = data;
	if (arm(t, after_ms, every_ms, err) < 0) {
		free(t);
		return -1;
	}
	loop_source_link(l, &t->src, LOOP_SRC_TIMER);
	if (out)
		*out = t;
	return 0;
}

int loop_timer_set(struct loop_timer *t, uint64_t after_ms, uint64_t every_ms, os_error *err)
{
	if (t->src.removed)
		return os_error_set(err, EINVAL, "loop_timer_set on a removed timer");
	return arm(t, after_ms, every_ms, err);
}

void loop_timer_disarm(struct loop_timer *t)
{
	if (t && t->heap_index != LOOP_NOT_ARMED)
		heap_remove(t->src.loop, t);
}

bool loop_timer_armed(const struct loop_timer *t)
{
	return t->heap_index != LOOP_NOT_ARMED;
}

void loop_timer_remove(struct loop_timer *t)
{
	if (!t || t->src.removed)
		return;
	loop_timer_disarm(t);
	loop_source_retire(&t->src);
}

/* Re-queues a periodic timer before its callback runs, so the callback may
 * disarm, re-set or remove it. Missed ticks are skipped, not replayed. */
static void requeue_periodic(struct loop *l, struct loop_timer *t, uint64_t now)
{
	uint64_t next = t->deadline_ns + t->every_ns;
	if (next <= now)
		next = now + t->every_ns;
	t->deadline_ns = next;
	t->seq = l->next_seq++;
	heap_push(l, t); /* the slot it was just removed from is still reserved */
}

int loop_timers_expire(struct loop *l, os_error *err)
{
	uint64_t ticks;
	if (read(l->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return os_error_errno(err, "reading timerfd");
	l->tfd_armed_ns = 0; /* it fired: the next sync must re-arm */
	uint64_t now = loop_now_ns();
	/* timers armed by the callbacks below wait for the next pass, so a timer
	 * re-arming itself with delay 0 cannot starve the loop */
	uint64_t limit = l->next_seq;
	int n = 0;
	while (l->heap_len && l->heap[0]->deadline_ns <= now && l->heap[0]->seq < limit) {
		struct loop_timer *t = l->heap[0];
		heap_remove(l, t);
		if (t->every_ns)
			requeue_periodic(l, t, now);
		t->cb(l, t, t->data); /* t may be removed here: not touched after */
		n++;
	}
	return n;
}
