#include "config.h"

#include "infertop/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/server.h"
#include "infertop/stats.h"
#include "infertop/snapshot.h"
#include "infertop/units.h"
#include "infertop/view.h"

static double us_to_ms(int64_t us)
{
	return (double)us / 1000.0;
}

void report_progress(FILE *out, const struct run_view *v, int64_t now_ns)
{
	const struct stats *s = v->stats;
	double win = stats_window_seconds(s, now_ns);
	uint64_t errors = stats_errors_total(s);
	uint64_t ended = s->run_c.completed + errors;
	char el[32];
	units_format_duration(run_view_elapsed(v, now_ns), el, sizeof el);
	const struct hist *ttft = s->win[STAT_TTFT], *itl = s->win[STAT_ITL];
	fprintf(out,
		"[%7s] in-flight %" PRIu64 " | done %" PRIu64 " | errors %" PRIu64 " (%.1f%%) | "
		"%.2f req/s | %.0f out tok/s | TTFT p50 %.1f p99 %.1f ms | ITL p50 %.2f p99 %.2f ms",
		el, s->in_flight, s->run_c.completed, errors, ended ? 100.0 * (double)errors / (double)ended : 0.0,
		win > 0 ? (double)s->win_c.completed / win : 0.0,
		win > 0 ? stats_live_tokens(s, &s->win_c) / win : 0.0,
		us_to_ms(hist_percentile(ttft, 50)), us_to_ms(hist_percentile(ttft, 99)),
		us_to_ms(hist_percentile(itl, 50)), us_to_ms(hist_percentile(itl, 99)));
	if (v->load->backing_off && v->state == ENGINE_RUNNING) {
		if (v->backoff_code)
			fprintf(out, " | backing off (%d)", v->backoff_code);
		else
			fprintf(out, " | backing off (connections refused)");
	}
	if (v->server) {
		char b[160];
		server_format_brief(v->server, b, sizeof b);
		fprintf(out, " | %s", b);
	}
	if (plan_slo(v->plan))
		fprintf(out, " | goodput %.2f req/s", plan_goodput_window(v->plan, now_ns));
	char ps[160];
	plan_status(v->plan, now_ns, ps, sizeof ps);
	if (ps[0])
		fprintf(out, " | %s", ps);
	fputc('\n', out);
	fflush(out);
}

void report_summary(FILE *out, const struct run_view *v)
{
	/* One printer for a live run and a saved file: `infertop report`
	 * shows the same block from a snapshot. */
	struct snapshot s;
	if (snapshot_from_view(&s, v, clock_now_ns(), SNAPSHOT_FINAL) != 0) {
		fprintf(out, "infertop: out of memory building the summary\n");
		return;
	}
	snapshot_print_summary(out, &s);
	snapshot_release(&s);
}

/* The result is the final snapshot (man infertop-snapshot(5)): vLLM's keys
 * at the top level, infertop's under "infertop". */
char *report_json(const struct run_view *v)
{
	return snapshot_build(v, clock_now_ns(), v->state == ENGINE_DONE ? SNAPSHOT_FINAL : SNAPSHOT_KEY);
}

int report_write_json(const struct run_view *v, const char *path, char *err, size_t errcap)
{
	char *txt = report_json(v);
	if (!txt) {
		snprintf(err, errcap, "out of memory building the result");
		return -1;
	}
	char p[4096];
	snprintf(p, sizeof p, "%s", path);
	size_t n = strlen(txt);
	txt[n] = '\n';
	int rc = snapshot_write_atomic(p, sizeof p, false, txt, n + 1, err, errcap);
	free(txt);
	return rc;
}
