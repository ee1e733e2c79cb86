#include "config.h"

#include "infertop/command.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "infertop/clock.h"
#include "infertop/reqtrack.h"
#include "engine_internal.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"

/* Every file descriptor beyond the streams' own: curl's, the scraper's, the
 * terminal, logs and snapshots. */
#define FD_HEADROOM 64

static const char *const source_names[CMD_SRC_N] = {"key", "api", "fleet", "signal", "plan"};
static const char *const status_names[CMD_STATUS_N] = {"ok", "unchanged", "refused", "invalid", "failed"};

const char *cmd_source_name(enum cmd_source s)
{
	return (unsigned)s < CMD_SRC_N ? source_names[s] : "?";
}

const char *cmd_status_name(enum cmd_status s)
{
	return (unsigned)s < CMD_STATUS_N ? status_names[s] : "?";
}

/* Records the outcome as the engine's last command and copies it to *out.
 * Every command ends here, so the dashboard, the API and a log all read
 * the same words. */
static enum cmd_status finish(struct engine *e, enum cmd_source src, struct cmd_result *out, enum cmd_status st,
			      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum cmd_status finish(struct engine *e, enum cmd_source src, struct cmd_result *out, enum cmd_status st,
			      const char *fmt, ...)
{
	struct cmd_record *r = &e->last_cmd;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof r->msg, fmt, ap);
	va_end(ap);
	r->seq++;
	r->source = src;
	r->status = st;
	r->at_ns = clock_now_ns();
	if (out) {
		out->status = st;
		snprintf(out->msg, sizeof out->msg, "%s", r->msg);
	}
	return st;
}

/* Load changes need a running engine: while draining or after the end the
 * load is no longer the user's to change. */
static bool refuse_unless_running(struct engine *e, enum cmd_source src, struct cmd_result *out, enum cmd_status *st)
{
	if (e->state == ENGINE_RUNNING)
		return false;
	*st = finish(e, src, out, CMD_REFUSED, "%s",
		     e->state == ENGINE_DONE ? "the run is over" : "stopping: the load cannot change now");
	return true;
}

long cmd_concurrency_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return CMD_CONCURRENCY_MAX;
	long n = rl.rlim_cur > FD_HEADROOM + 1 ? (long)(rl.rlim_cur - FD_HEADROOM) : 1;
	return n < CMD_CONCURRENCY_MAX ? n : CMD_CONCURRENCY_MAX;
}

/* The load to count a change from: the lowest of this mode in effect over
 * the last CMD_MAX_CHANGE_WINDOW_NS (the current one included), so that
 * repeated small steps (] ] ] ...) add up as one big change. 0 when the
 * load is of the other mode. */
static double change_base(const struct load *l, bool rate)
{
	enum load_mode want = rate ? LOAD_OPEN : LOAD_CLOSED;
	if (l->mode != want)
		return 0;
	double base = rate ? l->rate : (double)l->concurrency;
	int64_t since = clock_now_ns() - CMD_MAX_CHANGE_WINDOW_NS;
	uint32_t n = l->nevents < LOAD_EVENTS ? l->nevents : LOAD_EVENTS;
	for (uint32_t k = 0; k < n; k++) {
		const struct load_event *e = &l->events[(l->nevents - 1 - k) % LOAD_EVENTS];
		/* The newest event before the window is the load in effect
		 * when it began: it counts, and nothing older does. */
		if (e->mode == want && e->value < base)
			base = e->value;
		if (e->mode != want || e->t_ns < since)
			break;
	}
	return base;
}

bool cmd_change_too_big(const struct load *l, bool rate, double target, char *why, size_t cap)
{
	if (!l || l->max_change <= 0 || !(target > 0))
		return false;
	double cur = change_base(l, rate);
	double limit = fmax(cur * (double)l->max_change, cur + CMD_MAX_CHANGE_ABS);
	if (target <= limit)
		return false;
	bool now = (l->mode == LOAD_OPEN) == rate && cur == (rate ? l->rate : (double)l->concurrency);
	if (why)
		snprintf(why, cap, "%s %.6g%s is over %ldx %s%.6g%s%s or +%d (--max-change)",
			 rate ? "rate" : "concurrency", target, rate ? " req/s" : "", l->max_change,
			 now ? "the current " : "", cur, rate ? " req/s" : "", now ? "" : " (lowest in 10 s)",
			 CMD_MAX_CHANGE_ABS);
	return true;
}

enum cmd_status engine_cmd_set_concurrency(struct engine *e, long n, enum cmd_source src, struct cmd_result *out)
{
	enum cmd_status st;
	if (refuse_unless_running(e, src, out, &st))
		return st;
	if (n < 1 || n > CMD_CONCURRENCY_MAX)
		return finish(e, src, out, CMD_INVALID, "concurrency %ld is out of range (1 to %ld)", n,
			      (long)CMD_CONCURRENCY_MAX);
	long cap = cmd_concurrency_limit();
	const char *note = "";
	if (n > cap) {
		n = cap;
		note = " (the file descriptor limit)";
	}
	if (e->load.mode == LOAD_CLOSED && e->load.concurrency == n)
		return finish(e, src, out, CMD_UNCHANGED, "concurrency stays %ld%s", n, note);
	load_set_concurrency(&e->load, n);
	return finish(e, src, out, CMD_OK, "concurrency %ld%s", n, note);
}

enum cmd_status engine_cmd_set_rate(struct engine *e, double r, enum cmd_source src, struct cmd_result *out)
{
	enum cmd_status st;
	if (refuse_unless_running(e, src, out, &st))
		return st;
	if (!(r >= CMD_RATE_MIN && r <= CMD_RATE_MAX))
		return finish(e, src, out, CMD_INVALID, "rate %g req/s is out of range (%g to %g)", r, CMD_RATE_MIN,
			      CMD_RATE_MAX);
	if (e->load.mode == LOAD_OPEN && e->load.rate == r)
		return finish(e, src, out, CMD_UNCHANGED, "rate stays %.4g req/s", r);
	load_set_rate(&e->load, r);
	return finish(e, src, out, CMD_OK, "rate %.4g req/s", r);
}

static enum cmd_status set_paused(struct engine *e, bool paused, enum cmd_source src, struct cmd_result *out)
{
	enum cmd_status st;
	if (refuse_unless_running(e, src, out, &st))
		return st;
	if (e->load.paused == paused)
		return finish(e, src, out, CMD_UNCHANGED, "%s", paused ? "paused already" : "not paused");
	load_pause(&e->load, paused);
	if (!paused)
		engine_sessions_release(e);
	return finish(e, src, out, CMD_OK, "%s",
		      paused ? "paused: no new requests; in-flight ones finish" : "resumed");
}

enum cmd_status engine_cmd_pause(struct engine *e, enum cmd_source src, struct cmd_result *out)
{
	return set_paused(e, true, src, out);
}

enum cmd_status engine_cmd_resume(struct engine *e, enum cmd_source src, struct cmd_result *out)
{
	return set_paused(e, false, src, out);
}

enum cmd_status engine_cmd_snapshot(struct engine *e, enum cmd_source src, struct cmd_result *out)
{
	if (out)
		out->path[0] = '\0';
	/* The file says who asked for it. */
	enum snapshot_reason why = src == CMD_SRC_SIGNAL ? SNAPSHOT_SIGNAL
				   : src == CMD_SRC_API || src == CMD_SRC_FLEET ? SNAPSHOT_API
										: SNAPSHOT_KEY;
	int rc = snapshot_request(e->snap, why);
	if (rc < 0) {
		const struct snapshot_result *last = snapshot_last(e->snap);
		return finish(e, src, out, CMD_FAILED, "snapshot: %s",
			      last && last->error[0] ? last->error : "could not start");
	}
	if (rc == 1)
		return finish(e, src, out, CMD_OK, "snapshot: one is being written, another follows");
	const char *path = snapshot_writing_path(e->snap);
	if (out && path)
		snprintf(out->path, sizeof out->path, "%s", path);
	return finish(e, src, out, CMD_OK, "snapshot: writing...");
}

/* The reasons a run records, by who stopped it; the keys' wording is the
 * one runs have always recorded. */
static const char *const stop_reasons[CMD_SRC_N][2] = {
	[CMD_SRC_KEY] = {"quit (q)", "quit (q twice)"},
	[CMD_SRC_API] = {"stopped by the control API", "stopped twice by the control API"},
	[CMD_SRC_FLEET] = {"stopped by the fleet", "stopped twice by the fleet"},
	[CMD_SRC_SIGNAL] = {"stopped by a signal", "stopped twice by a signal"},
	[CMD_SRC_PLAN] = {"plan finished", "plan finished"},
};

enum cmd_status engine_cmd_stop(struct engine *e, enum cmd_source src, struct cmd_result *out)
{
	unsigned s = (unsigned)src < CMD_SRC_N ? (unsigned)src : CMD_SRC_API;
	if (e->state == ENGINE_DONE)
		return finish(e, src, out, CMD_UNCHANGED, "the run is over");
	if (e->state == ENGINE_RUNNING) {
		engine_stop(e, stop_reasons[s][0]);
		return finish(e, src, out, CMD_OK, "stopping: in-flight requests get %.0fs to finish",
			      (double)e->cfg->grace_ns / 1e9);
	}
	/* A second stop while draining is the second Ctrl-C: stop waiting. */
	engine_abort(e, stop_reasons[s][1]);
	return finish(e, src, out, CMD_OK, "aborting in-flight requests");
}

enum cmd_status engine_cmd_window_reset(struct engine *e, enum cmd_source src, struct cmd_result *out)
{
	int64_t now = clock_now_ns();
	stats_window_reset(e->stats, now);
	plan_window_reset(e->plan, now);
	/* The slowest requests are the window's too: a warm-up's outliers
	 * would otherwise head those lists for the rest of the run. */
	reqtrack_clear(e->rt);
	return finish(e, src, out, CMD_OK, "sliding window emptied (and the slowest requests); whole-run figures kept");
}

enum cmd_status engine_cmd_plan_resume(struct engine *e, enum cmd_source src, struct cmd_result *out)
{
	enum cmd_status st;
	if (refuse_unless_running(e, src, out, &st))
		return st;
	int64_t now = clock_now_ns();
	if (plan_resume(e->plan, now) != 0)
		return finish(e, src, out, CMD_REFUSED, "%s",
			      plan_state_name(e->plan)[0] ? "the plan is in control already"
							  : "no plan to resume (--stages, --sweep, --matrix)");
	char s[CMD_MSG_MAX - 16];
	plan_status(e->plan, now, s, sizeof s);
	return finish(e, src, out, CMD_OK, "plan resumed: %s", s);
}
