#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "infertop/clock.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/slo.h"
#include "infertop/server.h"
#include "infertop/stats.h"
#include "infertop/series.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* Charts over time: a filled area in braille dots (2 x 4 per cell) or, in
 * ASCII mode, '#' and '.' (1 x 2 per cell), in a box whose top border
 * carries the title, the latest value and the value scale, and whose
 * bottom border is the time axis ("-10m ... -5m ... now", following the
 * zoom). Load changes are marked with a dotted vertical line; only the
 * latest few are labelled, and lines closer than a column apart are
 * thinned, so a chart stays readable after many key presses. */

static const struct chart_def {
	const char *title;
	enum series_id id;
	enum theme_role role;
	bool percent;       /* 0..1 shown as 0..100 %, fixed scale */
	const char *unit;
	const char *no_data;
} charts[CHART_N] = {
	[CHART_TOK] = {"output tok/s", SER_OUT_TOK_S, THEME_R_CHART_TOK, false, "", NULL},
	/* Client and server figures side by side on one screen must say
	 * which is which: the latency charts are measured here. */
	[CHART_TTFT] = {"TTFT p99 client", SER_TTFT_P99, THEME_R_CHART_TTFT, false, " ms", NULL},
	[CHART_ITL] = {"ITL p99 client", SER_ITL_P99, THEME_R_CHART_ITL, false, " ms", NULL},
	[CHART_QUEUE] = {"server queue", SER_WAITING, THEME_R_CHART_QUEUE, false, "", "the server does not report its queue"},
	[CHART_KV] = {"server KV cache", SER_KV, THEME_R_CHART_KV, true, "%", "the server does not report KV-cache usage"},
	[CHART_CONC] = {"in flight", SER_IN_FLIGHT, THEME_R_CHART_CONC, false, "", NULL},
	[CHART_REQ] = {"req/s", SER_REQ_S, THEME_R_CHART_TOK, false, "", NULL},
	[CHART_ERR] = {"errors/s", SER_ERRORS, THEME_R_CRIT, false, "", NULL},
};

#define MAX_POINTS 2048
#define MAX_COLS (MAX_POINTS / 2)
#define MAX_MARKS 64
/* Markers that get their label; older ones keep only their line. */
#define LABELLED_MARKS 3

double wd_nice_ceil(double m)
{
	if (!(m > 0))
		return 1;
	double e = pow(10, floor(log10(m)));
	double f = m / e;
	double n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
	return n * e;
}

/* Braille dot bits, bottom to top: left column, right column. */
static const unsigned braille_bits[2][4] = {{0x40, 0x04, 0x02, 0x01}, {0x80, 0x20, 0x10, 0x08}};

/* A limit drawn across a chart (the --slo of its figure): points over it
 * in the crit colour, within 80 % of it in the warn colour, as the
 * latency table colours its cells; limit 0: none. */
struct threshold {
	double limit;
	const char *label; /* on the line, where it hides no data */
};

static enum theme_role point_role(double v, const struct threshold *th, enum theme_role role)
{
	if (!th || !(th->limit > 0) || isnan(v))
		return role;
	return v > th->limit ? THEME_R_CRIT : v > 0.8 * th->limit ? THEME_R_WARN : role;
}

/* Writes line[from..to) in one attribute. */
static void put_run(WINDOW *w, int y, int x, const wchar_t *line, int from, int to, unsigned long attr)
{
	if (to <= from)
		return;
	wattr_set(w, (attr_t)(attr & ~A_COLOR), (short)PAIR_NUMBER(attr), NULL);
	mvwaddnwstr(w, y, x + from, line + from, to - from);
}

static void plot(WINDOW *w, const struct rect *r, const double *v, int npts, double top, const struct dash *d,
		 enum theme_role role, const int *mark_col, int nmarks, const struct series_marker *marks,
		 const struct threshold *th)
{
	int rows = r->h - 1, cols = r->w < MAX_COLS ? r->w : MAX_COLS;
	int per_cell = d->ascii ? 2 : 4;   /* vertical levels per row */
	int levels = rows * per_cell;
	int height[MAX_POINTS];
	/* A cell's colour: its worst point's (two points per braille cell). */
	enum theme_role cell_role[MAX_COLS];
	for (int c = 0; c < cols; c++) {
		cell_role[c] = role;
		for (int k = d->ascii ? c : 2 * c; k < (d->ascii ? c + 1 : 2 * c + 2) && k < npts; k++) {
			enum theme_role pr = point_role(v[k], th, role);
			if (pr == THEME_R_CRIT || (pr == THEME_R_WARN && cell_role[c] != THEME_R_CRIT))
				cell_role[c] = pr;
		}
	}
	/* The row the limit falls in, counted from the top; -1: none (or
	 * above the scale). */
	int th_row = -1;
	if (th && th->limit > 0 && th->limit <= top) {
		int lvl = (int)lround(th->limit / top * levels);
		if (lvl < 1)
			lvl = 1;
		th_row = rows - 1 - (lvl - 1) / per_cell;
	}
	for (int i = 0; i < npts; i++) {
		if (isnan(v[i]) || v[i] <= 0) {
			height[i] = isnan(v[i]) ? -1 : 0;
			continue;
		}
		int h = (int)lround(v[i] / top * levels);
		height[i] = h < 1 ? 1 : h > levels ? levels : h; /* anything above zero shows */
	}
	unsigned long mattr = wd_attr(d, THEME_R_MARKER);
	wchar_t line[MAX_COLS + 1];
	for (int row = 0; row < rows; row++) {
		int base = (rows - 1 - row) * per_cell; /* levels below this row */
		for (int c = 0; c < cols; c++) {
			wchar_t ch = L' ';
			if (d->ascii) {
				int f = height[c] - base;
				ch = f >= 2 ? L'#' : f == 1 ? L'.' : L' ';
			} else {
				unsigned bits = 0;
				for (int half = 0; half < 2; half++) {
					int f = height[2 * c + half] - base;
					for (int k = 0; k < 4 && k < f; k++)
						bits |= braille_bits[half][k];
				}
				if (bits)
					ch = (wchar_t)(0x2800 + bits);
			}
			line[c] = ch;
		}
		line[cols] = 0;
		/* The limit's line goes through the empty cells of its row. */
		bool on_line[MAX_COLS] = {false};
		if (row == th_row)
			for (int c = 0; c < cols; c++)
				if (line[c] == L' ') {
					line[c] = d->ascii ? L'-' : 0x2508;
					on_line[c] = true;
				}
		/* Runs of one colour: the series', or warn/crit over the limit. */
		int from = 0;
		for (int c = 1; c <= cols; c++) {
			if (c < cols && on_line[c] == on_line[from] && cell_role[c] == cell_role[from])
				continue;
			put_run(w, r->y + 1 + row, r->x, line, from, c,
				on_line[from] ? wd_attr(d, THEME_R_CRIT) : wd_attr(d, cell_role[from]));
			from = c;
		}
		if (row == th_row && th->label) {
			/* The label at the line's right end, over empty cells only. */
			int len = wd_width(th->label), c0 = cols - 1 - len;
			bool fits = c0 > 0;
			for (int k = c0; fits && k < cols - 1; k++)
				fits = on_line[k];
			if (fits) {
				struct rect lrow = {r->y + 1 + row, r->x, 1, r->w};
				wd_put(w, &lrow, 0, c0, wd_attr(d, THEME_R_CRIT), th->label);
			}
		}
		for (int m = 0; m < nmarks; m++) {
			int c = mark_col[m];
			wchar_t mc[2] = {line[c] == L' ' ? (d->ascii ? L'|' : 0x250a) : line[c], 0};
			wattr_set(w, (attr_t)(mattr & ~A_COLOR), (short)PAIR_NUMBER(mattr), NULL);
			mvwaddnwstr(w, r->y + 1 + row, r->x + c, mc, 1);
			/* The label goes in the top row, where it does not hide
			 * data; only the latest few are labelled. */
			if (row == 0 && m >= nmarks - LABELLED_MARKS) {
				const char *lab = marks[m].label;
				int len = wd_width(lab), end = m + 1 < nmarks ? mark_col[m + 1] : cols;
				bool fits = c + 1 + len < end;
				for (int k = c + 1; fits && k <= c + len && k < cols; k++)
					fits = line[k] == L' ';
				if (fits) {
					struct rect top_row = {r->y + 1, r->x, 1, r->w};
					wd_put(w, &top_row, 0, c + 1, mattr, lab);
				}
			}
		}
	}
}

void w_chart_plot(WINDOW *w, const struct rect *r, const double *v, int npts, double top, const struct dash *d,
		  enum theme_role role)
{
	plot(w, r, v, npts, top, d, role, NULL, 0, NULL, NULL);
}

/* The chart's --slo limit in its own unit (ms), 0 when it has none: only
 * TTFT's chart; ITL is no SLO's figure (TPOT is a request's mean gap, not
 * one gap) and E2E has no chart. */
static double chart_limit(int arg, const struct dash *d)
{
	const struct slo *slo = d->v->plan ? plan_slo(d->v->plan) : NULL;
	if (arg != CHART_TTFT || !slo || !slo->set[SLO_TTFT])
		return 0;
	return (double)slo->limit_ns[SLO_TTFT] / 1e6;
}

/* The figure in a chart's title is the current value, never the mean of
 * the points a column stands for (the queue is 5 requests, not 0.33):
 * the engine's count in flight, the server's latest gauge, or the latest
 * one-second point. A server gauge read before /metrics stopped
 * answering is said to be stale. Returns NaN when nothing is known. */
static double current_value(int arg, const struct chart_def *cd, const struct dash *d, bool *stale)
{
	*stale = false;
	if (arg == CHART_CONC && d->v->stats)
		return (double)d->v->stats->in_flight;
	if (arg == CHART_QUEUE || arg == CHART_KV) {
		const struct server_state *s = d->v->server;
		const struct server_value *g = s ? &s->gauge[arg == CHART_QUEUE ? SRV_WAITING : SRV_KV_USAGE] : NULL;
		if (!g || !g->valid || isnan(g->v))
			return NAN;
		*stale = s->status != SERVER_UP;
		return g->v;
	}
	double pts[3];
	int64_t t0;
	size_t n = d->v->series ? series_read(d->v->series, cd->id, 3 * CLOCK_NS_PER_S, pts, 3, &t0) : 0;
	for (size_t i = n; i-- > 0;)
		if (!isnan(pts[i]))
			return pts[i];
	return NAN;
}

void w_chart_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	if (arg < 0 || arg >= CHART_N)
		return;
	const struct chart_def *cd = &charts[arg];
	unsigned long dim = wd_attr(d, THEME_R_DIM);
	int cols = r->w < MAX_COLS ? r->w : MAX_COLS;
	int npts = d->ascii ? cols : 2 * cols;
	double v[MAX_POINTS];
	int64_t t0 = 0, first = 0, last = 0;
	size_t n = 0;
	/* A run shorter than the zoom span fills the chart instead of
	 * crawling in from the right. */
	int64_t want = d->zoom_ns;
	if (d->v->series && series_extent(d->v->series, &first, &last) == 0) {
		if (want > last - first)
			want = 0;
		n = series_read(d->v->series, cd->id, want, v, (size_t)npts, &t0);
	}
	if (n == 0) {
		wd_title(w, r, d, cd->title, NULL);
		wd_put(w, r, 1, 1, dim, "waiting for data");
		return;
	}
	int64_t span = want > 0 ? want : last - t0;
	if (span > 0)
		wd_time_axis(w, r, span, d);
	double maxv = 0, cur;
	bool any = false;
	for (int i = 0; i < npts; i++) {
		if (isnan(v[i]))
			continue;
		any = true;
		if (v[i] > maxv)
			maxv = v[i];
	}
	/* An SLO within 4x of the data widens the scale to show its line;
	 * further up, nothing comes near it. */
	double limit = chart_limit(arg, d);
	if (limit > 0 && limit > 4 * maxv)
		limit = 0;
	double scale = cd->percent ? 100 : 1;
	double top = cd->percent ? 1.0 : wd_nice_ceil(limit > maxv ? limit : maxv);
	/* One unit for the title's value and the scale: milliseconds from a
	 * second on read as seconds ("11.2 s" and "0…20 s", never "11.2k ms"). */
	const char *unit = cd->percent ? "%" : cd->unit;
	if (!strcmp(cd->unit, " ms") && top >= 1000) {
		scale = 1e-3;
		unit = " s";
	}
	char b[64], tb[32], extra[96] = "", sc[64];
	bool stale = false;
	cur = current_value(arg, cd, d, &stale);
	/* Rates are per second over the last second: said, since the load
	 * line's figures are over the sliding window ("(30 s)"). */
	bool rate = arg == CHART_TOK || arg == CHART_REQ || arg == CHART_ERR;
	if (!isnan(cur)) {
		wd_fmt_si(b, sizeof b, cur * scale);
		snprintf(extra, sizeof extra, "%s%s%s%s", b, cd->percent ? "%" : unit, rate ? " (1 s)" : "",
			 stale ? " stale" : "");
	} else if (arg == CHART_QUEUE || arg == CHART_KV) {
		snprintf(extra, sizeof extra, "%s", wd_dash(d));
	}
	if (arg == CHART_CONC && d->v->load->mode == LOAD_CLOSED) {
		size_t len = strlen(extra);
		snprintf(extra + len, sizeof extra - len, " / target %ld", d->v->load->concurrency);
	}
	/* The value scale: the plot runs from 0 at the bottom row to this at
	 * the top row. It is what makes the plot readable, so a long title
	 * is cut first (its value, then its name) to leave room for it. */
	wd_fmt_si(tb, sizeof tb, top * scale);
	snprintf(sc, sizeof sc, " 0%s%s%s ", d->ascii ? ".." : "\xe2\x80\xa6", tb, unit);
	int room = r->w - 1 - wd_width(sc) - 1 - 3; /* "╭─ " ... " ─" */
	char t[64];
	snprintf(t, sizeof t, "%s", cd->title);
	if (wd_width(t) + 1 + wd_width(extra) > room) {
		/* A rate cut before its "(1 s)" would be a figure without its
		 * window: it goes whole. */
		if (rate)
			extra[0] = '\0';
		wd_truncate(extra, room - wd_width(t) - 1, d->ascii);
		if (!extra[0] || wd_width(extra) < 2) {
			extra[0] = '\0';
			wd_truncate(t, room, d->ascii);
		}
	}
	/* The current value in the limit's colours, as in the latency table. */
	enum theme_role vrole = point_role(cur, &(struct threshold){limit, NULL}, THEME_R_DIM);
	int x;
	if (vrole == THEME_R_DIM || !extra[0]) {
		x = wd_title(w, r, d, t, extra[0] ? extra : NULL);
	} else {
		unsigned long bd = wd_attr(d, THEME_R_BORDER);
		x = wd_put(w, r, 0, 1, bd, " ");
		x = wd_put(w, r, 0, x, wd_attr(d, THEME_R_TITLE), t);
		x = wd_put(w, r, 0, x, bd, " ");
		x = wd_put(w, r, 0, x, wd_attr(d, vrole), extra);
		x = wd_put(w, r, 0, x, bd, " ");
	}
	if (x + 1 + wd_width(sc) <= r->w - 1)
		wd_put_right(w, r, 0, r->w - 1, dim, sc);
	if (!any) {
		wd_put(w, r, 1, 1, dim, cd->no_data ? cd->no_data : "no data in this span");
		return;
	}
	struct series_marker marks[MAX_MARKS];
	int mark_col[MAX_MARKS];
	size_t nm = span > 0 ? series_marks(d->v->series, t0, t0 + span, marks, MAX_MARKS) : 0;
	int k = 0;
	for (size_t i = 0; i < nm; i++) {
		int c = (int)((double)(marks[i].t_ns - t0) / (double)span * cols);
		if (c < 0 || c >= cols)
			continue;
		/* Same or next column: one line, the later change wins. */
		if (k > 0 && c - mark_col[k - 1] < 2) {
			marks[k - 1] = marks[i];
			continue;
		}
		marks[k] = marks[i];
		mark_col[k++] = c;
	}
	char lab[48] = "";
	if (limit > 0) {
		char lb[32];
		wd_fmt_si(lb, sizeof lb, limit * scale);
		snprintf(lab, sizeof lab, " SLO %s%s ", lb, unit);
	}
	plot(w, r, v, npts, top, d, cd->role, mark_col, k, marks, &(struct threshold){limit, lab[0] ? lab : NULL});
}
