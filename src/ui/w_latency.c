#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/options.h"
#include "infertop/hist.h"
#include "infertop/plan.h"
#include "infertop/slo.h"
#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* Latency percentiles, sliding window and whole run side by side. */

/* Rows in the order of enum stat_metric, named and shown as
 * client_metrics.def says. */
static const char *const row_names[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, ...) [STAT_##id] = dash,
#include "infertop/client_metrics.def"
};

/* The rows the variant shows, in order; returns how many
 * (layout_latency_rows() counts them the same way). */
static int rows_of(int variant, unsigned flags, enum stat_metric rows[STAT_NMETRICS])
{
	int n = 0;
#define CLIENT_METRIC(id, key, dash, dash_when, ...)     \
	if (LAYOUT_LATENCY_##dash_when(variant, flags)) \
		rows[n++] = STAT_##id;
#include "infertop/client_metrics.def"
	return n;
}

enum col { COL_P50, COL_P90, COL_P95, COL_P99, COL_P999, COL_MAX, COL_MEAN, COL_N };

static const struct {
	const char *head;
	double p;
} cols[] = {
	[COL_P50] = {"p50", 50}, [COL_P90] = {"p90", 90}, [COL_P95] = {"p95", 95}, [COL_P99] = {"p99", 99},
	[COL_P999] = {"p99.9", 99.9}, [COL_MAX] = {"max", 100}, [COL_MEAN] = {"mean", -1},
};

/* The --slo limit (ns) of a row, 0 when it has none: TTFT, TPOT and E2E
 * are the SLO's own figures; the rest (ITL, TTFB, ...) have no SLO. */
static int64_t row_limit(const struct slo *slo, enum stat_metric m)
{
	int k = m == STAT_TTFT ? SLO_TTFT : m == STAT_TPOT ? SLO_TPOT : m == STAT_E2E ? SLO_E2E : -1;
	return slo && k >= 0 && slo->set[k] ? slo->limit_ns[k] : 0;
}

/* A cell over its SLO in the crit colour, within 80 % of it in the warn
 * colour: the glance says which latencies break the objective. Without
 * --slo nothing is coloured: a default limit would judge a server by a
 * figure the user never gave. */
static unsigned long cell_attr(double us, int64_t limit_ns, const struct dash *d)
{
	if (limit_ns > 0 && us * 1e3 > (double)limit_ns)
		return wd_attr(d, THEME_R_CRIT);
	if (limit_ns > 0 && us * 1e3 > 0.8 * (double)limit_ns)
		return wd_attr(d, THEME_R_WARN);
	return wd_attr(d, THEME_R_VALUE);
}

/* The cell's text; returns its figure (us), -1 when none. */
static double cell(char *buf, size_t cap, const struct hist *h, enum col c, const struct dash *d)
{
	if (hist_count(h) == 0) {
		snprintf(buf, cap, "%s", wd_dash(d));
		return -1;
	}
	double us;
	if (c == COL_MAX)
		us = (double)hist_max(h);
	else if (c == COL_MEAN)
		us = hist_mean(h);
	else
		us = (double)hist_percentile(h, cols[c].p);
	wd_fmt_ms(buf, cap, us / 1000.0);
	return us;
}

static void span_name(char *buf, size_t cap, int64_t ns)
{
	int64_t s = ns / 1000000000LL;
	if (s >= 3600 && s % 3600 == 0)
		snprintf(buf, cap, "%lldh", (long long)(s / 3600));
	else if (s >= 60 && s % 60 == 0)
		snprintf(buf, cap, "%lldm", (long long)(s / 60));
	else
		snprintf(buf, cap, "%gs", (double)ns / 1e9);
}

void w_latency_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	const struct stats *st = d->v->stats;
	const struct slo *slo = plan_slo(d->v->plan);
	bool detail = arg == PANEL_DETAIL;
	enum stat_metric rows[STAT_NMETRICS];
	int nrows = rows_of(arg, d->layout_flags, rows);

	/* Columns by priority; as many as fit at a readable width. */
	enum col want[COL_N];
	int nc = 0;
	want[nc++] = COL_P50;
	want[nc++] = COL_P90;
	if (detail)
		want[nc++] = COL_P95;
	want[nc++] = COL_P99;
	want[nc++] = COL_P999;
	want[nc++] = COL_MAX;
	if (detail)
		want[nc++] = COL_MEAN;
	const int namew = 7, gap = 3;
	static const enum col drop_order[] = {COL_MEAN, COL_P95, COL_P90, COL_P999};
	for (size_t k = 0; k < sizeof drop_order / sizeof drop_order[0]; k++) {
		if ((r->w - namew - gap - 1) / (2 * nc) >= 6)
			break;
		for (int i = 0; i < nc; i++)
			if (want[i] == drop_order[k]) {
				memmove(&want[i], &want[i + 1], (size_t)(nc - i - 1) * sizeof want[0]);
				nc--;
				break;
			}
	}
	int cw = (r->w - namew - gap - 1) / (2 * nc);
	if (cw > 9)
		cw = 9;
	int x_win = namew, x_run = namew + nc * cw + gap;

	char win[32], t[96];
	span_name(win, sizeof win, d->v->cfg ? d->v->cfg->window_ns : 0);
	int title_end = wd_title(w, r, d, "Latency client", "ms");
	char nwin[16], nrun[16];
	wd_fmt_count(nwin, sizeof nwin, hist_count(st->win[STAT_E2E]));
	wd_fmt_count(nrun, sizeof nrun, hist_count(st->run[STAT_E2E]));
	snprintf(t, sizeof t, " window %s: %s req ", win, nwin);
	int tx = x_win + 12 > 16 ? x_win + 12 : 16;
	if (tx < title_end + 1)
		tx = title_end + 1;
	unsigned long title = wd_attr(d, THEME_R_TITLE), lab = wd_attr(d, THEME_R_LABEL);
	wd_put(w, r, 0, tx, title, t);
	snprintf(t, sizeof t, " whole run: %s req ", nrun);
	wd_put(w, r, 0, x_run + cw, title, t);

	for (int s = 0; s < 2; s++) {
		int x0 = s ? x_run : x_win;
		for (int c = 0; c < nc; c++)
			wd_put_right(w, r, 1, x0 + (c + 1) * cw, lab, cols[want[c]].head);
	}
	wd_put(w, r, 1, x_run - 2, wd_attr(d, THEME_R_BORDER), wd_vbar(d));
	for (int i = 0; i < nrows && 2 + i < r->h; i++) {
		int y = 2 + i;
		wd_put(w, r, y, 1, lab, row_names[rows[i]]);
		int64_t limit = row_limit(slo, rows[i]);
		for (int s = 0; s < 2; s++) {
			const struct hist *h = s ? st->run[rows[i]] : st->win[rows[i]];
			int x0 = s ? x_run : x_win;
			for (int c = 0; c < nc; c++) {
				char v[16];
				double us = cell(v, sizeof v, h, want[c], d);
				unsigned long a = us < 0 ? wd_attr(d, THEME_R_DIM) : cell_attr(us, limit, d);
				wd_put_right(w, r, y, x0 + (c + 1) * cw, a, v);
			}
		}
		wd_put(w, r, y, x_run - 2, wd_attr(d, THEME_R_BORDER), wd_vbar(d));
	}
}
