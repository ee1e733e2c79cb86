#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infertop/engine.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/report.h"
#include "infertop/stats.h"
#include "infertop/ui.h"
#include "infertop/units.h"

/* Rates are kept to a sane range: below one request a minute the run says
 * nothing; above a million per second the client is the bottleneck. */
#define RATE_MIN (1.0 / 60)
#define RATE_MAX 1e6

static bool can_change(const struct engine *e, char *msg, size_t cap)
{
	if (e->state == ENGINE_RUNNING)
		return true;
	snprintf(msg, cap, "%s", e->state == ENGINE_DONE ? "the run is over" : "stopping: the load cannot change now");
	return false;
}

static int set_conc(struct engine *e, long n, long max_conc, char *msg, size_t cap)
{
	const char *note = "";
	if (n < 1)
		n = 1;
	if (max_conc > 0 && n > max_conc) {
		n = max_conc;
		note = " (the file descriptor limit)";
	}
	if (e->load.mode == LOAD_CLOSED && e->load.concurrency == n) {
		snprintf(msg, cap, "concurrency stays %ld%s", n, note);
		return -1;
	}
	load_set_concurrency(&e->load, n);
	snprintf(msg, cap, "concurrency %ld%s", n, note);
	return 0;
}

static int set_rate(struct engine *e, double r, char *msg, size_t cap)
{
	if (!(r >= RATE_MIN))
		r = RATE_MIN;
	if (r > RATE_MAX)
		r = RATE_MAX;
	load_set_rate(&e->load, r);
	snprintf(msg, cap, "rate %.4g req/s", r);
	return 0;
}

int ui_action_load(struct engine *e, enum key_action a, long max_conc, char *msg, size_t cap)
{
	if (!can_change(e, msg, cap))
		return -1;
	const struct load *l = &e->load;
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
		return set_rate(e, l->rate * f, msg, cap);
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
	return set_conc(e, n, max_conc, msg, cap);
}

int ui_action_set(struct engine *e, const char *typed, long max_conc, char *msg, size_t cap)
{
	if (!can_change(e, msg, cap))
		return -1;
	if (e->load.mode == LOAD_OPEN) {
		double r;
		if (units_parse_double(typed, &r) != 0 || !(r > 0)) {
			snprintf(msg, cap, "not a rate: \"%s\" (requests per second, e.g. 2.5)", typed);
			return -1;
		}
		return set_rate(e, r, msg, cap);
	}
	long n;
	if (units_parse_long(typed, 1, 1000000000L, &n) != 0) {
		snprintf(msg, cap, "not a concurrency: \"%s\" (a whole number from 1)", typed);
		return -1;
	}
	return set_conc(e, n, max_conc, msg, cap);
}

int ui_action_mode(struct engine *e, int64_t now_ns, long max_conc, char *msg, size_t cap)
{
	if (!can_change(e, msg, cap))
		return -1;
	struct load *l = &e->load;
	if (l->mode == LOAD_OPEN) {
		/* Back to the users that offer the same load: the cap on in-flight
		 * requests when there is one, else the rate times the window's
		 * mean E2E (Little's law). Never the in-flight count, which an
		 * overload inflates with requests stuck in the server's queue. */
		long n;
		double e2e_s = hist_count(e->stats->win[STAT_E2E]) ? hist_mean(e->stats->win[STAT_E2E]) / 1e6 : 0;
		if (l->max_concurrency > 0)
			n = l->max_concurrency;
		else if (e2e_s > 0 && l->rate > 0)
			n = lround(l->rate * e2e_s);
		else
			n = l->concurrency > 0 ? l->concurrency : 1;
		if (n < 1)
			n = 1;
		load_set_concurrency(l, n > max_conc && max_conc > 0 ? max_conc : n);
		snprintf(msg, cap, "closed loop: %ld users", l->concurrency);
		return 0;
	}
	/* To an open loop at the throughput just measured: same load, now
	 * with Poisson arrivals. */
	double secs = stats_window_seconds(e->stats, now_ns);
	double r = secs > 0 ? (double)e->stats->win_c.completed / secs : 0;
	if (!(r > 0))
		r = l->rate > 0 ? l->rate : (l->concurrency > 0 ? (double)l->concurrency : 1);
	r = round(r * 100) / 100;
	set_rate(e, r, msg, cap);
	snprintf(msg, cap, "open loop: %.4g req/s (Poisson arrivals)", l->rate);
	return 0;
}

int ui_action_pause(struct engine *e, char *msg, size_t cap)
{
	if (!can_change(e, msg, cap))
		return -1;
	bool p = !e->load.paused;
	load_pause(&e->load, p);
	snprintf(msg, cap, "%s", p ? "paused: no new requests; in-flight ones finish (p resumes)" : "resumed");
	return 0;
}

int ui_action_window_reset(struct engine *e, int64_t now_ns, char *msg, size_t cap)
{
	stats_window_reset(e->stats, now_ns);
	plan_window_reset(e->plan, now_ns);
	snprintf(msg, cap, "sliding window emptied; whole-run figures kept");
	return 0;
}

int ui_action_plan_resume(struct engine *e, int64_t now_ns, char *msg, size_t cap)
{
	if (!can_change(e, msg, cap))
		return -1;
	if (plan_resume(e->plan, now_ns) != 0) {
		snprintf(msg, cap, "%s", plan_state_name(e->plan)[0] ? "the plan is in control already"
								     : "no plan to resume (--stages, --sweep, --matrix)");
		return -1;
	}
	char st[160];
	plan_status(e->plan, now_ns, st, sizeof st);
	snprintf(msg, cap, "plan resumed: %s", st);
	return 0;
}
