/* Hours-long runs in compressed time, and what a snapshot costs the loop.
 *
 *   bench_soak [-n REQUESTS] [-b SECONDS] [-c STREAMS] [--request-log]
 *              [--prefault] [--stall-seconds S] [--bin PATH]
 *
 * Phase 1 (soak): `infertop sim --timing fixed --ttft 0 --itl 0` serves
 * 2-token streams as fast as it can; the engine runs REQUESTS (default
 * 10 million) of them on STREAMS (default 64) streams, with a snapshot
 * every second, for at most SECONDS (default 240) of wall time. Prints
 * this process's RSS at 100k requests, at every power of ten after, and at
 * the end; if the budget ran out first, the RSS at 10M is extrapolated
 * from the growth between 1M requests (or the halfway point) and the end,
 * and the output says so.
 *
 * What grows: the histograms (96 of 184 KiB: 8 metrics x whole run,
 * window and 10 slices) come from calloc and cost nothing until a bucket
 * is first hit, so RSS climbs while the first window fills and, slowly,
 * whenever a tail value lands in an octave not seen before; 17.7 MiB at
 * most. --prefault touches them all before the run (record 0 and the top
 * value, reset: the reset clears the whole range) to show the flat
 * figure that leaves. The time series are time-bound, not request-bound
 * (1.3 MiB, filled over 14 days), so compressed time does not show them.
 *
 * Phase 2 (stall): a 1 ms probe timer measures how late the loop runs
 * (its lateness is what every token timestamp would suffer), with 32
 * streams of 2 ms tokens, for S seconds (default 10) without snapshots
 * and S seconds with one every second. The engine's state carries two
 * days of time series, so each snapshot is as large as a long run's
 * (about 1.5 MB). Prints the probe's lateness and the ITL percentiles of
 * both runs, and the loop's direct cost per snapshot (pipe + fork). */
#include "config.h"

#include <curl/curl.h>
#include <ev.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/hist.h"
#include "infertop/series.h"
#include "infertop/sim.h"
#include "infertop/snapshot.h"

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

struct soak {
	int64_t t0, budget_ns;
	uint64_t next_mark;
	uint64_t n_at[16];
	long rss_at[16];
	double t_at[16];
	int nmarks;
	uint64_t half_n;
	long half_rss;
	/* every 10 s: the shape of the curve, not just its ends */
	int64_t next_trace;
	int ntrace;
	uint64_t trace_n[64];
	long trace_rss[64];
	uint64_t snaps, snap_fail;
	int64_t stall_max, stall_sum;
};

static uint64_t ended(const struct engine *e)
{
	return e->stats->run_c.completed + stats_errors_total(e->stats);
}

static void soak_tick(struct engine *e, void *ud, int64_t now)
{
	struct soak *s = ud;
	uint64_t n = ended(e);
	while (s->next_mark && n >= s->next_mark && s->nmarks < 16) {
		s->n_at[s->nmarks] = n;
		s->rss_at[s->nmarks] = rss_kib();
		s->t_at[s->nmarks] = (double)(now - s->t0) / 1e9;
		s->nmarks++;
		s->next_mark *= 10;
	}
	if (now - s->t0 >= s->next_trace && s->ntrace < 64) {
		s->trace_n[s->ntrace] = n;
		s->trace_rss[s->ntrace++] = rss_kib();
		s->next_trace += 10 * CLOCK_NS_PER_S;
	}
	if (!s->half_n && now - s->t0 >= s->budget_ns / 2) {
		s->half_n = n;
		s->half_rss = rss_kib();
	}
	if (e->state == ENGINE_RUNNING && now - s->t0 >= s->budget_ns)
		engine_stop(e, "time budget");
}

static void count_snap(void *ud, const struct snapshot_result *r)
{
	struct soak *s = ud;
	if (r->ok)
		s->snaps++;
	else
		s->snap_fail++;
	if (r->stall_ns > s->stall_max)
		s->stall_max = r->stall_ns;
	s->stall_sum += r->stall_ns;
}

static const char *bin_path = "./infertop";

static int start_sim(struct sim_child *c, const char *const *args)
{
	char err[256];
	if (sim_spawn(bin_path, args, c, err, sizeof err) != 0) {
		fprintf(stderr, "bench_soak: cannot start the simulator (%s): %s\n", bin_path, err);
		return -1;
	}
	return 0;
}

static struct engine *make_engine(struct config *cfg, struct ev_loop *loop, const char **args, int port)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	const char *argv[64] = {"infertop", "--no-tui", "-q", "--metrics-url", "none"};
	int argc = 5;
	for (int i = 0; args[i]; i++)
		argv[argc++] = args[i];
	argv[argc++] = url;
	if (cli_parse(cfg, argc, (char **)argv) != CLI_RUN)
		return NULL;
	char err[256];
	struct engine *e = engine_new(cfg, loop, err, sizeof err);
	if (!e || engine_probe(e, err, sizeof err) != 0) {
		fprintf(stderr, "bench_soak: %s\n", err);
		engine_free(e);
		return NULL;
	}
	return e;
}

static void prefault_hist(struct hist *h)
{
	hist_record(h, 0);
	hist_record(h, HIST_TOP_US);
	hist_reset(h);
}

static void prefault(struct engine *e)
{
	for (int m = 0; m < STAT_NMETRICS; m++) {
		prefault_hist(e->stats->run[m]);
		prefault_hist(e->stats->win[m]);
		for (int k = 0; k < STATS_SLICES; k++)
			prefault_hist(e->stats->slice[m][k]);
	}
}

static int soak(uint64_t requests, int64_t budget_ns, long streams, bool reqlog, bool pre, const char *dir)
{
	struct sim_child sim = {.pid = -1};
	const char *sargs[] = {"--timing", "fixed", "--ttft", "0", "--itl", "0", NULL};
	if (start_sim(&sim, sargs) != 0)
		return 1;
	char n[32], c[32], logp[600];
	snprintf(n, sizeof n, "%" PRIu64, requests);
	snprintf(c, sizeof c, "%ld", streams);
	snprintf(logp, sizeof logp, "%s/requests.jsonl", dir);
	const char *args[32] = {"-c", c, "-n", n, "--output-tokens", "2", "--input-tokens", "8",
				"--snapshot-dir", dir, "--snapshot-every", "1s", "--timeout", "30s"};
	int na = 14;
	if (reqlog) {
		args[na++] = "--request-log";
		args[na++] = logp;
		args[na++] = "--request-log-max";
		args[na++] = "64M";
	}
	args[na] = NULL;
	struct config cfg;
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	long rss_before = rss_kib();
	struct engine *e = make_engine(&cfg, loop, args, sim.port);
	if (!e) {
		sim_child_stop(&sim);
		return 1;
	}
	if (pre)
		prefault(e);
	struct soak s = {.next_mark = 100000, .budget_ns = budget_ns};
	snapshot_writer_set_callback(e->snap, count_snap, &s);
	e->on_tick = soak_tick;
	e->on_tick_ud = &s;
	s.t0 = clock_now_ns();
	engine_run(e);
	int64_t t1 = clock_now_ns();
	long rss_end = rss_kib();
	uint64_t done = ended(e);
	double secs = (double)(t1 - s.t0) / 1e9;

	printf("soak: %" PRIu64 " requests in %.1f s (%.0f req/s, %" PRIu64 " failed), %ld streams%s%s\n", done,
	       secs, (double)done / secs, stats_errors_total(e->stats), streams, reqlog ? ", request log on" : "",
	       pre ? ", histograms prefaulted" : "");
	printf("soak: %" PRIu64 " snapshots written during the run (%" PRIu64 " failed)\n", s.snaps, s.snap_fail);
	printf("soak: RSS before the run %ld KiB\n", rss_before);
	for (int i = 0; i < s.ntrace; i++)
		printf("soak: t=%4ds %10" PRIu64 " requests  RSS %ld KiB\n", i * 10, s.trace_n[i], s.trace_rss[i]);
	for (int i = 0; i < s.nmarks; i++)
		printf("soak: RSS at %10" PRIu64 " requests (%6.1f s): %ld KiB\n", s.n_at[i], s.t_at[i], s.rss_at[i]);
	printf("soak: RSS at %10" PRIu64 " requests (%6.1f s): %ld KiB (end)\n", done, secs, rss_end);
	if (s.nmarks > 0) {
		long base = s.rss_at[0];
		if (done >= 10000000) {
			printf("soak: RSS at 10M / RSS at 100k = %.3f (target <= 1.10), measured\n",
			       (double)rss_end / (double)base);
		} else {
			/* Growth per request from 1M (or halfway) to the end,
			 * carried on to 10M: an estimate, not a measurement. */
			uint64_t n0 = s.nmarks > 1 ? s.n_at[1] : s.half_n;
			long r0 = s.nmarks > 1 ? s.rss_at[1] : s.half_rss;
			double slope = done > n0 ? (double)(rss_end - r0) / (double)(done - n0) : 0;
			if (slope < 0)
				slope = 0;
			double est = (double)rss_end + slope * (double)(10000000 - done);
			printf("soak: ran %" PRIu64 " requests, not 10M: the budget ran out first\n", done);
			printf("soak: growth from %" PRIu64 " to %" PRIu64 " requests: %.4f KiB per 1000 requests\n", n0,
			       done, slope * 1000);
			printf("soak: EXTRAPOLATED RSS at 10M %.0f KiB; / RSS at 100k = %.3f (target <= 1.10)\n", est,
			       est / (double)base);
			printf("soak: measured RSS at %" PRIu64 " / RSS at 100k = %.3f\n", done, (double)rss_end / (double)base);
		}
	}
	engine_free(e);
	cli_free(&cfg);
	sim_child_stop(&sim);
	return 0;
}

/* ---- stall ---- */

struct probe {
	ev_timer t;
	int64_t due;
	struct hist *late;
	bool on;
};

static void on_probe(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	struct probe *p = w->data;
	int64_t now = clock_now_ns();
	if (p->due)
		hist_record(p->late, (now - p->due) / 1000);
	p->due = now + CLOCK_NS_PER_MS;
	ev_timer_set(w, 0.001, 0.);
	ev_timer_start(loop, w);
}

static void stall_tick(struct engine *e, void *ud, int64_t now)
{
	(void)e;
	(void)now;
	struct probe *p = ud;
	/* The probe runs while requests run; after the end it would only
	 * keep the loop alive. */
	if (e->state == ENGINE_DONE && p->on) {
		ev_timer_stop(e->loop, &p->t);
		p->on = false;
	}
}

static void fill_series(struct engine *e)
{
	/* Two days of one-second points: a long run's snapshot size. */
	int64_t now = clock_now_ns(), span = 2 * 86400;
	int64_t t0 = now - span * CLOCK_NS_PER_S;
	double v[SER_N];
	struct series *fresh = series_new();
	if (!fresh)
		return;
	for (int64_t i = 0; i < span; i++) {
		for (int k = 0; k < SER_N; k++)
			v[k] = (double)((i * 7 + k) % 1000) / 7.0;
		series_push(fresh, t0 + i * CLOCK_NS_PER_S, v);
	}
	series_free(e->series);
	e->series = fresh;
}

static int stall_run(bool snapshots, int secs, const char *dir, struct hist *late, struct hist *itl,
		     struct soak *s)
{
	struct sim_child sim = {.pid = -1};
	const char *sargs[] = {"--timing", "fixed", "--ttft", "2ms", "--itl", "2ms", NULL};
	if (start_sim(&sim, sargs) != 0)
		return 1;
	char d[32];
	snprintf(d, sizeof d, "%ds", secs);
	const char *with[] = {"-c", "32", "-d", d, "--output-tokens", "64", "--snapshot-dir", dir,
			      "--snapshot-every", "1s", NULL};
	const char *without[] = {"-c", "32", "-d", d, "--output-tokens", "64", "--snapshot-dir", dir, NULL};
	struct config cfg;
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	struct engine *e = make_engine(&cfg, loop, snapshots ? with : without, sim.port);
	if (!e) {
		sim_child_stop(&sim);
		return 1;
	}
	fill_series(e);
	snapshot_writer_set_callback(e->snap, count_snap, s);
	struct probe p = {.late = late, .on = true};
	ev_timer_init(&p.t, on_probe, 0.001, 0.);
	p.t.data = &p;
	ev_timer_start(loop, &p.t);
	e->on_tick = stall_tick;
	e->on_tick_ud = &p;
	engine_run(e);
	ev_timer_stop(loop, &p.t);
	hist_add(itl, e->stats->run[STAT_ITL]);
	engine_free(e);
	cli_free(&cfg);
	sim_child_stop(&sim);
	return 0;
}

static void print_hist(const char *what, const struct hist *h)
{
	printf("stall: %-34s n %8" PRIu64 "  p50 %7.3f  p99 %7.3f  p99.9 %7.3f  max %8.3f ms\n", what, hist_count(h),
	       (double)hist_percentile(h, 50) / 1e3, (double)hist_percentile(h, 99) / 1e3,
	       (double)hist_percentile(h, 99.9) / 1e3, (double)hist_max(h) / 1e3);
}

static int stall(int secs, const char *dir)
{
	struct hist *late[2] = {hist_new(), hist_new()}, *itl[2] = {hist_new(), hist_new()};
	struct soak s[2];
	memset(s, 0, sizeof s);
	int rc = 0;
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = stall_run(i == 1, secs, dir, late[i], itl[i], &s[i]);
	if (rc == 0) {
		print_hist("loop lateness, no snapshots:", late[0]);
		print_hist("loop lateness, a snapshot every 1 s:", late[1]);
		print_hist("ITL, no snapshots:", itl[0]);
		print_hist("ITL, a snapshot every 1 s:", itl[1]);
		printf("stall: %" PRIu64 " snapshots of a 2-day state; loop cost per snapshot (pipe+fork): "
		       "mean %.3f ms, max %.3f ms\n",
		       s[1].snaps, s[1].snaps ? (double)s[1].stall_sum / (double)s[1].snaps / 1e6 : 0.0,
		       (double)s[1].stall_max / 1e6);
	}
	for (int i = 0; i < 2; i++) {
		hist_free(late[i]);
		hist_free(itl[i]);
	}
	return rc;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_soak [-n REQUESTS] [-b SECONDS] [-c STREAMS] [--request-log] "
			"[--prefault] [--stall-seconds S] [--bin PATH] [--no-soak] [--no-stall]\n");
}

int main(int argc, char **argv)
{
	uint64_t requests = 10000000;
	int64_t budget = 240;
	long streams = 64;
	int stall_s = 10;
	bool reqlog = false, pre = false, do_soak = true, do_stall = true;
	const char *env = getenv("INFERTOP_BIN");
	if (env && *env)
		bin_path = env;
	static const struct option opts[] = {
		{"requests", required_argument, NULL, 'n'}, {"budget", required_argument, NULL, 'b'},
		{"concurrency", required_argument, NULL, 'c'}, {"request-log", no_argument, NULL, 'l'},
		{"stall-seconds", required_argument, NULL, 's'}, {"bin", required_argument, NULL, 'B'},
		{"prefault", no_argument, NULL, 'P'}, {"no-soak", no_argument, NULL, 'S'}, {"no-stall", no_argument, NULL, 'T'}, {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "n:b:c:", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			requests = strtoull(optarg, NULL, 10);
			break;
		case 'b':
			budget = strtoll(optarg, NULL, 10);
			break;
		case 'c':
			streams = strtol(optarg, NULL, 10);
			break;
		case 'l':
			reqlog = true;
			break;
		case 's':
			stall_s = atoi(optarg);
			break;
		case 'B':
			bin_path = optarg;
			break;
		case 'P':
			pre = true;
			break;
		case 'S':
			do_soak = false;
			break;
		case 'T':
			do_stall = false;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (requests < 1 || budget < 1 || streams < 1 || stall_s < 1) {
		usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char dir[] = "/tmp/bench_soak-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	int rc = 0;
	if (do_soak)
		rc = soak(requests, budget * CLOCK_NS_PER_S, streams, reqlog, pre, dir);
	if (rc == 0 && do_stall)
		rc = stall(stall_s, dir);
	/* The snapshots and logs were only the load's side effect. */
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_soak: could not remove %s\n", dir);
	curl_global_cleanup();
	return rc;
}
