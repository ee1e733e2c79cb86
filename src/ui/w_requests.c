#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/keys.h"
#include "infertop/reqtrack.h"
#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* The requests view, k9s-style: one table of live objects (the requests in
 * flight, or a kept list of finished ones), sortable by column, filtered
 * with /, and Enter drills into one request: its timeline and its chunk
 * gaps as a strip chart. Rows are made afresh each frame from the run's
 * view (the live list is read in place); what is selected, the sort and
 * the filter are the UI's (struct req_ui), so drawing changes nothing. */

enum col { C_ID, C_MODEL, C_STATUS, C_TTFT, C_E2E, C_IN, C_OUT, C_GAP, C_ERROR, C_N };
/* The columns o steps through (the error text is not sorted on). */
#define C_SORTABLE C_ERROR

static const struct {
	const char *head;
	int w;              /* 0: takes what the fixed ones leave */
	bool right;
	bool slow_first;    /* sorted descending by default: slowest first */
} cols[C_N] = {
	[C_ID] = {"#", 7, true, false},
	[C_MODEL] = {"MODEL", 0, false, false},
	[C_STATUS] = {"STATUS", 9, false, false},
	[C_TTFT] = {"TTFT ms", 8, true, true},
	[C_E2E] = {"E2E ms", 8, true, true},
	[C_IN] = {"IN", 6, true, true},
	[C_OUT] = {"OUT", 6, true, true},
	[C_GAP] = {"GAP ms", 8, true, true},
	[C_ERROR] = {"ERROR", 0, false, false},
};

static const struct {
	const char *name;
	enum col order;     /* the list's own order */
	bool desc;
} lists[RT_LIST_N] = {
	[RT_INFLIGHT] = {"in flight", C_ID, false},
	[RT_SLOW_TTFT] = {"slow TTFT", C_TTFT, true},
	[RT_SLOW_E2E] = {"slow E2E", C_E2E, true},
	[RT_SLOW_ITL] = {"worst gap", C_GAP, true},
	[RT_RECENT] = {"recent", C_ID, true},
};

struct row {
	uint64_t seq;
	const char *model;
	enum reqtrack_phase phase;
	int http;
	enum err_kind err;
	const char *msg;
	int64_t ttft, e2e, in, out;
	uint32_t gap;
	bool gone;          /* selected, finished since: now in the recent list */
};

static void row_from(struct row *w, const struct reqtrack_rec *rec, const char *model, const char *msg)
{
	*w = (struct row){rec->seq, model, rec->phase, rec->http, rec->err, msg,
			  rec->ttft_ns, rec->e2e_ns, rec->tokens_in, rec->tokens_out, rec->worst_gap_us, false};
}

static const char *c_name(int c)
{
	static const char *const names[C_N] = {"number", "model", "status", "TTFT", "E2E", "tokens in",
					       "tokens out", "worst gap", "error"};
	return c >= 0 && c < C_N ? names[c] : "?";
}

static int sort_col(const struct req_ui *q, bool *desc)
{
	int l = q->list >= 0 && q->list < RT_LIST_N ? q->list : RT_INFLIGHT;
	int c = q->sort >= 0 && q->sort < C_SORTABLE ? q->sort : (int)lists[l].order;
	bool dsc = q->sort >= 0 && q->sort < C_SORTABLE ? cols[c].slow_first : lists[l].desc;
	*desc = q->reverse ? !dsc : dsc;
	return c;
}

/* qsort has no context argument: the column and direction of the sort in
 * progress (drawing is single-threaded, on the loop). */
static int cmp_col;
static bool cmp_desc;

static int cmp_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int c = 0;
	switch (cmp_col) {
	case C_MODEL:
		c = strcmp(a->model, b->model);
		break;
	case C_STATUS:
		c = strcmp(reqtrack_phase_name(a->phase), reqtrack_phase_name(b->phase));
		break;
	case C_TTFT:
		c = cmp_i64(a->ttft, b->ttft);
		break;
	case C_E2E:
		c = cmp_i64(a->e2e, b->e2e);
		break;
	case C_IN:
		c = cmp_i64(a->in, b->in);
		break;
	case C_OUT:
		c = cmp_i64(a->out, b->out);
		break;
	case C_GAP:
		c = cmp_i64(a->gap, b->gap);
		break;
	default:
		break;
	}
	if (c == 0)
		c = cmp_i64((int64_t)a->seq, (int64_t)b->seq);
	return cmp_desc ? -c : c;
}

/* The rows of the current list that pass the filter, sorted; *total is
 * the list's length before the filter. The caller frees. */
static struct row *rows_make(const struct req_ui *q, const struct reqtrack *t, int64_t now, size_t *n, size_t *total)
{
	*n = *total = 0;
	if (!t)
		return NULL;
	size_t cap = 0;
	if (q->list == RT_INFLIGHT)
		for (const struct request *r = reqtrack_live_first(t); r; r = r->next)
			cap++;
	else
		cap = reqtrack_count(t, (enum reqtrack_list)q->list);
	/* The selected request keeps its row when it finishes (k9s follows
	 * the selected object too): Enter then opens the request the cursor
	 * was on, not whichever slid under it. It goes when the cursor moves. */
	const struct reqtrack_rec *gone = NULL;
	if (q->list == RT_INFLIGHT && q->sel && !reqtrack_live_find(t, q->sel))
		gone = reqtrack_find(t, q->sel);
	if (gone)
		cap++;
	if (cap == 0)
		return NULL;
	struct row *rows = malloc(cap * sizeof *rows);
	if (!rows)
		return NULL;
	struct reqtrack_rec tmp;
	if (q->list == RT_INFLIGHT) {
		for (const struct request *r = reqtrack_live_first(t); r && *n < cap; r = r->next) {
			reqtrack_rec_live(r, now, false, &tmp);
			(*total)++;
			if (reqtrack_match(&tmp, q->filter))
				row_from(&rows[(*n)++], &tmp, r->model ? r->model : "", "");
		}
		if (gone && *n < cap) {
			row_from(&rows[*n], gone, gone->model, gone->msg);
			rows[(*n)++].gone = true;
		}
	} else {
		for (size_t i = 0; i < cap; i++) {
			const struct reqtrack_rec *rec = reqtrack_get(t, (enum reqtrack_list)q->list, i);
			(*total)++;
			if (reqtrack_match(rec, q->filter))
				row_from(&rows[(*n)++], rec, rec->model, rec->msg);
		}
	}
	cmp_col = sort_col(q, &cmp_desc);
	qsort(rows, *n, sizeof *rows, row_cmp);
	return rows;
}

static size_t sel_index(const struct req_ui *q, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].seq == q->sel)
			return i;
	return 0;
}

/* Column x positions for a width: the fixed columns first, the IN column
 * only where there is room, the model and the error share the rest. */
static void col_layout(int width, int *x, int *w)
{
	int fixed = 0;
	for (int c = 0; c < C_N; c++) {
		w[c] = cols[c].w;
		if (c == C_IN && width < 100)
			w[c] = 0;
		fixed += w[c] ? w[c] + 1 : 0;
	}
	int rest = width - 1 - fixed - 2;
	int model = rest / 2 < 8 ? 8 : rest / 2 > 28 ? 28 : rest / 2;
	w[C_MODEL] = model;
	w[C_ERROR] = rest - model - 1 > 0 ? rest - model - 1 : 0;
	int pos = 1;
	for (int c = 0; c < C_N; c++) {
		x[c] = pos;
		if (w[c])
			pos += w[c] + 1;
	}
}

static void fmt_ns(char *b, size_t cap, int64_t ns)
{
	if (ns < 0)
		snprintf(b, cap, "-");
	else
		wd_fmt_ms(b, cap, (double)ns / 1e6);
}

static void cell(WINDOW *w, const struct rect *r, int y, int x, int width, bool right, unsigned long a,
		 const char *text, bool ascii)
{
	if (width <= 0)
		return;
	char s[STATS_MSG_MAX + 96];
	snprintf(s, sizeof s, "%s", text);
	wd_truncate(s, width, ascii);
	if (right)
		wd_put_right(w, r, y, x + width, a, s);
	else
		wd_put(w, r, y, x, a, s);
}

static void draw_row(WINDOW *w, const struct rect *r, int y, const struct row *rw, const int *x, const int *cw,
		     bool selected, const struct dash *d)
{
	unsigned long sel = selected ? A_REVERSE : 0;
	unsigned long val = wd_attr(d, THEME_R_VALUE) | sel, nor = wd_attr(d, THEME_R_NORMAL) | sel;
	unsigned long st = rw->phase == RT_FAILED ? wd_attr(d, THEME_R_CRIT) : rw->phase == RT_OK ? wd_attr(d, THEME_R_GOOD)
							       : wd_attr(d, THEME_R_LABEL);
	st |= sel;
	if (selected)
		wd_clear_row(w, r, y, 0, nor);
	char b[STATS_MSG_MAX + 64];
	snprintf(b, sizeof b, "%llu", (unsigned long long)rw->seq);
	cell(w, r, y, x[C_ID], cw[C_ID], true, nor, b, d->ascii);
	cell(w, r, y, x[C_MODEL], cw[C_MODEL], false, nor, rw->model, d->ascii);
	cell(w, r, y, x[C_STATUS], cw[C_STATUS], false, st, reqtrack_phase_name(rw->phase), d->ascii);
	fmt_ns(b, sizeof b, rw->ttft);
	cell(w, r, y, x[C_TTFT], cw[C_TTFT], true, val, b, d->ascii);
	fmt_ns(b, sizeof b, rw->e2e);
	cell(w, r, y, x[C_E2E], cw[C_E2E], true, val, b, d->ascii);
	snprintf(b, sizeof b, "%lld", (long long)rw->in);
	cell(w, r, y, x[C_IN], cw[C_IN], true, nor, b, d->ascii);
	snprintf(b, sizeof b, "%lld", (long long)rw->out);
	cell(w, r, y, x[C_OUT], cw[C_OUT], true, nor, b, d->ascii);
	if (rw->gap)
		wd_fmt_ms(b, sizeof b, rw->gap / 1e3);
	else
		snprintf(b, sizeof b, "-");
	cell(w, r, y, x[C_GAP], cw[C_GAP], true, val, b, d->ascii);
	/* A finished row still listed in flight (selected) says so first. */
	const char *pre = rw->gone ? "finished, now in recent" : "";
	if (rw->phase == RT_FAILED)
		snprintf(b, sizeof b, "%s%s%s: %s", pre, *pre ? ": " : "", stats_err_name(rw->err),
			 rw->msg && *rw->msg ? rw->msg : "-");
	else if (rw->phase == RT_INCOMPLETE)
		snprintf(b, sizeof b, "%s%scut by the run's end (not a failure)", pre, *pre ? ": " : "");
	else
		snprintf(b, sizeof b, "%s", pre);
	cell(w, r, y, x[C_ERROR], cw[C_ERROR], false, rw->phase == RT_FAILED ? st : nor, b, d->ascii);
}

/* Row 0 (the top border): the lists as tabs, the current one lit. */
static void draw_tabs(WINDOW *w, const struct rect *r, const struct req_ui *q, const struct reqtrack *t,
		      const struct dash *d)
{
	/* At 80 columns the tabs alone fill the border. */
	int x = r->w >= 100 ? wd_title(w, r, d, "Requests", NULL) : 1;
	for (int l = 0; l < RT_LIST_N; l++) {
		char b[48];
		size_t n = 0;
		if (l == RT_INFLIGHT)
			for (const struct request *rq = reqtrack_live_first(t); rq; rq = rq->next)
				n++;
		else
			n = reqtrack_count(t, (enum reqtrack_list)l);
		snprintf(b, sizeof b, " %s %zu ", lists[l].name, n);
		unsigned long a = l == q->list ? wd_attr(d, THEME_R_TITLE) | A_REVERSE : wd_attr(d, THEME_R_DIM);
		x = wd_put(w, r, 0, x, a, b) + 1;
	}
}

static void draw_table(WINDOW *w, const struct rect *r, const struct req_ui *q, const struct dash *d)
{
	const struct reqtrack *t = d->v->requests;
	draw_tabs(w, r, q, t, d);
	size_t n, total;
	struct row *rows = rows_make(q, t, d->now, &n, &total);
	int x[C_N], cw[C_N];
	col_layout(r->w, x, cw);
	bool desc;
	int sc = sort_col(q, &desc);
	unsigned long lab = wd_attr(d, THEME_R_LABEL), dim = wd_attr(d, THEME_R_DIM);
	for (int c = 0; c < C_N; c++) {
		char h[32];
		const char *arrow = c != sc ? "" : d->ascii ? (desc ? "v" : "^") : (desc ? "\xe2\x96\xbc" : "\xe2\x96\xb2");
		if (c == C_E2E && q->list == RT_INFLIGHT)
			snprintf(h, sizeof h, "%sAGE ms", arrow);
		else if (cols[c].right)
			snprintf(h, sizeof h, "%s%s", arrow, cols[c].head);
		else
			snprintf(h, sizeof h, "%s%s", cols[c].head, arrow);
		cell(w, r, 1, x[c], cw[c], cols[c].right, c == sc ? wd_attr(d, THEME_R_TITLE) : lab, h, d->ascii);
	}
	int body = r->h - 3;
	size_t si = sel_index(q, rows, n);
	/* The selection stays in sight: the page scrolls under it. */
	size_t first = body > 0 && si >= (size_t)body ? si - (size_t)body + 1 : 0;
	for (int i = 0; body > 0 && i < body && first + (size_t)i < n; i++)
		draw_row(w, r, 2 + i, &rows[first + (size_t)i], x, cw, first + (size_t)i == si, d);
	if (n == 0)
		wd_put(w, r, 2, 1, dim,
		       total ? "no request matches the filter"
			     : q->list == RT_INFLIGHT ? "no request in flight" : "no finished request kept yet");
	/* The selected finished row is not one of the list's: not counted. */
	size_t gone = 0;
	for (size_t i = 0; i < n; i++)
		gone += rows[i].gone;
	char foot[256];
	int k = snprintf(foot, sizeof foot, "%zu of %zu %s%s, sorted by %s %s", n - gone, total, lists[q->list].name,
			 gone ? " (+1 finished, selected)" : "", c_name(sc), desc ? "desc" : "asc");
	if (q->filter[0] && k > 0 && (size_t)k < sizeof foot)
		k += snprintf(foot + k, sizeof foot - (size_t)k, ", filter \"%s\"", q->filter);
	const char *hint = "  l list  o/O sort  / filter  Enter open";
	if (k > 0 && (size_t)k < sizeof foot && k + wd_width(hint) < r->w - 1)
		snprintf(foot + k, sizeof foot - (size_t)k, "%s", hint);
	wd_truncate(foot, r->w - 2, d->ascii);
	wd_put(w, r, r->h - 1, 1, dim, foot);
	free(rows);
}

/* Send, first byte, first token and end (or now) on one line scaled to
 * the request's length: waiting dotted, prefill thin, streaming thick. */
static void draw_timeline(WINDOW *w, const struct rect *r, int y, const struct reqtrack_rec *rec, bool live,
			  const struct dash *d)
{
	int width = r->w - 2;
	int64_t end = rec->e2e_ns > 0 ? rec->e2e_ns : 0;
	if (width < 10 || end <= 0)
		return;
	int64_t b = rec->ttfb_ns >= 0 ? rec->ttfb_ns : end, t = rec->ttft_ns >= 0 ? rec->ttft_ns : end;
	int xb = (int)((double)b / (double)end * (width - 1)), xt = (int)((double)t / (double)end * (width - 1));
	unsigned long dim = wd_attr(d, THEME_R_DIM), pre = wd_attr(d, THEME_R_CHART_TTFT),
		      str = wd_attr(d, THEME_R_CHART_ITL), mk = wd_attr(d, THEME_R_MARKER);
	for (int i = 0; i < width; i++) {
		const char *ch;
		unsigned long a;
		if (i < xb) {
			ch = d->ascii ? "." : "\xc2\xb7";
			a = dim;
		} else if (i < xt) {
			ch = d->ascii ? "-" : "\xe2\x94\x80";
			a = pre;
		} else {
			ch = d->ascii ? "=" : "\xe2\x94\x81";
			a = str;
		}
		wd_put(w, r, y, 1 + i, a, ch);
	}
	wd_put(w, r, y, 1, mk, "S");
	if (rec->ttfb_ns >= 0)
		wd_put(w, r, y, 1 + xb, mk, "B");
	if (rec->ttft_ns >= 0)
		wd_put(w, r, y, 1 + xt, mk, "T");
	wd_put(w, r, y, width, mk, live ? ">" : "E");
}

static void draw_detail(WINDOW *w, const struct rect *r, const struct req_ui *q, const struct dash *d)
{
	const struct reqtrack *t = d->v->requests;
	unsigned long lab = wd_attr(d, THEME_R_LABEL), val = wd_attr(d, THEME_R_VALUE), dim = wd_attr(d, THEME_R_DIM);
	struct reqtrack_rec live_rec;
	const struct reqtrack_rec *rec = NULL;
	/* In flight: read from the live request every frame (its chunks grow);
	 * once it has finished, its kept record. */
	const struct request *lr = reqtrack_live_find(t, q->sel);
	bool live = lr != NULL;
	if (lr) {
		reqtrack_rec_live(lr, d->now, true, &live_rec);
		rec = &live_rec;
	} else {
		rec = reqtrack_find(t, q->sel);
	}
	char title[96];
	snprintf(title, sizeof title, "Request %llu", (unsigned long long)q->sel);
	wd_title(w, r, d, title, live ? "in flight (Esc: back to the list)" : "(Esc: back to the list)");
	if (!rec) {
		wd_put(w, r, 1, 1, dim, "no longer kept: it finished and left the recent and slowest lists");
		return;
	}
	char b[STATS_MSG_MAX + 64], x1[32], x2[32], x3[32], x4[32];
	char model[REQTRACK_MODEL_MAX];
	snprintf(model, sizeof model, "%s", rec->model[0] ? rec->model : "-");
	wd_truncate(model, 24, d->ascii);
	int x = wd_put(w, r, 1, 1, lab, "model ");
	x = wd_put(w, r, 1, x, val, model);
	x = wd_put(w, r, 1, x + 2, lab, "");
	unsigned long sa = rec->phase == RT_FAILED ? wd_attr(d, THEME_R_CRIT) : rec->phase == RT_OK ? wd_attr(d, THEME_R_GOOD) : val;
	x = wd_put(w, r, 1, x, sa, reqtrack_phase_name(rec->phase));
	if (rec->http) {
		x = wd_put(w, r, 1, x + 2, lab, "http ");
		x = wd_printf(w, r, 1, x, val, "%d", rec->http);
	}
	x = wd_put(w, r, 1, x + 2, lab, "in ");
	x = wd_printf(w, r, 1, x, val, "%lld", (long long)rec->tokens_in);
	x = wd_put(w, r, 1, x + 2, lab, "out ");
	x = wd_printf(w, r, 1, x, val, "%lld", (long long)rec->tokens_out);
	x = wd_put(w, r, 1, x + 2, lab, "chunks ");
	wd_printf(w, r, 1, x, val, "%llu", (unsigned long long)rec->chunks);

	x = wd_put(w, r, 2, 1, lab, "error ");
	if (rec->phase == RT_FAILED)
		snprintf(b, sizeof b, "%s: %s", stats_err_name(rec->err), rec->msg[0] ? rec->msg : "-");
	else if (rec->phase == RT_INCOMPLETE)
		snprintf(b, sizeof b, "none: cut by the run's end, %llu chunks in (incomplete, not failed)",
			 (unsigned long long)rec->chunks);
	else
		snprintf(b, sizeof b, "none");
	wd_truncate(b, r->w - x - 1, d->ascii);
	wd_put(w, r, 2, x, rec->phase == RT_FAILED ? wd_attr(d, THEME_R_CRIT) : dim, b);

	fmt_ns(x1, sizeof x1, rec->ttfb_ns);
	fmt_ns(x2, sizeof x2, rec->ttft_ns);
	fmt_ns(x3, sizeof x3, rec->e2e_ns);
	if (rec->worst_gap_us)
		wd_fmt_ms(x4, sizeof x4, rec->worst_gap_us / 1e3);
	else
		snprintf(x4, sizeof x4, "-");
	x = wd_put(w, r, 3, 1, lab, "ms from S send: B first byte ");
	x = wd_put(w, r, 3, x, val, x1);
	x = wd_put(w, r, 3, x, lab, "  T first token ");
	x = wd_put(w, r, 3, x, val, x2);
	x = wd_put(w, r, 3, x, lab, live ? "  > now " : "  E end ");
	wd_put(w, r, 3, x, val, x3);
	draw_timeline(w, r, 4, rec, live, d);

	/* The strip chart: one column per chunk gap, the newest on the right. */
	struct rect cr = {r->y + 5, r->x + 1, r->h - 5, r->w - 2};
	if (cr.h < 2 || cr.w < 8)
		return;
	int ncols = cr.w < REQTRACK_GAPS ? cr.w : REQTRACK_GAPS;
	int shown = (int)rec->ngaps < ncols ? (int)rec->ngaps : ncols;
	double v[2 * REQTRACK_GAPS];
	int per = d->ascii ? 1 : 2;
	double top = 0;
	for (int i = 0; i < per * ncols; i++)
		v[i] = NAN;
	for (int i = 0; i < shown; i++) {
		double ms = rec->gaps_us[rec->ngaps - (uint32_t)shown + (uint32_t)i] / 1e3;
		for (int k = 0; k < per; k++)
			v[per * (ncols - shown + i) + k] = ms;
		if (ms > top)
			top = ms;
	}
	top = wd_nice_ceil(top);
	snprintf(b, sizeof b, "chunk gaps ms, the last %d, worst %s; scale 0%s%g", shown, x4,
		 d->ascii ? ".." : "\xe2\x80\xa6", top);
	wd_put(w, &cr, 0, 0, lab, b);
	if (shown == 0) {
		wd_put(w, &cr, 1, 0, dim, "no gap yet (fewer than two chunks)");
		return;
	}
	cr.w = ncols;
	w_chart_plot(w, &cr, v, per * ncols, top, d, THEME_R_CHART_ITL);
}

void w_requests_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	static const struct req_ui none = {.sort = -1};
	const struct req_ui *q = d->rq ? d->rq : &none;
	if (!d->v->requests) {
		wd_title(w, r, d, "Requests", NULL);
		wd_put(w, r, 1, 1, wd_attr(d, THEME_R_DIM), "no request tracking in this run");
		return;
	}
	if (q->detail)
		draw_detail(w, r, q, d);
	else
		draw_table(w, r, q, d);
}

static bool is_enter(int ch)
{
	return ch == '\n' || ch == '\r' || ch == KEY_ENTER;
}

static void filter_key(struct req_ui *q, int ch)
{
	size_t n = strlen(q->filter);
	if (ch == 27) {
		q->filter[0] = '\0';
		q->filtering = false;
	} else if (is_enter(ch)) {
		q->filtering = false;
	} else if (ch == 127 || ch == 8 || ch == KEY_BACKSPACE) {
		if (n)
			q->filter[n - 1] = '\0';
	} else if (ch >= 32 && ch < 127 && n + 1 < sizeof q->filter) {
		q->filter[n] = (char)ch;
		q->filter[n + 1] = '\0';
	}
}

bool w_requests_key(struct req_ui *q, int ch, const struct run_view *v, int64_t now_ns)
{
	if (q->filtering) {
		filter_key(q, ch);
		return true;
	}
	if (ch == 27) {
		if (q->detail)
			q->detail = false;
		else if (q->filter[0])
			q->filter[0] = '\0';
		else
			return false;
		return true;
	}
	int dir = 0;
	enum key_action a = keys_lookup(ch);
	if (a == KEY_ACT_FOCUS_NEXT)
		dir = 1;
	else if (a == KEY_ACT_FOCUS_PREV)
		dir = -1;
	bool enter = is_enter(ch);
	switch (a) {
	case KEY_ACT_REQ_LIST:
		q->list = (q->list + 1) % RT_LIST_N;
		q->sort = -1;
		q->reverse = false;
		q->detail = false;
		return true;
	case KEY_ACT_REQ_SORT: {
		bool desc;
		q->sort = (sort_col(q, &desc) + 1) % C_SORTABLE;
		q->reverse = false;
		return true;
	}
	case KEY_ACT_REQ_SORT_REV:
		q->reverse = !q->reverse;
		return true;
	case KEY_ACT_REQ_FILTER:
		q->filtering = true;
		q->detail = false;
		return true;
	default:
		break;
	}
	if (!dir && !enter)
		return false;
	if (q->detail)
		return enter || dir; /* the list's keys wait for Esc */
	size_t n, total;
	struct row *rows = rows_make(q, v->requests, now_ns, &n, &total);
	if (n > 0) {
		size_t i = sel_index(q, rows, n);
		if (dir > 0 && i + 1 < n)
			i++;
		else if (dir < 0 && i > 0)
			i--;
		q->sel = rows[i].seq;
		if (enter)
			q->detail = true;
	}
	free(rows);
	return true;
}
