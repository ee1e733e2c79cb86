#include "config.h"

/* The CSV renderer of the result layer: `infertop report --format csv`
 * (the latency table, one row per scope and metric) and `infertop compare
 * --format csv`. */

#include "infertop/result.h"
#include "infertop/snapshot.h"

#include <inttypes.h>
#include <math.h>

static void csv_latency(FILE *out, const char *scope, struct hist *const *h)
{
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct result_mstat st;
		result_mstat_of(h[m], &st);
		fprintf(out, "%s,%s,%" PRIu64, scope, stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < RESULT_NSTAT; i++)
			fprintf(out, ",%.3f", st.v[i]);
		fputc('\n', out);
	}
}

static void csv_row(FILE *out, const char *metric, const struct hist *h)
{
	if (!h)
		return;
	struct result_mstat st;
	result_mstat_of(h, &st);
	fprintf(out, "run,%s,%" PRIu64, metric, st.count);
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, ",%.3f", st.v[i]);
	fputc('\n', out);
}

/* The cache's and sessions' latencies (whole run only), when the run has
 * them: ttft_mostly_cached, ttft_cold, ttft_turn_1 .. ttft_turn_8+,
 * e2el_turn_..., session_duration. */
static void csv_extra(FILE *out, const struct snapshot *s)
{
	csv_row(out, "ttft_mostly_cached", snapshot_xhist(s, XH_TTFT_WARM));
	csv_row(out, "ttft_cold", snapshot_xhist(s, XH_TTFT_COLD));
	for (int k = 0; k < 2; k++)
		for (int t = 0; t < STATS_TURNS; t++) {
			char name[32];
			snprintf(name, sizeof name, "%s_turn_%s", stats_metric_name(k ? STAT_E2E : STAT_TTFT),
				 stats_turn_label(t));
			csv_row(out, name, snapshot_xhist(s, (enum stats_xhist)((k ? XH_TURN_E2E : XH_TURN_TTFT) + t)));
		}
	csv_row(out, "session_duration", snapshot_xhist(s, XH_SESSION_DURATION));
}

int result_csv_report(FILE *out, const char *file, const struct snapshot *s)
{
	(void)file;
	fprintf(out, "scope,metric,count");
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, ",%s", result_mstat_keys[i]);
	fputc('\n', out);
	csv_latency(out, "run", s->run);
	csv_latency(out, "window", s->win);
	csv_extra(out, s);
	return 0;
}

int result_csv_compare(FILE *out, const struct result_compare *c)
{
	fprintf(out, "name,unit,a,b,delta,delta_pct,verdict,key\n");
	for (int i = 0; i < c->n; i++) {
		const struct result_crow *r = &c->rows[i];
		double p = result_crow_delta_pct(r);
		fprintf(out, "%s,%s,%.10g,%.10g,%.10g,", r->name, r->unit, r->a, r->b, r->b - r->a);
		if (!isnan(p))
			fprintf(out, "%.3f", p);
		fprintf(out, ",%s,%s\n", result_crow_verdict(r), r->key);
	}
	return 0;
}
