#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/hist.h"
#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* What the prefix cache and the sessions did: the client-side hit rate
 * (window and run), TTFT of mostly cached vs cold requests, TTFT p50 by
 * turn 1..7 and 8+, sessions ended. Shown only in runs that have them
 * (LAYOUT_SESSIONS). The TTFT figures are the whole run's (those
 * histograms have no window: stats.h). */

static const struct hist *xh(const struct stats *st, enum stats_xhist x)
{
	return st->xh[x] && hist_count(st->xh[x]) ? st->xh[x] : NULL;
}

static bool has_sessions(const struct stats *st)
{
	if (st->sessions_done)
		return true;
	for (int x = XH_TURN_TTFT; x < XH_N; x++)
		if (xh(st, (enum stats_xhist)x))
			return true;
	return false;
}

bool w_sessions_shown(const struct stats *st)
{
	return has_sessions(st) || stats_cache_shown(&st->run_c, &st->win_c, false);
}

static void fmt_pct(char *buf, size_t cap, double frac, const struct dash *d)
{
	if (isnan(frac))
		snprintf(buf, cap, "%s", wd_dash(d));
	else
		snprintf(buf, cap, "%.1f%%", 100.0 * frac);
}

static void fmt_p(char *buf, size_t cap, const struct hist *h, double p, const struct dash *d)
{
	if (!h)
		snprintf(buf, cap, "%s", wd_dash(d));
	else
		wd_fmt_ms(buf, cap, (double)hist_percentile(h, p) / 1000.0);
}

/* "label v" pairs along a row; returns the column after them. */
static int pair(WINDOW *w, const struct rect *r, int y, int x, const struct dash *d, const char *label,
		const char *v)
{
	x = wd_put(w, r, y, x, wd_attr(d, THEME_R_LABEL), label);
	x = wd_put(w, r, y, x + 1, wd_attr(d, THEME_R_VALUE), v);
	return x + 2;
}

static void cache_rows(WINDOW *w, const struct rect *r, int y, const struct dash *d)
{
	const struct stats *st = d->v->stats;
	char b[32];
	int x = wd_put(w, r, y, 1, wd_attr(d, THEME_R_TITLE), "cache ");
	if (!st->run_c.cache_known && !st->win_c.cache_known) {
		wd_put(w, r, y, x + 1, wd_attr(d, THEME_R_DIM), "no response said what its server cached");
	} else {
		fmt_pct(b, sizeof b, stats_cache_hit_rate(&st->win_c), d);
		x = pair(w, r, y, x + 1, d, "hit rate", b);
		fmt_pct(b, sizeof b, stats_cache_hit_rate(&st->run_c), d);
		x = pair(w, r, y, x, d, "run", b);
		wd_fmt_count(b, sizeof b, st->run_c.prompt_cached);
		x = pair(w, r, y, x, d, "cached tok", b);
		wd_fmt_count(b, sizeof b, st->run_c.cache_unknown);
		pair(w, r, y, x, d, "silent req", b);
	}
	const struct hist *warm = xh(st, XH_TTFT_WARM), *cold = xh(st, XH_TTFT_COLD);
	x = wd_put(w, r, y + 1, 1, wd_attr(d, THEME_R_TITLE), "TTFT  ");
	x = wd_put(w, r, y + 1, x + 1, wd_attr(d, THEME_R_LABEL), "warm");
	fmt_p(b, sizeof b, warm, 50, d);
	x = pair(w, r, y + 1, x + 1, d, "p50", b);
	fmt_p(b, sizeof b, warm, 99, d);
	x = pair(w, r, y + 1, x, d, "p99", b);
	wd_fmt_count(b, sizeof b, warm ? hist_count(warm) : 0);
	x = pair(w, r, y + 1, x, d, "n", b);
	x = wd_put(w, r, y + 1, x + 1, wd_attr(d, THEME_R_LABEL), "cold");
	fmt_p(b, sizeof b, cold, 50, d);
	x = pair(w, r, y + 1, x + 1, d, "p50", b);
	fmt_p(b, sizeof b, cold, 99, d);
	x = pair(w, r, y + 1, x, d, "p99", b);
	wd_fmt_count(b, sizeof b, cold ? hist_count(cold) : 0);
	pair(w, r, y + 1, x, d, "n", b);
}

#define TURN_COL0 12
#define TURN_W 7

static void turn_rows(WINDOW *w, const struct rect *r, int y, const struct dash *d)
{
	const struct stats *st = d->v->stats;
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	wd_put(w, r, y, 1, wd_attr(d, THEME_R_TITLE), "turn");
	wd_put(w, r, y + 1, 1, lab, "TTFT p50 ms");
	bool e2e = y + 2 < r->h - 1; /* a row below the TTFT's, inside the border */
	if (e2e)
		wd_put(w, r, y + 2, 1, lab, "E2E p50 ms");
	for (int t = 0; t < STATS_TURNS; t++) {
		int x_end = TURN_COL0 + (t + 1) * TURN_W;
		wd_put_right(w, r, y, x_end, lab, stats_turn_label(t));
		char b[16];
		const struct hist *h = xh(st, (enum stats_xhist)(XH_TURN_TTFT + t));
		fmt_p(b, sizeof b, h, 50, d);
		wd_put_right(w, r, y + 1, x_end, h ? wd_attr(d, THEME_R_VALUE) : wd_attr(d, THEME_R_DIM), b);
		if (!e2e)
			continue;
		h = xh(st, (enum stats_xhist)(XH_TURN_E2E + t));
		fmt_p(b, sizeof b, h, 50, d);
		wd_put_right(w, r, y + 2, x_end, h ? wd_attr(d, THEME_R_VALUE) : wd_attr(d, THEME_R_DIM), b);
	}
}

static void session_row(WINDOW *w, const struct rect *r, int y, const struct dash *d)
{
	const struct stats *st = d->v->stats;
	char b[32];
	int x = wd_put(w, r, y, 1, wd_attr(d, THEME_R_TITLE), "sessions");
	wd_fmt_count(b, sizeof b, st->sessions_done);
	x = pair(w, r, y, x + 1, d, "done", b);
	wd_fmt_count(b, sizeof b, st->sessions_failed);
	int xf = wd_put(w, r, y, x, wd_attr(d, THEME_R_LABEL), "failed");
	x = wd_put(w, r, y, xf + 1, st->sessions_failed ? wd_attr(d, THEME_R_CRIT) : wd_attr(d, THEME_R_VALUE), b) + 2;
	wd_fmt_count(b, sizeof b, st->sessions_context);
	x = pair(w, r, y, x, d, "context limit", b);
	if (st->sessions_incomplete) {
		wd_fmt_count(b, sizeof b, st->sessions_incomplete);
		x = pair(w, r, y, x, d, "cut by end", b);
	}
	const struct hist *t = xh(st, XH_SESSION_TURNS);
	if (t) {
		snprintf(b, sizeof b, "%.1f", hist_mean(t));
		x = pair(w, r, y, x, d, "turns/session", b);
	}
	const struct hist *dur = xh(st, XH_SESSION_DURATION);
	if (dur) {
		/* Sessions last seconds to hours: "12.3s", "4.5m". */
		double sec = (double)hist_percentile(dur, 50) / 1e6;
		if (sec < 600)
			snprintf(b, sizeof b, "%.1fs", sec);
		else
			snprintf(b, sizeof b, "%.1fm", sec / 60);
		pair(w, r, y, x, d, "duration p50", b);
	}
}

void w_sessions_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	wd_title(w, r, d, "Sessions / cache", "latency: whole run, ms");
	/* Rows by priority: the cache, the turns, the sessions. */
	int y = 1;
	if (y + 1 < r->h) {
		cache_rows(w, r, y, d);
		y += 2;
	}
	if (y + 1 < r->h) {
		turn_rows(w, r, y, d);
		y += 3;
	}
	if (y < r->h)
		session_row(w, r, y, d);
}
