#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/options.h"
#include "infertop/profile.h"
#include "infertop/server.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* Each GPU's utilisation, memory and power over the chart span: a row of
 * three small charts per GPU (as many GPUs as fit), one time axis for
 * all of them in the bottom border. */

#define MAX_COLS 512

static const struct {
	const char *name;
	enum theme_role role;
} metrics[GPU_HIST_N] = {
	[GPU_HIST_UTIL] = {"util", THEME_R_CHART_TOK},
	[GPU_HIST_MEM] = {"mem", THEME_R_CHART_KV},
	[GPU_HIST_POWER] = {"power", THEME_R_CHART_QUEUE},
};

static void cell(WINDOW *w, const struct rect *c, int gpu, enum gpu_hist_metric m, const struct gpu_history *h,
		 int64_t to, int64_t span, const struct dash *d)
{
	int cols = c->w < MAX_COLS ? c->w : MAX_COLS;
	int npts = d->ascii ? cols : 2 * cols;
	double v[2 * MAX_COLS];
	size_t got = gpu_history_read(h, gpu, m, to, span, v, (size_t)npts);
	double maxv = 0, cur = NAN;
	for (int i = 0; i < npts; i++)
		if (!isnan(v[i])) {
			cur = v[i];
			if (v[i] > maxv)
				maxv = v[i];
		}
	/* Percentages on a fixed scale; power up to a round number. */
	double top = m == GPU_HIST_UTIL ? 100 : m == GPU_HIST_MEM ? 1 : wd_nice_ceil(maxv);
	char b[48], scale[24];
	if (isnan(cur))
		snprintf(b, sizeof b, "%s", wd_dash(d));
	else if (m == GPU_HIST_POWER)
		snprintf(b, sizeof b, "%.0f W", cur);
	else
		snprintf(b, sizeof b, "%.0f%%", m == GPU_HIST_MEM ? cur * 100 : cur);
	if (m == GPU_HIST_POWER)
		snprintf(scale, sizeof scale, "0%s%.0f W", d->ascii ? ".." : "\xe2\x80\xa6", top);
	else
		snprintf(scale, sizeof scale, "0%s100%%", d->ascii ? ".." : "\xe2\x80\xa6");
	int x = wd_printf(w, c, 0, 0, wd_attr(d, THEME_R_LABEL), "%d %s ", gpu, metrics[m].name);
	x = wd_put(w, c, 0, x, wd_attr(d, isnan(cur) ? THEME_R_DIM : THEME_R_VALUE), b);
	if (x + 2 + wd_width(scale) <= c->w)
		wd_put_right(w, c, 0, c->w, wd_attr(d, THEME_R_DIM), scale);
	if (got > 0)
		w_chart_plot(w, c, v, npts, top, d, metrics[m].role);
}

void w_gpu_hist_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	const struct server_state *s = d->v->server;
	const struct gpu_history *h = s ? s->gpu_hist : NULL;
	unsigned long dim = wd_attr(d, THEME_R_DIM);
	int64_t first = 0, last = 0;
	if (!d->v->cfg || !d->v->cfg->gpu_metrics_url) {
		wd_title(w, r, d, "GPU history", NULL);
		wd_put(w, r, 1, 1, dim, "no GPU metrics: give --gpu-metrics-url URL (a DCGM exporter)");
		return;
	}
	if (!h || gpu_history_extent(h, &first, &last) != 0 || s->ngpus == 0) {
		wd_title(w, r, d, "GPU history", NULL);
		wd_put(w, r, 1, 1, dim, "waiting for GPU metrics");
		return;
	}
	/* The zoom's span, or all that is held when that is shorter (the
	 * last GPU_HIST_POINTS scrapes). */
	int64_t span = d->zoom_ns;
	bool all = span <= 0 || span > last - first;
	if (all)
		span = last - first;
	if (span <= 0)
		span = 1000000000LL;
	char extra[64];
	snprintf(extra, sizeof extra, "utilisation, memory, power%s", all ? ", all held" : "");
	wd_title(w, r, d, "GPU history", extra);
	wd_time_axis(w, r, span, d);
	int room = r->h - 1, per = 3;
	int n = s->ngpus < SERVER_MAX_GPUS ? s->ngpus : SERVER_MAX_GPUS;
	int shown = room / per < n ? room / per : n;
	if (shown < n) {
		room--; /* a line saying how many are left out */
		shown = room / per;
	}
	if (shown <= 0)
		return;
	/* Spare rows go to taller charts. */
	per = room / shown;
	if (per > 8)
		per = 8;
	for (int g = 0; g < shown; g++) {
		for (int m = 0; m < GPU_HIST_N; m++) {
			int x0 = 1 + (r->w - 1) * m / GPU_HIST_N, x1 = 1 + (r->w - 1) * (m + 1) / GPU_HIST_N;
			struct rect c = {r->y + 1 + g * per, r->x + x0, per, x1 - x0 - 2};
			if (c.w > 4)
				cell(w, &c, g, (enum gpu_hist_metric)m, h, last, span, d);
		}
	}
	if (shown < n)
		wd_printf(w, r, r->h - 1, 1, dim, "+%d more GPUs: a taller terminal shows them", n - shown);
}
