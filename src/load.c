#include "config.h"

#include "infertop/load.h"

#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"

static void load_record_event(struct load *l)
{
	struct load_event *e = &l->events[l->nevents % LOAD_EVENTS];
	e->t_ns = clock_now_ns();
	e->mode = l->mode;
	e->value = l->mode == LOAD_CLOSED ? (double)l->concurrency : l->rate;
	l->nevents++;
}

bool load_exhausted(const struct load *l)
{
	return l->stopped || (l->limit && l->started >= l->limit);
}

static bool load_can_start(const struct load *l)
{
	return !l->paused && !load_exhausted(l);
}

static int load_start_one(struct load *l, int64_t t_intended)
{
	if (l->start(l->ud, t_intended) != 0)
		return -1;
	l->started++;
	return 0;
}

static void load_fill_closed(struct load *l)
{
	while (load_can_start(l) && l->in_flight(l->ud) < (uint64_t)l->concurrency) {
		if (load_start_one(l, 0) != 0)
			break;
	}
}

static bool load_under_cap(const struct load *l)
{
	return l->max_concurrency == 0 || l->in_flight(l->ud) < (uint64_t)l->max_concurrency;
}

static int pending_push(struct load *l, int64_t t)
{
	if (l->pending_len == l->pending_cap) {
		if (l->pending_cap >= LOAD_PENDING_MAX)
			return -1;
		uint32_t cap = l->pending_cap ? l->pending_cap * 2 : 1024;
		int64_t *n = malloc(cap * sizeof *n);
		if (!n)
			return -1;
		for (uint32_t i = 0; i < l->pending_len; i++)
			n[i] = l->pending[(l->pending_head + i) % l->pending_cap];
		free(l->pending);
		l->pending = n;
		l->pending_cap = cap;
		l->pending_head = 0;
	}
	l->pending[(l->pending_head + l->pending_len) % l->pending_cap] = t;
	l->pending_len++;
	return 0;
}

static void load_drain_pending(struct load *l)
{
	while (l->pending_len > 0 && load_can_start(l) && load_under_cap(l)) {
		int64_t t = l->pending[l->pending_head];
		if (load_start_one(l, t) != 0)
			break;
		l->pending_head = (l->pending_head + 1) % l->pending_cap;
		l->pending_len--;
	}
}

static void load_schedule(struct load *l)
{
	ev_timer_stop(l->loop, &l->arrival);
	if (l->mode != LOAD_OPEN || !load_can_start(l))
		return;
	int64_t now = clock_now_ns();
	double delay = (double)(l->next_intended - now) / 1e9;
	ev_timer_set(&l->arrival, delay > 0 ? delay : 0., 0.);
	ev_timer_start(l->loop, &l->arrival);
}

static void load_next_arrival(struct load *l)
{
	l->next_intended += (int64_t)(rng_exp(&l->rng, 1.0 / l->rate) * 1e9);
}

static void load_on_arrival(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct load *l = w->data;
	int64_t now = clock_now_ns();
	/* The loop may wake late; every arrival already due starts now with
	 * its own intended time, so lateness shows up as queue time. */
	while (l->mode == LOAD_OPEN && load_can_start(l) && l->next_intended <= now) {
		if (l->pending_len == 0 && load_under_cap(l)) {
			if (load_start_one(l, l->next_intended) != 0 && pending_push(l, l->next_intended) != 0)
				l->dropped++;
		} else if (pending_push(l, l->next_intended) != 0) {
			l->dropped++;
		}
		load_next_arrival(l);
	}
	load_schedule(l);
}

void load_init(struct load *l, struct ev_loop *loop, uint64_t seed,
	       load_start_fn start, load_in_flight_fn in_flight, void *ud)
{
	memset(l, 0, sizeof *l);
	l->loop = loop;
	l->start = start;
	l->in_flight = in_flight;
	l->ud = ud;
	rng_seed(&l->rng, seed);
	ev_timer_init(&l->arrival, load_on_arrival, 0., 0.);
	l->arrival.data = l;
}

void load_free(struct load *l)
{
	ev_timer_stop(l->loop, &l->arrival);
	free(l->pending);
	l->pending = NULL;
	l->pending_cap = l->pending_len = 0;
}

void load_set_limit(struct load *l, uint64_t requests)
{
	l->limit = requests;
}

void load_set_max_concurrency(struct load *l, long n)
{
	l->max_concurrency = n > 0 ? n : 0;
	load_drain_pending(l);
}

void load_set_concurrency(struct load *l, long n)
{
	if (n < 0)
		n = 0;
	bool was_open = l->mode == LOAD_OPEN;
	l->mode = LOAD_CLOSED;
	l->concurrency = n;
	if (was_open) {
		ev_timer_stop(l->loop, &l->arrival);
		l->pending_len = 0;
	}
	load_record_event(l);
	load_fill_closed(l);
}

void load_set_rate(struct load *l, double rate)
{
	if (!(rate > 0))
		return;
	int64_t now = clock_now_ns();
	bool was_open = l->mode == LOAD_OPEN;
	l->mode = LOAD_OPEN;
	l->rate = rate;
	/* A Poisson process is memoryless: drawing the next gap afresh from
	 * now at the new rate is exact. A fresh open loop starts at once. */
	l->next_intended = now;
	if (was_open)
		load_next_arrival(l);
	load_record_event(l);
	load_schedule(l);
}

void load_pause(struct load *l, bool paused)
{
	l->paused = paused;
	if (paused) {
		ev_timer_stop(l->loop, &l->arrival);
		return;
	}
	if (l->mode == LOAD_CLOSED) {
		load_fill_closed(l);
	} else {
		int64_t now = clock_now_ns();
		if (l->next_intended < now)
			l->next_intended = now; /* no burst of arrivals "owed" for the pause */
		load_drain_pending(l);
		load_schedule(l);
	}
}

void load_stop(struct load *l)
{
	l->stopped = true;
	l->pending_len = 0;
	ev_timer_stop(l->loop, &l->arrival);
}

void load_on_done(struct load *l)
{
	if (l->mode == LOAD_CLOSED)
		load_fill_closed(l);
	else
		load_drain_pending(l);
}

uint32_t load_pending(const struct load *l)
{
	return l->pending_len;
}
