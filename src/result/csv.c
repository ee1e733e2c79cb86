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

int result_csv_report(FILE *out, const char *file, const struct snapshot *s)
{
	(void)file;
	fprintf(out, "scope,metric,count");
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, ",%s", result_mstat_keys[i]);
	fputc('\n', out);
	csv_latency(out, "run", s->run);
	csv_latency(out, "window", s->win);
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
