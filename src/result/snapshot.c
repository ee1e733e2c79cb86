#include "config.h"

/* A snapshot of a live run (its view): everything it knows, gathered into struct
 * snapshot (histograms borrowed, not copied) for snapshot_to_json. Runs in
 * the writer's forked child too, on the child's copy of the memory. */

#include "infertop/options.h"
#include "infertop/snapshot.h"
#include "infertop/redact.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/view.h"
#include "infertop/hist.h"
#include "infertop/plan.h"
#include "infertop/reqlog.h"
#include "infertop/series.h"
#include "infertop/server.h"

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* The scraper's block names the URLs it read, and its errors may quote
 * them: no credentials may reach a file. */
static void scrub_server(cJSON *j)
{
	for (cJSON *c = j ? j->child : NULL; c; c = c->next) {
		if (cJSON_IsString(c) && c->valuestring) {
			if (c->string && strcmp(c->string, "url") == 0) {
				char *clean = malloc(strlen(c->valuestring) + 1);
				if (clean) {
					redact_url(c->valuestring, clean, strlen(c->valuestring) + 1);
					strcpy(c->valuestring, clean);
					free(clean);
				}
			} else {
				redact_userinfo(c->valuestring);
			}
		} else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
			scrub_server(c);
		}
	}
}

static void put_num(cJSON *o, const char *k, double d)
{
	if (o)
		cJSON_AddItemToObject(o, k, snapshot_json_number(d));
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

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *token_source(uint64_t from_usage, uint64_t from_chunks)
{
	if (from_usage && from_chunks)
		return "mixed";
	if (from_chunks)
		return "chunks";
	return "usage";
}

/* ---- from a live run ---- */

static void add_str_array(cJSON *o, const char *k, char *const *v, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, k);
	for (size_t i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i] ? v[i] : ""));
}

static cJSON *options_object(const struct run_view *v)
{
	const struct config *c = v->cfg;
	char url[1024];
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	redact_url(c->url, url, sizeof url);
	put_str(o, "url", url);
	cJSON_AddStringToObject(o, "api", c->api == OAI_CHAT ? "chat" : "completions");
	put_str(o, "model", v->model ? v->model : c->model);
	cJSON_AddStringToObject(o, "mode", c->rate > 0 ? "rate" : "concurrency");
	put_num(o, "concurrency", (double)c->concurrency);
	put_num(o, "rate", c->rate);
	put_num(o, "max_concurrency", (double)c->max_concurrency);
	put_u64(o, "seed", c->seed);
	put_num(o, "requests", (double)c->requests);
	put_num(o, "duration_s", (double)c->duration_ns / 1e9);
	put_num(o, "input_tokens", (double)c->input_tokens);
	put_num(o, "output_tokens", (double)c->output_tokens);
	cJSON_AddBoolToObject(o, "ignore_eos", c->ignore_eos);
	if (c->have_temperature)
		put_num(o, "temperature", c->temperature);
	else
		cJSON_AddNullToObject(o, "temperature");
	cJSON *xb = c->extra_body ? cJSON_Parse(c->extra_body) : NULL;
	cJSON_AddItemToObject(o, "extra_body", xb ? xb : cJSON_CreateNull());
	/* Header values may carry credentials: only their names are saved. */
	cJSON *h = cJSON_AddArrayToObject(o, "header_names");
	for (size_t i = 0; h && i < c->nheaders; i++) {
		const char *colon = strchr(c->headers[i], ':');
		size_t n = colon ? (size_t)(colon - c->headers[i]) : strlen(c->headers[i]);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), c->headers[i]);
		cJSON_AddItemToArray(h, cJSON_CreateString(name));
	}
	put_str(o, "api_key_env", c->api_key_env ? c->api_key_env : "OPENAI_API_KEY");
	cJSON_AddBoolToObject(o, "insecure", c->insecure);
	put_num(o, "timeout_s", (double)c->timeout_ns / 1e9);
	cJSON_AddBoolToObject(o, "new_connection", c->new_connection);
	cJSON_AddBoolToObject(o, "no_tui", c->no_tui);
	cJSON_AddBoolToObject(o, "demo", c->demo);
	add_str_array(o, "sim_args", c->demo_args, c->ndemo_args);
	put_num(o, "interval_s", (double)c->interval_ns / 1e9);
	put_num(o, "window_s", (double)c->window_ns / 1e9);
	put_num(o, "grace_s", (double)c->grace_ns / 1e9);
	put_str(o, "output", c->output_path);
	cJSON_AddBoolToObject(o, "quiet", c->quiet);
	if (c->metrics_url && strcmp(c->metrics_url, "none") != 0)
		redact_url(c->metrics_url, url, sizeof url);
	else
		copy_str(url, sizeof url, c->metrics_url);
	put_str(o, "metrics_url", url);
	put_num(o, "metrics_interval_s", (double)c->metrics_interval_ns / 1e9);
	put_str(o, "server", c->server);
	redact_url(c->gpu_metrics_url, url, sizeof url);
	put_str(o, "gpu_metrics_url", url);
	add_str_array(o, "watch_metrics", c->watch_metrics, c->nwatch_metrics);
	put_str(o, "arrival", c->arrival);
	put_num(o, "burstiness", c->burstiness);
	put_str(o, "stages", c->stages);
	put_str(o, "sweep", c->sweep);
	put_num(o, "stage_duration_s", (double)c->stage_duration_ns / 1e9);
	put_str(o, "warmup", c->warmup);
	put_num(o, "cooldown_s", (double)c->cooldown_ns / 1e9);
	put_str(o, "scenario", c->scenario);
	cJSON_AddBoolToObject(o, "matrix", c->matrix);
	put_str(o, "models", c->models);
	put_str(o, "traffic_split", c->traffic_split);
	put_str(o, "slo", c->slo);
	put_str(o, "snapshot_dir", c->snapshot_dir);
	put_num(o, "snapshot_every_s", (double)c->snapshot_every_ns / 1e9);
	put_str(o, "request_log", c->request_log);
	put_u64(o, "request_log_max", c->request_log_max);
	if (c->have_max_error_rate)
		put_num(o, "max_error_rate", c->max_error_rate);
	else
		cJSON_AddNullToObject(o, "max_error_rate");
	put_num(o, "refresh_hz", c->refresh_hz);
	put_str(o, "theme", c->theme);
	cJSON_AddBoolToObject(o, "ascii", c->ascii);
	return o;
}

static cJSON *load_changes(const struct run_view *v)
{
	const struct load *l = v->load;
	cJSON *a = cJSON_CreateArray();
	if (!a)
		return NULL;
	uint32_t n = l->nevents < LOAD_EVENTS ? l->nevents : LOAD_EVENTS;
	for (uint32_t i = l->nevents - n; i != l->nevents; i++) {
		const struct load_event *ev = &l->events[i % LOAD_EVENTS];
		cJSON *o = cJSON_CreateObject();
		if (!o)
			break;
		put_num(o, "t_s", v->t_start ? (double)(ev->t_ns - v->t_start) / 1e9 : 0.0);
		cJSON_AddStringToObject(o, "mode", ev->mode == LOAD_OPEN ? "rate" : "concurrency");
		put_num(o, "value", ev->value);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* JSON keys of the series, by enum; ids added later fall back to "sN". */
static const char *const series_keys[SER_N] = {
	[SER_OUT_TOK_S] = "output_tok_s",
	[SER_REQ_S] = "requests_s",
	[SER_TTFT_P99] = "ttft_p99_ms",
	[SER_ITL_P99] = "itl_p99_ms",
	[SER_IN_FLIGHT] = "in_flight",
	[SER_TARGET] = "target",
	[SER_ERRORS] = "errors_s",
	[SER_WAITING] = "server_waiting",
	[SER_RUNNING] = "server_running",
	[SER_KV] = "server_kv_usage",
};

#define SERIES_FINE_S 3600      /* the last hour at 1 s */
#define SERIES_MID_S 86400      /* the last day at 10 s */

/* One resolution: `span_s` seconds back from the newest point, at `res_s`. */
static cJSON *series_level(const struct series *ser, int64_t t_start, int64_t span_s, int64_t res_s)
{
	size_t n = (size_t)((span_s + res_s - 1) / res_s);
	if (n == 0)
		return NULL;
	double *buf = malloc(n * sizeof *buf);
	cJSON *lv = cJSON_CreateObject();
	cJSON *vals = lv ? cJSON_AddObjectToObject(lv, "values") : NULL;
	if (!buf || !vals) {
		free(buf);
		cJSON_Delete(lv);
		return NULL;
	}
	put_num(lv, "resolution_s", (double)res_s);
	bool started = false;
	for (int id = 0; id < SER_N; id++) {
		int64_t t0 = 0;
		size_t got = series_read(ser, (enum series_id)id, span_s * CLOCK_NS_PER_S, buf, n, &t0);
		if (!started) {
			put_num(lv, "start_s", got ? (double)(t0 - t_start) / 1e9 : 0.0);
			put_num(lv, "points", (double)got);
			started = true;
		}
		char key[16];
		const char *k = series_keys[id];
		if (!k) {
			snprintf(key, sizeof key, "s%d", id);
			k = key;
		}
		cJSON *a = cJSON_AddArrayToObject(vals, k);
		for (size_t i = 0; a && i < got; i++)
			cJSON_AddItemToArray(a, snapshot_json_float((float)buf[i]));
	}
	free(buf);
	return lv;
}

/* The series as kept in memory: the last hour at 1 s, the last day at
 * 10 s when the run is longer, the whole run at 1 min past a day. */
static cJSON *series_object(const struct series *ser, int64_t t_start, int64_t elapsed_ns)
{
	int64_t el = elapsed_ns / CLOCK_NS_PER_S;
	cJSON *o = cJSON_CreateObject();
	cJSON *levels = o ? cJSON_AddArrayToObject(o, "levels") : NULL;
	if (!levels) {
		cJSON_Delete(o);
		return NULL;
	}
	static const struct {
		int64_t res, span, after;
	} plan[] = {
		{1, SERIES_FINE_S, 0},
		{10, SERIES_MID_S, SERIES_FINE_S},
		{60, INT64_MAX, SERIES_MID_S},
	};
	for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
		if (el <= plan[i].after || (i == 0 && el < 1))
			continue;
		int64_t span = el < plan[i].span ? el : plan[i].span;
		cJSON *lv = series_level(ser, t_start, span, plan[i].res);
		if (lv)
			cJSON_AddItemToArray(levels, lv);
	}
	cJSON *names = cJSON_AddObjectToObject(o, "labels");
	for (int id = 0; names && id < SER_N; id++) {
		char key[16];
		const char *k = series_keys[id];
		if (!k) {
			snprintf(key, sizeof key, "s%d", id);
			k = key;
		}
		cJSON_AddStringToObject(names, k, series_name((enum series_id)id));
	}
	return o;
}

/* vLLM's max_output_tokens_per_s: the busiest second. Known only while the
 * 1 s level still covers the whole run. */
static double max_out_tok_s(const struct series *ser, int64_t elapsed_ns)
{
	int64_t el = (elapsed_ns + CLOCK_NS_PER_S - 1) / CLOCK_NS_PER_S;
	if (!ser || el <= 0 || el > SERIES_FINE_S)
		return NAN;
	double *buf = malloc((size_t)el * sizeof *buf);
	if (!buf)
		return NAN;
	size_t got = series_read(ser, SER_OUT_TOK_S, 0, buf, (size_t)el, NULL);
	double mx = NAN;
	for (size_t i = 0; i < got; i++)
		if (!isnan(buf[i]) && (isnan(mx) || buf[i] > mx))
			mx = buf[i];
	free(buf);
	return mx;
}

/* The plan's own JSON and end-of-run text, kept as they are: a report
 * from the file prints what the run printed. */
static int plan_parts(struct snapshot *s, const struct plan *p)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return -1;
	plan_json_add(p, o, s->duration);
	if (o->child)
		s->plan = o;
	else
		cJSON_Delete(o);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return -1;
	plan_print_summary(p, m, s->duration);
	if (fclose(m) != 0) {
		free(buf);
		return -1;
	}
	if (len)
		s->plan_text = buf;
	else
		free(buf);
	return 0;
}

static const char *state_name(enum engine_state st)
{
	switch (st) {
	case ENGINE_IDLE:
		return "idle";
	case ENGINE_RUNNING:
		return "running";
	case ENGINE_DRAINING:
		return "draining";
	case ENGINE_DONE:
		return "done";
	}
	return "?";
}

int snapshot_from_view(struct snapshot *s, const struct run_view *v, int64_t now_ns, enum snapshot_reason why)
{
	const struct stats *st = v->stats;
	const struct config *c = v->cfg;
	memset(s, 0, sizeof *s);
	s->schema = SNAPSHOT_SCHEMA;
	s->reason = why;
	s->nruns = 1;
	copy_str(s->version, sizeof s->version, PACKAGE_VERSION);
	copy_str(s->run_id, sizeof s->run_id, v->run_id);
	if (gethostname(s->host, sizeof s->host) != 0)
		s->host[0] = '\0';
	s->host[sizeof s->host - 1] = '\0';
	redact_url(c->url, s->target_url, sizeof s->target_url);
	copy_str(s->model, sizeof s->model, v->model ? v->model : c->model);
	if (v->server)
		copy_str(s->server_detected, sizeof s->server_detected, v->server->detected);
	copy_str(s->status, sizeof s->status, state_name(v->state));
	copy_str(s->stop_reason, sizeof s->stop_reason, v->stop_reason);
	copy_str(s->token_source, sizeof s->token_source, token_source(st->tokens_from_usage, st->tokens_from_chunks));

	/* After the end the stats stand still: figures are as of t_end. */
	int64_t at = v->state == ENGINE_DONE && v->t_end ? v->t_end : now_ns;
	int64_t elapsed = run_view_elapsed(v, now_ns);
	s->taken_unix = wall_now();
	s->start_unix = v->t_start ? s->taken_unix - (double)(now_ns - v->t_start) / 1e9 : s->taken_unix;
	s->elapsed = elapsed > 0 ? (double)elapsed / 1e9 : 0.0;
	/* Warmup and cooldown are not part of the measured run. */
	s->duration = v->t_start ? plan_measured_seconds(v->plan, v->t_start, at) : 0.0;
	copy_str(s->input_length_source, sizeof s->input_length_source,
		 v->dataset ? dataset_length_source(v->dataset) : "");

	s->open_loop = v->load->mode == LOAD_OPEN;
	s->concurrency = (double)v->load->concurrency;
	s->rate = v->load->rate;
	s->max_concurrency = (double)v->load->max_concurrency;
	s->paused = v->load->paused;
	s->in_flight = st->in_flight;
	s->pending = load_pending(v->load);
	if (c->rate > 0) {
		s->vllm_request_rate = c->rate;
		s->vllm_max_concurrency = c->max_concurrency ? (double)c->max_concurrency : NAN;
	} else {
		s->vllm_request_rate = INFINITY;
		s->vllm_max_concurrency = (double)c->concurrency;
	}
	s->burstiness = c->burstiness > 0 ? c->burstiness : 1.0;

	s->run_c = st->run_c;
	s->win_c = st->win_c;
	s->win_seconds = stats_window_seconds(st, at);
	s->started = st->started;
	s->max_in_flight = st->max_in_flight;
	s->connections = st->connections;
	s->connection_retries = st->connection_retries;
	s->tokens_from_usage = st->tokens_from_usage;
	s->tokens_from_chunks = st->tokens_from_chunks;
	s->usage_mismatch = st->usage_mismatch;
	copy_str(s->usage_mismatch_msg, sizeof s->usage_mismatch_msg, st->usage_mismatch_msg);
	memcpy(s->errors, st->errors, sizeof s->errors);
	memcpy(s->last_msg, st->last_msg, sizeof s->last_msg);
	for (int k = 0; k < ERR_NKINDS; k++)
		redact_userinfo(s->last_msg[k]);
	memcpy(s->http_codes, st->http_codes, sizeof s->http_codes);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = st->run[m];
		s->win[m] = st->win[m];
	}
	s->max_output_tok_s = max_out_tok_s(v->series, elapsed);

	const struct slo *slo = plan_slo(v->plan);
	if (slo) {
		s->have_slo = true;
		s->slo_run = slo->run;
		slo_describe(slo, s->slo_desc, sizeof s->slo_desc);
	}

	s->options = options_object(v);
	s->load_changes = load_changes(v);
	if (!s->options || !s->load_changes)
		goto oom;
	if (v->plan && plan_parts(s, v->plan) != 0)
		goto oom;
	if (v->server && !(s->server = server_to_json(v->server)))
		goto oom;
	scrub_server(s->server);
	if (v->series && v->t_start && !(s->series = series_object(v->series, v->t_start, elapsed)))
		goto oom;
	if (v->reqlog && !(s->request_log = reqlog_to_json(v->reqlog)))
		goto oom;
	return 0;
oom:
	snapshot_release(s);
	return -1;
}

char *snapshot_build(const struct run_view *v, int64_t now_ns, enum snapshot_reason why)
{
	struct snapshot s;
	if (snapshot_from_view(&s, v, now_ns, why) != 0)
		return NULL;
	cJSON *j = snapshot_to_json(&s);
	snapshot_release(&s);
	if (!j)
		return NULL;
	char *txt = cJSON_Print(j);
	cJSON_Delete(j);
	return txt;
}

