#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/options.h"
#include "infertop/plan.h"
#include "infertop/load.h"
#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* One figure of the load line: label, value, unit, in a long and a short
 * spelling; when even the short line does not fit, the figures of lowest
 * priority go. */
struct seg {
	const char *label[2];
	char value[32];
	const char *unit[2];
	char suffix[24]; /* after the unit in both forms: the window, " (30 s)" */
	enum theme_role role;
	int prio;
};

#define MAX_SEGS 14
/* Figures of this priority or less are the first to go. */
#define PRIO_EXTRA 4

static int seg_width(const struct seg *s, int form)
{
	return wd_width(s->label[form]) + wd_width(s->value) + wd_width(s->unit[form]) + wd_width(s->suffix);
}

static struct seg *push(struct seg *segs, int *n, const char *llong, const char *lshort, const char *ulong,
			const char *ushort, enum theme_role role, int prio)
{
	struct seg *s = &segs[(*n)++];
	s->label[0] = llong;
	s->label[1] = lshort;
	s->unit[0] = ulong;
	s->unit[1] = ushort;
	s->role = role;
	s->prio = prio;
	s->value[0] = '\0';
	s->suffix[0] = '\0';
	return s;
}

/* The span the window's rates are over, as the chart titles say theirs
 * ("(1 s)"): the configured window, or the run so far while it is
 * shorter. */
static void window_name(char *buf, size_t cap, double win_s, const struct run_view *e)
{
	double cfg = e->cfg && e->cfg->window_ns > 0 ? (double)e->cfg->window_ns / 1e9 : win_s;
	double s = win_s > 0 && win_s < cfg - 1 ? win_s : cfg;
	if (s >= 120 && fmod(s, 60) == 0)
		snprintf(buf, cap, " (%.0f min)", s / 60);
	else
		snprintf(buf, cap, " (%.0f s)", s < 1 ? 1 : s);
}

static void rate_value(char *buf, size_t cap, double count, double secs, const struct dash *d)
{
	if (secs > 0)
		wd_fmt_si(buf, cap, count / secs);
	else
		snprintf(buf, cap, "%s", wd_dash(d));
}

void w_load_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	const struct run_view *e = d->v;
	const struct stats *st = e->stats;
	const struct load *l = e->load;
	struct seg segs[MAX_SEGS];
	int n = 0;
	struct seg *s;
	bool open = l->mode == LOAD_OPEN;

	push(segs, &n, open ? "open loop" : "closed loop", open ? "open" : "closed", "", "", THEME_R_TITLE, 9);
	if (e->state == ENGINE_DRAINING)
		push(segs, &n, "draining", "draining", "", "", THEME_R_WARN, 9);
	else if (l->paused && e->state == ENGINE_RUNNING)
		push(segs, &n, "PAUSED", "PAUSED", "", "", THEME_R_WARN, 9);
	else if (l->backing_off && e->state == ENGINE_RUNNING) {
		s = push(segs, &n, "backing off ", "backoff ", "", "", THEME_R_WARN, 9);
		if (e->backoff_code)
			snprintf(s->value, sizeof s->value, "(%d)", e->backoff_code);
		else
			snprintf(s->value, sizeof s->value, "(refused)");
	}
	if (open) {
		s = push(segs, &n, "rate ", "rate ", " req/s", "/s", THEME_R_VALUE, 10);
		snprintf(s->value, sizeof s->value, "%.3g", l->rate);
	} else {
		s = push(segs, &n, "target ", "target ", "", "", THEME_R_VALUE, 10);
		snprintf(s->value, sizeof s->value, "%ld", l->concurrency);
	}
	s = push(segs, &n, "in-flight ", "in-flight ", "", "", THEME_R_VALUE, 10);
	if (open && l->max_concurrency)
		snprintf(s->value, sizeof s->value, "%llu/%ld", (unsigned long long)st->in_flight, l->max_concurrency);
	else
		snprintf(s->value, sizeof s->value, "%llu", (unsigned long long)st->in_flight);
	if (open) {
		s = push(segs, &n, "queued ", "q ", "", "", THEME_R_VALUE, 7);
		snprintf(s->value, sizeof s->value, "%u", load_pending(l));
	}
	s = push(segs, &n, "done ", "ok ", "", "", THEME_R_VALUE, 6);
	wd_fmt_count(s->value, sizeof s->value, st->run_c.completed);
	uint64_t errs = stats_errors_total(st), ended = st->run_c.completed + errs;
	s = push(segs, &n, "errors ", "err ", "", "", errs ? THEME_R_CRIT : THEME_R_VALUE, 8);
	char num[16];
	wd_fmt_count(num, sizeof num, errs);
	snprintf(s->value, sizeof s->value, "%s (%.1f%%)", num, ended ? 100.0 * (double)errs / (double)ended : 0.0);
	/* The window's rates, then the whole run's: the same figures as the
	 * summary printed at the end (its measured seconds, its counts), so
	 * the final screen says what the run did, not what its last window
	 * did. Once done (while running the line has no room for both), both
	 * stand still at the end. */
	bool done = e->state == ENGINE_DONE && e->t_end;
	int64_t at = done ? e->t_end : d->now;
	double win = stats_window_seconds(st, at);
	/* Each says its window: the output tok/s chart's figure is over the
	 * last second, and the two must never read as one figure. */
	char wn[24];
	window_name(wn, sizeof wn, win, e);
	s = push(segs, &n, "", "", " req/s", " req/s", THEME_R_VALUE, 5);
	rate_value(s->value, sizeof s->value, (double)st->win_c.completed, win, d);
	snprintf(s->suffix, sizeof s->suffix, "%s", wn);
	s = push(segs, &n, "", "", " out tok/s", " out t/s", THEME_R_VALUE, 7);
	rate_value(s->value, sizeof s->value, stats_live_tokens(st, &st->win_c), win, d);
	snprintf(s->suffix, sizeof s->suffix, "%s", wn);
	s = push(segs, &n, "", "", " total tok/s", " tot t/s", THEME_R_VALUE, done ? 2 : 4);
	rate_value(s->value, sizeof s->value, stats_live_tokens(st, &st->win_c) + (double)st->win_c.input_tokens, win, d);
	snprintf(s->suffix, sizeof s->suffix, "%s", wn);
	if (done) {
		double run = e->t_start ? plan_measured_seconds(e->plan, e->t_start, at) : 0.0;
		s = push(segs, &n, "run ", "run ", " req/s", " req/s", THEME_R_VALUE, 11);
		if (run > 0)
			snprintf(s->value, sizeof s->value, "%.2f", (double)st->run_c.completed / run);
		else
			snprintf(s->value, sizeof s->value, "%s", wd_dash(d));
		s = push(segs, &n, "run ", "run ", " out tok/s", " out t/s", THEME_R_VALUE, 10);
		rate_value(s->value, sizeof s->value, (double)st->run_c.output_tokens, run, d);
	}
	if (plan_slo(e->plan)) {
		/* Requests meeting every --slo, per second over the window. */
		s = push(segs, &n, "goodput ", "good ", " req/s", "/s", THEME_R_GOOD, 6);
		snprintf(s->value, sizeof s->value, "%.2f", plan_goodput_window(e->plan, d->now));
		window_name(s->suffix, sizeof s->suffix, slo_window_seconds(plan_slo(e->plan), d->now), e);
	}

	bool keep[MAX_SEGS];
	for (int i = 0; i < n; i++)
		keep[i] = true;
	/* Long labels, then without the extras (total tok/s), then short
	 * labels, with " | " between figures; then bare separators; then
	 * figures go, least important first. */
	int form = 0, sepw = 3;
	bool extras = true;
	for (;;) {
		int total = 1;
		int kept = 0;
		for (int i = 0; i < n; i++)
			if (keep[i]) {
				total += seg_width(&segs[i], form) + (kept ? sepw : 0);
				kept++;
			}
		if (total <= r->w || kept <= 1)
			break;
		if (form == 0 && extras) {
			extras = false;
			for (int i = 0; i < n; i++)
				if (segs[i].prio <= PRIO_EXTRA)
					keep[i] = false;
			continue;
		}
		if (form == 0) {
			form = 1;
			continue;
		}
		if (sepw == 3) {
			sepw = 1;
			continue;
		}
		int drop = -1;
		for (int i = 0; i < n; i++)
			if (keep[i] && (drop < 0 || segs[i].prio < segs[drop].prio))
				drop = i;
		keep[drop] = false;
	}
	unsigned long lab = wd_attr(d, THEME_R_LABEL), sep = wd_attr(d, THEME_R_BORDER);
	int x = 1;
	bool first = true;
	for (int i = 0; i < n; i++) {
		if (!keep[i])
			continue;
		if (!first) {
			if (sepw == 3) {
				x = wd_put(w, r, 0, x, sep, " ");
				x = wd_put(w, r, 0, x, sep, wd_vbar(d));
				x = wd_put(w, r, 0, x, sep, " ");
			} else {
				x = wd_put(w, r, 0, x, sep, wd_vbar(d));
			}
		}
		first = false;
		/* A segment without a value is a word in its own colour. */
		x = wd_put(w, r, 0, x, segs[i].value[0] ? lab : wd_attr(d, segs[i].role), segs[i].label[form]);
		x = wd_put(w, r, 0, x, wd_attr(d, segs[i].role), segs[i].value);
		x = wd_put(w, r, 0, x, lab, segs[i].unit[form]);
		x = wd_put(w, r, 0, x, lab, segs[i].suffix);
	}
}
