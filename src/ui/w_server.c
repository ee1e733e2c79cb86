#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/server.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* What the server says about itself. Every figure it does not expose is a
 * dash, never a zero. */

static enum theme_role status_role(enum server_status s)
{
	switch (s) {
	case SERVER_UP:
		return THEME_R_GOOD;
	case SERVER_STALE:
	case SERVER_PENDING:
		return THEME_R_WARN;
	case SERVER_DOWN:
		return THEME_R_CRIT;
	case SERVER_OFF:
	default:
		return THEME_R_DIM;
	}
}

enum item_kind { IT_NUM, IT_PCT_BAR, IT_PCT, IT_MS };

struct item {
	const char *label;
	enum item_kind kind;
	const struct server_value *v;
};

static void value_text(char *buf, size_t cap, const struct item *it, const struct dash *d)
{
	if (!it->v || !it->v->valid || isnan(it->v->v)) {
		snprintf(buf, cap, "%s", wd_dash(d));
		return;
	}
	switch (it->kind) {
	case IT_PCT:
	case IT_PCT_BAR:
		snprintf(buf, cap, "%.0f%%", it->v->v * 100);
		break;
	case IT_MS: {
		char ms[24];
		bool own_unit = server_format_ms(it->v, ms, sizeof ms);
		snprintf(buf, cap, "%s%s", ms, own_unit ? "" : " ms");
		break;
	}
	case IT_NUM:
	default:
		wd_fmt_si(buf, cap, it->v->v);
		break;
	}
}

/* Items in a grid of cells, row by row: label, then the value right-aligned
 * in the cell (a bar before it for percentages that fill up). */
static void grid(WINDOW *w, const struct rect *r, int y0, int rows, const struct item *items, int n,
		 const struct dash *d)
{
	int cellw = 19;
	int ncols = r->w / cellw;
	if (ncols < 1)
		ncols = 1;
	/* Fewer, wider cells when there are rows to spare. */
	while (ncols > 1 && (n + ncols - 2) / (ncols - 1) <= rows)
		ncols--;
	cellw = r->w / ncols;
	if (cellw > 28)
		cellw = 28;
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	for (int i = 0; i < n; i++) {
		int row = i / ncols, col = i % ncols;
		if (row >= rows)
			break;
		int y = y0 + row, x = 1 + col * cellw, end = x + cellw - 2;
		char v[32];
		value_text(v, sizeof v, &items[i], d);
		bool known = items[i].v && items[i].v->valid;
		/* Label and value never run into each other: the unit goes
		 * first, then the label is cut. */
		char l[32];
		snprintf(l, sizeof l, "%s", items[i].label);
		int room = end - x;
		if (wd_width(l) + 1 + wd_width(v) > room && items[i].kind == IT_MS) {
			char *sp = strstr(v, " ms");
			if (sp)
				*sp = '\0';
		}
		wd_truncate(l, room - 1 - wd_width(v), d->ascii);
		wd_put(w, r, y, x, lab, l);
		int vx = end - wd_width(v);
		wd_put(w, r, y, vx, wd_attr(d, known ? THEME_R_VALUE : THEME_R_DIM), v);
		if (items[i].kind == IT_PCT_BAR) {
			int bx = x + wd_width(l) + 1, bw = vx - 1 - bx;
			if (bw > 12)
				bw = 12;
			if (bw >= 3)
				wd_bar(w, r, y, vx - 1 - bw, bw, known ? items[i].v->v : NAN, d);
		}
	}
}

static void title(WINDOW *w, const struct rect *r, const struct dash *d)
{
	const struct server_state *s = d->v->server;
	int x = wd_title(w, r, d, "Server", s && s->detected[0] ? s->detected : NULL);
	if (!s)
		return;
	unsigned long b = wd_attr(d, THEME_R_BORDER);
	x = wd_put(w, r, 0, x, wd_attr(d, status_role(s->status)), server_status_name(s->status));
	if ((s->status == SERVER_UP || s->status == SERVER_STALE) && s->last_ok_ns > 0 && d->now >= s->last_ok_ns) {
		char age[48];
		snprintf(age, sizeof age, " %.1fs ago", (double)(d->now - s->last_ok_ns) / 1e9);
		x = wd_put(w, r, 0, x, wd_attr(d, THEME_R_DIM), age);
	}
	wd_put(w, r, 0, x, b, " ");
}

/* The quantile table: each column as wide as its widest cell (bucket
 * bounds such as "0.75-1 s" or ">2560 s" are wider than a number), two
 * spaces between columns, and no cell past its column or past xmax (the
 * run aggregates' column): a cell that cannot fit is cut with a marker. */
static void latency_rows(WINDOW *w, const struct rect *r, int y, int x, int xmax, int rows, const struct dash *d)
{
	static const struct {
		enum server_latency l;
		const char *name;
	} ls[] = {{SRVL_TTFT, "TTFT"}, {SRVL_ITL, "ITL"}, {SRVL_E2E, "E2E"}, {SRVL_QUEUE, "queue"}};
	static const char *const head[3] = {"p50", "p90", "p99"};
	const struct server_state *s = d->v->server;
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	char cell[4][3][48];
	int colw[3] = {0, 0, 0};
	for (int i = 0; i < 4; i++) {
		const struct server_value *vals[3] = {&s->p50[ls[i].l], &s->p90[ls[i].l], &s->p99[ls[i].l]};
		for (int k = 0; k < 3; k++) {
			if (vals[k]->valid)
				server_format_ms(vals[k], cell[i][k], sizeof cell[i][k]);
			else
				snprintf(cell[i][k], sizeof cell[i][k], "%s", wd_dash(d));
		}
	}
	for (int k = 0; k < 3; k++) {
		colw[k] = wd_width(head[k]);
		for (int i = 0; i < 4; i++)
			if (wd_width(cell[i][k]) > colw[k])
				colw[k] = wd_width(cell[i][k]);
	}
	/* Right edges of the three columns, after the row names. */
	int xend[3], at = x + wd_width("server ms");
	for (int k = 0; k < 3; k++) {
		at += 2 + colw[k];
		if (at > xmax)
			at = xmax;
		xend[k] = at;
	}
	char name[16];
	snprintf(name, sizeof name, "%s", "server ms");
	wd_truncate(name, xmax - x, d->ascii);
	wd_put(w, r, y, x, lab, name);
	for (int k = 0; k < 3; k++) {
		int room = xend[k] - (k ? xend[k - 1] : x + wd_width("server ms")) - 1;
		char h[8];
		snprintf(h, sizeof h, "%s", head[k]);
		wd_truncate(h, room, d->ascii);
		wd_put_right(w, r, y, xend[k], lab, h);
	}
	for (int i = 0; i < 4 && i + 1 < rows; i++) {
		snprintf(name, sizeof name, "%s", ls[i].name);
		wd_truncate(name, xmax - x, d->ascii);
		wd_put(w, r, y + 1 + i, x, lab, name);
		int prev = x + wd_width(ls[i].name);
		for (int k = 0; k < 3; k++) {
			const struct server_value *v = k == 0 ? &s->p50[ls[i].l] : k == 1 ? &s->p90[ls[i].l] : &s->p99[ls[i].l];
			/* One space at least from whatever is to the left. */
			int left = k ? xend[k - 1] : prev;
			wd_truncate(cell[i][k], xend[k] - left - 1, d->ascii);
			wd_put_right(w, r, y + 1 + i, xend[k], wd_attr(d, v->valid ? THEME_R_VALUE : THEME_R_DIM),
				     cell[i][k]);
		}
	}
}

/* Whole-run range of the gauges that matter when tuning: how full the
 * queue and the KV cache got. */
static void run_aggregates(WINDOW *w, const struct rect *r, int y, int x, int rows, const struct dash *d)
{
	static const struct {
		enum server_gauge g;
		const char *name;
		bool pct;
	} gs[] = {{SRV_WAITING, "waiting", false}, {SRV_RUNNING, "running", false}, {SRV_KV_USAGE, "KV usage", true}};
	const struct server_state *s = d->v->server;
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	wd_put(w, r, y, x, lab, "over the run");
	wd_put_right(w, r, y, x + 22, lab, "mean");
	wd_put_right(w, r, y, x + 30, lab, "max");
	for (int i = 0; i < 3 && i + 1 < rows; i++) {
		const struct server_agg *a = &s->agg[gs[i].g];
		wd_put(w, r, y + 1 + i, x, lab, gs[i].name);
		char mean[16], max[16];
		if (a->n == 0) {
			snprintf(mean, sizeof mean, "%s", wd_dash(d));
			snprintf(max, sizeof max, "%s", wd_dash(d));
		} else if (gs[i].pct) {
			snprintf(mean, sizeof mean, "%.0f%%", 100 * a->sum / (double)a->n);
			snprintf(max, sizeof max, "%.0f%%", 100 * a->max);
		} else {
			wd_fmt_si(mean, sizeof mean, a->sum / (double)a->n);
			wd_fmt_si(max, sizeof max, a->max);
		}
		unsigned long va = wd_attr(d, a->n ? THEME_R_VALUE : THEME_R_DIM);
		wd_put_right(w, r, y + 1 + i, x + 22, va, mean);
		wd_put_right(w, r, y + 1 + i, x + 30, va, max);
	}
	for (int i = 0; i < s->nwatch && 4 + i < rows; i++) {
		char v[32];
		if (s->watch[i].value.valid)
			wd_fmt_si(v, sizeof v, s->watch[i].value.v);
		else
			snprintf(v, sizeof v, "%s", wd_dash(d));
		int ex = wd_put(w, r, y + 4 + i, x, lab, s->watch[i].expr);
		wd_put(w, r, y + 4 + i, ex + 1, wd_attr(d, THEME_R_VALUE), v);
	}
}

void w_server_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	const struct server_state *s = d->v->server;
	title(w, r, d);
	if (!s || s->status == SERVER_OFF) {
		wd_put(w, r, 1, 1, wd_attr(d, THEME_R_DIM), "no server metrics (scraping off, or not available)");
		return;
	}
	if (s->status == SERVER_PENDING && s->scrapes == 0) {
		wd_printf(w, r, 1, 1, wd_attr(d, THEME_R_DIM), "waiting for the first scrape of %s", s->url);
		return;
	}
	const struct item items[] = {
		{"running", IT_NUM, &s->gauge[SRV_RUNNING]},
		{"waiting", IT_NUM, &s->gauge[SRV_WAITING]},
		{"KV", IT_PCT_BAR, &s->gauge[SRV_KV_USAGE]},
		{"preempt/s", IT_NUM, &s->gauge[SRV_PREEMPT_RATE]},
		{"prefix hit", IT_PCT, &s->gauge[SRV_PREFIX_HIT]},
		/* Beside the client's own TTFT and ITL: said to be the server's. */
		{"srv TTFT p99", IT_MS, &s->p99[SRVL_TTFT]},
		{"srv ITL p99", IT_MS, &s->p99[SRVL_ITL]},
		{"gen tok/s", IT_NUM, &s->gauge[SRV_GEN_TOK_S]},
	};
	int n = (int)(sizeof items / sizeof items[0]);
	if (arg != PANEL_DETAIL) {
		grid(w, r, 1, r->h - 1, items, n, d);
		return;
	}
	grid(w, r, 1, 2, items, n, d);
	int y = 3, rows = r->h - y - (s->last_error[0] ? 1 : 0);
	int agx = r->w >= 120 ? r->w / 2 : 42;
	latency_rows(w, r, y, 1, r->w >= 80 ? agx - 2 : r->w - 1, rows, d);
	if (r->w >= 80)
		run_aggregates(w, r, y, agx, rows, d);
	if (s->last_error[0] && s->status != SERVER_UP)
		wd_printf(w, r, r->h - 1, 1, wd_attr(d, THEME_R_CRIT), "last error: %s", s->last_error);
}
