/* Cost of drawing the requests view on a real run: the engine in-process
 * against `infertop sim` (fixed timing, TTFT 50 ms, a token every 100 ms,
 * 4000-token streams: nobody finishes) with STREAMS users (default 1,000)
 * in flight. Once all are streaming, every engine tick (4 Hz) draws one
 * whole frame at 250x70 (layout, every widget, ncurses' update into
 * /dev/null through a 256-colour terminal description) and times it in
 * CPU time of this thread: the in-flight table sorted by number, sorted by
 * TTFT, filtered, and one request's detail. The figure to hold: <= 2% of a
 * core at 4 Hz.
 * Usage: bench_requests [STREAMS] [FRAMES]   (INFERTOP_BIN: the binary for
 * the simulator, default ./infertop) */
#include "config.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/layout.h"
#include "infertop/reqtrack.h"
#include "infertop/sim.h"
#include "infertop/theme.h"
#include "infertop/widget.h"
#include "../tests/screenfix.h"

enum { CASE_BY_NUMBER, CASE_BY_TTFT, CASE_FILTERED, CASE_DETAIL, NCASES };
static const char *const case_names[NCASES] = {
	"in-flight table, sorted by number", "in-flight table, sorted by TTFT (o x3)",
	"in-flight table, filter \"stream\"", "one request's detail (Enter)",
};

struct bench {
	long streams;
	int frames;
	unsigned long attr[THEME_NROLES];
	const char *theme_name;
	struct req_ui q;
	int cas;
	int done_frames;
	double cpu_us[NCASES], worst_us[NCASES];
	long rows_seen[NCASES];
	int64_t waited_from;
	bool finished;
};

static double thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void setup_case(struct bench *b, const struct run_view *v, int64_t now)
{
	memset(&b->q, 0, sizeof b->q);
	b->q.sort = -1;
	switch (b->cas) {
	case CASE_BY_TTFT:
		/* Through the view's own keys: number -> model -> status -> TTFT. */
		for (int i = 0; i < 3; i++)
			w_requests_key(&b->q, 'o', v, now);
		break;
	case CASE_FILTERED:
		snprintf(b->q.filter, sizeof b->q.filter, "stream");
		break;
	case CASE_DETAIL:
		w_requests_key(&b->q, KEY_DOWN, v, now);
		w_requests_key(&b->q, '\r', v, now);
		break;
	default:
		break;
	}
}

static void frame(struct bench *b, const struct run_view *v, int64_t now)
{
	struct layout l;
	struct dash d = {
		.v = v, .attr = b->attr, .now = now, .zoom_ns = 600 * CLOCK_NS_PER_S, .zoom_name = "10m",
		.view = VIEW_REQUESTS, .theme_name = b->theme_name, .rq = &b->q,
	};
	double t0 = thread_cpu_us();
	layout_compute(70, 250, VIEW_REQUESTS, widgets_layout_flags(v), &l);
	d.layout_flags = widgets_layout_flags(v);
	widgets_render(stdscr, &l, &d);
	wnoutrefresh(stdscr);
	doupdate();
	double us = thread_cpu_us() - t0;
	b->cpu_us[b->cas] += us;
	if (us > b->worst_us[b->cas])
		b->worst_us[b->cas] = us;
}

static void on_tick(struct engine *e, void *ud, int64_t now)
{
	struct bench *b = ud;
	if (b->finished)
		return;
	struct run_view v;
	engine_view(e, &v);
	/* Every user streaming first: a table of 1,000 live rows. */
	size_t streaming = 0;
	for (const struct request *r = reqtrack_live_first(v.requests); r; r = r->next)
		streaming += r->t_first_token != 0;
	if (b->cas == 0 && b->done_frames == 0 && streaming < (size_t)b->streams) {
		if (!b->waited_from)
			b->waited_from = now;
		if (now - b->waited_from > 60 * CLOCK_NS_PER_S) {
			fprintf(stderr, "only %zu of %ld streams after 60 s\n", streaming, b->streams);
			b->finished = true;
			engine_abort(e, "bench: streams did not start");
		}
		return;
	}
	if (b->done_frames == 0) {
		setup_case(b, &v, now);
		b->rows_seen[b->cas] = (long)streaming;
	}
	frame(b, &v, now);
	if (++b->done_frames == b->frames) {
		b->done_frames = 0;
		if (++b->cas == NCASES) {
			b->finished = true;
			engine_abort(e, "bench done");
		}
	}
}

int main(int argc, char **argv)
{
	struct bench b = {0};
	b.streams = argc > 1 ? atol(argv[1]) : 1000;
	b.frames = argc > 2 ? atoi(argv[2]) : 40;
	if (b.streams <= 0)
		b.streams = 1000;
	if (b.frames <= 0)
		b.frames = 40;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	const char *bin = getenv("INFERTOP_BIN");
	const char *simargs[] = {"--timing", "fixed", "--ttft", "50ms", "--itl", "100ms", NULL};
	struct sim_child sim = {0};
	char err[256];
	if (sim_spawn(bin ? bin : "./infertop", simargs, &sim, err, sizeof err) != 0) {
		fprintf(stderr, "sim: %s\n", err);
		return 1;
	}
	char url[64], conc[32];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", sim.port);
	snprintf(conc, sizeof conc, "%ld", b.streams);
	char *av[] = {"infertop", "--no-tui", "-q", "-c", conc, "--output-tokens", "4000", "--metrics-url", "none",
		      url, NULL};
	struct config cfg;
	if (cli_parse(&cfg, 10, av) != CLI_RUN) {
		sim_child_stop(&sim);
		return 1;
	}
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct engine *e = loop ? engine_new(&cfg, loop, err, sizeof err) : NULL;
	if (!e || engine_probe(e, err, sizeof err) != 0) {
		fprintf(stderr, "engine: %s\n", err);
		sim_child_stop(&sim);
		return 1;
	}

	struct screenfix sf;
	if (screenfix_open(&sf, true, b.attr) != 0) {
		fprintf(stderr, "cannot set up a screen on /dev/null\n");
		return 1;
	}
	resize_term(70, 250);
	b.theme_name = sf.theme.name;

	engine_set_on_tick(e, on_tick, &b);
	engine_run(e);
	screenfix_close(&sf);

	printf("requests view at 250x70, %ld streams in flight, %d frames per case at the engine's 4 Hz tick\n",
	       b.streams, b.frames);
	double worst = 0;
	for (int c = 0; c < NCASES && b.cas == NCASES; c++) {
		double us = b.cpu_us[c] / b.frames;
		if (us > worst)
			worst = us;
		printf("  %-40s %8.1f us/frame (worst %7.1f)   %.3f%% of one CPU at 4 Hz\n", case_names[c], us,
		       b.worst_us[c], us * 4 / 1e6 * 100);
	}
	int rc = b.cas == NCASES ? 0 : 1;
	if (rc == 0)
		printf("worst case %.1f us/frame: %.3f%% of one CPU at 4 Hz (target <= 2%%)\n", worst,
		       worst * 4 / 1e6 * 100);
	engine_free(e);
	ev_loop_destroy(loop);
	cli_free(&cfg);
	sim_child_stop(&sim);
	return rc;
}
