#include "config.h"

/* infertop report | merge | compare: the subcommands on saved snapshots. */

#include "infertop/tools.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/hist.h"
#include "infertop/snapshot.h"
#include "infertop/units.h"

enum fmt { FMT_TEXT, FMT_JSON, FMT_CSV, FMT_MARKDOWN };

static const char usage_report[] =
	"Usage: infertop report FILE.json [--format text|json|csv|markdown]\n"
	"Show a saved snapshot or result: the vLLM-style summary, latency tables for\n"
	"the whole run and the sliding window, throughput, errors, server metrics.\n"
	"\n"
	"  -f, --format FMT   text (default), json, csv (the latency table, one row\n"
	"                     per scope and metric) or markdown\n"
	"  -h, --help         show this help\n";

static const char usage_merge[] =
	"Usage: infertop merge A.json B.json ... -o OUT.json\n"
	"Merge runs made side by side (several infertop processes or machines) into\n"
	"one snapshot: histograms added exactly, counters summed, load targets\n"
	"summed, throughput over the union of time (earliest start to latest end).\n"
	"\n"
	"  -o, --output FILE  where the merged snapshot goes (written atomically)\n"
	"  -h, --help         show this help\n";

static const char usage_compare[] =
	"Usage: infertop compare A.json B.json [--format text|json|csv|markdown]\n"
	"Side-by-side table of two runs with deltas (B - A, and in percent of A):\n"
	"throughput, errors, and mean/p50/p90/p99/p99.9 of every latency metric.\n"
	"\n"
	"  -f, --format FMT   text (default), json, csv or markdown\n"
	"  -h, --help         show this help\n";

bool tools_is_command(const char *name)
{
	return name && (strcmp(name, "report") == 0 || strcmp(name, "merge") == 0 || strcmp(name, "compare") == 0);
}

void tools_usage(FILE *out, const char *cmd)
{
	if (!cmd || strcmp(cmd, "report") == 0)
		fputs(usage_report, out);
	if (!cmd)
		fputc('\n', out);
	if (!cmd || strcmp(cmd, "merge") == 0)
		fputs(usage_merge, out);
	if (!cmd)
		fputc('\n', out);
	if (!cmd || strcmp(cmd, "compare") == 0)
		fputs(usage_compare, out);
}

static int parse_format(const char *s, enum fmt *f)
{
	static const char *const names[] = {"text", "json", "csv", "markdown"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(s, names[i]) == 0) {
			*f = (enum fmt)i;
			return 0;
		}
	}
	if (strcmp(s, "md") == 0) {
		*f = FMT_MARKDOWN;
		return 0;
	}
	return -1;
}

/* ---- figures of one histogram ---- */

struct mstat {
	uint64_t count;
	double v[10]; /* ms: mean std min p50 p90 p95 p99 p99.9 max */
};

static const char *const mstat_keys[] = {"mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms",
					 "p95_ms", "p99_ms", "p99_9_ms", "max_ms"};
static const char *const mstat_heads[] = {"mean", "std", "min", "p50", "p90", "p95", "p99", "p99.9", "max"};
#define NSTAT 9

static void mstat_of(const struct hist *h, struct mstat *m)
{
	static const double ps[] = {50, 90, 95, 99, 99.9};
	m->count = hist_count(h);
	m->v[0] = hist_mean(h) / 1000.0;
	m->v[1] = hist_stddev(h) / 1000.0;
	m->v[2] = (double)hist_min(h) / 1000.0;
	for (int i = 0; i < 5; i++)
		m->v[3 + i] = (double)hist_percentile(h, ps[i]) / 1000.0;
	m->v[8] = (double)hist_max(h) / 1000.0;
}

/* ---- report ---- */

static void utc(char *buf, size_t cap, double unix_s)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	if (unix_s <= 0 || !gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, cap, "-");
}

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

static void load_text(char *buf, size_t cap, const struct snapshot *s)
{
	if (s->open_loop && s->max_concurrency > 0)
		snprintf(buf, cap, "rate %.4g req/s, cap %.0f in flight", s->rate, s->max_concurrency);
	else if (s->open_loop)
		snprintf(buf, cap, "rate %.4g req/s", s->rate);
	else
		snprintf(buf, cap, "concurrency %.0f", s->concurrency);
}

static void latency_text(FILE *out, struct hist *const *h, const char *title)
{
	fprintf(out, "%s\n%-20s %10s", title, "metric (ms)", "count");
	for (int i = 0; i < NSTAT; i++)
		fprintf(out, " %9s", mstat_heads[i]);
	fputc('\n', out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct mstat st;
		mstat_of(h[m], &st);
		fprintf(out, "%-20s %10" PRIu64, stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < NSTAT; i++)
			fprintf(out, " %9.2f", st.v[i]);
		fputc('\n', out);
	}
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The server gauges the summary's "Server metrics" block leaves out (it
 * has running, waiting and KV usage): each figure is printed once. */
static void server_text(FILE *out, const cJSON *srv)
{
	if (!srv)
		return;
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(srv, "status");
	const cJSON *latest = cJSON_GetObjectItemCaseSensitive(srv, "latest");
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(srv, "run");
	const cJSON *g;
	fprintf(out, "\nMore server gauges (scraping %s):\n", cJSON_IsString(status) ? status->valuestring : "-");
	fprintf(out, "  %-22s %12s %12s %12s %12s\n", "gauge", "latest", "run mean", "run min", "run max");
	cJSON_ArrayForEach(g, latest)
	{
		if (strcmp(g->string, "running") == 0 || strcmp(g->string, "waiting") == 0 ||
		    strcmp(g->string, "kv_usage") == 0)
			continue;
		const cJSON *agg = cJSON_GetObjectItemCaseSensitive(run, g->string);
		double v[4] = {cJSON_IsNumber(g) ? g->valuedouble : NAN, jnum(agg, "mean"), jnum(agg, "min"),
			       jnum(agg, "max")};
		fprintf(out, "  %-22s", g->string);
		for (int i = 0; i < 4; i++) {
			if (isnan(v[i]))
				fprintf(out, " %12s", "-");
			else
				fprintf(out, " %12.4g", v[i]);
		}
		fputc('\n', out);
	}
}

static void report_text(FILE *out, const char *file, const struct snapshot *s)
{
	char start[40], taken[40], dur[32], load[96];
	utc(start, sizeof start, s->start_unix);
	utc(taken, sizeof taken, s->taken_unix);
	units_format_duration((int64_t)(s->duration * 1e9), dur, sizeof dur);
	load_text(load, sizeof load, s);
	fprintf(out, "infertop report: %s\n", file);
	fprintf(out, "Run:       started %s on %s, lasted %s, %s (stopped: %s)\n", start, or_dash(s->host), dur,
		or_dash(s->status), or_dash(s->stop_reason));
	fprintf(out, "Target:    %s, model %s, server %s\n", or_dash(s->target_url), or_dash(s->model),
		or_dash(s->server_detected));
	fprintf(out, "Load:      %s%s\n", load, s->paused ? " (paused)" : "");
	fprintf(out, "Snapshot:  %s, taken %s, infertop %s", snapshot_reason_name(s->reason), taken,
		or_dash(s->version));
	if (s->nruns > 1)
		fprintf(out, ", %u runs merged", s->nruns);
	fprintf(out, "\n\n");
	snapshot_print_summary(out, s);
	fputc('\n', out);
	latency_text(out, s->run, "Latency, whole run:");
	char title[96];
	snprintf(title, sizeof title, "Latency, sliding window (last %.1f s):", s->win_seconds);
	fputc('\n', out);
	latency_text(out, s->win, title);
	fprintf(out, "\n%-28s %14s %14s\n", "Throughput", "whole run", "window");
	fprintf(out, "%-28s %14.2f %14.2f\n", "requests/s", snapshot_rate(s->run_c.completed, s->duration),
		snapshot_rate(s->win_c.completed, s->win_seconds));
	fprintf(out, "%-28s %14.2f %14.2f\n", "output tokens/s", snapshot_rate(s->run_c.output_tokens, s->duration),
		snapshot_rate(s->win_c.output_tokens, s->win_seconds));
	fprintf(out, "%-28s %14.2f %14.2f\n", "total tokens/s",
		snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, s->duration),
		snapshot_rate(s->win_c.output_tokens + s->win_c.input_tokens, s->win_seconds));
	if (!isnan(s->max_output_tok_s))
		fprintf(out, "%-28s %14.2f\n", "busiest second, output tok/s", s->max_output_tok_s);
	fprintf(out, "%-28s %14s\n", "goodput", "- (no SLOs given)");
	fprintf(out, "%-28s %14" PRIu64 " (peak %" PRIu64 ", connections opened %" PRIu64 ")\n", "requests started",
		s->started, s->max_in_flight, s->connections);
	if (s->connection_retries)
		fprintf(out, "%-28s %14" PRIu64 " (the server closed a kept-alive connection under them;\n"
			"%-28s %14s  resent once on a fresh one, not failures)\n",
			"connection retries", s->connection_retries, "", "");
	int nchanges = cJSON_GetArraySize(s->load_changes);
	if (nchanges > 0) {
		fprintf(out, "\nLoad changes:\n");
		const cJSON *c;
		cJSON_ArrayForEach(c, s->load_changes)
		{
			const cJSON *mode = cJSON_GetObjectItemCaseSensitive(c, "mode");
			fprintf(out, "  %10.3f s  %s %.4g\n", jnum(c, "t_s"),
				cJSON_IsString(mode) ? mode->valuestring : "?", jnum(c, "value"));
		}
	}
	server_text(out, s->server);
	if (s->request_log) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(s->request_log, "path");
		fprintf(out, "\nRequest log: %s, %.0f records, %.0f dropped\n", cJSON_IsString(p) ? p->valuestring : "-",
			jnum(s->request_log, "records"), jnum(s->request_log, "dropped"));
	}
}

static cJSON *latency_json(struct hist *const *h)
{
	cJSON *o = cJSON_CreateObject();
	for (int m = 0; o && m < STAT_NMETRICS; m++) {
		struct mstat st;
		mstat_of(h[m], &st);
		cJSON *mo = cJSON_AddObjectToObject(o, stats_metric_name((enum stat_metric)m));
		if (!mo)
			break;
		cJSON_AddNumberToObject(mo, "count", (double)st.count);
		for (int i = 0; i < NSTAT; i++)
			cJSON_AddNumberToObject(mo, mstat_keys[i], st.v[i]);
	}
	return o;
}

static cJSON *report_json_doc(const char *file, const struct snapshot *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "file", file);
	cJSON_AddNumberToObject(o, "infertop_schema", s->schema);
	cJSON *run = cJSON_AddObjectToObject(o, "run");
	if (run) {
		cJSON_AddStringToObject(run, "host", s->host);
		cJSON_AddNumberToObject(run, "start_unix", s->start_unix);
		cJSON_AddNumberToObject(run, "duration_s", s->duration);
		cJSON_AddStringToObject(run, "status", s->status);
		cJSON_AddStringToObject(run, "stop_reason", s->stop_reason);
		cJSON_AddStringToObject(run, "target_url", s->target_url);
		cJSON_AddStringToObject(run, "model", s->model);
		cJSON_AddStringToObject(run, "server", s->server_detected);
		cJSON_AddStringToObject(run, "snapshot_reason", snapshot_reason_name(s->reason));
		cJSON_AddNumberToObject(run, "runs", s->nruns);
	}
	cJSON *sum = cJSON_AddObjectToObject(o, "summary");
	if (sum) {
		cJSON_AddNumberToObject(sum, "completed", (double)s->run_c.completed);
		cJSON_AddNumberToObject(sum, "failed", (double)snapshot_failed(s));
		cJSON_AddNumberToObject(sum, "total_input_tokens", (double)s->run_c.input_tokens);
		cJSON_AddNumberToObject(sum, "total_output_tokens", (double)s->run_c.output_tokens);
		cJSON_AddNumberToObject(sum, "duration", s->duration);
	}
	cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
	const struct {
		const char *k;
		const struct stats_counters *c;
		double secs;
	} sc[] = {{"run", &s->run_c, s->duration}, {"window", &s->win_c, s->win_seconds}};
	for (size_t i = 0; tp && i < 2; i++) {
		cJSON *t = cJSON_AddObjectToObject(tp, sc[i].k);
		if (!t)
			break;
		cJSON_AddNumberToObject(t, "seconds", sc[i].secs);
		cJSON_AddNumberToObject(t, "requests_per_s", snapshot_rate(sc[i].c->completed, sc[i].secs));
		cJSON_AddNumberToObject(t, "output_tok_per_s", snapshot_rate(sc[i].c->output_tokens, sc[i].secs));
		cJSON_AddNumberToObject(t, "total_tok_per_s",
					snapshot_rate(sc[i].c->output_tokens + sc[i].c->input_tokens, sc[i].secs));
	}
	cJSON_AddNullToObject(o, "goodput");
	cJSON *lat = cJSON_AddObjectToObject(o, "latency");
	if (lat) {
		cJSON_AddItemToObject(lat, "run", latency_json(s->run));
		cJSON_AddItemToObject(lat, "window", latency_json(s->win));
	}
	cJSON *errs = cJSON_AddObjectToObject(o, "errors");
	for (int k = 0; errs && k < ERR_NKINDS; k++) {
		if (!s->errors[k])
			continue;
		cJSON *eo = cJSON_AddObjectToObject(errs, stats_err_name((enum err_kind)k));
		if (!eo)
			break;
		cJSON_AddNumberToObject(eo, "count", (double)s->errors[k]);
		cJSON_AddStringToObject(eo, "last_message", s->last_msg[k]);
	}
	cJSON_AddItemToObject(o, "server", s->server ? cJSON_Duplicate(s->server, 1) : cJSON_CreateNull());
	return o;
}

static void csv_latency(FILE *out, const char *scope, struct hist *const *h)
{
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct mstat st;
		mstat_of(h[m], &st);
		fprintf(out, "%s,%s,%" PRIu64, scope, stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < NSTAT; i++)
			fprintf(out, ",%.3f", st.v[i]);
		fputc('\n', out);
	}
}

static void report_csv(FILE *out, const struct snapshot *s)
{
	fprintf(out, "scope,metric,count");
	for (int i = 0; i < NSTAT; i++)
		fprintf(out, ",%s", mstat_keys[i]);
	fputc('\n', out);
	csv_latency(out, "run", s->run);
	csv_latency(out, "window", s->win);
}

static void md_latency(FILE *out, struct hist *const *h)
{
	fprintf(out, "| metric (ms) | count |");
	for (int i = 0; i < NSTAT; i++)
		fprintf(out, " %s |", mstat_heads[i]);
	fprintf(out, "\n|---|---:|");
	for (int i = 0; i < NSTAT; i++)
		fprintf(out, "---:|");
	fputc('\n', out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct mstat st;
		mstat_of(h[m], &st);
		fprintf(out, "| %s | %" PRIu64 " |", stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < NSTAT; i++)
			fprintf(out, " %.2f |", st.v[i]);
		fputc('\n', out);
	}
}

/* Markdown cells: a | would end the cell, a newline the table. */
static void md_cell(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
}

static void report_markdown(FILE *out, const char *file, const struct snapshot *s)
{
	char start[40], load[96];
	utc(start, sizeof start, s->start_unix);
	load_text(load, sizeof load, s);
	fprintf(out, "# infertop report: ");
	md_cell(out, file);
	fprintf(out, "\n\n| | |\n|---|---|\n| started | %s |\n| host | ", start);
	md_cell(out, or_dash(s->host));
	fprintf(out, " |\n| target | ");
	md_cell(out, or_dash(s->target_url));
	fprintf(out, " |\n| model | ");
	md_cell(out, or_dash(s->model));
	fprintf(out, " |\n| server | ");
	md_cell(out, or_dash(s->server_detected));
	fprintf(out, " |\n| load | %s |\n| stopped | ", load);
	md_cell(out, or_dash(s->stop_reason));
	fprintf(out, " |\n| runs merged | %u |\n\n", s->nruns);
	fprintf(out, "## Summary\n\n| | |\n|---|---:|\n");
	fprintf(out, "| Successful requests | %" PRIu64 " |\n", s->run_c.completed);
	fprintf(out, "| Failed requests | %" PRIu64 " |\n", snapshot_failed(s));
	fprintf(out, "| Benchmark duration (s) | %.2f |\n", s->duration);
	fprintf(out, "| Total input tokens | %" PRIu64 " |\n", s->run_c.input_tokens);
	fprintf(out, "| Total generated tokens | %" PRIu64 " |\n", s->run_c.output_tokens);
	fprintf(out, "| Request throughput (req/s) | %.2f |\n", snapshot_rate(s->run_c.completed, s->duration));
	fprintf(out, "| Output token throughput (tok/s) | %.2f |\n",
		snapshot_rate(s->run_c.output_tokens, s->duration));
	fprintf(out, "| Total Token throughput (tok/s) | %.2f |\n",
		snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, s->duration));
	fprintf(out, "\n## Latency, whole run\n\n");
	md_latency(out, s->run);
	fprintf(out, "\n## Latency, sliding window (last %.1f s)\n\n", s->win_seconds);
	md_latency(out, s->win);
	if (snapshot_failed(s)) {
		fprintf(out, "\n## Errors\n\n| kind | count | last message |\n|---|---:|---|\n");
		for (int k = 0; k < ERR_NKINDS; k++) {
			if (!s->errors[k])
				continue;
			fprintf(out, "| %s | %" PRIu64 " | ", stats_err_name((enum err_kind)k), s->errors[k]);
			md_cell(out, s->last_msg[k]);
			fprintf(out, " |\n");
		}
	}
}

static int print_json(FILE *out, cJSON *doc)
{
	char *txt = doc ? cJSON_Print(doc) : NULL;
	cJSON_Delete(doc);
	if (!txt) {
		fprintf(stderr, "infertop: out of memory\n");
		return 1;
	}
	fprintf(out, "%s\n", txt);
	free(txt);
	return 0;
}

/* Options anywhere among the files (GNU getopt permutes argv); the files
 * end up in argv[optind..]. Returns -1 to go on, else an exit status. */
static int parse_opts(int argc, char **argv, enum fmt *fmt, const char **output, bool is_merge, char ***files,
		      int *nfiles)
{
	static const struct option report_opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct option merge_opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	optind = 0;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, is_merge ? "o:h" : "f:h", is_merge ? merge_opts : report_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'f':
			if (parse_format(optarg, fmt) != 0) {
				fprintf(stderr, "infertop %s: --format: expected text, json, csv or markdown, not '%s'\n",
					cmd, optarg);
				return 2;
			}
			break;
		case 'o':
			*output = optarg;
			break;
		case 'h':
			tools_usage(stdout, cmd);
			return 0;
		default:
			fprintf(stderr, "infertop %s: unknown option or missing argument: '%s' (see infertop %s --help)\n",
				cmd, argv[optind - 1], cmd);
			return 2;
		}
	}
	*files = argv + optind;
	*nfiles = argc - optind;
	return -1;
}

static int cmd_report(int argc, char **argv)
{
	enum fmt fmt = FMT_TEXT;
	const char *out = NULL;
	char **files = NULL;
	int n = 0;
	int rc = parse_opts(argc, argv, &fmt, &out, false, &files, &n);
	if (rc >= 0)
		return rc;
	if (n != 1) {
		fprintf(stderr, "infertop report: expected one FILE.json (see infertop report --help)\n");
		return 2;
	}
	struct snapshot s;
	char err[512];
	if (snapshot_read_file(&s, files[0], err, sizeof err) != 0) {
		fprintf(stderr, "infertop report: %s\n", err);
		return 1;
	}
	switch (fmt) {
	case FMT_TEXT:
		report_text(stdout, files[0], &s);
		break;
	case FMT_JSON:
		rc = print_json(stdout, report_json_doc(files[0], &s));
		break;
	case FMT_CSV:
		report_csv(stdout, &s);
		break;
	case FMT_MARKDOWN:
		report_markdown(stdout, files[0], &s);
		break;
	}
	snapshot_release(&s);
	if (fflush(stdout) != 0)
		rc = 1;
	return rc < 0 ? 0 : rc;
}

static int read_all(char **files, int n, struct snapshot *snaps, const char *cmd)
{
	char err[512];
	for (int i = 0; i < n; i++) {
		if (snapshot_read_file(&snaps[i], files[i], err, sizeof err) != 0) {
			fprintf(stderr, "infertop %s: %s\n", cmd, err);
			for (int j = 0; j < i; j++)
				snapshot_release(&snaps[j]);
			return -1;
		}
	}
	return 0;
}

static int cmd_merge(int argc, char **argv)
{
	enum fmt fmt = FMT_TEXT;
	const char *out = NULL;
	char **files = NULL;
	int n = 0;
	int rc = parse_opts(argc, argv, &fmt, &out, true, &files, &n);
	if (rc >= 0)
		return rc;
	if (n < 1 || !out) {
		fprintf(stderr, "infertop merge: expected FILE.json... and -o OUT.json (see infertop merge --help)\n");
		return 2;
	}
	struct snapshot *snaps = calloc((size_t)n, sizeof *snaps);
	const struct snapshot **ptrs = calloc((size_t)n, sizeof *ptrs);
	rc = 1;
	if (!snaps || !ptrs) {
		fprintf(stderr, "infertop merge: out of memory\n");
		goto out;
	}
	if (read_all(files, n, snaps, "merge") != 0)
		goto out;
	for (int i = 0; i < n; i++)
		ptrs[i] = &snaps[i];
	struct snapshot m;
	char err[512];
	if (snapshot_merge(&m, ptrs, (size_t)n, err, sizeof err) != 0) {
		fprintf(stderr, "infertop merge: %s\n", err);
	} else {
		cJSON *doc = snapshot_to_json(&m);
		char *txt = doc ? cJSON_Print(doc) : NULL;
		cJSON_Delete(doc);
		char path[4096];
		snprintf(path, sizeof path, "%s", out);
		if (!txt) {
			fprintf(stderr, "infertop merge: out of memory\n");
		} else {
			size_t len = strlen(txt);
			txt[len] = '\n';
			if (snapshot_write_atomic(path, sizeof path, false, txt, len + 1, err, sizeof err) != 0) {
				fprintf(stderr, "infertop merge: %s\n", err);
			} else {
				fprintf(stderr, "infertop merge: %d runs, %" PRIu64 " requests, written to %s\n", n,
					m.run_c.completed + snapshot_failed(&m), path);
				rc = 0;
			}
		}
		free(txt);
		snapshot_release(&m);
	}
	for (int i = 0; i < n; i++)
		snapshot_release(&snaps[i]);
out:
	free(snaps);
	free(ptrs);
	return rc;
}

/* ---- compare ---- */

struct crow {
	char name[48];
	char unit[12];
	int prec;          /* decimals in text, markdown */
	double a, b;
};

static void crow_add(struct crow *rows, int *n, const char *name, const char *unit, double a, double b)
{
	struct crow *r = &rows[(*n)++];
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->unit, sizeof r->unit, "%s", unit);
	r->prec = strcmp(unit, "count") == 0 ? 0 : strcmp(unit, "share") == 0 ? 4 : 3;
	r->a = a;
	r->b = b;
}

static double error_share(const struct snapshot *s)
{
	uint64_t f = snapshot_failed(s), t = f + s->run_c.completed;
	return t ? (double)f / (double)t : 0.0;
}

#define MAX_CROWS (9 + STAT_NMETRICS * 5)

static int compare_rows(const struct snapshot *a, const struct snapshot *b, struct crow *rows)
{
	int n = 0;
	crow_add(rows, &n, "duration", "s", a->duration, b->duration);
	crow_add(rows, &n, "completed", "count", (double)a->run_c.completed, (double)b->run_c.completed);
	crow_add(rows, &n, "failed", "count", (double)snapshot_failed(a), (double)snapshot_failed(b));
	crow_add(rows, &n, "error_share", "share", error_share(a), error_share(b));
	crow_add(rows, &n, "output_tokens", "count", (double)a->run_c.output_tokens, (double)b->run_c.output_tokens);
	crow_add(rows, &n, "request_throughput", "req/s", snapshot_rate(a->run_c.completed, a->duration),
		 snapshot_rate(b->run_c.completed, b->duration));
	crow_add(rows, &n, "output_throughput", "tok/s", snapshot_rate(a->run_c.output_tokens, a->duration),
		 snapshot_rate(b->run_c.output_tokens, b->duration));
	crow_add(rows, &n, "total_token_throughput", "tok/s",
		 snapshot_rate(a->run_c.output_tokens + a->run_c.input_tokens, a->duration),
		 snapshot_rate(b->run_c.output_tokens + b->run_c.input_tokens, b->duration));
	static const int which[] = {0, 3, 4, 6, 7}; /* mean p50 p90 p99 p99.9 */
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct mstat sa, sb;
		mstat_of(a->run[m], &sa);
		mstat_of(b->run[m], &sb);
		for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
			char name[48];
			snprintf(name, sizeof name, "%s %s", stats_metric_name((enum stat_metric)m),
				 mstat_heads[which[i]]);
			crow_add(rows, &n, name, "ms", sa.v[which[i]], sb.v[which[i]]);
		}
	}
	return n;
}

static double delta_pct(const struct crow *r)
{
	return r->a != 0 ? 100.0 * (r->b - r->a) / fabs(r->a) : NAN;
}

static void fmt_pct(char *buf, size_t cap, double p)
{
	if (isnan(p))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%+.1f%%", p);
}

static int cmd_compare(int argc, char **argv)
{
	enum fmt fmt = FMT_TEXT;
	const char *out = NULL;
	char **files = NULL;
	int n = 0;
	int rc = parse_opts(argc, argv, &fmt, &out, false, &files, &n);
	if (rc >= 0)
		return rc;
	if (n != 2) {
		fprintf(stderr, "infertop compare: expected A.json B.json (see infertop compare --help)\n");
		return 2;
	}
	struct snapshot s[2];
	if (read_all(files, 2, s, "compare") != 0) {
		return 1;
	}
	struct crow rows[MAX_CROWS];
	int nr = compare_rows(&s[0], &s[1], rows);
	char pct[32];
	rc = 0;
	switch (fmt) {
	case FMT_TEXT:
		printf("A: %s\nB: %s\n\n%-26s %-6s %14s %14s %14s %9s\n", files[0], files[1], "", "unit", "A", "B",
		       "B - A", "change");
		for (int i = 0; i < nr; i++) {
			fmt_pct(pct, sizeof pct, delta_pct(&rows[i]));
			int p = rows[i].prec;
			printf("%-26s %-6s %14.*f %14.*f %+14.*f %9s\n", rows[i].name, rows[i].unit, p, rows[i].a, p,
			       rows[i].b, p, rows[i].b - rows[i].a, pct);
		}
		break;
	case FMT_CSV:
		printf("name,unit,a,b,delta,delta_pct\n");
		for (int i = 0; i < nr; i++) {
			double p = delta_pct(&rows[i]);
			printf("%s,%s,%.10g,%.10g,%.10g,", rows[i].name, rows[i].unit, rows[i].a, rows[i].b,
			       rows[i].b - rows[i].a);
			if (!isnan(p))
				printf("%.3f", p);
			printf("\n");
		}
		break;
	case FMT_MARKDOWN:
		printf("| | unit | A | B | B - A | change |\n|---|---|---:|---:|---:|---:|\n");
		for (int i = 0; i < nr; i++) {
			fmt_pct(pct, sizeof pct, delta_pct(&rows[i]));
			int p = rows[i].prec;
			printf("| %s | %s | %.*f | %.*f | %+.*f | %s |\n", rows[i].name, rows[i].unit, p, rows[i].a, p,
			       rows[i].b, p, rows[i].b - rows[i].a, pct);
		}
		printf("\nA: `%s`, B: `%s`\n", files[0], files[1]);
		break;
	case FMT_JSON: {
		cJSON *o = cJSON_CreateObject();
		cJSON *arr = o ? cJSON_AddArrayToObject(o, "rows") : NULL;
		if (o) {
			cJSON_AddStringToObject(o, "a", files[0]);
			cJSON_AddStringToObject(o, "b", files[1]);
		}
		for (int i = 0; arr && i < nr; i++) {
			cJSON *r = cJSON_CreateObject();
			if (!r)
				break;
			cJSON_AddStringToObject(r, "name", rows[i].name);
			cJSON_AddStringToObject(r, "unit", rows[i].unit);
			cJSON_AddNumberToObject(r, "a", rows[i].a);
			cJSON_AddNumberToObject(r, "b", rows[i].b);
			cJSON_AddNumberToObject(r, "delta", rows[i].b - rows[i].a);
			double p = delta_pct(&rows[i]);
			if (isnan(p))
				cJSON_AddNullToObject(r, "delta_pct");
			else
				cJSON_AddNumberToObject(r, "delta_pct", p);
			cJSON_AddItemToArray(arr, r);
		}
		rc = print_json(stdout, o);
		break;
	}
	}
	snapshot_release(&s[0]);
	snapshot_release(&s[1]);
	if (fflush(stdout) != 0)
		rc = 1;
	return rc;
}

int tools_main(int argc, char **argv)
{
	if (argc < 1 || !tools_is_command(argv[0])) {
		tools_usage(stderr, NULL);
		return 2;
	}
	if (strcmp(argv[0], "report") == 0)
		return cmd_report(argc, argv);
	if (strcmp(argv[0], "merge") == 0)
		return cmd_merge(argc, argv);
	return cmd_compare(argc, argv);
}
