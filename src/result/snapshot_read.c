#include "config.h"

/* A snapshot read back: a document parsed into struct snapshot (the JSON
 * writer's counterpart, json_write.c, naming enum values with the same
 * tables, keys.c), and a saved server block into struct server_state.
 * Reads only: merging is merge.c, comparing compare.c, the model's own
 * (release, figures) model.c. Needs nothing from a live engine, so
 * report/merge/compare and the fuzz target use it alone. */

#include "infertop/snapshot.h"
#include "infertop/result.h"
#include "model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/redact.h"
#include "infertop/server.h"

/* ---- the server block read back ---- */

static bool sv_num(const cJSON *o, const char *k, double scale, struct server_value *v)
{
	const cJSON *x = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	v->valid = cJSON_IsNumber(x);
	v->v = v->valid ? x->valuedouble / scale : 0;
	return v->valid;
}

/* "p50_bucket_ms": [lo, hi|null] back into v's bucket, so a report of a
 * file shows the bounds, as the live summary did. */
static void sv_bucket(const cJSON *o, const char *k, struct server_value *v)
{
	const cJSON *x = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	v->lo = v->hi = 0;
	if (!v->valid || !cJSON_IsArray(x) || cJSON_GetArraySize(x) != 2)
		return;
	const cJSON *lo = cJSON_GetArrayItem(x, 0), *hi = cJSON_GetArrayItem(x, 1);
	if (!cJSON_IsNumber(lo) || !(lo->valuedouble >= 0) || !(cJSON_IsNumber(hi) || cJSON_IsNull(hi)))
		return;
	double h = cJSON_IsNull(hi) ? HUGE_VAL : hi->valuedouble / 1e3;
	if (!(h > lo->valuedouble / 1e3))
		return;
	v->lo = lo->valuedouble / 1e3;
	v->hi = h;
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

/* Key names from the tables server_to_json() writes with. */
static const char *gauge_key(int g)
{
	return result_key_name(result_keys_gauge, g, "");
}

static const char *latency_key(int l)
{
	return result_key_name(result_keys_latency, l, "");
}

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
		sv_num(latest, gauge_key(g), 1, &st->gauge[g]);
		sv_agg(run ? cJSON_GetObjectItemCaseSensitive(run, gauge_key(g)) : NULL, &st->agg[g]);
	}
	const cJSON *win = cJSON_GetObjectItemCaseSensitive(j, "latency_window");
	const cJSON *rl = cJSON_GetObjectItemCaseSensitive(j, "latency_run");
	for (int l = 0; l < SRVL_N; l++) {
		const cJSON *w = win ? cJSON_GetObjectItemCaseSensitive(win, latency_key(l)) : NULL;
		const cJSON *r = rl ? cJSON_GetObjectItemCaseSensitive(rl, latency_key(l)) : NULL;
		sv_num(w, "p50_ms", 1e3, &st->p50[l]);
		sv_num(w, "p90_ms", 1e3, &st->p90[l]);
		sv_num(w, "p99_ms", 1e3, &st->p99[l]);
		sv_num(w, "mean_ms", 1e3, &st->mean[l]);
		sv_num(r, "p50_ms", 1e3, &st->run_p50[l]);
		sv_num(r, "p90_ms", 1e3, &st->run_p90[l]);
		sv_num(r, "p99_ms", 1e3, &st->run_p99[l]);
		sv_num(r, "mean_ms", 1e3, &st->run_mean[l]);
		sv_bucket(w, "p50_bucket_ms", &st->p50[l]);
		sv_bucket(w, "p90_bucket_ms", &st->p90[l]);
		sv_bucket(w, "p99_bucket_ms", &st->p99[l]);
		sv_bucket(r, "p50_bucket_ms", &st->run_p50[l]);
		sv_bucket(r, "p90_bucket_ms", &st->run_p90[l]);
		sv_bucket(r, "p99_bucket_ms", &st->run_p99[l]);
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
	/* Replicas (2+ --metrics-url), as add_replicas wrote them. */
	const cJSON *reps = cJSON_GetObjectItemCaseSensitive(j, "replicas");
	if (!cJSON_IsArray(reps))
		return;
	if (sv_num(j, "replicas_read", 1, &v) && v.v >= 0 && v.v <= SERVER_MAX_REPLICAS)
		st->replicas_read = (int)v.v;
	const cJSON *r;
	cJSON_ArrayForEach(r, reps)
	{
		if (st->nreplicas >= SERVER_MAX_REPLICAS)
			break;
		struct server_replica *d = &st->replica[st->nreplicas++];
		sv_str(r, "url", d->url, sizeof d->url);
		d->status = status_of(r, "status");
		sv_str(r, "error", d->last_error, sizeof d->last_error);
		sv_num(r, "running", 1, &d->running);
		sv_num(r, "waiting", 1, &d->waiting);
		sv_num(r, "kv_usage", 1, &d->kv);
		sv_num(r, "kv_usage_max", 1, &d->kv_max);
		sv_num(r, "generation_tokens", 1, &d->run_gen_tokens);
	}
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

/* --metadata's tags (an object, else left out) and the vLLM arguments
 * a run ignored. */
static void snapshot_read_metadata(struct snapshot *s, const cJSON *it)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "metadata");
	if (cJSON_IsObject(m))
		s->metadata = cJSON_Duplicate(m, 1);
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(it, "warnings");
	const cJSON *v = cJSON_IsObject(w) ? cJSON_GetObjectItemCaseSensitive(w, "vllm_ignored") : NULL;
	if (cJSON_IsObject(v))
		s->vllm_ignored = cJSON_Duplicate(v, 1);
}

static void get_counters(struct rd *r, const cJSON *o, struct stats_counters *c)
{
	c->completed = get_u64(r, o, "completed");
	c->failed = get_u64(r, o, "failed");
	c->incomplete = get_u64(r, o, "incomplete");   /* 0 in older files */
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

/* One of the cache's and sessions' histograms, when o has it. */
static void get_xhist(struct rd *r, const cJSON *o, const char *k, struct snapshot *s, enum stats_xhist x)
{
	const cJSON *mo = obj(o, k);
	if (!mo)
		return;
	const cJSON *enc = cJSON_GetObjectItemCaseSensitive(mo, "hist");
	struct hist *h = snapshot_xhist_get(s, x);
	if (!h)
		fail(r, "%s", "out of memory");
	else if (!cJSON_IsString(enc) || hist_decode(h, enc->valuestring) != 0)
		fail(r, "the histogram of %s does not decode", k);
}

/* Every successful request either said or did not: those that did not
 * are the rest of "completed", in a file without "cache" too. */
static void get_cache_counters(struct rd *r, const cJSON *o, struct stats_counters *c)
{
	c->cache_known = get_u64(r, o, "requests_known");
	c->prompt_known = get_u64(r, o, "prompt_tokens");
	c->prompt_cached = get_u64(r, o, "cached_tokens");
	if (c->cache_known > c->completed)
		fail(r, "%s", "more requests reporting cached tokens than completed");
}

/* "cache" and "sessions" (json_write.c): absent in runs without them. */
static void get_cache_sessions(struct rd *r, const cJSON *it, struct snapshot *s)
{
	const cJSON *c = obj(it, "cache");
	if (c) {
		get_cache_counters(r, c, &s->run_c);
		get_cache_counters(r, obj(c, "window"), &s->win_c);
		get_xhist(r, c, "ttft_mostly_cached", s, XH_TTFT_WARM);
		get_xhist(r, c, "ttft_cold", s, XH_TTFT_COLD);
	}
	const cJSON *se = obj(it, "sessions");
	if (!se)
		return;
	s->sessions_done = get_u64(r, se, "done");
	s->sessions_failed = get_u64(r, se, "failed");
	s->sessions_context = get_u64(r, se, "context_limited");
	s->sessions_incomplete = get_u64(r, se, "incomplete");
	s->session_turns = get_u64(r, se, "turns_completed");
	get_xhist(r, se, "duration", s, XH_SESSION_DURATION);
	get_xhist(r, se, "turns", s, XH_SESSION_TURNS);
	get_xhist(r, se, "context_tokens", s, XH_SESSION_CONTEXT);
	const cJSON *bt = obj(se, "by_turn");
	const cJSON *t;
	cJSON_ArrayForEach(t, bt)
	{
		int i = 0;
		while (i < STATS_TURNS && strcmp(t->string, stats_turn_label(i)) != 0)
			i++;
		if (i == STATS_TURNS || !cJSON_IsObject(t)) {
			fail(r, "bad turn key \"%s\" in sessions.by_turn", t->string);
			return;
		}
		get_xhist(r, t, stats_metric_name(STAT_TTFT), s, (enum stats_xhist)(XH_TURN_TTFT + i));
		get_xhist(r, t, stats_metric_name(STAT_E2E), s, (enum stats_xhist)(XH_TURN_E2E + i));
	}
}

static enum snapshot_reason reason_of(const char *name)
{
	int id = result_key_id(result_keys_reason, name);
	return id >= 0 ? (enum snapshot_reason)id : SNAPSHOT_FINAL;
}

/* ---- the plan's results ----
 * Read leniently: a figure of the wrong type reads as 0 (the plan's
 * figures are for people; the counters above are checked). */

static double pnum(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static uint64_t pu64(const cJSON *o, const char *k)
{
	double d = pnum(o, k);
	return d >= 0 && d <= EXACT_MAX ? (uint64_t)d : 0;
}

static void get_metric(const cJSON *o, struct snapshot_metric *m)
{
	m->count = pu64(o, "count");
	m->mean_ms = pnum(o, "mean_ms");
	m->p50_ms = pnum(o, "p50_ms");
	m->p90_ms = pnum(o, "p90_ms");
	m->p99_ms = pnum(o, "p99_ms");
}

static void get_shares(const cJSON *o, double *share)
{
	const cJSON *sh = obj(o, "slo_met_share");
	share[SLO_N] = pnum(sh, "all");
	for (int k = 0; k < SLO_N; k++)
		share[k] = pnum(sh, slo_name((enum slo_kind)k));
}

static bool is_open(const cJSON *o)
{
	char mode[16];
	get_str(o, "mode", mode, sizeof mode);
	return result_key_id(result_keys_load_mode, mode) == LOAD_OPEN;
}

static void get_step(const cJSON *o, struct snapshot_step *r)
{
	r->index = (int)pnum(o, "index");
	get_str(o, "label", r->label, sizeof r->label);
	get_str(o, "scenario", r->scenario, sizeof r->scenario);
	r->scenario_input_tokens = pnum(o, "scenario_input_tokens");
	r->scenario_output_tokens = pnum(o, "scenario_output_tokens");
	r->open_loop = is_open(o);
	r->target = pnum(o, "target");
	const cJSON *te = cJSON_GetObjectItemCaseSensitive(o, "target_end");
	r->target_end = cJSON_IsNumber(te) ? te->valuedouble : r->target;
	get_str(o, "arrival", r->arrival, sizeof r->arrival);
	r->start_s = pnum(o, "start_s");
	r->end_s = pnum(o, "end_s");
	r->duration_s = pnum(o, "duration");
	r->held_s = pnum(o, "held_s");
	r->partial = get_bool(o, "partial");
	r->started = pu64(o, "started");
	r->completed = pu64(o, "completed");
	r->failed = pu64(o, "failed");
	r->incomplete = pu64(o, "incomplete");
	r->max_concurrency = pu64(o, "max_concurrency");
	r->mean_input_tokens = pnum(o, "mean_input_tokens");
	r->mean_output_tokens = pnum(o, "mean_output_tokens");
	r->unsent = pu64(o, "unsent");
	r->input_tokens = pu64(o, "total_input_tokens");
	r->output_tokens = pu64(o, "total_output_tokens");
	r->request_throughput = pnum(o, "request_throughput");
	r->output_throughput = pnum(o, "output_throughput");
	r->total_token_throughput = pnum(o, "total_token_throughput");
	r->mean_concurrency = pnum(o, "mean_concurrency");
	r->request_goodput = pnum(o, "request_goodput");
	get_shares(o, r->slo_share);
	get_metric(obj(o, "ttft"), &r->ttft);
	get_metric(obj(o, "tpot"), &r->tpot);
	get_metric(obj(o, "itl"), &r->itl);
	get_metric(obj(o, "e2el"), &r->e2e);
}

static void get_model(const cJSON *o, struct snapshot_model *m)
{
	get_str(o, "model", m->name, sizeof m->name);
	m->share = pnum(o, "traffic_share");
	m->sent = pu64(o, "sent");
	m->completed = pu64(o, "completed");
	m->failed = pu64(o, "failed");
	m->input_tokens = pu64(o, "total_input_tokens");
	m->output_tokens = pu64(o, "total_output_tokens");
	m->request_throughput = pnum(o, "request_throughput");
	m->output_throughput = pnum(o, "output_throughput");
	m->request_goodput = pnum(o, "request_goodput");
	get_shares(o, m->slo_share);
	get_metric(obj(o, "ttft"), &m->ttft);
	get_metric(obj(o, "tpot"), &m->tpot);
	get_metric(obj(o, "e2el"), &m->e2e);
}

/* An array's objects, counted; NULL when there are none. */
static void *alloc_items(const cJSON *a, size_t size, size_t *n)
{
	*n = 0;
	int cnt = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
	return cnt > 0 ? calloc((size_t)cnt, size) : NULL;
}

/* "plan", "steps", "matrix", "slo", "models" of the infertop object. 0, or
 * -1 on out of memory. */
static int get_plan(const cJSON *it, struct snapshot_plan *p)
{
	const cJSON *po = obj(it, "plan");
	if (!po)
		return 0;
	p->present = true;
	char kind[16];
	get_str(po, "kind", kind, sizeof kind);
	int k = result_key_id(result_keys_plan_kind, kind);
	p->kind = k >= 0 ? k : 0;
	get_str(po, "arrival", p->arrival, sizeof p->arrival);
	p->burstiness = pnum(po, "burstiness");
	get_str(po, "scenario", p->scenario, sizeof p->scenario);
	p->warmup_s = pnum(po, "warmup_s");
	p->warmup_requests = pu64(po, "warmup_requests");
	p->cooldown_s = pnum(po, "cooldown_s");
	p->measured_duration_s = pnum(po, "measured_duration_s");
	p->planned_steps = pu64(po, "planned_steps");
	get_str(po, "state", p->state, sizeof p->state);
	p->have_auto_rates = cJSON_GetObjectItemCaseSensitive(po, "synchronous_rate") != NULL;
	p->sync_rate = pnum(po, "synchronous_rate");
	p->top_rate = pnum(po, "throughput_rate");
	get_str(po, "note", p->note, sizeof p->note);
	p->timeline_dropped = pu64(po, "timeline_dropped");

	const cJSON *a = cJSON_GetObjectItemCaseSensitive(po, "timeline"), *c;
	p->timeline = alloc_items(a, sizeof *p->timeline, &p->ntimeline);
	if (cJSON_GetArraySize(a) > 0 && !p->timeline)
		return -1;
	cJSON_ArrayForEach(c, a)
	{
		if (!p->timeline)
			break;
		struct snapshot_event *e = &p->timeline[p->ntimeline++];
		e->t_s = pnum(c, "t_s");
		get_str(c, "event", e->event, sizeof e->event);
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "step");
		e->step = cJSON_IsNumber(st) ? (int)st->valuedouble : -1;
		e->open_loop = is_open(c);
		e->target = pnum(c, "target");
	}
	a = cJSON_GetObjectItemCaseSensitive(it, "steps");
	p->steps = alloc_items(a, sizeof *p->steps, &p->nsteps);
	if (cJSON_GetArraySize(a) > 0 && !p->steps)
		return -1;
	cJSON_ArrayForEach(c, a)
		if (p->steps)
			get_step(c, &p->steps[p->nsteps++]);
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(obj(it, "matrix"), "scenarios"))
		if (cJSON_IsString(c) && p->nmatrix < SNAPSHOT_MATRIX_MAX)
			snprintf(p->matrix[p->nmatrix++], sizeof p->matrix[0], "%s", c->valuestring);
	const cJSON *slo = obj(it, "slo");
	if (slo) {
		p->have_slo = true;
		const cJSON *lim = obj(slo, "limits_ms");
		for (int i = 0; i < SLO_N; i++) {
			const cJSON *v = lim ? cJSON_GetObjectItemCaseSensitive(lim, slo_name((enum slo_kind)i)) : NULL;
			p->slo_set[i] = cJSON_IsNumber(v);
			p->slo_limit_ms[i] = p->slo_set[i] ? v->valuedouble : 0;
		}
	}
	a = cJSON_GetObjectItemCaseSensitive(it, "models");
	if (cJSON_IsArray(a)) {
		p->have_models = true;
		p->models = alloc_items(a, sizeof *p->models, &p->nmodels);
		if (cJSON_GetArraySize(a) > 0 && !p->models)
			return -1;
		cJSON_ArrayForEach(c, a)
			if (p->models)
				get_model(c, &p->models[p->nmodels++]);
	}
	return 0;
}

/* A result file may come from anywhere (a fleet's generators, a
 * colleague): every string in it is shown by report, compare and merge,
 * so none keeps a control character a terminal would act on. */
static void scrub_strings(cJSON *j)
{
	for (; j; j = j->next) {
		if (cJSON_IsString(j) && j->valuestring)
			redact_controls_lines(j->valuestring);
		if (j->string)
			redact_controls(j->string);
		scrub_strings(j->child);
	}
}

static int parse_into(struct snapshot *s, struct snapshot_hists *keep, const char *text, size_t len, char *err,
		      size_t errcap)
{
	struct rd r = {.err = err, .cap = errcap};
	memset(s, 0, sizeof *s);
	if (snapshot_hists_alloc(s, keep) != 0) {
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
	scrub_strings(root);
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
	if (get_plan(it, &s->plan) != 0) {
		fail(&r, "%s", "out of memory");
		goto out;
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
	get_cache_sessions(&r, it, s);
	s->run_c.cache_unknown = s->run_c.completed - s->run_c.cache_known;
	s->win_c.cache_unknown = s->win_c.completed - s->win_c.cache_known;

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
	s->options_differ = take(it, "options_differ");
	snapshot_read_metadata(s, it);
	s->server = take(it, "server");
	s->series = take(it, "series");
	s->request_log = take(it, "request_log");
	s->trace = take(it, "trace");
	s->sources = take(it, "merged_from");
	s->fleet = take(it, "fleet");
out:
	cJSON_Delete(root);
	if (r.bad) {
		snapshot_release(s);
		return -1;
	}
	return 0;
}

int snapshot_parse(struct snapshot *s, const char *text, size_t len, char *err, size_t errcap)
{
	return parse_into(s, NULL, text, len, err, errcap);
}

int snapshot_reparse(struct snapshot *s, const char *text, size_t len, char *err, size_t errcap)
{
	struct snapshot_hists keep;
	snapshot_hists_take(s, &keep);
	return parse_into(s, &keep, text, len, err, errcap);
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
