#ifndef INFERTOP_HIST_H
#define INFERTOP_HIST_H

/*
 * Log-linear (HdrHistogram-style) latency histogram in microseconds.
 *
 * Why this shape: every latency metric of a run (TTFB, TTFT, ITL, TPOT,
 * E2E, queue time) is recorded per token or per request for hours, so a
 * histogram must cost O(1) per sample, use fixed memory, merge exactly
 * (whole run = sum of slices, window = slices added minus the expired one)
 * and still give percentiles with a bounded relative error.
 *
 * Layout (HIST_SUB_BITS = 11, HIST_TOP_BITS = 32)
 *   A recorded value v is first clamped to [0, HIST_TOP_US]:
 *     v' = min(max(v, 0), 2^32 - 1)
 *   then
 *     shift = max(0, floor(log2(v')) - 10)        (0 for v' < 2048)
 *     index = shift * 1024 + (v' >> shift)
 *   Bucket `index` holds the values [lo, lo + 2^shift - 1] with
 *     shift = (index < 2048) ? 0 : index / 1024 - 1
 *     lo    = (index - shift * 1024) << shift
 *   so values 0..2047 each have their own bucket, and every power-of-two
 *   range above is split into 1024 equal buckets. HIST_BUCKETS = 23552
 *   buckets (indices 0..23551) cover 0..4294967295 us (about 71.6 min).
 *   Counts are uint64_t; one histogram is hist_memory() bytes (~184 KiB),
 *   allocated once, never grown.
 *
 * Extremes, sum, mean
 *   min, max, sum (uint64_t, exact modulo 2^64: 10^9 samples of one hour
 *   are 3.6e18, well inside) and the sum of squares (double) are tracked
 *   per record and merge exactly in hist_add(). hist_sub() keeps counts
 *   and sum exact; when it may have removed the sample at min (max), the
 *   stored min (max) becomes a lower (upper) bound lying in the lowest
 *   (highest) non-empty bucket, marked inexact, and is reported like a
 *   percentile below. Values below 2048 stay exact even then. The double
 *   sum of squares is not exact across hist_sub(): after huge values
 *   left a window its absolute error is about 2^-53 of the largest sum
 *   it held (e.g. 2000 us^2 after a one-hour sample), so stddev stays
 *   meaningful for any realistic window.
 *
 * Error bound
 *   A percentile reports the midpoint, rounded down, of the value range of
 *   the bucket holding the nearest-rank sample, narrowed to [min, max]; an
 *   exact min or max is reported as is for p0 and p100. For samples
 *   <= HIST_TOP_US the relative error is < 2^-11 (0.049%), and values
 *   below 2048 us are exact. Samples above HIST_TOP_US share the top
 *   bucket: their percentiles are only known to lie in
 *   [4292870144, max], but min, max and sum keep the exact values.
 *
 * Text encoding, version 1 (hist_encode / hist_decode)
 *   ASCII, safe to embed in JSON strings, URLs and file names:
 *     "h1:" COUNT "," MIN "," MAX "," SUM "," SUMSQ ":" PAYLOAD
 *   COUNT   samples, decimal, 0..2^64-1
 *   MIN     the exact minimum as a decimal, or "~" and a decimal lower
 *           bound of it from the same bucket (see hist_sub); 0..2^63-1
 *   MAX     likewise: the exact maximum, or "~" and an upper bound.
 *           An empty histogram has "0" for both.
 *   SUM     sum of recorded values modulo 2^64, decimal
 *     Decimals are plain digits: no sign, no spaces, no leading zeros
 *     ("0" is the only number starting with 0).
 *   SUMSQ   the IEEE-754 binary64 bit pattern of the sum of squares as
 *           exactly 16 lowercase hex digits, most significant first;
 *           finite, sign bit clear.
 *   PAYLOAD base64url (RFC 4648 section 5: A-Z a-z 0-9 '-' '_'), no
 *           padding, of a byte string that is a sequence of pairs of
 *           unsigned LEB128 varints (7 bits per byte, least significant
 *           group first, high bit set on every byte but the last):
 *             GAP COUNT
 *           one pair per non-empty bucket in increasing index order;
 *           the bucket index is previous_index + 1 + GAP, with
 *           previous_index = -1 before the first pair. COUNT >= 1.
 *   The decoder accepts only the canonical form, which is exactly what
 *   hist_encode() writes, so decode(s) succeeding implies
 *   encode(decode(s)) == s. It rejects: another prefix, bucket indices
 *   >= HIST_BUCKETS, zero counts, counts not adding up to COUNT (or
 *   overflowing), varints longer than needed or above 2^64-1, base64 of
 *   length 1 mod 4 or with non-zero unused bits, MIN > MAX, MIN (MAX) not
 *   falling in the lowest (highest) non-empty bucket, an empty histogram
 *   whose MIN, MAX, SUM or SUMSQ is not zero or has a "~", and any
 *   trailing byte.
 *   Example: one sample of 1500 us is "h1:1,1500,1500,1500,41412a8800000000:3AsB"
 *   (bucket 1500: GAP 1500 = dc 0b, COUNT 1 = 01).
 *   Bucket indices only mean something with this layout; a different
 *   layout gets a new version prefix.
 *
 * Not thread-safe: one writer, readers synchronised by the caller.
 */

#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS 11
#define HIST_TOP_BITS 32
/* Largest value with its own bucket; larger values share the top bucket. */
#define HIST_TOP_US ((INT64_C(1) << HIST_TOP_BITS) - 1)
#define HIST_BUCKETS ((HIST_TOP_BITS - HIST_SUB_BITS + 2) << (HIST_SUB_BITS - 1))

struct hist;

/* Empty histogram; NULL on OOM. */
struct hist *hist_new(void);
void hist_free(struct hist *h);
void hist_reset(struct hist *h);
/* Writes every bucket (they stay empty): hist_new's pages come lazily, at
 * the first sample of each; a histogram that must not fault later, at a
 * moment that matters, is touched once up front. */
void hist_touch(struct hist *h);

/* Negative values are recorded as 0. O(1), no allocation. */
void hist_record(struct hist *h, int64_t us);
void hist_record_n(struct hist *h, int64_t us, uint64_t n);
/* hist_record() of each of us[0..n) into each of hs[0..nh), the bucket
 * found once per value: a stream's gaps go to three histograms at once. */
void hist_record_many(struct hist *const *hs, size_t nh, const uint32_t *us, size_t n);

/* dst += src, exact: as if dst had recorded every sample of src. */
void hist_add(struct hist *dst, const struct hist *src);
/* dst -= src, where src's samples are a subset of dst's (a sliding window
 * subtracting its expired slice). Counts and sum stay exact; min and max
 * within the error bound. Cost: the buckets between src's extremes, plus
 * a scan when an extreme's bucket empties. A src that is not a subset
 * leaves dst consistent but meaningless (counts clamp at zero). */
void hist_sub(struct hist *dst, const struct hist *src);
void hist_copy(struct hist *dst, const struct hist *src);

uint64_t hist_count(const struct hist *h);
/* 0 when empty; within the error bound once hist_sub() removed it. */
int64_t hist_min(const struct hist *h);
int64_t hist_max(const struct hist *h);
/* Sum of the recorded values (after negatives became 0), modulo 2^64. */
uint64_t hist_sum(const struct hist *h);
/* 0 when empty. */
double hist_mean(const struct hist *h);
/* Population standard deviation; 0 when empty. */
double hist_stddev(const struct hist *h);

/* Nearest-rank percentile: the sample of rank ceil(p / 100 * count) (rank 1
 * for p <= 0 or NaN, count for p >= 100) of the sorted samples, within the error
 * bound above. A rank within float rounding of an integer is taken as that
 * integer, so p = 99.9 with 1000 samples is rank 999. 0 when empty. */
int64_t hist_percentile(const struct hist *h, double p);

/* Cumulative counts at n bounds (a Prometheus histogram's `le` buckets):
 * out[i] = the samples whose bucket lies wholly at or below le_us[i].
 * That is exactly the number of samples <= le_us[i] when le_us[i] is the
 * top of its bucket (every value below 2048 is), when it lies at or
 * above an exact max, or below an exact min. Otherwise the samples that
 * share le_us[i]'s bucket and are <= le_us[i] (values within a relative
 * 2^-10 below it) are left out: the count never includes a sample above
 * the bound, and is short by at most that one bucket's samples. One pass
 * over the buckets when the bounds ascend. */
void hist_cumulative(const struct hist *h, const int64_t *le_us, size_t n, uint64_t *out);

/* The values [*lo, *hi] that share us's bucket (after clamping to
 * [0, HIST_TOP_US]): the resolution at which this histogram sees us. */
void hist_bucket_bounds(int64_t us, int64_t *lo, int64_t *hi);

/* Bytes one histogram occupies. */
size_t hist_memory(void);

/* Version 1 text encoding (see above); malloc'd, NULL on OOM. */
char *hist_encode(const struct hist *h);
/* Resets h, then loads s. 0 on success; -1 for any input that is not a
 * canonical version 1 encoding, leaving h empty. Reads s only up to its
 * terminating NUL. */
int hist_decode(struct hist *h, const char *s);

#endif
