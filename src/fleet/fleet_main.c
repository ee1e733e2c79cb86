/* `infertop fleet` (fleet.h): options, the loop, the dashboard or the
 * headless lines, -o and the exit status. */
#include "config.h"

#include "infertop/fleet.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/cmd_target.h"
#include "infertop/loop.h"
#include "infertop/options.h"
#include "infertop/snapshot.h"
#include "infertop/ui.h"
#include "infertop/upload.h"

#define START_LEAD_S 3.0   /* --start: the runs begin this long after the posts */

struct fleet_app {
	struct fleet *f;
	struct ev_loop *loop;
	const struct config *cfg;
	bool headless;
	bool starting;             /* --start: the runs are the fleet's */
	int interrupts;
	int64_t next_line;
	bool said_last;            /* the line at the end is printed */
};

static void app_tick(struct fleet *f, void *ud, int64_t now)
{
	struct fleet_app *a = ud;
	if (a->headless && !a->cfg->quiet && (now >= a->next_line || (fleet_finished(f) && !a->said_last))) {
		a->said_last = fleet_finished(f);
		fleet_print_line(f, now, stderr);
		while (a->next_line <= now)
			a->next_line += a->cfg->interval_ns;
	}
	if (fleet_finished(f))
		ev_break(a->loop, EVBREAK_ONE);
}

/* Ctrl-C: a live view ends (the generators' runs are theirs); a --start
 * stops the fleet's runs and collects what they did; twice, it ends. */
static void on_signal(void *ud, int signum)
{
	(void)signum;
	struct fleet_app *a = ud;
	struct cmd_result r;
	if (a->starting && a->interrupts++ == 0) {
		fleet_cmd_post_all(a->f, "/v1/stop", "stop", &r);
		fprintf(stderr, "infertop fleet: %s; Ctrl-C again ends the fleet now\n", r.msg);
		return;
	}
	fleet_finish(a->f, "interrupted");
}

/* --upload: the merged result, when this run wrote it (not an older file
 * left at -o by a run whose merge failed), and the wait for it. 0, or 1
 * when it did not go up. */
static int upload_merged(struct ev_loop *loop, const struct config *cfg, time_t t0)
{
	struct stat sb;
	if (!cfg->upload || !cfg->output_path || stat(cfg->output_path, &sb) != 0 || sb.st_mtime < t0)
		return 0;
	struct upload_opts uo = {
		.url = cfg->upload, .endpoint = cfg->upload_endpoint, .region = cfg->upload_region,
		.quiet = cfg->quiet,
	};
	char err[512];
	struct uploader *up = uploader_new(loop, &uo, err, sizeof err);
	if (!up) {
		fprintf(stderr, "infertop fleet: %s\n", err);
		return 1;
	}
	uploader_put(up, cfg->output_path, NULL);
	uploader_wait(up, UPLOAD_WAIT_MAX_S, stderr);
	int rc = uploader_failed(up) ? 1 : 0;
	if (rc)
		fprintf(stderr, "infertop fleet: the merged result was not uploaded to %s\n", cfg->upload);
	uploader_free(up);
	return rc;
}

static int add_targets(struct fleet *f, const struct config *cfg, struct ev_loop *loop, struct fleet_dns **dns,
		       char *err, size_t errcap)
{
	if (!cfg->fleet_targets && !cfg->fleet_targets_file && !cfg->fleet_discover) {
		snprintf(err, errcap, "give the generators: --targets URL,URL,..., --targets-file FILE or --discover "
			 "dns:NAME:PORT");
		return -1;
	}
	if (cfg->fleet_targets && fleet_add_list(f, cfg->fleet_targets, err, errcap) != 0)
		return -1;
	if (cfg->fleet_targets_file && fleet_add_file(f, cfg->fleet_targets_file, err, errcap) != 0)
		return -1;
	if (cfg->fleet_discover && !(*dns = fleet_dns_new(f, loop, cfg->fleet_discover, err, errcap)))
		return -1;
	return 0;
}

/* --expect N: the fleet polls (and --discover re-resolves) until N
 * generators answer, so a fleet pod started before its generators are
 * ready waits for them instead of starting on whoever answered first.
 * 0, or -1 with err saying how many answered. */
static int wait_expected(struct fleet_app *a, bool discovering, char *err, size_t errcap)
{
	const struct config *cfg = a->cfg;
	size_t want = (size_t)cfg->fleet_expect;
	/* Without --discover the list is all there will be. */
	if (!discovering && fleet_nendpoints(a->f) < want) {
		snprintf(err, errcap, "--expect %zu: only %zu generators are given", want, fleet_nendpoints(a->f));
		return -1;
	}
	int64_t now = clock_now_ns(), deadline = now + cfg->fleet_expect_timeout_ns;
	double limit_s = (double)cfg->fleet_expect_timeout_ns / 1e9;
	if (!cfg->quiet)
		fprintf(stderr, "infertop fleet: waiting for %zu generators to answer (--expect, up to %.0fs)\n", want,
			limit_s);
	for (;;) {
		size_t seen = fleet_nready(a->f, now);
		if (seen >= want) {
			if (!cfg->quiet)
				fprintf(stderr, "infertop fleet: %zu generators answer\n", seen);
			return 0;
		}
		if (fleet_finished(a->f) || now >= deadline) {
			snprintf(err, errcap, "--expect %zu: %s with %zu of %zu generators answering (%zu known)", want,
				 fleet_finished(a->f) ? "interrupted" : "gave up after --expect-timeout", seen, want,
				 fleet_nendpoints(a->f));
			return -1;
		}
		ev_run(a->loop, EVRUN_ONCE);   /* the poll timer wakes it at 4 Hz */
		now = clock_now_ns();
	}
}

int fleet_main(int argc, char **argv)
{
	int split = argc;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--start") == 0) {
			split = i;
			break;
		}
	struct config cfg;
	int done = cli_parse_or_exit(&cfg, split, argv);
	if (done >= 0)
		return done;
	int rc = 2;
	char err[1024];
	time_t t0 = time(NULL);
	struct fleet_dns *dns = NULL;
	struct fleet_start *st = NULL;
	struct ui *u = NULL;
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	struct fleet *f = loop ? fleet_new(loop, &cfg, err, sizeof err) : NULL;
	if (!loop)
		snprintf(err, sizeof err, "cannot create the event loop");
	if (!f || add_targets(f, &cfg, loop, &dns, err, sizeof err) != 0) {
		fprintf(stderr, "infertop fleet: %s\n", err);
		goto out;
	}
	if (split < argc && !(st = fleet_start_new(f, argc - split - 1, argv + split + 1, err, sizeof err))) {
		fprintf(stderr, "infertop fleet: %s\n", err);
		goto out;
	}
	struct fleet_app a = {.f = f, .loop = loop, .cfg = &cfg};
	a.next_line = clock_now_ns() + cfg.interval_ns;
	a.headless = !ui_wanted(&cfg);
	fleet_set_on_tick(f, app_tick, &a);
	loop_signal_set(loop, LOOP_SIGINT, on_signal, &a);
	loop_signal_set(loop, LOOP_SIGTERM, on_signal, &a);
	if (cfg.fleet_expect > 0) {
		fleet_start(f);
		if (wait_expected(&a, dns != NULL, err, sizeof err) != 0) {
			fprintf(stderr, "infertop fleet: %s\n", err);
			goto out_signals;
		}
	}
	a.starting = st != NULL;
	if (st) {
		/* Discovery's first answer names the generators to start. */
		while (dns && fleet_dns_rounds(dns) == 0)
			ev_run(loop, EVRUN_ONCE);
		if (fleet_start_go(st, START_LEAD_S, err, sizeof err) != 0) {
			fprintf(stderr, "infertop fleet: %s\n", err);
			goto out_signals;
		}
	}
	fleet_start(f);
	if (ui_wanted(&cfg)) {
		struct cmd_target t;
		fleet_cmd_target(f, &t);
		u = ui_new_target(&t, &cfg, err, sizeof err);
		if (!u || ui_start(u, err, sizeof err) != 0) {
			fprintf(stderr, "infertop fleet: %s; running headless\n", err);
			ui_free(u);
			u = NULL;
		}
	}
	a.headless = u == NULL;
	if (a.headless && !cfg.quiet)
		fprintf(stderr, "infertop fleet %s: %zu generators%s%s\n", PACKAGE_VERSION, fleet_nendpoints(f),
			dns ? " (discovered, re-resolved every 5s)" : "", st ? ", starting a run on each" : "");
	ev_run(loop, 0);
	if (!fleet_finished(f))
		fleet_finish(f, "ended");
	fleet_stop(f);
	rc = 0;
	char saved[1200] = "";
	if (st) {
		rc = fleet_start_status(st);
		if (cfg.output_path)
			snprintf(saved, sizeof saved, rc == 0 ? "merged result saved to %s" : "see the messages about %s",
				 cfg.output_path);
	} else if (cfg.output_path) {
		if (!fleet_merged(f)) {
			fprintf(stderr, "infertop fleet: no generator answered: %s not written\n", cfg.output_path);
			rc = 1;
		} else if (fleet_write_merged(f, cfg.output_path, err, sizeof err) != 0) {
			fprintf(stderr, "infertop fleet: %s: %s\n", cfg.output_path, err);
			rc = 1;
		} else {
			snprintf(saved, sizeof saved, "merged state saved to %s", cfg.output_path);
			if (!cfg.quiet)
				fprintf(stderr, "infertop fleet: %s\n", saved);
		}
	}
	if (u) {
		ui_wait_quit(u, saved);
		ui_stop(u);
	}
	signal(SIGHUP, SIG_IGN);
	/* A --start's summary is its results' merge (the -o file); a live
	 * view's, the last statuses' merge. */
	const struct snapshot *sum = st ? fleet_start_result(st) : fleet_merged(f);
	if (sum && !cfg.quiet)
		snapshot_print_summary(stdout, sum);
	if (upload_merged(loop, &cfg, t0) != 0)
		rc = 1;
out_signals:
	loop_signal_release(LOOP_SIGINT, on_signal, &a);
	loop_signal_release(LOOP_SIGTERM, on_signal, &a);
out:
	ui_free(u);
	fleet_dns_free(dns);
	fleet_free(f);
	fleet_start_free(st);
	cli_free(&cfg);
	return rc;
}
