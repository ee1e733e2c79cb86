#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/hist.h"
#include "infertop/options.h"
#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* A latency distribution, oha-style: one row per bucket, buckets spaced
 * logarithmically from the window's fastest to its slowest request (the
 * long tail gets rows of its own instead of one crowded bar), a bar per
 * bucket, its count, and the p50, p90, p99 marks in the rows that hold
 * those percentiles, each of which ends a row of its own. Exact zeros
 * get a row apart. Read from the sliding window's histogram, which the
 * run keeps anyway: no samples are held for this. */

static const struct {
	const char *title;
	enum stat_metric m;
	enum theme_role role;
} hists[HIST_N] = {
	[HIST_TTFT] = {"TTFT client", STAT_TTFT, THEME_R_CHART_TTFT},
	[HIST_ITL] = {"ITL client", STAT_ITL, THEME_R_CHART_ITL},
	[HIST_E2E] = {"E2E client", STAT_E2E, THEME_R_CHART_TOK},
};

static const struct {
	double p;
	const char *name;
} pcts[] = {{50, "p50"}, {90, "p90"}, {99, "p99"}};
#define NPCTS ((int)(sizeof pcts / sizeof pcts[0]))
#define MAX_ROWS 256

/* Upper bounds of n buckets, log-spaced over [lo, hi] microseconds and
 * strictly increasing; the last one is hi. Returns the buckets made
 * (fewer when the range has fewer distinct microseconds). */
int w_hist_bounds(int64_t lo, int64_t hi, int n, int64_t *le)
{
	if (n <= 0)
		return 0;
	if (lo < 1)
		lo = 1;
	if (hi <= lo) {
		le[0] = hi < lo ? lo : hi;
		return 1;
	}
	double ratio = (double)hi / (double)lo;
	int k = 0;
	for (int i = 1; i <= n; i++) {
		int64_t b = i == n ? hi : (int64_t)floor((double)lo * pow(ratio, (double)i / n));
		if (k > 0 && b <= le[k - 1])
			continue;
		le[k++] = b;
	}
	return k;
}

void w_hist_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	if (arg < 0 || arg >= HIST_N)
		return;
	const struct stats *st = d->v->stats;
	const struct hist *h = st->win[hists[arg].m];
	const char *scope = "window";
	if (hist_count(h) == 0 && hist_count(st->run[hists[arg].m]) > 0) {
		h = st->run[hists[arg].m];
		scope = "whole run";
	}
	unsigned long lab = wd_attr(d, THEME_R_LABEL), dim = wd_attr(d, THEME_R_DIM);
	unsigned long val = wd_attr(d, THEME_R_VALUE), mark = wd_attr(d, THEME_R_MARKER);
	uint64_t total = hist_count(h);
	char extra[160], b[32];
	int64_t pv[NPCTS];
	if (total == 0) {
		wd_title(w, r, d, hists[arg].title, "ms");
		wd_put(w, r, 1, 1, dim, "no finished request yet");
		return;
	}
	/* The percentiles in the title, in the same format as the rows, so
	 * a mark can be checked against the bucket it sits in. */
	size_t len = (size_t)snprintf(extra, sizeof extra, "ms, %s", scope);
	for (int i = 0; i < NPCTS; i++) {
		pv[i] = hist_percentile(h, pcts[i].p);
		wd_fmt_ms(b, sizeof b, (double)pv[i] / 1000.0);
		if (len < sizeof extra)
			len += (size_t)snprintf(extra + len, sizeof extra - len, " %s %s", pcts[i].name, b);
	}
	wd_title(w, r, d, hists[arg].title, extra);

	int rows = r->h - 1;
	if (rows > MAX_ROWS)
		rows = MAX_ROWS;
	if (rows <= 0)
		return;
	int64_t le[MAX_ROWS + NPCTS + 1];
	uint64_t cum[MAX_ROWS + NPCTS + 1];
	/* Exact zeros (tokens that came in the same read as the one before)
	 * get a row of their own; the log rows span the nonzero samples, so
	 * the zeros no longer stretch them over microseconds nobody has. */
	int64_t zero_le = 0;
	uint64_t zeros = 0;
	if (rows > 1) /* one row alone holds everything */
		hist_cumulative(h, &zero_le, 1, &zeros);
	int n = 0;
	if (zeros > 0)
		le[n++] = 0;
	int64_t lo = hist_min(h), hi = hist_max(h);
	if (zeros > 0 && zeros < total)
		lo = hist_percentile(h, 100.0 * (double)(zeros + 1) / (double)total);
	if (zeros < total && rows - n > 0) {
		/* Rows to spare for the percentiles' own bounds, so that each
		 * ends a bar of its own (p50 and p90 apart when they differ). */
		int want = rows - n - NPCTS;
		bool room = want >= 1;
		if (!room)
			want = rows - n;
		int k = w_hist_bounds(lo < 1 ? 1 : lo, hi, want, le + n);
		n += k;
		for (int p = 0; room && p < NPCTS && n < rows; p++) {
			if (pv[p] <= 0 || pv[p] >= hi)
				continue;
			int at = 0;
			while (at < n && le[at] < pv[p])
				at++;
			if (at < n && le[at] == pv[p])
				continue;
			memmove(le + at + 1, le + at, (size_t)(n - at) * sizeof le[0]);
			le[at] = pv[p];
			n++;
		}
	}
	hist_cumulative(h, le, (size_t)n, cum);
	cum[n - 1] = total; /* the top bound is the max: every sample */
	uint64_t most = 0;
	for (int i = 0; i < n; i++) {
		uint64_t c = cum[i] - (i ? cum[i - 1] : 0);
		if (c > most)
			most = c;
	}
	/* Columns: bucket top (ms), bar, count, marks. */
	const int label_w = 8, count_w = 8, mark_w = 14;
	int bar_x = 1 + label_w + 1;
	int bar_w = r->w - bar_x - count_w - mark_w - 1;
	if (bar_w < 4)
		bar_w = 4;
	int count_end = bar_x + bar_w + count_w;
	for (int i = 0; i < n; i++) {
		int y = 1 + i;
		uint64_t c = cum[i] - (i ? cum[i - 1] : 0);
		/* A row holds the samples above the row before, up to its
		 * label: said with "≤" (the zero row is "= 0"). */
		char ms[24];
		if (le[i] == 0)
			snprintf(ms, sizeof ms, "0");
		else if (le[i] < 10)
			snprintf(ms, sizeof ms, "%.3f", (double)le[i] / 1000.0);
		else
			wd_fmt_ms(ms, sizeof ms, (double)le[i] / 1000.0);
		snprintf(b, sizeof b, "%s %s", le[i] == 0 ? "=" : d->ascii ? "<=" : "\xe2\x89\xa4", ms);
		wd_put_right(w, r, y, 1 + label_w, lab, b);
		wd_put(w, r, y, 1 + label_w, wd_attr(d, THEME_R_BORDER), wd_vbar(d));
		/* The bar's length is the share of the fullest bucket. */
		double frac = most ? (double)c / (double)most : 0;
		int cells = (int)lround(frac * bar_w);
		if (c > 0 && cells == 0)
			cells = 1;
		wd_repeat(w, r, y, bar_x, cells, wd_attr(d, hists[arg].role), d->ascii ? L'#' : 0x25a0);
		wd_fmt_count(b, sizeof b, c);
		wd_put_right(w, r, y, count_end, c ? val : dim, b);
		/* The percentiles whose value falls in (le[i-1], le[i]]. */
		char marks[48] = "";
		size_t ml = 0;
		for (int p = 0; p < NPCTS; p++) {
			bool here = pv[p] <= le[i] && (i == 0 || pv[p] > le[i - 1]);
			if (here && ml < sizeof marks)
				ml += (size_t)snprintf(marks + ml, sizeof marks - ml, "%s%s", ml ? " " : "", pcts[p].name);
		}
		if (ml) {
			char t[64];
			snprintf(t, sizeof t, "%s %s", d->ascii ? "<" : "\xe2\x97\x80", marks);
			wd_put(w, r, y, count_end + 1, mark, t);
		}
	}
}
