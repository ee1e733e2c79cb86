#include "config.h"

#include "infertop/hist.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HALF_BITS (HIST_SUB_BITS - 1)
#define HALF_COUNT (1u << HALF_BITS)

_Static_assert(HIST_BUCKETS == 23552, "version 1 encoding assumes this layout");

struct hist {
	uint64_t count;
	uint64_t sum; /* unsigned so that wrap-around (and hist_sub) is defined */
	double sumsq;
	/* Empty: min = INT64_MAX and max = 0, so record needs no first-sample
	 * branch. Non-empty: min <= every sample <= max, and min (max) lies in
	 * the lowest (highest) non-zero bucket, which bounds scans and resets.
	 * They are the exact extremes unless hist_sub removed one, after which
	 * they are bounds within the right bucket and the flag is cleared. */
	int64_t min;
	int64_t max;
	bool min_exact;
	bool max_exact;
	uint64_t counts[HIST_BUCKETS];
};

/* v >= 0. OR-ing in HALF_COUNT makes the leading-bit position at least
 * HALF_BITS, so values below 2 * HALF_COUNT get shift 0 without a branch. */
static inline uint32_t bucket_of(int64_t v)
{
	uint64_t u = v > HIST_TOP_US ? (uint64_t)HIST_TOP_US : (uint64_t)v;
	unsigned shift = (unsigned)(63 - __builtin_clzll(u | HALF_COUNT)) - HALF_BITS;
	return (uint32_t)(((uint64_t)shift << HALF_BITS) + (u >> shift));
}

static inline unsigned bucket_shift(uint32_t i)
{
	return i < 2 * HALF_COUNT ? 0 : (i >> HALF_BITS) - 1;
}

static inline int64_t bucket_lo(uint32_t i)
{
	unsigned shift = bucket_shift(i);
	return (int64_t)((uint64_t)(i - (shift << HALF_BITS)) << shift);
}

static inline int64_t bucket_hi(uint32_t i)
{
	return bucket_lo(i) + ((INT64_C(1) << bucket_shift(i)) - 1);
}

/* The samples in bucket i lie in its range cut down to [min, max]; the
 * midpoint of that is the best single guess. Rounding the half-width down
 * keeps the larger absolute error on the larger values, minimising the
 * relative error. Only clamped samples make b < a (top bucket, min above
 * it): min is then the one value known. */
static int64_t estimate(const struct hist *h, uint32_t i)
{
	int64_t a = bucket_lo(i), b = bucket_hi(i);
	if (a < h->min)
		a = h->min;
	if (b > h->max)
		b = h->max;
	if (b < a)
		return a;
	return a + (b - a) / 2;
}

static void set_empty(struct hist *h)
{
	h->count = 0;
	h->sum = 0;
	h->sumsq = 0;
	h->min = INT64_MAX;
	h->max = 0;
	h->min_exact = true;
	h->max_exact = true;
}

static void clear_range(struct hist *h, uint32_t lo, uint32_t hi)
{
	if (lo <= hi)
		memset(&h->counts[lo], 0, (size_t)(hi - lo + 1) * sizeof h->counts[0]);
}

struct hist *hist_new(void)
{
	/* calloc: a block this size comes from fresh zero pages, so the
	 * counts cost nothing until touched. */
	struct hist *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	set_empty(h);
	return h;
}

void hist_free(struct hist *h)
{
	free(h);
}

void hist_touch(struct hist *h)
{
	memset(h->counts, 0, sizeof h->counts);
	set_empty(h);
}

void hist_reset(struct hist *h)
{
	if (h->count)
		clear_range(h, bucket_of(h->min), bucket_of(h->max));
	set_empty(h);
}

/* One value v >= 0 in bucket b, sq = v * v. */
static inline void record_at(struct hist *h, uint32_t b, int64_t v, double sq)
{
	h->counts[b]++;
	h->count++;
	h->sum += (uint64_t)v;
	h->sumsq += sq;
	if (v < h->min) {
		h->min = v;
		h->min_exact = true;
	}
	if (v > h->max) {
		h->max = v;
		h->max_exact = true;
	}
}

void hist_record(struct hist *h, int64_t us)
{
	if (us < 0)
		us = 0;
	record_at(h, bucket_of(us), us, (double)us * (double)us);
}

void hist_record_many(struct hist *const *hs, size_t nh, const uint32_t *us, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t v = us[i];
		uint32_t b = bucket_of(v);
		double sq = (double)v * (double)v;
		for (size_t k = 0; k < nh; k++)
			record_at(hs[k], b, v, sq);
	}
}

void hist_record_n(struct hist *h, int64_t us, uint64_t n)
{
	if (n == 0)
		return;
	if (us < 0)
		us = 0;
	h->counts[bucket_of(us)] += n;
	h->count += n;
	h->sum += (uint64_t)us * n;
	h->sumsq += (double)us * (double)us * (double)n;
	if (us < h->min) {
		h->min = us;
		h->min_exact = true;
	}
	if (us > h->max) {
		h->max = us;
		h->max_exact = true;
	}
}

void hist_add(struct hist *dst, const struct hist *src)
{
	if (!src->count)
		return;
	bool was_empty = dst->count == 0;
	uint32_t lo = bucket_of(src->min), hi = bucket_of(src->max);
	for (uint32_t i = lo; i <= hi; i++)
		dst->counts[i] += src->counts[i];
	dst->count += src->count;
	dst->sum += src->sum;
	dst->sumsq += src->sumsq;
	if (was_empty) {
		dst->min = src->min;
		dst->max = src->max;
		dst->min_exact = src->min_exact;
		dst->max_exact = src->max_exact;
		return;
	}
	/* On a tie one exact side is enough: the other side's bound can't be
	 * below (above) its own samples. */
	if (src->min < dst->min || (src->min == dst->min && src->min_exact)) {
		dst->min = src->min;
		dst->min_exact = src->min_exact;
	}
	if (src->max > dst->max || (src->max == dst->max && src->max_exact)) {
		dst->max = src->max;
		dst->max_exact = src->max_exact;
	}
}

void hist_sub(struct hist *dst, const struct hist *src)
{
	if (!src->count || !dst->count)
		return;
	if (dst == src) {
		hist_reset(dst);
		return;
	}
	uint32_t old_lo = bucket_of(dst->min), old_hi = bucket_of(dst->max);
	uint32_t lo = bucket_of(src->min), hi = bucket_of(src->max);
	for (uint32_t i = lo; i <= hi; i++) {
		uint64_t c = src->counts[i];
		dst->counts[i] = dst->counts[i] > c ? dst->counts[i] - c : 0;
	}
	if (dst->count <= src->count) {
		clear_range(dst, old_lo, old_hi);
		set_empty(dst);
		return;
	}
	dst->count -= src->count;
	dst->sum -= src->sum;
	dst->sumsq -= src->sumsq;
	/* Rounding can leave a hair below zero; a negative sum of squares
	 * would turn into a NaN stddev. */
	if (!(dst->sumsq > 0))
		dst->sumsq = 0;

	/* min and max stay valid bounds as samples leave; only an emptied
	 * extreme bucket needs a scan, from the old extreme to the first
	 * survivor. src reaching the extreme may have removed it, so it is then
	 * only a bound, unless its bucket holds a single value. */
	uint32_t i = old_lo, j = old_hi;
	while (i <= old_hi && !dst->counts[i])
		i++;
	if (i > old_hi) {
		/* src was not a subset: the counts ran out before count did. */
		set_empty(dst);
		return;
	}
	while (j > i && !dst->counts[j])
		j--;
	if (i != old_lo || src->min <= dst->min) {
		if (i != old_lo)
			dst->min = bucket_lo(i);
		dst->min_exact = bucket_lo(i) == bucket_hi(i);
	}
	if (j != old_hi || src->max >= dst->max) {
		if (j != old_hi)
			dst->max = bucket_hi(j);
		dst->max_exact = bucket_lo(j) == bucket_hi(j);
	}
}

void hist_copy(struct hist *dst, const struct hist *src)
{
	if (dst == src)
		return;
	hist_reset(dst);
	if (!src->count)
		return;
	uint32_t lo = bucket_of(src->min), hi = bucket_of(src->max);
	memcpy(&dst->counts[lo], &src->counts[lo], (size_t)(hi - lo + 1) * sizeof src->counts[0]);
	dst->count = src->count;
	dst->sum = src->sum;
	dst->sumsq = src->sumsq;
	dst->min = src->min;
	dst->max = src->max;
	dst->min_exact = src->min_exact;
	dst->max_exact = src->max_exact;
}

uint64_t hist_count(const struct hist *h)
{
	return h->count;
}

int64_t hist_min(const struct hist *h)
{
	if (!h->count)
		return 0;
	return h->min_exact ? h->min : estimate(h, bucket_of(h->min));
}

int64_t hist_max(const struct hist *h)
{
	if (!h->count)
		return 0;
	return h->max_exact ? h->max : estimate(h, bucket_of(h->max));
}

uint64_t hist_sum(const struct hist *h)
{
	return h->sum;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

double hist_stddev(const struct hist *h)
{
	if (!h->count)
		return 0.0;
	double n = (double)h->count;
	double mean = (double)h->sum / n;
	double var = h->sumsq / n - mean * mean;
	return var > 0 ? sqrt(var) : 0.0;
}

/* p * n is exact for integral p (n < 2^53), so ranks of whole percentiles
 * come out exact; for fractional p a result a few ulps above an integer is
 * float noise from p not being representable, not a real fraction. */
static uint64_t rank_of(double p, uint64_t n)
{
	if (!(p > 0))
		return 1;
	if (p >= 100)
		return n;
	double x = p * (double)n / 100.0;
	if (!(x < (double)n))
		return n;
	double k = floor(x);
	uint64_t r = (uint64_t)k;
	if (x - k > x * 1e-12)
		r++;
	return r < 1 ? 1 : r;
}

int64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t n = h->count;
	if (!n)
		return 0;
	uint64_t r = rank_of(p, n);
	if (r <= 1)
		return hist_min(h);
	if (r >= n)
		return hist_max(h);

	uint32_t lo = bucket_of(h->min), hi = bucket_of(h->max), i;
	uint64_t cum = 0;
	/* Walk from whichever end is nearer in rank: tail percentiles, the
	 * common query, touch only the few buckets above them. */
	if (r <= n / 2) {
		for (i = lo; i < hi; i++) {
			cum += h->counts[i];
			if (cum >= r)
				break;
		}
	} else {
		uint64_t want = n - r + 1;
		for (i = hi; i > lo; i--) {
			cum += h->counts[i];
			if (cum >= want)
				break;
		}
	}
	return estimate(h, i);
}

void hist_cumulative(const struct hist *h, const int64_t *le_us, size_t n, uint64_t *out)
{
	uint32_t first = bucket_of(h->min < INT64_MAX ? h->min : 0);
	uint32_t next = first; /* buckets [first, next) are in cum */
	uint64_t cum = 0;
	for (size_t k = 0; k < n; k++) {
		int64_t le = le_us[k];
		if (!h->count || le < 0 || (h->min_exact && le < h->min)) {
			out[k] = 0;
			continue;
		}
		if (h->max_exact && le >= h->max) {
			out[k] = h->count;
			continue;
		}
		/* The last bucket wholly at or below le (le >= 0 here, and bucket
		 * 0 holds only 0, so `top` below never wraps when it matters). */
		uint32_t b = bucket_of(le);
		int64_t top = bucket_hi(b) == le ? (int64_t)b : (int64_t)b - 1;
		if (top < (int64_t)first) {
			out[k] = 0;
			continue;
		}
		if ((uint32_t)top + 1 < next) { /* bounds out of order: start over */
			next = first;
			cum = 0;
		}
		for (; next <= (uint32_t)top; next++)
			cum += h->counts[next];
		out[k] = cum;
	}
}

void hist_bucket_bounds(int64_t us, int64_t *lo, int64_t *hi)
{
	uint32_t i = bucket_of(us < 0 ? 0 : us);
	*lo = bucket_lo(i);
	*hi = bucket_hi(i);
}

size_t hist_memory(void)
{
	return sizeof(struct hist);
}

/* ---- encoding ---- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

struct b64_writer {
	char *out;
	uint32_t acc;
	unsigned bits;
};

static void b64_put(struct b64_writer *w, uint8_t byte)
{
	w->acc = (w->acc << 8) | byte;
	w->bits += 8;
	while (w->bits >= 6) {
		w->bits -= 6;
		*w->out++ = b64_alphabet[(w->acc >> w->bits) & 63];
	}
	w->acc &= (1u << w->bits) - 1;
}

static void b64_put_varint(struct b64_writer *w, uint64_t v)
{
	while (v >= 0x80) {
		b64_put(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	b64_put(w, (uint8_t)v);
}

static void b64_finish(struct b64_writer *w)
{
	if (w->bits)
		*w->out++ = b64_alphabet[(w->acc << (6 - w->bits)) & 63];
	*w->out = '\0';
}

char *hist_encode(const struct hist *h)
{
	uint64_t sqbits;
	memcpy(&sqbits, &h->sumsq, sizeof sqbits);
	char head[128];
	bool empty = h->count == 0;
	int hlen = snprintf(head, sizeof head,
			    "h1:%" PRIu64 ",%s%" PRId64 ",%s%" PRId64 ",%" PRIu64 ",%016" PRIx64 ":",
			    h->count, h->min_exact ? "" : "~", empty ? 0 : h->min,
			    h->max_exact ? "" : "~", empty ? 0 : h->max, h->sum, sqbits);
	if (hlen < 0 || (size_t)hlen >= sizeof head)
		return NULL;

	uint32_t lo = 0, hi = 0;
	size_t bytes = 0;
	if (h->count) {
		lo = bucket_of(h->min);
		hi = bucket_of(h->max);
		int64_t prev = -1;
		for (uint32_t i = lo; i <= hi; i++) {
			if (!h->counts[i])
				continue;
			bytes += varint_len((uint64_t)((int64_t)i - prev - 1)) + varint_len(h->counts[i]);
			prev = i;
		}
	}
	size_t chars = (bytes * 8 + 5) / 6;
	char *s = malloc((size_t)hlen + chars + 1);
	if (!s)
		return NULL;
	memcpy(s, head, (size_t)hlen);
	struct b64_writer w = { .out = s + hlen };
	if (h->count) {
		int64_t prev = -1;
		for (uint32_t i = lo; i <= hi; i++) {
			if (!h->counts[i])
				continue;
			b64_put_varint(&w, (uint64_t)((int64_t)i - prev - 1));
			b64_put_varint(&w, h->counts[i]);
			prev = i;
		}
	}
	b64_finish(&w);
	return s;
}

/* ---- decoding: every helper returns false on malformed input ---- */

static bool parse_dec(const char **pp, uint64_t *out)
{
	const char *p = *pp;
	if (*p < '0' || *p > '9')
		return false;
	if (*p == '0' && p[1] >= '0' && p[1] <= '9')
		return false;
	uint64_t v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*pp = p;
	*out = v;
	return true;
}

static bool expect(const char **pp, char c)
{
	if (**pp != c)
		return false;
	(*pp)++;
	return true;
}

/* An extreme: exact, or "~" and a bound within its bucket. */
static bool parse_bound(const char **pp, uint64_t *out, bool *exact)
{
	*exact = !expect(pp, '~');
	return parse_dec(pp, out) && *out <= INT64_MAX;
}

static bool parse_hex16(const char **pp, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	for (int k = 0; k < 16; k++, p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else
			return false; /* also stops at the NUL */
		v = (v << 4) | d;
	}
	*pp = p;
	*out = v;
	return true;
}

struct b64_reader {
	const char *p, *end;
	uint32_t acc;
	unsigned bits;
};

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

static bool b64_more(const struct b64_reader *r)
{
	return r->bits + 6 * (size_t)(r->end - r->p) >= 8;
}

static bool b64_get(struct b64_reader *r, uint8_t *byte)
{
	while (r->bits < 8) {
		if (r->p == r->end)
			return false;
		int v = b64_value(*r->p++);
		if (v < 0)
			return false;
		r->acc = (r->acc << 6) | (uint32_t)v;
		r->bits += 6;
	}
	r->bits -= 8;
	*byte = (uint8_t)(r->acc >> r->bits);
	r->acc &= (1u << r->bits) - 1;
	return true;
}

/* After the last byte: leftover characters must be valid, make no byte,
 * and carry only zero bits (so each byte string has one spelling). */
static bool b64_end_ok(struct b64_reader *r)
{
	while (r->p < r->end) {
		int v = b64_value(*r->p++);
		if (v < 0)
			return false;
		r->acc = (r->acc << 6) | (uint32_t)v;
		r->bits += 6;
	}
	return r->bits < 6 && r->acc == 0;
}

static bool read_varint(struct b64_reader *r, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t b;
		if (shift > 63 || !b64_get(r, &b))
			return false;
		uint64_t part = b & 0x7f;
		if (shift == 63 && part > 1)
			return false;
		if (shift > 0 && b == 0)
			return false; /* overlong */
		v |= part << shift;
		if (!(b & 0x80))
			break;
	}
	*out = v;
	return true;
}

int hist_decode(struct hist *h, const char *s)
{
	hist_reset(h);
	if (!s)
		return -1;

	const char *p = s;
	uint64_t count, min, max, sum, sqbits;
	bool min_exact, max_exact;
	if (!expect(&p, 'h') || !expect(&p, '1') || !expect(&p, ':') ||
	    !parse_dec(&p, &count) || !expect(&p, ',') ||
	    !parse_bound(&p, &min, &min_exact) || !expect(&p, ',') ||
	    !parse_bound(&p, &max, &max_exact) || !expect(&p, ',') ||
	    !parse_dec(&p, &sum) || !expect(&p, ',') ||
	    !parse_hex16(&p, &sqbits) || !expect(&p, ':'))
		return -1;
	/* Sign bit clear, exponent not all ones: finite and >= +0. */
	if ((sqbits >> 63) || ((sqbits >> 52) & 0x7ff) == 0x7ff)
		return -1;

	struct b64_reader r = { .p = p, .end = p + strlen(p) };
	uint64_t total = 0;
	int64_t prev = -1;
	uint32_t first = 0;
	bool any = false;
	while (b64_more(&r)) {
		uint64_t gap, c;
		if (!read_varint(&r, &gap) || !read_varint(&r, &c))
			goto bad;
		if (c == 0 || gap >= HIST_BUCKETS || (uint64_t)(prev + 1) + gap >= HIST_BUCKETS)
			goto bad;
		uint32_t idx = (uint32_t)((uint64_t)(prev + 1) + gap);
		if (__builtin_add_overflow(total, c, &total))
			goto bad;
		/* Written before full validation; `bad` clears [first, prev]. */
		h->counts[idx] = c;
		if (!any)
			first = idx;
		any = true;
		prev = idx;
	}
	if (!b64_end_ok(&r) || total != count)
		goto bad;
	if (count == 0) {
		if (min || max || sum || sqbits || !min_exact || !max_exact)
			goto bad;
		return 0;
	}
	if (min > max || bucket_of((int64_t)min) != first || bucket_of((int64_t)max) != (uint32_t)prev)
		goto bad;
	h->count = count;
	h->min = (int64_t)min;
	h->max = (int64_t)max;
	h->min_exact = min_exact;
	h->max_exact = max_exact;
	h->sum = sum;
	memcpy(&h->sumsq, &sqbits, sizeof h->sumsq);
	return 0;
bad:
	if (any)
		clear_range(h, first, (uint32_t)prev);
	set_empty(h);
	return -1;
}
