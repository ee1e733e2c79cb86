/* Widgets drawn into a real ncurses screen (on /dev/null) and read back
 * cell by cell: the chart's time axis follows the zoom and its scale is
 * shown, load-change labels stay few after many changes, the histogram's
 * p99 mark sits in the bucket holding p99, J/token is a dash until it
 * is known, and the latency table's rows are client_metrics.def's. */
#include "config.h"

#include <curses.h>
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <math.h>

#include <cmocka.h>

#include "infertop/clock.h"
#include "infertop/hist.h"
#include "infertop/layout.h"
#include "infertop/load.h"
#include "infertop/options.h"
#include "infertop/profile.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/stats.h"
#include "infertop/theme.h"
#include "infertop/view.h"
#include "infertop/widget.h"
#include "screenfix.h"

#define S CLOCK_NS_PER_S
static const int64_t T0 = 1000 * S;

static struct screenfix sf;
static unsigned long attr[THEME_NROLES];

static int setup(void **state)
{
	(void)state;
	return screenfix_open(&sf, false, attr);
}

static int teardown(void **state)
{
	(void)state;
	screenfix_close(&sf);
	return 0;
}

#define row_text screenfix_row

struct fixture {
	struct config cfg;
	struct load load;
	struct stats *st;
	struct series *ser;
	struct server_state srv;
	struct run_view v;
	struct dash d;
};

static void fixture_init(struct fixture *f, int marks)
{
	memset(f, 0, sizeof *f);
	f->cfg.window_ns = 30 * S;
	f->load.mode = LOAD_CLOSED;
	f->load.concurrency = 8;
	f->st = stats_new(f->cfg.window_ns, T0);
	f->ser = series_new();
	assert_non_null(f->st);
	assert_non_null(f->ser);
	/* An hour of points; `marks` load changes 10 s apart in the last
	 * ten minutes. */
	for (int64_t s = 0; s <= 3600; s++) {
		double v[SER_N];
		for (int i = 0; i < SER_N; i++)
			v[i] = 100 + (double)(s % 50);
		series_push(f->ser, T0 + s * S, v);
	}
	for (int i = 0; i < marks; i++) {
		char lab[SERIES_LABEL_MAX];
		snprintf(lab, sizeof lab, "c=%d", i + 1);
		series_mark(f->ser, T0 + (3600 - 590 + 10 * i) * S, lab);
	}
	f->v = (struct run_view){.cfg = &f->cfg, .state = ENGINE_RUNNING, .t_start = T0, .stats = f->st,
				 .load = &f->load, .series = f->ser};
	f->d = (struct dash){.v = &f->v, .attr = attr, .now = T0 + 3600 * S, .zoom_ns = 600 * S, .zoom_name = "10m"};
}

static void fixture_free(struct fixture *f)
{
	stats_free(f->st);
	series_free(f->ser);
}

/* One panel alone on a fresh screen, drawn the way widgets_render does. */
static void draw_panel(const struct dash *d, enum panel_kind kind, int arg, int h, int w)
{
	struct layout l;
	memset(&l, 0, sizeof l);
	l.rows = h;
	l.cols = w;
	l.focus = -1;
	l.n = 1;
	l.p[0] = (struct panel){kind, arg, {0, 0, h, w}};
	resize_term(h, w);
	widgets_render(stdscr, &l, d);
}

static void test_chart_axis_follows_zoom(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	static const struct {
		int64_t zoom_s;
		const char *left, *mid;
	} cases[] = {{60, "-60s", "-30s"}, {600, "-10m", "-5m"}, {3600, "-60m", "-30m"}, {0, "-60m", "-30m"}}; /* the run: 3601 s */
	char top[1024], bottom[1024];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		f.d.zoom_ns = cases[i].zoom_s * S;
		draw_panel(&f.d, PANEL_CHART, CHART_TOK, 12, 100);
		row_text(0, top, sizeof top);
		row_text(11, bottom, sizeof bottom);
		/* A box: corners, title in the top border. */
		assert_non_null(strstr(top, "\xe2\x95\xad\xe2\x94\x80 output tok/s"));
		/* The scale: 0 to a round number above the data (100..149). */
		assert_non_null(strstr(top, " 0\xe2\x80\xa6" "200 "));
		char want[64];
		snprintf(want, sizeof want, "\xe2\x95\xb0\xe2\x94\x80%s\xe2\x94\x80", cases[i].left);
		if (!strstr(bottom, want) || !strstr(bottom, cases[i].mid) || !strstr(bottom, "now\xe2\x94\x80\xe2\x95\xaf"))
			fail_msg("zoom %llds: axis \"%s\" lacks %s ... %s ... now", (long long)cases[i].zoom_s, bottom,
				 cases[i].left, cases[i].mid);
	}
	/* The same axis on a narrow chart keeps its ends, drops what does not
	 * fit, and no two labels touch. */
	f.d.zoom_ns = 600 * S;
	draw_panel(&f.d, PANEL_CHART, CHART_TOK, 6, 24);
	row_text(5, bottom, sizeof bottom);
	assert_non_null(strstr(bottom, "-10m"));
	assert_non_null(strstr(bottom, "now"));
	fixture_free(&f);
}

/* Time ticks sit at nice values (1-2-5 steps, and 30) in one unit per
 * axis, whatever the span and the width: -10s -20s -30s, never the
 * quarter points -27s -14s of a 27 s run, nor "-80s -40s" beside "-3m". */
static void test_chart_ticks_nice(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	static const int64_t zooms_s[] = {27, 45, 90, 160, 450, 600, 3600};
	static const int widths[] = {38, 78, 118, 198};
	char bottom[2048];
	for (size_t z = 0; z < sizeof zooms_s / sizeof zooms_s[0]; z++) {
		for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++) {
			f.d.zoom_ns = zooms_s[z] * S;
			draw_panel(&f.d, PANEL_CHART, CHART_TOK, 8, widths[k]);
			row_text(7, bottom, sizeof bottom);
			char unit = 0;
			long vals[64];
			int n = 0;
			for (const char *p = bottom; (p = strchr(p, '-')) != NULL && n < 64; p++) {
				char *end;
				long v = strtol(p + 1, &end, 10);
				if (end == p + 1)
					continue;
				if (unit && *end != unit)
					fail_msg("zoom %llds width %d: two units in \"%s\"", (long long)zooms_s[z], widths[k],
						 bottom);
				unit = *end;
				vals[n++] = v;
			}
			if (n < 2)
				fail_msg("zoom %llds width %d: fewer than two ticks in \"%s\"", (long long)zooms_s[z],
					 widths[k], bottom);
			/* Labels right to left are multiples of the smallest. */
			long step = vals[n - 1];
			long m = step;
			while (m % 10 == 0)
				m /= 10;
			if (!(m == 1 || m == 2 || m == 5 || m == 3))
				fail_msg("zoom %llds width %d: step %ld in \"%s\"", (long long)zooms_s[z], widths[k], step,
					 bottom);
			for (int i = 0; i < n; i++)
				if (vals[i] % step != 0)
					fail_msg("zoom %llds width %d: tick -%ld%c not a multiple of %ld in \"%s\"",
						 (long long)zooms_s[z], widths[k], vals[i], unit, step, bottom);
		}
	}
	/* The step function alone: the smallest nice step with few enough
	 * ticks. */
	assert_int_equal(wd_time_step(27 * S, 4), 10 * S);
	assert_int_equal(wd_time_step(27 * S, 30), 1 * S);
	assert_int_equal(wd_time_step(450 * S, 5), 120 * S);
	assert_int_equal(wd_time_step(3600 * S, 6), 600 * S);
	char b[16];
	wd_fmt_tick(b, sizeof b, 120 * S, 60 * S);
	assert_string_equal(b, "-2m");
	wd_fmt_tick(b, sizeof b, 90 * S, 30 * S);
	assert_string_equal(b, "-90s");
	fixture_free(&f);
}

/* A long title is cut before the value scale goes: the scale is what
 * makes the plot readable. A latency past a second reads in seconds, in
 * the title and on the scale alike. */
static void test_chart_scale_kept(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	f.load.concurrency = 123456789;
	char top[1024];
	draw_panel(&f.d, PANEL_CHART, CHART_CONC, 8, 30);
	row_text(0, top, sizeof top);
	if (!strstr(top, " 0\xe2\x80\xa6" "200 "))
		fail_msg("no scale in \"%s\"", top);
	/* The fixture's values are 100..149 everywhere; as TTFT in ms they
	 * stay in ms. */
	draw_panel(&f.d, PANEL_CHART, CHART_TTFT, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, " ms") || strstr(top, " s "))
		fail_msg("ms chart: \"%s\"", top);
	/* 11.2 s of TTFT: "11.2 s" beside "0…20 s", never "11.2k ms". */
	series_free(f.ser);
	f.ser = series_new();
	f.v.series = f.ser;
	for (int64_t t = 0; t <= 60; t++) {
		double v[SER_N];
		for (int i = 0; i < SER_N; i++)
			v[i] = 11200;
		series_push(f.ser, T0 + (3600 - 60 + t) * S, v);
	}
	draw_panel(&f.d, PANEL_CHART, CHART_TTFT, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, "11.2 s") || !strstr(top, " 0\xe2\x80\xa6" "20 s ") || strstr(top, "k ms"))
		fail_msg("s chart: \"%s\"", top);
	fixture_free(&f);
}

/* A chart's title gives the current value, not the mean of the points
 * its last column stands for; a server gauge from before /metrics went
 * quiet says "stale"; a rate says it is over the last second. */
static void test_chart_title_current(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	server_state_init(&f.srv);
	f.v.server = &f.srv;
	f.srv.status = SERVER_UP;
	f.srv.gauge[SRV_WAITING] = (struct server_value){.valid = true, .v = 5};
	f.st->in_flight = 7;
	char top[1024];
	draw_panel(&f.d, PANEL_CHART, CHART_QUEUE, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, "server queue 5 ") || strstr(top, "stale"))
		fail_msg("queue: \"%s\"", top);
	draw_panel(&f.d, PANEL_CHART, CHART_CONC, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, "in flight 7 / target 8"))
		fail_msg("in flight: \"%s\"", top);
	draw_panel(&f.d, PANEL_CHART, CHART_TOK, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, "(1 s)"))
		fail_msg("output tok/s: \"%s\"", top);
	f.srv.status = SERVER_STALE;
	draw_panel(&f.d, PANEL_CHART, CHART_QUEUE, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, "server queue 5 stale"))
		fail_msg("stale queue: \"%s\"", top);
	f.srv.status = SERVER_DOWN;
	f.srv.gauge[SRV_WAITING].valid = false;
	draw_panel(&f.d, PANEL_CHART, CHART_QUEUE, 8, 60);
	row_text(0, top, sizeof top);
	if (!strstr(top, "server queue \xe2\x80\x93 "))
		fail_msg("unknown queue: \"%s\"", top);
	fixture_free(&f);
}

/* After many load changes only the latest few are labelled, the latest
 * one among them, and labels never run into each other. */
static void test_markers_thinned(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 40);
	draw_panel(&f.d, PANEL_CHART, CHART_TOK, 12, 120);
	char row[1024];
	row_text(1, row, sizeof row);
	int labels = 0;
	for (const char *p = row; (p = strstr(p, "c=")) != NULL; p += 2)
		labels++;
	if (labels < 1 || labels > 3)
		fail_msg("%d labels in \"%s\"", labels, row);
	assert_non_null(strstr(row, "c=40"));
	/* Every label is followed by a blank or a marker line, not by
	 * another label's text. */
	for (const char *p = row; (p = strstr(p, "c=")) != NULL; p += 2) {
		const char *q = p + 2;
		while (*q >= '0' && *q <= '9')
			q++;
		assert_true(*q == ' ' || (unsigned char)*q >= 0x80);
	}
	fixture_free(&f);
}

static void test_hist_bounds(void **state)
{
	(void)state;
	int64_t le[64];
	int n = w_hist_bounds(1000, 1000000, 30, le);
	assert_int_equal(n, 30);
	for (int i = 1; i < n; i++)
		assert_true(le[i] > le[i - 1]);
	assert_int_equal(le[n - 1], 1000000);
	/* Log spacing: equal ratios, so the tail gets as many rows as the
	 * body. */
	double r1 = (double)le[1] / (double)le[0], r2 = (double)le[n - 1] / (double)le[n - 2];
	assert_true(r1 > r2 * 0.95 && r1 < r2 * 1.05);
	/* A narrow range: fewer, distinct bounds (10, 11, 12, 13, 14). */
	n = w_hist_bounds(10, 14, 30, le);
	assert_int_equal(n, 5);
	assert_int_equal(le[0], 10);
	assert_int_equal(le[n - 1], 14);
	n = w_hist_bounds(5, 5, 30, le);
	assert_int_equal(n, 1);
	assert_int_equal(le[0], 5);
}

static void record(struct stats *st, int64_t ttft_us)
{
	struct req_result r = {
		.ok = true, .ttfb_ns = ttft_us * 500, .ttft_ns = ttft_us * 1000, .e2e_ns = ttft_us * 3000,
		.output_tokens = 4, .prompt_tokens = 10, .chunks = 4, .retry_after_ns = -1, .usage_tokens = -1,
	};
	st->in_flight++;
	stats_request_done(st, &r);
}

/* Tokens that came in the same read have an ITL of exactly 0: they get
 * one "= 0" row, and the other rows span the nonzero samples (8 to 12
 * ms here) instead of rows of "0.00" from 1 µs up. */
static void test_hist_zero_row(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	struct hist *h = f.st->win[STAT_ITL];
	hist_record_n(h, 0, 600);
	for (int i = 0; i < 400; i++)
		hist_record(h, 8000 + i * 10);
	draw_panel(&f.d, PANEL_HIST, HIST_ITL, 30, 90);
	char row[1024];
	int zero_rows = 0, tiny = 0;
	for (int y = 1; y < 29; y++) {
		row_text(y, row, sizeof row);
		if (strstr(row, "= 0\xe2\x94\x82"))
			zero_rows++;
		const char *p = strstr(row, "\xe2\x89\xa4 ");
		if (p && atof(p + 4) < 7.9)
			tiny++;
	}
	assert_int_equal(zero_rows, 1);
	if (tiny)
		fail_msg("%d rows below the smallest nonzero sample (8 ms)", tiny);
	fixture_free(&f);
}

/* The p99 mark's row: the row above ends below p99, the row itself at
 * or above it. */
static void test_hist_p99_mark(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	/* 980 fast requests around 20 ms, a tail to 900 ms. */
	for (int i = 0; i < 980; i++)
		record(f.st, 20000 + i * 7);
	for (int i = 0; i < 20; i++)
		record(f.st, 100000 + i * 40000);
	int64_t p99 = hist_percentile(f.st->win[STAT_TTFT], 99);
	draw_panel(&f.d, PANEL_HIST, HIST_TTFT, 30, 90);
	char row[1024], title[1024];
	row_text(0, title, sizeof title);
	assert_non_null(strstr(title, "TTFT client"));
	assert_non_null(strstr(title, "p99"));
	double prev = -1, lo = -1, hi = -1;
	for (int y = 1; y < 29; y++) {
		row_text(y, row, sizeof row);
		/* "│     20.0│■■■   123 ◀ p50" */
		const char *p = row;
		while (*p && (*p == ' ' || (unsigned char)*p >= 0x80))
			p++;
		double b = atof(p);
		if (strstr(row, "p99")) {
			lo = prev;
			hi = b;
			break;
		}
		prev = b;
	}
	double p99_ms = (double)p99 / 1000.0;
	if (!(hi >= p99_ms * 0.995 && (lo < 0 || lo < p99_ms * 1.005)))
		fail_msg("p99 %.3f ms marked in the bucket (%.3f, %.3f]", p99_ms, lo, hi);
	fixture_free(&f);
}

static void test_joules_per_token(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	char gpu_url[] = "http://gpu:9400/metrics";
	f.cfg.gpu_metrics_url = gpu_url;
	f.srv.status = SERVER_UP;
	f.srv.gpu_status = SERVER_UP;
	f.srv.ngpus = 1;
	snprintf(f.srv.gpu[0].name, sizeof f.srv.gpu[0].name, "H100");
	f.srv.power_total_w = (struct server_value){.v = 350, .valid = true};
	f.v.server = &f.srv;
	static const struct {
		bool valid;
		double v;
		const char *want;
	} cases[] = {
		{false, 0, "\xe2\x80\x93 J/token"},   /* no tokens yet */
		{true, 0, "\xe2\x80\x93 J/token"},    /* energy has not moved */
		{true, 0.42, "0.42 J/token"},
	};
	char top[1024];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		f.srv.joules_per_token = (struct server_value){.v = cases[i].v, .valid = cases[i].valid};
		draw_panel(&f.d, PANEL_GPU, PANEL_COMPACT, 5, 100);
		row_text(0, top, sizeof top);
		if (!strstr(top, cases[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, top, cases[i].want);
	}
	fixture_free(&f);
}

/* GPU history: each GPU's points come back in their slots, a value holds
 * until the next scrape, a long silence is a gap, and the ring keeps the
 * newest points in fixed memory. */
static void test_gpu_history(void **state)
{
	(void)state;
	struct gpu_history *h = calloc(1, sizeof *h);
	assert_non_null(h);
	struct server_state srv;
	memset(&srv, 0, sizeof srv);
	srv.ngpus = 2;
	double out[100];
	int64_t a, b;
	assert_int_equal(gpu_history_extent(h, &a, &b), -1);
	for (int i = 0; i < 10; i++) {
		srv.gpu[0].util_pct = (struct server_value){.v = 10.0 * i, .valid = true};
		srv.gpu[0].mem_used_mib = (struct server_value){.v = 40000, .valid = true};
		srv.gpu[0].mem_total_mib = (struct server_value){.v = 80000, .valid = true};
		srv.gpu[1].power_w = (struct server_value){.v = 300, .valid = true};
		/* One scrape every 2 s, then 20 s of silence before the last. */
		gpu_history_push(h, T0 + (i < 9 ? 2 * i : 36) * S, &srv);
	}
	assert_int_equal(gpu_history_extent(h, &a, &b), 0);
	assert_true(a == T0 && b == T0 + 36 * S);
	/* 40 slots of 1 s over (T0 - 4 s, T0 + 36 s]. */
	size_t got = gpu_history_read(h, 0, GPU_HIST_UTIL, T0 + 36 * S, 40 * S, out, 40);
	assert_int_equal(got, 10);
	assert_true(out[4] == 0 && out[6] == 10 && out[7] == 10 && out[20] == 80);
	assert_true(isnan(out[3]));           /* before the first scrape */
	assert_true(isnan(out[30]));          /* the 20 s silence: a gap */
	assert_true(out[39] == 90);
	gpu_history_read(h, 0, GPU_HIST_MEM, T0 + 36 * S, 40 * S, out, 40);
	assert_true(fabs(out[4] - 0.5) < 1e-6);
	/* Not reported: NaN, never 0. */
	assert_int_equal(gpu_history_read(h, 1, GPU_HIST_UTIL, T0 + 36 * S, 40 * S, out, 40), 0);
	assert_int_equal(gpu_history_read(h, 1, GPU_HIST_POWER, T0 + 36 * S, 40 * S, out, 40), 10);
	assert_int_equal(gpu_history_read(h, 2, GPU_HIST_POWER, T0 + 36 * S, 40 * S, out, 40), 0);
	/* The ring wraps: only the newest GPU_HIST_POINTS stay. */
	for (int i = 0; i < GPU_HIST_POINTS + 5; i++)
		gpu_history_push(h, T0 + (100 + i) * S, &srv);
	assert_int_equal(gpu_history_extent(h, &a, &b), 0);
	assert_true(a == T0 + 105 * S && b == T0 + (100 + GPU_HIST_POINTS + 4) * S);
	free(h);
}

/* panels.def is the one list of panels: every kind has a widget, a name
 * of its own (the same one layout and widget tables say), and the panels
 * that can be focused are boxed ones, exactly those they always were. */
static void test_panel_table(void **state)
{
	(void)state;
	static const enum panel_kind focusable[] = {PANEL_LATENCY, PANEL_SERVER, PANEL_GPU,
						    PANEL_CHART,   PANEL_ERRORS, PANEL_STEPS,
						    PANEL_HIST,    PANEL_GPU_HIST, PANEL_REQUESTS,
						    PANEL_SESSIONS, PANEL_REPLICAS};
	for (int k = 0; k < PANEL_KIND_N; k++) {
		assert_non_null(widgets[k].draw);
		assert_non_null(widgets[k].name);
		assert_string_equal(layout_panel_name((enum panel_kind)k), widgets[k].name);
		for (int j = 0; j < k; j++)
			assert_string_not_equal(widgets[j].name, widgets[k].name);
		bool want = false;
		for (size_t i = 0; i < sizeof focusable / sizeof focusable[0]; i++)
			want |= focusable[i] == (enum panel_kind)k;
		assert_int_equal(layout_focusable((enum panel_kind)k), want);
		if (want)
			assert_true(widgets[k].boxed);
	}
	assert_false(layout_focusable(PANEL_KIND_N));
	assert_string_equal(layout_panel_name(PANEL_GPU_HIST), "gpu-history");
	assert_false(widgets[PANEL_KEYBAR].boxed);
	assert_true(widgets[PANEL_HELP].boxed);
}

/* The sessions / cache panel: the live hit rate (window and run), TTFT
 * warm vs cold, TTFT p50 by turn up to "8+", sessions ended; flagged for
 * the layout only once the run has such figures, and drawn without
 * touching the stats. */
static void test_sessions_panel(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	struct req_result q = {.ok = true, .ttfb_ns = 1000000, .ttft_ns = 40000000, .e2e_ns = 90000000,
			       .output_tokens = 4, .prompt_tokens = 1000, .chunks = 4, .retry_after_ns = -1,
			       .usage_tokens = -1, .cached_tokens = -1};
	f.st->in_flight++;
	stats_request_done(f.st, &q);
	assert_false(widgets_layout_flags(&f.v) & LAYOUT_SESSIONS);
	/* A server that says "0 cached" to single requests: still nothing. */
	q.cached_tokens = 0;
	f.st->in_flight++;
	stats_request_done(f.st, &q);
	assert_false(widgets_layout_flags(&f.v) & LAYOUT_SESSIONS);
	/* Turn 1 cold (0 of 1000 cached, 40 ms), turns 2..10 warm (900 of
	 * 1000, 5 ms): 8100 of 10000 prompt tokens cached. */
	for (uint32_t t = 1; t <= 10; t++) {
		q.turn = t;
		q.cached_tokens = t == 1 ? 0 : 900;
		q.ttft_ns = t == 1 ? 40000000 : 5000000;
		f.st->in_flight++;
		stats_request_done(f.st, &q);
	}
	struct session_result sr = {.ok = false, .context_limit = true, .turns = 10, .duration_ns = 2 * S,
				    .context_tokens = 9000};
	stats_session_done(f.st, &sr);
	assert_true(widgets_layout_flags(&f.v) & LAYOUT_SESSIONS);

	struct stats before = *f.st;
	draw_panel(&f.d, PANEL_SESSIONS, 0, LAYOUT_SESSIONS_H, 100);
	assert_memory_equal(&before, f.st, sizeof before);
	char row[1024];
	row_text(0, row, sizeof row);
	assert_non_null(strstr(row, "Sessions / cache"));
	row_text(1, row, sizeof row);
	if (!strstr(row, "hit rate 73.6%") || !strstr(row, "run 73.6%") || !strstr(row, "silent req 1"))
		fail_msg("cache row: \"%s\"", row);
	row_text(2, row, sizeof row);
	if (!strstr(row, "warm p50 5.00") || !strstr(row, "n 9") || !strstr(row, "cold p50 40.0") || !strstr(row, "n 2"))
		fail_msg("TTFT row: \"%s\"", row);
	row_text(3, row, sizeof row);
	if (!strstr(row, "turn") || !strstr(row, "      7     8+"))
		fail_msg("turn row: \"%s\"", row);
	row_text(4, row, sizeof row);
	if (!strstr(row, "TTFT p50 ms   40.0   5.00") || !strstr(row, "5.00   5.00 "))
		fail_msg("by-turn row: \"%s\"", row);
	row_text(5, row, sizeof row);
	if (!strstr(row, "E2E p50 ms    90.0   90.0"))
		fail_msg("by-turn E2E row: \"%s\"", row);
	row_text(6, row, sizeof row);
	if (!strstr(row, "done 1") || !strstr(row, "failed 1") || !strstr(row, "context limit 1") ||
	    !strstr(row, "turns/session 10.0") || !strstr(row, "duration p50 2.0s"))
		fail_msg("sessions row: \"%s\"", row);
	fixture_free(&f);
}

/* The replicas panel: one row per replica (its host:port, status and
 * figures, its share of the generated tokens, the age of its last good
 * scrape), "N of M read" and the load imbalance; flagged for the layout
 * only with 2+ replicas, and drawn without touching the server state. */
static void test_replicas_panel(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	server_state_init(&f.srv);
	f.v.server = &f.srv;
	f.srv.status = SERVER_UP;
	f.srv.nreplicas = 1;
	assert_false(widgets_layout_flags(&f.v) & LAYOUT_REPLICAS);
	f.srv.nreplicas = 3;
	f.srv.replicas_read = 2;
	static const double run[3] = { 6, 2, 0 }, gen[3] = { 300, 100, 100 };
	for (int i = 0; i < 3; i++) {
		struct server_replica *p = &f.srv.replica[i];
		snprintf(p->url, sizeof p->url, "http://10.0.0.%d:8000/metrics", i + 1);
		p->status = i == 2 ? SERVER_DOWN : SERVER_UP;
		p->last_ok_ns = f.d.now - (int64_t)(i + 1) * S / 2;
		p->running = (struct server_value){ .v = run[i], .valid = i < 2 };
		p->waiting = (struct server_value){ .v = 0, .valid = i < 2 };
		p->kv = (struct server_value){ .v = 0.25 * (i + 1), .valid = i < 2 };
		p->run_gen_tokens = (struct server_value){ .v = gen[i], .valid = true };
	}
	assert_true(widgets_layout_flags(&f.v) & LAYOUT_REPLICAS);
	struct server_state before = f.srv;
	draw_panel(&f.d, PANEL_REPLICAS, 0, LAYOUT_REPLICAS_H, 100);
	assert_memory_equal(&before, &f.srv, sizeof before);
	char row[1024];
	row_text(0, row, sizeof row);
	if (!strstr(row, "Replicas") || !strstr(row, "2 of 3 read"))
		fail_msg("title: \"%s\"", row);
	row_text(2, row, sizeof row);
	if (!strstr(row, "1 10.0.0.1:8000") || !strstr(row, "up     6     0    25%    60%    0.5s"))
		fail_msg("replica 1: \"%s\"", row);
	row_text(4, row, sizeof row);
	if (!strstr(row, "3 10.0.0.3:8000") || !strstr(row, "down"))
		fail_msg("replica 3: \"%s\"", row);
	/* Running + waiting over the two read: 6 and 2, mean 4, max/mean 1.5. */
	row_text(LAYOUT_REPLICAS_H - 2, row, sizeof row);
	if (!strstr(row, "imbalance (max/mean of running+waiting) 1.50"))
		fail_msg("imbalance: \"%s\"", row);
	fixture_free(&f);
}

/* client_metrics.def is the one list of the latency table's rows: each
 * variant shows the metrics declared for it, in the table's order, under
 * their names, in as many rows as the layout gives it. */
static const char *const dash_names[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, ...) [STAT_##id] = dash,
#include "infertop/client_metrics.def"
};

static bool dash_shown(enum stat_metric m, int variant, unsigned flags)
{
	switch (m) {
#define CLIENT_METRIC(id, key, dash, dash_when, ...) \
	case STAT_##id:                              \
		return LAYOUT_LATENCY_##dash_when(variant, flags);
#include "infertop/client_metrics.def"
	default:
		return false;
	}
}

static void test_latency_rows(void **state)
{
	(void)state;
	struct fixture f;
	fixture_init(&f, 0);
	record(f.st, 20000);
	static const struct {
		int variant;
		unsigned flags;
	} cases[] = {{PANEL_COMPACT, 0}, {PANEL_COMPACT, LAYOUT_QUEUE}, {PANEL_DETAIL, 0}, {PANEL_DETAIL, LAYOUT_QUEUE}};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		f.d.layout_flags = cases[c].flags;
		int h = layout_latency_rows(cases[c].variant, cases[c].flags);
		/* Taller than it needs (a maximised panel): no row beyond the
		 * declared ones. */
		draw_panel(&f.d, PANEL_LATENCY, cases[c].variant, h + 3, 120);
		/* The rows' names, top to bottom. */
		const char *got[STAT_NMETRICS + 1];
		int ngot = 0;
		char row[1024];
		for (int y = 0; y < h + 3; y++) {
			row_text(y, row, sizeof row);
			char *p = row;
			while (*p == ' ' || (unsigned char)*p >= 0x80)
				p++;
			p[strcspn(p, " ")] = '\0';
			for (int m = 0; m < STAT_NMETRICS; m++)
				if (strcmp(p, dash_names[m]) == 0 && ngot <= STAT_NMETRICS)
					got[ngot++] = dash_names[m];
		}
		int want = 0;
		for (int m = 0; m < STAT_NMETRICS; m++) {
			if (!dash_shown((enum stat_metric)m, cases[c].variant, cases[c].flags))
				continue;
			if (want >= ngot || strcmp(got[want], dash_names[m]) != 0)
				fail_msg("variant %d flags %u: row %d is %s, want %s", cases[c].variant, cases[c].flags,
					 want, want < ngot ? got[want] : "none", dash_names[m]);
			want++;
		}
		assert_int_equal(ngot, want);
		assert_int_equal(h, 3 + want);
	}
	/* The detail shows every metric. */
	assert_int_equal(layout_latency_rows(PANEL_DETAIL, 0), 3 + STAT_NMETRICS);
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chart_axis_follows_zoom),
		cmocka_unit_test(test_chart_ticks_nice),
		cmocka_unit_test(test_chart_scale_kept),
		cmocka_unit_test(test_chart_title_current),
		cmocka_unit_test(test_markers_thinned),
		cmocka_unit_test(test_hist_bounds),
		cmocka_unit_test(test_hist_p99_mark),
		cmocka_unit_test(test_hist_zero_row),
		cmocka_unit_test(test_joules_per_token),
		cmocka_unit_test(test_gpu_history),
		cmocka_unit_test(test_panel_table),
		cmocka_unit_test(test_latency_rows),
		cmocka_unit_test(test_sessions_panel),
		cmocka_unit_test(test_replicas_panel),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
