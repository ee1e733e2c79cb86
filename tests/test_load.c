/* The load controller on a real libev loop: a large target is reached in
 * batches spread over loop iterations, never in one stalling burst. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "enginefix.h"
#include "infertop/load.h"
#include "infertop/stats.h"

/* A stand-in for the engine: starting a request only counts it. The
 * prepare watcher runs once per loop iteration, so the most starts seen
 * between two of its calls is the largest burst the loop had to swallow. */
struct fake {
	struct load load;
	uint64_t in_flight;
	uint64_t burst, max_burst;
	uint64_t iterations;
	ev_prepare tick;
};

static int fake_start(void *ud, int64_t t_intended)
{
	(void)t_intended;
	struct fake *f = ud;
	f->in_flight++;
	if (++f->burst > f->max_burst)
		f->max_burst = f->burst;
	return 0;
}

static uint64_t fake_in_flight(void *ud)
{
	return ((struct fake *)ud)->in_flight;
}

static void fake_on_tick(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	struct fake *f = w->data;
	f->burst = 0;
	f->iterations++;
}

static void fake_init(struct fake *f, struct ev_loop *loop)
{
	memset(f, 0, sizeof *f);
	load_init(&f->load, loop, 1, fake_start, fake_in_flight, f);
	ev_prepare_init(&f->tick, fake_on_tick);
	f->tick.data = f;
	ev_prepare_start(loop, &f->tick);
}

static void fake_free(struct fake *f, struct ev_loop *loop)
{
	ev_prepare_stop(loop, &f->tick);
	load_free(&f->load);
}

/* Runs the loop until the fake holds `want` requests; the bound on
 * iterations keeps a regression from spinning forever. */
static void fake_run_until(struct fake *f, struct ev_loop *loop, uint64_t want)
{
	for (int i = 0; i < 100000 && f->in_flight < want; i++)
		ev_run(loop, EVRUN_NOWAIT);
}

static void test_closed_ramp_in_batches(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct fake f;
	fake_init(&f, loop);
	const long users = 15000;

	load_set_concurrency(&f.load, users);
	/* The call itself starts one batch, not the whole population. */
	assert_int_equal(f.in_flight, LOAD_START_BATCH);

	fake_run_until(&f, loop, (uint64_t)users);
	assert_int_equal(f.in_flight, users);
	assert_int_equal(f.load.started, users);
	assert_true(f.max_burst <= LOAD_START_BATCH);
	/* Spread over the iterations it needs, with the loop's own work
	 * (here the prepare watcher) run between them. */
	assert_true(f.iterations >= (uint64_t)users / LOAD_START_BATCH);

	/* Reached: nothing more starts, and no watcher is left spinning. */
	ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(f.load.started, users);
	assert_false(ev_is_active(&f.load.ramp_timer));
	fake_free(&f, loop);
	ev_loop_destroy(loop);
}

/* Requests that finish during a ramp are replaced one for one, and the
 * ramp's growth stays one batch per iteration: a hundred finishing in one
 * iteration must not start a hundred batches. */
static void test_closed_ramp_refills_one_for_one(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct fake f;
	fake_init(&f, loop);
	load_set_concurrency(&f.load, 15000);
	assert_int_equal(f.in_flight, LOAD_START_BATCH);
	/* The same iteration: 100 of them finish, each telling the load. */
	for (int i = 0; i < 100; i++) {
		f.in_flight--;
		load_on_done(&f.load);
	}
	assert_int_equal(f.in_flight, LOAD_START_BATCH);
	assert_int_equal(f.load.started, LOAD_START_BATCH + 100);
	/* The next iterations carry on, a batch each. */
	f.max_burst = 0;
	fake_run_until(&f, loop, 15000);
	assert_int_equal(f.in_flight, 15000);
	assert_true(f.max_burst <= LOAD_START_BATCH);
	fake_free(&f, loop);
	ev_loop_destroy(loop);
}

static void test_closed_ramp_stops_with_the_run(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct fake f;
	fake_init(&f, loop);

	load_set_concurrency(&f.load, 10000);
	ev_run(loop, EVRUN_NOWAIT);
	uint64_t at_stop = f.load.started;
	assert_true(at_stop < 10000);
	load_stop(&f.load);
	for (int i = 0; i < 10; i++)
		ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(f.load.started, at_stop);

	fake_free(&f, loop);
	ev_loop_destroy(loop);
}

static void test_closed_ramp_waits_for_pause(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct fake f;
	fake_init(&f, loop);

	load_set_concurrency(&f.load, 5000);
	load_pause(&f.load, true);
	for (int i = 0; i < 10; i++)
		ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(f.load.started, LOAD_START_BATCH);
	load_pause(&f.load, false);
	fake_run_until(&f, loop, 5000);
	assert_int_equal(f.load.started, 5000);
	assert_true(f.max_burst <= LOAD_START_BATCH);

	fake_free(&f, loop);
	ev_loop_destroy(loop);
}

static void on_enough(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ONE);
}

/* Open loop: arrivals queued behind a concurrency cap are released in
 * batches when the cap is lifted, keeping their order and count. */
static void test_open_queue_drains_in_batches(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct fake f;
	fake_init(&f, loop);

	load_set_arrival(&f.load, LOAD_CONSTANT, 1.0);
	load_set_max_concurrency(&f.load, 1);
	load_set_rate(&f.load, 1e6);
	ev_timer enough;
	ev_timer_init(&enough, on_enough, 0.02, 0.);
	ev_timer_start(loop, &enough);
	ev_run(loop, 0);
	ev_timer_stop(loop, &enough);
	uint32_t queued = load_pending(&f.load);
	assert_true(queued > 4 * LOAD_START_BATCH);
	assert_int_equal(f.in_flight, 1);

	/* The limit ends the run once the queue has gone: later arrivals
	 * then start nothing, so only the queue is measured. */
	uint64_t want = f.load.started + queued;
	load_set_limit(&f.load, want);
	f.max_burst = f.burst = 0;
	load_set_max_concurrency(&f.load, 0);
	assert_int_equal(f.in_flight, 1 + LOAD_START_BATCH);
	fake_run_until(&f, loop, want);
	assert_int_equal(f.in_flight, want);
	assert_int_equal(f.load.started, want);
	assert_true(f.max_burst <= LOAD_START_BATCH);

	fake_free(&f, loop);
	ev_loop_destroy(loop);
}

/* A fixed schedule (--trace): arrivals at the times it gives, each
 * with its own intended time, in order, and nothing once it ends. */
struct sched {
	struct fake f;
	int64_t gap_ns;         /* between arrivals */
	uint64_t n;             /* arrivals it has */
	uint64_t calls;
	int64_t intended[64];
	uint64_t nintended;
};

static bool sched_next(void *ud, int64_t *at)
{
	struct sched *s = ud;
	if (s->calls >= s->n)
		return false;
	*at = (int64_t)s->calls++ * s->gap_ns;
	return true;
}

static int sched_start(void *ud, int64_t t_intended)
{
	struct sched *s = ud;
	if (s->nintended < 64)
		s->intended[s->nintended++] = t_intended;
	s->f.in_flight++;
	return 0;
}

static uint64_t sched_in_flight(void *ud)
{
	return ((struct sched *)ud)->f.in_flight;
}

static void test_schedule_times(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sched s = {.gap_ns = 2000000, .n = 20};
	load_init(&s.f.load, loop, 1, sched_start, sched_in_flight, &s);
	load_set_schedule(&s.f.load, sched_next, &s);
	int64_t t0 = s.f.load.schedule_t0;
	/* The plan's -c / -r are not the load any more. */
	load_set_concurrency(&s.f.load, 5);
	load_set_rate(&s.f.load, 1000);
	assert_int_equal(s.f.in_flight, 0);
	for (int i = 0; i < 100000 && !load_exhausted(&s.f.load); i++)
		ev_run(loop, EVRUN_ONCE);
	assert_true(load_exhausted(&s.f.load));
	assert_int_equal(s.f.load.started, 20);
	assert_int_equal(s.nintended, 20);
	for (uint64_t i = 0; i < 20; i++)
		assert_int_equal(s.intended[i], t0 + (int64_t)i * s.gap_ns);
	assert_false(ev_is_active(&s.f.load.arrival_timer));
	load_free(&s.f.load);
	ev_loop_destroy(loop);
}

/* Behind a cap the schedule's backlog is bounded: the schedule itself
 * waits (so a trace is not read ahead without end) and goes on, in
 * order, as room is made; nothing is dropped. */
static void test_schedule_backlog(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sched *s = calloc(1, sizeof *s);
	assert_non_null(s);
	s->n = LOAD_SCHEDULE_BACKLOG * 2;       /* all due at once */
	load_init(&s->f.load, loop, 1, sched_start, sched_in_flight, s);
	load_set_max_concurrency(&s->f.load, 1);
	load_set_schedule(&s->f.load, sched_next, s);
	for (int i = 0; i < 50; i++)
		ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(s->f.in_flight, 1);
	assert_int_equal(load_pending(&s->f.load), LOAD_SCHEDULE_BACKLOG);
	/* One started, the backlog, and the next one known. */
	assert_int_equal(s->calls, LOAD_SCHEDULE_BACKLOG + 2);
	assert_int_equal(s->f.load.dropped, 0);
	/* Room for one: the oldest starts, one more arrival comes in. */
	s->f.in_flight--;
	load_on_done(&s->f.load);
	for (int i = 0; i < 5; i++)
		ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(s->f.load.started, 2);
	assert_int_equal(s->intended[1], s->f.load.schedule_t0);
	assert_int_equal(load_pending(&s->f.load), LOAD_SCHEDULE_BACKLOG);
	assert_int_equal(s->calls, LOAD_SCHEDULE_BACKLOG + 3);
	/* The cap lifted: all of it goes, and the load ends. */
	load_set_max_concurrency(&s->f.load, 0);
	for (int i = 0; i < 100000 && !load_exhausted(&s->f.load); i++)
		ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(s->f.load.started, s->n);
	assert_int_equal(s->f.load.dropped, 0);
	load_free(&s->f.load);
	free(s);
	ev_loop_destroy(loop);
}

static int setup(void **state)
{
	struct enginefix *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct enginefix *f = *state;
	enginefix_free(f);
	free(f);
	return 0;
}

/* The real engine against the simulator, with requests short enough to
 * end while the ramp is still starting others: a batch that asks for
 * fresh connections must not strand idle ones, so the run still holds
 * exactly one connection per user and reuses them all. (Counting the
 * waiting fresh transfers as claimants of idle connections opened ~180
 * connections too many here.) */
static void test_ramp_connections(void **state)
{
	struct enginefix *f = *state;
	/* 70 ms requests: the ramp adds one batch of users per iteration
	 * (24 iterations to 3,000) while the first ones go round, and the
	 * request limit must leave it the time to reach them all. */
	const char *sim[] = {"--timing", "fixed", "--ttft", "50ms", "--itl", "10ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "3000", "-n", "30000", "--output-tokens", "3", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	assert_int_equal(s->run_c.completed, 30000);
	assert_int_equal(stats_errors_total(s), 0);
	assert_int_equal(s->max_in_flight, 3000);
	assert_int_equal(s->connections, 3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_closed_ramp_in_batches),
		cmocka_unit_test(test_closed_ramp_refills_one_for_one),
		cmocka_unit_test(test_closed_ramp_stops_with_the_run),
		cmocka_unit_test(test_closed_ramp_waits_for_pause),
		cmocka_unit_test(test_open_queue_drains_in_batches),
		cmocka_unit_test(test_schedule_times),
		cmocka_unit_test(test_schedule_backlog),
		cmocka_unit_test_setup_teardown(test_ramp_connections, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
