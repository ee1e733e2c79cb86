#ifndef INFERTOP_SIM_TIMER_H
#define INFERTOP_SIM_TIMER_H

/* Nanosecond timers for the simulated server: a binary min-heap of
 * deadlines behind one absolute CLOCK_MONOTONIC timerfd watched by libev.
 * libev's own timers wake through epoll_wait's millisecond timeout, which
 * would make every token up to 1 ms late; a timerfd fires on the kernel's
 * high-resolution timer instead. Starting, moving or stopping a timer is
 * O(log n) in the number of armed timers. */

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

struct sim_tmr;
typedef void (*sim_tmr_fn)(struct sim_tmr *t, int64_t now_ns);

struct sim_tmr {
	int64_t at;		/* deadline, CLOCK_MONOTONIC ns */
	size_t slot;		/* heap index + 1; 0 when not armed */
	sim_tmr_fn fn;
};

struct sim_timers {
	struct ev_loop *loop;
	ev_io io;
	int fd;
	struct sim_tmr **heap;
	size_t n, cap;
	int64_t programmed;	/* deadline the timerfd holds; INT64_MAX when disarmed */
	int in_batch;		/* expiring: reprogram once at the end */
	/* Called once after each batch of expired timers, so their effects
	 * (resumed connections) are flushed together. */
	void (*after)(void *ud);
	void *ud;
};

int sim_timers_init(struct sim_timers *q, struct ev_loop *loop, void (*after)(void *), void *ud);
void sim_timers_fini(struct sim_timers *q);

static inline void sim_tmr_init(struct sim_tmr *t, sim_tmr_fn fn)
{
	t->at = 0;
	t->slot = 0;
	t->fn = fn;
}

static inline int sim_tmr_armed(const struct sim_tmr *t)
{
	return t->slot != 0;
}

/* Makes room for n armed timers, so that starting them cannot fail. */
int sim_timers_reserve(struct sim_timers *q, size_t n);

/* Arms (or moves) t to fire at `at`; a deadline in the past fires on the
 * next loop iteration. Returns -1 only when the heap cannot grow. */
int sim_timer_start(struct sim_timers *q, struct sim_tmr *t, int64_t at);
void sim_timer_stop(struct sim_timers *q, struct sim_tmr *t);

#endif
