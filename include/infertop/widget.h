#ifndef INFERTOP_WIDGET_H
#define INFERTOP_WIDGET_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "infertop/layout.h"
#include "infertop/theme.h"

/* Dashboard widgets. A frame is two passes: the caller fills a struct dash
 * (what to show: the run's view, never the engine), then each panel of
 * the layout is drawn by the widget of its kind from one const table.
 * Widgets only read: they never write stats, change load, or read the
 * clock (the frame's time is dash.now). */

struct run_view;
struct stats;
struct server_state;

/* The requests view's own state: the UI's, never the run's. */
#define REQ_UI_FILTER_MAX 48
struct req_ui {
	int list;                 /* enum reqtrack_list */
	int sort;                 /* column, -1: the list's own order */
	bool reverse;
	char filter[REQ_UI_FILTER_MAX];
	bool filtering;           /* the filter is being typed */
	uint64_t sel;             /* the selected request (its number), 0: the first row */
	bool detail;              /* Enter: the selected request alone */
};

struct dash {
	const struct run_view *v;        /* the run: read-only */
	const unsigned long *attr;        /* per theme role */
	int64_t now;
	int64_t zoom_ns;                  /* chart span; 0 = whole run */
	const char *zoom_name;
	enum ui_view view;
	bool ascii;                       /* no UTF-8 line, block or braille characters */
	const char *theme_name;
	const char *colours;              /* how many and from where, for the help */
	/* The bottom line shows, by priority: the prompt being typed, a
	 * status message, the key bar. */
	const char *prompt;
	const char *status;
	enum theme_role status_role;
	const char *done_hint;            /* shown in the header once the run is over */
	unsigned layout_flags;
	const struct req_ui *rq;          /* the requests view's state */
	int help_top;                     /* the help's first row shown (scrolled) */
};

struct widget {
	const char *name;
	void (*draw)(WINDOW *w, const struct rect *r, int arg, const struct dash *d);
	/* Drawn in a box (btop-style) when the panel has room for one: the
	 * widget then gets the rectangle inside the side borders, whose row 0
	 * is the top border (the widget's title goes there) and which ends
	 * above the bottom border. */
	bool boxed;
};

/* Indexed by enum panel_kind: panels.def's lines. */
extern const struct widget widgets[PANEL_KIND_N];

/* One whole frame into w (erased first); the caller refreshes. */
void widgets_render(WINDOW *w, const struct layout *l, const struct dash *d);
/* The flags layout_compute needs for this run (GPU, open loop). */
unsigned widgets_layout_flags(const struct run_view *v);

/* Widgets, one file each (src/ui/w_*.c), one per line of panels.def. */
#define PANEL(id, name, draw, boxed, focusable) \
	void draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d);
#include "infertop/panels.def"
/* How far the help overlay (drawn in r) can scroll: 0 when it fits. */
int w_help_max_top(const struct rect *r, const char *colours);
/* A key in the requests view: moves the selection, opens a request,
 * changes the list, sort or filter (UI state only). Returns whether the
 * key was the view's; now_ns is the time the rows are taken at. */
bool w_requests_key(struct req_ui *q, int ch, const struct run_view *v, int64_t now_ns);
/* Whether the run has figures for the sessions / cache panel: a response
 * said some of its prompt was cached (stats_cache_shown), or a session's
 * turn or session ended. */
bool w_sessions_shown(const struct stats *st);
/* Whether the replicas panel is shown: 2+ server replicas are scraped. */
bool w_replicas_shown(const struct server_state *s);
/* A chart's filled area (braille, or # and . in ASCII) in rows 1.. of r,
 * from npts values (2 per column, 1 in ASCII), 0 at the bottom, top at
 * the top row. */
void w_chart_plot(WINDOW *w, const struct rect *r, const double *v, int npts, double top, const struct dash *d,
		  enum theme_role role);
/* The histogram view's buckets: up to n upper bounds (us), log-spaced
 * over [lo, hi], strictly increasing, the last one hi. Returns how many. */
int w_hist_bounds(int64_t lo, int64_t hi, int n, int64_t *le);

/* The rectangle a boxed panel's widget draws in (see struct widget), or
 * the panel's own when it has no room for a box. Returns whether boxed. */
bool widgets_inner(const struct panel *p, struct rect *inner);

/* Drawing helpers, all clipped to the rectangle. */

/* Writes UTF-8 text at row y, column x of r; returns the column after it
 * (clipped at the right edge). */
int wd_put(WINDOW *w, const struct rect *r, int y, int x, unsigned long attr, const char *s);
int wd_printf(WINDOW *w, const struct rect *r, int y, int x, unsigned long attr, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Right-aligned so that the text ends at column x_end (exclusive). */
int wd_put_right(WINDOW *w, const struct rect *r, int y, int x_end, unsigned long attr, const char *s);
/* Fills row y of r from column x to the right edge with spaces. */
void wd_clear_row(WINDOW *w, const struct rect *r, int y, int x, unsigned long attr);
/* " Title extra " from column 1 of row 0 of r (a box's top border);
 * returns the column after it. */
int wd_title(WINDOW *w, const struct rect *r, const struct dash *d, const char *title, const char *extra);
/* n copies of one single-width character from column x of row y. */
void wd_repeat(WINDOW *w, const struct rect *r, int y, int x, int n, unsigned long attr, wchar_t ch);
/* A frame around r (its outermost rows and columns); focus draws it in
 * the title colour. */
void wd_box(WINDOW *w, const struct rect *r, const struct dash *d, bool focus);
/* The bottom border of a boxed widget whose inner rectangle is r: a row
 * of its own, for a chart's time axis. */
struct rect wd_bottom_border(const struct rect *r);
/* The nice step (1-2-5 s, 10, 20, 30 s, 1, 2, 5 ... min, h) that puts at
 * most max_ticks ticks in span_ns, and a tick's label in the step's unit
 * ("-20s", "-2m", "-1h"). */
int64_t wd_time_step(int64_t span_ns, int max_ticks);
void wd_fmt_tick(char *buf, size_t cap, int64_t t_ns, int64_t step_ns);
/* A time axis over the last span_ns in the bottom border of the boxed
 * widget whose inner rectangle is r: "-10m ... -5m ... now". */
void wd_time_axis(WINDOW *w, const struct rect *r, int64_t span_ns, const struct dash *d);
/* 1, 2 or 5 times a power of ten, at or above m (1 for m <= 0). */
double wd_nice_ceil(double m);
/* Time spans as axis labels: "30s", "10m", "1h", "2.5h". */
void wd_fmt_span(char *buf, size_t cap, int64_t ns);
/* A meter bar: frac 0..1 (NaN: empty, dim) in width columns. */
void wd_bar(WINDOW *w, const struct rect *r, int y, int x, int width, double frac, const struct dash *d);
/* Display columns of UTF-8 text. */
int wd_width(const char *s);
/* Cuts s (in place) to at most maxw columns, ending in an ellipsis ("~"
 * in ASCII mode) when something was cut. */
void wd_truncate(char *s, int maxw, bool ascii);
/* The same, cutting the middle ("http://gpu…:8000"): both ends of a URL
 * or a model name say more than its middle. cap is s's buffer size. */
void wd_truncate_mid(char *s, size_t cap, int maxw, bool ascii);

unsigned long wd_attr(const struct dash *d, enum theme_role role);
/* "–" (an en dash) or "-" in ASCII mode: the mark of an unknown value. */
const char *wd_dash(const struct dash *d);
/* The vertical separator "│" or "|". */
const char *wd_vbar(const struct dash *d);

/* Number formats that keep their width: milliseconds ("0.85", "12.3",
 * "456", "12.3s"), counts and rates ("987", "12.3k", "4.56M"), percent. */
void wd_fmt_ms(char *buf, size_t cap, double ms);
void wd_fmt_si(char *buf, size_t cap, double v);
/* Whole numbers: exact below 100000, then "123k", "4.56M". */
void wd_fmt_count(char *buf, size_t cap, uint64_t n);
void wd_fmt_elapsed(char *buf, size_t cap, int64_t ns);

#endif
