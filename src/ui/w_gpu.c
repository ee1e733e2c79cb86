#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/options.h"
#include "infertop/server.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* GPUs as the DCGM exporter reports them: one line each. */

static void val(char *buf, size_t cap, const struct server_value *v, const char *fmt, const struct dash *d)
{
	if (v->valid && !isnan(v->v))
		snprintf(buf, cap, fmt, v->v);
	else
		snprintf(buf, cap, "%s", wd_dash(d));
}

static void gpu_line(WINDOW *w, const struct rect *r, int y, int idx, const struct server_gpu *g, bool detail,
		     const struct dash *d)
{
	unsigned long lab = wd_attr(d, THEME_R_LABEL), vat = wd_attr(d, THEME_R_VALUE);
	char name[80], b[48];
	snprintf(name, sizeof name, "%d %s", idx, g->name);
	int x = wd_put(w, r, y, 1, vat, name);
	x = x < 24 ? 24 : x + 1;
	x = wd_put(w, r, y, x, lab, "util ");
	if (r->w >= 100) {
		wd_bar(w, r, y, x, 10, g->util_pct.valid ? g->util_pct.v / 100 : NAN, d);
		x += 11;
	}
	val(b, sizeof b, &g->util_pct, "%3.0f%%", d);
	x = wd_put(w, r, y, x, vat, b);
	x = wd_put(w, r, y, x + 2, lab, "mem ");
	if (g->mem_used_mib.valid && g->mem_total_mib.valid && g->mem_total_mib.v > 0)
		snprintf(b, sizeof b, "%.1f/%.0f GiB", g->mem_used_mib.v / 1024, g->mem_total_mib.v / 1024);
	else
		val(b, sizeof b, &g->mem_used_mib, "%.0f MiB", d);
	x = wd_put(w, r, y, x, vat, b);
	x = wd_put(w, r, y, x + 2, lab, "power ");
	val(b, sizeof b, &g->power_w, "%.0f W", d);
	x = wd_put(w, r, y, x, vat, b);
	x = wd_put(w, r, y, x + 2, lab, "temp ");
	val(b, sizeof b, &g->temp_c, d->ascii ? "%.0f C" : "%.0f\xc2\xb0" "C", d);
	x = wd_put(w, r, y, x, vat, b);
	if (!detail)
		return;
	x = wd_put(w, r, y, x + 2, lab, "SM ");
	val(b, sizeof b, &g->sm_clock_mhz, "%.0f MHz", d);
	x = wd_put(w, r, y, x, vat, b);
	x = wd_put(w, r, y, x + 2, lab, "tensor ");
	val(b, sizeof b, &g->tensor_active, "%.2f", d);
	x = wd_put(w, r, y, x, vat, b);
	x = wd_put(w, r, y, x + 2, lab, "dram ");
	val(b, sizeof b, &g->dram_active, "%.2f", d);
	wd_put(w, r, y, x, vat, b);
}

void w_gpu_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	const struct server_state *s = d->v->server;
	const char *url = d->v->cfg ? d->v->cfg->gpu_metrics_url : NULL;
	char extra[160] = "";
	if (s && url && s->ngpus > 0) {
		char pw[32], jt[32];
		val(pw, sizeof pw, &s->power_total_w, "%.0f W", d);
		/* Energy per token needs both the energy used and tokens made;
		 * until then (or while the counter has not moved) it is
		 * unknown, not 0. */
		if (s->joules_per_token.valid && isfinite(s->joules_per_token.v) && s->joules_per_token.v > 0)
			snprintf(jt, sizeof jt, "%.3g J/token", s->joules_per_token.v);
		else
			snprintf(jt, sizeof jt, "%s J/token", wd_dash(d));
		snprintf(extra, sizeof extra, "%d  total %s  %s", s->ngpus, pw, jt);
	}
	wd_title(w, r, d, "GPU", extra);
	unsigned long dim = wd_attr(d, THEME_R_DIM);
	if (!url) {
		wd_put(w, r, 1, 1, dim, "no GPU metrics: give --gpu-metrics-url URL (a DCGM exporter)");
		return;
	}
	if (!s) {
		wd_printf(w, r, 1, 1, dim, "no GPU metrics yet from %s", url);
		return;
	}
	if (s->gpu_status == SERVER_DOWN || s->gpu_status == SERVER_STALE) {
		wd_printf(w, r, 1, 1, wd_attr(d, s->gpu_status == SERVER_DOWN ? THEME_R_CRIT : THEME_R_WARN), "%s: %s",
			  s->gpu_status == SERVER_DOWN ? "down" : "stale", s->gpu_error[0] ? s->gpu_error : url);
		if (s->gpu_status == SERVER_DOWN)
			return;
	}
	if (s->ngpus == 0) {
		wd_printf(w, r, 1, 1, dim, "waiting for GPU metrics from %s", url);
		return;
	}
	int y0 = s->gpu_status == SERVER_STALE ? 2 : 1;
	int room = r->h - y0;
	int n = s->ngpus < SERVER_MAX_GPUS ? s->ngpus : SERVER_MAX_GPUS;
	for (int i = 0; i < n && i < room; i++) {
		if (i == room - 1 && n > room) {
			wd_printf(w, r, y0 + i, 1, dim, "+%d more (GPU view: v)", n - i);
			break;
		}
		gpu_line(w, r, y0 + i, i, &s->gpu[i], arg == PANEL_DETAIL, d);
	}
}
