#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/plan.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* The plan's steps as a table that grows while a sweep, matrix or staged
 * run goes on: ended steps fixed, the open one last, marked and live. */

struct col {
	const char *head;
	int width;   /* right edge offset from the previous column */
};

/* Headings are words and the table fits 118 columns (a box at 120):
 * narrower terminals drop whole columns from the right, never cut one. */
static const struct col cols[] = {
	{"#", 3}, {"step", 0}, {"seconds", 8}, {"done", 7}, {"failed", 7}, {"req/s", 7},
	{"out tok/s", 10}, {"in flight", 10}, {"TTFT p50", 9}, {"TTFT p99", 9}, {"ITL p50", 8},
	{"E2E p50", 8}, {"goodput", 8},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
#define LABEL_W 15

/* Column right edges; the step label is left-aligned in LABEL_W. */
static int col_end(int c)
{
	int x = 1;
	for (int i = 0; i <= c; i++)
		x += i == 1 ? LABEL_W + 1 : cols[i].width;
	return x;
}

static void row(WINDOW *w, const struct rect *r, int y, const struct plan_step_result *s, bool live,
		bool slo, const struct dash *d)
{
	unsigned long val = wd_attr(d, live ? THEME_R_WARN : THEME_R_VALUE);
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	char b[32], label[PLAN_LABEL_MAX + 4];
	snprintf(b, sizeof b, "%d", s->index + 1);
	wd_put_right(w, r, y, col_end(0), lab, b);
	snprintf(label, sizeof label, "%s%s", s->label, live ? " *" : "");
	wd_truncate(label, LABEL_W, d->ascii);
	wd_put(w, r, y, col_end(0) + 1, val, label);
	double v[] = {s->duration_s,
		      (double)s->completed,
		      (double)s->failed,
		      s->request_throughput,
		      s->output_throughput,
		      s->mean_concurrency,
		      s->ttft.p50_ms,
		      s->ttft.p99_ms,
		      s->itl.p50_ms,
		      s->e2e.p50_ms,
		      s->request_goodput};
	for (int c = 2; c < NCOLS && col_end(c) < r->w; c++) {
		double x = v[c - 2];
		if (c == NCOLS - 1 && !slo)
			snprintf(b, sizeof b, "%s", wd_dash(d));
		else if (c == 3 || c == 4)
			wd_fmt_count(b, sizeof b, (uint64_t)x);
		else if (c >= 8 && c <= 11)
			wd_fmt_ms(b, sizeof b, x);
		else if (c == 2)
			snprintf(b, sizeof b, "%.1f", x);
		else
			wd_fmt_si(b, sizeof b, x);
		unsigned long a = (c == 4 && x > 0) ? wd_attr(d, THEME_R_CRIT) : val;
		wd_put_right(w, r, y, col_end(c), a, b);
	}
}

void w_steps_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	const struct plan *p = d->v->plan;
	const struct plan_step_result *done = NULL;
	size_t n = p ? plan_steps(p, &done) : 0;
	char status[160] = "";
	/* Once done the plan is its ended steps: the last one's live row would
	 * repeat it with the figures of a moment before its end. */
	bool finished = p && strcmp(plan_state_name(p), "done") == 0;
	const struct plan_step_result *live = finished ? NULL : d->v->live_step;
	if (finished)
		snprintf(status, sizeof status, "done, %zu step%s", n, n == 1 ? "" : "s");
	else if (p)
		plan_status(p, d->now, status, sizeof status);
	wd_title(w, r, d, finished ? "Plan:" : "Plan", status[0] ? status : NULL);
	bool planned = p && plan_state_name(p)[0] != '\0';
	if (!planned || (n == 0 && !live)) {
		wd_put(w, r, 1, 1, wd_attr(d, THEME_R_DIM),
		       planned ? "no step has started yet" : "no plan: run with --stages, --sweep, --scenario or --matrix");
		return;
	}
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	wd_put_right(w, r, 1, col_end(0), lab, cols[0].head);
	wd_put(w, r, 1, col_end(0) + 1, lab, cols[1].head);
	for (int c = 2; c < NCOLS && col_end(c) < r->w; c++)
		wd_put_right(w, r, 1, col_end(c), lab, cols[c].head);
	bool slo = plan_slo(p) != NULL;
	/* Newest rows win when the table outgrows the panel. */
	int room = r->h - 2 - (live ? 1 : 0);
	size_t first = room > 0 && n > (size_t)room ? n - (size_t)room : 0;
	int y = 2;
	for (size_t i = first; i < n && y < r->h; i++, y++)
		row(w, r, y, &done[i], false, slo, d);
	if (live && y < r->h)
		row(w, r, y, live, true, slo, d);
}
