/* The engine against a real simulator process over loopback: timing
 * fidelity, exact token counts, live load changes, fault accounting. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <ev.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/hist.h"
#include "infertop/series.h"
#include "infertop/sim.h"
#include "enginefix.h"

static int teardown(void **state)
{
	struct enginefix *f = *state;
	enginefix_free(f);
	free(f);
	return 0;
}

static int setup(void **state)
{
	struct enginefix *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	*state = f;
	return 0;
}

static double pct_ms(const struct engine *e, enum stat_metric m, double p)
{
	return (double)hist_percentile(e->stats->run[m], p) / 1000.0;
}

/* Fixed-timing simulator: TTFT 50 ms, ITL 10 ms, 64 tokens. The engine's
 * medians must sit on the truth; token counts must be exact. */
static void test_fidelity(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "50ms", "--itl", "10ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "16", "-n", "64", "--output-tokens", "64", "--input-tokens", "32", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	assert_int_equal(s->run_c.completed, 64);
	assert_int_equal(stats_errors_total(s), 0);
	assert_int_equal(s->run_c.output_tokens, 64 * 64);
	assert_int_equal(s->run_c.chunks, 64 * 64);
	assert_int_equal(s->tokens_from_usage, 64);
	assert_int_equal(hist_count(s->run[STAT_ITL]), 64 * 63);
	double ttft = pct_ms(f->e, STAT_TTFT, 50), itl = pct_ms(f->e, STAT_ITL, 50);
	print_message("median TTFT %.3f ms, median ITL %.3f ms, ITL p99 %.3f ms\n", ttft, itl,
		      pct_ms(f->e, STAT_ITL, 99));
	assert_true(ttft >= 50.0 - 0.1 && ttft <= 52.0);
	assert_true(itl >= 9.5 && itl <= 10.5);
	/* TPOT = (E2E - TTFT)/63 = ITL exactly when the sim is on time. */
	double tpot = pct_ms(f->e, STAT_TPOT, 50);
	assert_true(tpot >= 9.5 && tpot <= 10.5);
	/* TTFB (role chunk) comes with the first token in this sim. */
	assert_true(pct_ms(f->e, STAT_TTFB, 50) <= ttft + 0.01);
	assert_int_equal(s->max_in_flight, 16);
	/* Keep-alive: one connection per stream, none per request. */
	assert_int_equal(s->connections, 16);
}

/* --new-connection: one connection per request instead. */
/* serve's path: engine_start returns with the run going on the caller's
 * loop; the done callback fires once, and the loop is not broken by the
 * run's end (the caller's own watcher still runs after it). */
struct done_probe {
	int calls;
	bool loop_ran_after;
	struct engine *e;
};

static void on_done(struct engine *e, void *ud)
{
	struct done_probe *p = ud;
	assert_ptr_equal(e, p->e);
	p->calls++;
}

static void after_done(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	struct done_probe *p = w->data;
	if (p->calls) {
		p->loop_ran_after = true;
		ev_break(loop, EVBREAK_ALL);
	}
}

static void give_up(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static void test_start_and_done(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "2ms", "--itl", "1ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "4", "-n", "20", "--output-tokens", "4", NULL};
	enginefix_engine(f, args);
	struct done_probe p = {.e = f->e};
	engine_set_on_done(f->e, on_done, &p);
	engine_start(f->e);
	struct run_view v;
	engine_view(f->e, &v);
	assert_int_equal(v.state, ENGINE_RUNNING);
	assert_int_equal(p.calls, 0);
	/* Polls every 50 ms; a 30 s bound so a hang fails instead of waiting. */
	ev_timer poll;
	ev_timer_init(&poll, after_done, 0.05, 0.05);
	poll.data = &p;
	ev_timer_start(f->loop, &poll);
	ev_timer guard;
	ev_timer_init(&guard, give_up, 30., 0.);
	ev_timer_start(f->loop, &guard);
	ev_run(f->loop, 0);
	ev_timer_stop(f->loop, &poll);
	ev_timer_stop(f->loop, &guard);
	assert_int_equal(p.calls, 1);
	assert_true(p.loop_ran_after);
	engine_view(f->e, &v);
	assert_int_equal(v.state, ENGINE_DONE);
	assert_int_equal(f->e->stats->run_c.completed, 20);
}

static void test_new_connection(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "2ms", "--itl", "1ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "4", "-n", "40", "--output-tokens", "4", "--new-connection", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	assert_int_equal(f->e->stats->run_c.completed, 40);
	assert_int_equal(f->e->stats->connections, 40);
}

struct live_change {
	int phase;
	uint64_t started_at_lower;
	uint64_t in_flight_at_lower;
	bool saw_violation;
	uint64_t in_flight_after_raise;
	uint64_t max_in_flight_low;
};

static void on_tick_change(struct engine *e, void *ud, int64_t now)
{
	struct live_change *lc = ud;
	int64_t t = now - e->t_start;
	if (e->state == ENGINE_DONE)
		return;
	if (lc->phase == 0 && t > 500 * CLOCK_NS_PER_MS) {
		load_set_concurrency(&e->load, 40);
		/* Raising starts the new requests at once, inside the call. */
		lc->in_flight_after_raise = e->stats->in_flight;
		lc->phase = 1;
	} else if (lc->phase == 1 && t > 1200 * CLOCK_NS_PER_MS) {
		load_set_concurrency(&e->load, 2);
		lc->started_at_lower = e->stats->started;
		lc->in_flight_at_lower = e->stats->in_flight;
		lc->phase = 2;
	} else if (lc->phase == 2) {
		/* Lowering lets in-flight requests finish; no new one may start
		 * until fewer than 2 remain, so started grows by at most 2 - in_flight. */
		if (e->stats->in_flight > 2 && e->stats->started > lc->started_at_lower)
			lc->saw_violation = true;
		if (t > 2500 * CLOCK_NS_PER_MS && e->stats->in_flight > lc->max_in_flight_low)
			lc->max_in_flight_low = e->stats->in_flight;
	}
}

static void test_live_concurrency(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "20ms", "--itl", "5ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "4", "-d", "3.5s", "--output-tokens", "40", NULL};
	enginefix_engine(f, args);
	struct live_change lc = {0};
	f->e->on_tick = on_tick_change;
	f->e->on_tick_ud = &lc;
	engine_run(f->e);
	assert_int_equal(lc.phase, 2);
	assert_int_equal(lc.in_flight_after_raise, 40);
	assert_int_equal(lc.in_flight_at_lower, 40);
	assert_false(lc.saw_violation);
	assert_true(lc.max_in_flight_low <= 2);
	assert_int_equal(f->e->stats->max_in_flight, 40);
	assert_int_equal(stats_errors_total(f->e->stats), 0);
	assert_int_equal(f->e->load.nevents, 3);
	/* Raising to 40 (past the initial cache of 4 + 16) opened 36 more
	 * connections; none was reopened per request. */
	assert_int_equal(f->e->stats->connections, 40);
}

/* Faults from the simulator are counted by kind, kept out of latency
 * stats, and the run completes. */
static void test_faults(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "1ms", "--fail-rate", "0.4",
			     "--fail-kinds", "500,429,disconnect,malformed", "--seed", "7", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "16", "-n", "400", "--output-tokens", "16", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	uint64_t failed = stats_errors_total(s);
	assert_int_equal(s->run_c.completed + failed, 400);
	print_message("completed %llu, http %llu (500: %llu, 429: %llu), truncated %llu, bad_json %llu\n",
		      (unsigned long long)s->run_c.completed, (unsigned long long)s->errors[ERR_HTTP],
		      (unsigned long long)s->http_codes[500], (unsigned long long)s->http_codes[429],
		      (unsigned long long)s->errors[ERR_TRUNCATED], (unsigned long long)s->errors[ERR_BAD_JSON]);
	/* 400 × 0.4 / 4 kinds = 40 expected per kind; binomial sd ≈ 6. */
	assert_in_range(s->http_codes[500], 15, 70);
	assert_in_range(s->http_codes[429], 15, 70);
	assert_int_equal(s->errors[ERR_HTTP], s->http_codes[500] + s->http_codes[429]);
	assert_in_range(s->errors[ERR_TRUNCATED], 15, 70);
	assert_in_range(s->errors[ERR_BAD_JSON], 15, 70);
	assert_int_equal(failed, s->errors[ERR_HTTP] + s->errors[ERR_TRUNCATED] + s->errors[ERR_BAD_JSON]);
	assert_non_null(strstr(s->last_msg[ERR_HTTP], "HTTP"));
	/* Only successful requests reach the latency histograms. */
	assert_int_equal(hist_count(s->run[STAT_TTFT]), s->run_c.completed);
	assert_int_equal(hist_count(s->run[STAT_ITL]), s->run_c.completed * 15);
	assert_int_equal(s->run_c.output_tokens, s->run_c.completed * 16);
}

/* A stalled stream is ended by --timeout and counted as a timeout. */
static void test_timeout(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "2ms", "--fail-rate", "1",
			     "--fail-kinds", "stall", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "2", "-n", "2", "--timeout", "500ms", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	assert_int_equal(f->e->stats->errors[ERR_TIMEOUT], 2);
	assert_int_equal(f->e->stats->run_c.completed, 0);
}

/* Open loop: Poisson arrivals at a rate; with a cap of one in flight and
 * a rate the server cannot keep up with, arrivals queue in the client and
 * their queue time is measured from the intended send time. */
static void test_open_loop(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "10ms", "--itl", "2ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-r", "200", "--max-concurrency", "1", "-n", "60", "--output-tokens", "10", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	assert_int_equal(s->run_c.completed, 60);
	assert_int_equal(s->max_in_flight, 1);
	/* Each request takes ≈ 28 ms; arrivals come every 5 ms on average, so
	 * the last ones wait for most of the run. */
	double q99 = pct_ms(f->e, STAT_QUEUE, 99);
	double e2e_q = pct_ms(f->e, STAT_E2E_Q, 50), e2e = pct_ms(f->e, STAT_E2E, 50);
	print_message("queue p99 %.1f ms, E2E p50 %.1f ms, from intended %.1f ms\n", q99, e2e, e2e_q);
	assert_true(q99 > 500.0);
	assert_true(e2e_q > e2e + 100.0);
}

/* The server dies before the run: connection errors are counted, and the
 * closed loop backs off instead of spinning through thousands of them. */
static void test_dead_server_backoff(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "4", "-d", "1.5s", "--metrics-url", "none", NULL};
	enginefix_engine(f, args);
	sim_child_stop(&f->sim);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	print_message("connect errors in 1.5 s: %llu\n", (unsigned long long)s->errors[ERR_CONNECT]);
	/* Backoff 50, 100, 200, 400, 800 ms: about 6 rounds of 4 users. */
	assert_in_range(s->errors[ERR_CONNECT], 4, 40);
	assert_int_equal(s->run_c.completed, 0);
	assert_non_null(strstr(s->last_msg[ERR_CONNECT], "onnect"));
}

/* Unreachable server: probe fails with a message naming the URL. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A steady load draws a flat output tok/s line: 8 users in step, each
 * request 1.5 s long, used to land 1,200 tokens in every other 1 s sample
 * (1200, 0, 1200, 0) because tokens were counted when a request ended. */
static void test_flat_tok_rate(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "10ms", "--itl", "10ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "8", "-d", "6s", "--output-tokens", "150", "--metrics-url", "none", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	double v[6];
	int64_t t0;
	size_t n = series_read(f->e->series, SER_OUT_TOK_S, 0, v, 6, &t0);
	assert_true(n >= 5);
	/* The first second ramps up, the last drains: the middle must be flat. */
	double mid[4] = {0}, sorted[4];
	size_t m = 0;
	for (size_t i = 1; i + 1 < n && m < 4; i++)
		mid[m++] = v[i];
	assert_true(m >= 3);
	memcpy(sorted, mid, sizeof mid);
	qsort(sorted, m, sizeof *sorted, cmp_double);
	double median = sorted[m / 2], truth = 8 * 100.0;
	for (size_t i = 0; i < m; i++) {
		if (!(mid[i] > 0.85 * median && mid[i] < 1.15 * median))
			fail_msg("output tok/s sample %zu is %.0f, median %.0f (truth %.0f)", i, mid[i], median, truth);
	}
	if (!(median > 0.85 * truth && median < 1.15 * truth))
		fail_msg("output tok/s median %.0f, truth %.0f", median, truth);
}

/* A server that answers every request 429 with Retry-After: 1 gets about
 * one request per user per second, not thousands a second. */
static void test_retry_after(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--fail-rate", "1", "--fail-kinds", "429", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "4", "-d", "3s", "--output-tokens", "4", "--metrics-url", "none", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	/* Rounds at 0, 1 and 2 s (and perhaps one at the 3 s edge). */
	if (s->started < 8 || s->started > 16)
		fail_msg("%llu requests in 3 s from 4 users told to wait 1 s", (unsigned long long)s->started);
	assert_int_equal(s->errors[ERR_HTTP], s->started - s->in_flight);
	assert_int_equal(s->http_codes[429], s->errors[ERR_HTTP]);
}

static void test_unreachable(void **state)
{
	struct enginefix *f = *state;
	const char *argv[] = {"infertop", "-q", "http://127.0.0.1:1", NULL};
	assert_int_equal(cli_parse(&f->cfg, 3, (char **)argv), CLI_RUN);
	f->loop = ev_loop_new(EVFLAG_AUTO);
	char err[512];
	f->e = engine_new(&f->cfg, f->loop, err, sizeof err);
	assert_non_null(f->e);
	assert_int_equal(engine_probe(f->e, err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot reach http://127.0.0.1:1"));
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fidelity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_connection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_concurrency, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_loop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_server_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flat_tok_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_and_done, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
