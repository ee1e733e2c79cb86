#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* Below the smallest layout: say so plainly, keep counting. */
void w_too_small_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	const struct run_view *e = d->v;
	char l[5][96], el[32];
	wd_fmt_elapsed(el, sizeof el, run_view_elapsed(e, d->now));
	snprintf(l[0], sizeof l[0], "terminal too small");
	snprintf(l[1], sizeof l[1], "%dx%d, need %dx%d", r->w, r->h, LAYOUT_MIN_COLS, LAYOUT_MIN_ROWS);
	snprintf(l[2], sizeof l[2], "run continues %s", el);
	snprintf(l[3], sizeof l[3], "done %llu err %llu", (unsigned long long)e->stats->run_c.completed,
		 (unsigned long long)stats_errors_total(e->stats));
	snprintf(l[4], sizeof l[4], "q quits");
	int n = 5, y0 = (r->h - n) / 2;
	if (y0 < 0)
		y0 = 0;
	for (int i = 0; i < n && y0 + i < r->h; i++) {
		int x = (r->w - wd_width(l[i])) / 2;
		wd_put(w, r, y0 + i, x < 0 ? 0 : x, wd_attr(d, i == 0 ? THEME_R_CRIT : THEME_R_NORMAL), l[i]);
	}
}
