#include "config.h"

#include <curl/curl.h>
#include <ev.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/config_file.h"
#include "infertop/control.h"
#include "infertop/dataset.h"
#include "infertop/engine.h"
#include "infertop/fleet.h"
#include "infertop/loop.h"
#include "infertop/redact.h"
#include "infertop/report.h"
#include "infertop/serve.h"
#include "infertop/session.h"
#include "infertop/sim.h"
#include "infertop/tools.h"
#include "infertop/ui.h"
#include "infertop/workers.h"

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
	/* A simulator given a certificate (--sim-arg --tls-cert FILE)
	 * serves https only. */
	bool tls = false;
	for (size_t i = 0; i < cfg->ndemo_args; i++)
		tls = tls || strncmp(cfg->demo_args[i], "--tls-cert", 10) == 0;
	char url[64];
	snprintf(url, sizeof url, "%s://127.0.0.1:%d", tls ? "https" : "http", demo_child.port);
	free(cfg->url);
	cfg->url = strdup(url);
	if (!cfg->url)
		return -1;
	/* The simulator's GPU (a DCGM exporter following its load), unless
	 * one was named, or the server is not to be scraped at all
	 * (--metrics-url none: the simulated GPU is the server's): the GPU
	 * view and J/token then work in the demo. */
	if (!cfg->gpu_metrics_url && !(cfg->metrics_url && strcmp(cfg->metrics_url, "none") == 0)) {
		char gpu[96];
		snprintf(gpu, sizeof gpu, "%s%s", url, SIM_DCGM_URL_PATH);
		cfg->gpu_metrics_url = strdup(gpu);
		if (!cfg->gpu_metrics_url)
			return -1;
	}
	return 0;
}

/* What comes up between the probe and the load: the control API (its
 * address on the terminal, serving until the result is written), the
 * dashboard, or the headless progress lines and banner. */
struct front {
	struct config *cfg;
	struct control *ctl;
	struct ui *ui;
	struct headless h;
};

static int front_ready(struct session *s, void *ud)
{
	struct front *f = ud;
	struct config *cfg = f->cfg;
	struct engine *e = session_engine(s);
	char err[512];
	if (cfg->listen) {
		struct control_opts co = {
			.listen = cfg->listen,
			.token_env = cfg->listen_token_env,
			.metrics_open = cfg->listen_metrics_open,
			.id = cfg->id,
		};
		f->ctl = control_start(e, &co, stderr, err, sizeof err);
		if (!f->ctl) {
			fprintf(stderr, "infertop: %s\n", err);
			return SESSION_EXIT_USAGE;
		}
	}
	if (ui_wanted(cfg)) {
		f->ui = ui_new(e, cfg, err, sizeof err);
		if (!f->ui || ui_start(f->ui, err, sizeof err) != 0) {
			fprintf(stderr, "infertop: %s; running headless\n", err);
			ui_free(f->ui);
			f->ui = NULL;
		}
	}
	f->h = (struct headless){
		.next_progress = clock_now_ns() + cfg->interval_ns,
		.interval_ns = cfg->interval_ns,
		.quiet = cfg->quiet,
	};
	if (!f->ui)
		engine_set_on_tick(e, on_tick, &f->h);
	if (!cfg->quiet && !f->ui && cfg->insecure && cfg->url && strncasecmp(cfg->url, "https:", 6) == 0)
		fprintf(stderr, "infertop: warning: -k: TLS certificates and host names are not verified\n");
	if (!cfg->quiet && !f->ui) {
		char mode[64];
		if (cfg->trace)
			snprintf(mode, sizeof mode, "trace replay");
		else if (cfg->rate > 0)
			snprintf(mode, sizeof mode, "rate %.4g req/s", cfg->rate);
		else
			snprintf(mode, sizeof mode, "concurrency %ld", cfg->concurrency);
		char shown[1024], model[256];
		redact_url(engine_endpoint(e), shown, sizeof shown);
		struct run_view v;
		engine_view(e, &v);
		/* The id is the server's (/v1/models): printed, never obeyed. */
		snprintf(model, sizeof model, "%s", v.model ? v.model : "-");
		redact_controls(model);
		/* A trace's prompts are its own: its description stands for
		 * the dataset's. */
		const char *trace = engine_trace_describe(e);
		const char *sessions = engine_sessions_describe(e);
		fprintf(stderr, "infertop %s: %s, model %s, %s, %s%s%s%s\n", PACKAGE_VERSION, shown, model, mode,
			trace ? "trace " : "", trace ? trace : dataset_describe(v.dataset), sessions ? "; " : "",
			sessions ? sessions : "");
	}
	return 0;
}

/* --listen: the final counts stay on /metrics a while after the run, so
 * a scraper reads them (its last sample was up to an interval before the
 * end). --linger, else twice the interval between the run's last two
 * scrapes (none: nobody scrapes, no wait), at most LINGER_MAX_NS. */
#define LINGER_MAX_NS (600 * CLOCK_NS_PER_S)
static void linger_done(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w, (void)revents;
	ev_break(loop, EVBREAK_ONE);
}

/* Ctrl-C or SIGTERM ends the wait (the result is written already). */
static void linger_signal(void *ud, int signum)
{
	(void)signum;
	ev_break(ud, EVBREAK_ONE);
}

static void linger(const struct config *cfg, struct control *ctl, struct ev_loop *loop)
{
	if (!ctl)
		return;
	int64_t ns = cfg->linger_ns >= 0 ? cfg->linger_ns : 2 * control_scrape_interval_ns(ctl);
	if (cfg->linger_ns < 0 && ns > LINGER_MAX_NS)
		ns = LINGER_MAX_NS;
	if (ns <= 0)
		return;
	if (!cfg->quiet)
		fprintf(stderr, "infertop: /metrics keeps the final counts for %.1fs (--linger)\n", (double)ns / 1e9);
	ev_timer t;
	ev_timer_init(&t, linger_done, (double)ns / 1e9, 0.);
	ev_timer_start(loop, &t);
	loop_signal_set(loop, LOOP_SIGINT, linger_signal, loop);
	loop_signal_set(loop, LOOP_SIGTERM, linger_signal, loop);
	ev_run(loop, 0);
	loop_signal_release(LOOP_SIGINT, linger_signal, loop);
	loop_signal_release(LOOP_SIGTERM, linger_signal, loop);
	ev_timer_stop(loop, &t);
}

static int run(struct config *cfg, int argc, char **argv)
{
	if (cfg->demo && demo_start(cfg) != 0)
		return SESSION_EXIT_USAGE;
	/* One simulator for all of them: the workers are sent to its URL. */
	if (cfg->workers > 1)
		return workers_main(cfg, argc, argv);
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "infertop: cannot create the event loop\n");
		return SESSION_EXIT_USAGE;
	}
	char err[1024];
	struct session *s = session_new(cfg, loop, err, sizeof err);
	if (!s) {
		fprintf(stderr, "infertop: %s\n", err);
		return SESSION_EXIT_USAGE;
	}
	struct front f = {.cfg = cfg};
	int rc = session_run(s, front_ready, &f, err, sizeof err);
	if (rc != 0) {
		if (err[0])
			fprintf(stderr, "infertop: %s\n", err);
		control_stop(f.ctl);
		session_free(s);
		return rc;
	}
	struct engine *e = session_engine(s);
	if (f.ui) {
		char saved[2400] = "";
		const char *where = session_result_path(s);
		const char *want = cfg->output_path ? cfg->output_path : "the result";
		if (!session_write_failed(s) && cfg->output_path)
			snprintf(saved, sizeof saved, "result saved to %s", where);
		else if (session_write_failed(s) && where[0])
			snprintf(saved, sizeof saved, "could not save %s: saved in %s instead", want, where);
		else if (session_write_failed(s))
			snprintf(saved, sizeof saved, "could not save %s", want);
		ui_wait_quit(f.ui, saved);
		ui_stop(f.ui); /* the terminal is back before the summary */
		ui_free(f.ui);
	}
	/* From here on nothing waits for the terminal: a hangup now must not
	 * cut the summary short. */
	signal(SIGHUP, SIG_IGN);
	struct run_view v;
	engine_view(e, &v);
	report_summary(stdout, &v);
	session_wait_uploads(s, stderr);
	rc = session_exit_code(s, stderr);
	linger(cfg, f.ctl, loop);
	control_stop(f.ctl);
	session_free(s);
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
	/* libcurl (and GnuTLS, under the simulator's TLS) would append every
	 * session's keys to this file: no key leaves the process. */
	unsetenv("SSLKEYLOGFILE");
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
