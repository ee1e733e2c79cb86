#include "config.h"

#include "infertop/exporter.h"

#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define LE_MAX 64

/* A histogram's samples (no HELP/TYPE): the family's head comes once,
 * before the first of its labelled histograms. An empty or absent h
 * gives zero counts. */
static void histogram_samples(struct ctx *c, const struct lat *l, const struct hist *h)
{
	int64_t le_us[LE_MAX] = { 0 };
	uint64_t cum[LE_MAX] = { 0 };
	int n = l->b->n < LE_MAX ? l->b->n : LE_MAX;
	/* The bounds are whole microseconds (buckets.h): llround is exact. */
	for (int i = 0; i < n; i++)
		le_us[i] = (int64_t)llround(l->b->le[i] * 1e6);
	if (h)
		hist_cumulative(h, le_us, (size_t)n, cum);
	char num[40];
	for (int i = 0; i < n; i++)
		sample_u64(c, l->name, "_bucket", "le", fmt_us((uint64_t)le_us[i], num, sizeof num), cum[i]);
	sample_u64(c, l->name, "_bucket", "le", "+Inf", h ? hist_count(h) : 0);
	sample_text(c, l->name, "_sum", NULL, NULL, fmt_us(h ? hist_sum(h) : 0, num, sizeof num));
	sample_u64(c, l->name, "_count", NULL, NULL, h ? hist_count(h) : 0);
}

static void histogram(struct ctx *c, const struct lat *l, const struct hist *h)
{
	head(c, l->name, "histogram", l->help);
	histogram_samples(c, l, h);
}

/* p50/p90/p99 over the sliding window, as a summary: quantiles over a
 * recent window beside a cumulative _sum and _count is what a Prometheus
 * client's summary is (its max_age window), and promtool refuses a
 * `quantile` label on a gauge. _sum and _count are the whole run's, as
 * the histogram's. No quantile sample while the window is empty: an
 * absent series reads as "no data", a 0 would read as a perfect latency. */
static void window_quantiles(struct ctx *c, const struct lat *l, const struct hist *w, const struct hist *run)
{
	static const struct {
		double p;
		const char *label;
	} qs[] = { { 50, "0.5" }, { 90, "0.9" }, { 99, "0.99" } };
	char help[200];
	snprintf(help, sizeof help,
		 "%s: quantiles over the sliding window (--window, nearest rank), sum and count over the run.",
		 l->name);
	head(c, l->window, "summary", help);
	char num[40];
	if (hist_count(w)) {
		for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
			int64_t us = hist_percentile(w, qs[i].p);
			sample_text(c, l->window, "", "quantile", qs[i].label,
				    fmt_us((uint64_t)(us < 0 ? 0 : us), num, sizeof num));
		}
	}
	sample_text(c, l->window, "_sum", NULL, NULL, fmt_us(hist_sum(run), num, sizeof num));
	sample_u64(c, l->window, "_count", NULL, NULL, hist_count(run));
}

/* The prefix cache, as the server said it request by request; only when
 * stats_cache_shown (a run without cache hits or sessions has none of
 * these families). */
static void render_cache(struct ctx *c, const struct stats *s)
{
	const struct stats_counters *r = &s->run_c;
	head(c, "infertop_cache_reports_total", "counter",
	     "Successful requests by whether the server said how many prompt tokens it served from its prefix "
	     "cache (usage.prompt_tokens_details.cached_tokens, llama.cpp timings.cache_n).");
	sample_u64(c, "infertop_cache_reports_total", "", "reported", "yes", r->cache_known);
	sample_u64(c, "infertop_cache_reports_total", "", "reported", "no", r->cache_unknown);
	counter(c, "infertop_prompt_tokens_known_total",
		"Prompt tokens of the successful requests whose cached tokens the server said.", r->prompt_known);
	counter(c, "infertop_prompt_cached_tokens_total",
		"Prompt tokens the server said it served from its prefix cache (client-side hit rate: this over "
		"infertop_prompt_tokens_known_total).",
		r->prompt_cached);
	gauge(c, "infertop_prompt_cache_hit_ratio_window",
	      "Cached over known prompt tokens in the sliding window (--window); NaN until a request said.",
	      stats_cache_hit_rate(&s->win_c));
	static const struct lat by_cache = { "infertop_ttft_by_cache_seconds", NULL, &buckets_ttft,
					     "TTFT of successful requests whose server said their cached tokens: "
					     "cache=\"mostly_cached\" (at least half the prompt), \"cold\" (less)." };
	head(c, by_cache.name, "histogram", by_cache.help);
	c->fam = (struct family_label){ "cache", "mostly_cached" };
	histogram_samples(c, &by_cache, s->xh[XH_TTFT_WARM]);
	c->fam = (struct family_label){ "cache", "cold" };
	histogram_samples(c, &by_cache, s->xh[XH_TTFT_COLD]);
	c->fam = (struct family_label){ 0 };
}

/* --sessions: how sessions ended, TTFT and E2E by turn. The turn label
 * is bounded: "1" to "7", and "8+" for every later turn. */
static void render_sessions(struct ctx *c, const struct stats *s)
{
	counter(c, "infertop_sessions_ended_total", "Sessions (--sessions) that ended, failed ones included.",
		s->sessions_done);
	counter(c, "infertop_sessions_failed_total", "Sessions that ended with a failed turn.", s->sessions_failed);
	counter(c, "infertop_sessions_context_limited_total",
		"Sessions ended by the server's context-length error (a subset of the failed).", s->sessions_context);
	counter(c, "infertop_sessions_incomplete_total",
		"Sessions cut by the run's end (-d, Ctrl-C) with turns left: ended, not failed.", s->sessions_incomplete);
	counter(c, "infertop_session_turns_total", "Turns of ended sessions that succeeded.", s->session_turns);
	static const struct lat dur = { "infertop_session_duration_seconds", NULL, &buckets_request,
					"A session's first send to its last turn's end, ended sessions." };
	histogram(c, &dur, s->xh[XH_SESSION_DURATION]);
	static const struct lat by_turn[2] = {
		{ "infertop_ttft_by_turn_seconds", NULL, &buckets_ttft,
		  "TTFT of successful session requests by turn (\"8+\": turn 8 and later)." },
		{ "infertop_e2e_by_turn_seconds", NULL, &buckets_request,
		  "E2E latency of successful session requests by turn (\"8+\": turn 8 and later)." },
	};
	for (int k = 0; k < 2; k++) {
		head(c, by_turn[k].name, "histogram", by_turn[k].help);
		for (int t = 0; t < STATS_TURNS; t++) {
			c->fam = (struct family_label){ "turn", stats_turn_label(t) };
			histogram_samples(c, &by_turn[k], s->xh[(k ? XH_TURN_E2E : XH_TURN_TTFT) + t]);
		}
		c->fam = (struct family_label){ 0 };
	}
}

static bool has_sessions(const struct stats *s)
{
	if (s->sessions_done)
		return true;
	for (int x = XH_TURN_TTFT; x < XH_N; x++)
		if (s->xh[x])
			return true;
	return false;
}

static void render_stats(struct ctx *c, const struct stats *s, int64_t now_ns)
{
	head(c, "infertop_requests_total", "counter",
	     "Finished requests by outcome (ok, error), since the run (or its warmup's end) began.");
	sample_u64(c, "infertop_requests_total", "", "outcome", "ok", s->run_c.completed);
	sample_u64(c, "infertop_requests_total", "", "outcome", "error", s->run_c.failed);

	head(c, "infertop_errors_total", "counter", "Failed requests by kind (ERRORS in infertop(1)).");
	for (int k = 0; k < ERR_NKINDS; k++)
		sample_u64(c, "infertop_errors_total", "", "kind", stats_err_name((enum err_kind)k), s->errors[k]);

	counter(c, "infertop_input_tokens_total", "Prompt tokens of successful requests, from usage.",
		s->run_c.input_tokens);
	counter(c, "infertop_output_tokens_total", "Output tokens of successful requests (usage, else chunks).",
		s->run_c.output_tokens);
	counter(c, "infertop_connections_opened_total", "TCP connections opened (kept-alive reuse keeps this flat).",
		s->connections);
	gauge(c, "infertop_in_flight", "Requests sent and not yet finished.", (double)s->in_flight);

	enum stat_metric order[STAT_NMETRICS];
	int n = stats_metric_order(lat_pos, order);
	for (int i = 0; i < n; i++)
		histogram(c, &lats[order[i]], s->run[order[i]]);
	for (int i = 0; i < n; i++)
		window_quantiles(c, &lats[order[i]], s->win[order[i]], s->run[order[i]]);
	gauge(c, "infertop_window_seconds", "Span the window quantiles cover (shorter than --window early on).",
	      stats_window_seconds(s, now_ns));
	if (stats_cache_shown(&s->run_c, &s->win_c, has_sessions(s)))
		render_cache(c, s);
	if (has_sessions(s))
		render_sessions(c, s);
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

char *exporter_text(const struct run_view *v, const char *generator_id, int64_t now_ns, size_t *len)
{
	struct ctx c = { .model = v->model ? v->model : "", .generator = generator_id ? generator_id : "" };
	if (v->stats)
		render_stats(&c, v->stats, now_ns);
	if (v->load)
		render_load(&c, v->load);
	gauge(&c, "infertop_elapsed_seconds", "Time the run has lasted.", (double)run_view_elapsed(v, now_ns) / 1e9);
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
