/* Server metric maps: every server fixture gives the right canonical
 * values and is detected as its server; engines and ranks combine; rates
 * and window percentiles come from deltas with counter resets handled;
 * missing metrics stay unknown; DCGM parsing and energy per token;
 * --watch-metric; the JSON block and the progress fragment. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/profile.h"
#include "infertop/prom.h"
#include "infertop/server.h"
#include "testutil.h"

#define S_NS 1000000000LL

static struct profile_tracker *tracker(int want, const char *const *watch, size_t nwatch, int64_t window_ns)
{
	char err[256];
	struct profile_tracker *t = profile_tracker_new(want, watch, nwatch, window_ns, S_NS, err, sizeof err);
	if (!t)
		fail_msg("profile_tracker_new: %s", err);
	return t;
}

/* Sum of a metric straight from the parser: the oracle for single series. */
static double psum(const char *text, size_t len, const char *name, const char *m)
{
	double v;
	assert_true(prom_sum(text, len, name, m, &v) > 0);
	return v;
}

static void update(struct profile_tracker *t, const char *text, int64_t now, struct server_state *st)
{
	char err[256];
	if (profile_tracker_update(t, text, strlen(text), 0, now, st, err, sizeof err) != 0)
		fail_msg("update: %s", err);
}

/* ---- detection ---- */

static void test_detect_fixtures(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		int want;
	} cases[] = {
		{ "prom/vllm.txt", PROFILE_VLLM },	   { "prom/vllm_old.txt", PROFILE_VLLM },
		{ "prom/openmetrics.txt", PROFILE_VLLM },  { "prom/sglang.txt", PROFILE_SGLANG },
		{ "prom/sglang_underscore.txt", PROFILE_SGLANG }, { "prom/tgi.txt", PROFILE_TGI },
		{ "llamacpp/metrics_during.txt", PROFILE_LLAMACPP }, { "llamacpp/metrics_idle.txt", PROFILE_LLAMACPP },
		{ "prom/trtllm.txt", PROFILE_TRTLLM },	   { "prom/triton.txt", PROFILE_TRITON },
		{ "prom/nim.txt", PROFILE_NIM },	   { "prom/lmdeploy.txt", PROFILE_LMDEPLOY },
		{ "prom/dcgm.txt", PROFILE_NONE },	   { "prom/edge.txt", PROFILE_NONE },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len;
		char *text = testutil_fixture(NULL, cases[i].file, &len);
		struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
		char err[256];
		unsigned flags = strstr(cases[i].file, "openmetrics") ? PROM_OPENMETRICS : 0;
		const struct profile_raw *r = profile_extract(t, text, len, flags, err, sizeof err);
		assert_non_null(r);
		if (r->profile != cases[i].want)
			fail_msg("%s: detected %s, want %s", cases[i].file, profile_name(r->profile),
				 profile_name(cases[i].want));
		/* Detection locks in only through update. */
		assert_int_equal(profile_tracker_profile(t), PROFILE_AUTO);
		struct server_state st;
		server_state_init(&st);
		assert_int_equal(profile_tracker_update(t, text, len, flags, S_NS, &st, err, sizeof err), 0);
		assert_int_equal(profile_tracker_profile(t), cases[i].want);
		assert_string_equal(st.detected, cases[i].want == PROFILE_NONE ? "unknown" : profile_name(cases[i].want));
		if (cases[i].want == PROFILE_NONE)
			assert_non_null(strstr(st.note, "no known"));
		profile_tracker_free(t);
		free(text);
	}
}

/* Every server of servers.def has a capture of its real /metrics at
 * tests/fixtures/prom/<name>.txt, detected as that server, with the
 * scheduler's two gauges read: adding a server to the table without one
 * fails here, and needs no line in this file. */
static void test_every_server_fixture(void **state)
{
	(void)state;
	for (int p = 0; p < PROFILE_COUNT; p++) {
		char file[128];
		snprintf(file, sizeof file, "prom/%s.txt", profile_name(p));
		size_t len;
		char *text = testutil_fixture(NULL, file, &len);
		struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
		char err[256];
		struct server_state st;
		server_state_init(&st);
		if (profile_tracker_update(t, text, len, 0, S_NS, &st, err, sizeof err) != 0)
			fail_msg("%s: %s", file, err);
		if (profile_tracker_profile(t) != p)
			fail_msg("%s: detected %s", file, profile_name(profile_tracker_profile(t)));
		assert_string_equal(st.detected, profile_name(p));
		if (!st.gauge[SRV_RUNNING].valid || !st.gauge[SRV_WAITING].valid)
			fail_msg("%s: running/waiting not read", file);
		profile_tracker_free(t);
		free(text);
	}
}

/* ---- canonical gauges from each fixture ---- */

struct expect {
	const char *file;
	double running, waiting, kv, kv_max; /* NAN = must be unknown */
	double prefix;                       /* gauge-based prefix hit rate, NAN = unknown after 1 scrape */
};

static void check_value(const char *file, const char *what, const struct server_value *v, double want)
{
	if (isnan(want)) {
		if (v->valid)
			fail_msg("%s: %s should be unknown, got %g", file, what, v->v);
		return;
	}
	if (!v->valid)
		fail_msg("%s: %s unknown, want %g", file, what, want);
	if (fabs(v->v - want) > 1e-9 * (1 + fabs(want)))
		fail_msg("%s: %s = %.12g, want %.12g", file, what, v->v, want);
}

static void test_fixture_values(void **state)
{
	(void)state;
	/* Values read off the fixture files. SGLang repeats each gauge per
	 * tp_rank: dp ranks add (12 + 9), tp ranks do not (not 42). */
	static const struct expect cases[] = {
		{ "prom/vllm.txt", 5, 5, (0.4321 + 0.1234) / 2, 0.4321, NAN },
		{ "prom/vllm_old.txt", 7, 12, 0.9731, 0.9731, NAN /* -1: caching off */ },
		{ "prom/sglang.txt", 21, 8, (0.61 + 0.55) / 2, 0.61, NAN /* counters: needs 2 scrapes */ },
		{ "prom/sglang_underscore.txt", 4, 2, 0.18, 0.18, 0.0 },
		{ "prom/tgi.txt", 6, 2, NAN, NAN, NAN },
		{ "llamacpp/metrics_during.txt", 8, 0, NAN, NAN, NAN },
		{ "prom/trtllm.txt", 16, 4, 0.57, 0.57, 0.42 },
		{ "prom/triton.txt", 6, 3, 0.4375, 0.4375, NAN },
		{ "prom/nim.txt", 4, 2, 0.27, 0.27, NAN },
		{ "prom/lmdeploy.txt", 8, 3, 0.66, 0.66, NAN },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct expect *c = &cases[i];
		size_t len;
		char *text = testutil_fixture(NULL, c->file, &len);
		struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
		struct server_state st;
		server_state_init(&st);
		char err[256];
		assert_int_equal(profile_tracker_update(t, text, len, 0, 5 * S_NS, &st, err, sizeof err), 0);
		check_value(c->file, "running", &st.gauge[SRV_RUNNING], c->running);
		check_value(c->file, "waiting", &st.gauge[SRV_WAITING], c->waiting);
		check_value(c->file, "kv", &st.gauge[SRV_KV_USAGE], c->kv);
		check_value(c->file, "kv max", &st.gauge[SRV_KV_USAGE_MAX], c->kv_max);
		check_value(c->file, "prefix", &st.gauge[SRV_PREFIX_HIT], c->prefix);
		/* One scrape: no rate, no window percentile yet; never a 0. */
		check_value(c->file, "gen tok/s", &st.gauge[SRV_GEN_TOK_S], NAN);
		check_value(c->file, "preempt/s", &st.gauge[SRV_PREEMPT_RATE], NAN);
		for (int l = 0; l < SRVL_N; l++) {
			check_value(c->file, "p50", &st.p50[l], NAN);
			check_value(c->file, "run p50", &st.run_p50[l], NAN);
		}
		/* The run aggregates took the first sample. */
		if (!isnan(c->running)) {
			assert_int_equal(st.agg[SRV_RUNNING].n, 1);
			assert_true(st.agg[SRV_RUNNING].min == st.agg[SRV_RUNNING].max);
		}
		profile_tracker_free(t);
		free(text);
	}
}

/* The same numbers through the parser's own sums, for the single-engine
 * fixtures whose combining is plain addition. */
static void test_fixture_values_vs_prom_sum(void **state)
{
	(void)state;
	static const struct {
		const char *file, *running, *waiting, *rm, *wm;
	} cases[] = {
		{ "prom/vllm.txt", "vllm:num_requests_running", "vllm:num_requests_waiting", NULL, NULL },
		{ "prom/tgi.txt", "tgi_batch_current_size", "tgi_queue_size", NULL, NULL },
		{ "prom/triton.txt", "nv_trt_llm_request_metrics", "nv_trt_llm_request_metrics", "request_type=active",
		  "request_type=waiting" },
		{ "prom/nim.txt", "num_requests_running", "num_requests_waiting", NULL, NULL },
		{ "prom/lmdeploy.txt", "lmdeploy:num_requests_running", "lmdeploy:num_requests_waiting", NULL, NULL },
		{ "prom/trtllm.txt", "trtllm_num_requests_running", "trtllm_num_requests_waiting", NULL, NULL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len;
		char *text = testutil_fixture(NULL, cases[i].file, &len);
		struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
		struct server_state st;
		server_state_init(&st);
		char err[256];
		assert_int_equal(profile_tracker_update(t, text, len, 0, S_NS, &st, err, sizeof err), 0);
		check_value(cases[i].file, "running", &st.gauge[SRV_RUNNING],
			    psum(text, len, cases[i].running, cases[i].rm));
		check_value(cases[i].file, "waiting", &st.gauge[SRV_WAITING],
			    psum(text, len, cases[i].waiting, cases[i].wm));
		profile_tracker_free(t);
		free(text);
	}
}

/* ---- histograms against prom_hist_collect ---- */

static void hist_eq(const char *what, const struct prom_hist *a, const struct prom_hist *b, double le_scale)
{
	if (a->n != b->n)
		fail_msg("%s: %d buckets, want %d", what, a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		double want = isinf(b->le[i]) ? b->le[i] : b->le[i] * le_scale;
		if (fabs(a->le[i] - want) > 1e-12 * fabs(want) || a->cum[i] != b->cum[i])
			fail_msg("%s: bucket %d le %g cum %g, want le %g cum %g", what, i, a->le[i], a->cum[i], want,
				 b->cum[i]);
	}
	assert_true(a->count == b->count);
	assert_true(fabs(a->sum - b->sum * le_scale) <= 1e-9 * fabs(b->sum * le_scale));
}

static void test_fixture_histograms(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		int lat;
		const char *family, *matchers;
		double scale;
	} cases[] = {
		{ "prom/vllm.txt", SRVL_TTFT, "vllm:time_to_first_token_seconds", NULL, 1 },
		{ "prom/vllm.txt", SRVL_ITL, "vllm:inter_token_latency_seconds", NULL, 1 },
		{ "prom/vllm.txt", SRVL_E2E, "vllm:e2e_request_latency_seconds", NULL, 1 },
		{ "prom/vllm.txt", SRVL_QUEUE, "vllm:request_queue_time_seconds", NULL, 1 },
		{ "prom/vllm_old.txt", SRVL_ITL, "vllm:time_per_output_token_seconds", NULL, 1 },
		{ "prom/sglang.txt", SRVL_TTFT, "sglang:time_to_first_token_seconds", NULL, 1 },
		{ "prom/sglang.txt", SRVL_ITL, "sglang:inter_token_latency_seconds", NULL, 1 },
		{ "prom/sglang.txt", SRVL_QUEUE, "sglang:queue_time_seconds", NULL, 1 },
		{ "prom/sglang_underscore.txt", SRVL_ITL, "sglang_time_per_output_token_seconds", NULL, 1 },
		{ "prom/tgi.txt", SRVL_ITL, "tgi_request_mean_time_per_token_duration", NULL, 1 },
		{ "prom/tgi.txt", SRVL_E2E, "tgi_request_duration", NULL, 1 },
		{ "prom/tgi.txt", SRVL_QUEUE, "tgi_request_queue_duration", NULL, 1 },
		{ "prom/trtllm.txt", SRVL_TTFT, "trtllm_time_to_first_token_seconds", NULL, 1 },
		{ "prom/trtllm.txt", SRVL_QUEUE, "trtllm_request_queue_time_seconds", NULL, 1 },
		/* Triton: milliseconds, and only the TensorRT-LLM model's series. */
		{ "prom/triton.txt", SRVL_TTFT, "nv_inference_first_response_histogram_ms", "model=tensorrt_llm", 1e-3 },
		{ "prom/nim.txt", SRVL_ITL, "time_per_output_token_seconds", NULL, 1 },
		{ "prom/lmdeploy.txt", SRVL_ITL, "lmdeploy:iter_token_latency", NULL, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len;
		char *text = testutil_fixture(NULL, cases[i].file, &len);
		struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
		char err[256];
		const struct profile_raw *r = profile_extract(t, text, len, 0, err, sizeof err);
		assert_non_null(r);
		struct prom_hist want;
		assert_int_equal(prom_hist_collect(text, len, cases[i].family, cases[i].matchers, &want), 0);
		if (!r->hist_valid[cases[i].lat])
			fail_msg("%s: %s missing", cases[i].file, cases[i].family);
		hist_eq(cases[i].family, &r->hist[cases[i].lat], &want, cases[i].scale);
		profile_tracker_free(t);
		free(text);
	}
	/* And the ones a server lacks stay unknown. */
	static const struct {
		const char *file;
		int lat;
	} none[] = {
		{ "prom/tgi.txt", SRVL_TTFT },
		{ "llamacpp/metrics_during.txt", SRVL_TTFT },
		{ "llamacpp/metrics_during.txt", SRVL_E2E },
		{ "prom/nim.txt", SRVL_QUEUE },
		{ "prom/triton.txt", SRVL_ITL },
	};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
		size_t len;
		char *text = testutil_fixture(NULL, none[i].file, &len);
		struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
		char err[256];
		const struct profile_raw *r = profile_extract(t, text, len, 0, err, sizeof err);
		assert_non_null(r);
		assert_false(r->hist_valid[none[i].lat]);
		profile_tracker_free(t);
		free(text);
	}
}

/* ---- synthetic vLLM text for deltas ---- */

struct vstate {
	double running[2], waiting[2], kv[2];
	double gen[2], prompt[2], preempt[2], hits[2], queries[2];
	double ttft_cum[2][4]; /* le 0.1, 0.5, 1, +Inf */
	double ttft_sum[2];
	int engines;
};

static const double ttft_le[4] = { 0.1, 0.5, 1.0, INFINITY };

static char *vtext(const struct vstate *v)
{
	static char buf[16384];
	size_t n = 0;
#define P(...) n += (size_t)snprintf(buf + n, sizeof buf - n, __VA_ARGS__)
	P("# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n");
	for (int e = 0; e < v->engines; e++)
		P("vllm:num_requests_running{engine=\"%d\",model_name=\"m\"} %g\n", e, v->running[e]);
	P("# TYPE vllm:num_requests_waiting gauge\n");
	for (int e = 0; e < v->engines; e++)
		P("vllm:num_requests_waiting{engine=\"%d\",model_name=\"m\"} %g\n", e, v->waiting[e]);
	/* A longer name sharing the prefix must not be summed in. */
	P("vllm:num_requests_waiting_by_reason{engine=\"0\",reason=\"capacity\"} 999\n");
	for (int e = 0; e < v->engines; e++)
		P("vllm:kv_cache_usage_perc{engine=\"%d\",model_name=\"m\"} %g\n", e, v->kv[e]);
	P("# TYPE vllm:generation_tokens_total counter\n");
	for (int e = 0; e < v->engines; e++) {
		P("vllm:generation_tokens_total{engine=\"%d\",model_name=\"m\"} %.17g\n", e, v->gen[e]);
		P("vllm:prompt_tokens_total{engine=\"%d\",model_name=\"m\"} %.17g\n", e, v->prompt[e]);
		P("vllm:num_preemptions_total{engine=\"%d\",model_name=\"m\"} %.17g\n", e, v->preempt[e]);
		P("vllm:prefix_cache_hits_total{engine=\"%d\",model_name=\"m\"} %.17g\n", e, v->hits[e]);
		P("vllm:prefix_cache_queries_total{engine=\"%d\",model_name=\"m\"} %.17g\n", e, v->queries[e]);
	}
	P("# TYPE vllm:time_to_first_token_seconds histogram\n");
	for (int e = 0; e < v->engines; e++) {
		for (int b = 0; b < 4; b++) {
			if (isinf(ttft_le[b]))
				P("vllm:time_to_first_token_seconds_bucket{engine=\"%d\",le=\"+Inf\"} %.17g\n", e,
				  v->ttft_cum[e][b]);
			else
				P("vllm:time_to_first_token_seconds_bucket{engine=\"%d\",le=\"%g\"} %.17g\n", e,
				  ttft_le[b], v->ttft_cum[e][b]);
		}
		P("vllm:time_to_first_token_seconds_sum{engine=\"%d\"} %.17g\n", e, v->ttft_sum[e]);
		P("vllm:time_to_first_token_seconds_count{engine=\"%d\"} %.17g\n", e, v->ttft_cum[e][3]);
	}
#undef P
	assert_true(n < sizeof buf);
	return buf;
}

/* What a window percentile must be: the histogram of the differences,
 * written out as text and read back by the parser's own quantile. */
static double oracle_quantile(const struct vstate *a, const struct vstate *b, double q, double *mean)
{
	char txt[2048];
	size_t n = 0;
	double cnt = 0, sum = 0;
	for (int k = 0; k < 4; k++) {
		double d = 0;
		for (int e = 0; e < a->engines; e++)
			d += b->ttft_cum[e][k] - a->ttft_cum[e][k];
		if (isinf(ttft_le[k]))
			n += (size_t)snprintf(txt + n, sizeof txt - n, "h_bucket{le=\"+Inf\"} %.17g\n", d);
		else
			n += (size_t)snprintf(txt + n, sizeof txt - n, "h_bucket{le=\"%g\"} %.17g\n", ttft_le[k], d);
		cnt = d;
	}
	for (int e = 0; e < a->engines; e++)
		sum += b->ttft_sum[e] - a->ttft_sum[e];
	*mean = sum / cnt;
	struct prom_hist h;
	assert_int_equal(prom_hist_collect(txt, n, "h", NULL, &h), 0);
	return prom_hist_quantile(&h, q);
}

static void test_rates_and_window_percentiles(void **state)
{
	(void)state;
	struct vstate a = { .engines = 2 };
	a.running[0] = 3, a.running[1] = 5;
	a.waiting[0] = 1, a.waiting[1] = 0;
	a.kv[0] = 0.2, a.kv[1] = 0.6;
	a.gen[0] = 1000, a.gen[1] = 2000;
	a.prompt[0] = 5000, a.prompt[1] = 100;
	a.preempt[0] = 1, a.preempt[1] = 0;
	a.hits[0] = 10, a.hits[1] = 0;
	a.queries[0] = 100, a.queries[1] = 100;
	double c0[4] = { 1, 3, 5, 6 }, c1[4] = { 0, 2, 2, 2 };
	memcpy(a.ttft_cum[0], c0, sizeof c0);
	memcpy(a.ttft_cum[1], c1, sizeof c1);
	a.ttft_sum[0] = 2.5, a.ttft_sum[1] = 0.6;

	struct vstate b = a;
	b.gen[0] += 300, b.gen[1] += 500;   /* 800 in 2 s */
	b.prompt[0] += 4000;                /* 4000 in 2 s */
	b.preempt[1] += 3;                  /* 3 in 2 s */
	b.hits[0] += 30, b.hits[1] += 10;   /* 40 of 200 */
	b.queries[0] += 100, b.queries[1] += 100;
	double d0[4] = { 4, 10, 14, 16 }, d1[4] = { 0, 5, 9, 10 };
	memcpy(b.ttft_cum[0], d0, sizeof d0);
	memcpy(b.ttft_cum[1], d1, sizeof d1);
	b.ttft_sum[0] = 7.5, b.ttft_sum[1] = 6.1;

	struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	update(t, vtext(&a), 10 * S_NS, &st);
	update(t, vtext(&b), 12 * S_NS, &st);
	check_value("synthetic", "running", &st.gauge[SRV_RUNNING], 8);
	check_value("synthetic", "waiting", &st.gauge[SRV_WAITING], 1);
	check_value("synthetic", "kv mean", &st.gauge[SRV_KV_USAGE], 0.4);
	check_value("synthetic", "kv max", &st.gauge[SRV_KV_USAGE_MAX], 0.6);
	check_value("synthetic", "gen tok/s", &st.gauge[SRV_GEN_TOK_S], 400);
	check_value("synthetic", "prompt tok/s", &st.gauge[SRV_PROMPT_TOK_S], 2000);
	check_value("synthetic", "preempt/s", &st.gauge[SRV_PREEMPT_RATE], 1.5);
	check_value("synthetic", "prefix hit", &st.gauge[SRV_PREFIX_HIT], 0.2);
	double mean;
	for (int i = 0; i < 3; i++) {
		static const double qs[] = { 0.5, 0.9, 0.99 };
		double want = oracle_quantile(&a, &b, qs[i], &mean);
		const struct server_value *v = i == 0 ? &st.p50[SRVL_TTFT] : i == 1 ? &st.p90[SRVL_TTFT] : &st.p99[SRVL_TTFT];
		check_value("synthetic", "ttft quantile", v, want);
	}
	check_value("synthetic", "ttft mean", &st.mean[SRVL_TTFT], mean);
	/* Over the run (first scrape to now) it is the same pair here. */
	check_value("synthetic", "run ttft p50", &st.run_p50[SRVL_TTFT], oracle_quantile(&a, &b, 0.5, &mean));
	check_value("synthetic", "run gen", &st.run_gen_tokens, 800);
	check_value("synthetic", "run preempt", &st.run_preemptions, 3);
	/* Missing families stay unknown, not 0. */
	check_value("synthetic", "itl p50", &st.p50[SRVL_ITL], NAN);
	check_value("synthetic", "e2e mean", &st.mean[SRVL_E2E], NAN);
	/* Aggregates over the two scrapes. */
	assert_int_equal(st.agg[SRV_RUNNING].n, 2);
	assert_true(st.agg[SRV_KV_USAGE_MAX].max == 0.6);

	update(t, vtext(&b), 13 * S_NS, &st);
	update(t, vtext(&b), 14 * S_NS, &st);
	/* The window (30 s) still reaches back to the first scrape. */
	assert_true(st.p50[SRVL_TTFT].valid);
	profile_tracker_free(t);

	t = tracker(PROFILE_AUTO, NULL, 0, 2 * S_NS); /* window 2 s, interval 1 s: span 2.5 s */
	server_state_init(&st);
	update(t, vtext(&a), 10 * S_NS, &st);
	update(t, vtext(&b), 11 * S_NS, &st);
	update(t, vtext(&b), 12 * S_NS, &st);
	update(t, vtext(&b), 13 * S_NS, &st);
	update(t, vtext(&b), 14 * S_NS, &st);
	check_value("idle", "ttft p50", &st.p50[SRVL_TTFT], NAN);
	check_value("idle", "gen tok/s", &st.gauge[SRV_GEN_TOK_S], 0);
	check_value("idle", "prefix hit", &st.gauge[SRV_PREFIX_HIT], NAN); /* no queries: unknown */
	profile_tracker_free(t);
}

/* The window baseline is the oldest scrape inside it. */
static void test_window_baseline(void **state)
{
	(void)state;
	struct vstate v = { .engines = 1 };
	v.ttft_cum[0][3] = 0;
	struct profile_tracker *t = tracker(PROFILE_VLLM, NULL, 0, 2 * S_NS); /* span 2.5 s */
	struct server_state st;
	server_state_init(&st);
	double gen_at[5];
	for (int i = 0; i < 5; i++) {
		v.gen[0] = 100.0 * i * i; /* accelerating */
		gen_at[i] = v.gen[0];
		update(t, vtext(&v), (int64_t)i * S_NS, &st);
	}
	/* At t = 4 s the oldest scrape within 2.5 s is the one at 2 s. */
	check_value("window", "gen tok/s", &st.gauge[SRV_GEN_TOK_S], (gen_at[4] - gen_at[2]) / 2);
	/* A scrape after a long gap has no baseline in the window. */
	v.gen[0] += 50;
	update(t, vtext(&v), 60 * S_NS, &st);
	check_value("gap", "gen tok/s", &st.gauge[SRV_GEN_TOK_S], NAN);
	/* ... but the run total still spans everything. */
	check_value("gap", "run gen", &st.run_gen_tokens, gen_at[4] + 50);
	profile_tracker_free(t);
}

static void test_counter_reset(void **state)
{
	(void)state;
	struct vstate v = { .engines = 1 };
	struct profile_tracker *t = tracker(PROFILE_VLLM, NULL, 0, 10 * S_NS);
	struct server_state st;
	server_state_init(&st);
	v.gen[0] = 1000;
	double c[4] = { 5, 10, 10, 10 };
	memcpy(v.ttft_cum[0], c, sizeof c);
	v.ttft_sum[0] = 2;
	update(t, vtext(&v), 0, &st);
	v.gen[0] = 1500;
	double c2[4] = { 5, 20, 30, 30 };
	memcpy(v.ttft_cum[0], c2, sizeof c2);
	v.ttft_sum[0] = 12;
	update(t, vtext(&v), 1 * S_NS, &st);
	check_value("before", "gen tok/s", &st.gauge[SRV_GEN_TOK_S], 500);
	/* The server restarted: counters began again at 0. 500 before it and
	 * 200 after make 700 in 2 s, never a negative rate. */
	v.gen[0] = 200;
	double c3[4] = { 1, 2, 2, 2 };
	memcpy(v.ttft_cum[0], c3, sizeof c3);
	v.ttft_sum[0] = 0.4;
	update(t, vtext(&v), 2 * S_NS, &st);
	check_value("reset", "gen tok/s", &st.gauge[SRV_GEN_TOK_S], 350);
	check_value("reset", "run gen", &st.run_gen_tokens, 700);
	/* Histogram: counts went down, so the delta is the new histogram. */
	struct vstate zero = { .engines = 1 };
	double mean;
	check_value("reset", "ttft p50", &st.p50[SRVL_TTFT], oracle_quantile(&zero, &v, 0.5, &mean));
	check_value("reset", "ttft mean", &st.mean[SRVL_TTFT], mean);
	profile_tracker_free(t);
}

/* A metric that vanishes and comes back never yields a delta across the gap. */
static void test_counter_gap(void **state)
{
	(void)state;
	struct profile_tracker *t = tracker(PROFILE_VLLM, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	update(t, "vllm:num_requests_running 1\nvllm:generation_tokens_total 100\n", 0, &st);
	update(t, "vllm:num_requests_running 1\n", S_NS, &st);
	check_value("gap", "gen", &st.gauge[SRV_GEN_TOK_S], NAN);
	update(t, "vllm:num_requests_running 1\nvllm:generation_tokens_total 5000\n", 2 * S_NS, &st);
	check_value("gap", "gen", &st.gauge[SRV_GEN_TOK_S], NAN);
	update(t, "vllm:num_requests_running 1\nvllm:generation_tokens_total 5100\n", 3 * S_NS, &st);
	check_value("gap", "gen", &st.gauge[SRV_GEN_TOK_S], 100);
	profile_tracker_free(t);
}

/* Both the current and an older name: the current one is read. */
static void test_name_precedence(void **state)
{
	(void)state;
	struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	update(t, "vllm:gpu_cache_usage_perc 0.9\nvllm:kv_cache_usage_perc 0.3\n", 0, &st);
	check_value("both", "kv", &st.gauge[SRV_KV_USAGE], 0.3);
	update(t, "vllm:kv_cache_usage_perc 0.4\nvllm:gpu_cache_usage_perc 0.9\n", S_NS, &st);
	check_value("both", "kv", &st.gauge[SRV_KV_USAGE], 0.4);
	update(t, "vllm:gpu_cache_usage_perc 0.9\n", 2 * S_NS, &st);
	check_value("old only", "kv", &st.gauge[SRV_KV_USAGE], 0.9);
	profile_tracker_free(t);
}

/* vLLM's prefix-cache counters by their V1 names before 0.10: the hit
 * rate from their deltas; with both names (0.10), the current ones. */
static void test_vllm_old_prefix_counters(void **state)
{
	(void)state;
	static const char old[] = "vllm:num_requests_running{engine=\"0\"} 1\n"
				  "vllm:gpu_prefix_cache_queries_total{engine=\"0\"} %g\n"
				  "vllm:gpu_prefix_cache_hits_total{engine=\"0\"} %g\n";
	char a[512], b[512];
	snprintf(a, sizeof a, old, 1000.0, 100.0);
	snprintf(b, sizeof b, old, 1400.0, 400.0);
	struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	update(t, a, 0, &st);
	assert_string_equal(st.detected, "vllm");
	check_value("vllm 0.8", "prefix", &st.gauge[SRV_PREFIX_HIT], NAN);
	update(t, b, S_NS, &st);
	check_value("vllm 0.8", "prefix", &st.gauge[SRV_PREFIX_HIT], 0.75);
	profile_tracker_free(t);

	static const char both[] = "vllm:gpu_prefix_cache_queries_total{engine=\"0\"} %g\n"
				   "vllm:gpu_prefix_cache_hits_total{engine=\"0\"} %g\n"
				   "vllm:prefix_cache_queries_total{engine=\"0\"} %g\n"
				   "vllm:prefix_cache_hits_total{engine=\"0\"} %g\n";
	snprintf(a, sizeof a, both, 1000.0, 100.0, 2000.0, 0.0);
	snprintf(b, sizeof b, both, 1400.0, 400.0, 2400.0, 100.0);
	t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	server_state_init(&st);
	update(t, a, 0, &st);
	update(t, b, S_NS, &st);
	check_value("vllm 0.10", "prefix", &st.gauge[SRV_PREFIX_HIT], 0.25);
	profile_tracker_free(t);
}

static void test_sglang_ranks_and_prefix(void **state)
{
	(void)state;
	/* Two dp ranks, each with two tp ranks repeating the same state. */
	static const char fmt[] =
		"sglang:num_running_reqs{dp_rank=\"0\",tp_rank=\"0\"} 4\n"
		"sglang:num_running_reqs{dp_rank=\"0\",tp_rank=\"1\"} 4\n"
		"sglang:num_running_reqs{dp_rank=\"1\",tp_rank=\"0\"} 6\n"
		"sglang:num_running_reqs{dp_rank=\"1\",tp_rank=\"1\"} 6\n"
		"sglang:token_usage{dp_rank=\"0\",tp_rank=\"0\"} 0.3\n"
		"sglang:token_usage{dp_rank=\"0\",tp_rank=\"1\"} 0.3\n"
		"sglang:token_usage{dp_rank=\"1\",tp_rank=\"0\"} 0.9\n"
		"sglang:token_usage{dp_rank=\"1\",tp_rank=\"1\"} 0.9\n"
		"sglang:cache_hit_rate{dp_rank=\"0\"} 0.99\n"
		"sglang:prompt_tokens_total %g\n"
		"sglang:cached_tokens_total %g\n";
	char a[2048], b[2048];
	snprintf(a, sizeof a, fmt, 1000.0, 100.0);
	snprintf(b, sizeof b, fmt, 2000.0, 350.0);
	struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	update(t, a, 0, &st);
	assert_string_equal(st.detected, "sglang");
	check_value("sglang", "running", &st.gauge[SRV_RUNNING], 10);
	check_value("sglang", "kv mean", &st.gauge[SRV_KV_USAGE], 0.6);
	check_value("sglang", "kv max", &st.gauge[SRV_KV_USAGE_MAX], 0.9);
	/* Counters present: hit rate comes from their deltas, not the gauge. */
	check_value("sglang", "prefix", &st.gauge[SRV_PREFIX_HIT], NAN);
	update(t, b, S_NS, &st);
	check_value("sglang", "prefix", &st.gauge[SRV_PREFIX_HIT], 0.25);
	check_value("sglang", "prompt tok/s", &st.gauge[SRV_PROMPT_TOK_S], 1000);
	profile_tracker_free(t);
}

static void test_triton_units_and_model(void **state)
{
	(void)state;
	/* The ensemble's series must not be added to the backend's. */
	static const char fmt[] =
		"nv_inference_request_success{model=\"ensemble\",version=\"1\"} %g\n"
		"nv_inference_request_success{model=\"tensorrt_llm\",version=\"1\"} %g\n"
		"nv_inference_queue_duration_us{model=\"ensemble\",version=\"1\"} %g\n"
		"nv_inference_queue_duration_us{model=\"tensorrt_llm\",version=\"1\"} %g\n"
		"nv_inference_request_duration_us{model=\"tensorrt_llm\",version=\"1\"} %g\n"
		"nv_inference_pending_request_count{model=\"ensemble\",version=\"1\"} 7\n"
		"nv_inference_pending_request_count{model=\"tensorrt_llm\",version=\"1\"} 7\n"
		"nv_trt_llm_request_metrics{model=\"tensorrt_llm\",request_type=\"active\",version=\"1\"} 5\n"
		"nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"tensorrt_llm\",version=\"1\"} 300\n"
		"nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\",model=\"tensorrt_llm\",version=\"1\"} 1200\n";
	char a[4096], b[4096];
	snprintf(a, sizeof a, fmt, 10.0, 10.0, 5e6, 1e6, 4e6);
	snprintf(b, sizeof b, fmt, 20.0, 20.0, 9e9, 1e6 + 3e6, 4e6 + 25e6);
	struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	update(t, a, 0, &st);
	assert_string_equal(st.detected, "triton");
	check_value("triton", "running", &st.gauge[SRV_RUNNING], 5);
	/* No request_type="waiting": the backend model's pending count. */
	check_value("triton", "waiting", &st.gauge[SRV_WAITING], 7);
	/* No fraction: used / max. */
	check_value("triton", "kv", &st.gauge[SRV_KV_USAGE], 0.25);
	update(t, b, S_NS, &st);
	/* 3e6 us over 10 requests = 0.3 s queued each; 25e6 us = 2.5 s each. */
	check_value("triton", "queue mean", &st.mean[SRVL_QUEUE], 0.3);
	check_value("triton", "e2e mean", &st.mean[SRVL_E2E], 2.5);
	check_value("triton", "run queue mean", &st.run_mean[SRVL_QUEUE], 0.3);
	check_value("triton", "queue p50", &st.p50[SRVL_QUEUE], NAN);
	profile_tracker_free(t);

	/* The fixture: milliseconds become seconds. */
	size_t len;
	char *text = testutil_fixture(NULL, "prom/triton.txt", &len);
	t = tracker(PROFILE_TRITON, NULL, 0, 30 * S_NS);
	char err[256];
	const struct profile_raw *r = profile_extract(t, text, len, 0, err, sizeof err);
	assert_non_null(r);
	assert_true(r->hist_valid[SRVL_TTFT]);
	struct prom_hist ms;
	assert_int_equal(prom_hist_collect(text, len, "nv_inference_first_response_histogram_ms", "model=tensorrt_llm",
					   &ms),
			 0);
	assert_true(fabs(r->hist[SRVL_TTFT].sum - ms.sum / 1000) < 1e-9);
	assert_true(fabs(r->hist[SRVL_TTFT].le[0] - ms.le[0] / 1000) < 1e-12);
	profile_tracker_free(t);
	free(text);
}

static void test_given_profile_mismatch(void **state)
{
	(void)state;
	size_t len;
	char *text = testutil_fixture(NULL, "prom/sglang.txt", &len);
	struct profile_tracker *t = tracker(PROFILE_VLLM, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	char err[256];
	assert_int_equal(profile_tracker_update(t, text, len, 0, S_NS, &st, err, sizeof err), 0);
	assert_string_equal(st.detected, "vllm");
	assert_non_null(strstr(st.note, "sglang"));
	check_value("mismatch", "running", &st.gauge[SRV_RUNNING], NAN);
	profile_tracker_free(t);
	free(text);
}

static void test_not_metrics(void **state)
{
	(void)state;
	struct profile_tracker *t = tracker(PROFILE_AUTO, NULL, 0, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	st.gauge[SRV_RUNNING].valid = true;
	st.gauge[SRV_RUNNING].v = 3;
	char err[256];
	static const char garbage[] = "hello there\nthis is { not metrics\n";
	assert_int_equal(profile_tracker_update(t, garbage, strlen(garbage), 0, 0, &st, err, sizeof err), -1);
	assert_non_null(strstr(err, "line 1"));
	/* out untouched on failure */
	assert_true(st.gauge[SRV_RUNNING].valid);
	assert_int_equal(profile_tracker_update(t, "# only a comment\n", 17, 0, 0, &st, err, sizeof err), -1);
	assert_non_null(strstr(err, "no metrics"));
	/* A bad line among good ones is skipped and noted. */
	static const char mixed[] = "vllm:num_requests_running 2\nbad line here\n";
	assert_int_equal(profile_tracker_update(t, mixed, strlen(mixed), 0, 0, &st, err, sizeof err), 0);
	check_value("mixed", "running", &st.gauge[SRV_RUNNING], 2);
	assert_non_null(strstr(st.note, "line 2"));
	profile_invalidate_live(&st);
	assert_false(st.gauge[SRV_RUNNING].valid);
	assert_int_equal(st.agg[SRV_RUNNING].n, 1);
	profile_tracker_free(t);
}

/* ---- watch ---- */

static void test_watch_parse(void **state)
{
	(void)state;
	struct profile_watch_expr w;
	char err[160];
	assert_int_equal(profile_watch_parse("vllm:num_requests_running", &w, err, sizeof err), 0);
	assert_string_equal(w.name, "vllm:num_requests_running");
	assert_int_equal(w.nm, 0);
	assert_int_equal(profile_watch_parse(" x{a=\"1\", b = \"q\\\"uo,te}\\\\\" ,} ", &w, err, sizeof err), 0);
	assert_string_equal(w.name, "x");
	assert_int_equal(w.nm, 2);
	assert_string_equal(w.m[0].k, "a");
	assert_string_equal(w.m[0].v, "1");
	assert_string_equal(w.m[1].k, "b");
	assert_string_equal(w.m[1].v, "q\"uo,te}\\");
	assert_int_equal(profile_watch_parse("x{}", &w, err, sizeof err), 0);
	assert_int_equal(w.nm, 0);
	static const char *const bad[] = {
		"", "{a=\"1\"}", "1abc", "x{", "x{a}", "x{a=1}", "x{a=\"1\"", "x{a!=\"1\"}", "x{a=~\"1\"}",
		"x y", "x{a=\"1\"} z", "x{a=\"\\q\"}", "x{a=\"1\" b=\"2\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		if (profile_watch_parse(bad[i], &w, err, sizeof err) == 0)
			fail_msg("accepted bad expression '%s'", bad[i]);
		assert_true(err[0] != '\0');
	}
	/* The tracker refuses a bad one with the option named. */
	const char *ws[] = { "ok_metric", "bad{" };
	struct profile_tracker *t = profile_tracker_new(PROFILE_AUTO, ws, 2, S_NS, S_NS, err, sizeof err);
	assert_null(t);
	assert_non_null(strstr(err, "--watch-metric 'bad{'"));
}

static void test_watch_values(void **state)
{
	(void)state;
	size_t len;
	char *text = testutil_fixture(NULL, "prom/vllm.txt", &len);
	const char *ws[] = {
		"vllm:num_requests_running",
		"vllm:request_success_total{finished_reason=\"length\"}",
		"vllm:request_success_total{finished_reason=\"length\",engine=\"1\"}",
		"vllm:num_requests_running{absent_label=\"\"}",
		"no_such_metric",
		"vllm:generation_tokens_total",
	};
	const char *pm[] = { NULL, "finished_reason=length", "finished_reason=length,engine=1", "absent_label=",
			     NULL, NULL };
	struct profile_tracker *t = tracker(PROFILE_AUTO, ws, 6, 30 * S_NS);
	struct server_state st;
	server_state_init(&st);
	char err[256];
	assert_int_equal(profile_tracker_update(t, text, len, 0, S_NS, &st, err, sizeof err), 0);
	assert_int_equal(st.nwatch, 6);
	for (int i = 0; i < 6; i++) {
		assert_string_equal(st.watch[i].expr, ws[i]);
		double want;
		int n = prom_sum(text, len, i == 4 ? "no_such_metric" : (i == 5 ? "vllm:generation_tokens_total"
									: (i == 0 || i == 3 ? "vllm:num_requests_running"
										      : "vllm:request_success_total")),
				 pm[i], &want);
		if (n == 0)
			check_value("watch", ws[i], &st.watch[i].value, NAN);
		else
			check_value("watch", ws[i], &st.watch[i].value, want);
		check_value("watch rate", ws[i], &st.watch[i].rate, NAN);
	}
	profile_tracker_free(t);
	free(text);

	/* A counter gets a rate; a gauge does not. */
	const char *w2[] = { "c_total", "g" };
	t = tracker(PROFILE_AUTO, w2, 2, 30 * S_NS);
	server_state_init(&st);
	update(t, "# TYPE c_total counter\nc_total{a=\"1\"} 10\nc_total{a=\"2\"} 5\n# TYPE g gauge\ng 1\n", 0, &st);
	update(t, "# TYPE c_total counter\nc_total{a=\"1\"} 30\nc_total{a=\"2\"} 15\n# TYPE g gauge\ng 9\n",
	       2 * S_NS, &st);
	check_value("watch", "c_total", &st.watch[0].value, 45);
	check_value("watch", "c_total rate", &st.watch[0].rate, 15);
	check_value("watch", "g", &st.watch[1].value, 9);
	check_value("watch", "g rate", &st.watch[1].rate, NAN);
	profile_tracker_free(t);
}

/* ---- names and URLs ---- */

static void test_names_and_urls(void **state)
{
	(void)state;
	for (int i = 0; i < PROFILE_COUNT; i++) {
		int id = -5;
		assert_int_equal(profile_parse(profile_name(i), &id), 0);
		assert_int_equal(id, i);
	}
	int id = 0;
	assert_int_equal(profile_parse("auto", &id), 0);
	assert_int_equal(id, PROFILE_AUTO);
	assert_int_equal(profile_parse("vLLM", &id), -1);

	char u[PROFILE_MAX_CANDIDATES][PROFILE_URL_MAX];
	assert_int_equal(profile_default_urls(PROFILE_VLLM, "http://gpu:8000", u, 4), 1);
	assert_string_equal(u[0], "http://gpu:8000/metrics");
	assert_int_equal(profile_default_urls(PROFILE_TRTLLM, "http://gpu:8000/", u, 4), 1);
	assert_string_equal(u[0], "http://gpu:8000/prometheus/metrics");
	assert_int_equal(profile_default_urls(PROFILE_NIM, "https://nim.example/api", u, 4), 1);
	assert_string_equal(u[0], "https://nim.example/api/v1/metrics");
	/* Triton: port 8002, no prefix, whatever the API's port and path. */
	assert_int_equal(profile_default_urls(PROFILE_TRITON, "http://tr:9000/openai", u, 4), 1);
	assert_string_equal(u[0], "http://tr:8002/metrics");
	assert_int_equal(profile_default_urls(PROFILE_TRITON, "http://[::1]:8000", u, 4), 1);
	assert_string_equal(u[0], "http://[::1]:8002/metrics");
	assert_int_equal(profile_default_urls(PROFILE_TRITON, "https://u:p@tr?x=1", u, 4), 1);
	assert_string_equal(u[0], "https://u:p@tr:8002/metrics");
	assert_int_equal(profile_default_urls(PROFILE_TRITON, "http://", u, 4), -1);
	assert_int_equal(profile_default_urls(PROFILE_TRITON, "http://[::1", u, 4), -1);
	assert_int_equal(profile_default_urls(PROFILE_AUTO, "http://h:8000", u, 4), 4);
	assert_string_equal(u[0], "http://h:8000/metrics");
	assert_string_equal(u[1], "http://h:8000/prometheus/metrics");
	assert_string_equal(u[2], "http://h:8000/v1/metrics");
	assert_string_equal(u[3], "http://h:8002/metrics");
	/* Already on 8002: no duplicate. */
	assert_int_equal(profile_default_urls(PROFILE_AUTO, "http://h:8002", u, 4), 3);
	assert_int_equal(profile_default_urls(PROFILE_VLLM, "ftp://h", u, 4), -1);
	assert_int_equal(profile_default_urls(PROFILE_VLLM, "", u, 4), -1);
	assert_string_equal(profile_metrics_path(PROFILE_TGI), "/metrics");
}

/* ---- GPU ---- */

static void test_dcgm_fixture(void **state)
{
	(void)state;
	size_t len;
	char *text = testutil_fixture(NULL, "prom/dcgm.txt", &len);
	struct server_state st;
	server_state_init(&st);
	struct gpu_reading rd;
	char err[256];
	assert_int_equal(gpu_parse_dcgm(text, len, 0, &st, &rd, err, sizeof err), 2);
	assert_int_equal(st.ngpus, 2);
	/* Figures read off the fixture for gpu="0". */
	const struct server_gpu *g = &st.gpu[0];
	assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
	assert_int_equal(g->index, 0);
	assert_int_equal(st.gpu[1].index, 1);
	check_value("dcgm", "util", &g->util_pct, 87);
	check_value("dcgm", "mem used", &g->mem_used_mib, 71234);
	check_value("dcgm", "mem total", &g->mem_total_mib, 71234 + 9621);
	check_value("dcgm", "power", &g->power_w, 512.345);
	check_value("dcgm", "temp", &g->temp_c, 61);
	check_value("dcgm", "sm clock", &g->sm_clock_mhz, 1980);
	check_value("dcgm", "gr", &g->gr_active, 0.912345);
	check_value("dcgm", "dram", &g->dram_active, 0.701234);
	check_value("dcgm", "tensor", &g->tensor_active, 0.412001);
	check_value("dcgm", "power total", &st.power_total_w,
		    psum(text, len, "DCGM_FI_DEV_POWER_USAGE", NULL));
	assert_true(rd.energy_valid);
	assert_true(fabs(rd.energy_j - psum(text, len, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", NULL) / 1000) < 1e-3);

	/* Without profiling fields or energy: those are unknown. */
	static const char small[] = "DCGM_FI_DEV_GPU_UTIL{gpu=\"3\"} 50\nDCGM_FI_DEV_POWER_USAGE{gpu=\"3\"} 100\n";
	assert_int_equal(gpu_parse_dcgm(small, strlen(small), 0, &st, &rd, err, sizeof err), 1);
	assert_string_equal(st.gpu[0].name, "GPU 3");
	check_value("small", "tensor", &st.gpu[0].tensor_active, NAN);
	check_value("small", "mem total", &st.gpu[0].mem_total_mib, NAN);
	assert_false(rd.energy_valid);
	/* The exporter's modelName drives no terminal: its controls go. */
	static const char esc[] = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",modelName=\"H\x1b[2J\x07\xc2\x9b" "1m\"} 50\n";
	assert_int_equal(gpu_parse_dcgm(esc, strlen(esc), 0, &st, &rd, err, sizeof err), 1);
	assert_string_equal(st.gpu[0].name, "H?[2J??1m");
	/* Not a DCGM exporter. */
	assert_int_equal(gpu_parse_dcgm("up 1\n", 5, 0, &st, &rd, err, sizeof err), -1);
	assert_non_null(strstr(err, "DCGM"));
	assert_int_equal(st.ngpus, 0);
	free(text);
}

static void test_joules_per_token(void **state)
{
	(void)state;
	static struct gpu_power_ring r;
	memset(&r, 0, sizeof r);
	struct gpu_reading rd = { .ngpus = 2, .power_w = 100, .power_valid = true, .energy_valid = true };
	/* Energy grows 600 J/s while the sampled power says 100 W: the
	 * counter wins, it integrates what sampling misses. */
	for (int i = 0; i <= 10; i++) {
		rd.energy_j = 1e6 + 600.0 * i;
		gpu_ring_push(&r, (int64_t)i * S_NS, &rd);
	}
	double w, jpt;
	assert_true(gpu_ring_mean_power(&r, 10 * S_NS, 5 * S_NS, &w));
	assert_true(fabs(w - 600) < 1e-9);
	assert_true(gpu_joules_per_token(w, 5.0, 1000, &jpt));
	assert_true(fabs(jpt - 3.0) < 1e-12); /* 600 W x 5 s / 1000 tokens */
	assert_false(gpu_joules_per_token(w, 5.0, 0, &jpt));
	assert_false(gpu_joules_per_token(w, 0, 10, &jpt));

	/* Counter reset inside the span: back to the mean of the power samples. */
	memset(&r, 0, sizeof r);
	for (int i = 0; i <= 4; i++) {
		rd.energy_j = i == 3 ? 10 : 1e6 + 600.0 * i;
		rd.power_w = 100.0 * (i + 1);
		gpu_ring_push(&r, (int64_t)i * S_NS, &rd);
	}
	assert_true(gpu_ring_mean_power(&r, 4 * S_NS, 10 * S_NS, &w));
	assert_true(fabs(w - 300) < 1e-9); /* (100+200+300+400+500)/5 */
	/* Nothing in the span. */
	assert_false(gpu_ring_mean_power(&r, 100 * S_NS, 5 * S_NS, &w));

	/* The ring wraps without losing the newest readings. */
	memset(&r, 0, sizeof r);
	rd.energy_valid = false;
	for (int i = 0; i < GPU_RING * 3; i++) {
		rd.power_w = i >= GPU_RING * 3 - 2 ? 1000 : 1;
		gpu_ring_push(&r, (int64_t)i * S_NS, &rd);
	}
	assert_int_equal(r.n, GPU_RING);
	assert_true(gpu_ring_mean_power(&r, (GPU_RING * 3 - 1) * S_NS, 2 * S_NS, &w));
	assert_true(fabs(w - 1000) < 1e-9);
}

/* ---- JSON block and progress fragment ---- */

static void test_brief_and_json(void **state)
{
	(void)state;
	struct server_state st;
	server_state_init(&st);
	char buf[160];
	st.status = SERVER_PENDING;
	server_format_brief(&st, buf, sizeof buf);
	assert_string_equal(buf, "server metrics: pending");
	st.status = SERVER_DOWN;
	snprintf(st.last_error, sizeof st.last_error, "connection refused");
	server_format_brief(&st, buf, sizeof buf);
	assert_string_equal(buf, "server metrics: down (connection refused)");

	cJSON *j = server_to_json(&st);
	assert_non_null(j);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "available")));
	assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "down");
	assert_string_equal(cJSON_GetObjectItem(j, "error")->valuestring, "connection refused");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latest"), "running")));
	assert_null(cJSON_GetObjectItem(j, "gpu"));
	cJSON_Delete(j);

	st.status = SERVER_UP;
	st.scrapes = 3;
	st.gauge[SRV_RUNNING] = (struct server_value){.v = 8, .valid = true};
	st.gauge[SRV_WAITING] = (struct server_value){.v = 24, .valid = true};
	st.gauge[SRV_KV_USAGE] = (struct server_value){.v = 0.634, .valid = true};
	server_format_brief(&st, buf, sizeof buf);
	assert_string_equal(buf, "run 8 wait 24 kv 63%");
	st.gauge[SRV_KV_USAGE].valid = false;
	st.status = SERVER_STALE;
	server_format_brief(&st, buf, sizeof buf);
	assert_string_equal(buf, "run 8 wait 24 kv - (stale)");
	st.gpu_status = SERVER_UP;
	st.power_total_w = (struct server_value){.v = 700, .valid = true};
	st.joules_per_token = (struct server_value){.v = 0.456, .valid = true};
	server_format_brief(&st, buf, sizeof buf);
	assert_string_equal(buf, "run 8 wait 24 kv - (stale) 700 W 0.46 J/tok");
	/* Truncation is safe. */
	char tiny[8];
	server_format_brief(&st, tiny, sizeof tiny);
	assert_int_equal(strlen(tiny), 7);

	st.status = SERVER_UP;
	server_agg_add(&st.agg[SRV_RUNNING], 2);
	server_agg_add(&st.agg[SRV_RUNNING], 8);
	server_agg_add(&st.agg[SRV_RUNNING], NAN);
	st.p50[SRVL_TTFT] = (struct server_value){.v = 0.125, .valid = true};
	st.nwatch = 1;
	snprintf(st.watch[0].expr, sizeof st.watch[0].expr, "x");
	st.watch[0].value = (struct server_value){.v = 3, .valid = true};
	j = server_to_json(&st);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "available")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "error")));
	cJSON *run = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "run"), "running");
	assert_true(cJSON_GetObjectItem(run, "min")->valuedouble == 2);
	assert_true(cJSON_GetObjectItem(run, "mean")->valuedouble == 5);
	assert_true(cJSON_GetObjectItem(run, "max")->valuedouble == 8);
	assert_true(cJSON_GetObjectItem(run, "samples")->valuedouble == 2);
	cJSON *lw = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency_window"), "ttft");
	assert_true(cJSON_GetObjectItem(lw, "p50_ms")->valuedouble == 125);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(lw, "p99_ms")));
	cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "watch"), 0);
	assert_true(cJSON_GetObjectItem(w0, "value")->valuedouble == 3);
	cJSON *gpu = cJSON_GetObjectItem(j, "gpu");
	assert_non_null(gpu);
	assert_true(cJSON_GetObjectItem(gpu, "joules_per_token")->valuedouble == 0.456);
	cJSON_Delete(j);

	for (int s = SERVER_OFF; s <= SERVER_DOWN; s++)
		assert_string_not_equal(server_status_name((enum server_status)s), "?");
	assert_true(isnan(server_agg_mean(&st.agg[SRV_WAITING])));
}

/* ---- server replicas ---- */

static void replica_body(char *buf, size_t cap, double running, double kv, double gen, const char *le,
			 double fast, double all)
{
	snprintf(buf, cap,
		 "vllm:num_requests_running{engine=\"0\"} %g\n"
		 "vllm:num_requests_waiting{engine=\"0\"} 0\n"
		 "vllm:kv_cache_usage_perc{engine=\"0\"} %g\n"
		 "vllm:generation_tokens_total{engine=\"0\"} %g\n"
		 "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"%s\"} %g\n"
		 "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} %g\n"
		 "vllm:time_to_first_token_seconds_sum{engine=\"0\"} %g\n"
		 "vllm:time_to_first_token_seconds_count{engine=\"0\"} %g\n",
		 running, kv, gen, le, fast, all, all * 0.05, all);
}

/* Two replicas summed: counters as their increase since first read (one,
 * first read a round late, had served 1000 tokens before), histograms bucket by bucket, running
 * summed and KV averaged over the replicas read now; a replica down keeps
 * its totals and drops its gauges; other buckets make the sum unknown. */
static void test_replica_sum(void **state)
{
	(void)state;
	struct profile_tracker *a = tracker(PROFILE_VLLM, NULL, 0, 10 * S_NS);
	struct profile_tracker *b = tracker(PROFILE_VLLM, NULL, 0, 10 * S_NS);
	struct profile_tracker *m = tracker(PROFILE_VLLM, NULL, 0, 10 * S_NS);
	struct server_state sa, sb, sm;
	server_state_init(&sa);
	server_state_init(&sb);
	server_state_init(&sm);
	struct profile_raw ra, rb, acc;
	char body[2048];
	for (int k = 0; k < 3; k++) {
		int64_t now = (k + 1) * S_NS;
		replica_body(body, sizeof body, 2, 0.2, 100.0 * k, "0.1", 3.0 * k, 4.0 * k);
		update(a, body, now, &sa);
		profile_tracker_summable(a, &ra);
		int n = 0;
		profile_raw_add(&acc, &n, &ra, true);
		/* b answers from the second round on. */
		if (k > 0) {
			replica_body(body, sizeof body, 6, 0.6, 1000 + 50.0 * k, "0.1", 10 + 1.0 * k, 20 + 1.0 * k);
			update(b, body, now, &sb);
			profile_tracker_summable(b, &rb);
			profile_raw_add(&acc, &n, &rb, true);
		}
		profile_raw_finish(&acc);
		profile_tracker_apply(m, &acc, now, &sm);
	}
	assert_true(sm.run_gen_tokens.valid);
	/* a from 0 to 200, b from 1050 to 1100 (its 1000 before are not the run's). */
	assert_true(sm.run_gen_tokens.v == 200 + 50);
	assert_true(sm.gauge[SRV_RUNNING].v == 8);
	assert_true(fabs(sm.gauge[SRV_KV_USAGE].v - 0.4) < 1e-12);
	assert_true(fabs(sm.gauge[SRV_KV_USAGE_MAX].v - 0.6) < 1e-12);
	/* TTFTs over the run: a 8 (6 fast), b 1 (1 fast): p50 in the first bucket. */
	assert_true(sm.run_mean[SRVL_TTFT].valid);
	assert_true(sm.run_p50[SRVL_TTFT].valid && sm.run_p50[SRVL_TTFT].hi == 0.1);

	/* b down: its totals stay in the sum, its gauges leave it. */
	int n = 0;
	profile_raw_add(&acc, &n, &ra, true);
	profile_raw_add(&acc, &n, &rb, false);
	profile_raw_finish(&acc);
	assert_true(acc.slot[PSLOT_RUNNING].v == 2);
	assert_true(fabs(acc.slot[PSLOT_KV].v - 0.2) < 1e-12);
	assert_true(acc.slot[PSLOT_GEN].valid && acc.slot[PSLOT_GEN].v == 250);
	assert_true(acc.hist_valid[SRVL_TTFT] && acc.hist[SRVL_TTFT].count == 8 + 1);

	/* Other buckets cannot be summed: unknown, never a wrong figure. */
	rb.hist[SRVL_TTFT].le[0] = 0.25;
	n = 0;
	profile_raw_add(&acc, &n, &ra, true);
	profile_raw_add(&acc, &n, &rb, true);
	profile_raw_finish(&acc);
	assert_false(acc.hist_valid[SRVL_TTFT]);
	profile_tracker_free(a);
	profile_tracker_free(b);
	profile_tracker_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect_fixtures),
		cmocka_unit_test(test_every_server_fixture),
		cmocka_unit_test(test_fixture_values),
		cmocka_unit_test(test_fixture_values_vs_prom_sum),
		cmocka_unit_test(test_fixture_histograms),
		cmocka_unit_test(test_rates_and_window_percentiles),
		cmocka_unit_test(test_window_baseline),
		cmocka_unit_test(test_counter_reset),
		cmocka_unit_test(test_counter_gap),
		cmocka_unit_test(test_name_precedence),
		cmocka_unit_test(test_vllm_old_prefix_counters),
		cmocka_unit_test(test_sglang_ranks_and_prefix),
		cmocka_unit_test(test_triton_units_and_model),
		cmocka_unit_test(test_given_profile_mismatch),
		cmocka_unit_test(test_not_metrics),
		cmocka_unit_test(test_watch_parse),
		cmocka_unit_test(test_watch_values),
		cmocka_unit_test(test_names_and_urls),
		cmocka_unit_test(test_dcgm_fixture),
		cmocka_unit_test(test_joules_per_token),
		cmocka_unit_test(test_brief_and_json),
		cmocka_unit_test(test_replica_sum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
