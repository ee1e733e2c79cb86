#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infertop/command.h"
#include "infertop/cmd_target.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/report.h"
#include "infertop/stats.h"
#include "infertop/ui.h"
#include "infertop/units.h"
#include "infertop/view.h"

/* The keys' side of the command interface: each action works out the new
 * target from the run's view (what the screen shows) and hands it to one
 * command of the target (an engine, or a fleet: cmd_target.h); the command checks it, applies it and words the outcome.
 * Returns 0 when something changed, -1 when not; msg gets the line for the
 * status bar either way. */

static int done(enum cmd_status st, const struct cmd_result *r, char *msg, size_t cap)
{
	snprintf(msg, cap, "%s", r->msg);
	return st == CMD_OK ? 0 : -1;
}

/* A change over --max-change is not applied but held in *ask (when not
 * NULL) for the user to confirm: returns 1 and words the question. */
static bool held(const struct load *l, bool rate, double value, struct ui_load_change *ask, char *msg, size_t cap)
{
	if (!ask || !cmd_change_too_big(l, rate, value, ask->why, sizeof ask->why))
		return false;
	ask->active = true;
	ask->rate = rate;
	ask->value = value;
	snprintf(msg, cap, "apply? y/n: %s", ask->why);
	return true;
}

/* cap_conc: a limit below the file descriptors' (0: none), said as theirs. */
static int set_conc(const struct cmd_target *t, long n, long cap_conc, char *msg, size_t cap)
{
	struct cmd_result r;
	if (n < 1)
		n = 1;
	bool capped = cap_conc > 0 && n > cap_conc;
	enum cmd_status st = cmd_target_set_concurrency(t, capped ? cap_conc : n, CMD_SRC_KEY, &r);
	if (capped && !strstr(r.msg, "descriptor"))
		snprintf(r.msg + strlen(r.msg), sizeof r.msg - strlen(r.msg), " (the file descriptor limit)");
	return done(st, &r, msg, cap);
}

static int set_rate(const struct cmd_target *t, double rate, char *msg, size_t cap)
{
	struct cmd_result r;
	if (!(rate >= CMD_RATE_MIN))
		rate = CMD_RATE_MIN;
	if (rate > CMD_RATE_MAX)
		rate = CMD_RATE_MAX;
	return done(cmd_target_set_rate(t, rate, CMD_SRC_KEY, &r), &r, msg, cap);
}

static bool running(const struct run_view *v, char *msg, size_t cap)
{
	if (v->state == ENGINE_RUNNING)
		return true;
	snprintf(msg, cap, "%s", v->state == ENGINE_DONE ? "the run is over" : "stopping: the load cannot change now");
	return false;
}

int ui_action_load(const struct cmd_target *t, enum key_action a, long max_conc, char *msg, size_t cap)
{
	return ui_action_load_ask(t, a, max_conc, NULL, msg, cap);
}

int ui_action_set(const struct cmd_target *t, const char *typed, long max_conc, char *msg, size_t cap)
{
	return ui_action_set_ask(t, typed, max_conc, NULL, msg, cap);
}

int ui_action_confirm(const struct cmd_target *t, struct ui_load_change *ask, bool yes, long max_conc, char *msg,
		      size_t cap)
{
	if (!ask->active) {
		snprintf(msg, cap, "nothing to confirm");
		return -1;
	}
	ask->active = false;
	if (!yes) {
		struct run_view v;
		cmd_target_view(t, &v);
		if (v.load->mode == LOAD_OPEN)
			snprintf(msg, cap, "not applied: rate stays %.4g req/s", v.load->rate);
		else
			snprintf(msg, cap, "not applied: concurrency stays %ld", v.load->concurrency);
		return -1;
	}
	if (ask->rate)
		return set_rate(t, ask->value, msg, cap);
	return set_conc(t, (long)ask->value, max_conc, msg, cap);
}

int ui_action_load_ask(const struct cmd_target *t, enum key_action a, long max_conc, struct ui_load_change *ask,
		       char *msg, size_t cap)
{
	struct run_view v;
	cmd_target_view(t, &v);
	if (!running(&v, msg, cap))
		return -1;
	const struct load *l = v.load;
	if (l->mode == LOAD_OPEN) {
		double f;
		switch (a) {
		case KEY_ACT_LOAD_UP:
			f = 1.1;
			break;
		case KEY_ACT_LOAD_DOWN:
			f = 1 / 1.1;
			break;
		case KEY_ACT_LOAD_DOUBLE:
			f = 2;
			break;
		case KEY_ACT_LOAD_HALVE:
			f = 0.5;
			break;
		default:
			snprintf(msg, cap, "not a load key");
			return -1;
		}
		if (held(l, true, l->rate * f, ask, msg, cap))
			return 1;
		return set_rate(t, l->rate * f, msg, cap);
	}
	long n = l->concurrency;
	switch (a) {
	case KEY_ACT_LOAD_UP:
		n += 1;
		break;
	case KEY_ACT_LOAD_DOWN:
		n -= 1;
		break;
	case KEY_ACT_LOAD_DOUBLE:
		n = n > 0 ? 2 * n : 1;
		break;
	case KEY_ACT_LOAD_HALVE:
		n = n / 2;
		break;
	default:
		snprintf(msg, cap, "not a load key");
		return -1;
	}
	if (held(l, false, (double)n, ask, msg, cap))
		return 1;
	return set_conc(t, n, max_conc, msg, cap);
}

int ui_action_set_ask(const struct cmd_target *t, const char *typed, long max_conc, struct ui_load_change *ask,
		      char *msg, size_t cap)
{
	struct run_view v;
	cmd_target_view(t, &v);
	if (!running(&v, msg, cap))
		return -1;
	if (v.load->mode == LOAD_OPEN) {
		double r;
		if (units_parse_double(typed, &r) != 0 || !(r > 0)) {
			snprintf(msg, cap, "not a rate: \"%s\" (requests per second, e.g. 2.5)", typed);
			return -1;
		}
		if (held(v.load, true, r, ask, msg, cap))
			return 1;
		return set_rate(t, r, msg, cap);
	}
	long n;
	if (units_parse_long(typed, 1, CMD_CONCURRENCY_MAX, &n) != 0) {
		snprintf(msg, cap, "not a concurrency: \"%s\" (a whole number from 1)", typed);
		return -1;
	}
	if (held(v.load, false, (double)n, ask, msg, cap))
		return 1;
	return set_conc(t, n, max_conc, msg, cap);
}

int ui_action_mode(const struct cmd_target *t, int64_t now_ns, long max_conc, char *msg, size_t cap)
{
	struct run_view v;
	cmd_target_view(t, &v);
	if (!running(&v, msg, cap))
		return -1;
	const struct load *l = v.load;
	if (l->mode == LOAD_OPEN) {
		/* Back to the users that offer the same load: the cap on in-flight
		 * requests when there is one, else the rate times the window's
		 * mean E2E (Little's law). Never the in-flight count, which an
		 * overload inflates with requests stuck in the server's queue. */
		long n;
		const struct hist *e2e = v.stats->win[STAT_E2E];
		double e2e_s = hist_count(e2e) ? hist_mean(e2e) / 1e6 : 0;
		if (l->max_concurrency > 0)
			n = l->max_concurrency;
		else if (e2e_s > 0 && l->rate > 0)
			n = lround(l->rate * e2e_s);
		else
			n = l->concurrency > 0 ? l->concurrency : 1;
		if (set_conc(t, n, max_conc, msg, cap) != 0)
			return -1;
		snprintf(msg, cap, "closed loop: %ld users", l->concurrency);
		return 0;
	}
	/* To an open loop at the throughput just measured: same load, now
	 * with Poisson arrivals. */
	double secs = stats_window_seconds(v.stats, now_ns);
	double r = secs > 0 ? (double)v.stats->win_c.completed / secs : 0;
	if (!(r > 0))
		r = l->rate > 0 ? l->rate : (l->concurrency > 0 ? (double)l->concurrency : 1);
	r = round(r * 100) / 100;
	if (set_rate(t, r, msg, cap) != 0)
		return -1;
	snprintf(msg, cap, "open loop: %.4g req/s (Poisson arrivals)", l->rate);
	return 0;
}

int ui_action_pause(const struct cmd_target *t, char *msg, size_t cap)
{
	struct run_view v;
	cmd_target_view(t, &v);
	if (!running(&v, msg, cap))
		return -1;
	struct cmd_result r;
	bool pause = !v.load->paused;
	enum cmd_status st = pause ? cmd_target_pause(t, CMD_SRC_KEY, &r) : cmd_target_resume(t, CMD_SRC_KEY, &r);
	if (st == CMD_OK && pause)
		snprintf(msg, cap, "%s (p resumes)", r.msg);
	else
		snprintf(msg, cap, "%s", r.msg);
	return st == CMD_OK ? 0 : -1;
}

int ui_action_window_reset(const struct cmd_target *t, char *msg, size_t cap)
{
	struct cmd_result r;
	return done(cmd_target_window_reset(t, CMD_SRC_KEY, &r), &r, msg, cap);
}

int ui_action_plan_resume(const struct cmd_target *t, char *msg, size_t cap)
{
	struct cmd_result r;
	return done(cmd_target_plan_resume(t, CMD_SRC_KEY, &r), &r, msg, cap);
}
