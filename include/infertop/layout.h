#ifndef INFERTOP_LAYOUT_H
#define INFERTOP_LAYOUT_H

#include <stdbool.h>

/* Where each panel of the dashboard goes: a pure function of the terminal
 * size, the view and a few flags, so every size can be unit-tested for
 * overlaps and panels off screen. */

#define LAYOUT_MIN_ROWS 24
#define LAYOUT_MIN_COLS 80

enum ui_view { VIEW_OVERVIEW, VIEW_LATENCY, VIEW_HIST, VIEW_SERVER, VIEW_GPU, VIEW_ERRORS, VIEW_PLAN,
	       VIEW_REQUESTS, VIEW_N };
/* The views v and Tab step through; the requests view has a key of its own
 * (R) and goes back to the view it was opened from. */
#define VIEW_CYCLE_N VIEW_REQUESTS

/* One per line of panels.def. */
enum panel_kind {
#define PANEL(id, name, draw, boxed, focusable) PANEL_##id,
#include "infertop/panels.def"
	PANEL_KIND_N
};

/* Which chart a PANEL_CHART shows (its arg). */
enum chart_id { CHART_TOK, CHART_TTFT, CHART_ITL, CHART_QUEUE, CHART_KV, CHART_CONC, CHART_REQ, CHART_ERR, CHART_N };

/* Which distribution a PANEL_HIST shows (its arg). */
enum hist_id { HIST_TTFT, HIST_ITL, HIST_E2E, HIST_N };

/* Panel variants (arg of non-chart panels). */
#define PANEL_COMPACT 0
#define PANEL_DETAIL 1

/* Flags. */
#define LAYOUT_GPU 1u      /* a GPU metrics URL is set */
#define LAYOUT_QUEUE 2u    /* open loop: the latency table has a queue row */
#define LAYOUT_HELP 4u     /* the help overlay is open */
#define LAYOUT_SERVER 8u   /* server metrics are scraped: queue and KV charts */
#define LAYOUT_SESSIONS 16u /* the run has prefix-cache reports or sessions */
#define LAYOUT_REPLICAS 32u /* 2+ server replicas are scraped */
#define LAYOUT_NFLAGS 64u  /* all combinations of the above */

/* The replicas panel: its box, a header, six replicas, the imbalance. */
#define LAYOUT_REPLICAS_H 10

/* The sessions / cache panel: its box, five rows of figures. */
#define LAYOUT_SESSIONS_H 8

struct rect {
	int y, x, h, w;
};

struct panel {
	enum panel_kind kind;
	int arg;
	struct rect r;
};

#define LAYOUT_MAX_PANELS 24

struct layout {
	int rows, cols;
	bool too_small;
	int n;
	struct panel p[LAYOUT_MAX_PANELS];
	int focus;        /* index of the focused panel, -1: none */
};

/* Smallest chart cell: its box's top border (the title), two plot rows,
 * and the bottom border (the time axis). */
#define LAYOUT_CHART_MIN_H 4
#define LAYOUT_CHART_MIN_W 24

void layout_compute(int rows, int cols, enum ui_view view, unsigned flags, struct layout *out);

/* The first panel of a kind (and arg, for charts; -1 = any), or NULL. */
const struct panel *layout_find(const struct layout *l, enum panel_kind kind, int arg);

/* Panels the user can focus, maximise and click: the boxed ones below
 * the header (not the bars, the help overlay or the too-small notice). */
bool layout_focusable(enum panel_kind k);
/* The index of the panel of this kind and arg (-1: any), else the first
 * focusable one; -1 when there is none. */
int layout_focus_find(const struct layout *l, enum panel_kind kind, int arg);
/* The focusable panel after (dir > 0) or before idx, wrapping round. */
int layout_focus_step(const struct layout *l, int idx, int dir);
/* The panel under a cell (the help overlay wins), or -1. */
int layout_hit(const struct layout *l, int y, int x);
/* Panel idx alone over everything between the load line and the key bar
 * (the help overlay stays). Returns its new index, -1 if idx is not
 * focusable; l is unchanged then. */
int layout_maximise(struct layout *l, int idx);

/* Whether a client metric has a row in the latency table, by its dash_when
 * in client_metrics.def: both variants, the compact one in open loop only,
 * the detail only. */
#define LAYOUT_LATENCY_ALL(variant, flags) true
#define LAYOUT_LATENCY_OPEN(variant, flags) ((variant) == PANEL_DETAIL || ((flags) & LAYOUT_QUEUE))
#define LAYOUT_LATENCY_DETAIL(variant, flags) ((variant) == PANEL_DETAIL)

/* Rows the latency table needs in a variant. */
int layout_latency_rows(int variant, unsigned flags);

const char *layout_view_name(enum ui_view v);
const char *layout_panel_name(enum panel_kind k);

#endif
