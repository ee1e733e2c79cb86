#include "config.h"

#include "infertop/layout.h"

#include <string.h>

/* Widths from which panels go side by side. */
#define WIDE_COLS 150
#define CHART_CELL_W 40

static const char *const view_names[VIEW_N] = {
	[VIEW_OVERVIEW] = "overview",
	[VIEW_LATENCY] = "latency",
	[VIEW_HIST] = "histogram",
	[VIEW_SERVER] = "server",
	[VIEW_GPU] = "GPU",
	[VIEW_ERRORS] = "errors",
	[VIEW_PLAN] = "plan",
	[VIEW_REQUESTS] = "requests",
};

static const struct {
	const char *name;
	bool focusable;
} panels[PANEL_KIND_N] = {
#define PANEL(id, name, draw, boxed, focusable) [PANEL_##id] = {name, focusable},
#include "infertop/panels.def"
};

const char *layout_view_name(enum ui_view v)
{
	return (unsigned)v < VIEW_N ? view_names[v] : "?";
}

const char *layout_panel_name(enum panel_kind k)
{
	return (unsigned)k < PANEL_KIND_N ? panels[k].name : "?";
}

int layout_latency_rows(int variant, unsigned flags)
{
	/* Top border (the title), column heads, bottom border, and a row a
	 * metric shown in the variant (client_metrics.def). */
	int n = 3;
#define CLIENT_METRIC(id, key, dash, dash_when, ...) n += LAYOUT_LATENCY_##dash_when(variant, flags);
#include "infertop/client_metrics.def"
	return n;
}

static void add(struct layout *l, enum panel_kind kind, int arg, int y, int x, int h, int w)
{
	if (h <= 0 || w <= 0 || l->n >= LAYOUT_MAX_PANELS)
		return;
	l->p[l->n++] = (struct panel){kind, arg, {y, x, h, w}};
}

/* Charts fill a rectangle in a grid of cells at least CHART_CELL_W wide,
 * in order of importance, as many as fit. */
static void chart_grid(struct layout *l, int y, int x, int h, int w, const enum chart_id *ids, int nids)
{
	if (h < LAYOUT_CHART_MIN_H || w < LAYOUT_CHART_MIN_W)
		return;
	int gc = w / CHART_CELL_W;
	if (gc < 1)
		gc = 1;
	if (gc > 3)
		gc = 3;
	int gr = h / LAYOUT_CHART_MIN_H;
	int count = nids < gc * gr ? nids : gc * gr;
	if (count <= 0)
		return;
	if (count < gc)
		gc = count;
	int nr = (count + gc - 1) / gc;
	int k = 0;
	for (int r = 0; r < nr; r++) {
		int y0 = y + h * r / nr, y1 = y + h * (r + 1) / nr;
		int inrow = count - k < gc ? count - k : gc;
		for (int c = 0; c < inrow; c++) {
			int x0 = x + w * c / inrow, x1 = x + w * (c + 1) / inrow;
			add(l, PANEL_CHART, ids[k++], y0, x0, y1 - y0, x1 - x0);
		}
	}
}

static const enum chart_id overview_charts[] = {CHART_TOK, CHART_TTFT, CHART_QUEUE, CHART_KV, CHART_ITL, CHART_CONC};
/* Without server metrics, client-side charts take the queue and KV places. */
static const enum chart_id client_charts[] = {CHART_TOK, CHART_TTFT, CHART_ITL, CHART_CONC, CHART_REQ, CHART_ERR};
static const enum chart_id latency_charts[] = {CHART_TTFT, CHART_ITL, CHART_TOK, CHART_REQ};
static const enum chart_id server_charts[] = {CHART_QUEUE, CHART_KV, CHART_CONC, CHART_TOK};
static const enum chart_id error_charts[] = {CHART_ERR, CHART_REQ};
static const enum chart_id plan_charts[] = {CHART_TOK, CHART_TTFT, CHART_CONC};
#define NIDS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void overview(struct layout *l, int top, int bottom, unsigned flags)
{
	int cols = l->cols;
	int lat_h = layout_latency_rows(PANEL_COMPACT, flags);
	int y = top;
	if (cols >= WIDE_COLS) {
		int lat_w = cols / 2 < 100 ? cols / 2 : 100;
		if (lat_w < 80)
			lat_w = 80;
		int rw = cols - lat_w;
		add(l, PANEL_LATENCY, PANEL_COMPACT, y, 0, lat_h, lat_w);
		if (flags & LAYOUT_GPU) {
			add(l, PANEL_SERVER, PANEL_COMPACT, y, lat_w, lat_h, rw / 2);
			add(l, PANEL_GPU, PANEL_COMPACT, y, lat_w + rw / 2, lat_h, rw - rw / 2);
		} else {
			add(l, PANEL_SERVER, PANEL_COMPACT, y, lat_w, lat_h, rw);
		}
		y += lat_h;
	} else {
		add(l, PANEL_LATENCY, PANEL_COMPACT, y, 0, lat_h, cols);
		y += lat_h;
		/* Boxed: two rows of figures between the borders. */
		add(l, PANEL_SERVER, PANEL_COMPACT, y, 0, 4, cols);
		y += 4;
		/* The GPU strip only where it leaves room for a row of charts. */
		if ((flags & LAYOUT_GPU) && bottom - y - 4 >= LAYOUT_CHART_MIN_H) {
			add(l, PANEL_GPU, PANEL_COMPACT, y, 0, 4, cols);
			y += 4;
		}
	}
	/* Sessions and cache figures where three rows of charts still fit
	 * below them (all six at 80 columns). */
	if ((flags & LAYOUT_SESSIONS) && bottom - y - LAYOUT_SESSIONS_H >= 3 * LAYOUT_CHART_MIN_H) {
		add(l, PANEL_SESSIONS, 0, y, 0, LAYOUT_SESSIONS_H, cols);
		y += LAYOUT_SESSIONS_H;
	}
	if (flags & LAYOUT_SERVER)
		chart_grid(l, y, 0, bottom - y, cols, overview_charts, NIDS(overview_charts));
	else
		chart_grid(l, y, 0, bottom - y, cols, client_charts, NIDS(client_charts));
}

static void latency_view(struct layout *l, int top, int bottom, unsigned flags)
{
	int h = layout_latency_rows(PANEL_DETAIL, flags);
	add(l, PANEL_LATENCY, PANEL_DETAIL, top, 0, h, l->cols);
	int y = top + h;
	if ((flags & LAYOUT_SESSIONS) && bottom - y - LAYOUT_SESSIONS_H >= LAYOUT_CHART_MIN_H) {
		add(l, PANEL_SESSIONS, 0, y, 0, LAYOUT_SESSIONS_H, l->cols);
		y += LAYOUT_SESSIONS_H;
	}
	chart_grid(l, y, 0, bottom - y, l->cols, latency_charts, NIDS(latency_charts));
}

/* TTFT, ITL and E2E distributions: side by side where each gets 60
 * columns (its title holds three percentiles), else stacked. */
static void hist_view(struct layout *l, int top, int bottom)
{
	int h = bottom - top;
	for (int i = 0; i < HIST_N; i++) {
		if (l->cols >= 180) {
			int x0 = l->cols * i / HIST_N, x1 = l->cols * (i + 1) / HIST_N;
			add(l, PANEL_HIST, i, top, x0, h, x1 - x0);
		} else {
			int y0 = top + h * i / HIST_N, y1 = top + h * (i + 1) / HIST_N;
			add(l, PANEL_HIST, i, y0, 0, y1 - y0, l->cols);
		}
	}
}

static void server_view(struct layout *l, int top, int bottom, unsigned flags)
{
	int h = 10;
	if ((flags & LAYOUT_GPU) && l->cols >= WIDE_COLS) {
		add(l, PANEL_SERVER, PANEL_DETAIL, top, 0, h, l->cols / 2);
		add(l, PANEL_GPU, PANEL_COMPACT, top, l->cols / 2, h, l->cols - l->cols / 2);
	} else {
		add(l, PANEL_SERVER, PANEL_DETAIL, top, 0, h, l->cols);
	}
	int y = top + h;
	if ((flags & LAYOUT_REPLICAS) && bottom - y - LAYOUT_REPLICAS_H >= LAYOUT_CHART_MIN_H) {
		add(l, PANEL_REPLICAS, 0, y, 0, LAYOUT_REPLICAS_H, l->cols);
		y += LAYOUT_REPLICAS_H;
	}
	chart_grid(l, y, 0, bottom - y, l->cols, server_charts, NIDS(server_charts));
}

static void errors_view(struct layout *l, int top, int bottom)
{
	int mh = bottom - top;
	int ch = mh / 3 < 8 ? mh / 3 : 8;
	if (ch < LAYOUT_CHART_MIN_H)
		ch = 0;
	add(l, PANEL_ERRORS, PANEL_DETAIL, top, 0, mh - ch, l->cols);
	chart_grid(l, bottom - ch, 0, ch, l->cols, error_charts, NIDS(error_charts));
}

/* The steps table takes what the charts leave, and at least half. */
static void plan_view(struct layout *l, int top, int bottom)
{
	int mh = bottom - top;
	int ch = mh / 2 < 10 ? mh / 2 : 10;
	if (ch < LAYOUT_CHART_MIN_H)
		ch = 0;
	add(l, PANEL_STEPS, 0, top, 0, mh - ch, l->cols);
	chart_grid(l, bottom - ch, 0, ch, l->cols, plan_charts, NIDS(plan_charts));
}

void layout_compute(int rows, int cols, enum ui_view view, unsigned flags, struct layout *out)
{
	memset(out, 0, sizeof *out);
	out->focus = -1;
	out->rows = rows;
	out->cols = cols;
	if (rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS) {
		out->too_small = true;
		add(out, PANEL_TOO_SMALL, 0, 0, 0, rows, cols);
		return;
	}
	add(out, PANEL_HEADER, 0, 0, 0, 1, cols);
	add(out, PANEL_LOAD, 0, 1, 0, 1, cols);
	add(out, PANEL_KEYBAR, 0, rows - 1, 0, 1, cols);
	int top = 2, bottom = rows - 1, eh = 0;
	if (view != VIEW_ERRORS)
		eh = rows >= 40 ? 3 : 1;
	bottom -= eh;
	switch (view) {
	case VIEW_LATENCY:
		latency_view(out, top, bottom, flags);
		break;
	case VIEW_HIST:
		hist_view(out, top, bottom);
		break;
	case VIEW_SERVER:
		server_view(out, top, bottom, flags);
		break;
	case VIEW_GPU: {
		/* The GPUs' table, then their history charts below. */
		int gh = (bottom - top) / 2 < 12 ? (bottom - top) / 2 : 12;
		add(out, PANEL_GPU, PANEL_DETAIL, top, 0, gh, cols);
		add(out, PANEL_GPU_HIST, 0, top + gh, 0, bottom - top - gh, cols);
		break;
	}
	case VIEW_ERRORS:
		errors_view(out, top, bottom);
		break;
	case VIEW_PLAN:
		plan_view(out, top, bottom);
		break;
	case VIEW_REQUESTS:
		add(out, PANEL_REQUESTS, 0, top, 0, bottom - top, cols);
		break;
	case VIEW_OVERVIEW:
	default:
		overview(out, top, bottom, flags);
		break;
	}
	/* After the view's own panels: focus starts on the first of those. */
	if (eh)
		add(out, PANEL_ERRORS, PANEL_COMPACT, bottom, 0, eh, cols);
	if (flags & LAYOUT_HELP) {
		int w = cols - 4 < 100 ? cols - 4 : 100;
		int h = rows - 2 < 48 ? rows - 2 : 48;
		add(out, PANEL_HELP, 0, (rows - h) / 2, (cols - w) / 2, h, w);
	}
}

const struct panel *layout_find(const struct layout *l, enum panel_kind kind, int arg)
{
	for (int i = 0; i < l->n; i++)
		if (l->p[i].kind == kind && (arg < 0 || l->p[i].arg == arg))
			return &l->p[i];
	return NULL;
}

bool layout_focusable(enum panel_kind k)
{
	return (unsigned)k < PANEL_KIND_N && panels[k].focusable;
}

int layout_focus_find(const struct layout *l, enum panel_kind kind, int arg)
{
	int first = -1;
	for (int i = 0; i < l->n; i++) {
		if (!layout_focusable(l->p[i].kind))
			continue;
		if (l->p[i].kind == kind && (arg < 0 || l->p[i].arg == arg))
			return i;
		if (first < 0)
			first = i;
	}
	return first;
}

int layout_focus_step(const struct layout *l, int idx, int dir)
{
	if (l->n == 0)
		return -1;
	int i = idx < 0 || idx >= l->n ? (dir > 0 ? l->n - 1 : 0) : idx;
	for (int k = 0; k < l->n; k++) {
		i = (i + (dir > 0 ? 1 : l->n - 1)) % l->n;
		if (layout_focusable(l->p[i].kind))
			return i;
	}
	return -1;
}

int layout_hit(const struct layout *l, int y, int x)
{
	int hit = -1;
	for (int i = 0; i < l->n; i++) {
		const struct rect *r = &l->p[i].r;
		if (y >= r->y && y < r->y + r->h && x >= r->x && x < r->x + r->w) {
			hit = i;
			if (l->p[i].kind == PANEL_HELP)
				return i;
		}
	}
	return hit;
}

int layout_maximise(struct layout *l, int idx)
{
	if (idx < 0 || idx >= l->n || !layout_focusable(l->p[idx].kind) || l->too_small)
		return -1;
	struct panel keep = l->p[idx];
	int n = 0, out = -1;
	for (int i = 0; i < l->n; i++) {
		struct panel p = l->p[i];
		if (i == idx) {
			/* Everything between the load line and the key bar. */
			p.r = (struct rect){2, 0, l->rows - 3, l->cols};
			p.arg = keep.arg;
			out = n;
		} else if (layout_focusable(p.kind)) {
			continue;
		}
		l->p[n++] = p;
	}
	l->n = n;
	l->focus = out;
	return out;
}
