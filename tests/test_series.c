/* The chart time series: resampling, the multi-resolution rings, NaN gaps,
 * markers, and the sampler that feeds it from the engine. */
#include "config.h"

#include <malloc.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/sampler.h"
#include "infertop/series.h"
#include "infertop/stats.h"

#define S CLOCK_NS_PER_S
#define T0 (1000 * S) /* an arbitrary monotonic start */

static void push_all(struct series *s, int64_t t, double x)
{
	double v[SER_N];
	for (int i = 0; i < SER_N; i++)
		v[i] = x;
	series_push(s, t, v);
}

/* The engine's tick samples through the run's view; so do the tests. */
static struct sampler samp;

static void sample(struct series *s, const struct engine *e, int64_t now)
{
	struct run_view v;
	engine_view(e, &v);
	sampler_push(&samp, s, &v, now);
}

static void test_empty(void **state)
{
	(void)state;
	struct series *s = series_new();
	assert_non_null(s);
	double out[8];
	int64_t a, b, t0 = -1;
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 0, out, 8, &t0), 0);
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 60 * S, out, 8, &t0), 0);
	assert_int_equal(series_extent(s, &a, &b), -1);
	struct series_marker m[2];
	assert_int_equal(series_marks(s, 0, INT64_MAX, m, 2), 0);
	series_free(s);
}

static void test_resample(void **state)
{
	(void)state;
	struct series *s = series_new();
	for (int i = 0; i < 60; i++)
		push_all(s, T0 + i * S + S / 4, i);
	int64_t first, last;
	assert_int_equal(series_extent(s, &first, &last), 0);
	assert_true(first == T0 + S / 4);
	assert_true(last == T0 + S / 4 + 60 * S);

	double out[120];
	int64_t t0;
	/* One point per slot. */
	assert_int_equal(series_read(s, SER_TTFT_P99, 60 * S, out, 60, &t0), 60);
	assert_true(t0 == first);
	for (int i = 0; i < 60; i++)
		assert_true(out[i] == i);
	/* Two slots per point: their mean. */
	assert_int_equal(series_read(s, SER_TTFT_P99, 60 * S, out, 30, &t0), 30);
	for (int i = 0; i < 30; i++)
		assert_true(out[i] == 2 * i + 0.5);
	/* Two points per slot: each slot twice. */
	assert_int_equal(series_read(s, SER_TTFT_P99, 60 * S, out, 120, &t0), 120);
	for (int i = 0; i < 120; i++)
		assert_true(out[i] == i / 2);
	/* The last 10 s only. */
	assert_int_equal(series_read(s, SER_REQ_S, 10 * S, out, 10, &t0), 10);
	assert_true(t0 == last - 10 * S);
	for (int i = 0; i < 10; i++)
		assert_true(out[i] == 50 + i);
	/* A span reaching back before the first push: gaps, then the data. */
	assert_int_equal(series_read(s, SER_REQ_S, 120 * S, out, 12, &t0), 12);
	for (int i = 0; i < 6; i++)
		assert_true(isnan(out[i]));
	assert_true(out[6] == 4.5);
	assert_true(out[11] == 54.5);
	/* Whole run. */
	assert_int_equal(series_read(s, SER_REQ_S, 0, out, 6, &t0), 6);
	assert_true(t0 == first);
	assert_true(out[0] == 4.5 && out[5] == 54.5);
	/* A second push in the same second replaces the point. */
	push_all(s, T0 + 59 * S + S / 2, 1000);
	assert_int_equal(series_read(s, SER_REQ_S, 2 * S, out, 2, &t0), 2);
	assert_true(out[0] == 58 && out[1] == 1000);
	assert_int_equal(series_read(s, SER_N, 0, out, 6, &t0), 0);
	series_free(s);
}

static void test_nan_gaps(void **state)
{
	(void)state;
	struct series *s = series_new();
	double v[SER_N];
	for (int i = 0; i < 30; i++) {
		if (i >= 10 && i < 20)
			continue; /* ten seconds without a point */
		for (int k = 0; k < SER_N; k++)
			v[k] = i;
		v[SER_KV] = (i % 2) ? NAN : 0.5; /* a gauge known every other second */
		series_push(s, T0 + i * S, v);
	}
	double out[30];
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 30 * S, out, 30, NULL), 30);
	for (int i = 0; i < 30; i++) {
		if (i >= 10 && i < 20)
			assert_true(isnan(out[i]));
		else
			assert_true(out[i] == i);
	}
	/* Three slots per point: the mean of the known ones. */
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 30 * S, out, 10, NULL), 10);
	assert_true(out[3] == 9);          /* slots 9, 10, 11: only 9 known */
	assert_true(isnan(out[4]));        /* 12..14 */
	assert_true(out[6] == 20);         /* slots 18..20: only 20 known */
	assert_int_equal(series_read(s, SER_KV, 30 * S, out, 30, NULL), 30);
	assert_true(out[0] == 0.5 && isnan(out[1]) && out[2] == 0.5);
	series_free(s);
}

/* Two hours at 1 Hz: the first hour has left the 1 s ring, yet the whole
 * run reads back from the 10 s level, and the last hour at 1 s. */
static void test_multi_resolution(void **state)
{
	(void)state;
	struct series *s = series_new();
	for (int i = 0; i < 7200; i++)
		push_all(s, T0 + (int64_t)i * S, i / 60); /* the minute number */
	double out[3600];
	int64_t t0;
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 0, out, 120, &t0), 120);
	assert_true(t0 == T0);
	for (int m = 0; m < 120; m++)
		assert_true(out[m] == m);
	/* The last hour at full resolution. */
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 3600 * S, out, 3600, &t0), 3600);
	assert_true(t0 == T0 + 3600 * S);
	for (int i = 0; i < 3600; i++)
		assert_true(out[i] == (3600 + i) / 60);
	/* 61 minutes back: must come from the 10 s ring, exact per 10 s. */
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 3660 * S, out, 366, &t0), 366);
	for (int i = 0; i < 366; i++)
		assert_true(out[i] == (3540 + 10 * i) / 60);
	series_free(s);
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* A 25 h run: memory does not move, and every hour is still readable. */
static void test_day_constant_memory(void **state)
{
	(void)state;
	struct series *s = series_new();
	size_t before = heap_in_use();
	for (int64_t i = 0; i < 25 * 3600; i++)
		push_all(s, T0 + i * S, (double)(i / 3600));
	assert_true(heap_in_use() == before);
	double out[25];
	int64_t t0, first, last;
	assert_int_equal(series_read(s, SER_IN_FLIGHT, 0, out, 25, &t0), 25);
	assert_true(t0 == T0);
	for (int h = 0; h < 25; h++)
		assert_true(out[h] == h);
	assert_int_equal(series_extent(s, &first, &last), 0);
	assert_true(last - first == 25 * 3600 * S);
	series_free(s);
}

/* Beyond the coarsest ring (14 days) the oldest points are dropped. */
static void test_bounded(void **state)
{
	(void)state;
	struct series *s = series_new();
	const int64_t day = 86400 * S;
	for (int64_t t = 0; t < 16 * day; t += 10 * S)
		push_all(s, T0 + t, (double)(t / day));
	int64_t first, last;
	assert_int_equal(series_extent(s, &first, &last), 0);
	assert_true(last - first <= 14 * day + 60 * S);
	assert_true(last - first >= 14 * day - 60 * S);
	double out[16];
	assert_int_equal(series_read(s, SER_ERRORS, 16 * day, out, 16, NULL), 16);
	/* Points are 16 days back from the newest slot, so each straddles two
	 * days by a few seconds. Day 0 is gone, day 1 only in its last minute. */
	assert_true(isnan(out[0]));
	assert_true(out[1] > 0.99 && out[1] < 1.01);
	for (int d = 3; d < 16; d++)
		assert_true(fabs(out[d] - d) < 0.01);
	/* Read from the oldest point kept: no gap at all. */
	assert_int_equal(series_read(s, SER_ERRORS, 0, out, 14, NULL), 14);
	for (int d = 0; d < 14; d++)
		assert_true(!isnan(out[d]) && fabs(out[d] - (d + 2)) < 0.01);
	/* A gap longer than every ring does not lose the new point. */
	push_all(s, T0 + 40 * day, 99);
	assert_int_equal(series_read(s, SER_ERRORS, 10 * S, out, 10, NULL), 10);
	assert_true(out[9] == 99);
	assert_true(isnan(out[0]));
	series_free(s);
}

static void test_marks(void **state)
{
	(void)state;
	struct series *s = series_new();
	series_mark(s, 10 * S, "c=8");
	series_mark(s, 30 * S, "c=16");
	series_mark(s, 20 * S, "pause"); /* late: goes between */
	struct series_marker m[4];
	assert_int_equal(series_marks(s, 0, INT64_MAX, m, 4), 3);
	assert_string_equal(m[0].label, "c=8");
	assert_string_equal(m[1].label, "pause");
	assert_string_equal(m[2].label, "c=16");
	assert_int_equal(series_marks(s, 15 * S, 30 * S, m, 4), 1);
	assert_string_equal(m[0].label, "pause");
	/* More matches than room: the newest. */
	assert_int_equal(series_marks(s, 0, INT64_MAX, m, 2), 2);
	assert_string_equal(m[0].label, "pause");
	assert_string_equal(m[1].label, "c=16");
	/* Long labels are cut, never overflow. */
	series_mark(s, 40 * S, "a label much longer than the twenty-four bytes kept");
	assert_int_equal(series_marks(s, 40 * S, 41 * S, m, 1), 1);
	assert_int_equal(strlen(m[0].label), SERIES_LABEL_MAX - 1);
	/* The ring keeps the latest 1024. */
	for (int i = 0; i < 3000; i++)
		series_mark(s, (100 + i) * S, "x");
	struct series_marker *all = calloc(4000, sizeof *all);
	assert_non_null(all);
	size_t n = series_marks(s, 0, INT64_MAX, all, 4000);
	assert_int_equal(n, 1024);
	assert_true(all[0].t_ns == (100 + 3000 - 1024) * S);
	assert_true(all[1023].t_ns == (100 + 2999) * S);
	free(all);
	series_free(s);
}

static void finish(struct stats *st, int out_tokens, bool ok)
{
	struct req_result r = {
		.ok = ok, .err = ERR_HTTP, .http_code = 503, .msg = "busy",
		.queue_ns = 0, .ttfb_ns = 5 * CLOCK_NS_PER_MS, .ttft_ns = 20 * CLOCK_NS_PER_MS,
		.e2e_ns = 200 * CLOCK_NS_PER_MS, .output_tokens = out_tokens, .prompt_tokens = 10, .chunks = 1,
	};
	st->in_flight++;
	/* Tokens arrive before the request ends (one chunk each here). */
	for (int i = 0; i < out_tokens; i++)
		stats_chunk_arrived(st);
	r.chunks = out_tokens > 0 ? (uint64_t)out_tokens : 1;
	stats_request_done(st, &r);
}

/* The sampler: rates from counter deltas, window p99, server gauges only
 * when known, one point per second whatever the tick rate, and a marker
 * per load change. */
static void test_sampler(void **state)
{
	(void)state;
	struct config cfg = {0};
	struct engine e = {0};
	e.cfg = &cfg;
	e.state = ENGINE_RUNNING;
	e.stats = stats_new(30 * S, T0);
	assert_non_null(e.stats);
	struct series *s = series_new();
	e.load.mode = LOAD_CLOSED;
	e.load.concurrency = 8;
	e.load.events[0] = (struct load_event){.t_ns = T0, .mode = LOAD_CLOSED, .value = 8};
	e.load.nevents = 1;

	/* 4 ticks a second for 10 s; 5 requests of 20 tokens finish per second. */
	for (int tick = 0; tick <= 40; tick++) {
		int64_t now = T0 + tick * (S / 4);
		if (tick > 0 && tick % 4 == 0) {
			for (int i = 0; i < 5; i++)
				finish(e.stats, 20, true);
			finish(e.stats, 0, false);
		}
		if (tick == 20) {
			e.load.concurrency = 16;
			e.load.events[1] = (struct load_event){.t_ns = now, .mode = LOAD_CLOSED, .value = 16};
			e.load.nevents = 2;
		}
		if (tick == 30)
			e.load.paused = true;
		sample(s, &e, now);
	}
	/* Points at T0, T0 + 1 s, ... T0 + 10 s: eleven seconds. */
	double out[11];
	assert_int_equal(series_read(s, SER_OUT_TOK_S, 11 * S, out, 11, NULL), 11);
	assert_true(isnan(out[0])); /* the first point has no previous reading */
	for (int i = 1; i < 11; i++)
		assert_true(fabs(out[i] - 100.0) < 1e-9);
	assert_int_equal(series_read(s, SER_REQ_S, 11 * S, out, 11, NULL), 11);
	assert_true(fabs(out[10] - 5.0) < 1e-9);
	assert_int_equal(series_read(s, SER_ERRORS, 11 * S, out, 11, NULL), 11);
	assert_true(fabs(out[10] - 1.0) < 1e-9);
	assert_int_equal(series_read(s, SER_TTFT_P99, 11 * S, out, 11, NULL), 11);
	assert_true(isnan(out[0])); /* nothing finished yet */
	assert_true(fabs(out[10] - 20.0) < 0.05);
	assert_int_equal(series_read(s, SER_TARGET, 11 * S, out, 11, NULL), 11);
	assert_true(out[4] == 8 && out[5] == 16);
	assert_int_equal(series_read(s, SER_KV, 10 * S, out, 10, NULL), 10);
	for (int i = 0; i < 10; i++)
		assert_true(isnan(out[i])); /* no server state */

	struct series_marker m[8];
	assert_int_equal(series_marks(s, 0, INT64_MAX, m, 8), 3);
	assert_string_equal(m[0].label, "c=8");
	assert_string_equal(m[1].label, "c=16");
	assert_true(m[1].t_ns == T0 + 5 * S);
	assert_string_equal(m[2].label, "pause");
	assert_true(m[2].t_ns == T0 + 30 * (S / 4));

	/* A server answering: its gauges appear; a down one: gaps again. */
	struct server_state srv = {0};
	srv.status = SERVER_UP;
	srv.gauge[SRV_KV_USAGE] = (struct server_value){.v = 0.42, .valid = true};
	srv.gauge[SRV_WAITING] = (struct server_value){.v = 3, .valid = true};
	e.server = &srv;
	sample(s, &e, T0 + 11 * S);
	srv.status = SERVER_DOWN;
	sample(s, &e, T0 + 12 * S);
	assert_int_equal(series_read(s, SER_KV, 2 * S, out, 2, NULL), 2);
	assert_true(fabs(out[0] - 0.42) < 1e-6 && isnan(out[1]));
	assert_int_equal(series_read(s, SER_WAITING, 2 * S, out, 2, NULL), 2);
	assert_true(out[0] == 3 && isnan(out[1]));
	assert_int_equal(series_read(s, SER_RUNNING, 2 * S, out, 2, NULL), 2);
	assert_true(isnan(out[0])); /* not exposed by this server */

	/* A stall of a minute: the missed seconds are a gap, the grid holds. */
	sample(s, &e, T0 + 72 * S + S / 8);
	int64_t first, last;
	assert_int_equal(series_extent(s, &first, &last), 0);
	assert_true(last == T0 + 73 * S);
	assert_int_equal(series_read(s, SER_IN_FLIGHT, 3 * S, out, 3, NULL), 3);
	assert_true(isnan(out[0]) && isnan(out[1]) && out[2] == 0);

	/* More events than the ring holds between two samples: the newest. */
	e.load.nevents = 2 + LOAD_EVENTS + 5;
	for (uint32_t i = 2; i < e.load.nevents; i++)
		e.load.events[i % LOAD_EVENTS] =
			(struct load_event){.t_ns = T0 + 80 * S + i, .mode = LOAD_OPEN, .value = 2.5};
	sample(s, &e, T0 + 80 * S + 1000);
	size_t n = series_marks(s, T0 + 80 * S, INT64_MAX, m, 8);
	assert_int_equal(n, 8);
	assert_string_equal(m[7].label, "r=2.5/s");
	struct series_marker *all = calloc(LOAD_EVENTS + 10, sizeof *all);
	assert_non_null(all);
	assert_int_equal(series_marks(s, T0 + 80 * S, INT64_MAX, all, LOAD_EVENTS + 10), LOAD_EVENTS);
	free(all);

	sample(NULL, &e, T0); /* no series: nothing to do */
	series_free(s);
	stats_free(e.stats);
}

/* A series of any width: its own columns, the same rings; no markers. */
static void test_columns(void **state)
{
	(void)state;
	assert_null(series_new_cols(0));
	assert_null(series_new_cols(SERIES_COLS_MAX + 1));
	struct series *s = series_new_cols(SER_REP_N);
	assert_non_null(s);
	assert_int_equal(series_cols(s), SER_REP_N);
	size_t before = heap_in_use();
	for (int64_t i = 0; i < 2 * 3600; i++) {
		double v[SER_REP_N];
		for (int c = 0; c < SER_REP_N; c++)
			v[c] = (double)(c * 100 + i / 3600);
		series_push_cols(s, T0 + i * S, v);
	}
	assert_true(heap_in_use() == before);
	double out[2];
	for (int c = 0; c < SER_REP_N; c++) {
		assert_int_equal(series_read_col(s, c, 0, out, 2, NULL), 2);
		assert_true(out[0] == c * 100 && out[1] == c * 100 + 1);
	}
	assert_int_equal(series_read_col(s, SER_REP_N, 0, out, 2, NULL), 0);
	assert_int_equal(series_read_col(s, -1, 0, out, 2, NULL), 0);
	series_mark(s, T0, "c=1");
	struct series_marker m[1];
	assert_int_equal(series_marks(s, 0, INT64_MAX, m, 1), 0);
	/* 4 columns of floats in 32400 slots: a quarter of the run's 14. */
	assert_true(series_memory_cols(SER_REP_N) < series_memory() / 3);
	assert_true(series_memory_of(s) == series_memory_cols(SER_REP_N));
	print_message("series_memory() %zu bytes, a replica's series_memory_cols(%d) %zu bytes\n",
		      series_memory(), SER_REP_N, series_memory_cols(SER_REP_N));
	series_free(s);
}

/* Each server replica's own series: made when the replica first appears,
 * on the run's one-second grid; running, waiting, KV usage when the
 * replica answers (gaps when it is down), and its generated tokens per
 * second between its own scrapes. */
static void test_sampler_replicas(void **state)
{
	(void)state;
	struct config cfg = {0};
	struct engine e = {0};
	e.cfg = &cfg;
	e.state = ENGINE_RUNNING;
	e.stats = stats_new(30 * S, T0);
	assert_non_null(e.stats);
	e.load.mode = LOAD_CLOSED;
	e.load.concurrency = 4;
	struct series *s = series_new();
	struct server_state srv = {0};
	srv.status = SERVER_UP;
	srv.nreplicas = 2;
	e.server = &srv;
	memset(&samp, 0, sizeof samp);
	size_t base = series_memory_of(s);
	/* 10 s; replica 2 (index 2) appears at 4 s; replica 1 is down at 6 s.
	 * Replica r scrapes every 2 s and generates 10 * (r + 1) tok/s. */
	for (int sec = 0; sec < 10; sec++) {
		if (sec == 4)
			srv.nreplicas = 3;
		for (int r = 0; r < srv.nreplicas; r++) {
			struct server_replica *rp = &srv.replica[r];
			rp->status = r == 1 && sec == 6 ? SERVER_DOWN : SERVER_UP;
			rp->running = (struct server_value){.v = r + 1, .valid = true};
			rp->waiting = (struct server_value){.v = 2 * r, .valid = true};
			rp->kv = (struct server_value){.v = 0.1 * (r + 1), .valid = true};
			if (sec % 2 == 0) {
				rp->last_ok_ns = T0 + sec * S;
				rp->run_gen_tokens = (struct server_value){.v = 10.0 * (r + 1) * sec, .valid = true};
			}
		}
		sample(s, &e, T0 + sec * S);
		if (sec == 3)
			assert_null(series_sub_get(s, 2));
	}
	assert_null(series_sub_get(s, 3));
	assert_true(series_memory_of(s) == base + 3 * series_memory_cols(SER_REP_N));
	double out[10];
	for (int r = 0; r < 3; r++) {
		const struct series *sub = series_sub_get(s, r);
		assert_non_null(sub);
		assert_int_equal(series_read_col(sub, SER_REP_RUNNING, 10 * S, out, 10, NULL), 10);
		for (int i = 0; i < 10; i++) {
			bool gap = (r == 2 && i < 4) || (r == 1 && i == 6);
			assert_true(gap ? isnan(out[i]) : out[i] == r + 1);
		}
		assert_int_equal(series_read_col(sub, SER_REP_KV, 10 * S, out, 10, NULL), 10);
		assert_true(fabs(out[9] - 0.1 * (r + 1)) < 1e-6);
		assert_int_equal(series_read_col(sub, SER_REP_WAITING, 10 * S, out, 10, NULL), 10);
		assert_true(out[9] == 2 * r);
		/* The rate: known from a replica's second scrape on, held
		 * between scrapes, none while down and for the scrape after. */
		assert_int_equal(series_read_col(sub, SER_REP_GEN_TOK_S, 10 * S, out, 10, NULL), 10);
		int from = r == 2 ? 6 : 2;
		for (int i = 0; i < 10; i++) {
			bool gap = i < from || (r == 1 && i >= 6 && i < 8);
			assert_true(gap ? isnan(out[i]) : fabs(out[i] - 10.0 * (r + 1)) < 1e-6);
		}
	}
	/* Replicas read back from a document (a fleet's view): no scrape
	 * time, so no rate, never a 0. */
	{
		struct series *doc = series_new();
		struct server_state rs = {0};
		rs.status = SERVER_UP;
		rs.nreplicas = 2;
		for (int r = 0; r < 2; r++) {
			rs.replica[r].status = SERVER_UP;
			rs.replica[r].run_gen_tokens = (struct server_value){.v = 500, .valid = true};
		}
		e.server = &rs;
		memset(&samp, 0, sizeof samp);
		sample(doc, &e, T0);
		sample(doc, &e, T0 + S);
		assert_int_equal(series_read_col(series_sub_get(doc, 1), SER_REP_GEN_TOK_S, 2 * S, out, 2, NULL), 2);
		assert_true(isnan(out[0]) && isnan(out[1]));
		series_free(doc);
		e.server = &srv;
	}
	/* One replica alone is the server block itself: no sub-series. */
	struct series *one = series_new();
	srv.nreplicas = 0;
	memset(&samp, 0, sizeof samp);
	sample(one, &e, T0);
	assert_null(series_sub_get(one, 0));
	series_free(one);
	/* An hour later nothing more was allocated. */
	size_t before = heap_in_use();
	srv.nreplicas = 3;
	for (int sec = 10; sec < 3610; sec++)
		sample(s, &e, T0 + sec * S);
	assert_true(heap_in_use() == before);
	series_free(s);
	stats_free(e.stats);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_resample),
		cmocka_unit_test(test_nan_gaps),
		cmocka_unit_test(test_multi_resolution),
		cmocka_unit_test(test_day_constant_memory),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_marks),
		cmocka_unit_test(test_sampler),
		cmocka_unit_test(test_columns),
		cmocka_unit_test(test_sampler_replicas),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
