#include "config.h"

/* The HTML renderer of the result layer: `report --format html`,
 * `compare --format html`, `--html FILE` (session.c). One self-contained
 * page, inline CSS and SVG (svg.h), nothing fetched, no script, so it opens
 * offline and under `Content-Security-Policy: default-src 'none';
 * style-src 'unsafe-inline'; img-src data:` (the page says so itself in a
 * <meta>). On it: the run's header, the
 * summary and error tables (the figures readable without the charts), the
 * series over time with the load changes and plan steps marked, the
 * latency distributions with percentile markers, a sweep's latency
 * against throughput, sessions, the merged inputs. Every text from the
 * file or a server is escaped (svg_escape): a model name is untrusted. */

#include "infertop/result.h"
#include "infertop/snapshot.h"
#include "infertop/svg.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/hist.h"
#include "infertop/series.h"

#define esc svg_escape

/* The points a time series is reduced to (min/max kept): a 24-hour run's
 * page stays well under 2 MB. */
#define HTML_SERIES_POINTS 480

static const char page_css[] =
	":root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mute:#59636e;--grid:#d1d9e0;--c0:#0969da;"
	"--c1:#cf222e;--c2:#1a7f37;--c3:#9a6700;--c4:#8250df;--c5:#bc4c00;--warn:#fff8c5}\n"
	"@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;--grid:#30363d;"
	"--c0:#4493f8;--c1:#ff7b72;--c2:#3fb950;--c3:#d29922;--c4:#ab7df8;--c5:#f0883e;--warn:#3b2e00}}\n"
	"body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,sans-serif}\n"
	"main{max-width:1180px;margin:0 auto;padding:12px}\n"
	"h1{font-size:1.3em;margin:.2em 0 .6em;overflow-wrap:anywhere}h2{font-size:1.1em;margin:1.4em 0 .5em;"
	"border-bottom:1px solid var(--grid)}\n"
	".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,520px),1fr));gap:14px}\n"
	"figure{margin:0;min-width:0}figcaption{font-weight:600;font-size:.92em}\n"
	"svg{width:100%;height:auto;display:block}svg text{fill:var(--mute);font-size:11px}\n"
	".ax{stroke:var(--grid);fill:none}.mk{stroke:var(--mute);stroke-dasharray:3 3}.mt{font-size:10px}\n"
	".data{fill:none;stroke-width:1.6;stroke-linejoin:round;stroke-linecap:round}"
	".dots{stroke-width:6;stroke-linecap:round}.bars{fill:var(--c0);stroke:none;opacity:.75}\n"
	".l0{stroke:var(--c0)}.l1{stroke:var(--c1)}.l2{stroke:var(--c2)}.l3{stroke:var(--c3)}.l4{stroke:var(--c4)}"
	".l5{stroke:var(--c5)}\n"
	".band{stroke:none;opacity:.2}.b0{fill:var(--c0)}.b1{fill:var(--c1)}.b2{fill:var(--c2)}.b3{fill:var(--c3)}"
	".b4{fill:var(--c4)}.b5{fill:var(--c5)}\n"
	".lg{list-style:none;margin:2px 0 0;padding:0;font-size:.85em;color:var(--mute)}.lg li{display:inline-block;"
	"margin-right:12px}.sw{display:inline-block;width:12px;height:3px;vertical-align:middle;margin-right:4px}\n"
	".s0{background:var(--c0)}.s1{background:var(--c1)}.s2{background:var(--c2)}.s3{background:var(--c3)}"
	".s4{background:var(--c4)}.s5{background:var(--c5)}\n"
	".tw{overflow-x:auto;max-width:100%}table{border-collapse:collapse;font-variant-numeric:tabular-nums;"
	"margin:.3em 0}th,td{padding:2px 10px;border-bottom:1px solid var(--grid);text-align:right;"
	"vertical-align:top}th:first-child,td:first-child,td.t{text-align:left}td.t{overflow-wrap:anywhere;"
	"min-width:8em}thead th{font-weight:600}\n"
	".kv td:first-child{color:var(--mute)}.warn{background:var(--warn);padding:6px 10px;border-radius:4px;"
	"margin:.4em 0}.better{color:var(--c2)}.worse{color:var(--c1)}.note{color:var(--mute);font-size:.9em}\n"
	"details summary{cursor:pointer;color:var(--mute)}\n"
	"@media print{@page{size:A4;margin:12mm}:root{--bg:#fff;--fg:#000;--mute:#444;--grid:#bbb;--warn:#eee}"
	"body{font-size:10pt}main{max-width:none;padding:0}.grid{grid-template-columns:1fr 1fr}"
	"figure,table,tr{break-inside:avoid}h2{break-after:avoid}}\n";

static void page_open(FILE *out, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
	      "img-src data:\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
	      out);
	esc(out, title);
	fprintf(out, "</title>\n<style>\n%s</style></head>\n<body><main>\n<h1>", page_css);
	esc(out, title);
	fputs("</h1>\n", out);
}

static int page_close(FILE *out)
{
	fputs("<p class=\"note\">Written by infertop " PACKAGE_VERSION ".</p>\n</main></body></html>\n", out);
	return ferror(out) ? -1 : 0;
}

/* A number of a JSON item: a file read back holds numbers, a live
 * snapshot raw number text (snapshot_json_number); NaN when neither. */
static double jnum(const cJSON *j)
{
	if (cJSON_IsNumber(j))
		return j->valuedouble;
	if (cJSON_IsRaw(j) && j->valuestring) {
		char *end;
		double d = strtod(j->valuestring, &end);
		return end != j->valuestring ? d : NAN;
	}
	return NAN;
}

/* ---- tables ---- */

static void kv_text(FILE *out, const char *k, const char *v)
{
	fputs("<tr><td>", out);
	esc(out, k);
	fputs("</td><td class=\"t\">", out);
	esc(out, v && *v ? v : "-");
	fputs("</td></tr>\n", out);
}

static void kv_num(FILE *out, const char *k, const char *fmt, double v)
{
	char b[64];
	if (isfinite(v))
		snprintf(b, sizeof b, fmt, v);
	else
		snprintf(b, sizeof b, "-");
	fputs("<tr><td>", out);
	esc(out, k);
	fprintf(out, "</td><td>%s</td></tr>\n", b);
}

static void kv_u64(FILE *out, const char *k, uint64_t v)
{
	fputs("<tr><td>", out);
	esc(out, k);
	fprintf(out, "</td><td>%" PRIu64 "</td></tr>\n", v);
}

/* A JSON scalar as a cell's text. */
static void json_cell(FILE *out, const cJSON *v)
{
	char b[64];
	if (cJSON_IsString(v))
		esc(out, v->valuestring);
	else if (cJSON_IsNumber(v) || cJSON_IsRaw(v)) {
		snprintf(b, sizeof b, "%.6g", jnum(v));
		fputs(b, out);
	} else if (cJSON_IsBool(v))
		fputs(cJSON_IsTrue(v) ? "true" : "false", out);
	else if (cJSON_IsNull(v) || !v)
		fputs("-", out);
	else {
		char *t = cJSON_PrintUnformatted(v);
		esc(out, t ? t : "?");
		free(t);
	}
}

/* An array of objects as a table: the columns are the first object's
 * scalar keys (merged inputs, lost generators). */
static void json_rows(FILE *out, const cJSON *arr, const char *caption)
{
	const cJSON *first = cJSON_GetArrayItem(arr, 0);
	if (!cJSON_IsObject(first))
		return;
	fputs("<div class=\"tw\"><table><caption class=\"note\">", out);
	esc(out, caption);
	fputs("</caption><thead><tr><th>#</th>", out);
	const cJSON *k;
	cJSON_ArrayForEach(k, first)
	{
		if (cJSON_IsObject(k) || cJSON_IsArray(k))
			continue;
		fputs("<th>", out);
		esc(out, k->string);
		fputs("</th>", out);
	}
	fputs("</tr></thead><tbody>\n", out);
	const cJSON *row;
	int i = 0;
	cJSON_ArrayForEach(row, arr)
	{
		fprintf(out, "<tr><td>%d</td>", ++i);
		cJSON_ArrayForEach(k, first)
		{
			if (cJSON_IsObject(k) || cJSON_IsArray(k))
				continue;
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, k->string);
			fputs(cJSON_IsString(v) ? "<td class=\"t\">" : "<td>", out);
			json_cell(out, v);
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
}

/* An object's scalars as key/value rows (the options, a trace replay). */
static void json_kv(FILE *out, const cJSON *o)
{
	const cJSON *k;
	fputs("<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
	cJSON_ArrayForEach(k, o)
	{
		fputs("<tr><td>", out);
		esc(out, k->string);
		fputs("</td><td class=\"t\">", out);
		json_cell(out, k);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
}

static void header(FILE *out, const struct snapshot *s)
{
	char b[160];
	fputs("<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
	kv_text(out, "target", s->target_url);
	kv_text(out, "model", s->model);
	kv_text(out, "server", s->server_detected);
	result_text_load(b, sizeof b, s);
	kv_text(out, "load", b);
	if (s->plan.present) {
		kv_text(out, "plan", result_key_name(result_keys_plan_kind, s->plan.kind, "-"));
		if (s->plan.arrival[0])
			kv_text(out, "arrival", s->plan.arrival);
		if (s->plan.scenario[0])
			kv_text(out, "scenario", s->plan.scenario);
	}
	result_text_utc(b, sizeof b, s->start_unix);
	kv_text(out, "started", b);
	result_text_utc(b, sizeof b, s->taken_unix);
	kv_text(out, "taken", b);
	snprintf(b, sizeof b, "%.2f s measured", s->duration);
	kv_text(out, "duration", b);
	kv_text(out, "stopped", s->stop_reason);
	kv_text(out, "status", s->status);
	kv_text(out, "host", s->host);
	kv_text(out, "run id", s->run_id);
	kv_text(out, "infertop version", s->version);
	if (s->nruns > 1)
		kv_u64(out, "runs merged", s->nruns);
	const cJSON *tags = cJSON_GetObjectItemCaseSensitive(s->options, "tags");
	if (tags) {
		fputs("<tr><td>tags</td><td class=\"t\">", out);
		json_cell(out, tags);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);

	/* What a reader must not miss. */
	uint64_t failed = snapshot_failed(s);
	if (failed) {
		fprintf(out, "<p class=\"warn\">%" PRIu64 " request(s) failed (%.2f%% of those that ended); see Errors.</p>\n",
			failed, 100.0 * (double)failed / (double)(failed + s->run_c.completed));
	}
	if (s->usage_mismatch) {
		fputs("<p class=\"warn\">Token counts: ", out);
		esc(out, s->usage_mismatch_msg);
		fputs("</p>\n", out);
	}
	const cJSON *lost = cJSON_GetObjectItemCaseSensitive(s->fleet, "generators_lost");
	if (cJSON_GetArraySize(lost) > 0)
		fprintf(out, "<p class=\"warn\">%d generator(s) lost during the run: their share is missing from the "
			     "figures (see Fleet).</p>\n",
			cJSON_GetArraySize(lost));
}

static void summary(FILE *out, const struct snapshot *s)
{
	const struct stats_counters *c = &s->run_c;
	fputs("<h2>Summary</h2>\n<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
	kv_u64(out, "Successful requests", c->completed);
	kv_u64(out, "Failed requests", snapshot_failed(s));
	kv_num(out, "Benchmark duration (s)", "%.2f", s->duration);
	kv_u64(out, "Total input tokens", c->input_tokens);
	kv_u64(out, "Total generated tokens", c->output_tokens);
	kv_num(out, "Request throughput (req/s)", "%.2f", snapshot_rate(c->completed, s->duration));
	kv_num(out, "Output token throughput (tok/s)", "%.2f", snapshot_rate(c->output_tokens, s->duration));
	kv_num(out, "Total token throughput (tok/s)", "%.2f",
	       snapshot_rate(c->output_tokens + c->input_tokens, s->duration));
	kv_num(out, "Peak output throughput (tok/s)", "%.2f", s->max_output_tok_s);
	kv_u64(out, "Max in flight", s->max_in_flight);
	if (s->have_slo && s->slo_desc[0])
		kv_text(out, "SLO", s->slo_desc);
	fputs("</tbody></table></div>\n", out);
}

static void latency_table(FILE *out, struct hist *const *h, const char *caption)
{
	fputs("<div class=\"tw\"><table><caption class=\"note\">", out);
	esc(out, caption);
	fputs("</caption><thead><tr><th>metric (ms)</th><th>count</th>", out);
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, "<th>%s</th>", result_mstat_heads[i]);
	fputs("</tr></thead><tbody>\n", out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		if (!h[m])
			continue;
		struct result_mstat st;
		result_mstat_of(h[m], &st);
		fprintf(out, "<tr><td>%s</td><td>%" PRIu64 "</td>", stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < RESULT_NSTAT; i++)
			fprintf(out, "<td>%.2f</td>", st.v[i]);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
}

static void errors_table(FILE *out, const struct snapshot *s)
{
	if (!snapshot_failed(s))
		return;
	fputs("<h2>Errors</h2>\n<div class=\"tw\"><table><thead><tr><th>kind</th><th>count</th>"
	      "<th>last message</th></tr></thead><tbody>\n",
	      out);
	for (int k = 0; k < ERR_NKINDS; k++) {
		if (!s->errors[k])
			continue;
		fprintf(out, "<tr><td>%s</td><td>%" PRIu64 "</td><td class=\"t\">", stats_err_name((enum err_kind)k),
			s->errors[k]);
		esc(out, s->last_msg[k]);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
	bool codes = false;
	for (int i = 0; i < STATS_HTTP_CODES; i++)
		codes |= s->http_codes[i] != 0;
	if (!codes)
		return;
	fputs("<div class=\"tw\"><table><thead><tr><th>HTTP status</th><th>count</th></tr></thead><tbody>\n", out);
	for (int i = 0; i < STATS_HTTP_CODES; i++)
		if (s->http_codes[i])
			fprintf(out, "<tr><td>%d</td><td>%" PRIu64 "</td></tr>\n", i + 100, s->http_codes[i]);
	fputs("</tbody></table></div>\n", out);
}

/* ---- time series ---- */

/* A reduced series ready to draw: p holds HTML_SERIES_POINTS. */
struct drawn_series {
	struct svg_point p[HTML_SERIES_POINTS];
	size_t n;
};

static void series_reduce(const cJSON *ser, const char *key, double scale, struct drawn_series *d)
{
	double *x, *v;
	size_t n = result_series_points(ser, key, &x, &v);
	for (size_t i = 0; i < n; i++)
		v[i] *= scale;
	d->n = svg_downsample(x, v, n, HTML_SERIES_POINTS, d->p);
	free(x);
	free(v);
}

static bool series_known(const struct drawn_series *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (isfinite(d->p[i].v))
			return true;
	return false;
}

/* The load changes and plan steps, as markers on the time axis. */
struct marks {
	struct svg_mark m[64];
	char label[64][SNAPSHOT_LABEL_MAX + 8];
	size_t n;
};

static void marks_of(const struct snapshot *s, struct marks *mk)
{
	mk->n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, s->load_changes)
	{
		if (mk->n >= 32)
			break;
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(it, "t_s"),
			    *mo = cJSON_GetObjectItemCaseSensitive(it, "mode"),
			    *v = cJSON_GetObjectItemCaseSensitive(it, "value");
		if (!(jnum(t) > 0))
			continue;
		bool rate = cJSON_IsString(mo) && strcmp(mo->valuestring, "rate") == 0;
		snprintf(mk->label[mk->n], sizeof mk->label[0], rate ? "%g req/s" : "c=%g",
			 jnum(v));
		mk->m[mk->n] = (struct svg_mark){ jnum(t), mk->label[mk->n], NAN };
		mk->n++;
	}
	size_t changes = mk->n;
	for (size_t i = 0; i < s->plan.nsteps && mk->n < 64; i++) {
		const struct snapshot_step *st = &s->plan.steps[i];
		/* A step's start is a load change too: one marker, the step's
		 * name on it. */
		size_t at = mk->n;
		for (size_t j = 0; j < changes; j++)
			if (fabs(mk->m[j].x - st->start_s) < 1.0)
				at = j;
		snprintf(mk->label[at], sizeof mk->label[0], "%s", st->label[0] ? st->label : "step");
		mk->m[at] = (struct svg_mark){ st->start_s, mk->label[at], NAN };
		if (at == mk->n)
			mk->n++;
	}
}

/* One chart of up to three series of the runs (one run, or A and B
 * of a comparison: then one line per run). */
struct series_spec {
	const char *title, *unit;
	const char *key[3];
	const char *name[3];
	double scale;
	bool cache;     /* drawn only for a run with prefix-cache figures */
};

static const struct series_spec series_specs[] = {
	{ "Requests completed per second", "req/s", { "requests_s" }, { "req/s" }, 1, false },
	{ "Output tokens per second", "tok/s", { "output_tok_s" }, { "output tok/s" }, 1, false },
	{ "In flight and the load's target", "requests", { "in_flight", "target" }, { "in flight", "target" }, 1, false },
	{ "TTFT, sliding window", "ms", { "ttft_p50_ms", "ttft_p99_ms" }, { "TTFT p50", "TTFT p99" }, 1, false },
	{ "ITL, sliding window", "ms", { "itl_p50_ms", "itl_p99_ms" }, { "ITL p50", "ITL p99" }, 1, false },
	{ "Failed requests per second", "errors/s", { "errors_s" }, { "errors/s" }, 1, false },
	{ "Server: running and waiting requests", "requests", { "server_running", "server_waiting" },
	  { "running", "waiting" }, 1, false },
	{ "Server: KV cache usage", "%", { "server_kv_usage" }, { "KV usage" }, 100, false },
	{ "GPU power, all GPUs", "W", { "gpu_power_w" }, { "GPU power" }, 1, false },
	{ "Prefix cache hit rate, sliding window", "%", { "cache_hit_rate" }, { "hit rate" }, 100, true },
};

/* How a merged series combined key's inputs ("sum", "max", "mean"); ""
 * for one run's own series. */
static const char *merge_how(const cJSON *ser, const char *key)
{
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ser, "merge"), "how"), key);
	return cJSON_IsString(h) ? h->valuestring : "";
}

/* The series charts of runs[0..nruns) (names: the runs' labels when
 * more than one). */
static int series_section(FILE *out, const struct snapshot *const *runs, const char *const *names, size_t nruns,
			  const struct marks *mk)
{
	bool any = false;
	for (size_t r = 0; r < nruns; r++)
		any |= runs[r]->series != NULL;
	if (!any)
		return 0;
	struct drawn_series *d = malloc(6 * sizeof *d);
	if (!d)
		return -1;
	fputs("<h2>Over time</h2>\n", out);
	bool opened = false;
	char lname[6][96];
	for (size_t c = 0; c < sizeof series_specs / sizeof series_specs[0]; c++) {
		const struct series_spec *sp = &series_specs[c];
		struct svg_line lines[6];
		size_t nl = 0;
		bool known = false;
		bool cache = false;
		for (size_t r = 0; r < nruns; r++)
			cache |= snapshot_has_cache(runs[r]);
		/* A server that says 0 cached tokens for every request of a
		 * run without shared prefixes draws no flat 0% line. */
		if (sp->cache && !cache)
			continue;
		for (size_t r = 0; r < nruns; r++)
			for (int k = 0; k < 3 && sp->key[k] && nl < 6; k++) {
				series_reduce(runs[r]->series, sp->key[k], sp->scale, &d[nl]);
				known |= series_known(&d[nl]);
				/* A merge's series says how it combined its
				 * inputs: the legend says what the line is. */
				const char *how = merge_how(runs[r]->series, sp->key[k]);
				char nm[64];
				if (strcmp(how, "max") == 0)
					snprintf(nm, sizeof nm, "max of inputs' %s", sp->name[k]);
				else if (*how)
					snprintf(nm, sizeof nm, "%s (%s of inputs)", sp->name[k], how);
				else
					snprintf(nm, sizeof nm, "%s", sp->name[k]);
				if (nruns > 1)
					snprintf(lname[nl], sizeof lname[nl], "%s %s", names[r], nm);
				else
					snprintf(lname[nl], sizeof lname[nl], "%s", nm);
				lines[nl] = (struct svg_line){ lname[nl], d[nl].p, d[nl].n, true, false };
				nl++;
			}
		/* A series with no point (the server's when it was not
		 * scraped, any in a run under a second) is left out. */
		if (!known)
			continue;
		if (!opened)
			fputs("<div class=\"grid\">\n", out);
		opened = true;
		/* A one-line chart has no legend: its title says it. */
		char title[160];
		const char *how = "";
		for (int k = 0; nruns == 1 && !*how && k < 3 && sp->key[k]; k++)
			how = merge_how(runs[0]->series, sp->key[k]);
		if (strcmp(how, "max") == 0)
			snprintf(title, sizeof title, "%s: max of the inputs' (an upper bound)", sp->title);
		else if (*how && !sp->key[1])
			snprintf(title, sizeof title, "%s: %s of the inputs", sp->title, how);
		else
			snprintf(title, sizeof title, "%s", sp->title);
		struct svg_chart ch = { title, NULL, sp->unit, SVG_X_TIME, 0 };
		svg_line_chart(out, &ch, lines, nl, mk ? mk->m : NULL, mk ? mk->n : 0);
	}
	if (opened) {
		fputs("</div>\n<p class=\"note\">Each line is the mean over its slice of time; the shaded band spans "
		      "the slice's minimum to maximum. Dashed lines: load changes and plan steps.</p>\n",
		      out);
		bool merged = false;
		for (size_t r = 0; r < nruns; r++)
			merged |= cJSON_GetObjectItemCaseSensitive(runs[r]->series, "merge") != NULL;
		if (merged)
			fputs("<p class=\"note\">A merge's series: the inputs' windows of the wall clock added up. "
			      "Rates, in-flight requests and targets are summed. The series keeps no histograms, so "
			      "a latency percentile per window is the <em>max of the inputs' percentiles</em>: an "
			      "upper bound of the merged one, not the merged one. The server's figures are the mean "
			      "of the inputs' scrapes when they loaded one target, else running, waiting and GPU "
			      "power are summed.</p>\n",
			      out);
	}
	else
		fputs("<p class=\"note\">No time series: the run was shorter than its first second.</p>\n", out);
	free(d);
	return 0;
}

/* ---- distributions ---- */

#define NBINS 48

/* h's samples in NBINS bins of equal width on a log axis, in ms. */
/* h's samples in NBINS bins of equal width on a log axis from lo_us to
 * hi_us (their min and max when 0), in ms. */
static size_t hist_bins_in(const struct hist *h, double lo, double hi, struct svg_bin *bins)
{
	uint64_t n = hist_count(h);
	if (!n)
		return 0;
	if (!(lo > 0))
		lo = (double)hist_min(h);
	if (!(hi > 0))
		hi = (double)hist_max(h);
	if (lo < 1)
		lo = 1;
	if (hi <= lo)
		hi = lo * 1.1 + 1;
	lo *= 0.999;
	int64_t le[NBINS + 1];
	uint64_t cum[NBINS + 1];
	double r = pow(hi / lo, 1.0 / NBINS);
	for (int i = 0; i <= NBINS; i++)
		le[i] = i == NBINS ? (int64_t)hi : (int64_t)floor(lo * pow(r, i));
	for (int i = 1; i <= NBINS; i++)
		if (le[i] <= le[i - 1])
			le[i] = le[i - 1] + 1;
	hist_cumulative(h, le, NBINS + 1, cum);
	size_t k = 0;
	for (int i = 0; i < NBINS; i++) {
		uint64_t c = cum[i + 1] - cum[i];
		/* A sample at or below the first bound joins the first bin,
		 * what the bounds' rounding left above the last the last. */
		if (i == 0)
			c += cum[0];
		if (i == NBINS - 1)
			c += n - cum[NBINS];
		bins[k++] = (struct svg_bin){ (double)le[i] / 1000.0, (double)le[i + 1] / 1000.0, c };
	}
	return k;
}

static size_t hist_bins(const struct hist *h, struct svg_bin *bins)
{
	return hist_bins_in(h, 0, 0, bins);
}

static void dist_chart(FILE *out, const struct hist *h, const char *title, const char *unit)
{
	struct svg_bin bins[NBINS];
	size_t nb = hist_bins(h, bins);
	struct result_mstat st;
	result_mstat_of(h, &st);
	/* v[]: mean std min p50 p90 p95 p99 p99.9 max */
	struct svg_mark m[3] = {
		{ st.v[3], "p50", st.v[3] },
		{ st.v[4], "p90", st.v[4] },
		{ st.v[6], "p99", st.v[6] },
	};
	struct svg_chart ch = { title, unit, "requests", SVG_X_LOG, 0 };
	svg_hist_chart(out, &ch, bins, nb, m, 3);
}

static void dist_section(FILE *out, const struct snapshot *s)
{
	fputs("<h2>Distributions, whole run</h2>\n<div class=\"grid\">\n", out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		if (!s->run[m] || !hist_count(s->run[m]))
			continue;
		char title[64];
		snprintf(title, sizeof title, "%s (ms, log scale)", stats_metric_name((enum stat_metric)m));
		fprintf(out, "<div data-metric=\"%s\">", stats_metric_name((enum stat_metric)m));
		dist_chart(out, s->run[m], title, "ms");
		fputs("</div>\n", out);
	}
	fputs("</div>\n", out);
}

/* The server's latency as its histograms' buckets say it: the bucket
 * each percentile falls in (the file keeps the bucket, not the counts),
 * never a quantile interpolated inside a bucket as if it were measured. */
static void bucket_cell(FILE *out, const cJSON *m, const char *key)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, key);
	const cJSON *lo = cJSON_GetArrayItem(b, 0), *hi = cJSON_GetArrayItem(b, 1);
	if (isfinite(jnum(lo)) && isfinite(jnum(hi)))
		fprintf(out, "<td>%g &ndash; %g</td>", jnum(lo), jnum(hi));
	else
		fputs("<td>-</td>", out);
}

/* The server's gauges over the run (min, mean, max of the scrapes): the
 * figures behind its charts, readable without them. */
static void server_gauges(FILE *out, const struct snapshot *s)
{
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(s->server, "run");
	if (!cJSON_IsObject(run) || !run->child)
		return;
	fputs("<h2>Server gauges over the run</h2>\n<div class=\"tw\"><table><thead><tr><th>gauge</th><th>min</th>"
	      "<th>mean</th><th>max</th><th>scrapes</th></tr></thead><tbody>\n",
	      out);
	const cJSON *g;
	cJSON_ArrayForEach(g, run)
	{
		if (!cJSON_IsObject(g))
			continue;
		fputs("<tr><td>", out);
		esc(out, g->string);
		fputs("</td>", out);
		static const char *const k[] = { "min", "mean", "max", "samples" };
		for (int i = 0; i < 4; i++) {
			fputs("<td>", out);
			json_cell(out, cJSON_GetObjectItemCaseSensitive(g, k[i]));
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
}

/* The server's histograms over the run as it counted them: one bar a
 * bucket, from the first bucket holding a request to the last (and an
 * empty one either side). */
static void bucket_charts(FILE *out, const cJSON *lat)
{
	bool opened = false;
	const cJSON *it;
	cJSON_ArrayForEach(it, lat)
	{
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "buckets");
		const cJSON *le = cJSON_GetObjectItemCaseSensitive(b, "le_ms");
		const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(b, "count");
		int n = cJSON_GetArraySize(le);
		if (n <= 0 || n > 64 || cJSON_GetArraySize(cnt) != n)
			continue;
		struct svg_bin bins[64];
		int first = -1, last = -1;
		double lo = 0;
		for (int i = 0; i < n; i++) {
			double hi = jnum(cJSON_GetArrayItem(le, i)), c = jnum(cJSON_GetArrayItem(cnt, i));
			/* The last bound is +Inf (null in the file). */
			if (!isfinite(hi))
				hi = INFINITY;
			bins[i] = (struct svg_bin){ lo, hi, isfinite(c) && c > 0 ? (uint64_t)llround(c) : 0 };
			lo = hi;
			if (bins[i].count) {
				first = first < 0 ? i : first;
				last = i;
			}
		}
		if (first < 0)
			continue;
		/* One empty bucket either side, where there is one: the
		 * bounds the requests stayed within. */
		first = first > 0 ? first - 1 : first;
		last = last + 1 < n ? last + 1 : last;
		if (!opened)
			fputs("<h2>Server latency histograms over the run</h2>\n<div class=\"grid\">\n", out);
		opened = true;
		char title[96];
		snprintf(title, sizeof title, "Server %s: requests per bucket", it->string);
		struct svg_chart ch = { title, "ms (the server's bucket bounds)", "requests", SVG_X_LINEAR, 0 };
		fputs("<div data-server-metric=\"", out);
		esc(out, it->string);
		fputs("\">", out);
		svg_bucket_chart(out, &ch, bins + first, (size_t)(last - first + 1));
		fputs("</div>\n", out);
	}
	if (opened)
		fputs("</div>\n<p class=\"note\">Bars of equal width, one a bucket of the server's histogram, its "
		      "increase over the run: the bounds are the server's, nothing is interpolated.</p>\n",
		      out);
}

static void server_buckets(FILE *out, const struct snapshot *s)
{
	const cJSON *lat = cJSON_GetObjectItemCaseSensitive(s->server, "latency_run");
	if (!cJSON_IsObject(lat) || !lat->child)
		lat = cJSON_GetObjectItemCaseSensitive(s->server, "latency_window");
	if (!cJSON_IsObject(lat) || !lat->child)
		return;
	fputs("<h2>Server latency, by its histogram buckets</h2>\n<div class=\"tw\"><table><thead><tr>"
	      "<th>metric</th><th>p50 in (ms)</th><th>p90 in (ms)</th><th>p99 in (ms)</th></tr></thead><tbody>\n",
	      out);
	const cJSON *it;
	cJSON_ArrayForEach(it, lat)
	{
		fputs("<tr><td>", out);
		esc(out, it->string);
		fputs("</td>", out);
		bucket_cell(out, it, "p50_bucket_ms");
		bucket_cell(out, it, "p90_bucket_ms");
		bucket_cell(out, it, "p99_bucket_ms");
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n<p class=\"note\">The server exposes bucket counts only: a percentile is "
	      "known to lie within its bucket.</p>\n",
	      out);
	bucket_charts(out, cJSON_GetObjectItemCaseSensitive(s->server, "latency_run"));
}

/* The replicas' own series (server.replicas[i].series): one small chart
 * a metric, one line a replica, named by its row of the table. */
static int replica_charts(FILE *out, const cJSON *reps, const struct marks *mk)
{
	static const struct {
		const char *title, *unit, *key;
		double scale;
	} charts[] = {
		{ "Replicas: running requests", "requests", "running", 1 },
		{ "Replicas: KV cache usage", "%", "kv_usage", 100 },
		{ "Replicas: generated tokens per second", "tok/s", "generation_tok_s", 1 },
	};
	int n = cJSON_GetArraySize(reps);
	if (n > SERIES_SUBS_MAX)
		n = SERIES_SUBS_MAX;
	bool any = false;
	for (int i = 0; i < n; i++)
		any |= cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(reps, i), "series"));
	if (!any)
		return 0;
	struct drawn_series *d = malloc((size_t)n * sizeof *d);
	if (!d)
		return -1;
	struct svg_line lines[SERIES_SUBS_MAX];
	char lname[SERIES_SUBS_MAX][24];
	bool opened = false;
	for (size_t c = 0; c < sizeof charts / sizeof charts[0]; c++) {
		size_t nl = 0;
		bool known = false;
		for (int i = 0; i < n; i++) {
			const cJSON *ser = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(reps, i), "series");
			if (!ser)
				continue;
			series_reduce(ser, charts[c].key, charts[c].scale, &d[nl]);
			known |= series_known(&d[nl]);
			snprintf(lname[nl], sizeof lname[nl], "replica %d", i + 1);
			lines[nl] = (struct svg_line){ lname[nl], d[nl].p, d[nl].n, false, false };
			nl++;
		}
		if (!known)
			continue;
		if (!opened)
			fputs("<div class=\"grid\" data-charts=\"replicas\">\n", out);
		opened = true;
		struct svg_chart ch = { charts[c].title, NULL, charts[c].unit, SVG_X_TIME, 0 };
		svg_line_chart(out, &ch, lines, nl, mk ? mk->m : NULL, mk ? mk->n : 0);
	}
	if (opened)
		fputs("</div>\n<p class=\"note\">Each replica's own scrapes, one point a second (its generated tokens "
		      "per second: the counter's increase between its last two scrapes). A gap: the replica was down "
		      "or not yet found.</p>\n",
		      out);
	free(d);
	return 0;
}

/* The server's replicas (2+ --metrics-url): each one's own latest gauges,
 * what it generated over the run and its share of the tokens, and their
 * series. */
static int replicas_section(FILE *out, const struct snapshot *s, const struct marks *mk)
{
	const cJSON *reps = cJSON_GetObjectItemCaseSensitive(s->server, "replicas");
	if (cJSON_GetArraySize(reps) < 2)
		return 0;
	double total = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, reps)
	{
		double g = jnum(cJSON_GetObjectItemCaseSensitive(r, "generation_tokens"));
		if (isfinite(g))
			total += g;
	}
	fprintf(out, "<h2>Server replicas</h2>\n<p class=\"note\">%g of %d replicas read at the end.</p>\n",
		jnum(cJSON_GetObjectItemCaseSensitive(s->server, "replicas_read")), cJSON_GetArraySize(reps));
	fputs("<div class=\"tw\"><table data-table=\"replicas\"><thead><tr><th>#</th><th>metrics URL</th>"
	      "<th>status</th><th>running</th><th>waiting</th><th>KV usage %</th><th>generated tokens</th>"
	      "<th>share of tokens %</th></tr></thead><tbody>\n",
	      out);
	int i = 0;
	cJSON_ArrayForEach(r, reps)
	{
		fprintf(out, "<tr><td>%d</td><td class=\"t\">", ++i);
		json_cell(out, cJSON_GetObjectItemCaseSensitive(r, "url"));
		fputs("</td><td class=\"t\">", out);
		json_cell(out, cJSON_GetObjectItemCaseSensitive(r, "status"));
		const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
		if (cJSON_IsString(err) && err->valuestring[0]) {
			fputs(" (", out);
			esc(out, err->valuestring);
			fputs(")", out);
		}
		fputs("</td>", out);
		static const char *const k[] = { "running", "waiting" };
		for (int j = 0; j < 2; j++) {
			fputs("<td>", out);
			json_cell(out, cJSON_GetObjectItemCaseSensitive(r, k[j]));
			fputs("</td>", out);
		}
		double kv = jnum(cJSON_GetObjectItemCaseSensitive(r, "kv_usage"));
		double g = jnum(cJSON_GetObjectItemCaseSensitive(r, "generation_tokens"));
		if (isfinite(kv))
			fprintf(out, "<td>%.1f</td>", 100 * kv);
		else
			fputs("<td>-</td>", out);
		if (isfinite(g))
			fprintf(out, "<td>%.0f</td>", g);
		else
			fputs("<td>-</td>", out);
		if (isfinite(g) && total > 0)
			fprintf(out, "<td>%.1f</td></tr>\n", 100 * g / total);
		else
			fputs("<td>-</td></tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
	return replica_charts(out, reps, mk);
}

/* ---- sweeps and matrices ---- */

/* The knee: the first step after which throughput grows by under 5% while
 * TTFT p99 grows by more than half: past it, more load buys waiting. -1
 * when none. */
static long knee_of(const struct snapshot_step *st, const size_t *idx, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		const struct snapshot_step *a = &st[idx[i]], *b = &st[idx[i + 1]];
		if (a->output_throughput > 0 && b->output_throughput < a->output_throughput * 1.05 &&
		    a->ttft.p99_ms > 0 && b->ttft.p99_ms > a->ttft.p99_ms * 1.5)
			return (long)idx[i];
	}
	return -1;
}

static void sweep_chart(FILE *out, const struct snapshot *s, const size_t *idx, size_t n, const char *title,
			int which)
{
	struct svg_point p[2][64];
	size_t k = 0;
	for (size_t i = 0; i < n && k < 64; i++) {
		const struct snapshot_step *st = &s->plan.steps[idx[i]];
		const struct snapshot_metric *m = which == 0 ? &st->ttft : which == 1 ? &st->tpot : &st->e2e;
		double x = st->output_throughput;
		p[0][k] = (struct svg_point){ x, m->p50_ms, NAN, NAN };
		p[1][k] = (struct svg_point){ x, m->p99_ms, NAN, NAN };
		k++;
	}
	/* Throughput may fall past saturation: the points stay in step order. */
	struct svg_line l[2] = { { "p50", p[0], k, false, true }, { "p99", p[1], k, false, true } };
	long knee = knee_of(s->plan.steps, idx, n);
	char kl[64];
	struct svg_mark m = { 0, kl, NAN };
	if (knee >= 0) {
		snprintf(kl, sizeof kl, "knee: %s", s->plan.steps[knee].label);
		m.x = s->plan.steps[knee].output_throughput;
	}
	struct svg_chart ch = { title, "achieved output tok/s", "ms", SVG_X_LINEAR, 0 };
	svg_line_chart(out, &ch, l, 2, &m, knee >= 0 ? 1 : 0);
}

static void steps_table(FILE *out, const struct snapshot *s)
{
	const struct snapshot_plan *p = &s->plan;
	fputs("<div class=\"tw\"><table><thead><tr><th>step</th><th>scenario</th><th>target</th><th>completed</th>"
	      "<th>failed</th><th>req/s</th><th>out tok/s</th>",
	      out);
	if (p->have_slo)
		fputs("<th>goodput req/s</th>", out);
	fputs("<th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>E2E p50</th><th>E2E p99</th>"
	      "</tr></thead><tbody>\n",
	      out);
	for (size_t i = 0; i < p->nsteps; i++) {
		const struct snapshot_step *st = &p->steps[i];
		fputs("<tr><td class=\"t\">", out);
		esc(out, st->label);
		fputs("</td><td class=\"t\">", out);
		esc(out, st->scenario[0] ? st->scenario : "-");
		fprintf(out, "</td><td>%g%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%.2f</td><td>%.1f</td>",
			st->target, st->open_loop ? " req/s" : "", st->completed, st->failed, st->request_throughput,
			st->output_throughput);
		if (p->have_slo)
			fprintf(out, "<td>%.2f</td>", st->request_goodput);
		fprintf(out, "<td>%.1f</td><td>%.1f</td><td>%.2f</td><td>%.2f</td><td>%.1f</td><td>%.1f</td></tr>\n",
			st->ttft.p50_ms, st->ttft.p99_ms, st->tpot.p50_ms, st->tpot.p99_ms, st->e2e.p50_ms,
			st->e2e.p99_ms);
	}
	fputs("</tbody></table></div>\n", out);
}

static int sweep_section(FILE *out, const struct snapshot *s)
{
	const struct snapshot_plan *p = &s->plan;
	if (p->nsteps < 2)
		return 0;
	size_t *idx = malloc(p->nsteps * sizeof *idx);
	if (!idx)
		return -1;
	fputs("<h2>Latency against throughput, one point per step</h2>\n<div class=\"grid\">\n", out);
	/* A matrix: one small chart per scenario; else the three latencies. */
	bool matrix = p->nmatrix > 1;
	size_t groups = matrix ? p->nmatrix : 1;
	for (size_t g = 0; g < groups; g++) {
		size_t n = 0;
		for (size_t i = 0; i < p->nsteps; i++)
			if (!matrix || strcmp(p->steps[i].scenario, p->matrix[g]) == 0)
				idx[n++] = i;
		if (!n)
			continue;
		char title[96];
		if (matrix) {
			snprintf(title, sizeof title, "%s: TTFT", p->matrix[g]);
			sweep_chart(out, s, idx, n, title, 0);
			continue;
		}
		sweep_chart(out, s, idx, n, "TTFT", 0);
		sweep_chart(out, s, idx, n, "TPOT", 1);
		sweep_chart(out, s, idx, n, "E2E latency", 2);
		if (p->have_slo) {
			struct svg_point gp[2][64];
			size_t k = 0;
			for (size_t i = 0; i < n && k < 64; i++, k++) {
				const struct snapshot_step *st = &p->steps[idx[i]];
				gp[0][k] = (struct svg_point){ st->request_throughput, st->request_goodput, NAN, NAN };
				gp[1][k] = (struct svg_point){ st->request_throughput, st->request_throughput, NAN, NAN };
			}
			struct svg_line l[2] = { { "goodput", gp[0], k, false, true },
						 { "throughput", gp[1], k, false, true } };
			struct svg_chart ch = { "Goodput (requests meeting every SLO)", "achieved req/s", "req/s",
						SVG_X_LINEAR, 0 };
			svg_line_chart(out, &ch, l, 2, NULL, 0);
		}
	}
	free(idx);
	fputs("</div>\n<p class=\"note\">Knee: the first step after which output throughput grows by under 5% while "
	      "TTFT p99 grows by over 50%.</p>\n",
	      out);
	steps_table(out, s);
	return 0;
}

/* ---- sessions, cache, merged inputs ---- */

static void sessions_section(FILE *out, const struct snapshot *s)
{
	if (snapshot_has_cache(s)) {
		const struct stats_counters *c = &s->run_c;
		fputs("<h2>Prefix cache</h2>\n<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
		kv_u64(out, "Requests reporting cached tokens", c->cache_known);
		kv_u64(out, "Prompt tokens (reporting requests)", c->prompt_known);
		kv_u64(out, "Cached prompt tokens", c->prompt_cached);
		kv_num(out, "Cache hit rate (%)", "%.2f", 100.0 * stats_cache_hit_rate(c));
		const struct hist *w = snapshot_xhist(s, XH_TTFT_WARM), *k = snapshot_xhist(s, XH_TTFT_COLD);
		if (w)
			kv_num(out, "TTFT p50, mostly cached (ms)", "%.2f", (double)hist_percentile(w, 50) / 1000.0);
		if (k)
			kv_num(out, "TTFT p50, cold (ms)", "%.2f", (double)hist_percentile(k, 50) / 1000.0);
		fputs("</tbody></table></div>\n", out);
	}
	if (!snapshot_has_sessions(s))
		return;
	fputs("<h2>Sessions</h2>\n<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
	kv_u64(out, "Sessions ended", s->sessions_done);
	kv_u64(out, "Sessions with a failed turn", s->sessions_failed);
	kv_u64(out, "Sessions ended at the context limit", s->sessions_context);
	kv_u64(out, "Sessions cut by the run's end", s->sessions_incomplete);
	kv_u64(out, "Turns completed", s->session_turns);
	fputs("</tbody></table></div>\n", out);
	struct svg_point p[2][STATS_TURNS];
	size_t n = 0;
	fputs("<div class=\"tw\"><table><thead><tr><th>turn</th><th>requests</th><th>TTFT p50 ms</th>"
	      "<th>TTFT p99 ms</th></tr></thead><tbody>\n",
	      out);
	for (int i = 0; i < STATS_TURNS; i++) {
		const struct hist *t = snapshot_xhist(s, (enum stats_xhist)(XH_TURN_TTFT + i));
		if (!t)
			continue;
		double p50 = (double)hist_percentile(t, 50) / 1000.0, p99 = (double)hist_percentile(t, 99) / 1000.0;
		p[0][n] = (struct svg_point){ i + 1, p50, NAN, NAN };
		p[1][n] = (struct svg_point){ i + 1, p99, NAN, NAN };
		n++;
		fprintf(out, "<tr><td>%s</td><td>%" PRIu64 "</td><td>%.2f</td><td>%.2f</td></tr>\n",
			stats_turn_label(i), hist_count(t), p50, p99);
	}
	fputs("</tbody></table></div>\n", out);
	struct svg_line l[2] = { { "p50", p[0], n, false, true }, { "p99", p[1], n, false, true } };
	struct svg_chart ch = { "TTFT by turn of the session", "turn (the last: that turn and later)", "ms",
				SVG_X_LINEAR, 0 };
	fputs("<div class=\"grid\">", out);
	svg_line_chart(out, &ch, l, 2, NULL, 0);
	fputs("</div>\n", out);
}

static void inputs_section(FILE *out, const struct snapshot *s)
{
	if (s->fleet) {
		fputs("<h2>Fleet</h2>\n", out);
		const cJSON *ld = cJSON_GetObjectItemCaseSensitive(s->fleet, "load");
		fputs("<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
		const cJSON *k;
		cJSON_ArrayForEach(k, s->fleet)
		{
			if (cJSON_IsObject(k) || cJSON_IsArray(k))
				continue;
			fputs("<tr><td>", out);
			esc(out, k->string);
			fputs("</td><td class=\"t\">", out);
			json_cell(out, k);
			fputs("</td></tr>\n", out);
		}
		cJSON_ArrayForEach(k, ld)
		{
			fputs("<tr><td>load ", out);
			esc(out, k->string);
			fputs("</td><td class=\"t\">", out);
			json_cell(out, k);
			fputs("</td></tr>\n", out);
		}
		fputs("</tbody></table></div>\n", out);
		json_rows(out, cJSON_GetObjectItemCaseSensitive(s->fleet, "generators_lost"), "Generators lost");
	}
	if (cJSON_GetArraySize(s->sources) > 0) {
		fputs("<h2>Merged inputs (one row per generator or run)</h2>\n", out);
		json_rows(out, s->sources, "The runs this result adds up");
	}
	if (s->trace) {
		fputs("<h2>Trace replay</h2>\n", out);
		json_kv(out, s->trace);
	}
}

static void options_section(FILE *out, const struct snapshot *s)
{
	if (!cJSON_IsObject(s->options))
		return;
	/* A merge's: those its inputs share, then those they do not, with
	 * each input's value. */
	bool merged = s->options_differ != NULL;
	fprintf(out, "<h2>Options</h2>\n<details><summary>%s</summary>\n",
		merged ? "every option the merged runs share" : "every option of the run");
	json_kv(out, s->options);
	fputs("</details>\n", out);
	if (merged && s->options_differ->child) {
		fputs("<details><summary>options that differ between the merged runs (each input's value, in the "
		      "order of the inputs)</summary>\n",
		      out);
		json_kv(out, s->options_differ);
		fputs("</details>\n", out);
	}
}

int result_html_report(FILE *out, const char *file, const struct snapshot *s)
{
	char title[1200];
	snprintf(title, sizeof title, "infertop report: %s", file ? file : "run");
	page_open(out, title);
	header(out, s);
	summary(out, s);
	errors_table(out, s);
	fputs("<h2>Latency</h2>\n", out);
	latency_table(out, s->run, "whole run");
	struct marks *mk = malloc(sizeof *mk);
	if (!mk)
		return -1;
	marks_of(s, mk);
	const struct snapshot *runs[1] = { s };
	const char *names[1] = { "" };
	int rc = series_section(out, runs, names, 1, mk);
	if (rc == 0) {
		dist_section(out, s);
		server_gauges(out, s);
		server_buckets(out, s);
		rc = replicas_section(out, s, mk);
	}
	free(mk);
	if (rc != 0)
		return -1;
	if (sweep_section(out, s) != 0)
		return -1;
	sessions_section(out, s);
	inputs_section(out, s);
	options_section(out, s);
	return page_close(out);
}

/* ---- compare ---- */

/* Each metric of A and B on one log axis, as the share of each run's
 * requests per bin (runs of different sizes compare), with both p99s. */
static void compare_dists(FILE *out, const struct snapshot *const *runs)
{
	fputs("<h2>Distributions, A against B</h2>\n<div class=\"grid\">\n", out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		const struct hist *h[2] = { runs[0]->run[m], runs[1]->run[m] };
		if (!h[0] || !h[1] || !hist_count(h[0]) || !hist_count(h[1]))
			continue;
		double lo = fmin((double)hist_min(h[0]), (double)hist_min(h[1]));
		double hi = fmax((double)hist_max(h[0]), (double)hist_max(h[1]));
		struct svg_bin bins[NBINS];
		struct svg_point p[2][NBINS];
		struct svg_mark mk[2];
		char lab[2][16];
		size_t n = 0;
		for (int r = 0; r < 2; r++) {
			n = hist_bins_in(h[r], lo, hi, bins);
			double total = (double)hist_count(h[r]);
			for (size_t i = 0; i < n; i++)
				p[r][i] = (struct svg_point){ sqrt(bins[i].lo * bins[i].hi),
							      100.0 * (double)bins[i].count / total, NAN, NAN };
			double p99 = (double)hist_percentile(h[r], 99) / 1000.0;
			snprintf(lab[r], sizeof lab[r], "%s p99", r ? "B" : "A");
			mk[r] = (struct svg_mark){ p99, lab[r], p99 };
		}
		struct svg_line l[2] = { { "A", p[0], n, false, false }, { "B", p[1], n, false, false } };
		char title[64];
		snprintf(title, sizeof title, "%s (ms, log scale)", stats_metric_name((enum stat_metric)m));
		struct svg_chart ch = { title, "ms", "% of requests", SVG_X_LOG, 0 };
		fprintf(out, "<div data-metric=\"%s\">", stats_metric_name((enum stat_metric)m));
		svg_line_chart(out, &ch, l, 2, mk, 2);
		fputs("</div>\n", out);
	}
	fputs("</div>\n", out);
}

/* Two sweeps: TTFT and E2E p99 against achieved throughput, A and B. */
static void compare_sweeps(FILE *out, const struct snapshot *const *runs)
{
	if (runs[0]->plan.nsteps < 2 || runs[1]->plan.nsteps < 2)
		return;
	fputs("<h2>Sweeps, A against B</h2>\n<div class=\"grid\">\n", out);
	for (int which = 0; which < 2; which++) {
		struct svg_point p[2][64];
		size_t n[2] = { 0, 0 };
		for (int r = 0; r < 2; r++)
			for (size_t i = 0; i < runs[r]->plan.nsteps && n[r] < 64; i++) {
				const struct snapshot_step *st = &runs[r]->plan.steps[i];
				double y = which == 0 ? st->ttft.p99_ms : st->e2e.p99_ms;
				p[r][n[r]++] = (struct svg_point){ st->output_throughput, y, NAN, NAN };
			}
		struct svg_line l[2] = { { "A", p[0], n[0], false, true }, { "B", p[1], n[1], false, true } };
		struct svg_chart ch = { which == 0 ? "TTFT p99 against throughput" : "E2E p99 against throughput",
					"achieved output tok/s", "ms", SVG_X_LINEAR, 0 };
		svg_line_chart(out, &ch, l, 2, NULL, 0);
	}
	fputs("</div>\n", out);
}

int result_html_compare(FILE *out, const struct result_compare *c)
{
	char title[2200];
	snprintf(title, sizeof title, "infertop compare: %s vs %s", c->file_a, c->file_b);
	page_open(out, title);
	fputs("<div class=\"tw\"><table class=\"kv\"><tbody>\n", out);
	kv_text(out, "A", c->file_a);
	kv_text(out, "B", c->file_b);
	if (c->a && c->b) {
		kv_text(out, "A model", c->a->model);
		kv_text(out, "B model", c->b->model);
	}
	fputs("</tbody></table></div>\n", out);
	if (cJSON_GetArraySize(c->options_diff) > 0) {
		fputs("<h2>Options that differ</h2>\n<div class=\"tw\"><table><thead><tr><th>option</th><th>A</th>"
		      "<th>B</th></tr></thead><tbody>\n",
		      out);
		const cJSON *it;
		cJSON_ArrayForEach(it, c->options_diff)
		{
			fputs("<tr><td>", out);
			esc(out, it->string);
			fputs("</td><td class=\"t\">", out);
			json_cell(out, cJSON_GetObjectItemCaseSensitive(it, "a"));
			fputs("</td><td class=\"t\">", out);
			json_cell(out, cJSON_GetObjectItemCaseSensitive(it, "b"));
			fputs("</td></tr>\n", out);
		}
		fputs("</tbody></table></div>\n", out);
	}
	fputs("<h2>Figures, B against A</h2>\n<div class=\"tw\"><table><thead><tr><th>figure</th><th>unit</th>"
	      "<th>A</th><th>B</th><th>B - A</th><th>change</th><th>verdict</th><th>key</th></tr></thead><tbody>\n",
	      out);
	for (int i = 0; i < c->n; i++) {
		const struct result_crow *r = &c->rows[i];
		char pct[32];
		result_text_pct(pct, sizeof pct, result_crow_delta_pct(r));
		const char *v = result_crow_verdict(r);
		fputs("<tr><td>", out);
		esc(out, r->name);
		fputs("</td><td>", out);
		esc(out, r->unit);
		fprintf(out, "</td><td>%.*f</td><td>%.*f</td><td>%+.*f</td><td>%s</td><td class=\"%s\">%s</td><td class=\"t\">",
			r->prec, r->a, r->prec, r->b, r->prec, r->b - r->a, pct, v, v);
		esc(out, r->key);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
	if (c->a && c->b) {
		const struct snapshot *runs[2] = { c->a, c->b };
		const char *names[2] = { "A", "B" };
		if (series_section(out, runs, names, 2, NULL) != 0)
			return -1;
		compare_dists(out, runs);
		compare_sweeps(out, runs);
	}
	return page_close(out);
}
