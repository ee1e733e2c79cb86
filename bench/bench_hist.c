/* Speed and size figures for hist: ns per record, ns per percentile query,
 * bytes per histogram, encoded size of realistic latency distributions.
 * Usage: bench_hist [RECORDS]   (default 10^8) */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/hist.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng_u64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_unit(void)
{
	return ((double)(rng_u64() >> 11) + 0.5) / 9007199254740992.0;
}

static int64_t lognormal(double median, double sigma)
{
	double g = sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());
	return (int64_t)(median * exp(sigma * g));
}

#define POOL (1u << 16)

/* Values come from a pre-filled pool so the loop times hist_record, not
 * the random number generator. */
static double time_records(struct hist *h, const int64_t *pool, uint64_t n)
{
	int64_t t0 = clock_now_ns();
	for (uint64_t i = 0; i < n; i++)
		hist_record(h, pool[i & (POOL - 1)]);
	int64_t t1 = clock_now_ns();
	return (double)(t1 - t0) / (double)n;
}

static volatile int64_t sink;

static double time_queries(const struct hist *h, const double *ps, size_t nps, unsigned n)
{
	int64_t acc = 0;
	int64_t t0 = clock_now_ns();
	for (unsigned i = 0; i < n; i++)
		acc += hist_percentile(h, ps[i % nps]);
	int64_t t1 = clock_now_ns();
	sink = acc;
	return (double)(t1 - t0) / (double)n;
}

static void encode_size(const char *what, struct hist *h)
{
	char *s = hist_encode(h);
	if (!s) {
		fprintf(stderr, "bench_hist: out of memory\n");
		exit(1);
	}
	struct hist *d = hist_new();
	if (!d) {
		fprintf(stderr, "bench_hist: out of memory\n");
		exit(1);
	}
	int64_t t0 = clock_now_ns();
	int rc = hist_decode(d, s);
	int64_t t1 = clock_now_ns();
	printf("encode  %-44s %7zu bytes, p50 %" PRId64 " us p99 %" PRId64 " us, decode %.1f us%s\n", what,
	       strlen(s), hist_percentile(h, 50), hist_percentile(h, 99), (double)(t1 - t0) / 1000.0,
	       rc == 0 ? "" : " FAILED");
	free(s);
	hist_free(d);
}

int main(int argc, char **argv)
{
	uint64_t records = 100000000;
	if (argc > 1)
		records = strtoull(argv[1], NULL, 10);
	if (records == 0)
		records = 1;

	int64_t *pool = malloc(POOL * sizeof *pool);
	struct hist *h = hist_new();
	if (!pool || !h) {
		fprintf(stderr, "bench_hist: out of memory\n");
		return 1;
	}

	/* Log-uniform over 1 us .. 1 h touches every part of the table. */
	for (unsigned i = 0; i < POOL; i++)
		pool[i] = (int64_t)exp(rng_unit() * log(3.6e9));
	double ns_wide = time_records(h, pool, records);
	hist_reset(h);
	for (unsigned i = 0; i < POOL; i++)
		pool[i] = lognormal(25000, 0.35);
	double ns_itl = time_records(h, pool, records);
	printf("record  %" PRIu64 " records: %.2f ns each (log-uniform 1us..1h), %.2f ns each (ITL-like)\n", records,
	       ns_wide, ns_itl);

	static const double ps[] = { 50, 90, 99, 99.9 };
	hist_reset(h);
	for (int i = 0; i < 1000000; i++)
		hist_record(h, lognormal(50000, 1.0));
	double q_real = time_queries(h, ps, 4, 200000);
	double q_p50 = time_queries(h, ps, 1, 200000);
	hist_reset(h);
	for (int i = 0; i < 1000000; i++)
		hist_record(h, (int64_t)exp(rng_unit() * log(3.6e9)));
	double q_wide = time_queries(h, ps, 4, 20000);
	double q_wide50 = time_queries(h, ps, 1, 20000);
	printf("query   %.0f ns (p50/90/99/99.9 rotating, lognormal 50ms), %.0f ns (p50 alone); "
	       "log-uniform 1us..1h: %.0f ns, p50 alone %.0f ns\n",
	       q_real, q_p50, q_wide, q_wide50);

	printf("memory  %zu bytes per histogram (%d buckets)\n", hist_memory(), HIST_BUCKETS);

	hist_reset(h);
	for (int i = 0; i < 10000; i++)
		hist_record(h, lognormal(250000, 0.6));
	encode_size("TTFT, 10k requests, lognormal 250ms s=0.6", h);
	hist_reset(h);
	for (int i = 0; i < 2000000; i++)
		hist_record(h, lognormal(25000, 0.35));
	encode_size("ITL, 2M tokens, lognormal 25ms s=0.35", h);
	hist_reset(h);
	for (int i = 0; i < 10000; i++)
		hist_record(h, lognormal(12000000, 0.8));
	encode_size("E2E, 10k requests, lognormal 12s s=0.8", h);
	hist_reset(h);
	encode_size("empty", h);

	free(pool);
	hist_free(h);
	return 0;
}
