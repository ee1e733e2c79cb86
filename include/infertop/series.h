#ifndef INFERTOP_SERIES_H
#define INFERTOP_SERIES_H

#include <stddef.h>
#include <stdint.h>

/* Fixed-size multi-resolution time series for the charts and snapshots:
 * 1 s points for the last hour, then coarser levels back to the start of
 * the run, so a 24 h (or longer) run fits in constant memory. The engine
 * pushes one sample per second; readers resample to the width they draw. */

enum series_id {
	SER_OUT_TOK_S,   /* output tokens per second (last second) */
	SER_REQ_S,       /* completed requests per second */
	SER_TTFT_P99,    /* ms, sliding window */
	SER_ITL_P99,     /* ms, sliding window */
	SER_IN_FLIGHT,
	SER_TARGET,      /* concurrency target, or rate in open loop */
	SER_ERRORS,      /* failed requests per second */
	SER_WAITING,     /* server queue depth */
	SER_RUNNING,     /* server running batch */
	SER_KV,          /* server KV usage 0..1 */
	SER_TTFT_P50,    /* ms, sliding window */
	SER_ITL_P50,     /* ms, sliding window */
	SER_GPU_POWER,   /* W, all GPUs of the exporter */
	SER_CACHE_HIT,   /* prefix-cache hit rate 0..1, sliding window */
	SER_N
};

/* The columns of a server replica's series (a sub-series of the run's,
 * see series_sub()). */
enum series_replica_col {
	SER_REP_RUNNING,     /* its running batch */
	SER_REP_WAITING,     /* its queue depth */
	SER_REP_KV,          /* its KV usage 0..1 */
	SER_REP_GEN_TOK_S,   /* tokens it generated per second, between its scrapes */
	SER_REP_N
};

/* Most columns a series can have, and sub-series one can carry (one a
 * server replica: SERVER_MAX_REPLICAS). */
#define SERIES_COLS_MAX 32
#define SERIES_SUBS_MAX 16

struct series;

/* The run's series: SER_N columns, with markers. */
struct series *series_new(void);
/* A series of ncols columns (1..SERIES_COLS_MAX), without markers; NULL
 * on out of memory or a bad ncols. */
struct series *series_new_cols(int ncols);
/* Frees s and its sub-series. */
void series_free(struct series *s);
int series_cols(const struct series *s);
/* One sample; NaN for an unknown value (drawn as a gap). */
void series_push(struct series *s, int64_t t_ns, const double v[SER_N]);
/* The same for a series of any width: v holds series_cols(s) values. */
void series_push_cols(struct series *s, int64_t t_ns, const double *v);
/* A load change or stage boundary, drawn as a marker on every chart. */
void series_mark(struct series *s, int64_t t_ns, const char *label);
/* Resamples `id` over the last span_ns (0 = the whole run) into n points,
 * oldest first (NaN where no data). Returns points written; *t0 gets the
 * time of out[0]. */
size_t series_read(const struct series *s, enum series_id id, int64_t span_ns, double *out, size_t n,
		   int64_t *t0);
/* The same for column `col` of a series of any width. */
size_t series_read_col(const struct series *s, int col, int64_t span_ns, double *out, size_t n, int64_t *t0);
const char *series_name(enum series_id id);
const char *series_replica_name(enum series_replica_col col);

/* Sub-series i (0..SERIES_SUBS_MAX) of s, of ncols columns: made on the
 * first call (a replica's when it first appears), owned and freed by s.
 * NULL on out of memory, a bad i, or one made with other columns. */
struct series *series_sub(struct series *s, int i, int ncols);
/* Sub-series i, NULL when never made. */
const struct series *series_sub_get(const struct series *s, int i);

/* Times covered: *first_ns = start of the oldest slot still held, *last_ns =
 * end of the newest. Returns -1 (both 0) before the first push. */
int series_extent(const struct series *s, int64_t *first_ns, int64_t *last_ns);

#define SERIES_LABEL_MAX 24
struct series_marker {
	int64_t t_ns;
	char label[SERIES_LABEL_MAX];
};
/* Markers with from_ns <= t < to_ns, oldest first, at most n (the newest n
 * when more match). Returns the number written. */
size_t series_marks(const struct series *s, int64_t from_ns, int64_t to_ns, struct series_marker *out,
		    size_t n);
/* Bytes held by one series: fixed at series_new(), whatever the run length. */
size_t series_memory(void);
/* The same for a series_new_cols(ncols) (no markers). */
size_t series_memory_cols(int ncols);
/* Bytes s holds now, its sub-series included. */
size_t series_memory_of(const struct series *s);

#endif
