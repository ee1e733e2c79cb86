/* Parses a large vLLM-like exposition (4 data-parallel engines, every V1
 * metric family, ~2000 lines) over and over and prints throughput.
 * Usage: bench_prom [SECONDS] (default 1 per measurement). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/prom.h"

#define ENGINES 4

struct buf {
	char *p;
	size_t len, cap;
	unsigned lines;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			fprintf(stderr, "bench_prom: vsnprintf failed\n");
			exit(1);
		}
		if ((size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap * 2 + (size_t)n;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			fprintf(stderr, "bench_prom: out of memory\n");
			exit(1);
		}
	}
	b->len += (size_t)n;
	for (int i = 0; i < n; i++)
		b->lines += b->p[b->len - (size_t)n + (size_t)i] == '\n';
}

static const char model[] = "meta-llama/Llama-3.3-70B-Instruct";

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(struct buf *b, const char *name, const char *type, const char *help, double base)
{
	family(b, name, type, help);
	for (int e = 0; e < ENGINES; e++)
		put(b, "%s{engine=\"%d\",model_name=\"%s\"} %.1f\n", name, e, model, base * (e + 1));
}

static void hist(struct buf *b, const char *name, const char *help, const double *le, int n)
{
	family(b, name, "histogram", help);
	for (int e = 0; e < ENGINES; e++) {
		double cum = 0;
		for (int i = 0; i < n; i++) {
			cum += (double)((i * 7 + e * 3) % 11);
			put(b, "%s_bucket{engine=\"%d\",le=\"%g%s\",model_name=\"%s\"} %.1f\n", name, e, le[i],
			    le[i] == (double)(long)le[i] ? ".0" : "", model, cum);
		}
		put(b, "%s_bucket{engine=\"%d\",le=\"+Inf\",model_name=\"%s\"} %.1f\n", name, e, model, cum + 1);
		put(b, "%s_count{engine=\"%d\",model_name=\"%s\"} %.1f\n", name, e, model, cum + 1);
		put(b, "%s_sum{engine=\"%d\",model_name=\"%s\"} %.6f\n", name, e, model, cum * 0.731);
	}
}

static void build(struct buf *b)
{
	static const double ttft[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
				       1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560 };
	static const double itl[] = { 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
				      0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80 };
	static const double req[] = { 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20,
				      30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680 };
	static const double tok[] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000 };
	static const double iter[] = { 1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384 };
	static const double n_param[] = { 1, 2, 5, 10, 20 };
	static const struct {
		const char *name;
		const double *le;
		int n;
	} hists[] = {
		{ "vllm:request_prompt_tokens", tok, 16 },
		{ "vllm:request_generation_tokens", tok, 16 },
		{ "vllm:iteration_tokens_total", iter, 13 },
		{ "vllm:request_max_num_generation_tokens", tok, 16 },
		{ "vllm:request_params_n", n_param, 5 },
		{ "vllm:request_params_max_tokens", tok, 16 },
		{ "vllm:time_to_first_token_seconds", ttft, 22 },
		{ "vllm:inter_token_latency_seconds", itl, 19 },
		{ "vllm:request_time_per_output_token_seconds", itl, 19 },
		{ "vllm:e2e_request_latency_seconds", req, 21 },
		{ "vllm:request_queue_time_seconds", req, 21 },
		{ "vllm:request_inference_time_seconds", req, 21 },
		{ "vllm:request_prefill_time_seconds", req, 21 },
		{ "vllm:request_decode_time_seconds", req, 21 },
		{ "vllm:request_prefill_kv_computed_tokens", tok, 16 },
		{ "vllm:time_per_output_token_seconds", itl, 19 },
		{ "vllm:kv_block_lifetime_seconds", req, 21 },
		{ "vllm:kv_block_idle_before_evict_seconds", req, 21 },
		{ "vllm:kv_block_reuse_gap_seconds", req, 21 },
	};
	static const char *const handlers[] = {
		"/v1/chat/completions", "/v1/completions", "/v1/models", "/metrics", "/health", "/tokenize",
	};

	family(b, "python_gc_objects_collected_total", "counter", "Objects collected during gc");
	for (int g = 0; g < 3; g++)
		put(b, "python_gc_objects_collected_total{generation=\"%d\"} %d.0\n", g, 14563 >> g);
	family(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	put(b, "process_resident_memory_bytes 2.167394304e+09\n");
	family(b, "http_request_duration_highr_seconds", "histogram", "Latency with many buckets but no API specific labels.");
	for (size_t h = 0; h < sizeof handlers / sizeof handlers[0]; h++) {
		for (int i = 0; i < 21; i++)
			put(b, "http_request_duration_highr_seconds_bucket{handler=\"%s\",le=\"%g\"} %d.0\n", handlers[h],
			    req[i] / 10, 10 * i);
		put(b, "http_request_duration_highr_seconds_bucket{handler=\"%s\",le=\"+Inf\"} 210.0\n", handlers[h]);
		put(b, "http_request_duration_highr_seconds_count{handler=\"%s\"} 210.0\n", handlers[h]);
		put(b, "http_request_duration_highr_seconds_sum{handler=\"%s\"} 93.25\n", handlers[h]);
	}
	gauge(b, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", 3);
	gauge(b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", 4);
	family(b, "vllm:num_requests_waiting_by_reason", "gauge", "Number of requests waiting, by reason.");
	for (int e = 0; e < ENGINES; e++) {
		put(b, "vllm:num_requests_waiting_by_reason{engine=\"%d\",model_name=\"%s\",reason=\"capacity\"} 3.0\n", e, model);
		put(b, "vllm:num_requests_waiting_by_reason{engine=\"%d\",model_name=\"%s\",reason=\"deferred\"} 1.0\n", e, model);
	}
	gauge(b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", 0.1234);
	gauge(b, "vllm:prefix_cache_queries_total", "counter", "Prefix cache queries.", 412000);
	gauge(b, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits.", 123456);
	gauge(b, "vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", 7);
	gauge(b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", 152340);
	gauge(b, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", 88012);
	gauge(b, "vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.", 1201);
	gauge(b, "vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", 4804);
	gauge(b, "vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", 3310);
	gauge(b, "vllm:engine_sleep_state", "gauge", "Engine sleep state.", 1);
	family(b, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
	for (int e = 0; e < ENGINES; e++)
		for (int r = 0; r < 3; r++)
			put(b, "vllm:request_success_total{engine=\"%d\",finished_reason=\"%s\",model_name=\"%s\"} %d.0\n", e,
			    r == 0 ? "abort" : r == 1 ? "length" : "stop", model, 700 * r + e);
	for (size_t i = 0; i < sizeof hists / sizeof hists[0]; i++)
		hist(b, hists[i].name, "A histogram, as vLLM V1 exposes it.", hists[i].le, hists[i].n);
	family(b, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
	for (int e = 0; e < ENGINES; e++)
		put(b, "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",calculate_kv_scales=\"False\","
		       "cpu_offload_gb=\"0\",enable_prefix_caching=\"True\",engine=\"%d\",gpu_memory_utilization=\"0.9\","
		       "is_attention_free=\"False\",num_cpu_blocks=\"None\",num_gpu_blocks=\"27042\","
		       "num_gpu_blocks_override=\"None\",prefix_caching_hash_algo=\"sha256\",sliding_window=\"None\","
		       "swap_space=\"4\",swap_space_bytes=\"4294967296\"} 1.0\n", e);
}

static int count_cb(void *ud, const struct prom_sample *s)
{
	double *sum = ud;

	*sum += s->value + (double)s->nlabels;
	return 0;
}

static double seconds_arg = 1.0;

/* Runs fn until seconds_arg have passed; returns ns per call. */
static double measure(const char *what, const struct buf *b, int (*fn)(const struct buf *, double *))
{
	double sink = 0, ns;
	long iters = 0;
	int64_t t0 = clock_now_ns(), t1;
	int64_t budget = (int64_t)(seconds_arg * (double)CLOCK_NS_PER_S);

	do {
		for (int k = 0; k < 16; k++) {
			if (fn(b, &sink) < 0) {
				fprintf(stderr, "bench_prom: %s failed\n", what);
				exit(1);
			}
		}
		iters += 16;
		t1 = clock_now_ns();
	} while (t1 - t0 < budget);
	ns = (double)(t1 - t0) / (double)iters;
	printf("%-34s %8.1f MB/s %11.0f lines/s %9.1f us/scrape  (%ld runs, sink %.0f)\n", what,
	       (double)b->len / ns * 1e3, (double)b->lines / ns * 1e9, ns / 1e3, iters, sink);
	return ns;
}

static int run_strict(const struct buf *b, double *sink)
{
	return prom_parse(b->p, b->len, 0, count_cb, sink, NULL);
}

static int run_lenient(const struct buf *b, double *sink)
{
	return prom_parse(b->p, b->len, PROM_LENIENT, count_cb, sink, NULL);
}

static int run_nocb(const struct buf *b, double *sink)
{
	int n = prom_parse(b->p, b->len, 0, NULL, NULL, NULL);
	*sink += n;
	return n;
}

/* What one scrape costs the dashboard: the canonical gauges and three
 * histograms, each a full pass over the text. */
static int run_dashboard(const struct buf *b, double *sink)
{
	static const char *const gauges[] = {
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:num_preemptions_total", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	};
	static const char *const hists[] = {
		"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
	};
	struct prom_hist h;
	double v;

	for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++) {
		if (prom_sum(b->p, b->len, gauges[i], NULL, &v) <= 0)
			return -1;
		*sink += v;
	}
	for (size_t i = 0; i < sizeof hists / sizeof hists[0]; i++) {
		if (prom_hist_collect(b->p, b->len, hists[i], NULL, &h) != 0)
			return -1;
		*sink += prom_hist_quantile(&h, 0.99);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct buf b = { NULL, 0, 0, 0 };
	struct prom_error err;
	int n;

	if (argc > 1) {
		seconds_arg = strtod(argv[1], NULL);
		if (!(seconds_arg > 0 && seconds_arg < 3600)) {
			fprintf(stderr, "usage: bench_prom [SECONDS]\n");
			return 2;
		}
	}
	b.cap = 1 << 16;
	b.p = malloc(b.cap);
	if (!b.p) {
		fprintf(stderr, "bench_prom: out of memory\n");
		return 1;
	}
	build(&b);
	n = prom_parse(b.p, b.len, 0, NULL, NULL, &err);
	if (n < 0) {
		fprintf(stderr, "bench_prom: generated text is malformed at line %u: %s\n", err.line, err.msg);
		return 1;
	}
	printf("exposition: %d engines, %u lines, %d samples, %.1f KiB\n", ENGINES, b.lines, n, (double)b.len / 1024);
	measure("prom_parse strict, callback", &b, run_strict);
	measure("prom_parse lenient, callback", &b, run_lenient);
	measure("prom_parse strict, no callback", &b, run_nocb);
	measure("dashboard: 8 prom_sum + 3 hist", &b, run_dashboard);
	free(b.p);
	return 0;
}
