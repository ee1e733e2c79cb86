/* The fleet's generators panel and its headless line (fleet.h): one row
 * per run (id, state, in-flight, req/s, errors, last seen, clock offset,
 * its own target), drawn over the dashboard's bottom rows. */
#include "config.h"

#include "infertop/fleet.h"

#include <curses.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/hist.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"
#include "infertop/widget.h"

#define PANEL_ROWS_MAX 8

static enum theme_role role_of(enum fleet_gen_state s)
{
	switch (s) {
	case FLEET_GEN_RUNNING:
	case FLEET_GEN_DONE:
		return THEME_R_GOOD;
	case FLEET_GEN_LOST:
	case FLEET_GEN_REFUSED:
		return THEME_R_CRIT;
	case FLEET_GEN_DRAINING:
	case FLEET_GEN_WAITING:
	case FLEET_GEN_IDLE:
		return THEME_R_WARN;
	default:
		return THEME_R_DIM;
	}
}

static void fmt_target(char *buf, size_t cap, const struct fleet_gen_info *g)
{
	if (g->open_loop)
		snprintf(buf, cap, "r=%.3g", g->target);
	else
		snprintf(buf, cap, "c=%.0f", g->target);
}

/* --start: ", planned 3 at c=12, 1 LOST" (a lost generator's share of
 * the planned load is missing); "" when nothing was planned. */
static void planned_text(char *buf, size_t cap, const struct fleet *f, size_t lost)
{
	bool open;
	double target;
	size_t planned = fleet_planned(f, &open, &target);
	buf[0] = '\0';
	if (planned && lost)
		snprintf(buf, cap, ", planned %zu at %s%.4g, %zu LOST", planned, open ? "r=" : "c=", target, lost);
	else if (planned)
		snprintf(buf, cap, ", planned %zu at %s%.4g", planned, open ? "r=" : "c=", target);
}

static size_t refused_rows(const struct fleet *f, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < fleet_ngens(f); i++) {
		struct fleet_gen_info g;
		fleet_gen_info(f, i, now, &g);
		k += g.state == FLEET_GEN_REFUSED;
	}
	return k;
}

void fleet_panel_draw(void *ud, void *win, int rows, int cols, const struct dash *d)
{
	const struct fleet *f = ud;
	WINDOW *w = win;
	size_t n = fleet_ngens(f);
	int shown = n > PANEL_ROWS_MAX ? PANEL_ROWS_MAX : (int)(n ? n : 1);
	struct rect r = {.y = rows - 1 - (shown + 2), .x = 0, .h = shown + 2, .w = cols};
	if (r.y < 3)
		return;
	for (int y = 0; y < r.h; y++)
		wd_clear_row(w, &r, y, 0, wd_attr(d, THEME_R_NORMAL));
	char extra[192], plan[96] = "";
	size_t counted = 0, lost = 0;
	for (size_t i = 0; i < n; i++) {
		struct fleet_gen_info g;
		fleet_gen_info(f, i, d->now, &g);
		counted += g.counted;
		lost += g.state == FLEET_GEN_LOST;
	}
	planned_text(plan, sizeof plan, f, lost);
	snprintf(extra, sizeof extra, "%zu runs, %zu in the totals%s", n - refused_rows(f, d->now), counted, plan);
	wd_title(w, &r, d, "Generators", extra);
	unsigned long lab = wd_attr(d, THEME_R_LABEL), val = wd_attr(d, THEME_R_VALUE);
	wd_printf(w, &r, 1, 1, lab, "%-22s %-9s %7s %9s %9s %8s %7s %9s %s", "generator", "state", "target", "in-flight",
		  "req/s", "errors", "seen", "offset", "run");
	if (n == 0) {
		wd_put(w, &r, 2, 1, wd_attr(d, THEME_R_DIM), "waiting for the first status");
		return;
	}
	for (int k = 0; k < shown; k++) {
		/* The newest rows when there are more than fit. */
		size_t i = n > (size_t)shown ? n - (size_t)shown + (size_t)k : (size_t)k;
		struct fleet_gen_info g;
		fleet_gen_info(f, i, d->now, &g);
		char id[23], tgt[16], seen[16], off[16], rq[16];
		snprintf(id, sizeof id, "%.22s", g.id);
		fmt_target(tgt, sizeof tgt, &g);
		if (g.last_seen_s < 0)
			snprintf(seen, sizeof seen, "%s", wd_dash(d));
		else
			snprintf(seen, sizeof seen, "%.1fs", g.last_seen_s);
		if (isnan(g.clock_offset_s))
			snprintf(off, sizeof off, "%s", wd_dash(d));
		else
			snprintf(off, sizeof off, "%+.0fms", g.clock_offset_s * 1e3);
		snprintf(rq, sizeof rq, "%.1f", g.req_s);
		int x = wd_printf(w, &r, 2 + k, 1, val, "%-22s ", id);
		x = wd_printf(w, &r, 2 + k, x, wd_attr(d, role_of(g.state)), "%-9s ", fleet_gen_state_name(g.state));
		x = wd_printf(w, &r, 2 + k, x, val, "%7s %9" PRIu64 " %9s %8" PRIu64 " %7s %9s %.8s", tgt, g.in_flight, rq,
			      g.errors, seen, off, g.run_id);
		if (g.msg[0] && (g.state == FLEET_GEN_LOST || g.state == FLEET_GEN_REFUSED || !g.counted))
			wd_printf(w, &r, 2 + k, x + 1, wd_attr(d, THEME_R_DIM), " %s", g.msg);
	}
}

void fleet_print_line(const struct fleet *f, int64_t now, void *file)
{
	FILE *out = file;
	size_t n = fleet_ngens(f), up = 0, lost = 0, done = 0, refused = 0;
	for (size_t i = 0; i < n; i++) {
		struct fleet_gen_info g;
		fleet_gen_info(f, i, now, &g);
		up += g.state == FLEET_GEN_RUNNING || g.state == FLEET_GEN_DRAINING;
		lost += g.state == FLEET_GEN_LOST;
		done += g.state == FLEET_GEN_DONE;
		refused += g.state == FLEET_GEN_REFUSED;
	}
	char plan[96];
	planned_text(plan, sizeof plan, f, lost);
	const struct snapshot *m = fleet_merged(f);
	if (!m) {
		fprintf(out, "fleet: %zu generators, waiting for the first status\n", fleet_nendpoints(f));
		return;
	}
	double rs = m->win_seconds > 0 ? (double)m->win_c.completed / m->win_seconds : 0;
	double p50 = (double)hist_percentile(m->run[STAT_TTFT], 50) / 1e3;
	double p99 = (double)hist_percentile(m->run[STAT_TTFT], 99) / 1e3;
	char tgt[48];
	if (m->open_loop)
		snprintf(tgt, sizeof tgt, "rate %.4g", m->rate);
	else
		snprintf(tgt, sizeof tgt, "c=%.0f", m->concurrency);
	fprintf(out,
		"fleet: %zu runs (%zu up, %zu done, %zu lost, %zu refused): %" PRIu64 " ok, %" PRIu64 " failed, %.1f req/s, "
		"%" PRIu64 " in flight, %s, TTFT p50 %.1fms p99 %.1fms%s\n",
		n - refused, up, done, lost, refused, m->run_c.completed, snapshot_failed(m), rs, m->in_flight, tgt, p50, p99,
		plan);
	fflush(out);
}
