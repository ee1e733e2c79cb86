#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/sim_internal.h"

/* vLLM's bucket bounds (seconds), used for every profile: the client must
 * never hard-code bounds, and one set keeps the sim simple. */
static const double ttft_le[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,   0.75,
				  1.0,	 2.5,	5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0 };
static const double itl_le[] = { 0.01, 0.025, 0.05, 0.075, 0.1,	 0.15, 0.2,  0.3,  0.4, 0.5,
				 0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0 };
static const double req_le[] = { 0.3,  0.5,  0.8,  1.0,	 1.5,	2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
				 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0 };
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
	sim_hist_init(&st->ttft, ttft_le, NB(ttft_le));
	sim_hist_init(&st->itl, itl_le, NB(itl_le));
	sim_hist_init(&st->tpot, itl_le, NB(itl_le));
	sim_hist_init(&st->e2e, req_le, NB(req_le));
	sim_hist_init(&st->queue, req_le, NB(req_le));
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

/* Names per server from doc/metrics.md section 2; NULL where the server has no
 * such metric (the client must then show "-", so the sim must not invent
 * one). */
struct prof {
	const char *running, *waiting, *kv;
	const char *prompt, *gen, *preempt, *success;
	const char *ttft, *itl, *e2e, *queue;
	int itl_per_request;	/* TGI: a histogram of each request's mean */
	int model_label;
	const char *extra_labels;
};

static const struct prof profs[] = {
	[SIM_PROF_VLLM] = { "vllm:num_requests_running", "vllm:num_requests_waiting",
			    "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total",
			    "vllm:generation_tokens_total", "vllm:num_preemptions_total",
			    "vllm:request_success_total", "vllm:time_to_first_token_seconds",
			    "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
			    "vllm:request_queue_time_seconds", 0, 1, "engine=\"0\"" },
	[SIM_PROF_SGLANG] = { "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
			      "sglang:prompt_tokens_total", "sglang:generation_tokens_total",
			      "sglang:num_retracted_requests_total", "sglang:num_requests_total",
			      "sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
			      "sglang:e2e_request_latency_seconds", "sglang:queue_time_seconds", 0, 1,
			      "tp_rank=\"0\"" },
	[SIM_PROF_TGI] = { "tgi_batch_current_size", "tgi_queue_size", NULL, NULL, NULL, NULL,
			   "tgi_request_success", NULL, "tgi_request_mean_time_per_token_duration",
			   "tgi_request_duration", "tgi_request_queue_duration", 1, 0, NULL },
	[SIM_PROF_TRTLLM] = { "trtllm_num_requests_running", "trtllm_num_requests_waiting",
			      "trtllm_kv_cache_utilization", "trtllm_prompt_tokens_total", NULL, NULL,
			      "trtllm_request_success_total", "trtllm_time_to_first_token_seconds",
			      "trtllm_time_per_output_token_seconds", "trtllm_e2e_request_latency_seconds",
			      "trtllm_request_queue_time_seconds", 0, 1, NULL },
	[SIM_PROF_NIM] = { "num_requests_running", "num_requests_waiting", "gpu_cache_usage_perc",
			   "prompt_tokens_total", "generation_tokens_total", NULL, "request_success_total",
			   "time_to_first_token_seconds", "time_per_output_token_seconds",
			   "e2e_request_latency_seconds", NULL, 0, 1, NULL },
	[SIM_PROF_LMDEPLOY] = { "lmdeploy:num_requests_running", "lmdeploy:num_requests_waiting",
				"lmdeploy:gpu_cache_usage_perc", "lmdeploy:prompt_tokens_total",
				"lmdeploy:generation_tokens_total", NULL, "lmdeploy:request_success_total",
				"lmdeploy:time_to_first_token_seconds", "lmdeploy:iter_token_latency",
				"lmdeploy:e2e_request_latency_seconds", "lmdeploy:request_queue_time_seconds",
				0, 1, NULL },
	/* SIM_PROF_LLAMACPP and SIM_PROF_TRITON have renderers of their own
	 * (render_llamacpp, render_triton). */
};
_Static_assert(sizeof profs / sizeof profs[0] == SIM_PROF_COUNT, "a profs[] entry per profile");

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

static double kv_usage(const struct sim_server *s)
{
	double u = (double)s->kv_used / (double)s->opt.kv_tokens;
	return u > 1 ? 1 : u;
}

static void render_table(struct ctx *c, const struct prof *p)
{
	const struct sim_server *s = c->s;
	const struct sim_stats *st = &s->st;
	gauge(c, p->running, "Number of requests in model execution batches.", (double)s->nrunning);
	gauge(c, p->waiting, "Number of requests waiting to be processed.", (double)s->nwaiting);
	gauge(c, p->kv, "KV-cache usage. 1 means 100 percent usage.", kv_usage(s));
	counter(c, p->prompt, "Number of prefill tokens processed.", (double)st->prompt_tokens);
	counter(c, p->gen, "Number of generation tokens processed.", (double)st->gen_tokens);
	counter(c, p->preempt, "Cumulative number of preemptions from the engine.",
		(double)st->preemptions);
	if (p->success) {
		head(c, p->success, "counter", "Count of successfully processed requests.");
		if (s->opt.profile == SIM_PROF_TGI) {
			sample(c, p->success, "", NULL, (double)(st->success[0] + st->success[1]));
		} else {
			sample(c, p->success, "", "finished_reason=\"length\"", (double)st->success[0]);
			sample(c, p->success, "", "finished_reason=\"stop\"", (double)st->success[1]);
		}
	}
	histogram(c, p->ttft, "Histogram of time to first token in seconds.", &st->ttft);
	histogram(c, p->itl,
		  p->itl_per_request ? "Mean time per token per request in seconds."
				     : "Histogram of inter-token latency in seconds.",
		  p->itl_per_request ? &st->tpot : &st->itl);
	histogram(c, p->e2e, "Histogram of end to end request latency in seconds.", &st->e2e);
	histogram(c, p->queue, "Histogram of time spent waiting in the queue in seconds.", &st->queue);
}

/* The metric set of the llama.cpp capture in tests/fixtures/llamacpp. */
static void render_llamacpp(struct ctx *c)
{
	const struct sim_server *s = c->s;
	const struct sim_stats *st = &s->st;
	counter(c, "llamacpp:prompt_tokens_total",
		"Number of prompt tokens processed, excluding cached tokens", (double)st->prompt_tokens);
	counter(c, "llamacpp:prompt_tokens_cached_total", "Number of prompt tokens reused from the cache",
		0);
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
	      st->prompt_seconds > 0 ? (double)st->prompt_tokens / st->prompt_seconds : 0);
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
	const long block = 64;	/* tokens per KV block */
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
	if (s->opt.profile == SIM_PROF_LLAMACPP) {
		render_llamacpp(&c);
	} else if (s->opt.profile == SIM_PROF_TRITON) {
		render_triton(&c);
	} else {
		const struct prof *p = &profs[s->opt.profile];
		if (p->model_label)
			snprintf(c.labels, sizeof c.labels, "%s%smodel_name=\"%s\"",
				 p->extra_labels ? p->extra_labels : "", p->extra_labels ? "," : "",
				 s->model_prom);
		render_table(&c, p);
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
