#include "config.h"

#include "infertop/load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"

/* Far enough to never fire, near enough to stay inside int64 ns. */
#define LOAD_GAP_MAX_S 1e9

static void load_record_event(struct load *l, enum load_source src)
{
	struct load_event *e = &l->events[l->nevents % LOAD_EVENTS];
	e->t_ns = clock_now_ns();
	e->mode = l->mode;
	e->value = l->mode == LOAD_CLOSED ? (double)l->concurrency : l->rate;
	e->source = src;
	l->nevents++;
}

static void load_notify(struct load *l, enum load_change what)
{
	if (l->observer)
		l->observer(l->observer_ud, what, clock_now_ns());
}

bool load_exhausted(const struct load *l)
{
	return l->stopped || (l->limit && l->started >= l->limit);
}

static bool load_capped(const struct load *l)
{
	return l->cap_at && l->started >= l->cap_at;
}

static bool load_can_start(const struct load *l)
{
	return !l->paused && !l->held && !l->backing_off && !load_exhausted(l) && !load_capped(l);
}

static int load_start_one(struct load *l, int64_t t_intended)
{
	if (l->start(l->ud, t_intended) != 0)
		return -1;
	l->started++;
	return 0;
}

static bool load_under_cap(const struct load *l)
{
	return l->max_concurrency == 0 || l->in_flight(l->ud) < (uint64_t)l->max_concurrency;
}

static bool load_closed_wants(const struct load *l)
{
	return l->mode == LOAD_CLOSED && load_can_start(l) &&
	       l->in_flight(l->ud) < (uint64_t)l->concurrency;
}

static bool load_open_wants(const struct load *l)
{
	return l->mode == LOAD_OPEN && l->pending_len > 0 && load_can_start(l) && load_under_cap(l);
}

/* A zero timer, not an idle watcher: idle watchers wait for a quiet loop,
 * which a loaded one never is, while a due timer runs on the very next
 * iteration, after that iteration's I/O. */
static void load_ramp_later(struct load *l)
{
	if (!ev_is_active(&l->ramp_timer) && (load_closed_wants(l) || load_open_wants(l))) {
		ev_timer_set(&l->ramp_timer, 0., 0.);
		ev_timer_start(l->loop, &l->ramp_timer);
	}
}

/* Starts left in this loop iteration. The batch is per iteration, not
 * per call: during a ramp every finished request refills, and a hundred
 * of them finishing in one iteration would each start a batch. ev_now()
 * moves once per iteration, which tells iterations apart. */
static int load_budget(struct load *l)
{
	ev_tstamp now = ev_now(l->loop);
	if (now != l->batch_at) {
		l->batch_at = now;
		l->batch_left = LOAD_START_BATCH;
	}
	return l->batch_left;
}

static void load_fill_closed(struct load *l)
{
	while (load_budget(l) > 0 && load_closed_wants(l)) {
		l->batch_left--;
		if (load_start_one(l, 0) != 0)
			return;
	}
	load_ramp_later(l);
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

static bool load_backlog_full(const struct load *l)
{
	return l->schedule && l->pending_len >= LOAD_SCHEDULE_BACKLOG;
}

static void load_schedule(struct load *l);

static int load_start_pending(struct load *l)
{
	int64_t t = l->pending[l->pending_head];
	if (load_start_one(l, t) != 0)
		return -1;
	l->pending_head = (l->pending_head + 1) % l->pending_cap;
	l->pending_len--;
	/* A schedule that waited for room goes on. */
	if (l->schedule && !ev_is_active(&l->arrival_timer))
		load_schedule(l);
	return 0;
}

static void load_drain_pending(struct load *l)
{
	while (load_budget(l) > 0 && load_open_wants(l)) {
		l->batch_left--;
		if (load_start_pending(l) != 0)
			return;
	}
	load_ramp_later(l);
}

static void load_schedule(struct load *l)
{
	ev_timer_stop(l->loop, &l->arrival_timer);
	/* Arrivals go on during a backoff: they queue. */
	if (l->mode != LOAD_OPEN || l->paused || l->held || load_exhausted(l) || l->schedule_done ||
	    load_backlog_full(l) || load_capped(l))
		return;
	int64_t now = clock_now_ns();
	double delay = (double)(l->next_intended - now) / 1e9;
	ev_timer_set(&l->arrival_timer, delay > 0 ? delay : 0., 0.);
	ev_timer_start(l->loop, &l->arrival_timer);
}

/* Box-Muller; the second value of the pair is dropped (one per arrival at
 * most, so the cost does not matter). */
static double normal01(struct rng *r)
{
	double u1 = rng_unit(r), u2 = rng_unit(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Gamma(k, 1): Marsaglia and Tsang's squeeze for k >= 1; for k < 1 the
 * boost Gamma(k) = Gamma(k + 1) * U^(1/k). */
static double gamma01(double k, struct rng *r)
{
	double boost = 1.0;
	if (k < 1.0) {
		boost = pow(rng_unit(r), 1.0 / k);
		k += 1.0;
	}
	double d = k - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x, v;
		do {
			x = normal01(r);
			v = 1.0 + c * x;
		} while (v <= 0);
		v = v * v * v;
		double u = rng_unit(r);
		if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v * boost;
	}
}

double load_arrival_gap(enum load_arrival a, double shape, double rate, struct rng *r)
{
	if (!(rate >= LOAD_RATE_MIN))
		rate = LOAD_RATE_MIN;
	double g;
	switch (a) {
	case LOAD_CONSTANT:
		g = 1.0 / rate;
		break;
	case LOAD_GAMMA:
		if (!(shape > 0))
			shape = 1.0;
		/* Scale 1/(k rate) keeps the mean at 1/rate. */
		g = gamma01(shape, r) / (shape * rate);
		break;
	case LOAD_POISSON:
	default:
		g = rng_exp(r, 1.0 / rate);
		break;
	}
	return g < LOAD_GAP_MAX_S ? g : LOAD_GAP_MAX_S;
}

/* The schedule has no more: the load ends once the arrivals in hand
 * (started or queued) are all started. */
static void load_schedule_end(struct load *l)
{
	l->schedule_done = true;
	uint64_t all = l->started + l->pending_len;
	if (!l->limit || all < l->limit)
		l->limit = all;
	if (all == 0)
		l->stopped = true;
}

static void load_next_arrival(struct load *l)
{
	if (l->schedule) {
		int64_t at;
		if (l->schedule_done || !l->schedule(l->schedule_ud, &at))
			load_schedule_end(l);
		else
			l->next_intended = l->schedule_t0 + at;
		return;
	}
	l->next_intended += (int64_t)(load_arrival_gap(l->arrival, l->shape, l->rate, &l->rng) * 1e9);
}

static void load_on_arrival(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct load *l = w->data;
	int64_t now = clock_now_ns();
	int budget = LOAD_START_BATCH;
	/* The loop may wake late; every arrival already due starts with its
	 * own intended time, so lateness shows up as queue time. Past one
	 * batch they queue and start on the next iterations. */
	while (l->mode == LOAD_OPEN && !l->paused && !l->held && !load_exhausted(l) && !l->schedule_done &&
	       !load_backlog_full(l) && !load_capped(l) && l->next_intended <= now) {
		if (budget > 0 && !l->backing_off && l->pending_len == 0 && load_under_cap(l)) {
			budget--;
			if (load_start_one(l, l->next_intended) != 0 && pending_push(l, l->next_intended) != 0)
				l->dropped++;
		} else if (pending_push(l, l->next_intended) != 0) {
			l->dropped++;
		}
		load_next_arrival(l);
	}
	load_ramp_later(l);
	load_schedule(l);
}

static void load_on_ramp(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct load *l = w->data;
	if (l->mode == LOAD_CLOSED)
		load_fill_closed(l);
	else
		load_drain_pending(l);
}

void load_init(struct load *l, struct ev_loop *loop, uint64_t seed,
	       load_start_fn start, load_in_flight_fn in_flight, void *ud)
{
	memset(l, 0, sizeof *l);
	l->loop = loop;
	l->start = start;
	l->in_flight = in_flight;
	l->ud = ud;
	l->arrival = LOAD_POISSON;
	l->shape = 1.0;
	rng_seed(&l->rng, seed);
	ev_timer_init(&l->arrival_timer, load_on_arrival, 0., 0.);
	l->arrival_timer.data = l;
	ev_timer_init(&l->ramp_timer, load_on_ramp, 0., 0.);
	l->ramp_timer.data = l;
}

void load_free(struct load *l)
{
	ev_timer_stop(l->loop, &l->arrival_timer);
	ev_timer_stop(l->loop, &l->ramp_timer);
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

static void load_apply_concurrency(struct load *l, long n, enum load_source src, bool mark)
{
	if (l->schedule)
		return;
	if (n < 0)
		n = 0;
	bool was_open = l->mode == LOAD_OPEN;
	l->mode = LOAD_CLOSED;
	l->concurrency = n;
	if (was_open) {
		ev_timer_stop(l->loop, &l->arrival_timer);
		l->pending_len = 0;
	}
	if (mark)
		load_record_event(l, src);
}

void load_set_concurrency(struct load *l, long n)
{
	load_apply_concurrency(l, n, LOAD_SRC_USER, true);
	load_notify(l, LOAD_CHANGE_TARGET);
	load_fill_closed(l);
}

void load_plan_concurrency(struct load *l, long n, bool mark)
{
	load_apply_concurrency(l, n, LOAD_SRC_PLAN, mark);
	load_fill_closed(l);
}

static void load_apply_rate(struct load *l, double rate, enum load_source src, bool mark)
{
	if (l->schedule)
		return;
	if (rate < LOAD_RATE_MIN)
		rate = LOAD_RATE_MIN;
	int64_t now = clock_now_ns();
	bool was_open = l->mode == LOAD_OPEN;
	double old = l->rate;
	l->mode = LOAD_OPEN;
	l->rate = rate;
	if (!was_open || !(old > 0)) {
		l->next_intended = now; /* a fresh open loop starts at once */
	} else if (l->next_intended > now) {
		/* The time left scales with the mean gap. For a Poisson process
		 * the rescaled remainder is again exponential at the new rate
		 * (memorylessness), so this is exact, and unlike a fresh draw
		 * it lets a slow constant process survive frequent updates. */
		double left = (double)(l->next_intended - now) * (old / rate);
		if (left > LOAD_GAP_MAX_S * 1e9)
			left = LOAD_GAP_MAX_S * 1e9;
		l->next_intended = now + (int64_t)left;
	}
	if (mark)
		load_record_event(l, src);
}

void load_set_rate(struct load *l, double rate)
{
	if (!(rate > 0))
		return;
	load_apply_rate(l, rate, LOAD_SRC_USER, true);
	load_notify(l, LOAD_CHANGE_TARGET);
	load_schedule(l);
}

void load_plan_rate(struct load *l, double rate, bool mark)
{
	if (!(rate >= 0))
		return;
	load_apply_rate(l, rate, LOAD_SRC_PLAN, mark);
	load_schedule(l);
}

static void load_resume_open(struct load *l)
{
	int64_t now = clock_now_ns();
	if (l->next_intended < now) {
		/* A fixed schedule resumes where it stopped, shifted by the
		 * pause, rather than sending the pause's arrivals in a burst. */
		if (l->schedule)
			l->schedule_t0 += now - l->next_intended;
		l->next_intended = now; /* no burst of arrivals "owed" for the pause */
	}
	load_drain_pending(l);
	load_schedule(l);
}

void load_pause(struct load *l, bool paused)
{
	bool changed = l->paused != paused;
	l->paused = paused;
	if (changed)
		load_notify(l, paused ? LOAD_CHANGE_PAUSE : LOAD_CHANGE_UNPAUSE);
	if (paused) {
		ev_timer_stop(l->loop, &l->arrival_timer);
		return;
	}
	if (l->mode == LOAD_CLOSED)
		load_fill_closed(l);
	else
		load_resume_open(l);
}

uint32_t load_plan_hold(struct load *l, bool hold)
{
	uint32_t dropped = 0;
	l->held = hold;
	if (hold) {
		ev_timer_stop(l->loop, &l->arrival_timer);
		dropped = l->pending_len;
		l->pending_len = 0;
		return dropped;
	}
	if (l->mode == LOAD_CLOSED) {
		load_fill_closed(l);
	} else {
		/* A new step: its arrivals start now, not where the old
		 * process left off. */
		l->next_intended = clock_now_ns();
		load_resume_open(l);
	}
	return 0;
}

void load_plan_cap(struct load *l, uint64_t n)
{
	l->cap_at = n ? l->started + n : 0;
}

void load_stop(struct load *l)
{
	l->stopped = true;
	l->pending_len = 0;
	ev_timer_stop(l->loop, &l->arrival_timer);
	ev_timer_stop(l->loop, &l->ramp_timer);
}

void load_backoff(struct load *l, bool on)
{
	l->backing_off = on;
	if (!on)
		load_on_done(l);
}

/* A finished request makes room for one: its user's next request
 * (closed loop) or the oldest queued arrival (open loop) starts at once,
 * outside the ramp's batch, so a steady load never waits an iteration.
 * Growth beyond that (a ramp still under way) goes on in batches. */
void load_on_done(struct load *l)
{
	if (l->mode == LOAD_CLOSED) {
		if (load_closed_wants(l) && load_start_one(l, 0) != 0)
			return;
	} else if (load_open_wants(l) && load_start_pending(l) != 0) {
		return;
	}
	load_ramp_later(l);
}

uint32_t load_pending(const struct load *l)
{
	return l->pending_len;
}

void load_set_arrival(struct load *l, enum load_arrival a, double shape)
{
	l->arrival = a;
	l->shape = shape > 0 ? shape : 1.0;
}

static const char *const arrival_names[LOAD_ARRIVAL_N] = {
	[LOAD_POISSON] = "poisson", [LOAD_CONSTANT] = "constant", [LOAD_GAMMA] = "gamma"
};

int load_arrival_parse(const char *name, enum load_arrival *out)
{
	if (!name) {
		*out = LOAD_POISSON;
		return 0;
	}
	for (int i = 0; i < LOAD_ARRIVAL_N; i++) {
		if (strcmp(name, arrival_names[i]) == 0) {
			*out = (enum load_arrival)i;
			return 0;
		}
	}
	return -1;
}

const char *load_arrival_name(enum load_arrival a)
{
	return (int)a >= 0 && a < LOAD_ARRIVAL_N ? arrival_names[a] : arrival_names[LOAD_POISSON];
}

void load_set_schedule(struct load *l, load_schedule_fn fn, void *ud)
{
	l->schedule = fn;
	l->schedule_ud = ud;
	l->schedule_done = false;
	l->mode = LOAD_OPEN;
	l->schedule_t0 = clock_now_ns();
	load_next_arrival(l);
	load_record_event(l, LOAD_SRC_USER);
	load_schedule(l);
}

void load_set_observer(struct load *l, load_observer_fn fn, void *ud)
{
	l->observer = fn;
	l->observer_ud = ud;
}
