/* Cost of one /metrics render (exporter_text) on a run whose histograms
 * are spread over their whole range (the worst case for hist_cumulative's
 * scan and the percentiles), and the size of the exposition.
 * Usage: bench_exporter [RENDERS] (default 2000). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/exporter.h"
#include "infertop/load.h"
#include "infertop/stats.h"
#include "infertop/view.h"

int main(int argc, char **argv)
{
	long renders = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	if (renders < 1)
		renders = 1;
	int64_t t0 = clock_now_ns();
	struct stats *s = stats_new(30 * CLOCK_NS_PER_S, t0);
	if (!s)
		return 1;
	/* 200k requests, log-uniform latencies from 10 us to 10 min: every
	 * octave of every histogram holds samples. */
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double u = (double)(x >> 11) / 9007199254740992.0;
		int64_t ns = (int64_t)(1e4 * pow(6e4, u)) * 1000;
		uint32_t gap = (uint32_t)(ns / 1000 / 64 + 1);
		uint32_t gaps[16];
		for (int j = 0; j < 16; j++)
			gaps[j] = gap + (uint32_t)j;
		stats_record_itl_us(s, gaps, 16);
		struct req_result r = { .ok = true, .http_code = 200, .queue_ns = ns / 100, .ttfb_ns = ns / 3,
					.ttft_ns = ns / 2, .e2e_ns = ns, .output_tokens = 17, .prompt_tokens = 128,
					.chunks = 17, .retry_after_ns = -1, .usage_tokens = 17 };
		s->in_flight++;
		stats_request_done(s, &r);
	}
	struct load l;
	memset(&l, 0, sizeof l);
	l.concurrency = 64;
	struct run_view v = { .state = ENGINE_RUNNING, .model = "meta-llama/Llama-3.1-8B-Instruct",
			      .t_start = t0, .stats = s, .load = &l };

	size_t len = 0;
	int64_t a = clock_now_ns();
	for (long i = 0; i < renders; i++) {
		char *text = exporter_text(&v, "loadgen-0:4242", a, &len);
		if (!text)
			return 1;
		free(text);
	}
	int64_t b = clock_now_ns();
	printf("exporter_text: %.1f us per render, %zu bytes, %ld renders\n",
	       (double)(b - a) / 1e3 / (double)renders, len, renders);
	stats_free(s);
	return 0;
}
