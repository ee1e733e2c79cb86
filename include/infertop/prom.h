#ifndef INFERTOP_PROM_H
#define INFERTOP_PROM_H

/* Prometheus text format (0.0.4) and OpenMetrics 1.0 text parser.
 *
 * Pure: no I/O, no allocation. Every pointer handed out points into the
 * caller's text (or, for labels, into a scratch array that is only valid
 * during the callback), so a sample must be copied if it has to outlive it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum prom_type {
	PROM_UNTYPED,
	PROM_COUNTER,
	PROM_GAUGE,
	PROM_HISTOGRAM,
	PROM_SUMMARY,
	PROM_GAUGEHISTOGRAM,
	PROM_INFO,
	PROM_STATESET,
	PROM_UNKNOWN,
};

struct prom_label {
	const char *name;
	size_t name_len;
	const char *value;	/* raw: escapes still in, see prom_label_unescape() */
	size_t value_len;
};

struct prom_sample {
	const char *name;	/* sample name, e.g. vllm:e2e_request_latency_seconds_bucket */
	size_t name_len;
	const char *family;	/* name of the # TYPE in force when it matches this sample, else = name */
	size_t family_len;
	enum prom_type type;	/* from # TYPE, never guessed from the name */
	const struct prom_label *labels;
	size_t nlabels;
	double value;		/* NaN, +Inf, -Inf possible */
	bool has_timestamp;
	int64_t timestamp_ms;
	unsigned line;		/* 1-based */
};

/* Nonzero stops parsing; prom_parse() then returns that value. */
typedef int (*prom_sample_fn)(void *ud, const struct prom_sample *s);

struct prom_error {
	unsigned line;		/* 1-based line of the (first) bad line, 0 if none */
	char msg[128];		/* what is wrong, without the line number */
	unsigned nbad;		/* malformed lines seen: skipped ones in PROM_LENIENT mode */
};

#define PROM_MAX_LABELS 32	/* labels per sample; more is a malformed line */
#define PROM_MAX_VALUE_LEN 512	/* longest accepted number token */
#define PROM_HIST_MAX 64	/* bucket bounds per struct prom_hist, +Inf included */

enum prom_flags {
	/* Skip malformed lines (counted in err->nbad, the first one described
	 * in err->line/msg) instead of failing on the first one. */
	PROM_LENIENT = 1u << 0,
	/* The body is application/openmetrics-text: integer timestamps are
	 * seconds, not milliseconds, and a missing "# EOF" is an error. */
	PROM_OPENMETRICS = 1u << 1,
};

/* Parses the whole text (need not be NUL-terminated; NUL bytes are ordinary
 * bytes). Calls fn (may be NULL) for every sample line, in order.
 * Returns the number of samples; -1 on the first malformed line (strict mode)
 * with err filled; or the nonzero value fn returned to stop early.
 * In PROM_LENIENT mode malformed lines are skipped and never cause -1.
 * Text after "# EOF" other than blank lines is malformed. A timestamp written
 * with a fraction or exponent is taken as seconds (OpenMetrics style), an
 * integer one as milliseconds unless PROM_OPENMETRICS. err may be NULL. */
int prom_parse(const char *text, size_t len, unsigned flags, prom_sample_fn fn, void *ud,
	       struct prom_error *err);

/* Parses a sample value exactly as Prometheus does (Go float syntax without
 * hex floats or '_'; NaN, [+-]Inf, [+-]Infinity in any case). The whole token
 * must be consumed. Independent of the C locale. 0 ok, -1 not a number or
 * out of range. */
int prom_parse_float(const char *s, size_t len, double *out);

/* Resolves \\ \" \n. Writes at most cap bytes including a terminating NUL
 * (when cap > 0) and returns the full unescaped length, like snprintf. */
size_t prom_label_unescape(const char *raw, size_t raw_len, char *out, size_t cap);

/* NULL if the sample has no label of that name. */
const struct prom_label *prom_sample_label(const struct prom_sample *s, const char *name);

/* Compares the unescaped value with a C string. */
bool prom_label_value_eq(const struct prom_label *l, const char *value);

/* "counter", "gauge", ... "untyped". */
const char *prom_type_name(enum prom_type t);

/* Sums every series whose sample name equals `name` exactly (not a prefix)
 * and whose labels match all `matchers`: "k=v,k2=v2", values compared
 * unescaped and exactly; a value may be double-quoted to hold commas; "k="
 * matches an absent or empty label (as in PromQL); NULL or "" matches any.
 * Malformed lines elsewhere are skipped. NaN values make the sum NaN.
 * Returns the number of series matched (0 = metric absent, *out = 0),
 * or -1 if `name` is NULL or `matchers` is malformed. */
int prom_sum(const char *text, size_t len, const char *name, const char *matchers, double *out);

/* A classic histogram: le sorted ascending, cumulative counts, +Inf last. */
struct prom_hist {
	double le[PROM_HIST_MAX];
	double cum[PROM_HIST_MAX];
	int n;
	double sum, count;
};

/* Collects family_bucket / family_sum / family_count over every series that
 * matches `matchers` (prom_sum syntax), adding buckets of equal le (compared
 * as numbers, so "1" and "1.0" are one bucket), e.g. over several engines.
 * Series are assumed to share one set of bounds. A missing +Inf bucket is
 * taken from family_count. Returns 0, or -1 when the family is absent or
 * unusable (no buckets, more than PROM_HIST_MAX bounds, no +Inf and no
 * count, bad matchers); out then has n = 0. */
int prom_hist_collect(const char *text, size_t len, const char *family, const char *matchers,
		      struct prom_hist *out);

/* out = now - before, bucket by bucket. When the bounds differ or any count
 * went down (the server restarted), out = now. out may alias either input. */
void prom_hist_delta(const struct prom_hist *now, const struct prom_hist *before,
		     struct prom_hist *out);

/* PromQL histogram_quantile(): linear interpolation inside the bucket (the
 * first bucket starts at 0), NaN when empty or malformed, the highest finite
 * le when the rank falls in the +Inf bucket, -Inf for q < 0, +Inf for q > 1.
 * Non-monotonic counts are flattened to a running maximum first. */
double prom_hist_quantile(const struct prom_hist *h, double q);
/* The same, and the bounds of the bucket it was interpolated in: *lo, *hi
 * (hi = +Inf when the rank is in the overflow bucket; NaN when none). The
 * value is only known to lie in [lo, hi]; a display must say so when the
 * bucket is wide (server_format_ms). */
double prom_hist_quantile_bucket(const struct prom_hist *h, double q, double *lo, double *hi);

#endif
