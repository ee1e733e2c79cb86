#include "config.h"

#include "infertop/session.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "infertop/clock.h"
#include "infertop/engine.h"
#include "infertop/plan.h"
#include "infertop/reqlog.h"
#include "infertop/result.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"
#include "infertop/upload.h"
#include "infertop/view.h"

/* File descriptors beyond the streams themselves: stdio, epoll, the
 * connection cache's slack, the scrape and snapshot files. */
#define FD_HEADROOM 64

struct session {
	const struct config *cfg;
	struct ev_loop *loop;
	struct engine *e;
	struct uploader *up;           /* --upload; NULL: none */
	bool up_shared;                /* up is its owner's (session_share_uploader) */
	enum session_phase phase;      /* up to probed, then waiting or later */
	ev_timer start_at;
	ev_timer probed_later;         /* hands the probe's outcome over */
	int probe_rc;
	char probe_err[512];
	bool write_failed;
	char result_path[1024];        /* where it went: -o, or the fallback */
	session_probed_fn probed;
	session_fn written;
	void *probed_ud, *written_ud;
	/* session_run's own, waiting on the loop */
	bool run_done;
	int run_rc;
	char run_err[512];
};

/* The request log's hand-over of a file to the uploader (reqlog.h). */
static void session_put_upload(void *ud, const char *path, const char *name)
{
	uploader_put(ud, path, name);
}

static const char *const phase_names[] = {
	[SESSION_BUILT] = "built",
	[SESSION_PROBING] = "probing",
	[SESSION_PROBED] = "probed",
	[SESSION_WAITING] = "waiting",
	[SESSION_RUNNING] = "running",
	[SESSION_DRAINING] = "draining",
	[SESSION_WRITTEN] = "written",
	[SESSION_FAILED] = "failed",
};

const char *session_phase_name(enum session_phase p)
{
	return (unsigned)p < sizeof phase_names / sizeof phase_names[0] ? phase_names[p] : "?";
}

/* Streams need one descriptor each; the hard limit is asked for up front
 * so a high concurrency fails here, clearly, instead of as connect
 * errors. */
static int fit_descriptors(long want, const char *opt, char *err, size_t errcap)
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
		snprintf(err, errcap,
			 "--%s: %ld concurrent streams need about %ld file descriptors, but the limit is %llu.\n"
			 "Raise it (ulimit -n %ld, or LimitNOFILE= in a unit file) or lower the concurrency.",
			 opt, want, want + FD_HEADROOM, (unsigned long long)rl.rlim_cur, want + FD_HEADROOM);
		return -1;
	}
	return 0;
}

/* Where the result goes must take a file before any load is sent, not
 * be found wanting when the run is over (--snapshot-dir itself is checked
 * when the run is built, also before anything is sent). */
static int check_result_dirs(const struct config *cfg, char *err, size_t errcap)
{
	char why[1400];
	if (cfg->output_path && snapshot_output_check(cfg->output_path, why, sizeof why) != 0) {
		snprintf(err, errcap, "%s", why);
		return -1;
	}
	if (cfg->html_path && snapshot_output_check(cfg->html_path, why, sizeof why) != 0) {
		/* The check names the file as -o's: say --html. */
		snprintf(err, errcap, "--html %s", strncmp(why, "-o ", 3) == 0 ? why + 3 : why);
		return -1;
	}
	if (cfg->snapshot_every_ns > 0 && !cfg->snapshot_dir && snapshot_dir_check("directory", ".", why, sizeof why) != 0) {
		snprintf(err, errcap, "--snapshot-every writes into the current directory: %s", why);
		return -1;
	}
	return 0;
}

static void session_tell_probed(struct ev_loop *loop, ev_timer *w, int revents);

struct session *session_new(const struct config *cfg, struct ev_loop *loop, char *err, size_t errcap)
{
	if (check_result_dirs(cfg, err, errcap) != 0)
		return NULL;
	bool open_loop = cfg->rate > 0;
	if (fit_descriptors(open_loop ? cfg->max_concurrency : cfg->concurrency,
			    open_loop ? "max-concurrency" : "concurrency", err, errcap) != 0)
		return NULL;
	struct session *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	s->cfg = cfg;
	s->loop = loop;
	s->e = engine_new(cfg, loop, err, errcap);
	if (!s->e) {
		free(s);
		return NULL;
	}
	/* A plan (stages, sweep, matrix) may peak above -c. */
	struct run_view v;
	engine_view(s->e, &v);
	if (fit_descriptors(plan_peak_concurrency(v.plan), "plan", err, errcap) != 0) {
		session_free(s);
		return NULL;
	}
	if (cfg->upload) {
		struct upload_opts uo = {
			.url = cfg->upload, .endpoint = cfg->upload_endpoint, .region = cfg->upload_region,
			.quiet = cfg->quiet,
		};
		struct uploader *up = uploader_new(loop, &uo, err, errcap);
		if (!up) {
			session_free(s);
			return NULL;
		}
		session_share_uploader(s, up);
		s->up_shared = false;
	}
	ev_init(&s->start_at, NULL);
	ev_init(&s->probed_later, session_tell_probed);
	s->probed_later.data = s;
	s->phase = SESSION_BUILT;
	return s;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	session_cancel(s);
	engine_free(s->e);
	if (!s->up_shared)
		uploader_free(s->up);
	free(s);
}

void session_share_uploader(struct session *s, struct uploader *up)
{
	s->up = up;
	s->up_shared = true;
	snapshot_writer_set_uploader(engine_snapshot_writer(s->e), up);
	reqlog_set_uploader(engine_reqlog(s->e), session_put_upload, up);
}

struct engine *session_engine(const struct session *s)
{
	return s->e;
}

enum session_phase session_phase(const struct session *s)
{
	if (s->phase != SESSION_RUNNING)
		return s->phase;
	/* Running and draining are the engine's to say. */
	struct run_view v;
	engine_view(s->e, &v);
	return v.state == ENGINE_DRAINING || v.state == ENGINE_DONE ? SESSION_DRAINING : SESSION_RUNNING;
}

/* The outcome is told from a timer of its own, not from inside the
 * transfer's callbacks: the one told may free the session (serve does,
 * on a failed probe), and with it the transfers being walked. */
static void session_tell_probed(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct session *s = w->data;
	s->phase = s->probe_rc == 0 ? SESSION_PROBED : SESSION_FAILED;
	if (s->probed)
		s->probed(s, s->probe_rc, s->probe_err, s->probed_ud);
}

static void session_on_probed(void *ud, int rc, const char *err)
{
	struct session *s = ud;
	s->probe_rc = rc;
	snprintf(s->probe_err, sizeof s->probe_err, "%s", err ? err : "");
	ev_timer_set(&s->probed_later, 0., 0.);
	ev_timer_start(s->loop, &s->probed_later);
}

int session_probe(struct session *s, session_probed_fn fn, void *ud)
{
	if (s->phase != SESSION_BUILT)
		return -1;
	s->probed = fn;
	s->probed_ud = ud;
	s->phase = SESSION_PROBING;
	if (engine_probe_start(s->e, session_on_probed, s) != 0) {
		s->phase = SESSION_BUILT;
		return -1;
	}
	return 0;
}

/* --html: the page of the result just written, from the same view,
 * written atomically as the result is. */
static int session_write_html(const struct session *s, const struct run_view *v)
{
	struct snapshot snap;
	char err[1400];
	if (snapshot_from_view(&snap, v, clock_now_ns(), SNAPSHOT_FINAL) != 0) {
		fprintf(stderr, "infertop: --html: out of memory building the report\n");
		return -1;
	}
	const char *name = s->result_path[0] ? s->result_path : "run";
	const char *base = strrchr(name, '/');
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int rc = m ? result_html_report(m, base ? base + 1 : name, &snap) : -1;
	if (m && fclose(m) != 0)
		rc = -1;
	snapshot_release(&snap);
	char path[4096];
	snprintf(path, sizeof path, "%s", s->cfg->html_path);
	if (rc != 0)
		snprintf(err, sizeof err, "out of memory building the report");
	else
		rc = snapshot_write_atomic(path, sizeof path, false, buf, len, err, sizeof err);
	free(buf);
	if (rc != 0)
		fprintf(stderr, "infertop: --html: %s\n", err);
	else if (!s->cfg->quiet)
		fprintf(stderr, "infertop: HTML report written to %s\n", path);
	return rc;
}

/* The run is over: the result is written at once, not when somebody gets
 * round to leaving a dashboard or asking for it. */
static void session_on_done(struct engine *e, void *ud)
{
	struct session *s = ud;
	struct run_view v;
	engine_view(e, &v);
	s->write_failed = snapshot_write_final_at(&v, engine_snapshot_writer(e), stderr, s->result_path,
						  sizeof s->result_path) != 0;
	if (s->cfg->html_path)
		s->write_failed |= session_write_html(s, &v) != 0;
	/* Wherever it went (-o, or the fallback), that file goes up, and the
	 * page with it; so does the request log, complete now. */
	if (s->up && s->result_path[0])
		uploader_put(s->up, s->result_path, NULL);
	if (s->up && s->cfg->html_path && !s->write_failed)
		uploader_put(s->up, s->cfg->html_path, NULL);
	reqlog_upload(engine_reqlog(e));
	s->phase = SESSION_WRITTEN;
	if (s->written)
		s->written(s, s->written_ud);
}

static void session_go(struct session *s)
{
	s->phase = SESSION_RUNNING;
	engine_start(s->e);
}

static void session_on_start_at(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	session_go(w->data);
}

void session_start(struct session *s, session_fn written, void *ud)
{
	s->written = written;
	s->written_ud = ud;
	engine_set_on_done(s->e, session_on_done, s);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double wait = s->cfg->start_at - ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
	if (!(s->cfg->start_at > 0) || !(wait > 0)) {
		session_go(s);
		return;
	}
	/* --start-at: the load begins at that wall time (a fleet's common
	 * start); the loop runs meanwhile, so the control API answers. */
	s->phase = SESSION_WAITING;
	ev_timer_init(&s->start_at, session_on_start_at, wait, 0.);
	s->start_at.data = s;
	ev_timer_start(s->loop, &s->start_at);
}

void session_start_now(struct session *s)
{
	if (!ev_is_active(&s->start_at))
		return;
	ev_timer_stop(s->loop, &s->start_at);
	session_go(s);
}

void session_abort(struct session *s, const char *reason)
{
	if (s->phase == SESSION_PROBING || s->phase == SESSION_BUILT || s->phase == SESSION_PROBED ||
	    s->phase == SESSION_FAILED || s->phase == SESSION_WRITTEN) {
		session_cancel(s);
		return;
	}
	/* A waiting run starts and stops at once: it ends written, with the
	 * reason, like any stopped run. */
	session_start_now(s);
	engine_abort(s->e, reason);
}

void session_cancel(struct session *s)
{
	if (s->phase == SESSION_PROBING) {
		engine_probe_cancel(s->e);
		ev_timer_stop(s->loop, &s->probed_later);
		s->phase = SESSION_FAILED;
	}
	if (ev_is_active(&s->start_at)) {
		ev_timer_stop(s->loop, &s->start_at);
		s->phase = SESSION_PROBED;
	}
}

/* ---- The command line's run: each step waits on the loop. ---- */

static void run_probed(struct session *s, int rc, const char *err, void *ud)
{
	(void)ud;
	s->run_done = true;
	s->run_rc = rc;
	snprintf(s->run_err, sizeof s->run_err, "%s", err ? err : "");
	ev_break(s->loop, EVBREAK_ONE);
}

static void run_written(struct session *s, void *ud)
{
	(void)ud;
	s->run_done = true;
	ev_break(s->loop, EVBREAK_ONE);
}

int session_run(struct session *s, session_ready_fn on_ready, void *ud, char *err, size_t errcap)
{
	if (errcap)
		err[0] = '\0';
	s->run_done = false;
	if (session_probe(s, run_probed, NULL) != 0) {
		snprintf(err, errcap, "out of memory");
		return SESSION_EXIT_USAGE;
	}
	while (!s->run_done)
		ev_run(s->loop, 0);
	if (s->run_rc != 0) {
		snprintf(err, errcap, "%s", s->run_err);
		return SESSION_EXIT_USAGE;
	}
	int rc = on_ready ? on_ready(s, ud) : 0;
	if (rc != 0)
		return rc;
	s->run_done = false;
	session_start(s, run_written, NULL);
	while (!s->run_done)
		ev_run(s->loop, 0);
	return 0;
}

int session_write_failed(const struct session *s)
{
	return s->write_failed;
}

const char *session_result_path(const struct session *s)
{
	return s->result_path;
}

int session_wait_uploads(struct session *s, FILE *log)
{
	return uploader_wait(s->up, UPLOAD_WAIT_MAX_S, log);
}

int session_exit_code(const struct session *s, FILE *log)
{
	if (s->write_failed)
		return SESSION_EXIT_NOT_SAVED;
	/* Saved here but not where the results were to go: not saved. */
	unsigned long lost = uploader_failed(s->up);
	if (lost > 0) {
		fprintf(log, "infertop: %lu upload%s to %s failed\n", lost, lost == 1 ? "" : "s", s->cfg->upload);
		return SESSION_EXIT_NOT_SAVED;
	}
	struct run_view v;
	engine_view(s->e, &v);
	const struct stats *st = v.stats;
	uint64_t failed = stats_errors_total(st);
	uint64_t incomplete = st->run_c.incomplete;
	/* Nothing succeeded: the figures describe no server behaviour at all,
	 * and a script must not take the run for a pass (requests cut by the
	 * run's end included: not failures, but no answer either). */
	if (st->run_c.completed == 0 && failed + incomplete > 0) {
		fprintf(log, "infertop: no request succeeded (%" PRIu64 " failed", failed);
		if (incomplete)
			fprintf(log, ", %" PRIu64 " incomplete", incomplete);
		fprintf(log, ")\n");
		return SESSION_EXIT_NONE_OK;
	}
	if (s->cfg->have_max_error_rate) {
		uint64_t ended = failed + st->run_c.completed;
		double share = ended ? (double)failed / (double)ended : 0.0;
		if (share > s->cfg->max_error_rate) {
			fprintf(log, "infertop: %.1f%% of requests failed, above --max-error-rate %g\n",
				100.0 * share, s->cfg->max_error_rate);
			return SESSION_EXIT_ERROR_RATE;
		}
	}
	return SESSION_EXIT_OK;
}
