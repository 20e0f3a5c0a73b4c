/* test_loop.c - unit tests of the event loop: fd readiness (level and edge),
 * write-interest toggling, timers (order, cancel, re-arm, 10k), signals,
 * child exits via pidfd, removal inside a batch, deferred calls. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "loop.h"

/* Upper bound on waiting for something that must happen; never a timing assertion. */
#define WAIT_LIMIT_MS 5000

struct counter {
	int calls;
	unsigned last_events;
};

static void count_io(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	struct counter *c = data;
	c->calls++;
	c->last_events = events;
}

static struct loop *new_loop(void)
{
	struct loop *l = NULL;
	os_error err = { 0 };
	assert_int_equal(loop_new(&l, &err), 0);
	return l;
}

static void make_pipe(int p[2])
{
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}

/* Runs iterations until *flag is set or the wait limit passes. */
static void run_until(struct loop *l, const int *flag)
{
	os_error err = { 0 };
	uint64_t end = loop_now_ms() + WAIT_LIMIT_MS;
	while (!*flag && loop_now_ms() < end)
		assert_true(loop_run_once(l, 100, &err) >= 0);
}

static void io_level_fires_while_readable(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int p[2];
	make_pipe(p);
	struct counter c = { 0 };
	assert_int_equal(loop_io_add(l, p[0], LOOP_IN, 0, count_io, &c, NULL, &err), 0);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* negative control: nothing to read */
	assert_int_equal(c.calls, 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 1); /* level: still readable, fires again */
	assert_int_equal(c.calls, 2);
	assert_true(c.last_events & LOOP_IN);
	close(p[1]);
	char buf[4];
	assert_int_equal(read(p[0], buf, sizeof(buf)), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 1);
	assert_true(c.last_events & LOOP_HUP); /* writer gone */
	loop_free(l);
	close(p[0]);
}

static void io_edge_fires_once_per_change(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int p[2];
	make_pipe(p);
	struct counter c = { 0 };
	assert_int_equal(loop_io_add(l, p[0], LOOP_IN, LOOP_EDGE, count_io, &c, NULL, &err), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* unread, but no new edge */
	assert_int_equal(write(p[1], "y", 1), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 1); /* new data: new edge */
	assert_int_equal(c.calls, 2);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

static void io_write_interest_toggles(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
	struct counter c = { 0 };
	struct loop_io *w = NULL;
	assert_int_equal(loop_io_add(l, sv[0], LOOP_IN, 0, count_io, &c, &w, &err), 0);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* writable, but not asked */
	assert_int_equal(loop_io_modify(w, LOOP_IN | LOOP_OUT, &err), 0);
	assert_int_equal(loop_io_events(w), LOOP_IN | LOOP_OUT);
	assert_int_equal(loop_run_once(l, 0, &err), 1);
	assert_int_equal(c.last_events, LOOP_OUT);
	assert_int_equal(loop_io_modify(w, LOOP_IN, &err), 0);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* interest dropped: silent again */
	assert_int_equal(c.calls, 1);
	assert_int_equal(loop_io_modify(w, LOOP_IN | 0x80, &err), -1); /* unknown bit refused */
	assert_int_equal(err.code, EINVAL);
	loop_free(l);
	close(sv[0]);
	close(sv[1]);
}

static void io_add_rejects_duplicate_fd(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int p[2];
	make_pipe(p);
	struct counter c = { 0 };
	assert_int_equal(loop_io_add(l, p[0], LOOP_IN, 0, count_io, &c, NULL, &err), 0);
	assert_int_equal(loop_io_add(l, p[0], LOOP_IN, 0, count_io, &c, NULL, &err), -1);
	assert_int_equal(err.code, EEXIST);
	assert_int_equal(loop_io_add(l, -1, LOOP_IN, 0, count_io, &c, NULL, &err), -1);
	assert_int_equal(err.code, EINVAL);
	loop_free(l);
	close(p[0]);
	close(p[1]);
}

/* ---- removal inside a batch ---- */

struct pair_ctx {
	struct loop_io *w[2];
	int fd[2][2]; /* two pipes */
	int calls[2];
	int replacement_calls;
	struct loop_io *replacement;
	int replacement_pipe[2];
};

static void replacement_cb(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	struct pair_ctx *ctx = data;
	ctx->replacement_calls++;
}

static void remove_other_cb(struct loop *l, struct loop_io *w, int fd, unsigned events, void *data)
{
	struct pair_ctx *ctx = data;
	int me = w == ctx->w[0] ? 0 : 1, other = 1 - me;
	ctx->calls[me]++;
	/* remove the other watch, whose event is pending in this same batch,
	 * close its fd and reuse the fd number for a fresh watch */
	loop_io_remove(ctx->w[other]);
	close(ctx->fd[other][0]);
	ctx->fd[other][0] = -1;
	make_pipe(ctx->replacement_pipe);
	os_error err = { 0 };
	assert_int_equal(loop_io_add(l, ctx->replacement_pipe[0], LOOP_IN, 0, replacement_cb, ctx,
				     &ctx->replacement, &err),
			 0);
	loop_io_remove(w); /* and itself too */
}

static void io_remove_other_in_same_batch(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	struct pair_ctx ctx = { 0 };
	for (int i = 0; i < 2; i++) {
		make_pipe(ctx.fd[i]);
		assert_int_equal(write(ctx.fd[i][1], "x", 1), 1);
		assert_int_equal(loop_io_add(l, ctx.fd[i][0], LOOP_IN, 0, remove_other_cb, &ctx,
					     &ctx.w[i], &err),
				 0);
	}
	/* both are ready: one epoll batch holds both events */
	assert_int_equal(loop_run_once(l, 0, &err), 1);
	assert_int_equal(ctx.calls[0] + ctx.calls[1], 1); /* the removed one never ran */
	assert_int_equal(ctx.replacement_calls,
			 0); /* the stale event did not reach the new watch */
	/* positive control: the replacement watch works once it has data */
	assert_int_equal(write(ctx.replacement_pipe[1], "y", 1), 1);
	assert_int_equal(loop_run_once(l, 0, &err), 1);
	assert_int_equal(ctx.replacement_calls, 1);
	loop_free(l);
	for (int i = 0; i < 2; i++) {
		if (ctx.fd[i][0] >= 0)
			close(ctx.fd[i][0]);
		close(ctx.fd[i][1]);
	}
	close(ctx.replacement_pipe[0]);
	close(ctx.replacement_pipe[1]);
}

/* ---- timers ---- */

struct timer_log {
	int order[16];
	int n;
	struct loop_timer *victim;
};

struct timer_tag {
	struct timer_log *log;
	int id;
};

static void log_timer(struct loop *l, struct loop_timer *t, void *data)
{
	struct timer_tag *tag = data;
	if (tag->log->n < 16)
		tag->log->order[tag->log->n] = tag->id;
	tag->log->n++;
}

static void stop_timer(struct loop *l, struct loop_timer *t, void *data)
{
	loop_stop(l);
}

static void timers_fire_in_deadline_order(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	struct timer_log log = { 0 };
	struct timer_tag tags[4] = { { &log, 30 }, { &log, 10 }, { &log, 20 }, { &log, 11 } };
	assert_int_equal(loop_timer_add(l, 30, 0, log_timer, &tags[0], NULL, &err), 0);
	assert_int_equal(loop_timer_add(l, 10, 0, log_timer, &tags[1], NULL, &err), 0);
	assert_int_equal(loop_timer_add(l, 20, 0, log_timer, &tags[2], NULL, &err), 0);
	/* same delay as id 10 but armed later: its clock read is later, so it
	 * must fire after id 10 and before id 20 */
	assert_int_equal(loop_timer_add(l, 10, 0, log_timer, &tags[3], NULL, &err), 0);
	assert_int_equal(loop_timer_add(l, 40, 0, stop_timer, NULL, NULL, &err), 0);
	uint64_t start = loop_now_ms();
	assert_int_equal(loop_run(l, &err), 0);
	assert_true(loop_now_ms() - start >= 40); /* never early */
	assert_int_equal(log.n, 4);
	assert_int_equal(log.order[0], 10);
	assert_int_equal(log.order[1], 11);
	assert_int_equal(log.order[2], 20);
	assert_int_equal(log.order[3], 30);
	loop_free(l);
}

static void cancel_victim(struct loop *l, struct loop_timer *t, void *data)
{
	struct timer_tag *tag = data;
	log_timer(l, t, data);
	loop_timer_remove(tag->log->victim); /* due in the same pass */
}

static void timers_cancel_and_rearm(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	struct timer_log log = { 0 };
	struct timer_tag tags[4] = { { &log, 1 }, { &log, 2 }, { &log, 3 }, { &log, 4 } };
	struct loop_timer *cancelled, *pushed, *disarmed;
	assert_int_equal(loop_timer_add(l, 5, 0, log_timer, &tags[0], &cancelled, &err), 0);
	assert_int_equal(loop_timer_add(l, 5, 0, log_timer, &tags[1], NULL, &err), 0); /* control */
	assert_int_equal(loop_timer_add(l, 5, 0, log_timer, &tags[2], &pushed, &err), 0);
	assert_int_equal(loop_timer_add(l, 5, 0, log_timer, &tags[3], &disarmed, &err), 0);
	loop_timer_remove(cancelled);
	assert_int_equal(loop_timer_set(pushed, 60000, 0, &err), 0); /* idle timeout pushed away */
	loop_timer_disarm(disarmed);
	assert_false(loop_timer_armed(disarmed));
	assert_true(loop_timer_armed(pushed));
	assert_int_equal(loop_timer_add(l, 30, 0, stop_timer, NULL, NULL, &err), 0);
	assert_int_equal(loop_run(l, &err), 0);
	assert_int_equal(log.n, 1);
	assert_int_equal(log.order[0], 2);
	/* re-arming a disarmed timer works */
	assert_int_equal(loop_timer_set(disarmed, 1, 0, &err), 0);
	assert_int_equal(loop_timer_add(l, 20, 0, stop_timer, NULL, NULL, &err), 0);
	assert_int_equal(loop_run(l, &err), 0);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.order[1], 4);
	/* a timer cancelled by another one expiring in the same pass never runs */
	struct timer_log log2 = { 0 };
	struct timer_tag t2[2] = { { &log2, 7 }, { &log2, 8 } };
	assert_int_equal(loop_timer_add(l, 5, 0, cancel_victim, &t2[0], NULL, &err), 0);
	assert_int_equal(loop_timer_add(l, 5, 0, log_timer, &t2[1], &log2.victim, &err), 0);
	assert_int_equal(loop_timer_add(l, 20, 0, stop_timer, NULL, NULL, &err), 0);
	assert_int_equal(loop_run(l, &err), 0);
	assert_int_equal(log2.n, 1);
	assert_int_equal(log2.order[0], 7);
	loop_free(l);
}

static void periodic_stops_itself(struct loop *l, struct loop_timer *t, void *data)
{
	int *ticks = data;
	if (++*ticks == 3) {
		loop_timer_remove(t);
		loop_stop(l);
	}
}

static void timers_periodic_repeats_until_removed(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int ticks = 0;
	assert_int_equal(loop_timer_add(l, 1, 2, periodic_stops_itself, &ticks, NULL, &err), 0);
	assert_int_equal(loop_run(l, &err), 0);
	assert_int_equal(ticks, 3);
	assert_int_equal(loop_run_once(l, 20, &err), 0); /* removed: no fourth tick */
	assert_int_equal(ticks, 3);
	assert_int_equal(
		loop_timer_add(l, UINT64_MAX / 2, 0, periodic_stops_itself, &ticks, NULL, &err),
		-1); /* overflowing delay refused */
	assert_int_equal(err.code, EINVAL);
	loop_free(l);
}

static void rearm_zero(struct loop *l, struct loop_timer *t, void *data)
{
	int *n = data;
	(*n)++;
	os_error err = { 0 };
	assert_int_equal(loop_timer_set(t, 0, 0, &err), 0);
}

static void timers_zero_delay_rearm_does_not_starve(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int n = 0;
	assert_int_equal(loop_timer_add(l, 0, 0, rearm_zero, &n, NULL, &err), 0);
	for (int i = 0; i < 3; i++)
		assert_true(loop_run_once(l, 100, &err) >= 0); /* each returns: no endless pass */
	assert_true(n >= 1 && n <= 3);
	loop_free(l);
}

#define MANY_TIMERS 10000

/* Each timer's true deadline lies in [lo, hi]: the clock read inside
 * loop_timer_add happens between our two reads. Firing order is checked
 * against those bounds, so the check is exact and has no timing slack. */
struct many_ctx {
	uint64_t max_lo;
	int fired;
	int out_of_order, early, cancelled_fired;
	struct loop_timer *t[MANY_TIMERS];
	uint64_t lo[MANY_TIMERS], hi[MANY_TIMERS];
	struct timer_tag tag[MANY_TIMERS];
};

static struct many_ctx *many;

static void many_cb(struct loop *l, struct loop_timer *t, void *data)
{
	int id = ((struct timer_tag *)data)->id;
	if (many->max_lo > many->hi[id])
		many->out_of_order++; /* something due later fired before us */
	if (many->lo[id] > many->max_lo)
		many->max_lo = many->lo[id];
	if (loop_now_ns() < many->lo[id])
		many->early++;
	if (id % 2)
		many->cancelled_fired++;
	if (++many->fired == MANY_TIMERS / 2)
		loop_stop(l);
}

static void timers_ten_thousand(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	many = calloc(1, sizeof(*many));
	assert_non_null(many);
	srand(42);
	for (int i = 0; i < MANY_TIMERS; i++) {
		uint64_t delay_ms = (uint64_t)(rand() % 200);
		many->tag[i].id = i;
		many->lo[i] = loop_now_ns() + delay_ms * 1000000u;
		assert_int_equal(
			loop_timer_add(l, delay_ms, 0, many_cb, &many->tag[i], &many->t[i], &err),
			0);
		many->hi[i] = loop_now_ns() + delay_ms * 1000000u;
	}
	for (int i = 1; i < MANY_TIMERS; i += 2)
		loop_timer_remove(many->t[i]); /* removal from the middle of the heap */
	assert_int_equal(loop_run(l, &err), 0);
	assert_int_equal(many->fired, MANY_TIMERS / 2);
	assert_int_equal(many->out_of_order, 0);
	assert_int_equal(many->early, 0);
	assert_int_equal(many->cancelled_fired, 0);
	free(many);
	loop_free(l);
}

/* ---- signals ---- */

static void on_signal(struct loop *l, struct loop_signal *s, const struct signalfd_siginfo *info,
		      void *data)
{
	int *got = data;
	*got = (int)info->ssi_signo;
}

static void signal_delivered_through_loop(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int got = 0;
	struct loop_signal *s = NULL;
	assert_int_equal(loop_signal_add(l, SIGUSR1, on_signal, &got, &s, &err), 0);
	assert_int_equal(loop_signal_add(l, SIGUSR1, on_signal, &got, NULL, &err), -1);
	assert_int_equal(err.code, EEXIST); /* a second watcher would steal signals */
	assert_int_equal(loop_signal_add(l, SIGKILL, on_signal, &got, NULL, &err), -1);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* negative control: nothing raised */
	assert_int_equal(got, 0);
	assert_int_equal(raise(SIGUSR1), 0); /* blocked: the process survives */
	run_until(l, &got);
	assert_int_equal(got, SIGUSR1);
	/* removal restores the mask: SIGUSR1 was unblocked before */
	loop_signal_remove(s);
	sigset_t cur;
	assert_int_equal(sigprocmask(SIG_BLOCK, NULL, &cur), 0);
	assert_int_equal(sigismember(&cur, SIGUSR1), 0);
	/* and it can be watched again */
	assert_int_equal(loop_signal_add(l, SIGUSR1, on_signal, &got, NULL, &err), 0);
	loop_free(l);
	assert_int_equal(sigprocmask(SIG_BLOCK, NULL, &cur), 0);
	assert_int_equal(sigismember(&cur, SIGUSR1), 0);
}

/* ---- children ---- */

struct child_ctx {
	int done;
	struct loop_exit ex;
};

static void on_child(struct loop *l, struct loop_child *c, const struct loop_exit *ex, void *data)
{
	struct child_ctx *ctx = data;
	ctx->done = 1;
	ctx->ex = *ex;
	loop_child_remove(c); /* already removed: must be a harmless no-op */
}

static void child_exit_status_via_pidfd(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int go[2];
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char b;
		close(go[1]);
		/* wait for the parent to watch us, then exit 7 */
		if (read(go[0], &b, 1) < 0)
			_exit(99);
		_exit(7);
	}
	close(go[0]);
	struct child_ctx ctx = { 0 };
	assert_int_equal(loop_child_add(l, pid, on_child, &ctx, NULL, &err), 0);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* still running: no callback */
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	run_until(l, &ctx.done);
	assert_int_equal(ctx.ex.pid, pid);
	assert_int_equal(ctx.ex.code, CLD_EXITED);
	assert_int_equal(ctx.ex.status, 7);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1); /* the loop reaped it */
	assert_int_equal(errno, ECHILD);

	/* a killed child reports the signal */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	struct child_ctx killed = { 0 };
	assert_int_equal(loop_child_add(l, pid, on_child, &killed, NULL, &err), 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	run_until(l, &killed.done);
	assert_int_equal(killed.ex.code, CLD_KILLED);
	assert_int_equal(killed.ex.status, SIGKILL);
	/* a pid that is gone is refused */
	assert_int_equal(loop_child_add(l, pid, on_child, &killed, NULL, &err), -1);
	assert_int_equal(err.code, ESRCH);
	loop_free(l);
}

/* ---- deferred calls ---- */

struct defer_ctx {
	int order[8];
	int n;
	struct loop_defer *to_cancel;
};

static void defer_second(struct loop *l, void *data)
{
	struct defer_ctx *ctx = data;
	ctx->order[ctx->n++] = 2;
}

static void defer_never(struct loop *l, void *data)
{
	struct defer_ctx *ctx = data;
	ctx->order[ctx->n++] = 99;
}

static void defer_first(struct loop *l, void *data)
{
	struct defer_ctx *ctx = data;
	os_error err = { 0 };
	ctx->order[ctx->n++] = 1;
	assert_int_equal(loop_defer(l, defer_second, ctx, NULL, &err), 0);
	loop_defer_cancel(ctx->to_cancel); /* queued behind us in this same run */
}

static void deferred_run_next_iteration_in_order(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	struct defer_ctx ctx = { 0 };
	assert_int_equal(loop_defer(l, defer_first, &ctx, NULL, &err), 0);
	assert_int_equal(loop_defer(l, defer_never, &ctx, &ctx.to_cancel, &err), 0);
	/* blocking timeout, yet it returns at once: deferred work was pending */
	assert_int_equal(loop_run_once(l, -1, &err), 1);
	assert_int_equal(ctx.n, 1); /* the call deferred from a deferred call waits */
	assert_int_equal(loop_run_once(l, -1, &err), 1);
	assert_int_equal(ctx.n, 2);
	assert_int_equal(ctx.order[0], 1);
	assert_int_equal(ctx.order[1], 2);
	assert_int_equal(loop_run_once(l, 0, &err), 0); /* queue drained */
	/* pending deferred calls are freed with the loop (checked by ASan) */
	assert_int_equal(loop_defer(l, defer_never, &ctx, NULL, &err), 0);
	loop_free(l);
	assert_int_equal(ctx.n, 2);
}

static void reenter_cb(struct loop *l, void *data)
{
	int *rc = data;
	os_error err = { 0 };
	*rc = loop_run_once(l, 0, &err);
	if (*rc < 0 && err.code == EBUSY)
		*rc = -EBUSY;
	loop_stop(l);
}

static void run_is_not_reentrant(void **state)
{
	struct loop *l = new_loop();
	os_error err = { 0 };
	int rc = 0;
	assert_int_equal(loop_defer(l, reenter_cb, &rc, NULL, &err), 0);
	assert_int_equal(loop_run(l, &err), 0);
	assert_int_equal(rc, -EBUSY);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(io_level_fires_while_readable),
		cmocka_unit_test(io_edge_fires_once_per_change),
		cmocka_unit_test(io_write_interest_toggles),
		cmocka_unit_test(io_add_rejects_duplicate_fd),
		cmocka_unit_test(io_remove_other_in_same_batch),
		cmocka_unit_test(timers_fire_in_deadline_order),
		cmocka_unit_test(timers_cancel_and_rearm),
		cmocka_unit_test(timers_periodic_repeats_until_removed),
		cmocka_unit_test(timers_zero_delay_rearm_does_not_starve),
		cmocka_unit_test(timers_ten_thousand),
		cmocka_unit_test(signal_delivered_through_loop),
		cmocka_unit_test(child_exit_status_via_pidfd),
		cmocka_unit_test(deferred_run_next_iteration_in_order),
		cmocka_unit_test(run_is_not_reentrant),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
