/* CPU cost of one scrape's processing: a large vLLM exposition (8
 * data-parallel engines, every V1 family with vLLM's bucket bounds, plus
 * the Python process metrics) parsed alone, then parsed and mapped by the
 * vLLM profile with two --watch-metric expressions (detection, combining,
 * histogram collection, deltas, window percentiles).
 * Usage: bench_scrape [SECONDS] (default 1 per measurement). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/profile.h"
#include "infertop/prom.h"
#include "infertop/server.h"

#define ENGINES 8

struct out {
	char *p;
	size_t n, cap;
	unsigned lines;
};

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct out *o, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(o->p + o->n, o->cap - o->n, fmt, ap);
		va_end(ap);
		if (k < 0)
			exit(1);
		if ((size_t)k < o->cap - o->n) {
			o->n += (size_t)k;
			o->lines++;
			return;
		}
		o->cap = o->cap * 2 + (size_t)k;
		if (!(o->p = realloc(o->p, o->cap))) {
			fprintf(stderr, "bench_scrape: out of memory\n");
			exit(1);
		}
	}
}

static const char lbl[] = "model_name=\"meta-llama/Llama-3.3-70B-Instruct\"";

static void scalar(struct out *o, const char *name, const char *type, double base, int tick)
{
	emit(o, "# HELP %s Synthetic %s.\n# TYPE %s %s\n", name, type, name, type);
	for (int e = 0; e < ENGINES; e++)
		emit(o, "%s{engine=\"%d\",%s} %.1f\n", name, e, lbl, base * (e + 1) + tick);
}

static void histogram(struct out *o, const char *name, const double *le, int n, int tick)
{
	emit(o, "# HELP %s Synthetic histogram.\n# TYPE %s histogram\n", name, name);
	for (int e = 0; e < ENGINES; e++) {
		double cum = 0;
		for (int i = 0; i < n; i++) {
			cum += (double)((i * 7 + e * 3 + tick) % 13);
			emit(o, "%s_bucket{engine=\"%d\",le=\"%g\",%s} %.1f\n", name, e, le[i], lbl, cum);
		}
		emit(o, "%s_bucket{engine=\"%d\",le=\"+Inf\",%s} %.1f\n", name, e, lbl, cum + 1);
		emit(o, "%s_count{engine=\"%d\",%s} %.1f\n", name, e, lbl, cum + 1);
		emit(o, "%s_sum{engine=\"%d\",%s} %.3f\n", name, e, lbl, cum * 0.37);
	}
}

/* tick changes the counters and histograms so deltas are not all zero. */
static void build(struct out *o, int tick)
{
	static const double ttft[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
				       1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0 };
	static const double itl[] = { 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
				      0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0 };
	static const double req[] = { 0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
				      30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0 };
	static const double tok[] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000 };
	o->n = 0;
	o->lines = 0;
	for (int g = 0; g < 3; g++)
		emit(o, "python_gc_objects_collected_total{generation=\"%d\"} %d.0\n", g, 1000 * g + tick);
	emit(o, "process_resident_memory_bytes 2.1e+09\nprocess_cpu_seconds_total %d.5\n", tick);
	scalar(o, "vllm:num_requests_running", "gauge", 3, 0);
	scalar(o, "vllm:num_requests_waiting", "gauge", 2, tick % 3);
	scalar(o, "vllm:num_requests_waiting_by_reason", "gauge", 1, 0);
	scalar(o, "vllm:kv_cache_usage_perc", "gauge", 0.05, 0);
	scalar(o, "vllm:prefix_cache_queries_total", "counter", 40000, tick * 100);
	scalar(o, "vllm:prefix_cache_hits_total", "counter", 12000, tick * 30);
	scalar(o, "vllm:num_preemptions_total", "counter", 3, tick);
	scalar(o, "vllm:prompt_tokens_total", "counter", 150000, tick * 900);
	scalar(o, "vllm:generation_tokens_total", "counter", 88000, tick * 400);
	scalar(o, "vllm:request_success_total", "counter", 700, tick);
	histogram(o, "vllm:request_prompt_tokens", tok, 13, tick);
	histogram(o, "vllm:request_generation_tokens", tok, 13, tick);
	histogram(o, "vllm:iteration_tokens_total", tok, 13, tick);
	histogram(o, "vllm:request_max_num_generation_tokens", tok, 13, tick);
	histogram(o, "vllm:request_params_n", tok, 13, tick);
	histogram(o, "vllm:request_params_max_tokens", tok, 13, tick);
	histogram(o, "vllm:time_to_first_token_seconds", ttft, 22, tick);
	histogram(o, "vllm:inter_token_latency_seconds", itl, 19, tick);
	histogram(o, "vllm:request_time_per_output_token_seconds", itl, 19, tick);
	histogram(o, "vllm:e2e_request_latency_seconds", req, 21, tick);
	histogram(o, "vllm:request_queue_time_seconds", req, 21, tick);
	histogram(o, "vllm:request_inference_time_seconds", req, 21, tick);
	histogram(o, "vllm:request_prefill_time_seconds", req, 21, tick);
	histogram(o, "vllm:request_decode_time_seconds", req, 21, tick);
}

static int count_cb(void *ud, const struct prom_sample *s)
{
	(void)s;
	(*(long *)ud)++;
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	if (!(secs > 0))
		secs = 1.0;
	enum { NTEXT = 8 };
	struct out texts[NTEXT];
	memset(texts, 0, sizeof texts);
	for (int i = 0; i < NTEXT; i++)
		build(&texts[i], i);
	printf("exposition: %u lines, %zu bytes, %d engines\n", texts[0].lines, texts[0].n, ENGINES);

	/* Parse only. */
	long samples = 0, iters = 0;
	int64_t t0 = clock_now_ns(), limit = t0 + (int64_t)(secs * 1e9), t1;
	do {
		for (int k = 0; k < 16; k++, iters++)
			prom_parse(texts[iters % NTEXT].p, texts[iters % NTEXT].n, PROM_LENIENT, count_cb, &samples,
				   NULL);
		t1 = clock_now_ns();
	} while (t1 < limit);
	double parse_us = (double)(t1 - t0) / 1e3 / (double)iters;
	printf("prom_parse only:             %8.1f us/scrape  %7.1f MB/s\n", parse_us,
	       (double)texts[0].n / parse_us);

	/* Parse + vLLM map + deltas, as the scraper does per response. */
	const char *watch[] = { "vllm:num_requests_waiting_by_reason{engine=\"3\"}", "process_cpu_seconds_total" };
	char err[256];
	struct profile_tracker *t = profile_tracker_new(PROFILE_AUTO, watch, 2, 30LL * 1000000000, 1000000000, err,
							sizeof err);
	struct server_state *st = calloc(1, sizeof *st);
	if (!t || !st) {
		fprintf(stderr, "bench_scrape: %s\n", t ? "out of memory" : err);
		return 1;
	}
	server_state_init(st);
	iters = 0;
	int64_t fake = 0;
	t0 = clock_now_ns();
	limit = t0 + (int64_t)(secs * 1e9);
	do {
		for (int k = 0; k < 16; k++, iters++) {
			fake += 1000000000; /* one scrape per simulated second */
			if (profile_tracker_update(t, texts[iters % NTEXT].p, texts[iters % NTEXT].n, 0, fake, st, err,
						   sizeof err) != 0) {
				fprintf(stderr, "bench_scrape: %s\n", err);
				return 1;
			}
		}
		t1 = clock_now_ns();
	} while (t1 < limit);
	double map_us = (double)(t1 - t0) / 1e3 / (double)iters;
	printf("parse + vllm profile + deltas:%8.1f us/scrape  (%s, running %.0f, ttft p99 %.3f s)\n", map_us,
	       st->detected, st->gauge[SRV_RUNNING].v, st->p99[SRVL_TTFT].v);
	printf("at 1 scrape/s: %.3f%% of one core\n", map_us / 1e4);
	profile_tracker_free(t);
	free(st);
	for (int i = 0; i < NTEXT; i++)
		free(texts[i].p);
	return 0;
}
