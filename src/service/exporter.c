#include "config.h"

#include "infertop/exporter.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/buckets.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/stats.h"
#include "infertop/view.h"

/* ---- output buffer ---- */

struct out {
	char *p;
	size_t len, cap;
	bool oom;
};

static void out_grow(struct out *o, size_t need)
{
	if (o->oom || o->len + need + 1 <= o->cap)
		return;
	size_t cap = o->cap ? o->cap : 16384;
	while (cap < o->len + need + 1)
		cap *= 2;
	char *np = realloc(o->p, cap);
	if (!np) {
		o->oom = true;
		return;
	}
	o->p = np;
	o->cap = cap;
}

static void out_put(struct out *o, const char *s, size_t n)
{
	out_grow(o, n);
	if (o->oom)
		return;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void out_str(struct out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

/* Only integers and strings go through here: the numbers that could
 * follow LC_NUMERIC are formatted by fmt_double under the C locale. */
__attribute__((format(printf, 2, 3))) static void out_printf(struct out *o, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->oom = true;
		return;
	}
	if ((size_t)n < sizeof tmp) {
		out_put(o, tmp, (size_t)n);
		return;
	}
	out_grow(o, (size_t)n);
	if (o->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(o->p + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
}

/* ---- numbers ---- */

/* Microseconds as seconds, exactly (no float on the way): "0.001",
 * "2560.0". Whole numbers keep a ".0" so that an `le` label reads as the
 * Python client writes it in vLLM's exposition ("1.0", not "1"): in
 * Prometheus 2.x `le` is compared as a string, and equal bounds must be
 * equal label values for client and server series to line up. */
static const char *fmt_us(uint64_t us, char *buf, size_t cap)
{
	uint64_t whole = us / 1000000, frac = us % 1000000;
	if (!frac) {
		snprintf(buf, cap, "%" PRIu64 ".0", whole);
		return buf;
	}
	int digits = 6;
	while (frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	snprintf(buf, cap, "%" PRIu64 ".%0*" PRIu64, whole, digits, frac);
	return buf;
}

/* Shortest text that reads back as the same double, in the C locale
 * whatever LC_NUMERIC the process runs under (a "0,5" is not a number to
 * Prometheus). */
static const char *fmt_double(double v, char *buf, size_t cap)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	locale_t old = c ? uselocale(c) : (locale_t)0;
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (c) {
		uselocale(old);
		freelocale(c);
	}
	return buf;
}

/* ---- the exposition ---- */

/* Label values escaped per the text format: backslash, double quote and
 * line feed; everything else (UTF-8 included) goes as is. */
static void out_label_value(struct out *o, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\':
			out_put(o, "\\\\", 2);
			break;
		case '"':
			out_put(o, "\\\"", 2);
			break;
		case '\n':
			out_put(o, "\\n", 2);
			break;
		default:
			out_put(o, s, 1);
		}
	}
}

/* A label of the series on top of model and generator (the family's own:
 * a turn, a cache class), name NULL when none; set around its samples. */
struct family_label {
	const char *name, *value;
};

struct ctx {
	struct out o;
	const char *model;
	const char *generator;
	struct family_label fam;
};

static void head(struct ctx *c, const char *name, const char *type, const char *help)
{
	out_printf(&c->o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{model="…",generator="…"[,family label][,extra]} and a space: the
 * value follows. */
static void series(struct ctx *c, const char *name, const char *suffix, const char *extra_name,
		   const char *extra_value)
{
	out_printf(&c->o, "%s%s{model=\"", name, suffix);
	out_label_value(&c->o, c->model);
	out_str(&c->o, "\",generator=\"");
	out_label_value(&c->o, c->generator);
	if (c->fam.name) {
		out_printf(&c->o, "\",%s=\"", c->fam.name);
		out_label_value(&c->o, c->fam.value);
	}
	if (extra_name) {
		out_printf(&c->o, "\",%s=\"", extra_name);
		out_label_value(&c->o, extra_value);
	}
	out_str(&c->o, "\"} ");
}

static void sample_u64(struct ctx *c, const char *name, const char *suffix, const char *ln, const char *lv,
		       uint64_t v)
{
	series(c, name, suffix, ln, lv);
	out_printf(&c->o, "%" PRIu64 "\n", v);
}

static void sample_text(struct ctx *c, const char *name, const char *suffix, const char *ln, const char *lv,
			const char *v)
{
	series(c, name, suffix, ln, lv);
	out_str(&c->o, v);
	out_str(&c->o, "\n");
}

static void counter(struct ctx *c, const char *name, const char *help, uint64_t v)
{
	head(c, name, "counter", help);
	sample_u64(c, name, "", NULL, NULL, v);
}

static void gauge(struct ctx *c, const char *name, const char *help, double v)
{
	char num[40];
	head(c, name, "gauge", help);
	sample_text(c, name, "", NULL, NULL, fmt_double(v, num, sizeof num));
}

/* The client's latency histograms: which whole-run histogram, and which of
 * vLLM's bounds, per name; from client_metrics.def, indexed by metric.
 * TTFB has no vLLM counterpart: it shares TTFT's bounds, the nearest
 * server figure. */
struct lat {
	const char *name;          /* histogram family */
	const char *window;        /* summary: quantiles over the window */
	const struct buckets *b;
	const char *help;
};

static const struct lat lats[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, prom_pos, prom, \
		      buckets, prom_help, definition, guard, value)                                           \
	[STAT_##id] = { "infertop_" prom "_seconds", "infertop_" prom "_window_seconds", &buckets, prom_help },
#include "infertop/client_metrics.def"
};

/* Where each comes in the exposition (0: not exported). */
static const unsigned char lat_pos[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, prom_pos, ...) \
	[STAT_##id] = prom_pos,
#include "infertop/client_metrics.def"
};

/* The figures of prefix caching and sessions (stats.h's extra
 * histograms) that are exported, with their bounds; the others (turns and
 * context tokens per session, counts not times) are not. */
static const struct lat xlats[XH_N] = {
	[XH_TTFT_WARM] = { "infertop_ttft_by_cache_seconds", NULL, &buckets_ttft,
			   "TTFT of successful requests whose server said their cached tokens: "
			   "cache=\"mostly_cached\" (at least half the prompt), \"cold\" (less)." },
	[XH_TTFT_COLD] = { "infertop_ttft_by_cache_seconds", NULL, &buckets_ttft, NULL },
	[XH_TURN_TTFT] = { "infertop_ttft_by_turn_seconds", NULL, &buckets_ttft,
			   "TTFT of successful session requests by turn (\"8+\": turn 8 and later)." },
	[XH_TURN_E2E] = { "infertop_e2e_by_turn_seconds", NULL, &buckets_request,
			  "E2E latency of successful session requests by turn (\"8+\": turn 8 and later)." },
	[XH_SESSION_DURATION] = { "infertop_session_duration_seconds", NULL, &buckets_request,
				  "A session's first send to its last turn's end, ended sessions." },
};

/* xlats' entry of x (the turn histograms share their first's). */
static const struct lat *xlat(int x)
{
	if (x >= XH_TURN_TTFT && x < XH_TURN_E2E)
		return &xlats[XH_TURN_TTFT];
	if (x >= XH_TURN_E2E && x < XH_TURN_E2E + STATS_TURNS)
		return &xlats[XH_TURN_E2E];
	return xlats[x].b ? &xlats[x] : NULL;
}

#define LE_MAX 64

/* ---- the process's counts: the finished runs' plus the current one's ----
 * serve takes runs one after another; a scraper must see every counter
 * and histogram grow for the life of the process (a drop reads as a reset,
 * and increase() over it loses or invents requests), so the exposition is
 * the finished runs' final counts (struct exporter_totals) plus the
 * current run's. The series are labelled with their model, so the totals
 * are kept by model: each series grows on its own. */

struct lat_counts {
	uint64_t cum[LE_MAX];
	uint64_t count, sum_us;
};

struct counts {
	uint64_t ok, error, incomplete, errors[ERR_NKINDS], input_tokens, output_tokens, connections;
	struct lat_counts lat[STAT_NMETRICS];
	/* Prefix cache and sessions: stats_counters' cache fields, stats'
	 * session counters, the exported extra histograms. */
	uint64_t cache_known, cache_unknown, prompt_known, prompt_cached;
	uint64_t sess_done, sess_failed, sess_context, sess_incomplete, sess_turns;
	struct lat_counts xh[XH_N];
};

/* Models whose series are kept; the runs of any further model count in
 * the last one's series (a bound on what a serve taking job after job
 * can grow to: 9 KB each). */
#define TOTALS_MODELS_MAX 64

struct model_counts {
	char model[256];
	struct counts c;
};

struct exporter_totals {
	struct model_counts *m;
	size_t n;
	uint64_t runs;               /* finished runs added */
	char run_id[33];             /* the last of them */
};

/* The row of model in rows[0..*n), added zeroed when new; with cap rows
 * already, the last. */
static struct model_counts *rows_slot(struct model_counts *rows, size_t *n, size_t cap, const char *model)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(rows[i].model, model) == 0)
			return &rows[i];
	if (*n >= cap)
		return &rows[*n - 1];
	struct model_counts *r = &rows[(*n)++];
	memset(r, 0, sizeof *r);
	snprintf(r->model, sizeof r->model, "%s", model);
	return r;
}

static int lat_bounds(const struct lat *l, int64_t le_us[LE_MAX])
{
	int n = l->b->n < LE_MAX ? l->b->n : LE_MAX;
	/* The bounds are whole microseconds (buckets.h): llround is exact. */
	for (int i = 0; i < n; i++)
		le_us[i] = (int64_t)llround(l->b->le[i] * 1e6);
	return n;
}

/* dst += the counts of s (NULL: nothing). */
static void counts_add_hist(struct lat_counts *lc, const struct lat *l, const struct hist *h)
{
	if (!h)
		return;
	int64_t le_us[LE_MAX] = { 0 };
	uint64_t cum[LE_MAX] = { 0 };
	int n = lat_bounds(l, le_us);
	hist_cumulative(h, le_us, (size_t)n, cum);
	for (int i = 0; i < n; i++)
		lc->cum[i] += cum[i];
	lc->count += hist_count(h);
	lc->sum_us += hist_sum(h);
}

static void counts_add_stats(struct counts *dst, const struct stats *s)
{
	if (!s)
		return;
	dst->cache_known += s->run_c.cache_known;
	dst->cache_unknown += s->run_c.cache_unknown;
	dst->prompt_known += s->run_c.prompt_known;
	dst->prompt_cached += s->run_c.prompt_cached;
	dst->sess_done += s->sessions_done;
	dst->sess_failed += s->sessions_failed;
	dst->sess_context += s->sessions_context;
	dst->sess_incomplete += s->sessions_incomplete;
	dst->sess_turns += s->session_turns;
	for (int x = 0; x < XH_N; x++)
		if (xlat(x))
			counts_add_hist(&dst->xh[x], xlat(x), s->xh[x]);
	dst->ok += s->run_c.completed;
	dst->error += s->run_c.failed;
	dst->incomplete += s->run_c.incomplete;
	for (int k = 0; k < ERR_NKINDS; k++)
		dst->errors[k] += s->errors[k];
	dst->input_tokens += s->run_c.input_tokens;
	dst->output_tokens += s->run_c.output_tokens;
	dst->connections += s->connections;
	for (int m = 0; m < STAT_NMETRICS; m++)
		if (lats[m].b)
			counts_add_hist(&dst->lat[m], &lats[m], s->run[m]);
}

struct exporter_totals *exporter_totals_new(void)
{
	struct exporter_totals *t = calloc(1, sizeof *t);
	if (t && !(t->m = calloc(TOTALS_MODELS_MAX, sizeof *t->m))) {
		free(t);
		t = NULL;
	}
	return t;
}

void exporter_totals_free(struct exporter_totals *t)
{
	if (!t)
		return;
	free(t->m);
	free(t);
}

void exporter_totals_add(struct exporter_totals *t, const struct run_view *v)
{
	if (!t || !v)
		return;
	counts_add_stats(&rows_slot(t->m, &t->n, TOTALS_MODELS_MAX, v->model ? v->model : "")->c, v->stats);
	t->runs++;
	snprintf(t->run_id, sizeof t->run_id, "%s", v->run_id ? v->run_id : "");
}

uint64_t exporter_totals_requests(const struct exporter_totals *t)
{
	uint64_t n = 0;
	for (size_t i = 0; t && i < t->n; i++)
		n += t->m[i].c.ok + t->m[i].c.error;
	return n;
}

static void histogram(struct ctx *c, const struct lat *l, const struct lat_counts *lc)
{
	int64_t le_us[LE_MAX] = { 0 };
	int n = lat_bounds(l, le_us);
	char num[40];
	for (int i = 0; i < n; i++)
		sample_u64(c, l->name, "_bucket", "le", fmt_us((uint64_t)le_us[i], num, sizeof num), lc->cum[i]);
	sample_u64(c, l->name, "_bucket", "le", "+Inf", lc->count);
	sample_text(c, l->name, "_sum", NULL, NULL, fmt_us(lc->sum_us, num, sizeof num));
	sample_u64(c, l->name, "_count", NULL, NULL, lc->count);
}

/* p50/p90/p99 over the sliding window, as a summary: quantiles over a
 * recent window beside a cumulative _sum and _count is what a Prometheus
 * client's summary is (its max_age window), and promtool refuses a
 * `quantile` label on a gauge. _sum and _count are the whole run's, as
 * the histogram's. No quantile sample while the window is empty: an
 * absent series reads as "no data", a 0 would read as a perfect latency. */
static void window_head(struct ctx *c, const struct lat *l)
{
	char help[200];
	snprintf(help, sizeof help,
		 "%s: quantiles over the sliding window (--window, nearest rank), sum and count as the histogram's.",
		 l->name);
	head(c, l->window, "summary", help);
}

static void window_quantiles(struct ctx *c, const struct lat *l, const struct hist *w, const struct lat_counts *run)
{
	static const struct {
		double p;
		const char *label;
	} qs[] = { { 50, "0.5" }, { 90, "0.9" }, { 99, "0.99" } };
	char num[40];
	if (w && hist_count(w)) {
		for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
			int64_t us = hist_percentile(w, qs[i].p);
			sample_text(c, l->window, "", "quantile", qs[i].label,
				    fmt_us((uint64_t)(us < 0 ? 0 : us), num, sizeof num));
		}
	}
	sample_text(c, l->window, "_sum", NULL, NULL, fmt_us(run->sum_us, num, sizeof num));
	sample_u64(c, l->window, "_count", NULL, NULL, run->count);
}

/* Every model row r in turn, the samples written meanwhile labelled with
 * its model (the assignment is the loop's condition: a model is never
 * NULL). */
#define EACH_ROW(c, rows, n, r) \
	for (const struct model_counts *r = (rows); r < (rows) + (n) && ((c)->model = r->model); r++)

/* One counter family: its samples for every model row. */

static void rows_counter(struct ctx *c, const struct model_counts *rows, size_t n, const char *name,
			 const char *help, size_t field)
{
	head(c, name, "counter", help);
	EACH_ROW(c, rows, n, r)
		sample_u64(c, name, "", NULL, NULL, *(const uint64_t *)((const char *)&r->c + field));
}

/* The counters and histograms are the process's, by model (rows: the
 * finished runs' plus the current run's, which is row cur), the gauges
 * and window quantiles the current run's (s NULL: none going on). */
static void render_stats(struct ctx *c, const struct model_counts *rows, size_t nrows, size_t cur,
			 const struct stats *s, int64_t now_ns)
{
	const char *model = c->model;
	head(c, "infertop_requests_total", "counter",
	     "Finished requests by outcome (ok, error; incomplete: cut by a run's end while streaming, not an "
	     "error) over every run of this process (each from its warmup's end).");
	EACH_ROW(c, rows, nrows, r) {
		sample_u64(c, "infertop_requests_total", "", "outcome", "ok", r->c.ok);
		sample_u64(c, "infertop_requests_total", "", "outcome", "error", r->c.error);
		sample_u64(c, "infertop_requests_total", "", "outcome", "incomplete", r->c.incomplete);
	}
	head(c, "infertop_errors_total", "counter", "Failed requests by kind (ERRORS in infertop(1)).");
	EACH_ROW(c, rows, nrows, r)
		for (int k = 0; k < ERR_NKINDS; k++)
			sample_u64(c, "infertop_errors_total", "", "kind", stats_err_name((enum err_kind)k),
				   r->c.errors[k]);
	rows_counter(c, rows, nrows, "infertop_input_tokens_total", "Prompt tokens of successful requests, from usage.",
		     offsetof(struct counts, input_tokens));
	rows_counter(c, rows, nrows, "infertop_output_tokens_total",
		     "Output tokens of successful requests (usage, else chunks).", offsetof(struct counts, output_tokens));
	rows_counter(c, rows, nrows, "infertop_connections_opened_total",
		     "TCP connections opened (kept-alive reuse keeps this flat).", offsetof(struct counts, connections));
	c->model = model;
	if (s)
		gauge(c, "infertop_in_flight", "Requests sent and not yet finished.", (double)s->in_flight);

	enum stat_metric order[STAT_NMETRICS];
	int n = stats_metric_order(lat_pos, order);
	for (int i = 0; i < n; i++) {
		head(c, lats[order[i]].name, "histogram", lats[order[i]].help);
		EACH_ROW(c, rows, nrows, r)
			histogram(c, &lats[order[i]], &r->c.lat[order[i]]);
	}
	for (int i = 0; i < n; i++) {
		window_head(c, &lats[order[i]]);
		EACH_ROW(c, rows, nrows, r)
			window_quantiles(c, &lats[order[i]], s && (size_t)(r - rows) == cur ? s->win[order[i]] : NULL,
					 &r->c.lat[order[i]]);
	}
	c->model = model;
	if (s)
		gauge(c, "infertop_window_seconds", "Span the window quantiles cover (shorter than --window early on).",
		      stats_window_seconds(s, now_ns));
}

static bool counts_have_sessions(const struct counts *k)
{
	if (k->sess_done)
		return true;
	for (int t = 0; t < STATS_TURNS; t++)
		if (k->xh[XH_TURN_TTFT + t].count || k->xh[XH_TURN_E2E + t].count)
			return true;
	return false;
}

/* The families of the prefix cache (as the server said it request by
 * request) and of sessions are there only when some row has them
 * (stats_cache_shown's rule): a run without cache hits or sessions has
 * none. Totals over the process's runs, like the other counters. The
 * turn label is bounded: "1" to "7", and "8+" for every later turn. */
static void render_cache_sessions(struct ctx *c, const struct model_counts *rows, size_t nrows,
				  const struct stats *s)
{
	const char *model = c->model;
	bool cache = false, sessions = false;
	for (size_t i = 0; i < nrows; i++) {
		const struct counts *k = &rows[i].c;
		bool ks = counts_have_sessions(k);
		sessions |= ks;
		cache |= k->prompt_cached || (ks && k->cache_known);
	}
	if (cache) {
		head(c, "infertop_cache_reports_total", "counter",
		     "Successful requests by whether the server said how many prompt tokens it served from its "
		     "prefix cache (usage.prompt_tokens_details.cached_tokens, llama.cpp timings.cache_n).");
		EACH_ROW(c, rows, nrows, r) {
			sample_u64(c, "infertop_cache_reports_total", "", "reported", "yes", r->c.cache_known);
			sample_u64(c, "infertop_cache_reports_total", "", "reported", "no", r->c.cache_unknown);
		}
		rows_counter(c, rows, nrows, "infertop_prompt_tokens_known_total",
			     "Prompt tokens of the successful requests whose cached tokens the server said.",
			     offsetof(struct counts, prompt_known));
		rows_counter(c, rows, nrows, "infertop_prompt_cached_tokens_total",
			     "Prompt tokens the server said it served from its prefix cache (client-side hit rate: "
			     "this over infertop_prompt_tokens_known_total).",
			     offsetof(struct counts, prompt_cached));
		c->model = model;
		if (s)
			gauge(c, "infertop_prompt_cache_hit_ratio_window",
			      "Cached over known prompt tokens in the sliding window (--window); NaN until a request said.",
			      stats_cache_hit_rate(&s->win_c));
		head(c, xlats[XH_TTFT_WARM].name, "histogram", xlats[XH_TTFT_WARM].help);
		EACH_ROW(c, rows, nrows, r) {
			c->fam = (struct family_label){ "cache", "mostly_cached" };
			histogram(c, xlat(XH_TTFT_WARM), &r->c.xh[XH_TTFT_WARM]);
			c->fam = (struct family_label){ "cache", "cold" };
			histogram(c, xlat(XH_TTFT_COLD), &r->c.xh[XH_TTFT_COLD]);
		}
		c->fam = (struct family_label){ 0 };
	}
	if (sessions) {
		rows_counter(c, rows, nrows, "infertop_sessions_ended_total",
			     "Sessions (--sessions) that ended, failed ones included.", offsetof(struct counts, sess_done));
		rows_counter(c, rows, nrows, "infertop_sessions_failed_total", "Sessions that ended with a failed turn.",
			     offsetof(struct counts, sess_failed));
		rows_counter(c, rows, nrows, "infertop_sessions_context_limited_total",
			     "Sessions ended by the server's context-length error (a subset of the failed).",
			     offsetof(struct counts, sess_context));
		rows_counter(c, rows, nrows, "infertop_sessions_incomplete_total",
			     "Sessions cut by the run's end (-d, Ctrl-C) with turns left: ended, not failed.",
			     offsetof(struct counts, sess_incomplete));
		rows_counter(c, rows, nrows, "infertop_session_turns_total", "Turns of ended sessions that succeeded.",
			     offsetof(struct counts, sess_turns));
		head(c, xlats[XH_SESSION_DURATION].name, "histogram", xlats[XH_SESSION_DURATION].help);
		EACH_ROW(c, rows, nrows, r)
			histogram(c, xlat(XH_SESSION_DURATION), &r->c.xh[XH_SESSION_DURATION]);
		for (int k = 0; k < 2; k++) {
			int x0 = k ? XH_TURN_E2E : XH_TURN_TTFT;
			head(c, xlats[x0].name, "histogram", xlats[x0].help);
			EACH_ROW(c, rows, nrows, r)
				for (int t = 0; t < STATS_TURNS; t++) {
					c->fam = (struct family_label){ "turn", stats_turn_label(t) };
					histogram(c, xlat(x0 + t), &r->c.xh[x0 + t]);
				}
			c->fam = (struct family_label){ 0 };
		}
	}
	c->model = model;
}

/* Closed loop targets a concurrency and has no rate; open loop targets a
 * rate, and its concurrency is the --max-concurrency cap (0: none). */
static void render_load(struct ctx *c, const struct load *l)
{
	bool open = l->mode == LOAD_OPEN;
	gauge(c, "infertop_target_concurrency",
	      "Requests kept in flight (closed loop); the in-flight cap in open loop, 0 = none.",
	      (double)(open ? l->max_concurrency : l->concurrency));
	gauge(c, "infertop_target_rate", "Requests started per second (open loop); 0 in closed loop.",
	      open ? l->rate : 0.0);
	gauge(c, "infertop_paused", "1 while no request starts: paused (key, API) or held by a plan between steps.",
	      (l->paused || l->held) ? 1.0 : 0.0);
}

/* Which run the counts come to: its id a label of an info series (a new
 * run is a new id, never a reset of the counters), and whether it goes on. */
static void render_run_info(struct ctx *c, const struct run_view *v, const struct exporter_totals *t)
{
	const char *id = v && v->run_id ? v->run_id : t ? t->run_id : "";
	if (!v && !(t && t->runs))
		return; /* no run yet: nothing to label */
	head(c, "infertop_run_info", "gauge", "1, labelled with the current run's id (or, between runs, the last one's).");
	sample_u64(c, "infertop_run_info", "", "run_id", id, 1);
	gauge(c, "infertop_run_active", "1 while a run goes on; 0 between runs (its final counts stay exported).",
	      v && v->state != ENGINE_DONE ? 1.0 : 0.0);
	counter(c, "infertop_runs_total", "Runs this process has taken (the current one included).",
		(t ? t->runs : 0) + (v ? 1 : 0));
}

char *exporter_text_totals(const struct run_view *v, const struct exporter_totals *t, const char *generator_id,
			   int64_t now_ns, size_t *len)
{
	const char *model = v && v->model ? v->model : "";
	struct ctx c = { .model = model, .generator = generator_id ? generator_id : "" };
	/* The rows: the totals' models, the current run's counts added to its
	 * model's (a new row when its model is new). */
	size_t nrows = t ? t->n : 0, cur = SIZE_MAX;
	struct model_counts *rows = malloc((nrows + 1) * sizeof *rows);
	if (!rows)
		return NULL;
	if (nrows)
		memcpy(rows, t->m, nrows * sizeof *rows);
	if (v && v->stats) {
		struct model_counts *r = rows_slot(rows, &nrows, TOTALS_MODELS_MAX, model);
		counts_add_stats(&r->c, v->stats);
		cur = (size_t)(r - rows);
	}
	render_stats(&c, rows, nrows, cur, v ? v->stats : NULL, now_ns);
	render_cache_sessions(&c, rows, nrows, v ? v->stats : NULL);
	free(rows);
	c.model = model;
	if (v && v->load)
		render_load(&c, v->load);
	if (v)
		gauge(&c, "infertop_elapsed_seconds", "Time the run has lasted.",
		      (double)run_view_elapsed(v, now_ns) / 1e9);
	render_run_info(&c, v, t);
	out_grow(&c.o, 0); /* an empty view still gets a string */
	if (!c.o.oom)
		c.o.p[c.o.len] = '\0';
	if (c.o.oom) {
		free(c.o.p);
		return NULL;
	}
	if (len)
		*len = c.o.len;
	return c.o.p;
}

char *exporter_text(const struct run_view *v, const char *generator_id, int64_t now_ns, size_t *len)
{
	return exporter_text_totals(v, NULL, generator_id, now_ns, len);
}
