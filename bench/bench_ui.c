/* Cost of one dashboard frame: layout, every widget, and ncurses' screen
 * update, at 120x40 and 250x70, with an hour of chart data, 100k requests
 * in the histograms, a server with eight GPUs, and a few requests finishing
 * between frames as in a real run. Output goes to /dev/null through a
 * 256-colour terminal description, so the escape sequences are produced but
 * no terminal emulator is timed.
 * Usage: bench_ui [FRAMES]   (default 400 per case) */
#include "config.h"

#include <curses.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/layout.h"
#include "infertop/profile.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/stats.h"
#include "infertop/theme.h"
#include "infertop/widget.h"
#include "../tests/screenfix.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static double unit(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double lognormal(double median, double sigma)
{
	return median * exp(sigma * sqrt(-2 * log(unit())) * cos(2 * M_PI * unit()));
}

static void one_request(struct stats *st)
{
	uint32_t gaps[64];
	for (int i = 0; i < 64; i++)
		gaps[i] = (uint32_t)lognormal(12000, 0.3);
	struct req_result r = {
		.ok = unit() > 0.002,
		.err = ERR_HTTP,
		.http_code = 503,
		.msg = "HTTP 503: server overloaded, retry later",
		.ttfb_ns = (int64_t)lognormal(40e6, 0.5),
		.output_tokens = 64,
		.prompt_tokens = 512,
		.chunks = 64,
	};
	r.ttft_ns = r.ttfb_ns + (int64_t)lognormal(5e6, 0.3);
	r.e2e_ns = r.ttft_ns + 64 * 12000000LL;
	st->in_flight++;
	if (r.ok)
		stats_record_itl_us(st, gaps, 64);
	stats_request_done(st, &r);
}

static void fill_server(struct server_state *s)
{
	memset(s, 0, sizeof *s);
	s->status = SERVER_UP;
	snprintf(s->detected, sizeof s->detected, "vllm");
	snprintf(s->url, sizeof s->url, "http://gpu-box:8000/metrics");
	s->scrapes = 1000;
	const double g[SRV_NGAUGES] = {48, 7, 0.83, 0.91, 0.4, 0.37, 12000, 6100};
	for (int i = 0; i < SRV_NGAUGES; i++) {
		s->gauge[i] = (struct server_value){.v = g[i], .valid = true};
		s->agg[i] = (struct server_agg){0, g[i] * 1.3, g[i] * 1000, 1000};
	}
	for (int i = 0; i < SRVL_N; i++) {
		s->p50[i] = (struct server_value){.v = 0.05 * (i + 1), .valid = true};
		s->p90[i] = (struct server_value){.v = 0.09 * (i + 1), .valid = true};
		s->p99[i] = (struct server_value){.v = 0.2 * (i + 1), .valid = true};
	}
	s->gpu_status = SERVER_UP;
	s->ngpus = 8;
	for (int i = 0; i < 8; i++) {
		struct server_gpu *gp = &s->gpu[i];
		snprintf(gp->name, sizeof gp->name, "NVIDIA H100 80GB HBM3");
		gp->util_pct = (struct server_value){.v = 90 + i, .valid = true};
		gp->mem_used_mib = (struct server_value){.v = 71000, .valid = true};
		gp->mem_total_mib = (struct server_value){.v = 81559, .valid = true};
		gp->power_w = (struct server_value){.v = 650, .valid = true};
		gp->temp_c = (struct server_value){.v = 64, .valid = true};
		gp->sm_clock_mhz = (struct server_value){.v = 1980, .valid = true};
		gp->tensor_active = (struct server_value){.v = 0.41, .valid = true};
		gp->dram_active = (struct server_value){.v = 0.77, .valid = true};
	}
	s->power_total_w = (struct server_value){.v = 5200, .valid = true};
	s->joules_per_token = (struct server_value){.v = 0.42, .valid = true};
}

static double run_case(struct engine *e, struct dash *d, int rows, int cols, enum ui_view view, int frames)
{
	resize_term(rows, cols);
	d->view = view;
	struct layout l;
	double total = 0;
	for (int f = -20; f < frames; f++) {
		/* Between frames: a few requests finish, time moves on. */
		for (int i = 0; i < 16; i++)
			one_request(e->stats);
		d->now += 250 * CLOCK_NS_PER_MS;
		int64_t t0 = clock_now_ns();
		layout_compute(rows, cols, view, widgets_layout_flags(d->v), &l);
		widgets_render(stdscr, &l, d);
		wnoutrefresh(stdscr);
		doupdate();
		int64_t t1 = clock_now_ns();
		if (f >= 0)
			total += (double)(t1 - t0);
	}
	return total / frames / 1000.0;
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 400;
	if (frames <= 0)
		frames = 400;
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "");
	const int64_t S = CLOCK_NS_PER_S, t0 = 1000 * S;

	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	char url[] = "http://gpu-box.example.com:8000", gpu[] = "http://gpu-box.example.com:9400/metrics";
	char model[] = "meta-llama/Llama-3.1-70B-Instruct";
	cfg.url = url;
	cfg.gpu_metrics_url = gpu;
	cfg.window_ns = 30 * S;
	cfg.grace_ns = 5 * S;
	struct engine e;
	memset(&e, 0, sizeof e);
	e.cfg = &cfg;
	e.model = model;
	e.state = ENGINE_RUNNING;
	e.t_start = t0;
	e.load.mode = LOAD_CLOSED;
	e.load.concurrency = 64;
	e.stats = stats_new(cfg.window_ns, t0);
	e.series = series_new();
	struct server_state srv;
	fill_server(&srv);
	e.server = &srv;
	/* An hour of GPU scrapes for the GPU view's history charts. */
	struct gpu_history *gh = calloc(1, sizeof *gh);
	if (!gh) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (int64_t s = 0; s < GPU_HIST_POINTS; s++) {
		for (int i = 0; i < 8; i++)
			srv.gpu[i].util_pct.v = 60 + 40 * unit();
		gpu_history_push(gh, t0 + s * S, &srv);
	}
	srv.gpu_hist = gh;
	if (!e.stats || !e.series) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (int i = 0; i < 100000; i++)
		one_request(e.stats);
	e.stats->in_flight = 64;
	/* An hour of points with a load change every five minutes. */
	const int64_t hour = 3600;
	for (int64_t s = 0; s < hour; s++) {
		double v[SER_N];
		double load = 16 + 8 * (double)(s / 300);
		v[SER_OUT_TOK_S] = load * 80 * (0.9 + 0.2 * unit());
		v[SER_REQ_S] = load * 1.2;
		v[SER_TTFT_P99] = 40 + load * 2 * unit();
		v[SER_ITL_P99] = 12 + load / 10;
		v[SER_IN_FLIGHT] = load;
		v[SER_TARGET] = load;
		v[SER_ERRORS] = unit() < 0.01 ? 1 : 0;
		v[SER_WAITING] = load > 64 ? load - 64 : 0;
		v[SER_RUNNING] = load < 64 ? load : 64;
		v[SER_KV] = load / 120 > 1 ? 1 : load / 120;
		series_push(e.series, t0 + s * S, v);
		if (s % 300 == 0) {
			char lab[24];
			snprintf(lab, sizeof lab, "c=%.0f", load);
			series_mark(e.series, t0 + s * S, lab);
		}
	}

	struct screenfix sf;
	unsigned long attr[THEME_NROLES];
	if (screenfix_open(&sf, true, attr) != 0) {
		fprintf(stderr, "cannot set up a screen on /dev/null\n");
		return 1;
	}
	const struct theme th = sf.theme;

	struct run_view v;
	engine_view(&e, &v);
	struct dash d = {
		.v = &v, .attr = attr, .now = t0 + hour * S,
		.zoom_ns = 600 * S, .zoom_name = "10m", .theme_name = th.name,
	};
	static const struct {
		int rows, cols;
		enum ui_view view;
		int64_t zoom;
		const char *zname;
	} cases[] = {
		{40, 120, VIEW_OVERVIEW, 600, "10m"}, {40, 120, VIEW_OVERVIEW, 0, "run"},
		{40, 120, VIEW_LATENCY, 600, "10m"}, {40, 120, VIEW_SERVER, 600, "10m"},
		{70, 250, VIEW_OVERVIEW, 600, "10m"}, {70, 250, VIEW_OVERVIEW, 0, "run"},
		{70, 250, VIEW_GPU, 600, "10m"}, {70, 250, VIEW_ERRORS, 600, "10m"},
		{40, 120, VIEW_HIST, 600, "10m"}, {70, 250, VIEW_HIST, 600, "10m"},
	};
	double worst = 0;
	printf("frame cost (layout + widgets + doupdate), %d frames per case, braille charts\n", frames);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		d.zoom_ns = cases[i].zoom * S;
		d.zoom_name = cases[i].zname;
		double us = run_case(&e, &d, cases[i].rows, cases[i].cols, cases[i].view, frames);
		if (us > worst)
			worst = us;
		printf("  %3dx%-3d %-8s zoom %-4s %8.1f us/frame   %.3f%% of one CPU at 4 Hz\n", cases[i].cols,
		       cases[i].rows, layout_view_name(cases[i].view), cases[i].zname, us, us * 4 / 1e6 * 100);
	}
	d.ascii = true;
	d.zoom_ns = 600 * S;
	d.zoom_name = "10m";
	double us = run_case(&e, &d, 70, 250, VIEW_OVERVIEW, frames);
	printf("  250x70  overview --ascii    %8.1f us/frame   %.3f%% of one CPU at 4 Hz\n", us, us * 4 / 1e6 * 100);
	if (us > worst)
		worst = us;
	printf("worst case %.1f us/frame: %.3f%% CPU at 4 Hz, %.2f%% at 60 Hz\n", worst, worst * 4 / 1e6 * 100,
	       worst * 60 / 1e6 * 100);
	screenfix_close(&sf);
	series_free(e.series);
	stats_free(e.stats);
	free(gh);
	return 0;
}
