#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/reqlog.h"
#include "infertop/stats.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* Failed requests by kind, with the latest message of each kind. */

static int kinds_by_count(const struct stats *st, int order[ERR_NKINDS])
{
	int n = 0;
	for (int k = 0; k < ERR_NKINDS; k++)
		if (st->errors[k])
			order[n++] = k;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && st->errors[order[j]] > st->errors[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	return n;
}

static int http_codes(const struct stats *st, char *buf, size_t cap)
{
	size_t off = 0;
	int n = 0;
	buf[0] = '\0';
	for (int c = 0; c < STATS_HTTP_CODES && off + 24 < cap; c++) {
		if (!st->http_codes[c])
			continue;
		off += (size_t)snprintf(buf + off, cap - off, "%s%d x%llu", n ? ", " : "", c,
					(unsigned long long)st->http_codes[c]);
		n++;
	}
	return n;
}

/* One line: every kind with its count, then the newest message of the
 * most frequent kind. */
static void summary_line(WINDOW *w, const struct rect *r, int y, const struct dash *d, const int *order, int n)
{
	const struct stats *st = d->v->stats;
	unsigned long lab = wd_attr(d, THEME_R_LABEL), crit = wd_attr(d, THEME_R_CRIT);
	int x = wd_put(w, r, y, 1, lab, "errors ");
	/* Lines of --request-log lost to a full disk are data lost: said here
	 * too, not only once on the status line. */
	const struct reqlog_stats *rl = d->v->reqlog ? reqlog_stats(d->v->reqlog) : NULL;
	if (n == 0) {
		x = wd_put(w, r, y, x, wd_attr(d, THEME_R_GOOD), "none");
		if (rl && rl->dropped) {
			char b[64];
			snprintf(b, sizeof b, "  request log: %llu lines dropped", (unsigned long long)rl->dropped);
			x = wd_put(w, r, y, x, wd_attr(d, THEME_R_CRIT), b);
		}
		if (st->usage_mismatch) {
			char b[STATS_MSG_MAX + 64];
			snprintf(b, sizeof b, "  warning: usage vs chunks x%llu (%s)", (unsigned long long)st->usage_mismatch,
				 st->usage_mismatch_msg);
			wd_put(w, r, y, x, wd_attr(d, THEME_R_WARN), b);
		}
		return;
	}
	char b[64];
	wd_fmt_count(b, sizeof b, stats_errors_total(st));
	x = wd_put(w, r, y, x, crit, b);
	for (int i = 0; i < n; i++) {
		x = wd_put(w, r, y, x, lab, i ? ", " : "  ");
		x = wd_put(w, r, y, x, lab, stats_err_name((enum err_kind)order[i]));
		snprintf(b, sizeof b, " %llu", (unsigned long long)st->errors[order[i]]);
		x = wd_put(w, r, y, x, wd_attr(d, THEME_R_VALUE), b);
	}
	if (rl && rl->dropped) {
		snprintf(b, sizeof b, "  request log: %llu dropped", (unsigned long long)rl->dropped);
		x = wd_put(w, r, y, x, wd_attr(d, THEME_R_CRIT), b);
	}
	x = wd_put(w, r, y, x + 2, wd_attr(d, THEME_R_BORDER), wd_vbar(d));
	wd_put(w, r, y, x + 1, wd_attr(d, THEME_R_DIM), st->last_msg[order[0]]);
}

static void kind_line(WINDOW *w, const struct rect *r, int y, int k, const struct dash *d, bool share)
{
	const struct stats *st = d->v->stats;
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	wd_put(w, r, y, 1, lab, stats_err_name((enum err_kind)k));
	char b[48];
	snprintf(b, sizeof b, "%llu", (unsigned long long)st->errors[k]);
	wd_put_right(w, r, y, 22, wd_attr(d, THEME_R_CRIT), b);
	int x = 24;
	if (share) {
		uint64_t tot = stats_errors_total(st);
		snprintf(b, sizeof b, "%5.1f%%", tot ? 100.0 * (double)st->errors[k] / (double)tot : 0.0);
		wd_put(w, r, y, x, wd_attr(d, THEME_R_DIM), b);
		x += 8;
	}
	wd_put(w, r, y, x, wd_attr(d, THEME_R_VALUE), st->last_msg[k][0] ? st->last_msg[k] : wd_dash(d));
}

void w_errors_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	const struct stats *st = d->v->stats;
	int order[ERR_NKINDS];
	int n = kinds_by_count(st, order);
	if (arg != PANEL_DETAIL) {
		/* A strip of one line, or a box with the summary under its
		 * title. */
		int y0 = 0;
		if (r->h > 1) {
			wd_title(w, r, d, "Errors", NULL);
			y0 = 1;
		}
		summary_line(w, r, y0, d, order, n);
		for (int i = 0; i < n && y0 + 1 + i < r->h; i++)
			kind_line(w, r, y0 + 1 + i, order[i], d, false);
		return;
	}
	uint64_t tot = stats_errors_total(st), ended = tot + st->run_c.completed;
	char extra[96];
	snprintf(extra, sizeof extra, "%llu of %llu requests (%.2f%%)", (unsigned long long)tot,
		 (unsigned long long)ended, ended ? 100.0 * (double)tot / (double)ended : 0.0);
	wd_title(w, r, d, "Errors", extra);
	if (n == 0) {
		wd_put(w, r, 1, 1, wd_attr(d, THEME_R_GOOD), "no failed request");
		return;
	}
	unsigned long lab = wd_attr(d, THEME_R_LABEL);
	wd_put(w, r, 1, 1, lab, "kind");
	wd_put_right(w, r, 1, 22, lab, "count");
	wd_put(w, r, 1, 24, lab, " share  latest message");
	int y = 2;
	for (int i = 0; i < n && y < r->h; i++, y++)
		kind_line(w, r, y, order[i], d, true);
	char codes[512];
	if (http_codes(st, codes, sizeof codes) > 0 && y + 1 < r->h) {
		int x = wd_put(w, r, y + 1, 1, lab, "HTTP status  ");
		wd_put(w, r, y + 1, x, wd_attr(d, THEME_R_VALUE), codes);
	}
}
