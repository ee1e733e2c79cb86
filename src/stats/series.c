#include "config.h"

#include "infertop/series.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"

/* Three rings of the same points at falling resolution. Level 0 takes the
 * pushes; each coarser level averages them into its own slot, so the
 * whole run stays visible after the finer rings wrapped. Points are floats:
 * charts need three digits, and it halves the fixed memory. */
#define LEVELS 3
#define MARKS 1024

_Static_assert(SER_N <= SERIES_COLS_MAX, "the run's series fits a row");
_Static_assert(SER_REP_N <= SERIES_COLS_MAX, "a replica's series fits a row");

static const struct {
	int64_t res_ns;
	int64_t cap;
} level_shape[LEVELS] = {
	{1 * CLOCK_NS_PER_S, 3600},           /* 1 s for the last hour */
	{10 * CLOCK_NS_PER_S, 8640},          /* 10 s for the last 24 h */
	{60 * CLOCK_NS_PER_S, 20160},         /* 1 min for the last 14 days */
};

struct level {
	int64_t res, cap;
	float *v;              /* cap rows of ncols, ring indexed by slot % cap */
	int64_t first, next;   /* slots [first, next) are held */
	/* The slot still being averaged (coarse levels only). */
	bool acc_any;
	int64_t acc_slot;
	double acc_sum[SERIES_COLS_MAX];
	uint32_t acc_n[SERIES_COLS_MAX];
};

struct series {
	bool any;
	int ncols;
	int64_t t0;            /* time of the first push: slot 0 starts here */
	struct level lv[LEVELS];
	struct series_marker *marks;   /* MARKS of them; NULL: a series without */
	uint64_t nmarks;       /* ever added; the ring keeps the last MARKS */
	/* The server replicas' own series, made as each replica appears:
	 * a replica costs nothing until it exists. */
	struct series *sub[SERIES_SUBS_MAX];
};

static const char *const names[SER_N] = {
	[SER_OUT_TOK_S] = "output tok/s",
	[SER_REQ_S] = "req/s",
	[SER_TTFT_P99] = "TTFT p99 ms",
	[SER_ITL_P99] = "ITL p99 ms",
	[SER_IN_FLIGHT] = "in flight",
	[SER_TARGET] = "target",
	[SER_ERRORS] = "errors/s",
	[SER_WAITING] = "queue depth",
	[SER_RUNNING] = "running",
	[SER_KV] = "KV usage",
	[SER_TTFT_P50] = "TTFT p50 ms",
	[SER_ITL_P50] = "ITL p50 ms",
	[SER_GPU_POWER] = "GPU power W",
	[SER_CACHE_HIT] = "cache hit rate",
};

static const char *const replica_names[SER_REP_N] = {
	[SER_REP_RUNNING] = "running",
	[SER_REP_WAITING] = "queue depth",
	[SER_REP_KV] = "KV usage",
	[SER_REP_GEN_TOK_S] = "generated tok/s",
};

const char *series_name(enum series_id id)
{
	return (unsigned)id < SER_N ? names[id] : "?";
}

const char *series_replica_name(enum series_replica_col col)
{
	return (unsigned)col < SER_REP_N ? replica_names[col] : "?";
}

size_t series_memory_cols(int ncols)
{
	size_t n = sizeof(struct series);
	for (int k = 0; k < LEVELS; k++)
		n += (size_t)level_shape[k].cap * (size_t)ncols * sizeof(float);
	return n;
}

size_t series_memory(void)
{
	return series_memory_cols(SER_N) + MARKS * sizeof(struct series_marker);
}

size_t series_memory_of(const struct series *s)
{
	size_t n = series_memory_cols(s->ncols) + (s->marks ? MARKS * sizeof(struct series_marker) : 0);
	for (int i = 0; i < SERIES_SUBS_MAX; i++)
		if (s->sub[i])
			n += series_memory_of(s->sub[i]);
	return n;
}

int series_cols(const struct series *s)
{
	return s->ncols;
}

struct series *series_new_cols(int ncols)
{
	if (ncols < 1 || ncols > SERIES_COLS_MAX)
		return NULL;
	struct series *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->ncols = ncols;
	for (int k = 0; k < LEVELS; k++) {
		struct level *l = &s->lv[k];
		l->res = level_shape[k].res_ns;
		l->cap = level_shape[k].cap;
		l->v = malloc((size_t)l->cap * (size_t)ncols * sizeof *l->v);
		if (!l->v) {
			series_free(s);
			return NULL;
		}
	}
	return s;
}

struct series *series_new(void)
{
	struct series *s = series_new_cols(SER_N);
	if (s && !(s->marks = calloc(MARKS, sizeof *s->marks))) {
		series_free(s);
		return NULL;
	}
	return s;
}

void series_free(struct series *s)
{
	if (!s)
		return;
	for (int i = 0; i < SERIES_SUBS_MAX; i++)
		series_free(s->sub[i]);
	for (int k = 0; k < LEVELS; k++)
		free(s->lv[k].v);
	free(s->marks);
	free(s);
}

struct series *series_sub(struct series *s, int i, int ncols)
{
	if (i < 0 || i >= SERIES_SUBS_MAX)
		return NULL;
	if (!s->sub[i])
		s->sub[i] = series_new_cols(ncols);
	return s->sub[i] && s->sub[i]->ncols == ncols ? s->sub[i] : NULL;
}

const struct series *series_sub_get(const struct series *s, int i)
{
	return i >= 0 && i < SERIES_SUBS_MAX ? s->sub[i] : NULL;
}

static float *row(const struct level *l, int ncols, int64_t slot)
{
	return l->v + (size_t)(slot % l->cap) * (size_t)ncols;
}

static void put_row(struct level *l, int ncols, int64_t slot, const double *v)
{
	float *r = row(l, ncols, slot);
	for (int i = 0; i < ncols; i++)
		r[i] = (float)v[i];
}

static void commit(struct level *l, int ncols, int64_t slot, const double *v)
{
	if (slot < l->next) {
		if (slot >= l->first)
			put_row(l, ncols, slot, v);
		return;
	}
	/* A gap longer than the ring leaves nothing older worth keeping. */
	if (slot - l->next > l->cap) {
		l->next = slot - l->cap;
		l->first = l->next;
	}
	double gap[SERIES_COLS_MAX];
	for (int i = 0; i < ncols; i++)
		gap[i] = NAN;
	for (; l->next < slot; l->next++)
		put_row(l, ncols, l->next, gap);
	put_row(l, ncols, slot, v);
	l->next = slot + 1;
	if (l->next - l->first > l->cap)
		l->first = l->next - l->cap;
}

static void acc_flush(struct level *l, int ncols)
{
	if (!l->acc_any)
		return;
	double m[SERIES_COLS_MAX];
	for (int i = 0; i < ncols; i++)
		m[i] = l->acc_n[i] ? l->acc_sum[i] / l->acc_n[i] : NAN;
	commit(l, ncols, l->acc_slot, m);
	l->acc_any = false;
	memset(l->acc_sum, 0, sizeof l->acc_sum);
	memset(l->acc_n, 0, sizeof l->acc_n);
}

void series_push(struct series *s, int64_t t_ns, const double v[SER_N])
{
	series_push_cols(s, t_ns, v);
}

void series_push_cols(struct series *s, int64_t t_ns, const double *v)
{
	if (!s->any) {
		s->any = true;
		s->t0 = t_ns;
	}
	if (t_ns < s->t0)
		return;
	int64_t rel = t_ns - s->t0;
	commit(&s->lv[0], s->ncols, rel / s->lv[0].res, v);
	for (int k = 1; k < LEVELS; k++) {
		struct level *l = &s->lv[k];
		int64_t slot = rel / l->res;
		if (l->acc_any && slot < l->acc_slot)
			continue;
		if (l->acc_any && slot != l->acc_slot)
			acc_flush(l, s->ncols);
		l->acc_any = true;
		l->acc_slot = slot;
		for (int i = 0; i < s->ncols; i++) {
			if (isnan(v[i]))
				continue;
			l->acc_sum[i] += v[i];
			l->acc_n[i]++;
		}
	}
}

/* Oldest slot a level can answer for, and one past its newest. */
static bool level_range(const struct level *l, int64_t *lo, int64_t *hi)
{
	bool have = l->next > l->first;
	if (!have && !l->acc_any)
		return false;
	*lo = have ? l->first : l->acc_slot;
	*hi = have ? l->next : l->acc_slot + 1;
	if (l->acc_any && l->acc_slot + 1 > *hi)
		*hi = l->acc_slot + 1;
	return true;
}

static double cell(const struct level *l, int ncols, int64_t slot, int id)
{
	if (l->acc_any && slot == l->acc_slot)
		return l->acc_n[id] ? l->acc_sum[id] / l->acc_n[id] : NAN;
	if (slot >= l->first && slot < l->next)
		return row(l, ncols, slot)[id];
	return NAN;
}

int series_extent(const struct series *s, int64_t *first_ns, int64_t *last_ns)
{
	*first_ns = *last_ns = 0;
	if (!s->any)
		return -1;
	int64_t first = INT64_MAX;
	for (int k = 0; k < LEVELS; k++) {
		int64_t lo, hi;
		if (level_range(&s->lv[k], &lo, &hi) && lo * s->lv[k].res < first)
			first = lo * s->lv[k].res;
	}
	*first_ns = s->t0 + first;
	*last_ns = s->t0 + s->lv[0].next * s->lv[0].res;
	return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && a < 0) ? q - 1 : q;
}

size_t series_read(const struct series *s, enum series_id id, int64_t span_ns, double *out, size_t n,
		   int64_t *t0)
{
	return series_read_col(s, (int)id, span_ns, out, n, t0);
}

size_t series_read_col(const struct series *s, int id, int64_t span_ns, double *out, size_t n, int64_t *t0)
{
	int64_t first, end;
	if (id < 0 || id >= s->ncols || n == 0 || series_extent(s, &first, &end) != 0)
		return 0;
	int64_t start = span_ns > 0 ? end - span_ns : first;
	int64_t span = end - start;
	if (span <= 0)
		return 0;
	/* The finest level still holding the start of the span (or of the
	 * data, when the span reaches back before the run); the coarsest
	 * otherwise (older points are gone and read as gaps). */
	int64_t need = start > first ? start : first;
	const struct level *l = &s->lv[LEVELS - 1];
	for (int k = 0; k < LEVELS; k++) {
		int64_t lo, hi;
		if (level_range(&s->lv[k], &lo, &hi) && s->t0 + lo * s->lv[k].res <= need) {
			l = &s->lv[k];
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		int64_t ts = start + (int64_t)((double)span * (double)i / (double)n);
		int64_t te = start + (int64_t)((double)span * (double)(i + 1) / (double)n);
		int64_t a = floor_div(ts - s->t0, l->res);
		int64_t b = -floor_div(-(te - s->t0), l->res);
		if (b <= a)
			b = a + 1;
		double sum = 0;
		unsigned cnt = 0;
		for (int64_t j = a; j < b; j++) {
			double v = cell(l, s->ncols, j, id);
			if (!isnan(v)) {
				sum += v;
				cnt++;
			}
		}
		out[i] = cnt ? sum / cnt : NAN;
	}
	if (t0)
		*t0 = start;
	return n;
}

void series_mark(struct series *s, int64_t t_ns, const char *label)
{
	if (!s->marks)
		return;
	uint64_t i = s->nmarks++;
	struct series_marker *m = &s->marks[i % MARKS];
	m->t_ns = t_ns;
	snprintf(m->label, sizeof m->label, "%s", label ? label : "");
	/* Keep the ring in time order: markers may come in a little late. */
	uint64_t oldest = s->nmarks > MARKS ? s->nmarks - MARKS : 0;
	while (i > oldest && s->marks[(i - 1) % MARKS].t_ns > s->marks[i % MARKS].t_ns) {
		struct series_marker tmp = s->marks[(i - 1) % MARKS];
		s->marks[(i - 1) % MARKS] = s->marks[i % MARKS];
		s->marks[i % MARKS] = tmp;
		i--;
	}
}

size_t series_marks(const struct series *s, int64_t from_ns, int64_t to_ns, struct series_marker *out,
		    size_t n)
{
	if (!s->marks)
		return 0;
	uint64_t oldest = s->nmarks > MARKS ? s->nmarks - MARKS : 0;
	size_t match = 0;
	for (uint64_t i = oldest; i < s->nmarks; i++) {
		int64_t t = s->marks[i % MARKS].t_ns;
		if (t >= from_ns && t < to_ns)
			match++;
	}
	size_t skip = match > n ? match - n : 0, w = 0;
	for (uint64_t i = oldest; i < s->nmarks && w < n; i++) {
		const struct series_marker *m = &s->marks[i % MARKS];
		if (m->t_ns < from_ns || m->t_ns >= to_ns)
			continue;
		if (skip) {
			skip--;
			continue;
		}
		out[w++] = *m;
	}
	return w;
}
