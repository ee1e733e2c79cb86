/* Cost of one /metrics render (exporter_text) and of one /v1/status
 * document (snapshot_build), and the size of each, on two runs of 200k
 * requests: "spread", whose latencies are log-uniform from 10 us to
 * 10 min (every octave of every histogram holds samples: the worst case
 * for hist_cumulative's scan, the percentiles and the histograms'
 * encoding), and "fidelity", the shape of bench/fidelity.sh (TTFT 50 ms,
 * ITL 10 ms, a few percent of jitter). Both are served on the engine's
 * loop, so their cost is time the token path waits.
 * Usage: bench_exporter [RENDERS] (default 2000). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/exporter.h"
#include "infertop/load.h"
#include "infertop/options.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"
#include "infertop/view.h"

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

static double uniform(uint64_t *x)
{
	return (double)(xorshift(x) >> 11) / 9007199254740992.0;
}

static void fill(struct stats *s, bool spread)
{
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < 200000; i++) {
		int64_t ttft_ns, gap_us;
		if (spread) {
			int64_t ns = (int64_t)(1e4 * pow(6e4, uniform(&x))) * 1000;
			ttft_ns = ns / 2;
			gap_us = ns / 1000 / 64 + 1;
		} else {
			ttft_ns = (int64_t)((50.0 + 2.0 * uniform(&x)) * 1e6);
			gap_us = (int64_t)(10000.0 + 500.0 * uniform(&x));
		}
		uint32_t gaps[16];
		for (int j = 0; j < 16; j++)
			gaps[j] = (uint32_t)gap_us + (uint32_t)(spread ? j : (int)(xorshift(&x) % 300));
		stats_record_itl_us(s, gaps, 16);
		int64_t e2e_ns = ttft_ns + 16 * gap_us * 1000;
		struct req_result r = { .ok = true, .http_code = 200, .queue_ns = ttft_ns / 50,
					.ttfb_ns = ttft_ns * 2 / 3, .ttft_ns = ttft_ns, .e2e_ns = e2e_ns,
					.output_tokens = 17, .prompt_tokens = 128, .chunks = 17,
					.retry_after_ns = -1, .usage_tokens = 17 };
		s->in_flight++;
		stats_request_done(s, &r);
	}
}

static int measure(const char *shape, long renders)
{
	int64_t t0 = clock_now_ns();
	struct stats *s = stats_new(30 * CLOCK_NS_PER_S, t0);
	if (!s)
		return 1;
	fill(s, strcmp(shape, "spread") == 0);
	struct load l;
	memset(&l, 0, sizeof l);
	l.concurrency = 64;
	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.url = "http://127.0.0.1:8000";
	cfg.concurrency = 64;
	struct run_view v = { .cfg = &cfg, .run_id = "bench", .state = ENGINE_RUNNING,
			      .model = "meta-llama/Llama-3.1-8B-Instruct", .t_start = t0, .stats = s, .load = &l };

	size_t len = 0;
	int64_t a = clock_now_ns();
	for (long i = 0; i < renders; i++) {
		char *text = exporter_text(&v, "loadgen-0:4242", a, &len);
		if (!text)
			return 1;
		free(text);
	}
	int64_t b = clock_now_ns();
	printf("%-8s exporter_text:   %8.1f us per render,   %7zu bytes, %ld renders\n", shape,
	       (double)(b - a) / 1e3 / (double)renders, len, renders);

	/* As the control server builds them: each sized by the last. */
	long docs = renders / 4 + 1;
	len = 0;
	a = clock_now_ns();
	for (long i = 0; i < docs; i++) {
		char *text = snapshot_build_sized(&v, a, SNAPSHOT_STATUS, &len);
		if (!text)
			return 1;
		free(text);
	}
	b = clock_now_ns();
	printf("%-8s status document: %8.1f us per document, %7zu bytes, %ld documents\n", shape,
	       (double)(b - a) / 1e3 / (double)docs, len, docs);
	stats_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	long renders = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	if (renders < 1)
		renders = 1;
	return measure("fidelity", renders) || measure("spread", renders);
}
