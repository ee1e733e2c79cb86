/* The Prometheus exposition of a run (exporter.c): a synthetic run with
 * known samples (tests/synthrun.c) is rendered, read back with the
 * project's own parser (prom.h) and every figure compared with what the
 * run holds, computed here from the samples themselves; the client
 * latency families are those client_metrics.def declares, in its order. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/buckets.h"
#include "infertop/clock.h"
#include "infertop/exporter.h"
#include "infertop/prom.h"
#include "enginefix.h"
#include "simutil.h"
#include "synthrun.h"

#define MODEL "org/m \"q\" \\ x\nline2"
#define GEN "host:4242"

struct rendered {
	struct synth s;
	char *text;
	size_t len;
};

static void render(struct rendered *r, const char *model)
{
	assert_int_equal(synth_init(&r->s, model), 0);
	struct run_view v;
	engine_view(&r->s.e, &v);
	r->text = exporter_text(&v, GEN, r->s.t0 + 2 * CLOCK_NS_PER_S, &r->len);
	assert_non_null(r->text);
	assert_int_equal(strlen(r->text), r->len);
}

static void unrender(struct rendered *r)
{
	free(r->text);
	synth_free(&r->s);
}

static double sum_of(const struct rendered *r, const char *name, const char *matchers)
{
	double out = -1;
	int n = prom_sum(r->text, r->len, name, matchers, &out);
	if (n != 1)
		fail_msg("%s{%s}: %d series", name, matchers ? matchers : "", n);
	return out;
}

/* Every sample: a known type, both labels, the model unescaped back to
 * what the run holds. */
struct walk {
	const char *model;
	int samples;
};

static int on_sample(void *ud, const struct prom_sample *s)
{
	struct walk *w = ud;
	w->samples++;
	const struct prom_label *m = prom_sample_label(s, "model");
	const struct prom_label *g = prom_sample_label(s, "generator");
	if (!m || !prom_label_value_eq(m, w->model))
		fail_msg("line %u: model label wrong or missing", s->line);
	if (!g || !prom_label_value_eq(g, GEN))
		fail_msg("line %u: generator label wrong or missing", s->line);
	if (s->type != PROM_COUNTER && s->type != PROM_GAUGE && s->type != PROM_HISTOGRAM && s->type != PROM_SUMMARY)
		fail_msg("line %u: type %s", s->line, prom_type_name(s->type));
	size_t n = s->family_len;
	bool total = n > 6 && memcmp(s->family + n - 6, "_total", 6) == 0;
	if ((s->type == PROM_COUNTER) != total)
		fail_msg("line %u: counters and only counters end in _total", s->line);
	return 0;
}

static void test_parses_strictly(void **state)
{
	(void)state;
	struct rendered r;
	render(&r, MODEL);
	struct walk w = { MODEL, 0 };
	struct prom_error err;
	int n = prom_parse(r.text, r.len, 0, on_sample, &w, &err);
	if (n < 0)
		fail_msg("line %u: %s", err.line, err.msg);
	assert_int_equal(n, w.samples);
	assert_true(n > 100);
	/* Escaped as the format says: \\, \" and \n, nothing raw. */
	assert_non_null(strstr(r.text, "model=\"org/m \\\"q\\\" \\\\ x\\nline2\""));
	/* No secret: the URL (with its password) appears nowhere. */
	assert_null(strstr(r.text, "secret"));
	assert_null(strstr(r.text, "127.0.0.1"));
	/* Every family has HELP and TYPE. */
	for (const char *p = r.text; (p = strstr(p, "# TYPE ")) != NULL; p++) {
		const char *name = p + 7;
		size_t nl = strcspn(name, " ");
		char help[128];
		snprintf(help, sizeof help, "# HELP %.*s ", (int)nl, name);
		assert_non_null(strstr(r.text, help));
	}
	unrender(&r);
}

/* A request cut by the run's end: its own outcome, not an error, its
 * streamed tokens in the output total. */
static void test_incomplete(void **state)
{
	(void)state;
	struct synth s;
	assert_int_equal(synth_init(&s, "m"), 0);
	struct req_result cut = {.incomplete = true, .err = ERR_ABORTED, .output_tokens = 5, .chunks = 5,
				 .prompt_tokens = -1, .cached_tokens = -1, .usage_tokens = -1};
	s.e.stats->in_flight++;
	stats_request_done(s.e.stats, &cut);
	struct run_view v;
	engine_view(&s.e, &v);
	size_t len;
	char *text = exporter_text(&v, GEN, s.t0 + 2 * CLOCK_NS_PER_S, &len);
	assert_non_null(text);
	double n = -1, err = -1, ab = -1, out = -1;
	assert_int_equal(prom_sum(text, len, "infertop_requests_total", "outcome=incomplete", &n), 1);
	assert_int_equal(prom_sum(text, len, "infertop_requests_total", "outcome=error", &err), 1);
	assert_int_equal(prom_sum(text, len, "infertop_errors_total", "kind=aborted", &ab), 1);
	assert_int_equal(prom_sum(text, len, "infertop_output_tokens_total", NULL, &out), 1);
	assert_true(n == 1 && err == SYNTH_FAILED && ab == 0);
	assert_true(out == SYNTH_OK * SYNTH_OUT_TOKENS + 5);
	free(text);
	synth_free(&s);
}

static void test_counters_and_gauges(void **state)
{
	(void)state;
	struct rendered r;
	render(&r, "m");
	assert_true(sum_of(&r, "infertop_requests_total", "outcome=ok") == SYNTH_OK);
	assert_true(sum_of(&r, "infertop_requests_total", "outcome=error") == SYNTH_FAILED);
	assert_true(sum_of(&r, "infertop_errors_total", "kind=connect") == 2);
	assert_true(sum_of(&r, "infertop_errors_total", "kind=http") == 1);
	assert_true(sum_of(&r, "infertop_errors_total", "kind=timeout") == 1);
	assert_true(sum_of(&r, "infertop_errors_total", "kind=bad_json") == 0);
	/* Every kind is there, zeros included, so rate() has a series. */
	double all;
	assert_int_equal(prom_sum(r.text, r.len, "infertop_errors_total", NULL, &all), ERR_NKINDS);
	assert_true(all == SYNTH_FAILED);
	assert_true(sum_of(&r, "infertop_input_tokens_total", NULL) == SYNTH_OK * SYNTH_IN_TOKENS);
	assert_true(sum_of(&r, "infertop_output_tokens_total", NULL) == SYNTH_OK * SYNTH_OUT_TOKENS);
	assert_true(sum_of(&r, "infertop_connections_opened_total", NULL) == SYNTH_CONNECTIONS);
	assert_true(sum_of(&r, "infertop_in_flight", NULL) == SYNTH_IN_FLIGHT);
	assert_true(sum_of(&r, "infertop_target_concurrency", NULL) == SYNTH_CONCURRENCY);
	assert_true(sum_of(&r, "infertop_target_rate", NULL) == 0);
	assert_true(sum_of(&r, "infertop_paused", NULL) == 1);
	assert_true(sum_of(&r, "infertop_elapsed_seconds", NULL) == 2);
	unrender(&r);

	/* Open loop: the rate is the target, the cap the concurrency. */
	render(&r, "m");
	r.s.e.load.mode = LOAD_OPEN;
	r.s.e.load.rate = 2.5;
	r.s.e.load.max_concurrency = 64;
	r.s.e.load.paused = false;
	free(r.text);
	struct run_view v;
	engine_view(&r.s.e, &v);
	r.text = exporter_text(&v, GEN, r.s.t0, &r.len);
	assert_non_null(r.text);
	assert_true(sum_of(&r, "infertop_target_rate", NULL) == 2.5);
	assert_true(sum_of(&r, "infertop_target_concurrency", NULL) == 64);
	assert_true(sum_of(&r, "infertop_paused", NULL) == 0);
	unrender(&r);
}

/* The samples of one metric, in microseconds. */
static size_t samples_of(const char *family, int64_t *out)
{
	size_t n = 0;
	for (int i = 0; i < SYNTH_OK; i++) {
		if (!strcmp(family, "infertop_itl_seconds")) {
			for (int j = 0; j < SYNTH_GAPS; j++)
				out[n++] = synth_gap_us(i, j);
			continue;
		}
		out[n++] = !strcmp(family, "infertop_ttft_seconds")	? synth_ttft_us[i]
			   : !strcmp(family, "infertop_ttfb_seconds")	? synth_ttfb_us(i)
			   : !strcmp(family, "infertop_e2e_seconds")	? synth_e2e_us(i)
			   : !strcmp(family, "infertop_tpot_seconds")	? synth_tpot_us(i)
								: synth_queue_us(i);
	}
	return n;
}

static void check_hist(const struct rendered *r, const char *family, const struct buckets *b)
{
	int64_t v[SYNTH_OK * SYNTH_GAPS];
	size_t n = samples_of(family, v);
	struct prom_hist h;
	assert_int_equal(prom_hist_collect(r->text, r->len, family, NULL, &h), 0);
	/* vLLM's bounds, in order, then +Inf. */
	assert_int_equal(h.n, b->n + 1);
	for (int i = 0; i < b->n; i++)
		assert_true(h.le[i] == b->le[i]);
	assert_true(isinf(h.le[b->n]));
	/* le: the number of samples <= the bound, cumulative. */
	for (int i = 0; i < b->n; i++) {
		uint64_t want = 0;
		for (size_t k = 0; k < n; k++)
			want += (double)v[k] / 1e6 <= b->le[i];
		if (h.cum[i] != (double)want)
			fail_msg("%s le=%g: %g, want %llu", family, b->le[i], h.cum[i], (unsigned long long)want);
		if (i > 0)
			assert_true(h.cum[i] >= h.cum[i - 1]);
	}
	/* +Inf = _count = every sample; _sum exact. */
	assert_true(h.cum[b->n] == (double)n);
	assert_true(h.count == (double)n);
	int64_t sum = 0;
	for (size_t k = 0; k < n; k++)
		sum += v[k];
	if (fabs(h.sum - (double)sum / 1e6) > 1e-9)
		fail_msg("%s _sum %.9f, want %.9f", family, h.sum, (double)sum / 1e6);
}

static void test_histograms(void **state)
{
	(void)state;
	struct rendered r;
	render(&r, MODEL);
	check_hist(&r, "infertop_ttft_seconds", &buckets_ttft);
	check_hist(&r, "infertop_ttfb_seconds", &buckets_ttft);
	check_hist(&r, "infertop_itl_seconds", &buckets_itl);
	check_hist(&r, "infertop_tpot_seconds", &buckets_itl);
	check_hist(&r, "infertop_e2e_seconds", &buckets_request);
	check_hist(&r, "infertop_queue_seconds", &buckets_request);
	/* The bounds read as vLLM's Python client writes them. */
	assert_non_null(strstr(r.text, "le=\"0.001\"} 2\n"));
	assert_non_null(strstr(r.text, "le=\"1.0\"}"));
	assert_non_null(strstr(r.text, "le=\"2560.0\"}"));
	unrender(&r);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void test_window_quantiles(void **state)
{
	(void)state;
	struct rendered r;
	render(&r, "m");
	static const struct {
		const char *hist, *window;
	} m[] = {
		{ "infertop_ttft_seconds", "infertop_ttft_window_seconds" },
		{ "infertop_itl_seconds", "infertop_itl_window_seconds" },
		{ "infertop_e2e_seconds", "infertop_e2e_window_seconds" },
		{ "infertop_tpot_seconds", "infertop_tpot_window_seconds" },
	};
	static const struct {
		double q;
		const char *label;
	} qs[] = { { 0.5, "quantile=0.5" }, { 0.9, "quantile=0.9" }, { 0.99, "quantile=0.99" } };
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		int64_t v[SYNTH_OK * SYNTH_GAPS];
		size_t n = samples_of(m[i].hist, v);
		qsort(v, n, sizeof *v, cmp_i64);
		for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
			/* Nearest rank, within the histogram's 2^-11. */
			size_t rank = (size_t)ceil(qs[k].q * (double)n - 1e-9);
			double want = (double)v[rank - 1] / 1e6;
			double got = sum_of(&r, m[i].window, qs[k].label);
			if (fabs(got - want) > want / 2048 + 1e-6)
				fail_msg("%s %s: %g, want %g", m[i].window, qs[k].label, got, want);
		}
	}
	assert_true(sum_of(&r, "infertop_window_seconds", NULL) == 2);
	/* The summary's _count and _sum are the whole run's, as the histogram's. */
	assert_true(sum_of(&r, "infertop_itl_window_seconds_count", NULL) == SYNTH_OK * SYNTH_GAPS);
	assert_true(sum_of(&r, "infertop_itl_window_seconds_sum", NULL) == sum_of(&r, "infertop_itl_seconds_sum", NULL));

	/* An empty window has no quantile samples (no data, not a 0), the
	 * whole-run figures stay. */
	stats_window_reset(r.s.e.stats, r.s.t0);
	free(r.text);
	struct run_view v;
	engine_view(&r.s.e, &v);
	r.text = exporter_text(&v, GEN, r.s.t0 + CLOCK_NS_PER_S, &r.len);
	assert_non_null(r.text);
	double x;
	assert_int_equal(prom_sum(r.text, r.len, "infertop_ttft_window_seconds", NULL, &x), 0);
	assert_non_null(strstr(r.text, "# TYPE infertop_ttft_window_seconds summary\n"));
	assert_true(sum_of(&r, "infertop_ttft_window_seconds_count", NULL) == SYNTH_OK);
	assert_true(sum_of(&r, "infertop_ttft_seconds_count", NULL) == SYNTH_OK);
	unrender(&r);
}

/* A view with nothing in it (before the run) still renders, and parses. */
/* client_metrics.def as the exposition needs it. */
static const struct {
	const char *key, *prom, *help;
	int pos;
	const struct buckets *b;
} cm[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, prom_pos, prom, \
		      buckets, prom_help, ...)                                                              \
	[STAT_##id] = { key, prom, prom_help, prom_pos, &buckets },
#include "infertop/client_metrics.def"
};

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* Every client metric the table exports is there, its histogram with
 * its help and bounds, then its window summary, in prom_pos order (the
 * histograms first, then the summaries); no other latency family; the
 * positions are 1..n, each once. */
static void test_client_metric_table(void **state)
{
	(void)state;
	int n = 0;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		assert_true(cm[m].pos >= 0 && cm[m].pos <= STAT_NMETRICS);
		n += cm[m].pos > 0;
		for (int k = 0; k < m; k++)
			if (cm[m].pos) {
				assert_int_not_equal(cm[k].pos, cm[m].pos);
				assert_string_not_equal(cm[k].prom, cm[m].prom);
			}
	}
	struct rendered r;
	render(&r, "m");
	const char *hist_at = r.text, *win_at = r.text;
	for (int pos = 1; pos <= n; pos++) {
		int m = -1;
		for (int k = 0; k < STAT_NMETRICS; k++)
			if (cm[k].pos == pos)
				m = k;
		if (m < 0)
			fail_msg("no metric at prom_pos %d of %d", pos, n);
		char want[512];
		snprintf(want, sizeof want, "# HELP infertop_%s_seconds %s\n# TYPE infertop_%s_seconds histogram\n",
			 cm[m].prom, cm[m].help, cm[m].prom);
		const char *h = strstr(hist_at, want);
		if (!h)
			fail_msg("%s: no histogram infertop_%s_seconds with its help after prom_pos %d", cm[m].key,
				 cm[m].prom, pos - 1);
		snprintf(want, sizeof want, "# TYPE infertop_%s_window_seconds summary\n", cm[m].prom);
		const char *w = strstr(win_at, want);
		if (!w)
			fail_msg("%s: no summary infertop_%s_window_seconds after prom_pos %d", cm[m].key, cm[m].prom,
				 pos - 1);
		assert_true(w > h);
		hist_at = h + 1;
		win_at = w + 1;
		char family[128];
		snprintf(family, sizeof family, "infertop_%s_seconds", cm[m].prom);
		struct prom_hist ph;
		assert_int_equal(prom_hist_collect(r.text, r.len, family, NULL, &ph), 0);
		assert_int_equal(ph.n, cm[m].b->n + 1);
	}
	/* The server's families are infertop_server_*; the client's latency
	 * ones are exactly the table's. */
	assert_int_equal(count_of(r.text, "_window_seconds summary\n"), n);
	assert_int_equal(count_of(r.text, "_seconds histogram\n"), n);
	unrender(&r);
}

static void test_empty_view(void **state)
{
	(void)state;
	struct run_view v = { 0 };
	size_t len = 99;
	char *text = exporter_text(&v, "g", 0, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	struct prom_error err;
	assert_true(prom_parse(text, len, 0, NULL, NULL, &err) >= 0);
	free(text);

	/* A fresh run: histograms empty, every bucket 0. */
	struct synth s;
	memset(&s, 0, sizeof s);
	s.cfg.window_ns = 30 * CLOCK_NS_PER_S;
	s.e.cfg = &s.cfg;
	s.e.stats = stats_new(s.cfg.window_ns, 0);
	assert_non_null(s.e.stats);
	engine_view(&s.e, &v);
	text = exporter_text(&v, "g", 0, &len);
	assert_non_null(text);
	struct prom_hist h;
	assert_int_equal(prom_hist_collect(text, len, "infertop_ttft_seconds", NULL, &h), 0);
	for (int i = 0; i < h.n; i++)
		assert_true(h.cum[i] == 0);
	assert_true(h.count == 0 && h.sum == 0);
	free(text);
	stats_free(s.e.stats);
}

/* A real run against the simulator (fixed timing: TTFT 30 ms, ITL 5 ms):
 * the exposition agrees with the run's own figures, the median TTFT falls
 * in the bucket that holds the configured 30 ms, and the simulator's
 * vllm:time_to_first_token_seconds has the very same bounds and count, so
 * the two overlay bucket for bucket. */
static void test_live_run(void **state)
{
	(void)state;
	struct enginefix f = { 0 };
	const char *sim[] = { "--timing", "fixed", "--ttft", "30ms", "--itl", "5ms", NULL };
	enginefix_sim(&f, sim);
	const char *args[] = { "-c", "4", "-n", "40", "--output-tokens", "8", "--metrics-url", "none", NULL };
	enginefix_engine(&f, args);
	engine_run(f.e);

	struct run_view v;
	engine_view(f.e, &v);
	assert_int_equal(v.state, ENGINE_DONE);
	size_t len;
	char *text = exporter_text(&v, GEN, v.t_end, &len);
	assert_non_null(text);
	struct rendered r = { .text = text, .len = len };
	assert_true(sum_of(&r, "infertop_requests_total", "outcome=ok") == (double)v.stats->run_c.completed);
	assert_true(sum_of(&r, "infertop_requests_total", "outcome=ok") == 40);
	assert_true(sum_of(&r, "infertop_output_tokens_total", NULL) == (double)v.stats->run_c.output_tokens);
	assert_true(sum_of(&r, "infertop_in_flight", NULL) == 0);

	struct prom_hist client;
	assert_int_equal(prom_hist_collect(text, len, "infertop_ttft_seconds", NULL, &client), 0);
	assert_true(client.count == 40);
	double lo, hi, q = prom_hist_quantile_bucket(&client, 0.5, &lo, &hi);
	if (!(lo == 0.02 && hi == 0.04))
		fail_msg("client TTFT median %g in (%g, %g], want (0.02, 0.04]", q, lo, hi);

	struct su_resp resp;
	assert_int_equal(su_request(f.sim.port, "GET", "/metrics", NULL, 5000, &resp), CURLE_OK);
	struct prom_hist server;
	assert_int_equal(prom_hist_collect(resp.body, resp.len, "vllm:time_to_first_token_seconds", NULL, &server), 0);
	assert_int_equal(server.n, client.n);
	for (int i = 0; i < client.n; i++)
		assert_true(server.le[i] == client.le[i]);
	assert_true(server.count == client.count);
	prom_hist_quantile_bucket(&server, 0.5, &lo, &hi);
	assert_true(lo == 0.02 && hi == 0.04);
	su_resp_free(&resp);
	free(text);
	enginefix_free(&f);
}

/* serve's runs one after another: the counters and histograms of a model
 * are the finished runs' plus the current one's (never back to 0), they
 * stay between runs, another model has series of its own, and the run id
 * is a label of infertop_run_info. */
static double total_of(const char *text, size_t len, const char *name, const char *matchers)
{
	double out = -1;
	if (prom_sum(text, len, name, matchers, &out) < 1)
		fail_msg("%s{%s}: no series", name, matchers ? matchers : "");
	return out;
}

static void test_totals_across_runs(void **state)
{
	(void)state;
	struct exporter_totals *t = exporter_totals_new();
	assert_non_null(t);
	size_t len;
	char *text = exporter_text_totals(NULL, t, GEN, 0, &len);
	assert_non_null(text);
	double n = -1;
	assert_int_equal(prom_sum(text, len, "infertop_requests_total", NULL, &n), 0); /* no run yet: no series */
	free(text);

	struct synth a, b;
	assert_int_equal(synth_init(&a, "m"), 0);
	assert_int_equal(synth_init(&b, "m"), 0);
	struct run_view va, vb;
	engine_view(&a.e, &va);
	engine_view(&b.e, &vb);
	/* Run a going on: its own counts. */
	text = exporter_text_totals(&va, t, GEN, a.t0, &len);
	assert_true(total_of(text, len, "infertop_requests_total", "outcome=ok") == SYNTH_OK);
	free(text);
	/* Over: between runs its final counts stay, the gauges of a run go. */
	exporter_totals_add(t, &va);
	assert_int_equal(exporter_totals_requests(t), SYNTH_OK + SYNTH_FAILED);
	text = exporter_text_totals(NULL, t, GEN, a.t0, &len);
	assert_true(total_of(text, len, "infertop_requests_total", "outcome=ok") == SYNTH_OK);
	assert_true(total_of(text, len, "infertop_ttft_seconds_count", NULL) == SYNTH_OK);
	assert_true(total_of(text, len, "infertop_run_active", NULL) == 0);
	assert_true(total_of(text, len, "infertop_runs_total", NULL) == 1);
	assert_int_equal(prom_sum(text, len, "infertop_in_flight", NULL, &n), 0);
	char want[80];
	snprintf(want, sizeof want, "run_id=\"%s\"} 1\n", va.run_id);
	assert_non_null(strstr(text, want));
	free(text);
	/* Run b, same model: added on top. */
	text = exporter_text_totals(&vb, t, GEN, b.t0, &len);
	assert_true(total_of(text, len, "infertop_requests_total", "outcome=ok") == 2 * SYNTH_OK);
	assert_true(total_of(text, len, "infertop_requests_total", "outcome=error") == 2 * SYNTH_FAILED);
	assert_true(total_of(text, len, "infertop_ttft_seconds_count", NULL) == 2 * SYNTH_OK);
	assert_true(total_of(text, len, "infertop_ttft_seconds_bucket", "le=+Inf") == 2 * SYNTH_OK);
	assert_true(total_of(text, len, "infertop_runs_total", NULL) == 2);
	free(text);
	exporter_totals_add(t, &vb);
	synth_free(&b);
	/* Another model: a series of its own; the first model's stay. */
	assert_int_equal(synth_init(&b, "other"), 0);
	engine_view(&b.e, &vb);
	text = exporter_text_totals(&vb, t, GEN, b.t0, &len);
	assert_true(total_of(text, len, "infertop_requests_total", "outcome=ok,model=m") == 2 * SYNTH_OK);
	assert_true(total_of(text, len, "infertop_requests_total", "outcome=ok,model=other") == SYNTH_OK);
	free(text);
	synth_free(&b);
	synth_free(&a);
	exporter_totals_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parses_strictly),
		cmocka_unit_test(test_counters_and_gauges),
		cmocka_unit_test(test_incomplete),
		cmocka_unit_test(test_histograms),
		cmocka_unit_test(test_window_quantiles),
		cmocka_unit_test(test_empty_view),
		cmocka_unit_test(test_client_metric_table),
		cmocka_unit_test(test_live_run),
		cmocka_unit_test(test_totals_across_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
