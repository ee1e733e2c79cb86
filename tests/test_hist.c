#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/hist.h"

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			print_error(__VA_ARGS__);                          \
			print_error("\n");                                 \
			fail_msg("%s:%d: check failed: %s", __FILE__, __LINE__, #cond); \
		}                                                          \
	} while (0)

/* ---- helpers independent of the code under test ---- */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s;
}

/* splitmix64 */
static uint64_t rng_u64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_unit(void) /* (0, 1) */
{
	return ((double)(rng_u64() >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_gauss(void)
{
	return sqrt(-2.0 * log(rng_unit())) * cos(2.0 * M_PI * rng_unit());
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest rank for p = pm / 1000 percent, in integers so the reference
 * cannot share the float rounding of the code under test. */
static uint64_t ref_rank(uint64_t pm, uint64_t n)
{
	uint64_t r = (pm * n + 99999) / 100000;
	return r < 1 ? 1 : r;
}

#define TOP_LO INT64_C(4292870144) /* lowest value of the top bucket */

/* The documented bound: exact below 2048, relative error < 2^-11 up to
 * HIST_TOP_US (which also meets the required 0.1%); above that only
 * [TOP_LO, max]. */
static void check_value(int64_t got, int64_t exact, int64_t max, const char *what, const char *label, double p)
{
	if (exact > HIST_TOP_US) {
		CHECK(got >= TOP_LO && got <= max, "%s %s p%g: got %" PRId64 " for clamped %" PRId64, label, what, p,
		      got, exact);
		return;
	}
	double err = fabs((double)got - (double)exact);
	if (exact < 2048) {
		CHECK(got == exact, "%s %s p%g: got %" PRId64 " want exactly %" PRId64, label, what, p, got, exact);
		return;
	}
	CHECK(err < (double)exact / 2048.0 && err <= 0.001 * (double)exact,
	      "%s %s p%g: got %" PRId64 " want %" PRId64 " (rel err %g)", label, what, p, got, exact,
	      err / (double)exact);
}

static const uint64_t fixed_pm[] = { 0, 1000, 25000, 50000, 90000, 99000, 99900, 100000, 10, 99990, 75000, 33333 };

/* sorted holds the samples as recorded (negatives already 0), ascending. */
static void check_percentiles(const struct hist *h, const int64_t *sorted, size_t n, const char *label)
{
	for (size_t k = 0; k < sizeof fixed_pm / sizeof fixed_pm[0] + 40; k++) {
		uint64_t pm = k < sizeof fixed_pm / sizeof fixed_pm[0] ? fixed_pm[k] : rng_u64() % 100001;
		double p = (double)pm / 1000.0;
		int64_t exact = sorted[ref_rank(pm, n) - 1];
		check_value(hist_percentile(h, p), exact, sorted[n - 1], "percentile", label, p);
	}
}

static void check_moments(const struct hist *h, const int64_t *v, size_t n, const char *label)
{
	long double s = 0, sq = 0;
	for (size_t i = 0; i < n; i++) {
		s += (long double)v[i];
		sq += (long double)v[i] * (long double)v[i];
	}
	long double mean = s / (long double)n;
	long double var = sq / (long double)n - mean * mean;
	double sd = var > 0 ? (double)sqrtl(var) : 0.0;
	double rms = (double)sqrtl(sq / (long double)n);
	double gm = hist_mean(h), gs = hist_stddev(h);
	CHECK(fabs(gm - (double)mean) <= 1e-12 * (double)mean + 1e-12, "%s mean %.17g want %.17Lg", label, gm, mean);
	/* sum of squares minus mean^2 cancels: allow a few ulps of E[x^2]. */
	CHECK(fabs(gs - sd) <= 1e-9 * sd + 1e-6 * rms, "%s stddev %.17g want %.17g", label, gs, sd);
}

/* Records v into a fresh histogram and checks everything against the
 * exact data. Returns the histogram. */
static struct hist *check_set(const int64_t *in, size_t n, const char *label, bool moments)
{
	struct hist *h = hist_new();
	assert_non_null(h);
	int64_t *v = malloc(n * sizeof *v);
	assert_non_null(v);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		hist_record(h, in[i]);
		v[i] = in[i] < 0 ? 0 : in[i];
		sum += (uint64_t)v[i];
	}
	if (moments)
		check_moments(h, v, n, label);
	qsort(v, n, sizeof *v, cmp_i64);
	CHECK(hist_count(h) == n, "%s count %" PRIu64, label, hist_count(h));
	CHECK(hist_min(h) == v[0], "%s min %" PRId64 " want %" PRId64, label, hist_min(h), v[0]);
	CHECK(hist_max(h) == v[n - 1], "%s max %" PRId64 " want %" PRId64, label, hist_max(h), v[n - 1]);
	CHECK(hist_sum(h) == sum, "%s sum %" PRIu64 " want %" PRIu64, label, hist_sum(h), sum);
	check_percentiles(h, v, n, label);
	free(v);
	return h;
}

static void check_set_free(const int64_t *in, size_t n, const char *label, bool moments)
{
	hist_free(check_set(in, n, label, moments));
}

static int64_t lognormal(double median, double sigma)
{
	return (int64_t)(median * exp(sigma * rng_gauss()));
}

static void roundtrip(const struct hist *h, const char *label);

/* ---- tests ---- */

static void test_empty(void **state)
{
	(void)state;
	struct hist *h = hist_new();
	assert_non_null(h);
	assert_int_equal(hist_count(h), 0);
	assert_int_equal(hist_min(h), 0);
	assert_int_equal(hist_max(h), 0);
	assert_int_equal(hist_sum(h), 0);
	assert_true(hist_mean(h) == 0.0);
	assert_true(hist_stddev(h) == 0.0);
	assert_int_equal(hist_percentile(h, 50), 0);
	assert_int_equal(hist_percentile(h, 100), 0);
	hist_record_n(h, 77, 0);
	assert_int_equal(hist_count(h), 0);
	assert_int_equal(hist_min(h), 0);
	hist_free(h);
	hist_free(NULL);
}

/* The layout as documented: contiguous buckets, each no wider than 1/1024
 * of its lowest value (1 below 2048), HIST_BUCKETS of them up to
 * HIST_TOP_US. */
static void test_layout(void **state)
{
	(void)state;
	int64_t v = 0, lo, hi;
	long buckets = 0;
	while (v <= HIST_TOP_US) {
		hist_bucket_bounds(v, &lo, &hi);
		CHECK(lo == v, "bucket of %" PRId64 " starts at %" PRId64, v, lo);
		CHECK(hi >= lo, "bucket %" PRId64 "..%" PRId64, lo, hi);
		int64_t w = hi - lo + 1;
		CHECK((w & (w - 1)) == 0, "width %" PRId64 " not a power of two", w);
		if (lo < 2048)
			CHECK(w == 1, "value %" PRId64 " not exact", lo);
		else
			CHECK(w * 1024 <= lo, "bucket %" PRId64 " width %" PRId64 " too wide", lo, w);
		int64_t mid = lo + (hi - lo) / 2, l2, h2;
		hist_bucket_bounds(mid, &l2, &h2);
		CHECK(l2 == lo && h2 == hi, "inner value %" PRId64 " in another bucket", mid);
		buckets++;
		v = hi + 1;
	}
	assert_int_equal(buckets, HIST_BUCKETS);
	assert_int_equal(v, HIST_TOP_US + 1);
	hist_bucket_bounds(INT64_MAX, &lo, &hi);
	assert_int_equal(hi, HIST_TOP_US);
	assert_int_equal(lo, TOP_LO);
	hist_bucket_bounds(-5, &lo, &hi);
	assert_int_equal(lo, 0);
	assert_int_equal(hi, 0);
	assert_true(hist_memory() >= HIST_BUCKETS * sizeof(uint64_t));
}

static void test_distributions(void **state)
{
	(void)state;
	enum { N = 100000 };
	int64_t *v = malloc(N * sizeof *v);
	assert_non_null(v);
	rng_seed(1);

	for (size_t i = 0; i < N; i++)
		v[i] = (int64_t)(rng_u64() % 10000001);
	check_set_free(v, N, "uniform 0..10s", true);

	for (size_t i = 0; i < N; i++)
		v[i] = (int64_t)(rng_u64() % 3600000001ULL);
	check_set_free(v, N, "uniform 0..1h", true);

	for (size_t i = 0; i < N; i++)
		v[i] = lognormal(50000, 1.0);
	check_set_free(v, N, "lognormal", true);

	for (size_t i = 0; i < N; i++)
		v[i] = lognormal(800, 0.6); /* straddles the exact range */
	check_set_free(v, N, "lognormal small", true);

	/* Pareto, alpha 1.1: a few samples run past the top bucket. */
	for (size_t i = 0; i < N; i++)
		v[i] = (int64_t)fmin(2000.0 * pow(rng_unit(), -1.0 / 1.1), 9e15);
	check_set_free(v, N, "pareto", true);

	for (size_t i = 0; i < N; i++)
		v[i] = 123457;
	check_set_free(v, N, "all equal", true);

	for (size_t i = 0; i < N; i++)
		v[i] = (i & 1) ? 1 : 3600000000LL;
	check_set_free(v, N, "1us and 1h", true);

	for (size_t i = 0; i < N; i++)
		v[i] = (i % 3) ? (int64_t)(1 + rng_u64() % 3) : 3600000000LL - (int64_t)(rng_u64() % 1000);
	check_set_free(v, N, "two clusters", true);

	for (size_t i = 0; i < 1000; i++)
		v[i] = 0;
	check_set_free(v, 1000, "zeros", true);

	for (size_t i = 0; i < 1000; i++)
		v[i] = -(int64_t)(rng_u64() % 100000) - 1;
	v[0] = INT64_MIN;
	v[1] = 5;
	check_set_free(v, 1000, "negatives", true);
	free(v);
}

static void test_boundaries(void **state)
{
	(void)state;
	int64_t v[64 * 7];
	size_t n = 0;
	for (int k = 0; k < 40; k++) {
		int64_t p2 = INT64_C(1) << k;
		for (int64_t d = -1; d <= 1; d++)
			v[n++] = p2 + d;
	}
	v[n++] = HIST_TOP_US;
	v[n++] = HIST_TOP_US - 1;
	v[n++] = TOP_LO;
	v[n++] = TOP_LO - 1;
	rng_seed(2);
	check_set_free(v, n, "powers of two", true);

	/* Every value around each power of two, with random multiplicity. */
	enum { M = 200000 };
	int64_t *w = malloc(M * sizeof *w);
	assert_non_null(w);
	size_t m = 0;
	for (int k = 8; k < 32; k++)
		for (int64_t d = -6; d <= 6; d++)
			for (uint64_t r = rng_u64() % 4; r > 0; r--)
				w[m++] = (INT64_C(1) << k) + d;
	check_set_free(w, m, "around powers of two", true);

	/* 0..4095 once each: every rank of the exact range and its edge. */
	for (m = 0; m < 4096; m++)
		w[m] = (int64_t)m;
	struct hist *h = check_set(w, m, "0..4095", true);
	for (uint64_t r = 1; r <= m; r++) {
		/* pm chosen so the integer reference rank is r */
		uint64_t pm = (r * 100000) / m;
		while (ref_rank(pm, m) < r)
			pm++;
		check_value(hist_percentile(h, (double)pm / 1000.0), w[ref_rank(pm, m) - 1], 4095, "rank", "0..4095",
			    (double)pm / 1000.0);
	}
	hist_free(h);
	free(w);
}

static void test_single_and_extremes(void **state)
{
	(void)state;
	const int64_t singles[] = { 0, 1, 2047, 2048, 2049, 123456789, HIST_TOP_US, HIST_TOP_US + 1, INT64_MAX, -3 };
	char label[64];
	for (size_t i = 0; i < sizeof singles / sizeof singles[0]; i++) {
		snprintf(label, sizeof label, "single %" PRId64, singles[i]);
		struct hist *h = check_set(&singles[i], 1, label, false);
		int64_t want = singles[i] < 0 ? 0 : singles[i];
		for (int p = 0; p <= 100; p += 5)
			CHECK(hist_percentile(h, p) == want, "%s p%d = %" PRId64, label, p, hist_percentile(h, p));
		assert_true(hist_stddev(h) == 0.0);
		hist_free(h);
	}

	/* Above the top: clamped into the top bucket, extremes and sum exact. */
	int64_t v[1000];
	rng_seed(3);
	for (size_t i = 0; i < 1000; i++)
		v[i] = lognormal(20000, 0.5);
	v[10] = 5000000000LL;
	v[20] = 1000000000000LL;
	v[30] = INT64_MAX / 4;
	struct hist *h = check_set(v, 1000, "above top", true);
	assert_int_equal(hist_max(h), INT64_MAX / 4);
	assert_int_equal(hist_percentile(h, 100), INT64_MAX / 4);
	hist_free(h);

	int64_t big[3] = { 7000000000LL, 7000000000LL, 7000000000LL };
	h = check_set(big, 3, "all above top", true);
	assert_int_equal(hist_percentile(h, 50), 7000000000LL);
	hist_free(h);

	/* Out-of-range p. */
	int64_t two[2] = { 10, 20 };
	h = check_set(two, 2, "two", true);
	assert_int_equal(hist_percentile(h, -5), 10);
	assert_int_equal(hist_percentile(h, 250), 20);
	assert_int_equal(hist_percentile(h, NAN), 10);
	assert_int_equal(hist_percentile(h, 50), 10);
	assert_int_equal(hist_percentile(h, 50.0001), 20);
	hist_free(h);
}

/* Same buckets, count, extremes and sum: every percentile is identical. */
static void assert_same(const struct hist *a, const struct hist *b, const char *label)
{
	CHECK(hist_count(a) == hist_count(b), "%s count", label);
	CHECK(hist_sum(a) == hist_sum(b), "%s sum", label);
	CHECK(hist_min(a) == hist_min(b), "%s min %" PRId64 " vs %" PRId64, label, hist_min(a), hist_min(b));
	CHECK(hist_max(a) == hist_max(b), "%s max %" PRId64 " vs %" PRId64, label, hist_max(a), hist_max(b));
	for (int pm = 0; pm <= 100000; pm += 100) {
		double p = pm / 1000.0;
		CHECK(hist_percentile(a, p) == hist_percentile(b, p), "%s p%g: %" PRId64 " vs %" PRId64, label, p,
		      hist_percentile(a, p), hist_percentile(b, p));
	}
	CHECK(fabs(hist_mean(a) - hist_mean(b)) <= 1e-12 * hist_mean(b), "%s mean", label);
	CHECK(fabs(hist_stddev(a) - hist_stddev(b)) <= 1e-9 * hist_stddev(b) + 1e-9, "%s stddev", label);
}

static void test_record_n(void **state)
{
	(void)state;
	struct hist *a = hist_new(), *b = hist_new();
	assert_non_null(a);
	assert_non_null(b);
	rng_seed(4);
	for (int i = 0; i < 300; i++) {
		int64_t v = lognormal(10000, 2);
		uint64_t k = 1 + rng_u64() % 20;
		hist_record_n(a, v, k);
		for (uint64_t j = 0; j < k; j++)
			hist_record(b, v);
	}
	hist_record_n(a, -9, 3);
	for (int j = 0; j < 3; j++)
		hist_record(b, -9);
	assert_int_equal(hist_count(a), hist_count(b));
	assert_int_equal(hist_sum(a), hist_sum(b));
	assert_int_equal(hist_min(a), hist_min(b));
	assert_int_equal(hist_max(a), hist_max(b));
	for (int pm = 0; pm <= 100000; pm += 250)
		assert_int_equal(hist_percentile(a, pm / 1000.0), hist_percentile(b, pm / 1000.0));
	assert_true(fabs(hist_stddev(a) - hist_stddev(b)) <= 1e-9 * hist_stddev(b));
	hist_free(a);
	hist_free(b);
}

/* Many values into many histograms at once: as each recorded alone. */
static void test_record_many(void **state)
{
	(void)state;
	struct hist *one[3], *many[3];
	for (int k = 0; k < 3; k++) {
		one[k] = hist_new();
		many[k] = hist_new();
		assert_non_null(one[k]);
		assert_non_null(many[k]);
	}
	rng_seed(5);
	uint32_t v[500];
	for (size_t i = 0; i < 500; i++)
		v[i] = i % 97 == 0 ? UINT32_MAX : (uint32_t)lognormal(10000, 2);
	v[7] = 0;
	hist_record(many[2], 123456);  /* a histogram that held something before */
	hist_record(one[2], 123456);
	hist_record_many(many, 3, v, 500);
	hist_record_many(many, 2, v, 100); /* fewer histograms */
	hist_record_many(many, 3, v, 0);   /* nothing */
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < 500; i++)
			hist_record(one[k], v[i]);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < 100; i++)
			hist_record(one[k], v[i]);
	for (int k = 0; k < 3; k++) {
		assert_same(many[k], one[k], "record_many");
		hist_free(one[k]);
		hist_free(many[k]);
	}
}


static void test_add(void **state)
{
	(void)state;
	enum { N = 50000 };
	rng_seed(5);
	struct hist *all = hist_new(), *h1 = hist_new(), *h2 = hist_new(), *sum = hist_new();
	assert_non_null(all);
	assert_non_null(h1);
	assert_non_null(h2);
	assert_non_null(sum);
	for (int i = 0; i < N; i++) {
		int64_t v = (i % 7 == 0) ? (int64_t)(rng_u64() % 3000) : lognormal(200000, 1.5);
		if (i == 17)
			v = 6000000000LL; /* past the top: max must still merge exactly */
		hist_record(all, v);
		hist_record(i < N / 3 ? h1 : h2, v);
	}
	hist_add(sum, h1); /* into an empty one */
	hist_add(sum, h2);
	assert_same(sum, all, "h1+h2");
	assert_int_equal(hist_max(sum), 6000000000LL);

	/* Adding an empty histogram changes nothing; adding to itself doubles. */
	hist_reset(h1);
	hist_add(sum, h1);
	assert_same(sum, all, "+empty");
	hist_add(h2, h2);
	hist_add(all, all);
	hist_reset(sum);
	hist_add(sum, all);
	assert_same(sum, all, "copy via add");
	assert_int_equal(hist_count(h2) % 2, 0);

	/* Copy and reset. */
	struct hist *c = hist_new();
	assert_non_null(c);
	hist_record(c, 99999999);
	hist_copy(c, all);
	assert_same(c, all, "copy");
	hist_copy(c, c);
	assert_same(c, all, "self copy");
	hist_reset(c);
	hist_record(c, 4242);
	assert_int_equal(hist_count(c), 1);
	for (int p = 0; p <= 100; p++)
		assert_int_equal(hist_percentile(c, p), 4242);
	hist_free(c);
	hist_free(all);
	hist_free(h1);
	hist_free(h2);
	hist_free(sum);
}

/* A touched histogram (its pages written up front) is an empty one,
 * whatever it held. */
static void test_touch_is_empty(void **state)
{
	(void)state;
	struct hist *h = hist_new(), *fresh = hist_new();
	assert_non_null(h);
	assert_non_null(fresh);
	hist_record(h, 12345);
	hist_record(h, 3);
	hist_touch(h);
	assert_int_equal(hist_count(h), 0);
	hist_record(h, 77);
	hist_record(fresh, 77);
	char *a = hist_encode(h), *b = hist_encode(fresh);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b);
	free(a);
	free(b);
	hist_free(h);
	hist_free(fresh);
}

static void test_reset_clears_everything(void **state)
{
	(void)state;
	struct hist *h = hist_new(), *fresh = hist_new();
	assert_non_null(h);
	assert_non_null(fresh);
	rng_seed(6);
	for (int i = 0; i < 10000; i++)
		hist_record(h, (int64_t)(rng_u64() % 5000000000ULL));
	hist_reset(h);
	char *a = hist_encode(h), *b = hist_encode(fresh);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* No stale bucket survives anywhere in the old range. */
	hist_record(h, 1);
	hist_record(h, 5000000000LL);
	hist_record(fresh, 1);
	hist_record(fresh, 5000000000LL);
	a = hist_encode(h);
	b = hist_encode(fresh);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* Copying over a histogram with samples outside the source's range. */
	hist_reset(h);
	hist_reset(fresh);
	hist_record(h, 3);
	hist_record(h, 4000000000LL);
	hist_record(fresh, 1000000);
	hist_record(fresh, 2000000);
	hist_copy(h, fresh);
	a = hist_encode(h);
	b = hist_encode(fresh);
	assert_string_equal(a, b);
	free(a);
	free(b);
	/* Widening the range must not uncover leftovers of h's old samples. */
	hist_record(h, 2);
	hist_record(h, 5000000000LL);
	hist_record(fresh, 2);
	hist_record(fresh, 5000000000LL);
	a = hist_encode(h);
	b = hist_encode(fresh);
	assert_string_equal(a, b);
	free(a);
	free(b);
	hist_free(h);
	hist_free(fresh);
}

/* window = slices added, minus the oldest, against the remaining samples. */
static void check_window(const struct hist *win, int64_t *live, size_t n, const char *label)
{
	CHECK(hist_count(win) == n, "%s count %" PRIu64 " want %zu", label, hist_count(win), n);
	if (n == 0) {
		CHECK(hist_min(win) == 0 && hist_max(win) == 0 && hist_sum(win) == 0, "%s empty", label);
		return;
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (uint64_t)live[i];
	CHECK(hist_sum(win) == sum, "%s sum", label);
	qsort(live, n, sizeof *live, cmp_i64);
	int64_t lo, hi;
	hist_bucket_bounds(live[0], &lo, &hi);
	CHECK(hist_min(win) >= lo && hist_min(win) <= hi, "%s min %" PRId64 " outside bucket of %" PRId64, label,
	      hist_min(win), live[0]);
	hist_bucket_bounds(live[n - 1], &lo, &hi);
	CHECK(hist_max(win) >= lo && hist_max(win) <= hi, "%s max %" PRId64 " outside bucket of %" PRId64, label,
	      hist_max(win), live[n - 1]);
	check_value(hist_min(win), live[0], live[n - 1], "min", label, 0);
	check_value(hist_max(win), live[n - 1], live[n - 1], "max", label, 100);
	check_percentiles(win, live, n, label);
}

static void test_sub(void **state)
{
	(void)state;
	enum { SLICES = 8, PER = 3000, STEPS = 60 };
	struct hist *slice[SLICES], *win = hist_new();
	int64_t *samples = malloc(sizeof(int64_t) * SLICES * PER);
	int64_t *live = malloc(sizeof(int64_t) * SLICES * PER);
	size_t nsamp[SLICES] = { 0 };
	assert_non_null(win);
	assert_non_null(samples);
	assert_non_null(live);
	for (int s = 0; s < SLICES; s++) {
		slice[s] = hist_new();
		assert_non_null(slice[s]);
	}
	rng_seed(7);
	char label[64];
	for (int step = 0; step < STEPS; step++) {
		int s = step % SLICES;
		if (step >= SLICES)
			hist_sub(win, slice[s]);
		hist_reset(slice[s]);
		/* Slices differ in size and shape; some hold the window's
		 * extremes, so expiring them forces the extreme to be found
		 * again, and some are empty. */
		size_t n = (step % 5 == 3) ? 0 : 1 + rng_u64() % PER;
		double median = (step % 3 == 0) ? 3000.0 : 400000.0;
		for (size_t i = 0; i < n; i++) {
			int64_t v = lognormal(median, step % 2 ? 0.3 : 1.2);
			if (v > 3600000000LL)
				v = 3600000000LL;
			samples[s * PER + i] = v;
			hist_record(slice[s], v);
		}
		nsamp[s] = n;
		hist_add(win, slice[s]);

		/* Expire the oldest live slice to see sub on its own too. */
		int old = (step + 1) % SLICES;
		struct hist *tmp = hist_new();
		assert_non_null(tmp);
		hist_copy(tmp, win);
		if (step + 1 >= SLICES)
			hist_sub(tmp, slice[old]);
		size_t m = 0;
		for (int k = 0; k < SLICES; k++) {
			if (k == old && step + 1 >= SLICES)
				continue;
			if (k > step)
				continue;
			memcpy(live + m, samples + k * PER, nsamp[k] * sizeof *live);
			m += nsamp[k];
		}
		snprintf(label, sizeof label, "step %d", step);
		check_window(tmp, live, m, label);

		/* Same buckets as a histogram built from the survivors. */
		struct hist *ref = hist_new();
		assert_non_null(ref);
		for (size_t i = 0; i < m; i++)
			hist_record(ref, live[i]);
		for (int pm = 0; pm <= 100000; pm += 500) {
			int64_t a = hist_percentile(tmp, pm / 1000.0), b = hist_percentile(ref, pm / 1000.0);
			int64_t lo, hi;
			hist_bucket_bounds(b, &lo, &hi);
			CHECK(a >= lo && a <= hi, "%s p%g: %" PRId64 " vs fresh %" PRId64, label, pm / 1000.0, a, b);
		}
		hist_free(ref);
		hist_free(tmp);
	}

	/* Expire everything: empty, and usable again. */
	for (int s = 0; s < SLICES; s++)
		hist_sub(win, slice[s]);
	check_window(win, live, 0, "drained");
	hist_record(win, 31337);
	assert_int_equal(hist_min(win), 31337);
	assert_int_equal(hist_max(win), 31337);
	assert_int_equal(hist_percentile(win, 50), 31337);

	/* Extremes the subtracted slice did not reach stay exact. */
	hist_reset(win);
	hist_reset(slice[0]);
	hist_reset(slice[1]);
	hist_record(slice[0], 1000003);
	hist_record(slice[0], 9000017);
	hist_record(slice[1], 5000011);
	hist_add(win, slice[0]);
	hist_add(win, slice[1]);
	hist_sub(win, slice[1]);
	assert_int_equal(hist_min(win), 1000003);
	assert_int_equal(hist_max(win), 9000017);
	/* A removed extreme whose bucket keeps other samples. */
	hist_record(slice[1], 1000002);
	hist_record(slice[1], 9000018);
	hist_add(win, slice[1]);
	hist_sub(win, slice[1]);
	int64_t live2[2] = { 1000003, 9000017 }; /* bucket-mates of 1000002, 9000018 */
	check_window(win, live2, 2, "bucket-mates");
	/* Below 2048 a surviving bucket is one value: exact again. */
	hist_reset(win);
	hist_reset(slice[1]);
	hist_record(win, 700);
	hist_record(win, 700);
	hist_record(win, 1900);
	hist_record(slice[1], 700);
	hist_sub(win, slice[1]);
	assert_int_equal(hist_min(win), 700);
	assert_int_equal(hist_max(win), 1900);

	for (int s = 0; s < SLICES; s++)
		hist_free(slice[s]);
	hist_free(win);
	free(samples);
	free(live);
}

/* Hand-placed extremes at the far ends of 512-wide buckets, where keeping a
 * stale exact value, or taking the bucket's edge as the extreme, is off by
 * more than the error bound. */
static void test_sub_extremes(void **state)
{
	(void)state;
	struct hist *w = hist_new(), *s = hist_new();
	assert_non_null(w);
	assert_non_null(s);
	const int64_t blo = 999936, bhi = 1000447; /* one bucket */
	int64_t lo, hi;
	hist_bucket_bounds(blo, &lo, &hi);
	assert_int_equal(lo, blo);
	assert_int_equal(hi, bhi);

	/* The exact min leaves; a bucket-mate 511 above stays. */
	hist_record(w, blo);
	hist_record(w, bhi);
	hist_record(w, 5000000);
	hist_record(s, blo);
	hist_sub(w, s);
	check_value(hist_min(w), bhi, 5000000, "min", "min bucket-mate", 0);
	check_value(hist_percentile(w, 0), bhi, 5000000, "p0", "min bucket-mate", 0);
	assert_int_equal(hist_max(w), 5000000);

	/* The min's bucket empties; the next one holds only its top (or only
	 * its bottom) value. */
	for (int k = 0; k < 2; k++) {
		int64_t stay = k ? blo : bhi;
		hist_reset(w);
		hist_reset(s);
		hist_record(w, 1000);
		hist_record(w, stay);
		hist_record(w, 5000000);
		hist_record(s, 1000);
		hist_sub(w, s);
		check_value(hist_min(w), stay, 5000000, "min", "min rescan", 0);
		assert_int_equal(hist_max(w), 5000000);
	}

	/* The same for max, both ways. */
	hist_reset(w);
	hist_reset(s);
	hist_record(w, 1000);
	hist_record(w, blo);
	hist_record(w, bhi);
	hist_record(s, bhi);
	hist_sub(w, s);
	check_value(hist_max(w), blo, blo, "max", "max bucket-mate", 100);
	check_value(hist_percentile(w, 100), blo, blo, "p100", "max bucket-mate", 100);
	assert_int_equal(hist_min(w), 1000);
	for (int k = 0; k < 2; k++) {
		int64_t stay = k ? blo : bhi;
		hist_reset(w);
		hist_reset(s);
		hist_record(w, 1000);
		hist_record(w, stay);
		hist_record(w, 5000000);
		hist_record(s, 5000000);
		hist_sub(w, s);
		check_value(hist_max(w), stay, stay, "max", "max rescan", 100);
		check_value(hist_percentile(w, 99), stay, stay, "p99", "max rescan", 99);
	}

	/* Merging an exact extreme with an equal bound keeps it exact. */
	struct hist *x = hist_new();
	assert_non_null(x);
	hist_reset(w);
	hist_reset(s);
	hist_record(w, blo); /* w: bucket [blo, bhi] holds bhi, min bound blo */
	hist_record(w, bhi);
	hist_record(s, blo);
	hist_sub(w, s);
	hist_record(x, blo); /* x: exactly blo */
	hist_record(x, 7000000);
	hist_add(x, w);
	assert_int_equal(hist_min(x), blo);
	hist_add(w, x);
	assert_int_equal(hist_min(w), blo);
	hist_free(x);
	hist_free(w);
	hist_free(s);
}

/* Fractional p whose p * n / 100 is an integer in exact arithmetic must not
 * round up a rank (99.9 of 1000 is rank 999, not 1000). */
static void test_rank_rounding(void **state)
{
	(void)state;
	static const uint64_t pms[] = { 100, 1100, 5500, 12500, 33300, 66600, 70000, 99000, 99900, 99990, 99999,
					 57700, 28600, 14300, 2, 99998 };
	struct hist *h = hist_new();
	assert_non_null(h);
	for (uint64_t n = 1; n <= 2048; n++) {
		hist_record(h, (int64_t)n - 1); /* value = rank - 1, all exact */
		for (size_t k = 0; k < sizeof pms / sizeof pms[0]; k++) {
			double p = (double)pms[k] / 1000.0;
			int64_t want = (int64_t)ref_rank(pms[k], n) - 1;
			CHECK(hist_percentile(h, p) == want, "n=%" PRIu64 " p%g: %" PRId64 " want %" PRId64, n, p,
			      hist_percentile(h, p), want);
		}
	}
	/* Cases where the float product lands just above the integer rank
	 * (0.017 * 100000 / 100 = 17.000000000000004). */
	hist_reset(h);
	for (int64_t v = 0; v < 100000; v++)
		hist_record(h, v);
	static const double ps[] = { 0.017, 0.034, 0.035, 0.068, 0.136, 0.07, 1.11, 0.14 };
	for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
		int64_t want = (int64_t)llround(ps[k] * 1000) - 1;
		CHECK(hist_percentile(h, ps[k]) == want, "n=100000 p%g: %" PRId64 " want %" PRId64, ps[k],
		      hist_percentile(h, ps[k]), want);
	}
	hist_free(h);
}

static void test_moments(void **state)
{
	(void)state;
	enum { N = 20000 };
	int64_t v[N];
	rng_seed(8);
	for (int i = 0; i < N; i++)
		v[i] = lognormal(30000, 0.8);
	struct hist *h = check_set(v, N, "moments", true);
	/* Known answer: {2, 4, 4, 4, 5, 5, 7, 9} has mean 5, stddev 2. */
	struct hist *k = hist_new();
	assert_non_null(k);
	const int64_t kv[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	for (size_t i = 0; i < 8; i++)
		hist_record(k, kv[i]);
	assert_true(hist_mean(k) == 5.0);
	assert_true(fabs(hist_stddev(k) - 2.0) < 1e-12);
	/* Sub keeps them right. */
	hist_add(h, k);
	hist_sub(h, k);
	check_moments(h, v, N, "after add+sub");
	hist_free(k);

	/* 1 vanishes next to 9e18 in the double sum of squares, so removing
	 * it afterwards would leave it negative (an encoding with the sign bit
	 * set, which decode rejects). */
	struct hist *s1 = hist_new(), *s2 = hist_new(), *s3 = hist_new();
	assert_non_null(s1);
	assert_non_null(s2);
	assert_non_null(s3);
	hist_reset(h);
	hist_record(s1, 3000000000LL);
	hist_record(s2, 1);
	hist_record(s3, 0);
	hist_add(h, s1);
	hist_add(h, s2);
	hist_add(h, s3);
	hist_sub(h, s1);
	hist_sub(h, s2);
	assert_int_equal(hist_count(h), 1);
	assert_true(hist_stddev(h) == 0.0);
	assert_true(hist_mean(h) == 0.0);
	roundtrip(h, "drained sum of squares");
	hist_free(s1);
	hist_free(s2);
	hist_free(s3);
	hist_free(h);
}

/* ---- encoding ---- */

static bool json_safe(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x21 || c > 0x7e || c == '"' || c == '\\')
			return false;
	}
	return true;
}

static void roundtrip(const struct hist *h, const char *label)
{
	char *s = hist_encode(h);
	assert_non_null(s);
	CHECK(json_safe(s), "%s: unsafe encoding %s", label, s);
	CHECK(strncmp(s, "h1:", 3) == 0, "%s: prefix", label);
	struct hist *d = hist_new();
	assert_non_null(d);
	hist_record(d, 555); /* decode must reset first */
	CHECK(hist_decode(d, s) == 0, "%s: decode failed: %.200s", label, s);
	assert_same(d, h, label);
	double m1 = hist_mean(d), m2 = hist_mean(h), s1 = hist_stddev(d), s2 = hist_stddev(h);
	CHECK(memcmp(&m1, &m2, sizeof m1) == 0 && memcmp(&s1, &s2, sizeof s1) == 0, "%s: moments not bit-exact", label);
	char *s2enc = hist_encode(d);
	assert_non_null(s2enc);
	assert_string_equal(s, s2enc);
	free(s2enc);
	free(s);
	hist_free(d);
}

static void test_encode_roundtrip(void **state)
{
	(void)state;
	struct hist *h = hist_new();
	assert_non_null(h);

	roundtrip(h, "empty");
	char *s = hist_encode(h);
	assert_string_equal(s, "h1:0,0,0,0,0000000000000000:");
	free(s);

	/* The example given in the header comment. */
	hist_record(h, 1500);
	s = hist_encode(h);
	assert_string_equal(s, "h1:1,1500,1500,1500,41412a8800000000:3AsB");
	free(s);
	roundtrip(h, "single");

	hist_reset(h);
	hist_record(h, 0);
	hist_record(h, INT64_MAX);
	hist_record(h, HIST_TOP_US);
	hist_record(h, HIST_TOP_US + 1);
	roundtrip(h, "extremes");

	hist_reset(h);
	rng_seed(9);
	for (int i = 0; i < 100000; i++)
		hist_record(h, lognormal(150000, 0.7));
	roundtrip(h, "lognormal");

	/* Every bucket, huge counts (multi-byte varints of every length). */
	hist_reset(h);
	for (int64_t v = 0; v <= HIST_TOP_US;) {
		int64_t lo, hi;
		hist_bucket_bounds(v, &lo, &hi);
		hist_record_n(h, v, 1 + (rng_u64() >> (rng_u64() % 40 + 24)));
		v = hi + 1;
	}
	roundtrip(h, "all buckets");

	/* Counts needing 10-byte varints; the sum wraps as documented. */
	hist_reset(h);
	hist_record_n(h, 5, UINT64_C(1) << 63);
	hist_record_n(h, 3000000, 123);
	roundtrip(h, "huge counts");
	assert_int_equal(hist_percentile(h, 50), 5);
	assert_int_equal(hist_percentile(h, 100), 3000000);

	/* Inexact extremes (after sub) survive the trip. */
	struct hist *a = hist_new(), *b = hist_new();
	assert_non_null(a);
	assert_non_null(b);
	hist_record(a, 1000001);
	hist_record(a, 1000003);
	hist_record(a, 7000001);
	hist_record(a, 7000003);
	hist_record(b, 1000001);
	hist_record(b, 7000003);
	hist_sub(a, b);
	s = hist_encode(a);
	CHECK(strchr(s, '~') != NULL, "inexact extremes not marked: %s", s);
	free(s);
	roundtrip(a, "inexact");
	hist_free(a);
	hist_free(b);
	hist_free(h);
}

/* Spec-side builders for hand-made encodings. */
static size_t put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

static void b64url(char *out, const uint8_t *in, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t x = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*out++ = a[x >> 18];
		*out++ = a[(x >> 12) & 63];
		*out++ = a[(x >> 6) & 63];
		*out++ = a[x & 63];
	}
	if (n - i == 1) {
		*out++ = a[in[i] >> 2];
		*out++ = a[(in[i] & 3) << 4];
	} else if (n - i == 2) {
		uint32_t x = (uint32_t)in[i] << 8 | in[i + 1];
		*out++ = a[x >> 10];
		*out++ = a[(x >> 4) & 63];
		*out++ = a[(x & 15) << 2];
	}
	*out = '\0';
}

static int decode_str(const char *s)
{
	struct hist *h = hist_new();
	assert_non_null(h);
	hist_record(h, 12345);
	int rc = hist_decode(h, s);
	if (rc != 0) {
		/* A failed decode leaves h empty. */
		assert_int_equal(hist_count(h), 0);
		assert_int_equal(hist_max(h), 0);
		char *e = hist_encode(h);
		assert_string_equal(e, "h1:0,0,0,0,0000000000000000:");
		free(e);
	}
	hist_free(h);
	return rc;
}

static void test_decode_handmade(void **state)
{
	(void)state;
	uint8_t buf[64];
	char b64[128], s[256];
	size_t n;

	/* Top bucket, index 23551, is fine... */
	n = put_varint(buf, HIST_BUCKETS - 1);
	n += put_varint(buf + n, 1);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:1,4294967295,4294967295,4294967295,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), 0);
	/* ...one past it is not. */
	n = put_varint(buf, HIST_BUCKETS);
	n += put_varint(buf + n, 1);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:1,4294967295,4294967295,4294967295,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	/* Huge gap, and the biggest varint. */
	n = put_varint(buf, UINT64_MAX);
	n += put_varint(buf + n, 1);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:1,0,0,0,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	/* Second bucket's index overflowing the table. */
	n = put_varint(buf, 5);
	n += put_varint(buf + n, 1);
	n += put_varint(buf + n, HIST_BUCKETS - 6);
	n += put_varint(buf + n, 1);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:2,5,5,10,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	/* Counts that overflow when added. */
	n = put_varint(buf, 5);
	n += put_varint(buf + n, UINT64_C(1) << 63);
	n += put_varint(buf + n, 0);
	n += put_varint(buf + n, UINT64_C(1) << 63);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:0,5,6,0,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	/* The same with a count in range is fine (and exercises 10-byte varints). */
	n = put_varint(buf, 5);
	n += put_varint(buf + n, UINT64_C(1) << 62);
	n += put_varint(buf + n, 0);
	n += put_varint(buf + n, UINT64_C(1) << 62);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:9223372036854775808,5,6,0,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), 0);
	/* A zero count. */
	n = put_varint(buf, 5);
	n += put_varint(buf + n, 0);
	b64url(b64, buf, n);
	snprintf(s, sizeof s, "h1:0,5,5,0,0000000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	/* Overlong varint (5 as 0x85 0x00). */
	buf[0] = 0x85;
	buf[1] = 0x00;
	buf[2] = 0x01;
	b64url(b64, buf, 3);
	snprintf(s, sizeof s, "h1:1,5,5,5,4039000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	buf[0] = 0x05;
	buf[1] = 0x01;
	b64url(b64, buf, 2);
	snprintf(s, sizeof s, "h1:1,5,5,5,4039000000000000:%s", b64);
	assert_int_equal(decode_str(s), 0);
	/* An 11-byte varint. */
	memset(buf, 0x80, 10);
	buf[10] = 0x01;
	buf[11] = 0x01;
	b64url(b64, buf, 12);
	snprintf(s, sizeof s, "h1:1,5,5,5,4039000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);
	/* Truncated mid-varint. */
	buf[0] = 0x85;
	b64url(b64, buf, 1);
	snprintf(s, sizeof s, "h1:1,5,5,5,4039000000000000:%s", b64);
	assert_int_equal(decode_str(s), -1);

	/* Header defects around a valid "h1:1,5,5,5,...:BQE". */
	assert_int_equal(decode_str("h1:1,5,5,5,4039000000000000:BQE"), 0);
	const char *bad[] = {
		"", "h", "h1", "h1:", "h2:1,5,5,5,4039000000000000:BQE", "H1:1,5,5,5,4039000000000000:BQE",
		"h1:1,5,5,5,4039000000000000:BQE=", /* padding */
		"h1:1,5,5,5,4039000000000000:BQF",  /* non-zero unused bits */
		"h1:1,5,5,5,4039000000000000:BQE ", "h1:1,5,5,5,4039000000000000:BQ.E",
		"h1:1,5,5,5,4039000000000000:BQEA", /* a third byte: gap 0 without a count */
		"h1:1,5,5,5,4039000000000000:BQEAAA", /* gap 0, count 0 */
		"h1:1,5,5,5,4039000000000000:BQEAB", /* length 1 mod 4 */
		"h1:1,5,5,5,4039000000000000", "h1:1,5,5,5,403900000000000:BQE", "h1:1,5,5,5,40390000000000000:BQE",
		"h1:1,5,5,5,4039000000000000X:BQE", "h1:1,5,5,5,4039000000000000::BQE",
		"h1:1,5,5,5,4039000000000000:BQE:", "h1:1,5,5,5,4039000000000000:",
		"h1:1,5,5,5,4039000000000000:BQE\n",
		"h1:1,5,5,5,4039000000000000:B",
		"h1:1,5,5,5,4039000000000000:QE", "h1:01,5,5,5,4039000000000000:BQE", "h1:1,05,5,5,4039000000000000:BQE",
		"h1:+1,5,5,5,4039000000000000:BQE", "h1: 1,5,5,5,4039000000000000:BQE", "h1:-1,5,5,5,4039000000000000:BQE",
		"h1:1,-5,5,5,4039000000000000:BQE", "h1:1,5,5,-5,4039000000000000:BQE",
		"h1:1,5,5,5,4039000000000000:BQE,", "h1:1,5,5,4039000000000000:BQE", "h1:1,5,5,5,5,4039000000000000:BQE",
		"h1:1,,5,5,4039000000000000:BQE", "h1:1,5,,5,4039000000000000:BQE", "h1:1,5,5,,4039000000000000:BQE",
		"h1:1,5,5,5,4039000000000000:bqe",   /* different bytes, wrong count */
		"h1:1,5,5,5,4039000000000000:BgE",   /* bucket 6 holds not MIN */
		"h1:1,4,5,5,4039000000000000:BQE",   /* MIN in another bucket */
		"h1:1,5,6,5,4039000000000000:BQE",   /* MAX in another bucket */
		"h1:1,6,5,5,4039000000000000:BQE",   /* MIN > MAX */
		"h1:2,5,5,5,4039000000000000:BQE",   /* count mismatch */
		"h1:0,5,5,5,4039000000000000:BQE", "h1:0,0,0,0,0000000000000000:BQE",
		"h1:0,0,0,1,0000000000000000:", "h1:0,0,0,0,0000000000000001:", "h1:0,0,1,0,0000000000000000:",
		"h1:0,~0,0,0,0000000000000000:", "h1:0,0,0,0,0000000000000000:A",
		"h1:1,5,5,5,4039000000000000:BQE~", "h1:1,5~,5,5,4039000000000000:BQE", "h1:1,~~5,5,5,4039000000000000:BQE",
		"h1:1,5,5,5,4039000000000000A:BQE", "h1:1,5,5,5,403900000000000G:BQE", "h1:1,5,5,5,403900000000000F:BQE",
		"h1:1,5,5,5,7ff0000000000000:BQE",   /* +inf */
		"h1:1,5,5,5,7ff8000000000000:BQE",   /* NaN */
		"h1:1,5,5,5,c039000000000000:BQE",   /* negative */
		"h1:1,5,5,5,8000000000000000:BQE",   /* -0 */
		"h1:18446744073709551616,5,5,5,4039000000000000:BQE", /* 2^64 */
		"h1:1,9223372036854775808,5,5,4039000000000000:BQE",  /* 2^63 */
		"h1:1,5,5,99999999999999999999,4039000000000000:BQE",
		"\xff\xfe", "h1:\x01", "{\"h1\":1}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(decode_str(bad[i]) == -1, "accepted bad[%zu] = \"%s\"", i, bad[i]);
	/* Extremes of the number fields that are legal. */
	assert_int_equal(decode_str("h1:1,5,5,18446744073709551615,4039000000000000:BQE"), 0);
	assert_int_equal(decode_str("h1:1,~5,~5,5,4039000000000000:BQE"), 0);
	struct hist *h = hist_new();
	assert_non_null(h);
	assert_int_equal(hist_decode(h, NULL), -1);
	hist_free(h);
}

static char *encode_sample(int kind)
{
	struct hist *h = hist_new();
	assert_non_null(h);
	int n = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? 40 : 3000;
	for (int i = 0; i < n; i++)
		hist_record(h, kind == 2 ? (int64_t)(rng_u64() >> (rng_u64() % 64)) : lognormal(40000, 1));
	char *s = hist_encode(h);
	assert_non_null(s);
	hist_free(h);
	return s;
}

/* Every strict prefix of a valid encoding is invalid (counts must add up),
 * and random damage either fails or yields a canonical encoding. */
static void test_decode_mutations(void **state)
{
	(void)state;
	rng_seed(10);
	struct hist *h = hist_new();
	assert_non_null(h);
	char *valid[4];
	for (int k = 0; k < 4; k++) {
		valid[k] = encode_sample(k);
		size_t len = strlen(valid[k]);
		char *pre = malloc(len + 1);
		assert_non_null(pre);
		for (size_t cut = 0; cut < len; cut++) {
			memcpy(pre, valid[k], cut);
			pre[cut] = '\0';
			CHECK(hist_decode(h, pre) == -1, "prefix of length %zu accepted", cut);
			assert_int_equal(hist_count(h), 0);
		}
		free(pre);
	}

	static const char pick[] = "0123456789abcdefABCDEF,:~-_h1 \"\\\x01\x80\xff";
	size_t accepted = 0;
	for (int it = 0; it < 40000; it++) {
		const char *src = valid[rng_u64() % 4];
		size_t len = strlen(src);
		size_t cap = len + 64;
		char *m = malloc(cap + 1);
		assert_non_null(m);
		size_t n;
		if (it % 10 == 0) {
			/* pure noise, sometimes behind a valid prefix */
			n = rng_u64() % 48;
			size_t start = 0;
			if (it % 20 == 0) {
				memcpy(m, "h1:", 3);
				start = 3;
			}
			for (size_t i = start; i < n + start; i++)
				m[i] = (char)(1 + rng_u64() % 255);
			n += start;
		} else {
			memcpy(m, src, len);
			n = len;
			int edits = 1 + (int)(rng_u64() % 4);
			for (int e = 0; e < edits && n > 0; e++) {
				size_t pos = rng_u64() % n;
				switch (rng_u64() % 5) {
				case 0: m[pos] = pick[rng_u64() % (sizeof pick - 1)]; break;
				case 1: m[pos] = (char)(m[pos] ^ (1 << (rng_u64() % 7))); if (!m[pos]) m[pos] = 'x'; break;
				case 2: memmove(m + pos, m + pos + 1, n - pos - 1); n--; break;
				case 3:
					if (n < cap) {
						memmove(m + pos + 1, m + pos, n - pos);
						m[pos] = pick[rng_u64() % (sizeof pick - 1)];
						n++;
					}
					break;
				default: n = pos; break;
				}
			}
		}
		m[n] = '\0';
		/* Exact-size copy so ASan catches any read past the NUL. */
		char *exact = malloc(strlen(m) + 1);
		assert_non_null(exact);
		memcpy(exact, m, strlen(m) + 1);
		if (hist_decode(h, exact) == 0) {
			accepted++;
			char *again = hist_encode(h);
			assert_non_null(again);
			CHECK(strcmp(again, exact) == 0, "accepted non-canonical \"%s\" (re-encodes as \"%s\")", exact, again);
			free(again);
			/* And the result behaves. */
			int64_t lo = hist_min(h), hi = hist_max(h), prev = lo;
			for (int p = 0; p <= 100; p += 10) {
				int64_t v = hist_percentile(h, p);
				CHECK(v >= lo && v <= hi && v >= prev, "decoded percentiles out of order in \"%s\"", exact);
				prev = v;
			}
		} else {
			assert_int_equal(hist_count(h), 0);
		}
		free(exact);
		free(m);
	}
	/* Some mutations (e.g. a changed SUM digit) are valid encodings. */
	assert_true(accepted > 0);
	for (int k = 0; k < 4; k++)
		free(valid[k]);
	hist_free(h);
}

/* The bucket of v by the header's formula, independently of hist.c. */
static void ref_bucket(int64_t v, int64_t *lo, int64_t *hi)
{
	if (v > HIST_TOP_US)
		v = HIST_TOP_US;
	int lg = 63 - __builtin_clzll((uint64_t)v | 1);
	int shift = lg - 10 > 0 ? lg - 10 : 0;
	*lo = (v >> shift) << shift;
	*hi = *lo + (INT64_C(1) << shift) - 1;
}

/* Samples <= x in a sorted array. */
static uint64_t ref_count_le(const int64_t *sorted, size_t n, int64_t x)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t m = a + (b - a) / 2;
		if (sorted[m] <= x)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

/* What hist_cumulative promises at le over sorted samples (hist.h). */
static uint64_t ref_cumulative(const int64_t *sorted, size_t n, int64_t le, bool exact_ends)
{
	if (!n || le < 0)
		return 0;
	if (exact_ends && le >= sorted[n - 1])
		return n;
	if (exact_ends && le < sorted[0])
		return 0;
	int64_t lo, hi;
	ref_bucket(le, &lo, &hi);
	return ref_count_le(sorted, n, hi == le ? le : lo - 1);
}

static void test_cumulative(void **state)
{
	(void)state;
	enum { N = 20000 };
	int64_t *v = malloc(N * sizeof *v);
	assert_non_null(v);
	struct hist *h = hist_new(), *part = hist_new();
	assert_non_null(h);
	assert_non_null(part);
	rng_seed(77);
	/* Log-normal around 50 ms: every octave from 1 ms to seconds. */
	for (size_t i = 0; i < N; i++) {
		v[i] = (int64_t)(50000.0 * exp(1.5 * rng_gauss()));
		hist_record(h, v[i]);
	}
	qsort(v, N, sizeof *v, cmp_i64);

	/* vLLM's TTFT bounds in us, then bucket tops, bucket bottoms, values
	 * below 2048, a bound under min and one over max. */
	int64_t le[] = { 1000,	 5000,	 10000,	  20000,   40000,   60000,   80000,    100000,	 250000,
			 500000, 750000, 1000000, 2500000, 5000000, 7500000, 10000000, 20000000, 2560000000 };
	size_t nle = sizeof le / sizeof le[0];
	uint64_t out[64];
	hist_cumulative(h, le, nle, out);
	for (size_t k = 0; k < nle; k++)
		CHECK(out[k] == ref_cumulative(v, N, le[k], true), "le=%" PRId64 ": got %" PRIu64 " want %" PRIu64,
		      le[k], out[k], ref_cumulative(v, N, le[k], true));
	/* Never above the true count, never below it by more than the
	 * bound's own bucket. */
	for (size_t k = 0; k < nle; k++) {
		int64_t lo, hi;
		ref_bucket(le[k], &lo, &hi);
		CHECK(out[k] <= ref_count_le(v, N, le[k]), "le=%" PRId64 " counts a sample above it", le[k]);
		CHECK(out[k] >= ref_count_le(v, N, lo - 1), "le=%" PRId64 " misses more than its bucket", le[k]);
	}

	/* Random bounds, ascending and not, exact below 2048 and at tops. */
	int64_t r[64];
	for (int round = 0; round < 200; round++) {
		size_t m = 1 + rng_u64() % 64;
		for (size_t k = 0; k < m; k++) {
			switch (rng_u64() % 4) {
			case 0:
				r[k] = (int64_t)(rng_u64() % 2048);
				break;
			case 1: {
				int64_t lo, hi;
				ref_bucket((int64_t)(rng_u64() % 20000000), &lo, &hi);
				r[k] = hi;
				break;
			}
			case 2:
				r[k] = (int64_t)(rng_u64() % 20000000);
				break;
			default:
				r[k] = (int64_t)(rng_u64() % 100) - 50;
			}
		}
		if (round % 2 == 0)
			qsort(r, m, sizeof *r, cmp_i64);
		hist_cumulative(h, r, m, out);
		for (size_t k = 0; k < m; k++) {
			CHECK(out[k] == ref_cumulative(v, N, r[k], true), "round %d le=%" PRId64 ": got %" PRIu64 " want %" PRIu64,
			      round, r[k], out[k], ref_cumulative(v, N, r[k], true));
			int64_t lo, hi;
			ref_bucket(r[k] < 0 ? 0 : r[k], &lo, &hi);
			if (r[k] >= 0 && (r[k] < 2048 || r[k] == hi))
				CHECK(out[k] == ref_count_le(v, N, r[k]), "le=%" PRId64 " is a bucket top: exact", r[k]);
		}
	}

	/* After hist_sub the extremes are bounds only: the answer still
	 * follows the buckets (the removed extremes' buckets now hold none). */
	for (size_t i = 0; i < N; i += 2)
		hist_record(part, v[i]);
	hist_sub(h, part);
	int64_t *rest = malloc(N / 2 * sizeof *rest);
	assert_non_null(rest);
	for (size_t i = 1, j = 0; i < N; i += 2)
		rest[j++] = v[i];
	hist_cumulative(h, le, nle, out);
	for (size_t k = 0; k < nle; k++) {
		int64_t lo, hi;
		ref_bucket(le[k], &lo, &hi);
		CHECK(out[k] <= ref_count_le(rest, N / 2, le[k]) && out[k] >= ref_count_le(rest, N / 2, lo - 1),
		      "after sub le=%" PRId64 ": got %" PRIu64, le[k], out[k]);
	}
	/* An empty histogram counts nothing anywhere. */
	hist_reset(h);
	hist_cumulative(h, le, nle, out);
	for (size_t k = 0; k < nle; k++)
		assert_int_equal(out[k], 0);
	free(rest);
	free(v);
	hist_free(part);
	hist_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_distributions),
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_single_and_extremes),
		cmocka_unit_test(test_record_n),
		cmocka_unit_test(test_record_many),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_touch_is_empty),
		cmocka_unit_test(test_reset_clears_everything),
		cmocka_unit_test(test_sub),
		cmocka_unit_test(test_sub_extremes),
		cmocka_unit_test(test_rank_rounding),
		cmocka_unit_test(test_moments),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_decode_handmade),
		cmocka_unit_test(test_decode_mutations),
		cmocka_unit_test(test_cumulative),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
