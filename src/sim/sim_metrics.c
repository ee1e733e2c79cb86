#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/buckets.h"
#include "sim_internal.h"

/* The vLLM histograms' bounds come from buckets.h (shared with the
 * exporter), used for every profile: the client must never hard-code
 * bounds, and one set keeps the sim simple. The scheduling lag histogram is
 * the simulator's own. */
static const double lag_le[] = { 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
				 0.0025,  0.005,    0.01,    0.025,  0.05,    0.1,    0.25 };
#define NB(a) ((int)(sizeof a / sizeof a[0]))

void sim_hist_init(struct sim_hist *h, const double *le, int nb)
{
	memset(h, 0, sizeof *h);
	h->le = le;
	h->nb = nb;
}

void sim_hist_observe(struct sim_hist *h, double v)
{
	int i = 0;
	while (i < h->nb && v > h->le[i])
		i++;
	h->cnt[i]++;
	h->sum += v;
	h->count++;
}

void sim_stats_init(struct sim_stats *st)
{
	memset(st, 0, sizeof *st);
	sim_hist_init(&st->ttft, buckets_ttft.le, buckets_ttft.n);
	sim_hist_init(&st->itl, buckets_itl.le, buckets_itl.n);
	sim_hist_init(&st->tpot, buckets_itl.le, buckets_itl.n);
	sim_hist_init(&st->e2e, buckets_request.le, buckets_request.n);
	sim_hist_init(&st->queue, buckets_request.le, buckets_request.n);
	sim_hist_init(&st->prefill, buckets_request.le, buckets_request.n);
	sim_hist_init(&st->decode, buckets_request.le, buckets_request.n);
	sim_hist_init(&st->lag, lag_le, NB(lag_le));
}

static const struct {
	const char *name, *path;
} servers[] = {
#define SERVER(id, name, path, help) [SIM_PROF_##id] = { name, path },
#include "infertop/servers.def"
};
_Static_assert(sizeof servers / sizeof servers[0] == SIM_PROF_COUNT, "servers.def and enum sim_profile");

const char *sim_profile_name(enum sim_profile p)
{
	return p < SIM_PROF_COUNT ? servers[p].name : "?";
}

int sim_profile_parse(const char *s, enum sim_profile *p)
{
	for (int i = 0; i < SIM_PROF_COUNT; i++) {
		if (strcmp(s, servers[i].name) == 0) {
			*p = (enum sim_profile)i;
			return 0;
		}
	}
	return -1;
}

const char *sim_profile_metrics_path(enum sim_profile p)
{
	return p < SIM_PROF_COUNT ? servers[p].path : "/metrics";
}

/* What the simulator shows of a server, from its lines in servers.def: the
 * client's current (prio 0) name for each figure the simulator has, so the
 * simulated /metrics is read exactly as the real server's would be. Figures
 * the simulator has no model of (KV blocks, Triton's duration counters)
 * are not invented: the client shows "-" for them. */
enum sim_slot {
	SS_GAUGE_RUNNING,
	SS_GAUGE_WAITING,
	SS_GAUGE_KV,
	SS_COUNTER_PROMPT,
	SS_COUNTER_GEN,
	SS_COUNTER_PREEMPT,
	SS_COUNTER_PREFIX_HITS,
	SS_COUNTER_PREFIX_QUERIES,
	SS_GAUGE_PREFIX_RATE,
	SS_HIST_TTFT,
	SS_HIST_ITL,
	SS_HIST_E2E,
	SS_HIST_QUEUE,
	SS_N,
	/* Read by the client, not simulated. */
	SS_GAUGE_KV_USED,
	SS_GAUGE_KV_TOTAL,
	SS_COUNTER_QUEUE_SUM,
	SS_COUNTER_E2E_SUM,
	SS_COUNTER_REQ_COUNT,
};

static const struct metric_name {
	unsigned char profile, slot, prio;
	const char *name, *label;
} metric_names[] = {
#define SERVER_METRIC(id, kind, slot, prio, comb, flags, scale, name, label, value) \
	{ SIM_PROF_##id, SS_##kind##_##slot, prio, name, label },
#include "infertop/servers.def"
};

enum sim_renderer { SR_TABLE, SR_LLAMACPP, SR_TRITON };

static const struct sim_look {
	bool set;
	enum sim_renderer renderer;
	const char *success;	/* request success counter */
	int by_reason;		/* its series split by finished_reason */
	int itl_per_request;	/* TGI: a histogram of each request's mean, not of every gap */
	int model_label;
	const char *extra_labels;
} looks[SIM_PROF_COUNT] = {
#define SERVER_SIM(id, renderer, success, by_reason, itl_per_request, model_label, labels) \
	[SIM_PROF_##id] = { true, SR_##renderer, success, by_reason, itl_per_request, model_label, labels },
#include "infertop/servers.def"
};

struct prof {
	const char *name[SS_N];
	const struct sim_look *look;
};

static void prof_of(enum sim_profile id, struct prof *p)
{
	static const struct sim_look table_look = { true, SR_TABLE, NULL, 0, 0, 1, NULL };
	memset(p, 0, sizeof *p);
	p->look = looks[id].set ? &looks[id] : &table_look;
	for (size_t i = 0; i < sizeof metric_names / sizeof metric_names[0]; i++) {
		const struct metric_name *m = &metric_names[i];
		/* The first current name wins (SGLang lists "sglang:" before
		 * "sglang_"); a series told apart by a label is for a renderer
		 * of its own. */
		if (m->profile == id && m->prio == 0 && m->slot < SS_N && !m->label && !p->name[m->slot])
			p->name[m->slot] = m->name;
	}
	/* A server whose prompt counter doubles as its cache query counter
	 * (SGLang) also shows a hit-rate gauge, listed as the client's second
	 * choice; vLLM's older gauge is not shown, as V1 has none. */
	const char *q = p->name[SS_COUNTER_PREFIX_QUERIES];
	if (q && p->name[SS_COUNTER_PROMPT] && strcmp(q, p->name[SS_COUNTER_PROMPT]) == 0) {
		p->name[SS_COUNTER_PREFIX_QUERIES] = NULL;	/* rendered once, as PROMPT */
		for (size_t i = 0; i < sizeof metric_names / sizeof metric_names[0] &&
				   !p->name[SS_GAUGE_PREFIX_RATE]; i++) {
			const struct metric_name *m = &metric_names[i];
			if (m->profile == id && m->slot == SS_GAUGE_PREFIX_RATE && !m->label)
				p->name[SS_GAUGE_PREFIX_RATE] = m->name;
		}
	}
}

struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->n) {
			b->n += (size_t)n;
			return;
		}
		size_t cap = b->cap * 2 + (size_t)n;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

/* Shortest text that reads back as the same double, so sums and bounds
 * survive the round trip exactly. */
static const char *fmt_num(double v, char *buf, size_t cap)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

struct ctx {
	struct sbuf *b;
	const struct sim_server *s;
	char labels[SIM_MODEL_MAX * 2 + 128];	/* "a=\"x\",b=\"y\"" or "" */
};

static void head(struct ctx *c, const char *name, const char *type, const char *help)
{
	sb_printf(c->b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct ctx *c, const char *name, const char *suffix, const char *extra, double v)
{
	char num[40];
	const char *sep = c->labels[0] && extra ? "," : "";
	if (c->labels[0] || extra)
		sb_printf(c->b, "%s%s{%s%s%s} %s\n", name, suffix, c->labels, sep, extra ? extra : "",
			  fmt_num(v, num, sizeof num));
	else
		sb_printf(c->b, "%s%s %s\n", name, suffix, fmt_num(v, num, sizeof num));
}

static void gauge(struct ctx *c, const char *name, const char *help, double v)
{
	if (!name)
		return;
	head(c, name, "gauge", help);
	sample(c, name, "", NULL, v);
}

static void counter(struct ctx *c, const char *name, const char *help, double v)
{
	if (!name)
		return;
	head(c, name, "counter", help);
	sample(c, name, "", NULL, v);
}

static void histogram(struct ctx *c, const char *name, const char *help, const struct sim_hist *h)
{
	if (!name)
		return;
	head(c, name, "histogram", help);
	uint64_t cum = 0;
	char num[40], le[64];
	for (int i = 0; i <= h->nb; i++) {
		cum += h->cnt[i];
		snprintf(le, sizeof le, "le=\"%s\"",
			 i < h->nb ? fmt_num(h->le[i], num, sizeof num) : "+Inf");
		sample(c, name, "_bucket", le, (double)cum);
	}
	sample(c, name, "_sum", NULL, h->sum);
	sample(c, name, "_count", NULL, (double)h->count);
}

/* Cumulative hits over queries, in tokens; 0 before any query. */
static double prefix_hit_rate(const struct sim_stats *st)
{
	return st->prefix_queries ? (double)st->prefix_hits / (double)st->prefix_queries : 0;
}

static double kv_usage(const struct sim_server *s)
{
	double u = (double)s->kv_used / (double)s->opt.kv_tokens;
	return u > 1 ? 1 : u;
}

/* A counter the client reads from a histogram's _sum (TGI's token counts):
 * shown as that histogram, with one +Inf bucket, as a real one would be. */
static void counter_or_sum(struct ctx *c, const char *name, const char *help, double v, double n)
{
	if (!name)
		return;
	size_t len = strlen(name);
	if (len > 4 && strcmp(name + len - 4, "_sum") == 0) {
		char base[128];
		snprintf(base, sizeof base, "%.*s", (int)(len - 4), name);
		head(c, base, "histogram", help);
		sample(c, base, "_bucket", "le=\"+Inf\"", n);
		sample(c, base, "_sum", NULL, v);
		sample(c, base, "_count", NULL, n);
		return;
	}
	counter(c, name, help, v);
}

/* vLLM's per-request histograms beyond the client's table (the Grafana
 * board in deploy/ draws them per replica): TPOT as vLLM names it now,
 * and the prefill and decode phases of every finished request. */
static void render_vllm_phases(struct ctx *c, const struct sim_stats *st)
{
	histogram(c, "vllm:request_time_per_output_token_seconds",
		  "Histogram of time_per_output_token_seconds per request.", &st->tpot);
	histogram(c, "vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.",
		  &st->prefill);
	histogram(c, "vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
		  &st->decode);
}

static void render_table(struct ctx *c, const struct prof *p)
{
	const struct sim_server *s = c->s;
	const struct sim_stats *st = &s->st;
	const struct sim_look *look = p->look;
	double done = (double)(st->success[0] + st->success[1]);
	gauge(c, p->name[SS_GAUGE_RUNNING], "Number of requests in model execution batches.", (double)s->nrunning);
	gauge(c, p->name[SS_GAUGE_WAITING], "Number of requests waiting to be processed.", (double)s->nwaiting);
	gauge(c, p->name[SS_GAUGE_KV], "KV-cache usage. 1 means 100 percent usage.", kv_usage(s));
	counter_or_sum(c, p->name[SS_COUNTER_PROMPT], "Number of prefill tokens processed.",
		       (double)st->prompt_tokens, done);
	counter_or_sum(c, p->name[SS_COUNTER_GEN], "Number of generation tokens processed.",
		       (double)st->gen_tokens, done);
	counter(c, p->name[SS_COUNTER_PREEMPT], "Cumulative number of preemptions from the engine.",
		(double)st->preemptions);
	counter(c, p->name[SS_COUNTER_PREFIX_QUERIES],
		"Prefix cache queries, in terms of number of queried tokens.", (double)st->prefix_queries);
	counter(c, p->name[SS_COUNTER_PREFIX_HITS],
		"Prefix cache hits, in terms of number of cached tokens.", (double)st->prefix_hits);
	gauge(c, p->name[SS_GAUGE_PREFIX_RATE], "The prefix cache hit rate.", prefix_hit_rate(st));
	if (look->success) {
		head(c, look->success, "counter", "Count of successfully processed requests.");
		if (!look->by_reason) {
			sample(c, look->success, "", NULL, done);
		} else {
			sample(c, look->success, "", "finished_reason=\"length\"", (double)st->success[0]);
			sample(c, look->success, "", "finished_reason=\"stop\"", (double)st->success[1]);
		}
	}
	histogram(c, p->name[SS_HIST_TTFT], "Histogram of time to first token in seconds.", &st->ttft);
	histogram(c, p->name[SS_HIST_ITL],
		  look->itl_per_request ? "Mean time per token per request in seconds."
					: "Histogram of inter-token latency in seconds.",
		  look->itl_per_request ? &st->tpot : &st->itl);
	histogram(c, p->name[SS_HIST_E2E], "Histogram of end to end request latency in seconds.", &st->e2e);
	histogram(c, p->name[SS_HIST_QUEUE], "Histogram of time spent waiting in the queue in seconds.", &st->queue);
	if (c->s->opt.profile == SIM_PROF_VLLM)
		render_vllm_phases(c, st);
}

/* The metric set of the llama.cpp capture in tests/fixtures/llamacpp. */
static void render_llamacpp(struct ctx *c)
{
	const struct sim_server *s = c->s;
	const struct sim_stats *st = &s->st;
	counter(c, "llamacpp:prompt_tokens_total",
		"Number of prompt tokens processed, excluding cached tokens",
		(double)(st->prompt_tokens - st->prompt_cached));
	counter(c, "llamacpp:prompt_tokens_cached_total", "Number of prompt tokens reused from the cache",
		(double)st->prompt_cached);
	counter(c, "llamacpp:prompt_seconds_total", "Total time spent processing prompts",
		st->prompt_seconds);
	counter(c, "llamacpp:tokens_predicted_total", "Number of generation tokens processed",
		(double)st->gen_tokens_finished);
	counter(c, "llamacpp:tokens_predicted_seconds_total", "Total time spent generating tokens",
		st->predicted_seconds);
	counter(c, "llamacpp:n_decode_total", "Total number of llama_decode() calls",
		(double)st->decode_steps);
	counter(c, "llamacpp:n_tokens_max", "Largest observed sequence length (prompt + generation)",
		(double)st->n_tokens_max);
	counter(c, "llamacpp:spec_decode_num_draft_tokens_total",
		"Speculative: Total draft tokens generated", 0);
	counter(c, "llamacpp:spec_decode_num_accepted_tokens_total",
		"Speculative: Total draft tokens accepted by the target model", 0);
	counter(c, "llamacpp:spec_decode_num_drafts_total",
		"Speculative: Total speculative decoding verification steps", 0);
	gauge(c, "llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s",
	      st->prompt_seconds > 0 ? (double)(st->prompt_tokens - st->prompt_cached) / st->prompt_seconds
				     : 0);
	gauge(c, "llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s",
	      st->predicted_seconds > 0 ? (double)st->gen_tokens_finished / st->predicted_seconds : 0);
	gauge(c, "llamacpp:requests_processing", "Number of requests processing", (double)s->nrunning);
	gauge(c, "llamacpp:requests_deferred", "Number of requests deferred", (double)s->nwaiting);
	gauge(c, "llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
	      st->decode_steps ? (double)st->busy_slot_sum / (double)st->decode_steps : 0);
}

/* Triton's own counters (microseconds), its TTFT histogram (milliseconds)
 * and the TensorRT-LLM backend's gauges, as the capture in
 * tests/fixtures/prom/triton.txt: one model, the backend's. A real Triton
 * serves these on port 8002, not on the API port; the sim keeps them on
 * its one port, so a client needs --metrics-url .../metrics for it. */
static void render_triton(struct ctx *c)
{
	const struct sim_server *s = c->s;
	const struct sim_stats *st = &s->st;
	const long block = s->opt.kv_block_tokens > 0 ? s->opt.kv_block_tokens : 64;
	snprintf(c->labels, sizeof c->labels, "model=\"tensorrt_llm\",version=\"1\"");
	counter(c, "nv_inference_request_success", "Number of successful inference requests, all batch sizes",
		(double)(st->success[0] + st->success[1]));
	gauge(c, "nv_inference_pending_request_count",
	      "Instantaneous number of pending requests awaiting execution per-model.", (double)s->nwaiting);
	counter(c, "nv_inference_request_duration_us",
		"Cumulative inference request duration in microseconds (includes cached requests)",
		st->e2e.sum * 1e6);
	counter(c, "nv_inference_queue_duration_us",
		"Cumulative inference queuing duration in microseconds (includes cached requests)",
		st->queue.sum * 1e6);
	const char *ttft = "nv_inference_first_response_histogram_ms";
	head(c, ttft, "histogram", "Duration from request to first response in milliseconds");
	uint64_t cum = 0;
	char num[40], le[64];
	for (int i = 0; i <= st->ttft.nb; i++) {
		cum += st->ttft.cnt[i];
		snprintf(le, sizeof le, "le=\"%s\"",
			 i < st->ttft.nb ? fmt_num(st->ttft.le[i] * 1e3, num, sizeof num) : "+Inf");
		sample(c, ttft, "_bucket", le, (double)cum);
	}
	sample(c, ttft, "_sum", NULL, st->ttft.sum * 1e3);
	sample(c, ttft, "_count", NULL, (double)st->ttft.count);
	const char *req = "nv_trt_llm_request_metrics";
	head(c, req, "gauge", "TRT LLM request metrics");
	sample(c, req, "", "request_type=\"waiting\"", (double)s->nwaiting);
	sample(c, req, "", "request_type=\"max\"", (double)s->opt.max_running);
	sample(c, req, "", "request_type=\"active\"", (double)s->nrunning);
	const char *kv = "nv_trt_llm_kv_cache_block_metrics";
	head(c, kv, "gauge", "TRT LLM KV cache block metrics");
	sample(c, kv, "", "kv_cache_block_type=\"fraction\"", kv_usage(s));
	sample(c, kv, "", "kv_cache_block_type=\"tokens_per\"", (double)block);
	sample(c, kv, "", "kv_cache_block_type=\"used\"", (double)((s->kv_used + block - 1) / block));
	sample(c, kv, "", "kv_cache_block_type=\"max\"", (double)(s->opt.kv_tokens / block));
}

char *sim_metrics_render(const struct sim_server *s, size_t *len)
{
	struct sbuf b = { malloc(16384), 0, 16384, 0 };
	if (!b.p)
		return NULL;
	struct ctx c = { &b, s, "" };
	struct prof p;
	prof_of(s->opt.profile, &p);
	switch (p.look->renderer) {
	case SR_LLAMACPP:
		render_llamacpp(&c);
		break;
	case SR_TRITON:
		render_triton(&c);
		break;
	case SR_TABLE:
		if (p.look->model_label)
			snprintf(c.labels, sizeof c.labels, "%s%smodel_name=\"%s\"",
				 p.look->extra_labels ? p.look->extra_labels : "", p.look->extra_labels ? "," : "",
				 s->model_prom);
		render_table(&c, &p);
		break;
	}
	c.labels[0] = '\0';
	head(&c, "infertop_sim_faults_total", "counter", "Faults injected by infertop sim, by kind.");
	for (int k = 0; k < SIM_FAULT_COUNT; k++) {
		char kind[40];
		snprintf(kind, sizeof kind, "kind=\"%s\"", sim_fault_name((enum sim_fault)k));
		sample(&c, "infertop_sim_faults_total", "", kind, (double)s->st.faults[k]);
	}
	head(&c, "infertop_sim_connection_drops_total", "counter",
	     "Requests dropped unanswered by --conn-max-requests, by infertop sim.");
	sample(&c, "infertop_sim_connection_drops_total", "", NULL, (double)s->conn_drops);
	head(&c, "infertop_sim_scheduler_events_total", "counter",
	     "Arrivals, steps, token ticks and cancellations seen by the scheduler of infertop sim.");
	sample(&c, "infertop_sim_scheduler_events_total", "", NULL, (double)s->st.sched_events);
	histogram(&c, "infertop_sim_send_lag_seconds",
		  "Time from a chunk's scheduled time to its hand-over to the socket, by infertop sim.",
		  &s->st.lag);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.n;
	return b.p;
}
