#include "config.h"

/* The one JSON writer of the result layer: snapshot documents (-o, the
 * snapshot files, a merge), the server block, the parts of a live run that
 * are carried as JSON (options, load changes, series), and the documents
 * of `infertop report|compare --format json`. It only reads struct
 * snapshot and the states it names; enum values are named with the tables
 * the reader uses (keys.c). */

#include "infertop/result.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/options.h"
#include "infertop/clock.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/openai.h"
#include "infertop/plan.h"
#include "infertop/redact.h"
#include "infertop/reqlog.h"
#include "infertop/transport.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/snapshot.h"
#include "infertop/tls.h"
#include "infertop/trace_replay.h"

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

/* ---- the snapshot document ---- */

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

static cJSON *metric_object(const struct hist *h, bool lean)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	put_u64(o, "count", hist_count(h));
	if (lean)
		goto hist;
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
hist:;
	char *enc = hist_encode(h);
	if (!enc) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddStringToObject(o, "hist", enc);
	free(enc);
	return o;
}

static cJSON *metrics_object(struct hist *const *h, bool lean)
{
	cJSON *m = cJSON_CreateObject();
	for (int k = 0; m && k < STAT_NMETRICS; k++) {
		cJSON *mo = metric_object(h[k], lean);
		if (!mo) {
			cJSON_Delete(m);
			return NULL;
		}
		cJSON_AddItemToObject(m, stats_metric_name((enum stat_metric)k), mo);
	}
	return m;
}

/* A histogram of plain counts (turns, tokens), not microseconds. */
static cJSON *count_object(const struct hist *h, bool lean)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	put_u64(o, "count", hist_count(h));
	if (!lean) {
		put_num(o, "mean", hist_mean(h));
		put_num(o, "min", (double)hist_min(h));
		put_num(o, "p50", (double)hist_percentile(h, 50));
		put_num(o, "p90", (double)hist_percentile(h, 90));
		put_num(o, "p99", (double)hist_percentile(h, 99));
		put_num(o, "max", (double)hist_max(h));
	}
	char *enc = hist_encode(h);
	if (!enc) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddStringToObject(o, "hist", enc);
	free(enc);
	return o;
}

/* Adds k: the histogram's object when it holds samples; -1 on OOM. */
static int put_xhist(cJSON *o, const char *k, const struct snapshot *s, enum stats_xhist x, bool counts)
{
	const struct hist *h = snapshot_xhist(s, x);
	if (!h || !o)
		return 0;
	cJSON *j = counts ? count_object(h, s->lean) : metric_object(h, s->lean);
	if (!j)
		return -1;
	cJSON_AddItemToObject(o, k, j);
	return 0;
}

static cJSON *cache_counters(const struct stats_counters *c)
{
	cJSON *o = cJSON_CreateObject();
	put_u64(o, "requests_known", c->cache_known);
	put_u64(o, "requests_unknown", c->cache_unknown);
	put_u64(o, "prompt_tokens", c->prompt_known);
	put_u64(o, "cached_tokens", c->prompt_cached);
	put_num(o, "hit_rate", stats_cache_hit_rate(c));
	return o;
}

/* "cache": what the server said of its prefix cache, request by request
 * (man/infertop-snapshot.5); whenever one said, "0 cached" included: the
 * file is the record (a server that never hits is a finding, and the
 * counters must read back whole), while the screens show it only when
 * it matters (snapshot_has_cache). */
static int add_cache_object(cJSON *it, const struct snapshot *s)
{
	if (!s->run_c.cache_known && !s->win_c.cache_known && !snapshot_has_cache(s))
		return 0;
	cJSON *o = cache_counters(&s->run_c);
	if (!o)
		return -1;
	cJSON_AddItemToObject(it, "cache", o);
	cJSON_AddItemToObject(o, "window", cache_counters(&s->win_c));
	if (put_xhist(o, "ttft_mostly_cached", s, XH_TTFT_WARM, false) != 0 ||
	    put_xhist(o, "ttft_cold", s, XH_TTFT_COLD, false) != 0)
		return -1;
	return 0;
}

/* "sessions": --sessions' figures, by turn ("1".."7", "8+") too; only
 * when there are some. */
static int add_sessions_object(cJSON *it, const struct snapshot *s)
{
	if (!snapshot_has_sessions(s))
		return 0;
	cJSON *o = cJSON_AddObjectToObject(it, "sessions");
	if (!o)
		return -1;
	put_u64(o, "done", s->sessions_done);
	put_u64(o, "failed", s->sessions_failed);
	put_u64(o, "context_limited", s->sessions_context);
	put_u64(o, "incomplete", s->sessions_incomplete);
	put_u64(o, "turns_completed", s->session_turns);
	if (put_xhist(o, "duration", s, XH_SESSION_DURATION, false) != 0 ||
	    put_xhist(o, "turns", s, XH_SESSION_TURNS, true) != 0 ||
	    put_xhist(o, "context_tokens", s, XH_SESSION_CONTEXT, true) != 0)
		return -1;
	cJSON *bt = cJSON_AddObjectToObject(o, "by_turn");
	for (int t = 0; bt && t < STATS_TURNS; t++) {
		if (!snapshot_xhist(s, (enum stats_xhist)(XH_TURN_TTFT + t)) &&
		    !snapshot_xhist(s, (enum stats_xhist)(XH_TURN_E2E + t)))
			continue;
		cJSON *to = cJSON_AddObjectToObject(bt, stats_turn_label(t));
		enum stats_xhist ttft = (enum stats_xhist)(XH_TURN_TTFT + t), e2e = (enum stats_xhist)(XH_TURN_E2E + t);
		if (!to || put_xhist(to, stats_metric_name(STAT_TTFT), s, ttft, false) != 0 ||
		    put_xhist(to, stats_metric_name(STAT_E2E), s, e2e, false) != 0)
			return -1;
	}
	return bt ? 0 : -1;
}

static cJSON *counters_object(const struct stats_counters *c)
{
	cJSON *o = cJSON_CreateObject();
	put_u64(o, "completed", c->completed);
	put_u64(o, "failed", c->failed);
	put_u64(o, "incomplete", c->incomplete);
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

/* A merge of runs against different targets or models: figures that add
 * up different things. */
static void merge_targets_warning(cJSON *w, const cJSON *sources)
{
	char msg[300];
	int n = snapshot_merge_targets_differ(sources, msg, sizeof msg);
	if (!w || n == 0)
		return;
	cJSON *o = cJSON_AddObjectToObject(w, "merged_targets_differ");
	put_u64(o, "count", (uint64_t)n);
	if (o)
		cJSON_AddStringToObject(o, "last_message", msg);
}

/* A fleet that lost generators says so among the warnings too: a reader
 * that looks only there learns that part of the planned load is missing. */
static void fleet_warning(cJSON *w, const cJSON *fleet)
{
	const cJSON *lost = cJSON_GetObjectItemCaseSensitive(fleet, "generators_lost");
	const cJSON *planned = cJSON_GetObjectItemCaseSensitive(fleet, "generators_planned");
	int n = cJSON_GetArraySize(lost);
	if (!w || n <= 0 || !cJSON_IsNumber(planned))
		return;
	cJSON *o = cJSON_AddObjectToObject(w, "generators_lost");
	char msg[160];
	snprintf(msg, sizeof msg, "%d of %.0f generators lost: their share of the planned load is missing", n,
		 planned->valuedouble);
	put_u64(o, "count", (uint64_t)n);
	if (o)
		cJSON_AddStringToObject(o, "last_message", msg);
}

/* vLLM's header keys, as benchmark_serving.py writes them before its
 * figures: date ("%Y%m%d-%H%M%S", here in UTC, when the result was taken),
 * backend (its name for the endpoint), model_id and tokenizer_id (no
 * tokenizer of its own is loaded: the model's, as vLLM defaults it) and
 * num_prompts (requests that ended, the length of the detailed arrays). */
static void add_vllm_header(cJSON *o, const struct snapshot *s)
{
	char date[32] = "";
	time_t t = (time_t)floor(s->taken_unix);
	struct tm tm;
	if (s->taken_unix > 0 && gmtime_r(&t, &tm))
		strftime(date, sizeof date, "%Y%m%d-%H%M%S", &tm);
	put_str(o, "date", date);
	const cJSON *api = s->options ? cJSON_GetObjectItemCaseSensitive(s->options, "api") : NULL;
	const char *backend = NULL;
	if (cJSON_IsString(api))
		backend = strcmp(api->valuestring, "completions") == 0 ? "openai" : "openai-chat";
	put_str(o, "backend", backend);
	put_str(o, "model_id", s->model);
	put_str(o, "tokenizer_id", s->model);
	put_u64(o, "num_prompts", s->run_c.completed + snapshot_failed(s));
}

static void add_vllm_keys(cJSON *o, const struct snapshot *s)
{
	double dur = s->duration;
	add_vllm_header(o, s);
	put_num(o, "duration", dur);
	put_u64(o, "completed", s->run_c.completed);
	put_u64(o, "failed", snapshot_failed(s));
	/* Cut by the run's end while streaming: not failed (their output
	 * tokens are in total_output_tokens). */
	put_u64(o, "incomplete", s->run_c.incomplete);
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

/* Each metric's words (client_metrics.def), then what holds for all. */
static const char definitions[] =
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, prom_pos, prom, \
		      buckets, prom_help, definition, ...)                                                  \
	definition
#include "infertop/client_metrics.def"
	"failed requests excluded; histograms in microseconds, hist_encode version 1 (h1:)";

static const char *mode_key(int mode)
{
	return result_key_name(result_keys_load_mode, mode, "concurrency");
}

/* ---- the plan's results ---- */

static cJSON *plan_metric_json(const struct snapshot_metric *m)
{
	cJSON *o = cJSON_CreateObject();
	put_num(o, "count", (double)m->count);
	put_num(o, "mean_ms", m->mean_ms);
	put_num(o, "p50_ms", m->p50_ms);
	put_num(o, "p90_ms", m->p90_ms);
	put_num(o, "p99_ms", m->p99_ms);
	return o;
}

static void add_slo_shares(cJSON *o, const struct snapshot_plan *p, const double *share)
{
	cJSON *sh = cJSON_AddObjectToObject(o, "slo_met_share");
	put_num(sh, "all", share[SLO_N]);
	for (int k = 0; sh && k < SLO_N; k++)
		if (p->slo_set[k])
			put_num(sh, slo_name((enum slo_kind)k), share[k]);
}

static cJSON *step_json(const struct snapshot_plan *p, const struct snapshot_step *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	put_num(o, "index", r->index);
	cJSON_AddStringToObject(o, "label", r->label);
	if (r->scenario[0]) {
		cJSON_AddStringToObject(o, "scenario", r->scenario);
		put_num(o, "scenario_input_tokens", r->scenario_input_tokens);
		put_num(o, "scenario_output_tokens", r->scenario_output_tokens);
	}
	cJSON_AddStringToObject(o, "mode", mode_key(r->open_loop ? LOAD_OPEN : LOAD_CLOSED));
	put_num(o, "target", r->target);
	if (r->target_end != r->target)
		put_num(o, "target_end", r->target_end);
	if (r->open_loop)
		cJSON_AddStringToObject(o, "arrival", r->arrival);
	put_num(o, "start_s", r->start_s);
	put_num(o, "end_s", r->end_s);
	put_num(o, "duration", r->duration_s);
	put_num(o, "held_s", r->held_s);
	cJSON_AddBoolToObject(o, "partial", r->partial);
	put_num(o, "started", (double)r->started);
	put_num(o, "completed", (double)r->completed);
	put_num(o, "failed", (double)r->failed);
	put_num(o, "incomplete", (double)r->incomplete);
	put_num(o, "unsent", (double)r->unsent);
	put_num(o, "total_input_tokens", (double)r->input_tokens);
	put_num(o, "total_output_tokens", (double)r->output_tokens);
	put_num(o, "mean_input_tokens", r->mean_input_tokens);
	put_num(o, "mean_output_tokens", r->mean_output_tokens);
	put_num(o, "request_throughput", r->request_throughput);
	put_num(o, "output_throughput", r->output_throughput);
	put_num(o, "total_token_throughput", r->total_token_throughput);
	put_num(o, "mean_concurrency", r->mean_concurrency);
	put_num(o, "max_concurrency", (double)r->max_concurrency);
	if (p->have_slo) {
		put_num(o, "request_goodput", r->request_goodput);
		add_slo_shares(o, p, r->slo_share);
	}
	cJSON_AddItemToObject(o, "ttft", plan_metric_json(&r->ttft));
	cJSON_AddItemToObject(o, "tpot", plan_metric_json(&r->tpot));
	cJSON_AddItemToObject(o, "itl", plan_metric_json(&r->itl));
	cJSON_AddItemToObject(o, "e2el", plan_metric_json(&r->e2e));
	return o;
}

static cJSON *matrix_row(const struct snapshot_plan *p, const struct snapshot_step *r)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "scenario", r->scenario);
	put_num(o, "input_tokens", r->scenario[0] ? r->scenario_input_tokens : 0);
	put_num(o, "output_tokens", r->scenario[0] ? r->scenario_output_tokens : 0);
	put_num(o, mode_key(r->open_loop ? LOAD_OPEN : LOAD_CLOSED), r->target);
	cJSON_AddBoolToObject(o, "partial", r->partial);
	put_num(o, "completed", (double)r->completed);
	put_num(o, "failed", (double)r->failed);
	put_num(o, "request_throughput", r->request_throughput);
	put_num(o, "output_throughput", r->output_throughput);
	put_num(o, "total_token_throughput", r->total_token_throughput);
	put_num(o, "mean_ttft_ms", r->ttft.mean_ms);
	put_num(o, "median_ttft_ms", r->ttft.p50_ms);
	put_num(o, "p99_ttft_ms", r->ttft.p99_ms);
	put_num(o, "median_tpot_ms", r->tpot.p50_ms);
	put_num(o, "median_itl_ms", r->itl.p50_ms);
	put_num(o, "median_e2el_ms", r->e2e.p50_ms);
	put_num(o, "p99_e2el_ms", r->e2e.p99_ms);
	if (p->have_slo)
		put_num(o, "request_goodput", r->request_goodput);
	return o;
}

static void add_plan_object(const struct snapshot_plan *p, cJSON *it)
{
	cJSON *o = cJSON_AddObjectToObject(it, "plan");
	if (!o)
		return;
	cJSON_AddStringToObject(o, "kind", result_key_name(result_keys_plan_kind, p->kind, "none"));
	cJSON_AddStringToObject(o, "arrival", p->arrival);
	put_num(o, "burstiness", p->burstiness);
	if (p->scenario[0])
		cJSON_AddStringToObject(o, "scenario", p->scenario);
	if (p->warmup_s)
		put_num(o, "warmup_s", p->warmup_s);
	if (p->warmup_requests)
		put_num(o, "warmup_requests", (double)p->warmup_requests);
	if (p->cooldown_s)
		put_num(o, "cooldown_s", p->cooldown_s);
	if (p->measured_duration_s)
		put_num(o, "measured_duration_s", p->measured_duration_s);
	put_num(o, "planned_steps", (double)p->planned_steps);
	cJSON_AddStringToObject(o, "state", p->state);
	if (p->have_auto_rates) {
		put_num(o, "synchronous_rate", p->sync_rate);
		put_num(o, "throughput_rate", p->top_rate);
	}
	if (p->note[0])
		cJSON_AddStringToObject(o, "note", p->note);
	cJSON *tl = cJSON_AddArrayToObject(o, "timeline");
	for (size_t i = 0; tl && i < p->ntimeline; i++) {
		const struct snapshot_event *e = &p->timeline[i];
		cJSON *eo = cJSON_CreateObject();
		if (!eo)
			break;
		put_num(eo, "t_s", e->t_s);
		cJSON_AddStringToObject(eo, "event", e->event);
		if (e->step >= 0)
			put_num(eo, "step", e->step);
		cJSON_AddStringToObject(eo, "mode", mode_key(e->open_loop ? LOAD_OPEN : LOAD_CLOSED));
		put_num(eo, "target", e->target);
		cJSON_AddItemToArray(tl, eo);
	}
	if (p->timeline_dropped)
		put_num(o, "timeline_dropped", (double)p->timeline_dropped);
}

static const char slo_definition[] =
	"a request meets an SLO when it completed and its TTFT / TPOT / E2E (from the actual "
	"send) is <= the limit; one-token requests have TPOT 0; failed requests meet none; "
	"shares are over completed + failed; goodput = requests meeting every SLO per second";

static void add_slo_object(const struct snapshot *s, cJSON *it)
{
	const struct snapshot_plan *p = &s->plan;
	cJSON *o = cJSON_AddObjectToObject(it, "slo");
	if (!o)
		return;
	cJSON *lim = cJSON_AddObjectToObject(o, "limits_ms");
	for (int k = 0; lim && k < SLO_N; k++)
		if (p->slo_set[k])
			put_num(lim, slo_name((enum slo_kind)k), p->slo_limit_ms[k]);
	put_num(o, "request_goodput", snapshot_rate(s->slo_run.met_all, s->duration));
	put_num(o, "requests_ended", (double)s->slo_run.ended);
	put_num(o, "requests_meeting_all", (double)s->slo_run.met_all);
	double share[SLO_N + 1];
	for (int k = 0; k <= SLO_N; k++)
		share[k] = slo_share(&s->slo_run, k);
	add_slo_shares(o, p, share);
	cJSON_AddStringToObject(o, "definition", slo_definition);
}

static void add_models_array(const struct snapshot_plan *p, cJSON *it)
{
	cJSON *a = cJSON_AddArrayToObject(it, "models");
	for (size_t i = 0; a && i < p->nmodels; i++) {
		const struct snapshot_model *ms = &p->models[i];
		cJSON *o = cJSON_CreateObject();
		if (!o)
			break;
		cJSON_AddStringToObject(o, "model", ms->name);
		put_num(o, "traffic_share", ms->share);
		put_num(o, "sent", (double)ms->sent);
		put_num(o, "completed", (double)ms->completed);
		put_num(o, "failed", (double)ms->failed);
		put_num(o, "total_input_tokens", (double)ms->input_tokens);
		put_num(o, "total_output_tokens", (double)ms->output_tokens);
		put_num(o, "request_throughput", ms->request_throughput);
		put_num(o, "output_throughput", ms->output_throughput);
		if (p->have_slo) {
			put_num(o, "request_goodput", ms->request_goodput);
			add_slo_shares(o, p, ms->slo_share);
		}
		cJSON_AddItemToObject(o, "ttft", plan_metric_json(&ms->ttft));
		cJSON_AddItemToObject(o, "tpot", plan_metric_json(&ms->tpot));
		cJSON_AddItemToObject(o, "e2el", plan_metric_json(&ms->e2e));
		cJSON_AddItemToArray(a, o);
	}
}

void result_json_plan(cJSON *it, const struct snapshot *s)
{
	const struct snapshot_plan *p = &s->plan;
	if (!it || !p->present)
		return;
	add_plan_object(p, it);
	if (p->nsteps) {
		cJSON *steps = cJSON_AddArrayToObject(it, "steps");
		for (size_t i = 0; steps && i < p->nsteps; i++)
			cJSON_AddItemToArray(steps, step_json(p, &p->steps[i]));
	}
	if (p->kind == PLAN_MATRIX) {
		cJSON *mx = cJSON_AddObjectToObject(it, "matrix");
		cJSON *sc = mx ? cJSON_AddArrayToObject(mx, "scenarios") : NULL;
		for (size_t i = 0; sc && i < p->nmatrix; i++)
			cJSON_AddItemToArray(sc, cJSON_CreateString(p->matrix[i]));
		cJSON *rows = mx ? cJSON_AddArrayToObject(mx, "results") : NULL;
		for (size_t i = 0; rows && i < p->nsteps; i++)
			cJSON_AddItemToArray(rows, matrix_row(p, &p->steps[i]));
	}
	if (p->have_slo)
		add_slo_object(s, it);
	if (p->have_models)
		add_models_array(p, it);
}

/* --metadata's tags, only when given: results without them keep their
 * bytes. */
static void result_json_metadata(cJSON *it, const struct snapshot *s)
{
	if (it && s->metadata)
		cJSON_AddItemToObject(it, "metadata", dup_or_null(s->metadata));
}

cJSON *snapshot_to_json(const struct snapshot *s)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if (s->lean)
		put_num(o, "burstiness", s->burstiness);   /* the one root key read back */
	else
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
	if (s->lean && sn)
		cJSON_AddBoolToObject(sn, "lean", true);

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
	/* Only a merge's: every other result keeps its bytes. */
	if (s->options_differ)
		cJSON_AddItemToObject(it, "options_differ", dup_or_null(s->options_differ));
	result_json_metadata(it, s);

	cJSON *state = cJSON_AddObjectToObject(it, "state");
	put_str(state, "status", s->status);
	put_num(state, "elapsed_s", s->elapsed);
	put_num(state, "measured_s", s->duration);
	put_str(state, "stop_reason", s->stop_reason);
	put_str(state, "mode", mode_key(s->open_loop ? LOAD_OPEN : LOAD_CLOSED));
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
	result_json_plan(it, s);
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
		fleet_warning(w, s->fleet);
		if (w && s->vllm_ignored)
			cJSON_AddItemToObject(w, "vllm_ignored", dup_or_null(s->vllm_ignored));
		merge_targets_warning(w, s->sources);
	}
	put_u64(it, "output_chunks", s->run_c.chunks);
	put_u64(it, "started", s->started);
	put_u64(it, "connections_opened", s->connections);
	put_u64(it, "connection_retry", s->connection_retries);
	put_u64(it, "max_in_flight", s->max_in_flight);
	cJSON_AddStringToObject(it, "stop_reason", s->stop_reason);
	if (!s->lean)
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

	cJSON *m = metrics_object(s->run, s->lean);
	if (!m)
		goto oom;
	cJSON_AddItemToObject(it, "metrics", m);
	cJSON *win = cJSON_AddObjectToObject(it, "window");
	put_num(win, "seconds", s->win_seconds);
	if (!win || !(m = metrics_object(s->win, s->lean)))
		goto oom;
	cJSON_AddItemToObject(win, "metrics", m);
	if (add_cache_object(it, s) != 0 || add_sessions_object(it, s) != 0)
		goto oom;

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
	/* Only a traced run's: every other result keeps its bytes. */
	if (s->trace)
		cJSON_AddItemToObject(it, "trace", dup_or_null(s->trace));
	if (s->sources)
		cJSON_AddItemToObject(it, "merged_from", dup_or_null(s->sources));
	if (s->fleet)
		cJSON_AddItemToObject(it, "fleet", dup_or_null(s->fleet));
	return o;
oom:
	cJSON_Delete(o);
	return NULL;
}

/* ---- the server block ----
 * Keys from the tables the reader (snapshot_server_state) uses. Numbers
 * stay cJSON numbers here: snapshot_to_json makes them exact text. */

static void add_value(cJSON *o, const char *k, const struct server_value *v, double scale)
{
	if (v->valid)
		cJSON_AddNumberToObject(o, k, v->v * scale);
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *agg_object(const struct server_agg *a)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if (a->n) {
		cJSON_AddNumberToObject(o, "min", a->min);
		cJSON_AddNumberToObject(o, "mean", server_agg_mean(a));
		cJSON_AddNumberToObject(o, "max", a->max);
	} else {
		cJSON_AddNullToObject(o, "min");
		cJSON_AddNullToObject(o, "mean");
		cJSON_AddNullToObject(o, "max");
	}
	cJSON_AddNumberToObject(o, "samples", (double)a->n);
	return o;
}

/* "p50_bucket_ms": [lo, hi] beside "p50_ms": the value is only known to
 * lie there (null for +Inf, absent when exact). */
static void add_bucket(cJSON *o, const char *k, const struct server_value *v)
{
	if (!v->valid || !(v->hi > v->lo))
		return;
	cJSON *a = cJSON_AddArrayToObject(o, k);
	if (!a)
		return;
	cJSON_AddItemToArray(a, cJSON_CreateNumber(v->lo * 1e3));
	cJSON_AddItemToArray(a, isinf(v->hi) ? cJSON_CreateNull() : cJSON_CreateNumber(v->hi * 1e3));
}

static cJSON *latency_object(const struct server_value *p50, const struct server_value *p90,
			     const struct server_value *p99, const struct server_value *mean)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_value(o, "p50_ms", p50, 1e3);
	add_value(o, "p90_ms", p90, 1e3);
	add_value(o, "p99_ms", p99, 1e3);
	add_value(o, "mean_ms", mean, 1e3);
	add_bucket(o, "p50_bucket_ms", p50);
	add_bucket(o, "p90_bucket_ms", p90);
	add_bucket(o, "p99_bucket_ms", p99);
	return o;
}

/* "buckets": {"le_ms": [...], "count": [...]}: the run's increase per
 * bucket, the last bound +Inf (null); absent when unknown. */
static void add_buckets(cJSON *o, const struct server_buckets *b)
{
	if (b->n <= 0)
		return;
	cJSON *bo = cJSON_AddObjectToObject(o, "buckets");
	cJSON *le = bo ? cJSON_AddArrayToObject(bo, "le_ms") : NULL;
	cJSON *cnt = bo ? cJSON_AddArrayToObject(bo, "count") : NULL;
	for (int i = 0; le && cnt && i < b->n && i < SERVER_BUCKETS_MAX; i++) {
		cJSON_AddItemToArray(le, snapshot_json_number(b->le[i] * 1e3));
		cJSON_AddItemToArray(cnt, snapshot_json_number(b->count[i]));
	}
}

static void add_str_or_null(cJSON *o, const char *k, const char *s)
{
	if (s && *s)
		cJSON_AddStringToObject(o, k, s);
	else
		cJSON_AddNullToObject(o, k);
}

static bool live(enum server_status s)
{
	return s == SERVER_UP || s == SERVER_STALE;
}

static cJSON *gpu_object(const struct server_state *st)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", server_status_name(st->gpu_status));
	cJSON_AddBoolToObject(o, "available", st->gpu_scrapes > 0);
	add_str_or_null(o, "url", st->gpu_url);
	add_str_or_null(o, "error", st->gpu_status == SERVER_UP ? NULL : st->gpu_error);
	cJSON_AddNumberToObject(o, "scrapes", (double)st->gpu_scrapes);
	cJSON_AddNumberToObject(o, "failures", (double)st->gpu_failures);
	add_value(o, "power_total_w", &st->power_total_w, 1);
	add_value(o, "joules_per_token", &st->joules_per_token, 1);
	cJSON_AddItemToObject(o, "run_power_total_w", agg_object(&st->power_agg));
	cJSON_AddItemToObject(o, "run_joules_per_token", agg_object(&st->jpt_agg));
	cJSON *arr = cJSON_AddArrayToObject(o, "gpus");
	for (int i = 0; arr && i < st->ngpus && live(st->gpu_status); i++) {
		const struct server_gpu *g = &st->gpu[i];
		cJSON *go = cJSON_CreateObject();
		if (!go)
			break;
		cJSON_AddStringToObject(go, "name", g->name);
		if (g->index >= 0)
			cJSON_AddNumberToObject(go, "index", g->index);
		else
			cJSON_AddNullToObject(go, "index");
		add_value(go, "util_pct", &g->util_pct, 1);
		add_value(go, "mem_used_mib", &g->mem_used_mib, 1);
		add_value(go, "mem_total_mib", &g->mem_total_mib, 1);
		add_value(go, "power_w", &g->power_w, 1);
		add_value(go, "temp_c", &g->temp_c, 1);
		add_value(go, "sm_clock_mhz", &g->sm_clock_mhz, 1);
		add_value(go, "gr_engine_active", &g->gr_active, 1);
		add_value(go, "dram_active", &g->dram_active, 1);
		add_value(go, "tensor_active", &g->tensor_active, 1);
		cJSON_AddItemToArray(arr, go);
	}
	return o;
}

/* "replicas_read" and one object a --metrics-url replica: its own scrape's
 * latest gauges and run total (URLs as redact_url() left them). */
static void add_replicas(cJSON *o, const struct server_state *st)
{
	cJSON_AddNumberToObject(o, "replicas_read", st->replicas_read);
	cJSON *a = cJSON_AddArrayToObject(o, "replicas");
	for (int i = 0; a && i < st->nreplicas && i < SERVER_MAX_REPLICAS; i++) {
		const struct server_replica *r = &st->replica[i];
		cJSON *ro = cJSON_CreateObject();
		if (!ro)
			break;
		add_str_or_null(ro, "url", r->url);
		cJSON_AddStringToObject(ro, "status", server_status_name(r->status));
		add_str_or_null(ro, "error", r->status == SERVER_UP ? NULL : r->last_error);
		add_value(ro, "running", &r->running, 1);
		add_value(ro, "waiting", &r->waiting, 1);
		add_value(ro, "kv_usage", &r->kv, 1);
		add_value(ro, "kv_usage_max", &r->kv_max, 1);
		add_value(ro, "generation_tokens", &r->run_gen_tokens, 1);
		cJSON_AddItemToArray(a, ro);
	}
}

cJSON *server_to_json(const struct server_state *st)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", server_status_name(st->status));
	/* Available = the endpoint answered with metrics at least once. */
	cJSON_AddBoolToObject(o, "available", st->scrapes > 0);
	add_str_or_null(o, "url", st->url);
	add_str_or_null(o, "profile", st->detected);
	add_str_or_null(o, "error", st->status == SERVER_UP ? NULL : st->last_error);
	add_str_or_null(o, "note", st->note);
	cJSON_AddNumberToObject(o, "scrapes", (double)st->scrapes);
	cJSON_AddNumberToObject(o, "failures", (double)st->failures);
	cJSON_AddNumberToObject(o, "skipped", (double)st->skipped);

	cJSON *latest = cJSON_AddObjectToObject(o, "latest");
	cJSON *run = cJSON_AddObjectToObject(o, "run");
	for (int g = 0; g < SRV_NGAUGES; g++) {
		if (latest)
			add_value(latest, result_key_name(result_keys_gauge, g, "?"), &st->gauge[g], 1);
		if (run)
			cJSON_AddItemToObject(run, result_key_name(result_keys_gauge, g, "?"), agg_object(&st->agg[g]));
	}
	cJSON *win = cJSON_AddObjectToObject(o, "latency_window");
	cJSON *rl = cJSON_AddObjectToObject(o, "latency_run");
	for (int l = 0; l < SRVL_N; l++) {
		if (win)
			cJSON_AddItemToObject(win, result_key_name(result_keys_latency, l, "?"),
					      latency_object(&st->p50[l], &st->p90[l], &st->p99[l], &st->mean[l]));
		cJSON *lo = rl ? latency_object(&st->run_p50[l], &st->run_p90[l], &st->run_p99[l], &st->run_mean[l])
			       : NULL;
		if (lo)
			add_buckets(lo, &st->run_buckets[l]);
		if (rl && lo)
			cJSON_AddItemToObject(rl, result_key_name(result_keys_latency, l, "?"), lo);
	}
	cJSON *tot = cJSON_AddObjectToObject(o, "run_totals");
	if (tot) {
		add_value(tot, "prompt_tokens", &st->run_prompt_tokens, 1);
		add_value(tot, "generation_tokens", &st->run_gen_tokens, 1);
		add_value(tot, "preemptions", &st->run_preemptions, 1);
	}
	cJSON *wa = cJSON_AddArrayToObject(o, "watch");
	for (int w = 0; wa && w < st->nwatch; w++) {
		cJSON *wo = cJSON_CreateObject();
		if (!wo)
			break;
		cJSON_AddStringToObject(wo, "expr", st->watch[w].expr);
		add_value(wo, "value", &st->watch[w].value, 1);
		add_value(wo, "rate_per_s", &st->watch[w].rate, 1);
		cJSON_AddItemToArray(wa, wo);
	}
	if (st->gpu_status != SERVER_OFF)
		cJSON_AddItemToObject(o, "gpu", gpu_object(st));
	/* Only with 2+ replicas: a one-endpoint result keeps its bytes. */
	if (st->nreplicas >= 2)
		add_replicas(o, st);
	return o;
}

/* ---- parts of a live run carried as JSON ---- */

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}


/* ---- the options block ----
 * One row a key, in the order the block has always had: a result's
 * bytes, and `compare`'s list of the options that differ, follow it.
 * `option` is the option of the option table (src/cli/cli.c's opts[])
 * whose value the key echoes; tests/test_result.c fails when an option of
 * that table is in no row here and not in its list of options left out on
 * purpose, so an option added there cannot go missing from results. */

struct opt_row;
typedef void (*opt_put)(cJSON *o, const struct opt_row *r, const struct config *c, const char *model);
struct opt_row {
	const char *key;
	const char *option; /* long name, without "--"; NULL: no option (the URL argument, the load mode) */
	opt_put put;
	size_t field;       /* offsetof(struct config, ...) for the generic writers */
	size_t field2;      /* an array's length, or the flag that says a number was given */
	const char *dflt;   /* a string's value when the option was not given */
};

#define CF(f) offsetof(struct config, f)
#define FIELD(c, off, type) (*(type const *)(const void *)((const char *)(c) + (off)))

static void put_string(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	const char *v = FIELD(c, r->field, char *);
	put_str(o, r->key, v ? v : r->dflt);
}

/* Only when given: options newer than most results, whose key in every
 * result would change their bytes. */
static void put_string_given(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	if (FIELD(c, r->field, char *))
		put_string(o, r, c, model);
}

static void put_long_given(cJSON *o, const struct opt_row *r, const struct config *c, const char *model);

/* How the requests went out (transport_name), and over the direct
 * path's TLS what its handshakes agreed on (null before one). */
static void put_transport(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	const char *t = transport_name(c->url, c->http_client && strcmp(c->http_client, "curl") == 0, c->headers,
				       c->nheaders);
	cJSON_AddStringToObject(o, r->key, t);
	const char *version, *cipher;
	if (strcmp(t, "direct+tls") == 0 && tls_negotiated(&version, &cipher)) {
		cJSON_AddStringToObject(o, "tls_version", version);
		cJSON_AddStringToObject(o, "tls_cipher", cipher);
	}
}

static void put_long(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	put_num(o, r->key, (double)FIELD(c, r->field, long));
}

/* Only when not 0, for the reason of put_string_given. */
static void put_long_given(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	if (FIELD(c, r->field, long))
		put_long(o, r, c, model);
}

static void put_double(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	put_num(o, r->key, FIELD(c, r->field, double));
}

/* A number given or not (null). */
static void put_given(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	if (FIELD(c, r->field2, bool))
		put_num(o, r->key, FIELD(c, r->field, double));
	else
		cJSON_AddNullToObject(o, r->key);
}

/* A duration in seconds. */
static void put_seconds(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	put_num(o, r->key, (double)FIELD(c, r->field, int64_t) / 1e9);
}

static void put_count(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	put_u64(o, r->key, FIELD(c, r->field, uint64_t));
}

static void put_bool(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	cJSON_AddBoolToObject(o, r->key, FIELD(c, r->field, bool));
}

/* A repeatable option's values. */
static void put_strings(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	char *const *v = FIELD(c, r->field, char **);
	size_t n = FIELD(c, r->field2, size_t);
	cJSON *a = cJSON_AddArrayToObject(o, r->key);
	for (size_t i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i] ? v[i] : ""));
}

/* A URL without its user:password@, query and fragment. */
static void put_url(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	char url[1024];
	redact_url(FIELD(c, r->field, char *), url, sizeof url);
	put_str(o, r->key, url);
}

/* Only when given, as put_string_given, without user:password@. */
static void put_url_given(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	if (FIELD(c, r->field, char *))
		put_url(o, r, c, model);
}

/* "none" (scraping off) is no URL to redact. */
static void put_metrics_url(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	const char *v = FIELD(c, r->field, char *);
	char url[1024];
	if (v && strcmp(v, "none") != 0)
		redact_url(v, url, sizeof url);
	else
		copy_str(url, sizeof url, v);
	put_str(o, r->key, url);
}

static void put_api(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	cJSON_AddStringToObject(o, r->key, FIELD(c, r->field, enum oai_api) == OAI_CHAT ? "chat" : "completions");
}

/* The model asked for: probed, or -m. */
static void put_model(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	put_str(o, r->key, model ? model : FIELD(c, r->field, char *));
}

static void put_mode(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	cJSON_AddStringToObject(o, r->key, mode_key(FIELD(c, r->field, double) > 0 ? LOAD_OPEN : LOAD_CLOSED));
}

/* The dataset's share this run sent (--slice, or a pod's index). */
static void put_slice(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	long count = FIELD(c, r->field2, long);
	if (count > 0) {
		char sl[48];
		snprintf(sl, sizeof sl, "%ld/%ld", FIELD(c, r->field, long), count);
		cJSON_AddStringToObject(o, r->key, sl);
	} else {
		cJSON_AddNullToObject(o, r->key);
	}
}

static void put_extra_body(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	const char *text = FIELD(c, r->field, char *);
	cJSON *xb = text ? cJSON_Parse(text) : NULL;
	cJSON_AddItemToObject(o, r->key, xb ? xb : cJSON_CreateNull());
}

/* Header values may carry credentials: only their names are saved. */
static void put_header_names(cJSON *o, const struct opt_row *r, const struct config *c, const char *model)
{
	(void)model;
	char *const *hv = FIELD(c, r->field, char **);
	size_t nh = FIELD(c, r->field2, size_t);
	cJSON *h = cJSON_AddArrayToObject(o, r->key);
	for (size_t i = 0; h && i < nh; i++) {
		const char *colon = strchr(hv[i], ':');
		size_t n = colon ? (size_t)(colon - hv[i]) : strlen(hv[i]);
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), hv[i]);
		cJSON_AddItemToArray(h, cJSON_CreateString(name));
	}
}

static const struct opt_row opt_rows[] = {
	{ "url", NULL, put_url, .field = CF(url) },
	{ "api", "api", put_api, .field = CF(api) },
	{ "model", "model", put_model, .field = CF(model) },
	{ "mode", NULL, put_mode, .field = CF(rate) },
	{ "concurrency", "concurrency", put_long, .field = CF(concurrency) },
	{ "rate", "rate", put_double, .field = CF(rate) },
	{ "max_concurrency", "max-concurrency", put_long, .field = CF(max_concurrency) },
	{ "seed", "seed", put_count, .field = CF(seed) },
	{ "slice", "slice", put_slice, .field = CF(slice_index), .field2 = CF(slice_count) },
	{ "requests", "requests", put_long, .field = CF(requests) },
	{ "duration_s", "duration", put_seconds, .field = CF(duration_ns) },
	{ "input_tokens", "input-tokens", put_long, .field = CF(input_tokens) },
	{ "output_tokens", "output-tokens", put_long, .field = CF(output_tokens) },
	{ "ignore_eos", "no-ignore-eos", put_bool, .field = CF(ignore_eos) },
	{ "temperature", "temperature", put_given, .field = CF(temperature), .field2 = CF(have_temperature) },
	{ "extra_body", "extra-body", put_extra_body, .field = CF(extra_body) },
	{ "header_names", "header", put_header_names, .field = CF(headers), .field2 = CF(nheaders) },
	{ "api_key_env", "api-key-env", put_string, .field = CF(api_key_env), .dflt = "OPENAI_API_KEY" },
	{ "insecure", "insecure", put_bool, .field = CF(insecure) },
	{ "timeout_s", "timeout", put_seconds, .field = CF(timeout_ns) },
	{ "new_connection", "new-connection", put_bool, .field = CF(new_connection) },
	{ "http_client", "http-client", put_string, .field = CF(http_client), .dflt = "direct" },
	{ "transport", NULL, put_transport, .field = CF(url) },
	{ "cacert", "cacert", put_string_given, .field = CF(cacert) },
	{ "no_tui", "no-tui", put_bool, .field = CF(no_tui) },
	{ "demo", "demo", put_bool, .field = CF(demo) },
	{ "sim_args", "sim-arg", put_strings, .field = CF(demo_args), .field2 = CF(ndemo_args) },
	{ "interval_s", "interval", put_seconds, .field = CF(interval_ns) },
	{ "window_s", "window", put_seconds, .field = CF(window_ns) },
	{ "grace_s", "grace", put_seconds, .field = CF(grace_ns) },
	{ "output", "output", put_string, .field = CF(output_path) },
	{ "save_detailed", "save-detailed", put_bool, .field = CF(save_detailed) },
	{ "save_detailed_texts", "save-detailed-texts", put_bool, .field = CF(save_texts) },
	{ "quiet", "quiet", put_bool, .field = CF(quiet) },
	{ "metrics_url", "metrics-url", put_metrics_url, .field = CF(metrics_url) },
	{ "metrics_discover", "metrics-discover", put_string_given, .field = CF(metrics_discover) },
	{ "metrics_prometheus", "metrics-prometheus", put_url_given, .field = CF(metrics_prometheus) },
	{ "metrics_selector", "metrics-selector", put_string_given, .field = CF(metrics_selector) },
	{ "metrics_interval_s", "metrics-interval", put_seconds, .field = CF(metrics_interval_ns) },
	{ "server", "server", put_string, .field = CF(server) },
	{ "gpu_metrics_url", "gpu-metrics-url", put_url, .field = CF(gpu_metrics_url) },
	{ "watch_metrics", "watch-metric", put_strings, .field = CF(watch_metrics), .field2 = CF(nwatch_metrics) },
	{ "arrival", "arrival", put_string, .field = CF(arrival) },
	{ "burstiness", "burstiness", put_double, .field = CF(burstiness) },
	{ "stages", "stages", put_string, .field = CF(stages) },
	{ "sweep", "sweep", put_string, .field = CF(sweep) },
	{ "stage_duration_s", "stage-duration", put_seconds, .field = CF(stage_duration_ns) },
	{ "stage_requests", "stage-requests", put_long, .field = CF(stage_requests) },
	{ "warmup", "warmup", put_string, .field = CF(warmup) },
	{ "cooldown_s", "cooldown", put_seconds, .field = CF(cooldown_ns) },
	{ "scenario", "scenario", put_string, .field = CF(scenario) },
	{ "matrix", "matrix", put_bool, .field = CF(matrix) },
	{ "models", "models", put_string, .field = CF(models) },
	{ "traffic_split", "traffic-split", put_string, .field = CF(traffic_split) },
	{ "slo", "slo", put_string, .field = CF(slo) },
	{ "snapshot_dir", "snapshot-dir", put_string, .field = CF(snapshot_dir) },
	{ "snapshot_every_s", "snapshot-every", put_seconds, .field = CF(snapshot_every_ns) },
	{ "request_log", "request-log", put_string, .field = CF(request_log) },
	{ "request_log_max", "request-log-max", put_count, .field = CF(request_log_max) },
	{ "max_error_rate", "max-error-rate", put_given, .field = CF(max_error_rate),
	  .field2 = CF(have_max_error_rate) },
	{ "refresh_hz", "refresh", put_double, .field = CF(refresh_hz) },
	{ "theme", "theme", put_string, .field = CF(theme) },
	{ "ascii", "ascii", put_bool, .field = CF(ascii) },
	{ "sessions", "sessions", put_string_given, .field = CF(sessions) },
	{ "session_answers", "session-answers", put_string_given, .field = CF(session_answers) },
	/* The prompts' source (issue 27: a result must say what it ran). */
	{ "dataset", "dataset", put_string_given, .field = CF(dataset) },
	{ "prefix_tokens", "prefix-tokens", put_long_given, .field = CF(prefix_tokens) },
	{ "prefix_groups", "prefix-groups", put_string_given, .field = CF(prefix_groups) },
};

cJSON *result_json_options(const struct config *c, const char *model)
{
	cJSON *o = cJSON_CreateObject();
	for (size_t i = 0; o && i < sizeof opt_rows / sizeof opt_rows[0]; i++)
		opt_rows[i].put(o, &opt_rows[i], c, model);
	return o;
}

const char *result_option_key(const char *option)
{
	for (size_t i = 0; i < sizeof opt_rows / sizeof opt_rows[0]; i++)
		if (opt_rows[i].option && strcmp(opt_rows[i].option, option) == 0)
			return opt_rows[i].key;
	return NULL;
}

cJSON *result_json_load_changes(const struct load *l, int64_t t_start)
{
	cJSON *a = cJSON_CreateArray();
	if (!a)
		return NULL;
	uint32_t n = l->nevents < LOAD_EVENTS ? l->nevents : LOAD_EVENTS;
	for (uint32_t i = l->nevents - n; i != l->nevents; i++) {
		const struct load_event *ev = &l->events[i % LOAD_EVENTS];
		cJSON *o = cJSON_CreateObject();
		if (!o)
			break;
		put_num(o, "t_s", t_start ? (double)(ev->t_ns - t_start) / 1e9 : 0.0);
		cJSON_AddStringToObject(o, "mode", mode_key(ev->mode));
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
	[SER_TTFT_P50] = "ttft_p50_ms",
	[SER_ITL_P50] = "itl_p50_ms",
	[SER_GPU_POWER] = "gpu_power_w",
	[SER_CACHE_HIT] = "cache_hit_rate",
};

/* A server replica's series (server.replicas[i].series), by column. */
static const char *const replica_series_keys[SER_REP_N] = {
	[SER_REP_RUNNING] = "running",
	[SER_REP_WAITING] = "waiting",
	[SER_REP_KV] = "kv_usage",
	[SER_REP_GEN_TOK_S] = "generation_tok_s",
};

/* A series' columns: their JSON keys and labels. */
struct series_cols {
	int n;
	const char *const *keys;
	const char *(*label)(int col);
};

static const char *run_label(int col)
{
	return series_name((enum series_id)col);
}

static const char *replica_label(int col)
{
	return series_replica_name((enum series_replica_col)col);
}

static const struct series_cols run_cols = { SER_N, series_keys, run_label };
static const struct series_cols replica_cols = { SER_REP_N, replica_series_keys, replica_label };

/* Column id's key; ids added later without one fall back to "sN". */
static const char *col_key(const struct series_cols *c, int id, char *buf, size_t cap)
{
	if (c->keys[id])
		return c->keys[id];
	snprintf(buf, cap, "s%d", id);
	return buf;
}

/* One resolution: `span_s` seconds back from the newest point, at `res_s`. */
static cJSON *series_level(const struct series *ser, const struct series_cols *c, int64_t t_start, int64_t span_s,
			   int64_t res_s)
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
	for (int id = 0; id < c->n; id++) {
		int64_t t0 = 0;
		size_t got = series_read_col(ser, id, span_s * CLOCK_NS_PER_S, buf, n, &t0);
		if (!started) {
			put_num(lv, "start_s", got ? (double)(t0 - t_start) / 1e9 : 0.0);
			put_num(lv, "points", (double)got);
			started = true;
		}
		char key[16];
		cJSON *a = cJSON_AddArrayToObject(vals, col_key(c, id, key, sizeof key));
		for (size_t i = 0; a && i < got; i++)
			cJSON_AddItemToArray(a, snapshot_json_float((float)buf[i]));
	}
	free(buf);
	return lv;
}

/* The series as kept in memory: the last hour at 1 s, the last day at
 * 10 s when the run is longer, the whole run at 1 min past a day. */
static cJSON *series_json(const struct series *ser, const struct series_cols *c, int64_t t_start,
			  int64_t elapsed_ns)
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
		{1, RESULT_SERIES_FINE_S, 0},
		{10, RESULT_SERIES_MID_S, RESULT_SERIES_FINE_S},
		{60, INT64_MAX, RESULT_SERIES_MID_S},
	};
	for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
		if (el <= plan[i].after || (i == 0 && el < 1))
			continue;
		int64_t span = el < plan[i].span ? el : plan[i].span;
		cJSON *lv = series_level(ser, c, t_start, span, plan[i].res);
		if (lv)
			cJSON_AddItemToArray(levels, lv);
	}
	cJSON *names = cJSON_AddObjectToObject(o, "labels");
	for (int id = 0; names && id < c->n; id++) {
		char key[16];
		cJSON_AddStringToObject(names, col_key(c, id, key, sizeof key), c->label(id));
	}
	return o;
}

cJSON *result_json_series(const struct series *ser, int64_t t_start, int64_t elapsed_ns)
{
	return series_json(ser, &run_cols, t_start, elapsed_ns);
}

int result_json_replica_series(cJSON *server, const struct series *ser, int64_t t_start, int64_t elapsed_ns)
{
	cJSON *reps = cJSON_GetObjectItemCaseSensitive(server, "replicas");
	int i = 0;
	cJSON *r;
	cJSON_ArrayForEach(r, reps)
	{
		const struct series *sub = series_sub_get(ser, i++);
		if (!sub)
			continue;
		cJSON *o = series_json(sub, &replica_cols, t_start, elapsed_ns);
		if (!o || !cJSON_AddItemToObject(r, "series", o)) {
			cJSON_Delete(o);
			return -1;
		}
	}
	return 0;
}

/* vLLM's max_output_tokens_per_s: the busiest second. Known only while the
 * 1 s level still covers the whole run. */

/* ---- the request log's counters ---- */

cJSON *reqlog_to_json(const struct reqlog *l)
{
	const struct reqlog_stats *st = reqlog_stats(l);
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "path", reqlog_path(l));
	cJSON_AddNumberToObject(o, "records", (double)st->records);
	cJSON_AddNumberToObject(o, "written_bytes", (double)st->written_bytes);
	cJSON_AddNumberToObject(o, "dropped", (double)st->dropped);
	cJSON_AddNumberToObject(o, "write_errors", (double)st->write_errors);
	cJSON_AddNumberToObject(o, "rotations", (double)st->rotations);
	if (st->last_error[0])
		cJSON_AddStringToObject(o, "last_error", st->last_error);
	else
		cJSON_AddNullToObject(o, "last_error");
	return o;
}

/* ---- a trace replay (--trace) ---- */

cJSON *trace_replay_to_json(const struct trace_replay_info *info, const struct hist *queue)
{
	struct trace_replay_info in = *info;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	put_str(o, "format", in.format);
	put_str(o, "file", in.file);
	put_u64(o, "records", in.records);
	put_u64(o, "records_in_window", in.records_in_window);
	put_u64(o, "sent", in.sent);
	put_u64(o, "reordered", in.reordered);
	put_u64(o, "skipped_bad_lines", in.skipped);
	put_str(o, "first_bad_line", in.first_bad);
	put_num(o, "speed", in.speed);
	put_num(o, "span_s", (double)in.span_ns / 1e9);
	put_num(o, "block_tokens", (double)in.block_tokens);
	if (in.window_start_ns || in.window_len_ns) {
		cJSON *w = cJSON_AddObjectToObject(o, "window");
		put_num(w, "start_s", (double)in.window_start_ns / 1e9);
		put_num(w, "length_s", (double)in.window_len_ns / 1e9);
	} else {
		cJSON_AddNullToObject(o, "window");
	}
	if (in.slice_count) {
		char sl[48];
		snprintf(sl, sizeof sl, "%ld/%ld", in.slice_index, in.slice_count);
		put_str(o, "slice", sl);
		put_str(o, "split_by", in.by_session ? "session_id" : "index");
	} else {
		cJSON_AddNullToObject(o, "slice");
		cJSON_AddNullToObject(o, "split_by");
	}
	cJSON_AddBoolToObject(o, "replayed", in.ended && in.sent == in.records);
	cJSON_AddBoolToObject(o, "cut_at_duration", in.cut);
	/* Lateness against the schedule is not measured twice: it is the
	 * client queue time (intended send to actual send), here in short. */
	cJSON *l = cJSON_AddObjectToObject(o, "lateness");
	put_str(l, "is", "client queue time: metrics.queue (successful requests)");
	uint64_t n = queue ? hist_count(queue) : 0;
	put_u64(l, "count", n);
	put_num(l, "p50_ms", n ? (double)hist_percentile(queue, 50) / 1e3 : NAN);
	put_num(l, "p99_ms", n ? (double)hist_percentile(queue, 99) / 1e3 : NAN);
	put_num(l, "max_ms", n ? (double)hist_max(queue) / 1e3 : NAN);
	return o;
}

/* ---- a merge's inputs ---- */

cJSON *result_json_source(const struct snapshot *s)
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
	if (s->plan.present) {
		cJSON *p = cJSON_CreateObject();
		result_json_plan(p, s);
		cJSON_AddItemToObject(o, "plan", p);
	}
	return o;
}

/* ---- infertop report --format json ---- */

static cJSON *latency_json(struct hist *const *h)
{
	cJSON *o = cJSON_CreateObject();
	for (int m = 0; o && m < STAT_NMETRICS; m++) {
		struct result_mstat st;
		result_mstat_of(h[m], &st);
		cJSON *mo = cJSON_AddObjectToObject(o, stats_metric_name((enum stat_metric)m));
		if (!mo)
			break;
		cJSON_AddNumberToObject(mo, "count", (double)st.count);
		for (int i = 0; i < RESULT_NSTAT; i++)
			cJSON_AddNumberToObject(mo, result_mstat_keys[i], st.v[i]);
	}
	return o;
}

static cJSON *report_doc(const char *file, const struct snapshot *s)
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
	result_json_metadata(o, s);
	if (s->vllm_ignored)
		cJSON_AddItemToObject(o, "vllm_ignored", dup_or_null(s->vllm_ignored));
	cJSON *sum = cJSON_AddObjectToObject(o, "summary");
	if (sum) {
		cJSON_AddNumberToObject(sum, "completed", (double)s->run_c.completed);
		cJSON_AddNumberToObject(sum, "failed", (double)snapshot_failed(s));
		cJSON_AddNumberToObject(sum, "total_input_tokens", (double)s->run_c.input_tokens);
		cJSON_AddNumberToObject(sum, "total_output_tokens", (double)s->run_c.output_tokens);
		cJSON_AddNumberToObject(sum, "duration", s->duration);
	}
	cJSON *tp = cJSON_AddObjectToObject(o, "throughput");
	if (tp) {
		cJSON_AddItemToObject(tp, "run", throughput_object(&s->run_c, s->duration));
		cJSON_AddItemToObject(tp, "window", throughput_object(&s->win_c, s->win_seconds));
	}
	if (s->have_slo) {
		cJSON *g = cJSON_AddObjectToObject(o, "goodput");
		put_str(g, "slo", s->slo_desc);
		put_num(g, "requests_per_s", snapshot_rate(s->slo_run.met_all, s->duration));
		put_u64(g, "requests_ended", s->slo_run.ended);
		put_u64(g, "requests_meeting_all", s->slo_run.met_all);
	} else {
		cJSON_AddNullToObject(o, "goodput");
	}
	cJSON *lat = cJSON_AddObjectToObject(o, "latency");
	if (lat) {
		cJSON_AddItemToObject(lat, "run", latency_json(s->run));
		cJSON_AddItemToObject(lat, "window", latency_json(s->win));
	}
	if (add_cache_object(o, s) != 0 || add_sessions_object(o, s) != 0) {
		cJSON_Delete(o);
		return NULL;
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

/* ---- infertop compare --format json ---- */

static cJSON *compare_doc(const struct result_compare *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = o ? cJSON_AddArrayToObject(o, "rows") : NULL;
	if (o) {
		cJSON_AddStringToObject(o, "a", c->file_a);
		cJSON_AddStringToObject(o, "b", c->file_b);
	}
	for (int i = 0; arr && i < c->n; i++) {
		const struct result_crow *row = &c->rows[i];
		cJSON *r = cJSON_CreateObject();
		if (!r)
			break;
		cJSON_AddStringToObject(r, "name", row->name);
		cJSON_AddStringToObject(r, "unit", row->unit);
		cJSON_AddNumberToObject(r, "a", row->a);
		cJSON_AddNumberToObject(r, "b", row->b);
		cJSON_AddNumberToObject(r, "delta", row->b - row->a);
		double p = result_crow_delta_pct(row);
		if (isnan(p))
			cJSON_AddNullToObject(r, "delta_pct");
		else
			cJSON_AddNumberToObject(r, "delta_pct", p);
		cJSON_AddStringToObject(r, "key", row->key);
		const char *v = result_crow_verdict(row);
		if (*v)
			cJSON_AddStringToObject(r, "verdict", v);
		else
			cJSON_AddNullToObject(r, "verdict");
		cJSON_AddItemToArray(arr, r);
	}
	if (o) {
		char verdict[1200];
		result_compare_verdict(c, verdict, sizeof verdict);
		cJSON_AddStringToObject(o, "verdict", verdict);
	}
	if (o)
		cJSON_AddItemToObject(o, "options_differ",
				      c->options_diff ? cJSON_Duplicate(c->options_diff, true) : cJSON_CreateObject());
	if (o && c->metadata_diff)
		cJSON_AddItemToObject(o, "metadata_differ", cJSON_Duplicate(c->metadata_diff, true));
	return o;
}

/* ---- printing ---- */

char *snapshot_to_text(const struct snapshot *s)
{
	cJSON *j = snapshot_to_json(s);
	if (!j)
		return NULL;
	char *txt = cJSON_Print(j);
	cJSON_Delete(j);
	return txt;
}

/* Prints doc and a newline on out, then frees doc. 0, or -1 when doc is
 * NULL or could not be printed (out of memory). */
static int print_doc(FILE *out, struct cJSON *doc)
{
	char *txt = doc ? cJSON_Print(doc) : NULL;
	cJSON_Delete(doc);
	if (!txt)
		return -1;
	fprintf(out, "%s\n", txt);
	free(txt);
	return 0;
}

int result_json_report(FILE *out, const char *file, const struct snapshot *s)
{
	return print_doc(out, report_doc(file, s));
}

int result_json_compare(FILE *out, const struct result_compare *c)
{
	return print_doc(out, compare_doc(c));
}
