#include "config.h"

#include "infertop/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/hist.h"
#include "infertop/plan.h"
#include "infertop/units.h"

static double us_to_ms(int64_t us)
{
	return (double)us / 1000.0;
}

static double run_seconds(const struct engine *e)
{
	if (!e->t_start)
		return 0.0;
	int64_t end = e->state == ENGINE_DONE ? e->t_end : clock_now_ns();
	/* Warmup and cooldown are not part of the measured run. */
	return plan_measured_seconds(e->plan, e->t_start, end);
}

static const char *token_source(const struct stats *s)
{
	if (s->tokens_from_usage && s->tokens_from_chunks)
		return "mixed";
	if (s->tokens_from_chunks)
		return "chunks";
	return "usage";
}

void report_progress(FILE *out, const struct engine *e, int64_t now_ns)
{
	const struct stats *s = e->stats;
	double win = stats_window_seconds(s, now_ns);
	uint64_t errors = stats_errors_total(s);
	uint64_t ended = s->run_c.completed + errors;
	char el[32];
	units_format_duration(engine_elapsed(e, now_ns), el, sizeof el);
	const struct hist *ttft = s->win[STAT_TTFT], *itl = s->win[STAT_ITL];
	fprintf(out,
		"[%7s] in-flight %" PRIu64 " | done %" PRIu64 " | errors %" PRIu64 " (%.1f%%) | "
		"%.2f req/s | %.0f out tok/s | TTFT p50 %.1f p99 %.1f ms | ITL p50 %.2f p99 %.2f ms",
		el, s->in_flight, s->run_c.completed, errors, ended ? 100.0 * (double)errors / (double)ended : 0.0,
		win > 0 ? (double)s->win_c.completed / win : 0.0,
		win > 0 ? (double)s->win_c.output_tokens / win : 0.0,
		us_to_ms(hist_percentile(ttft, 50)), us_to_ms(hist_percentile(ttft, 99)),
		us_to_ms(hist_percentile(itl, 50)), us_to_ms(hist_percentile(itl, 99)));
	if (e->server) {
		char b[160];
		server_format_brief(e->server, b, sizeof b);
		fprintf(out, " | %s", b);
	}
	if (plan_slo(e->plan))
		fprintf(out, " | goodput %.2f req/s", plan_goodput_window(e->plan, now_ns));
	char ps[160];
	plan_status(e->plan, now_ns, ps, sizeof ps);
	if (ps[0])
		fprintf(out, " | %s", ps);
	fputc('\n', out);
	fflush(out);
}

#define LINE "=================================================="

static void section(FILE *out, const char *title)
{
	size_t n = strlen(title), w = sizeof LINE - 1;
	size_t left = n + 2 < w ? (w - n - 2) / 2 : 0;
	size_t right = n + 2 < w ? w - n - 2 - left : 0;
	for (size_t i = 0; i < left; i++)
		fputc('-', out);
	fprintf(out, " %s ", title);
	for (size_t i = 0; i < right; i++)
		fputc('-', out);
	fputc('\n', out);
}

static void row_f(FILE *out, const char *label, double v)
{
	fprintf(out, "%-40s %-10.2f\n", label, v);
}

static void row_u(FILE *out, const char *label, uint64_t v)
{
	fprintf(out, "%-40s %-10" PRIu64 "\n", label, v);
}

static void latency_block(FILE *out, const struct hist *h, const char *title, const char *abbr)
{
	char label[64];
	section(out, title);
	snprintf(label, sizeof label, "Mean %s (ms):", abbr);
	row_f(out, label, hist_mean(h) / 1000.0);
	snprintf(label, sizeof label, "Median %s (ms):", abbr);
	row_f(out, label, us_to_ms(hist_percentile(h, 50)));
	static const double ps[] = {90, 99, 99.9};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		snprintf(label, sizeof label, "P%g %s (ms):", ps[i], abbr);
		row_f(out, label, us_to_ms(hist_percentile(h, ps[i])));
	}
}

void report_summary(FILE *out, const struct engine *e)
{
	const struct stats *s = e->stats;
	double dur = run_seconds(e);
	fprintf(out, "%s\n", "============ Serving Benchmark Result ============");
	row_u(out, "Successful requests:", s->run_c.completed);
	row_u(out, "Failed requests:", stats_errors_total(s));
	row_f(out, "Benchmark duration (s):", dur);
	row_u(out, "Total input tokens:", s->run_c.input_tokens);
	row_u(out, "Total generated tokens:", s->run_c.output_tokens);
	row_f(out, "Request throughput (req/s):", dur > 0 ? (double)s->run_c.completed / dur : 0);
	if (plan_slo(e->plan))
		row_f(out, "Request goodput (req/s):", plan_goodput(e->plan, dur));
	row_f(out, "Output token throughput (tok/s):", dur > 0 ? (double)s->run_c.output_tokens / dur : 0);
	row_f(out, "Total Token throughput (tok/s):",
	      dur > 0 ? (double)(s->run_c.output_tokens + s->run_c.input_tokens) / dur : 0);
	latency_block(out, s->run[STAT_TTFB], "Time to First Byte", "TTFB");
	latency_block(out, s->run[STAT_TTFT], "Time to First Token", "TTFT");
	latency_block(out, s->run[STAT_TPOT], "Time per Output Token (excl. 1st token)", "TPOT");
	latency_block(out, s->run[STAT_ITL], "Inter-token Latency", "ITL");
	latency_block(out, s->run[STAT_E2E], "End-to-end Latency", "E2EL");
	/* Queue time holds connects and client delays in closed loop too. */
	latency_block(out, s->run[STAT_QUEUE], "Client Queue Time", "queue");
	if (e->cfg->rate > 0)
		latency_block(out, s->run[STAT_TTFT_Q], "TTFT from intended send", "TTFT");
	if (e->server)
		server_print_summary(out, e->server);
	fprintf(out, "%s\n", LINE);
	uint64_t errors = stats_errors_total(s);
	if (errors) {
		fprintf(out, "Errors by kind:\n");
		for (int k = 0; k < ERR_NKINDS; k++) {
			if (!s->errors[k])
				continue;
			fprintf(out, "  %-12s %8" PRIu64 "  last: %s\n", stats_err_name((enum err_kind)k), s->errors[k],
				s->last_msg[k]);
		}
		for (int c = 0; c < STATS_HTTP_CODES; c++)
			if (s->http_codes[c])
				fprintf(out, "  HTTP %d     %8" PRIu64 "\n", c, s->http_codes[c]);
	}
	fprintf(out, "Output tokens counted from: %s; stopped: %s\n", token_source(s),
		e->stop_reason ? e->stop_reason : "-");
	plan_print_summary(e->plan, out, dur);
	fflush(out);
}

/* vLLM's key for a percentile: p99, p99.9. */
static void pct_key(char *buf, size_t cap, double p, const char *metric)
{
	snprintf(buf, cap, "p%g_%s_ms", p, metric);
}

static void add_vllm_metric(cJSON *o, const struct hist *h, const char *m)
{
	char k[64];
	snprintf(k, sizeof k, "mean_%s_ms", m);
	cJSON_AddNumberToObject(o, k, hist_mean(h) / 1000.0);
	snprintf(k, sizeof k, "median_%s_ms", m);
	cJSON_AddNumberToObject(o, k, us_to_ms(hist_percentile(h, 50)));
	snprintf(k, sizeof k, "std_%s_ms", m);
	cJSON_AddNumberToObject(o, k, hist_stddev(h) / 1000.0);
	static const double ps[] = {90, 95, 99, 99.9};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		pct_key(k, sizeof k, ps[i], m);
		cJSON_AddNumberToObject(o, k, us_to_ms(hist_percentile(h, ps[i])));
	}
}

static cJSON *metric_object(const struct hist *h)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "count", (double)hist_count(h));
	cJSON_AddNumberToObject(o, "mean_ms", hist_mean(h) / 1000.0);
	cJSON_AddNumberToObject(o, "std_ms", hist_stddev(h) / 1000.0);
	cJSON_AddNumberToObject(o, "min_ms", us_to_ms(hist_min(h)));
	cJSON_AddNumberToObject(o, "max_ms", us_to_ms(hist_max(h)));
	static const struct { double p; const char *k; } ps[] = {
		{50, "p50_ms"}, {90, "p90_ms"}, {95, "p95_ms"}, {99, "p99_ms"}, {99.9, "p99_9_ms"}};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		cJSON_AddNumberToObject(o, ps[i].k, us_to_ms(hist_percentile(h, ps[i].p)));
	char *enc = hist_encode(h);
	if (enc) {
		cJSON_AddStringToObject(o, "hist", enc);
		free(enc);
	}
	return o;
}

static cJSON *options_object(const struct engine *e)
{
	const struct config *c = e->cfg;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "url", c->url);
	cJSON_AddStringToObject(o, "api", c->api == OAI_CHAT ? "chat" : "completions");
	cJSON_AddStringToObject(o, "model", e->model ? e->model : "");
	cJSON_AddStringToObject(o, "mode", c->rate > 0 ? "rate" : "concurrency");
	cJSON_AddNumberToObject(o, "concurrency", (double)c->concurrency);
	cJSON_AddNumberToObject(o, "rate", c->rate);
	cJSON_AddNumberToObject(o, "max_concurrency", (double)c->max_concurrency);
	cJSON_AddNumberToObject(o, "seed", (double)c->seed);
	cJSON_AddNumberToObject(o, "requests", (double)c->requests);
	cJSON_AddNumberToObject(o, "duration_s", (double)c->duration_ns / 1e9);
	cJSON_AddNumberToObject(o, "input_tokens", (double)c->input_tokens);
	cJSON_AddNumberToObject(o, "output_tokens", (double)c->output_tokens);
	cJSON_AddBoolToObject(o, "ignore_eos", c->ignore_eos);
	if (c->have_temperature)
		cJSON_AddNumberToObject(o, "temperature", c->temperature);
	cJSON_AddNumberToObject(o, "timeout_s", (double)c->timeout_ns / 1e9);
	cJSON_AddBoolToObject(o, "new_connection", c->new_connection);
	cJSON_AddNumberToObject(o, "window_s", (double)c->window_ns / 1e9);
	cJSON_AddNumberToObject(o, "grace_s", (double)c->grace_ns / 1e9);
	/* Header values may carry credentials: only their names are saved. */
	cJSON *h = cJSON_AddArrayToObject(o, "header_names");
	for (size_t i = 0; h && i < c->nheaders; i++) {
		const char *colon = strchr(c->headers[i], ':');
		size_t n = colon ? (size_t)(colon - c->headers[i]) : strlen(c->headers[i]);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), c->headers[i]);
		cJSON_AddItemToArray(h, cJSON_CreateString(name));
	}
	return o;
}

char *report_json(const struct engine *e)
{
	const struct stats *s = e->stats;
	const struct config *c = e->cfg;
	double dur = run_seconds(e);
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "duration", dur);
	cJSON_AddNumberToObject(o, "completed", (double)s->run_c.completed);
	cJSON_AddNumberToObject(o, "failed", (double)stats_errors_total(s));
	cJSON_AddNumberToObject(o, "total_input_tokens", (double)s->run_c.input_tokens);
	cJSON_AddNumberToObject(o, "total_output_tokens", (double)s->run_c.output_tokens);
	cJSON_AddNumberToObject(o, "request_throughput", dur > 0 ? (double)s->run_c.completed / dur : 0);
	cJSON_AddNumberToObject(o, "output_throughput", dur > 0 ? (double)s->run_c.output_tokens / dur : 0);
	cJSON_AddNumberToObject(o, "total_token_throughput",
				dur > 0 ? (double)(s->run_c.output_tokens + s->run_c.input_tokens) / dur : 0);
	cJSON_AddNumberToObject(o, "max_concurrent_requests", (double)s->max_in_flight);
	if (c->rate > 0)
		cJSON_AddNumberToObject(o, "request_rate", c->rate);
	else
		cJSON_AddStringToObject(o, "request_rate", "inf");
	if (c->rate > 0 && c->max_concurrency)
		cJSON_AddNumberToObject(o, "max_concurrency", (double)c->max_concurrency);
	else if (c->rate <= 0)
		cJSON_AddNumberToObject(o, "max_concurrency", (double)c->concurrency);
	else
		cJSON_AddNullToObject(o, "max_concurrency");
	cJSON_AddNumberToObject(o, "burstiness", c->burstiness);
	plan_json_vllm(e->plan, o, dur);
	add_vllm_metric(o, s->run[STAT_TTFT], "ttft");
	add_vllm_metric(o, s->run[STAT_TPOT], "tpot");
	add_vllm_metric(o, s->run[STAT_ITL], "itl");
	add_vllm_metric(o, s->run[STAT_E2E], "e2el");

	cJSON *it = cJSON_AddObjectToObject(o, "infertop");
	if (it) {
		cJSON_AddNumberToObject(it, "infertop_schema", 1);
		cJSON_AddStringToObject(it, "version", PACKAGE_VERSION);
		cJSON_AddItemToObject(it, "options", options_object(e));
		plan_json_add(e->plan, it, dur);
		cJSON_AddStringToObject(it, "output_token_source", token_source(s));
		cJSON_AddStringToObject(it, "input_length_source", dataset_length_source(e->dataset));
		cJSON_AddNumberToObject(it, "mean_input_tokens",
					s->run_c.completed ? (double)s->run_c.input_tokens / (double)s->run_c.completed : 0);
		cJSON_AddNumberToObject(it, "requests_counted_from_usage", (double)s->tokens_from_usage);
		cJSON_AddNumberToObject(it, "requests_counted_from_chunks", (double)s->tokens_from_chunks);
		cJSON_AddNumberToObject(it, "output_chunks", (double)s->run_c.chunks);
		cJSON_AddNumberToObject(it, "started", (double)s->started);
		cJSON_AddNumberToObject(it, "connections_opened", (double)s->connections);
		cJSON_AddStringToObject(it, "stop_reason", e->stop_reason ? e->stop_reason : "");
		cJSON_AddStringToObject(it, "definitions",
			"TTFB: send to first SSE event; TTFT: send to first output chunk; ITL: gaps "
			"between output chunks, pooled; TPOT: (E2E-TTFT)/(output_tokens-1); E2E: send "
			"to last output chunk; queue: intended to actual send; failed requests excluded");
		cJSON *m = cJSON_AddObjectToObject(it, "metrics");
		for (int k = 0; m && k < STAT_NMETRICS; k++)
			cJSON_AddItemToObject(m, stats_metric_name((enum stat_metric)k), metric_object(s->run[k]));
		cJSON *errs = cJSON_AddObjectToObject(it, "errors");
		for (int k = 0; errs && k < ERR_NKINDS; k++) {
			if (!s->errors[k])
				continue;
			cJSON *eo = cJSON_AddObjectToObject(errs, stats_err_name((enum err_kind)k));
			if (!eo)
				continue;
			cJSON_AddNumberToObject(eo, "count", (double)s->errors[k]);
			cJSON_AddStringToObject(eo, "last_message", s->last_msg[k]);
		}
		if (e->server)
			cJSON_AddItemToObject(it, "server", server_to_json(e->server));
		cJSON *codes = cJSON_AddObjectToObject(it, "http_status");
		for (int k = 0; codes && k < STATS_HTTP_CODES; k++) {
			if (!s->http_codes[k])
				continue;
			char key[16];
			snprintf(key, sizeof key, "%d", k);
			cJSON_AddNumberToObject(codes, key, (double)s->http_codes[k]);
		}
	}
	char *txt = cJSON_Print(o);
	cJSON_Delete(o);
	return txt;
}

int report_write_json(const struct engine *e, const char *path, char *err, size_t errcap)
{
	char *txt = report_json(e);
	if (!txt) {
		snprintf(err, errcap, "out of memory building the result");
		return -1;
	}
	size_t n = strlen(txt);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = -1;
	if (fd < 0) {
		snprintf(err, errcap, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(fd, txt + off, n - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			snprintf(err, errcap, "cannot write %s: %s", tmp, strerror(errno));
			close(fd);
			unlink(tmp);
			goto out;
		}
		off += (size_t)w;
	}
	if (write(fd, "\n", 1) != 1 || fsync(fd) != 0) {
		snprintf(err, errcap, "cannot write %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errcap, "cannot save %s: %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(txt);
	return rc;
}
