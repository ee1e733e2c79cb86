#include "config.h"

/* The in-memory form of a snapshot, whatever it came from: written as JSON,
 * printed as the end-of-run summary, parsed back from a file, merged. Needs
 * nothing from a live engine, so report/merge/compare and the fuzz target
 * use it alone. */

#include "infertop/snapshot.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/hist.h"
#include "infertop/server.h"

static const char *const reason_names[SNAPSHOT_NREASONS] = {
	[SNAPSHOT_KEY] = "key",
	[SNAPSHOT_SIGNAL] = "signal",
	[SNAPSHOT_PERIODIC] = "periodic",
	[SNAPSHOT_FINAL] = "final",
	[SNAPSHOT_MERGED] = "merged",
};

const char *snapshot_reason_name(enum snapshot_reason r)
{
	return (unsigned)r < SNAPSHOT_NREASONS ? reason_names[r] : "?";
}

uint64_t snapshot_failed(const struct snapshot *s)
{
	uint64_t t = 0;
	for (int k = 0; k < ERR_NKINDS; k++)
		t += s->errors[k];
	return t;
}

double snapshot_rate(uint64_t count, double seconds)
{
	return seconds > 0 ? (double)count / seconds : 0.0;
}

void snapshot_release(struct snapshot *s)
{
	if (s->owns_hists) {
		for (int m = 0; m < STAT_NMETRICS; m++) {
			hist_free(s->run[m]);
			hist_free(s->win[m]);
		}
	}
	cJSON_Delete(s->options);
	cJSON_Delete(s->load_changes);
	cJSON_Delete(s->server);
	cJSON_Delete(s->series);
	cJSON_Delete(s->request_log);
	cJSON_Delete(s->sources);
	cJSON_Delete(s->plan);
	free(s->plan_text);
	memset(s, 0, sizeof *s);
}

/* ---- numbers ----
 * cJSON prints 15 significant digits and accepts a near miss, so a number
 * read back could differ in its last bits. Numbers are written as raw
 * text instead: the shortest that reads back as exactly the same double. */

cJSON *snapshot_json_number(double d)
{
	if (!isfinite(d))
		return cJSON_CreateNull();
	char buf[40];
	if (d == floor(d) && fabs(d) < 9007199254740992.0) {
		snprintf(buf, sizeof buf, "%.0f", d);
	} else {
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(buf, sizeof buf, "%.*g", prec, d);
			if (strtod(buf, NULL) == d)
				break;
		}
	}
	return cJSON_CreateRaw(buf);
}

/* A float from the series: the shortest text that is that float again. */
cJSON *snapshot_json_float(float f)
{
	if (!isfinite(f))
		return cJSON_CreateNull();
	char buf[40];
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	return cJSON_CreateRaw(buf);
}

static void put_num(cJSON *o, const char *k, double d)
{
	if (o)
		cJSON_AddItemToObject(o, k, snapshot_json_number(d));
}

cJSON *snapshot_json_u64(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%" PRIu64, v);
	return cJSON_CreateRaw(buf);
}

static void put_u64(cJSON *o, const char *k, uint64_t v)
{
	if (o)
		cJSON_AddItemToObject(o, k, snapshot_json_u64(v));
}

static void put_str(cJSON *o, const char *k, const char *v)
{
	if (o)
		cJSON_AddItemToObject(o, k, v && *v ? cJSON_CreateString(v) : cJSON_CreateNull());
}

static void put_utc(cJSON *o, const char *k, double unix_s)
{
	char buf[40];
	time_t t = (time_t)floor(unix_s);
	int ms = (int)((unix_s - floor(unix_s)) * 1000.0);
	struct tm tm;
	if (unix_s <= 0 || !gmtime_r(&t, &tm) || strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		put_str(o, k, NULL);
		return;
	}
	size_t n = strlen(buf);
	snprintf(buf + n, sizeof buf - n, ".%03dZ", ms > 999 ? 999 : ms);
	put_str(o, k, buf);
}

static double us_to_ms(int64_t us)
{
	return (double)us / 1000.0;
}


/* ---- to JSON ---- */

static void add_vllm_metric(cJSON *o, const struct hist *h, const char *m)
{
	char k[64];
	snprintf(k, sizeof k, "mean_%s_ms", m);
	put_num(o, k, hist_mean(h) / 1000.0);
	snprintf(k, sizeof k, "median_%s_ms", m);
	put_num(o, k, us_to_ms(hist_percentile(h, 50)));
	snprintf(k, sizeof k, "std_%s_ms", m);
	put_num(o, k, hist_stddev(h) / 1000.0);
	static const double ps[] = {90, 95, 99, 99.9};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		snprintf(k, sizeof k, "p%g_%s_ms", ps[i], m);
		put_num(o, k, us_to_ms(hist_percentile(h, ps[i])));
	}
}

static cJSON *metric_object(const struct hist *h)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	put_u64(o, "count", hist_count(h));
	put_num(o, "mean_ms", hist_mean(h) / 1000.0);
	put_num(o, "std_ms", hist_stddev(h) / 1000.0);
	put_num(o, "min_ms", us_to_ms(hist_min(h)));
	put_num(o, "max_ms", us_to_ms(hist_max(h)));
	static const struct {
		double p;
		const char *k;
	} ps[] = {{50, "p50_ms"}, {90, "p90_ms"}, {95, "p95_ms"}, {99, "p99_ms"}, {99.9, "p99_9_ms"}};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		put_num(o, ps[i].k, us_to_ms(hist_percentile(h, ps[i].p)));
	char *enc = hist_encode(h);
	if (!enc) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddStringToObject(o, "hist", enc);
	free(enc);
	return o;
}

static cJSON *metrics_object(struct hist *const *h)
{
	cJSON *m = cJSON_CreateObject();
	for (int k = 0; m && k < STAT_NMETRICS; k++) {
		cJSON *mo = metric_object(h[k]);
		if (!mo) {
			cJSON_Delete(m);
			return NULL;
		}
		cJSON_AddItemToObject(m, stats_metric_name((enum stat_metric)k), mo);
	}
	return m;
}

static cJSON *counters_object(const struct stats_counters *c)
{
	cJSON *o = cJSON_CreateObject();
	put_u64(o, "completed", c->completed);
	put_u64(o, "failed", c->failed);
	put_u64(o, "output_tokens", c->output_tokens);
	put_u64(o, "input_tokens", c->input_tokens);
	put_u64(o, "output_chunks", c->chunks);
	put_u64(o, "streamed_chunks", c->streamed);
	return o;
}

static cJSON *throughput_object(const struct stats_counters *c, double secs)
{
	cJSON *o = cJSON_CreateObject();
	put_num(o, "seconds", secs);
	put_num(o, "requests_per_s", snapshot_rate(c->completed, secs));
	put_num(o, "output_tok_per_s", snapshot_rate(c->output_tokens, secs));
	put_num(o, "total_tok_per_s", snapshot_rate(c->output_tokens + c->input_tokens, secs));
	return o;
}

/* Numbers in carried sub-documents are written as raw text of the same
 * value, so they come back to the last digit, as read. */
static void rawify(cJSON *j)
{
	cJSON *c = j->child;
	while (c) {
		cJSON *next = c->next;
		if (cJSON_IsNumber(c)) {
			cJSON *r = snapshot_json_number(c->valuedouble);
			if (r) {
				/* The key moves to the new item. */
				r->string = c->string;
				r->type |= c->type & cJSON_StringIsConst;
				c->string = NULL;
				cJSON_ReplaceItemViaPointer(j, c, r);
			}
		} else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
			rawify(c);
		}
		c = next;
	}
}

static cJSON *dup_or_null(const cJSON *j)
{
	cJSON *d = j ? cJSON_Duplicate(j, 1) : cJSON_CreateNull();
	if (d)
		rawify(d);
	return d;
}

static void add_vllm_keys(cJSON *o, const struct snapshot *s)
{
	double dur = s->duration;
	put_num(o, "duration", dur);
	put_u64(o, "completed", s->run_c.completed);
	put_u64(o, "failed", snapshot_failed(s));
	put_u64(o, "total_input_tokens", s->run_c.input_tokens);
	put_u64(o, "total_output_tokens", s->run_c.output_tokens);
	put_num(o, "request_throughput", snapshot_rate(s->run_c.completed, dur));
	/* Without --slo there is no goodput: null, never a guess. */
	if (s->have_slo)
		put_num(o, "request_goodput", snapshot_rate(s->slo_run.met_all, dur));
	else
		cJSON_AddNullToObject(o, "request_goodput");
	put_num(o, "output_throughput", snapshot_rate(s->run_c.output_tokens, dur));
	put_num(o, "total_token_throughput", snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, dur));
	put_num(o, "max_output_tokens_per_s", s->max_output_tok_s);
	put_u64(o, "max_concurrent_requests", s->max_in_flight);
	if (isfinite(s->vllm_request_rate))
		put_num(o, "request_rate", s->vllm_request_rate);
	else
		cJSON_AddStringToObject(o, "request_rate", "inf");
	put_num(o, "max_concurrency", s->vllm_max_concurrency);
	put_num(o, "burstiness", s->burstiness);
	add_vllm_metric(o, s->run[STAT_TTFT], "ttft");
	add_vllm_metric(o, s->run[STAT_TPOT], "tpot");
	add_vllm_metric(o, s->run[STAT_ITL], "itl");
	add_vllm_metric(o, s->run[STAT_E2E], "e2el");
}

static const char definitions[] =
	"TTFB: send to first SSE event; TTFT: send to first output chunk; ITL: gaps "
	"between output chunks, pooled; TPOT: (E2E-TTFT)/(output_tokens-1); E2E: send "
	"to last output chunk; queue: intended to actual send; failed requests excluded; "
	"histograms in microseconds, hist_encode version 1 (h1:)";

cJSON *snapshot_to_json(const struct snapshot *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_vllm_keys(o, s);
	put_num(o, "infertop_schema", SNAPSHOT_SCHEMA);
	cJSON *it = cJSON_AddObjectToObject(o, "infertop");
	if (!it)
		goto oom;
	put_num(it, "infertop_schema", SNAPSHOT_SCHEMA);
	put_str(it, "version", s->version);

	cJSON *sn = cJSON_AddObjectToObject(it, "snapshot");
	put_str(sn, "reason", snapshot_reason_name(s->reason));
	put_utc(sn, "taken_utc", s->taken_unix);
	put_num(sn, "taken_unix", s->taken_unix);

	cJSON *run = cJSON_AddObjectToObject(it, "run");
	put_str(run, "host", s->host);
	put_str(run, "run_id", s->run_id);
	put_utc(run, "start_utc", s->start_unix);
	put_num(run, "start_unix", s->start_unix);
	put_str(run, "target_url", s->target_url);
	put_str(run, "model", s->model);
	put_str(run, "server", s->server_detected);
	put_num(run, "runs", s->nruns);

	cJSON_AddItemToObject(it, "options", dup_or_null(s->options));

	cJSON *state = cJSON_AddObjectToObject(it, "state");
	put_str(state, "status", s->status);
	put_num(state, "elapsed_s", s->elapsed);
	put_num(state, "measured_s", s->duration);
	put_str(state, "stop_reason", s->stop_reason);
	put_str(state, "mode", s->open_loop ? "rate" : "concurrency");
	put_num(state, "concurrency", s->concurrency);
	put_num(state, "rate", s->rate);
	put_num(state, "max_concurrency", s->max_concurrency);
	if (state)
		cJSON_AddBoolToObject(state, "paused", s->paused);
	put_u64(state, "in_flight", s->in_flight);
	put_u64(state, "pending", s->pending);
	if (state)
		cJSON_AddItemToObject(state, "load_changes",
				      s->load_changes ? dup_or_null(s->load_changes) : cJSON_CreateArray());
	if (isfinite(s->vllm_request_rate))
		put_num(state, "vllm_request_rate", s->vllm_request_rate);
	else
		put_str(state, "vllm_request_rate", "inf");
	put_num(state, "vllm_max_concurrency", s->vllm_max_concurrency);

	/* The plan's keys, where report_json has always had them. */
	for (const cJSON *c = s->plan ? s->plan->child : NULL; c; c = c->next)
		if (c->string)
			cJSON_AddItemToObject(it, c->string, dup_or_null(c));
	if (s->plan_text)
		cJSON_AddStringToObject(it, "plan_summary_text", s->plan_text);
	/* Kept where report_json has always had them. */
	put_str(it, "output_token_source", s->token_source);
	put_str(it, "input_length_source", s->input_length_source);
	put_num(it, "mean_input_tokens",
		s->run_c.completed ? (double)s->run_c.input_tokens / (double)s->run_c.completed : 0);
	put_u64(it, "requests_counted_from_usage", s->tokens_from_usage);
	put_u64(it, "requests_counted_from_chunks", s->tokens_from_chunks);
	{
		/* Warnings: requests that succeeded with something odd. */
		cJSON *w = cJSON_AddObjectToObject(it, "warnings");
		if (w && s->usage_mismatch) {
			cJSON *u = cJSON_AddObjectToObject(w, "usage_vs_chunks");
			put_u64(u, "count", s->usage_mismatch);
			cJSON_AddStringToObject(u, "last_message", s->usage_mismatch_msg);
		}
	}
	put_u64(it, "output_chunks", s->run_c.chunks);
	put_u64(it, "started", s->started);
	put_u64(it, "connections_opened", s->connections);
	put_u64(it, "connection_retry", s->connection_retries);
	put_u64(it, "max_in_flight", s->max_in_flight);
	cJSON_AddStringToObject(it, "stop_reason", s->stop_reason);
	cJSON_AddStringToObject(it, "definitions", definitions);

	cJSON *cn = cJSON_AddObjectToObject(it, "counters");
	if (cn) {
		cJSON_AddItemToObject(cn, "run", counters_object(&s->run_c));
		cJSON_AddItemToObject(cn, "window", counters_object(&s->win_c));
	}
	cJSON *tp = cJSON_AddObjectToObject(it, "throughput");
	if (tp) {
		cJSON *r = throughput_object(&s->run_c, s->duration);
		put_num(r, "max_output_tok_per_s", s->max_output_tok_s);
		cJSON_AddItemToObject(tp, "run", r);
		cJSON_AddItemToObject(tp, "window", throughput_object(&s->win_c, s->win_seconds));
	}
	if (s->have_slo) {
		cJSON *g = cJSON_AddObjectToObject(it, "goodput");
		put_str(g, "slo", s->slo_desc);
		put_num(g, "requests_per_s", snapshot_rate(s->slo_run.met_all, s->duration));
		put_u64(g, "requests_ended", s->slo_run.ended);
		put_u64(g, "requests_meeting_all", s->slo_run.met_all);
		cJSON *met = g ? cJSON_AddObjectToObject(g, "requests_meeting") : NULL;
		for (int k = 0; met && k < SLO_N; k++)
			put_u64(met, slo_name((enum slo_kind)k), s->slo_run.met[k]);
	} else {
		cJSON_AddNullToObject(it, "goodput");
	}

	cJSON *m = metrics_object(s->run);
	if (!m)
		goto oom;
	cJSON_AddItemToObject(it, "metrics", m);
	cJSON *win = cJSON_AddObjectToObject(it, "window");
	put_num(win, "seconds", s->win_seconds);
	if (!win || !(m = metrics_object(s->win)))
		goto oom;
	cJSON_AddItemToObject(win, "metrics", m);

	put_u64(it, "errors_total", snapshot_failed(s));
	cJSON *errs = cJSON_AddObjectToObject(it, "errors");
	for (int k = 0; errs && k < ERR_NKINDS; k++) {
		if (!s->errors[k])
			continue;
		cJSON *eo = cJSON_AddObjectToObject(errs, stats_err_name((enum err_kind)k));
		put_u64(eo, "count", s->errors[k]);
		if (eo)
			cJSON_AddStringToObject(eo, "last_message", s->last_msg[k]);
	}
	cJSON *codes = cJSON_AddObjectToObject(it, "http_status");
	for (int k = 0; codes && k < STATS_HTTP_CODES; k++) {
		if (!s->http_codes[k])
			continue;
		char key[16];
		snprintf(key, sizeof key, "%d", k);
		put_u64(codes, key, s->http_codes[k]);
	}
	cJSON_AddItemToObject(it, "server", dup_or_null(s->server));
	cJSON_AddItemToObject(it, "series", dup_or_null(s->series));
	cJSON_AddItemToObject(it, "request_log", dup_or_null(s->request_log));
	if (s->sources)
		cJSON_AddItemToObject(it, "merged_from", dup_or_null(s->sources));
	return o;
oom:
	cJSON_Delete(o);
	return NULL;
}


/* ---- the server block read back ---- */

static bool sv_num(const cJSON *o, const char *k, double scale, struct server_value *v)
{
	const cJSON *x = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	v->valid = cJSON_IsNumber(x);
	v->v = v->valid ? x->valuedouble / scale : 0;
	return v->valid;
}

static void sv_agg(const cJSON *o, struct server_agg *a)
{
	struct server_value min, mean, max, n;
	memset(a, 0, sizeof *a);
	if (!sv_num(o, "samples", 1, &n) || !(n.v >= 1) || !sv_num(o, "mean", 1, &mean))
		return;
	sv_num(o, "min", 1, &min);
	sv_num(o, "max", 1, &max);
	a->n = n.v < 1e15 ? (uint64_t)n.v : 0;
	a->min = min.v;
	a->max = max.v;
	a->sum = mean.v * (double)a->n;
}

static enum server_status status_of(const cJSON *o, const char *k)
{
	const cJSON *x = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	for (int i = SERVER_OFF; i <= SERVER_DOWN; i++)
		if (cJSON_IsString(x) && strcmp(x->valuestring, server_status_name((enum server_status)i)) == 0)
			return (enum server_status)i;
	return SERVER_OFF;
}

static void sv_str(const cJSON *o, const char *k, char *dst, size_t cap)
{
	const cJSON *x = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	snprintf(dst, cap, "%s", cJSON_IsString(x) ? x->valuestring : "");
}

/* Key names as server_to_json() writes them. */
static const char *const gauge_keys[SRV_NGAUGES] = {
	[SRV_RUNNING] = "running",
	[SRV_WAITING] = "waiting",
	[SRV_KV_USAGE] = "kv_usage",
	[SRV_KV_USAGE_MAX] = "kv_usage_max",
	[SRV_PREEMPT_RATE] = "preemptions_per_s",
	[SRV_PREFIX_HIT] = "prefix_cache_hit_rate",
	[SRV_PROMPT_TOK_S] = "prompt_tokens_per_s",
	[SRV_GEN_TOK_S] = "generation_tokens_per_s",
};

static const char *const latency_keys[SRVL_N] = {
	[SRVL_TTFT] = "ttft", [SRVL_ITL] = "itl", [SRVL_E2E] = "e2e", [SRVL_QUEUE] = "queue",
};

void snapshot_server_state(const cJSON *j, struct server_state *st)
{
	server_state_init(st);
	if (!cJSON_IsObject(j))
		return;
	struct server_value v;
	st->status = status_of(j, "status");
	sv_str(j, "url", st->url, sizeof st->url);
	sv_str(j, "profile", st->detected, sizeof st->detected);
	sv_str(j, "error", st->last_error, sizeof st->last_error);
	sv_str(j, "note", st->note, sizeof st->note);
	if (sv_num(j, "scrapes", 1, &v) && v.v >= 0 && v.v < 1e15)
		st->scrapes = (uint64_t)v.v;
	if (sv_num(j, "failures", 1, &v) && v.v >= 0 && v.v < 1e15)
		st->failures = (uint64_t)v.v;
	if (sv_num(j, "skipped", 1, &v) && v.v >= 0 && v.v < 1e15)
		st->skipped = (uint64_t)v.v;
	const cJSON *latest = cJSON_GetObjectItemCaseSensitive(j, "latest");
	const cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
	for (int g = 0; g < SRV_NGAUGES; g++) {
		sv_num(latest, gauge_keys[g], 1, &st->gauge[g]);
		sv_agg(run ? cJSON_GetObjectItemCaseSensitive(run, gauge_keys[g]) : NULL, &st->agg[g]);
	}
	const cJSON *win = cJSON_GetObjectItemCaseSensitive(j, "latency_window");
	const cJSON *rl = cJSON_GetObjectItemCaseSensitive(j, "latency_run");
	for (int l = 0; l < SRVL_N; l++) {
		const cJSON *w = win ? cJSON_GetObjectItemCaseSensitive(win, latency_keys[l]) : NULL;
		const cJSON *r = rl ? cJSON_GetObjectItemCaseSensitive(rl, latency_keys[l]) : NULL;
		sv_num(w, "p50_ms", 1e3, &st->p50[l]);
		sv_num(w, "p90_ms", 1e3, &st->p90[l]);
		sv_num(w, "p99_ms", 1e3, &st->p99[l]);
		sv_num(w, "mean_ms", 1e3, &st->mean[l]);
		sv_num(r, "p50_ms", 1e3, &st->run_p50[l]);
		sv_num(r, "p90_ms", 1e3, &st->run_p90[l]);
		sv_num(r, "p99_ms", 1e3, &st->run_p99[l]);
		sv_num(r, "mean_ms", 1e3, &st->run_mean[l]);
	}
	const cJSON *tot = cJSON_GetObjectItemCaseSensitive(j, "run_totals");
	sv_num(tot, "prompt_tokens", 1, &st->run_prompt_tokens);
	sv_num(tot, "generation_tokens", 1, &st->run_gen_tokens);
	sv_num(tot, "preemptions", 1, &st->run_preemptions);
	const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(j, "gpu");
	if (cJSON_IsObject(gpu)) {
		st->gpu_status = status_of(gpu, "status");
		sv_str(gpu, "url", st->gpu_url, sizeof st->gpu_url);
		sv_str(gpu, "error", st->gpu_error, sizeof st->gpu_error);
		if (sv_num(gpu, "scrapes", 1, &v) && v.v >= 0 && v.v < 1e15)
			st->gpu_scrapes = (uint64_t)v.v;
		if (sv_num(gpu, "failures", 1, &v) && v.v >= 0 && v.v < 1e15)
			st->gpu_failures = (uint64_t)v.v;
		sv_num(gpu, "power_total_w", 1, &st->power_total_w);
		sv_num(gpu, "joules_per_token", 1, &st->joules_per_token);
		sv_agg(cJSON_GetObjectItemCaseSensitive(gpu, "run_power_total_w"), &st->power_agg);
		sv_agg(cJSON_GetObjectItemCaseSensitive(gpu, "run_joules_per_token"), &st->jpt_agg);
		const cJSON *g;
		cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(gpu, "gpus"))
		{
			if (st->ngpus >= SERVER_MAX_GPUS)
				break;
			struct server_gpu *d = &st->gpu[st->ngpus++];
			sv_str(g, "name", d->name, sizeof d->name);
			d->index = sv_num(g, "index", 1, &v) && v.v >= 0 && v.v < 1e6 ? (int)v.v : -1;
			sv_num(g, "util_pct", 1, &d->util_pct);
			sv_num(g, "mem_used_mib", 1, &d->mem_used_mib);
			sv_num(g, "mem_total_mib", 1, &d->mem_total_mib);
			sv_num(g, "power_w", 1, &d->power_w);
			sv_num(g, "temp_c", 1, &d->temp_c);
			sv_num(g, "sm_clock_mhz", 1, &d->sm_clock_mhz);
			sv_num(g, "gr_engine_active", 1, &d->gr_active);
			sv_num(g, "dram_active", 1, &d->dram_active);
			sv_num(g, "tensor_active", 1, &d->tensor_active);
		}
	}
	const cJSON *w;
	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(j, "watch"))
	{
		if (st->nwatch >= SERVER_MAX_WATCH)
			break;
		struct server_watch *d = &st->watch[st->nwatch++];
		sv_str(w, "expr", d->expr, sizeof d->expr);
		sv_num(w, "value", 1, &d->value);
		sv_num(w, "rate_per_s", 1, &d->rate);
	}
}

/* ---- the end-of-run text ---- */

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

void snapshot_print_summary(FILE *out, const struct snapshot *s)
{
	double dur = s->duration;
	fprintf(out, "%s\n", "============ Serving Benchmark Result ============");
	row_u(out, "Successful requests:", s->run_c.completed);
	row_u(out, "Failed requests:", snapshot_failed(s));
	row_f(out, "Benchmark duration (s):", dur);
	row_u(out, "Total input tokens:", s->run_c.input_tokens);
	row_u(out, "Total generated tokens:", s->run_c.output_tokens);
	row_f(out, "Request throughput (req/s):", snapshot_rate(s->run_c.completed, dur));
	if (s->have_slo)
		row_f(out, "Request goodput (req/s):", snapshot_rate(s->slo_run.met_all, dur));
	row_f(out, "Output token throughput (tok/s):", snapshot_rate(s->run_c.output_tokens, dur));
	row_f(out, "Total Token throughput (tok/s):",
	      snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, dur));
	latency_block(out, s->run[STAT_TTFB], "Time to First Byte", "TTFB");
	latency_block(out, s->run[STAT_TTFT], "Time to First Token", "TTFT");
	latency_block(out, s->run[STAT_TPOT], "Time per Output Token (excl. 1st token)", "TPOT");
	latency_block(out, s->run[STAT_ITL], "Inter-token Latency", "ITL");
	latency_block(out, s->run[STAT_E2E], "End-to-end Latency", "E2EL");
	/* Queue time holds connects and client delays in closed loop too. */
	latency_block(out, s->run[STAT_QUEUE], "Client Queue Time", "queue");
	if (isfinite(s->vllm_request_rate))
		latency_block(out, s->run[STAT_TTFT_Q], "TTFT from intended send", "TTFT");
	if (s->server) {
		struct server_state *st = malloc(sizeof *st);
		if (st) {
			snapshot_server_state(s->server, st);
			server_print_summary(out, st);
			free(st);
		}
	}
	fprintf(out, "%s\n", LINE);
	if (snapshot_failed(s)) {
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
	fprintf(out, "Output tokens counted from: %s; stopped: %s\n", s->token_source,
		s->stop_reason[0] ? s->stop_reason : "-");
	if (s->usage_mismatch)
		fprintf(out, "Warning: %" PRIu64 " requests' usage and chunk counts differ over 2x (last: %s)\n",
			s->usage_mismatch, s->usage_mismatch_msg);
	if (s->connection_retries)
		fprintf(out, "Connection retries: %" PRIu64 " (the server closed a kept-alive connection as they "
			"went out; resent once, not failures)\n", s->connection_retries);
	const cJSON *dropped = s->request_log ? cJSON_GetObjectItemCaseSensitive(s->request_log, "dropped") : NULL;
	if (cJSON_IsNumber(dropped) && dropped->valuedouble > 0) {
		const cJSON *why = cJSON_GetObjectItemCaseSensitive(s->request_log, "last_error");
		fprintf(out, "Request log: %.0f lines dropped (%s)\n", dropped->valuedouble,
			cJSON_IsString(why) ? why->valuestring : "write errors");
	}
	if (s->plan_text)
		fputs(s->plan_text, out);
	fflush(out);
}

/* ---- reading ---- */

/* Counters are written as integers; a double holds them exactly below
 * 2^53, which no run reaches. */
#define EXACT_MAX 9007199254740992.0

struct rd {
	char *err;
	size_t cap;
	int bad;
};

static void fail(struct rd *r, const char *fmt, const char *what)
{
	if (!r->bad)
		snprintf(r->err, r->cap, fmt, what);
	r->bad = 1;
}

static const cJSON *obj(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	return cJSON_IsObject(v) ? v : NULL;
}

static uint64_t get_u64(struct rd *r, const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	double d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !(d >= 0) || d > EXACT_MAX || d != floor(d)) {
		fail(r, "\"%s\" is not a count", k);
		return 0;
	}
	return (uint64_t)d;
}

static double get_num(struct rd *r, const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	if (!v || cJSON_IsNull(v))
		return dflt;
	if (cJSON_IsString(v) && strcmp(v->valuestring, "inf") == 0)
		return INFINITY;
	if (!cJSON_IsNumber(v)) {
		fail(r, "\"%s\" is not a number", k);
		return dflt;
	}
	return v->valuedouble;
}

static void get_str(const cJSON *o, const char *k, char *dst, size_t cap)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	snprintf(dst, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

static bool get_bool(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL);
}

/* Detached copy of a sub-document, NULL when absent or null. */
static cJSON *take(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	if (!v || cJSON_IsNull(v))
		return NULL;
	return cJSON_Duplicate(v, 1);
}

static void get_counters(struct rd *r, const cJSON *o, struct stats_counters *c)
{
	c->completed = get_u64(r, o, "completed");
	c->failed = get_u64(r, o, "failed");
	c->output_tokens = get_u64(r, o, "output_tokens");
	c->input_tokens = get_u64(r, o, "input_tokens");
	c->chunks = get_u64(r, o, "output_chunks");
	c->streamed = get_u64(r, o, "streamed_chunks");   /* 0 in older files */
}

/* A metric missing from the file (an older writer) reads as empty; one
 * present must carry a histogram that decodes. */
static void get_hists(struct rd *r, const cJSON *metrics, struct hist **h)
{
	for (int m = 0; m < STAT_NMETRICS; m++) {
		const char *name = stats_metric_name((enum stat_metric)m);
		const cJSON *mo = obj(metrics, name);
		if (!mo)
			continue;
		const cJSON *enc = cJSON_GetObjectItemCaseSensitive(mo, "hist");
		if (!cJSON_IsString(enc) || hist_decode(h[m], enc->valuestring) != 0)
			fail(r, "the histogram of %s does not decode", name);
	}
}

static int alloc_hists(struct snapshot *s)
{
	s->owns_hists = true;
	for (int m = 0; m < STAT_NMETRICS; m++)
		if (!(s->run[m] = hist_new()) || !(s->win[m] = hist_new()))
			return -1;
	return 0;
}

static enum snapshot_reason reason_of(const char *name)
{
	for (int i = 0; i < SNAPSHOT_NREASONS; i++)
		if (strcmp(name, snapshot_reason_name((enum snapshot_reason)i)) == 0)
			return (enum snapshot_reason)i;
	return SNAPSHOT_FINAL;
}

int snapshot_parse(struct snapshot *s, const char *text, size_t len, char *err, size_t errcap)
{
	struct rd r = {.err = err, .cap = errcap};
	memset(s, 0, sizeof *s);
	if (alloc_hists(s) != 0) {
		snapshot_release(s);
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	cJSON *root = cJSON_ParseWithLength(text, len);
	if (!root) {
		snapshot_release(s);
		snprintf(err, errcap, "not JSON");
		return -1;
	}
	const cJSON *it = obj(root, "infertop");
	const cJSON *sch = it ? cJSON_GetObjectItemCaseSensitive(it, "infertop_schema") : NULL;
	if (!it || !cJSON_IsNumber(sch)) {
		fail(&r, "%s", "not an infertop snapshot (no infertop.infertop_schema)");
		goto out;
	}
	if (sch->valuedouble != SNAPSHOT_SCHEMA) {
		snprintf(err, errcap, "schema %g; this infertop reads schema %d", sch->valuedouble, SNAPSHOT_SCHEMA);
		r.bad = 1;
		goto out;
	}
	s->schema = SNAPSHOT_SCHEMA;
	get_str(it, "version", s->version, sizeof s->version);
	const cJSON *sn = obj(it, "snapshot");
	char reason[32];
	get_str(sn, "reason", reason, sizeof reason);
	s->reason = reason_of(reason);
	s->taken_unix = get_num(&r, sn, "taken_unix", 0);

	const cJSON *run = obj(it, "run");
	get_str(run, "host", s->host, sizeof s->host);
	get_str(run, "run_id", s->run_id, sizeof s->run_id);
	s->start_unix = get_num(&r, run, "start_unix", 0);
	get_str(run, "target_url", s->target_url, sizeof s->target_url);
	get_str(run, "model", s->model, sizeof s->model);
	get_str(run, "server", s->server_detected, sizeof s->server_detected);
	double runs = get_num(&r, run, "runs", 1);
	s->nruns = runs >= 1 && runs < 1e9 ? (unsigned)runs : 1;

	const cJSON *st = obj(it, "state");
	if (!st) {
		fail(&r, "%s", "no \"state\" object");
		goto out;
	}
	get_str(st, "status", s->status, sizeof s->status);
	get_str(st, "stop_reason", s->stop_reason, sizeof s->stop_reason);
	s->elapsed = get_num(&r, st, "elapsed_s", 0);
	s->duration = get_num(&r, st, "measured_s", s->elapsed);
	char mode[16];
	get_str(st, "mode", mode, sizeof mode);
	s->open_loop = strcmp(mode, "rate") == 0;
	s->concurrency = get_num(&r, st, "concurrency", 0);
	s->rate = get_num(&r, st, "rate", 0);
	s->max_concurrency = get_num(&r, st, "max_concurrency", 0);
	s->paused = get_bool(st, "paused");
	s->in_flight = get_u64(&r, st, "in_flight");
	s->pending = get_u64(&r, st, "pending");
	s->vllm_request_rate = get_num(&r, st, "vllm_request_rate", INFINITY);
	s->vllm_max_concurrency = get_num(&r, st, "vllm_max_concurrency", NAN);
	s->load_changes = take(st, "load_changes");
	s->burstiness = get_num(&r, root, "burstiness", NAN);

	get_str(it, "output_token_source", s->token_source, sizeof s->token_source);
	get_str(it, "input_length_source", s->input_length_source, sizeof s->input_length_source);
	const cJSON *g = obj(it, "goodput");
	if (g) {
		s->have_slo = true;
		get_str(g, "slo", s->slo_desc, sizeof s->slo_desc);
		s->slo_run.ended = get_u64(&r, g, "requests_ended");
		s->slo_run.met_all = get_u64(&r, g, "requests_meeting_all");
		const cJSON *met = obj(g, "requests_meeting");
		for (int k = 0; k < SLO_N; k++)
			s->slo_run.met[k] = get_u64(&r, met, slo_name((enum slo_kind)k));
	}
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(it, "plan_summary_text");
	if (cJSON_IsString(pt) && pt->valuestring[0] && !(s->plan_text = strdup(pt->valuestring))) {
		fail(&r, "%s", "out of memory");
		goto out;
	}
	static const char *const plan_keys[] = {"plan", "steps", "matrix", "slo", "models"};
	for (size_t i = 0; i < sizeof plan_keys / sizeof plan_keys[0]; i++) {
		cJSON *v = take(it, plan_keys[i]);
		if (!v)
			continue;
		if (!s->plan && !(s->plan = cJSON_CreateObject())) {
			cJSON_Delete(v);
			fail(&r, "%s", "out of memory");
			goto out;
		}
		cJSON_AddItemToObject(s->plan, plan_keys[i], v);
	}
	s->tokens_from_usage = get_u64(&r, it, "requests_counted_from_usage");
	s->tokens_from_chunks = get_u64(&r, it, "requests_counted_from_chunks");
	{
		const cJSON *w = obj(it, "warnings");
		const cJSON *u = w ? cJSON_GetObjectItemCaseSensitive(w, "usage_vs_chunks") : NULL;
		if (u) {
			s->usage_mismatch = get_u64(&r, u, "count");
			get_str(u, "last_message", s->usage_mismatch_msg, sizeof s->usage_mismatch_msg);
		}
	}
	s->started = get_u64(&r, it, "started");
	s->connections = get_u64(&r, it, "connections_opened");
	s->connection_retries = get_u64(&r, it, "connection_retry");
	s->max_in_flight = get_u64(&r, it, "max_in_flight");

	const cJSON *cn = obj(it, "counters");
	if (!obj(cn, "run")) {
		fail(&r, "%s", "no \"counters\" object");
		goto out;
	}
	get_counters(&r, obj(cn, "run"), &s->run_c);
	get_counters(&r, obj(cn, "window"), &s->win_c);
	s->max_output_tok_s = get_num(&r, obj(obj(it, "throughput"), "run"), "max_output_tok_per_s", NAN);

	const cJSON *metrics = obj(it, "metrics");
	if (!metrics) {
		fail(&r, "%s", "no \"metrics\" object");
		goto out;
	}
	get_hists(&r, metrics, s->run);
	const cJSON *win = obj(it, "window");
	s->win_seconds = get_num(&r, win, "seconds", 0);
	get_hists(&r, obj(win, "metrics"), s->win);

	const cJSON *errs = obj(it, "errors");
	for (int k = 0; errs && k < ERR_NKINDS; k++) {
		const cJSON *eo = obj(errs, stats_err_name((enum err_kind)k));
		if (!eo)
			continue;
		s->errors[k] = get_u64(&r, eo, "count");
		get_str(eo, "last_message", s->last_msg[k], sizeof s->last_msg[k]);
	}
	const cJSON *codes = obj(it, "http_status");
	const cJSON *c;
	cJSON_ArrayForEach(c, codes)
	{
		char *end;
		long code = strtol(c->string, &end, 10);
		if (*end || code <= 0 || code >= STATS_HTTP_CODES) {
			fail(&r, "bad HTTP status key \"%s\"", c->string);
			break;
		}
		s->http_codes[code] = get_u64(&r, codes, c->string);
	}
	s->options = take(it, "options");
	s->server = take(it, "server");
	s->series = take(it, "series");
	s->request_log = take(it, "request_log");
	s->sources = take(it, "merged_from");
out:
	cJSON_Delete(root);
	if (r.bad) {
		snapshot_release(s);
		return -1;
	}
	return 0;
}

int snapshot_read_file(struct snapshot *s, const char *path, char *err, size_t errcap)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errcap, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = -1;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 1 << 16;
			char *nb = realloc(buf, ncap);
			if (!nb) {
				snprintf(err, errcap, "out of memory reading %s", path);
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errcap, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	char perr[200];
	if (snapshot_parse(s, buf, len, perr, sizeof perr) != 0) {
		snprintf(err, errcap, "%s: %s", path, perr);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	fclose(f);
	return rc;
}

/* ---- merge ---- */

static cJSON *source_summary(const struct snapshot *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "host", s->host);
	cJSON_AddStringToObject(o, "run_id", s->run_id);
	cJSON_AddNumberToObject(o, "start_unix", s->start_unix);
	cJSON_AddNumberToObject(o, "duration", s->duration);
	cJSON_AddStringToObject(o, "target_url", s->target_url);
	cJSON_AddStringToObject(o, "model", s->model);
	cJSON_AddNumberToObject(o, "completed", (double)s->run_c.completed);
	cJSON_AddNumberToObject(o, "failed", (double)snapshot_failed(s));
	cJSON_AddNumberToObject(o, "runs", s->nruns);
	cJSON_AddItemToObject(o, "server", s->server ? cJSON_Duplicate(s->server, 1) : cJSON_CreateNull());
	if (s->plan)
		cJSON_AddItemToObject(o, "plan", cJSON_Duplicate(s->plan, 1));
	return o;
}

/* Whether run id `id` is input s's own or one of the runs s merged. */
static bool snapshot_has_run(const struct snapshot *s, const char *id)
{
	if (!id[0])
		return false;
	if (strcmp(s->run_id, id) == 0)
		return true;
	const cJSON *src;
	cJSON_ArrayForEach(src, s->sources)
	{
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(src, "run_id");
		if (cJSON_IsString(r) && strcmp(r->valuestring, id) == 0)
			return true;
	}
	return false;
}

/* The same run twice (a file given twice, a run with its own snapshot, a
 * merge with one of its parts) would count its requests twice. */
static int merge_check_distinct(const struct snapshot *const *src, size_t n, char *err, size_t errcap)
{
	for (size_t i = 0; i < n; i++) {
		const char *ids[1 + 64];
		size_t k = 0;
		if (src[i]->run_id[0])
			ids[k++] = src[i]->run_id;
		const cJSON *so;
		cJSON_ArrayForEach(so, src[i]->sources)
		{
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(so, "run_id");
			if (k < sizeof ids / sizeof ids[0] && cJSON_IsString(r) && r->valuestring[0])
				ids[k++] = r->valuestring;
		}
		for (size_t j = i + 1; j < n; j++)
			for (size_t m = 0; m < k; m++)
				if (snapshot_has_run(src[j], ids[m])) {
					snprintf(err, errcap,
						 "inputs %zu and %zu hold the same run (run_id %s): merging would "
						 "count its requests twice",
						 i + 1, j + 1, ids[m]);
					return -1;
				}
	}
	return 0;
}

int snapshot_merge(struct snapshot *dst, const struct snapshot *const *src, size_t n, char *err, size_t errcap)
{
	memset(dst, 0, sizeof *dst);
	if (n == 0) {
		snprintf(err, errcap, "nothing to merge");
		return -1;
	}
	if (merge_check_distinct(src, n, err, errcap) != 0)
		return -1;
	if (alloc_hists(dst) != 0 || !(dst->sources = cJSON_CreateArray()))
		goto oom;
	const struct snapshot *first = src[0];
	dst->schema = SNAPSHOT_SCHEMA;
	dst->reason = SNAPSHOT_MERGED;
	snprintf(dst->version, sizeof dst->version, "%s", PACKAGE_VERSION);
	snprintf(dst->status, sizeof dst->status, "merged");
	snprintf(dst->stop_reason, sizeof dst->stop_reason, "merged");
	snprintf(dst->target_url, sizeof dst->target_url, "%s", first->target_url);
	snprintf(dst->model, sizeof dst->model, "%s", first->model);
	snprintf(dst->server_detected, sizeof dst->server_detected, "%s", first->server_detected);
	dst->open_loop = first->open_loop;
	dst->max_output_tok_s = NAN;
	dst->vllm_request_rate = 0;
	dst->vllm_max_concurrency = 0;
	dst->burstiness = first->burstiness;
	/* Goodput adds up only when every run counted the same SLOs. */
	dst->have_slo = first->have_slo;
	snprintf(dst->slo_desc, sizeof dst->slo_desc, "%s", first->slo_desc);
	double start = INFINITY, end = -INFINITY, taken = -INFINITY;
	bool same_host = true;
	for (size_t i = 0; i < n; i++) {
		const struct snapshot *s = src[i];
		/* Fields shared by every input are kept; ones that differ are
		 * listed per input in merged_from. */
		if (strcmp(s->host, first->host) != 0)
			same_host = false;
		if (strcmp(s->target_url, first->target_url) != 0)
			dst->target_url[0] = '\0';
		if (strcmp(s->model, first->model) != 0)
			dst->model[0] = '\0';
		if (strcmp(s->server_detected, first->server_detected) != 0)
			dst->server_detected[0] = '\0';
		if (s->open_loop != first->open_loop)
			dst->open_loop = false;
		if (!(s->burstiness == first->burstiness))
			dst->burstiness = NAN;
		if (!s->have_slo || strcmp(s->slo_desc, first->slo_desc) != 0)
			dst->have_slo = false;
		dst->slo_run.ended += s->slo_run.ended;
		dst->slo_run.met_all += s->slo_run.met_all;
		for (int k = 0; k < SLO_N; k++)
			dst->slo_run.met[k] += s->slo_run.met[k];
		/* The measured span ends where the run did; warmup comes first,
		 * so it starts `duration` before (a cooldown shifts it later by
		 * its length, the same for runs made alike). */
		double s_end = s->start_unix + s->elapsed, s_start = s_end - s->duration;
		if (s_start < start)
			start = s_start;
		if (s_end > end)
			end = s_end;
		if (s->taken_unix > taken)
			taken = s->taken_unix;
		if (s->win_seconds > dst->win_seconds)
			dst->win_seconds = s->win_seconds;
		dst->concurrency += s->concurrency;
		dst->rate += s->rate;
		dst->max_concurrency += s->max_concurrency;
		dst->paused = dst->paused || s->paused;
		dst->in_flight += s->in_flight;
		dst->pending += s->pending;
		dst->vllm_request_rate += s->vllm_request_rate;
		dst->vllm_max_concurrency += s->vllm_max_concurrency;
		stats_counters_add(&dst->run_c, &s->run_c);
		stats_counters_add(&dst->win_c, &s->win_c);
		dst->started += s->started;
		/* Peaks need not coincide: the sum is an upper bound. */
		dst->max_in_flight += s->max_in_flight;
		dst->connections += s->connections;
		dst->connection_retries += s->connection_retries;
		dst->tokens_from_usage += s->tokens_from_usage;
		dst->tokens_from_chunks += s->tokens_from_chunks;
		dst->usage_mismatch += s->usage_mismatch;
		if (s->usage_mismatch)
			snprintf(dst->usage_mismatch_msg, sizeof dst->usage_mismatch_msg, "%s", s->usage_mismatch_msg);
		for (int k = 0; k < ERR_NKINDS; k++) {
			dst->errors[k] += s->errors[k];
			if (s->errors[k] && s->last_msg[k][0])
				snprintf(dst->last_msg[k], sizeof dst->last_msg[k], "%s", s->last_msg[k]);
		}
		for (int c = 0; c < STATS_HTTP_CODES; c++)
			dst->http_codes[c] += s->http_codes[c];
		for (int m = 0; m < STAT_NMETRICS; m++) {
			hist_add(dst->run[m], s->run[m]);
			hist_add(dst->win[m], s->win[m]);
		}
		dst->nruns += s->nruns ? s->nruns : 1;
		cJSON *sum = source_summary(s);
		if (!sum)
			goto oom;
		cJSON_AddItemToArray(dst->sources, sum);
	}
	snprintf(dst->host, sizeof dst->host, "%s", same_host ? first->host : "");
	snprintf(dst->token_source, sizeof dst->token_source, "%s",
		 dst->tokens_from_usage && dst->tokens_from_chunks ? "mixed"
		 : dst->tokens_from_chunks			   ? "chunks"
								   : "usage");
	dst->start_unix = start;
	dst->duration = end > start ? end - start : 0;
	dst->elapsed = dst->duration;
	if (!dst->have_slo)
		memset(&dst->slo_run, 0, sizeof dst->slo_run);
	dst->taken_unix = taken;
	return 0;
oom:
	snapshot_release(dst);
	snprintf(err, errcap, "out of memory");
	return -1;
}
