#include "config.h"

#include <curl/curl.h>
#include <ev.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/config_file.h"
#include "infertop/control.h"
#include "infertop/dataset.h"
#include "infertop/engine.h"
#include "infertop/fleet.h"
#include "infertop/plan.h"
#include "infertop/redact.h"
#include "infertop/report.h"
#include "infertop/serve.h"
#include "infertop/sim.h"
#include "infertop/stats.h"
#include "infertop/snapshot.h"
#include "infertop/tools.h"
#include "infertop/ui.h"
#include "infertop/workers.h"

/* File descriptors beyond the streams themselves: stdio, epoll, the
 * connection cache's slack, the scrape and snapshot files. */
#define FD_HEADROOM 64

struct headless {
	int64_t next_progress;
	int64_t interval_ns;
	bool quiet;
};

static void on_tick(struct engine *e, void *ud, int64_t now)
{
	struct headless *h = ud;
	if (h->quiet)
		return;
	struct run_view v;
	engine_view(e, &v);
	if (v.state == ENGINE_DONE || now >= h->next_progress) {
		report_progress(stderr, &v, now);
		while (h->next_progress <= now)
			h->next_progress += h->interval_ns;
	}
}

/* Streams need one descriptor each; ask for the hard limit up front so a
 * high concurrency fails here, clearly, instead of as connect errors. */
static int fit_descriptors(long want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (want > 0 && (rlim_t)want + FD_HEADROOM > rl.rlim_cur) {
		fprintf(stderr,
			"infertop: %ld concurrent streams need about %ld file descriptors, but the limit is %llu.\n"
			"Raise it (ulimit -n %ld, or LimitNOFILE= in a unit file) or lower the concurrency.\n",
			want, want + FD_HEADROOM, (unsigned long long)rl.rlim_cur, want + FD_HEADROOM);
		return -1;
	}
	return 0;
}

static void on_start_at(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ONE);
}

/* --start-at: the load begins at that wall time (a fleet's common start);
 * the loop runs meanwhile, so the control API answers. */
static void wait_start_at(struct ev_loop *loop, double start_at)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double wait = start_at - ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	if (!(start_at > 0) || wait <= 0)
		return;
	ev_timer t;
	ev_timer_init(&t, on_start_at, wait, 0.);
	ev_timer_start(loop, &t);
	ev_run(loop, 0);
	ev_timer_stop(loop, &t);
}

static struct sim_child demo_child = {.pid = -1};

static void demo_stop(void)
{
	if (demo_child.pid > 0) {
		sim_child_stop(&demo_child);
		demo_child.pid = -1;
	}
}

static int demo_start(struct config *cfg)
{
	/* Sized so the default load (8 users) runs without a queue and a few
	 * presses of + make one appear: 12 slots, small KV cache. */
	const char *base[] = {"--max-running", "12", "--kv-tokens", "6144"};
	size_t nbase = sizeof base / sizeof base[0];
	const char **args = calloc(nbase + cfg->ndemo_args + 1, sizeof *args);
	if (!args)
		return -1;
	for (size_t i = 0; i < nbase; i++)
		args[i] = base[i];
	for (size_t i = 0; i < cfg->ndemo_args; i++)
		args[nbase + i] = cfg->demo_args[i];
	char err[256];
	int rc = sim_spawn("/proc/self/exe", args, &demo_child, err, sizeof err);
	free(args);
	if (rc != 0) {
		fprintf(stderr, "infertop: --demo: cannot start the simulator: %s\n", err);
		return -1;
	}
	atexit(demo_stop);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", demo_child.port);
	free(cfg->url);
	cfg->url = strdup(url);
	return cfg->url ? 0 : -1;
}

static int run(struct config *cfg, int argc, char **argv)
{
	if (fit_descriptors(cfg->rate > 0 ? cfg->max_concurrency : cfg->concurrency) != 0)
		return 2;
	if (cfg->demo && demo_start(cfg) != 0)
		return 2;
	/* One simulator for all of them: the workers are sent to its URL. */
	if (cfg->workers > 1)
		return workers_main(cfg, argc, argv);
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "infertop: cannot create the event loop\n");
		return 2;
	}
	char err[512];
	struct engine *e = engine_new(cfg, loop, err, sizeof err);
	if (!e) {
		fprintf(stderr, "infertop: %s\n", err);
		return 2;
	}
	/* A plan (stages, sweep, matrix) may peak above -c. */
	struct run_view v;
	engine_view(e, &v);
	if (fit_descriptors(plan_peak_concurrency(v.plan)) != 0) {
		engine_free(e);
		return 2;
	}
	if (engine_probe(e, err, sizeof err) != 0) {
		fprintf(stderr, "infertop: %s\n", err);
		engine_free(e);
		return 2;
	}
	/* The control API comes up once the run is built and the server
	 * answers, and before the dashboard, so its address is on the
	 * terminal. It serves until the result is written. */
	struct control *ctl = NULL;
	if (cfg->listen) {
		struct control_opts co = {
			.listen = cfg->listen,
			.token_env = cfg->listen_token_env,
			.metrics_open = cfg->listen_metrics_open,
			.id = cfg->id,
		};
		ctl = control_start(e, &co, stderr, err, sizeof err);
		if (!ctl) {
			fprintf(stderr, "infertop: %s\n", err);
			engine_free(e);
			return 2;
		}
	}
	struct ui *u = NULL;
	if (ui_wanted(cfg)) {
		u = ui_new(e, cfg, err, sizeof err);
		if (!u || ui_start(u, err, sizeof err) != 0) {
			fprintf(stderr, "infertop: %s; running headless\n", err);
			ui_free(u);
			u = NULL;
		}
	}
	struct headless h = {
		.next_progress = 0,
		.interval_ns = cfg->interval_ns,
		.quiet = cfg->quiet,
	};
	if (!u) {
		engine_set_on_tick(e, on_tick, &h);
	}
	if (!cfg->quiet && !u) {
		char mode[64];
		if (cfg->rate > 0)
			snprintf(mode, sizeof mode, "rate %.4g req/s", cfg->rate);
		else
			snprintf(mode, sizeof mode, "concurrency %ld", cfg->concurrency);
		char shown[1024];
		redact_url(engine_endpoint(e), shown, sizeof shown);
		engine_view(e, &v);
		fprintf(stderr, "infertop %s: %s, model %s, %s, %s\n", PACKAGE_VERSION, shown,
			v.model, mode, dataset_describe(v.dataset));
	}
	wait_start_at(loop, cfg->start_at);
	h.next_progress = clock_now_ns() + cfg->interval_ns;
	engine_run(e);
	/* The -o result is the final snapshot, written when the run ends, not
	 * when the user gets round to leaving the dashboard. */
	int rc = -1;
	engine_view(e, &v);
	if (u) {
		char saved[1200] = "";
		if (!v.hung_up) {
			rc = snapshot_write_final(&v, engine_snapshot_writer(e), stderr) == 0 ? 0 : 1;
			if (cfg->output_path)
				snprintf(saved, sizeof saved, rc == 0 ? "result saved to %s" : "could not save %s",
					 cfg->output_path);
		}
		ui_wait_quit(u, saved);
		ui_stop(u); /* the terminal is back before the summary */
		ui_free(u);
	}
	/* From here on nothing waits for the terminal: a hangup now must not
	 * cut the summary or the result short. */
	signal(SIGHUP, SIG_IGN);
	report_summary(stdout, &v);
	if (rc < 0)
		rc = snapshot_write_final(&v, engine_snapshot_writer(e), stderr) == 0 ? 0 : 1;
	/* Nothing succeeded: the figures describe no server behaviour at all,
	 * and a script must not take the run for a pass. */
	const struct stats *st = v.stats;
	if (rc == 0 && st->run_c.completed == 0 && stats_errors_total(st) > 0) {
		fprintf(stderr, "infertop: no request succeeded (%" PRIu64 " failed)\n", stats_errors_total(st));
		rc = 4;
	}
	if (rc == 0 && cfg->have_max_error_rate) {
		uint64_t failed = stats_errors_total(st);
		uint64_t ended = failed + st->run_c.completed;
		double share = ended ? (double)failed / (double)ended : 0.0;
		if (share > cfg->max_error_rate) {
			fprintf(stderr, "infertop: %.1f%% of requests failed, above --max-error-rate %g\n",
				100.0 * share, cfg->max_error_rate);
			rc = 3;
		}
	}
	control_stop(ctl);
	engine_free(e);
	ev_loop_destroy(loop);
	return rc;
}

/* A subcommand that talks HTTP (serve, fleet): curl up around it, and a
 * peer closing a socket is an error code, not a death. */
static int with_curl(int (*fn)(int, char **), int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "infertop: libcurl failed to initialise\n");
		return 2;
	}
	int rc = fn(argc, argv);
	curl_global_cleanup();
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "sim") == 0)
		return sim_main(argc - 1, argv + 1);
	if (argc > 1 && tools_is_command(argv[1]))
		return tools_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "fleet") == 0)
		return with_curl(fleet_main, argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return with_curl(serve_main, argc - 1, argv + 1);
	struct config cfg;
	/* The config file's options come first: the command line wins. */
	int cargc;
	char **cargv;
	int done = config_file_args(argc, argv, &cargc, &cargv);
	if (done != 0)
		return done;
	done = cli_parse_or_exit(&cfg, cargc, cargv);
	if (done >= 0) {
		config_file_free_args(cargc, cargv);
		return done;
	}
	/* A server closing a socket must be an error code, not a death. */
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "infertop: libcurl failed to initialise\n");
		config_file_free_args(cargc, cargv);
		cli_free(&cfg);
		return 2;
	}
	/* --workers hands the options on as written, the file's included. */
	int rc = run(&cfg, cargc, cargv);
	config_file_free_args(cargc, cargv);
	demo_stop();
	curl_global_cleanup();
	cli_free(&cfg);
	return rc;
}
