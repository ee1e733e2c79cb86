#include "config.h"

#include "sim_timer.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "infertop/clock.h"

static void heap_set(struct sim_timers *q, size_t i, struct sim_tmr *t)
{
	q->heap[i] = t;
	t->slot = i + 1;
}

static void sift_up(struct sim_timers *q, size_t i)
{
	struct sim_tmr *t = q->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (q->heap[p]->at <= t->at)
			break;
		heap_set(q, i, q->heap[p]);
		i = p;
	}
	heap_set(q, i, t);
}

static void sift_down(struct sim_timers *q, size_t i)
{
	struct sim_tmr *t = q->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && q->heap[c + 1]->at < q->heap[c]->at)
			c++;
		if (t->at <= q->heap[c]->at)
			break;
		heap_set(q, i, q->heap[c]);
		i = c;
	}
	heap_set(q, i, t);
}

/* The timerfd always holds the earliest deadline; reprogramming only when it
 * changes keeps the syscalls to one per batch in the steady state. */
static void program(struct sim_timers *q)
{
	if (q->in_batch)
		return;
	int64_t want = q->n ? q->heap[0]->at : INT64_MAX;
	if (want == q->programmed)
		return;
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (want != INT64_MAX) {
		/* An all-zero value would disarm the timer instead. */
		int64_t at = want > 0 ? want : 1;
		its.it_value.tv_sec = (time_t)(at / CLOCK_NS_PER_S);
		its.it_value.tv_nsec = (long)(at % CLOCK_NS_PER_S);
	}
	if (timerfd_settime(q->fd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		q->programmed = want;
}

static void on_timerfd(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct sim_timers *q = w->data;
	uint64_t ticks;
	while (read(q->fd, &ticks, sizeof ticks) < 0 && errno == EINTR)
		;
	/* Whatever the timerfd held has now fired. */
	q->programmed = INT64_MAX;
	int64_t now = clock_now_ns();
	q->in_batch = 1;
	while (q->n && q->heap[0]->at <= now) {
		struct sim_tmr *t = q->heap[0];
		sim_timer_stop(q, t);
		t->fn(t, now);
	}
	q->in_batch = 0;
	program(q);
	if (q->after)
		q->after(q->ud);
}

int sim_timers_init(struct sim_timers *q, struct ev_loop *loop, void (*after)(void *), void *ud)
{
	q->loop = loop;
	q->heap = NULL;
	q->n = q->cap = 0;
	q->programmed = INT64_MAX;
	q->in_batch = 0;
	q->after = after;
	q->ud = ud;
	q->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (q->fd < 0)
		return -1;
	ev_io_init(&q->io, on_timerfd, q->fd, EV_READ);
	q->io.data = q;
	ev_io_start(loop, &q->io);
	return 0;
}

void sim_timers_fini(struct sim_timers *q)
{
	if (q->fd >= 0) {
		ev_io_stop(q->loop, &q->io);
		close(q->fd);
		q->fd = -1;
	}
	for (size_t i = 0; i < q->n; i++)
		q->heap[i]->slot = 0;
	free(q->heap);
	q->heap = NULL;
	q->n = q->cap = 0;
}

int sim_timers_reserve(struct sim_timers *q, size_t n)
{
	if (n <= q->cap)
		return 0;
	size_t cap = q->cap ? q->cap : 64;
	while (cap < n)
		cap *= 2;
	struct sim_tmr **h = realloc(q->heap, cap * sizeof *h);
	if (!h)
		return -1;
	q->heap = h;
	q->cap = cap;
	return 0;
}

int sim_timer_start(struct sim_timers *q, struct sim_tmr *t, int64_t at)
{
	if (t->slot) {
		int64_t old = t->at;
		t->at = at;
		if (at < old)
			sift_up(q, t->slot - 1);
		else
			sift_down(q, t->slot - 1);
		program(q);
		return 0;
	}
	if (sim_timers_reserve(q, q->n + 1) != 0)
		return -1;
	t->at = at;
	heap_set(q, q->n, t);
	q->n++;
	sift_up(q, q->n - 1);
	program(q);
	return 0;
}

void sim_timer_stop(struct sim_timers *q, struct sim_tmr *t)
{
	if (!t->slot)
		return;
	size_t i = t->slot - 1;
	t->slot = 0;
	q->n--;
	if (i == q->n)
		return;
	heap_set(q, i, q->heap[q->n]);
	if (i > 0 && q->heap[i]->at < q->heap[(i - 1) / 2]->at)
		sift_up(q, i);
	else
		sift_down(q, i);
}
