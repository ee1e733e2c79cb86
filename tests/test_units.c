/* Pure pieces of the engine: option parsing, unit parsing, the stats
 * sliding window and the arrival-time generator. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/dist.h"
#include "infertop/hist.h"
#include "infertop/rng.h"
#include "infertop/stats.h"
#include "infertop/units.h"

static void test_durations(void **state)
{
	(void)state;
	int64_t ns;
	assert_int_equal(units_parse_duration("30s", CLOCK_NS_PER_S, &ns), 0);
	assert_int_equal(ns, 30 * CLOCK_NS_PER_S);
	assert_int_equal(units_parse_duration("10m", CLOCK_NS_PER_S, &ns), 0);
	assert_int_equal(ns, 600 * CLOCK_NS_PER_S);
	assert_int_equal(units_parse_duration("2h", CLOCK_NS_PER_S, &ns), 0);
	assert_int_equal(ns, 7200 * CLOCK_NS_PER_S);
	assert_int_equal(units_parse_duration("50ms", CLOCK_NS_PER_S, &ns), 0);
	assert_int_equal(ns, 50 * CLOCK_NS_PER_MS);
	assert_int_equal(units_parse_duration("1.5", CLOCK_NS_PER_S, &ns), 0);
	assert_int_equal(ns, 1500 * CLOCK_NS_PER_MS);
	assert_int_equal(units_parse_duration("250us", CLOCK_NS_PER_S, &ns), 0);
	assert_int_equal(ns, 250000);
	assert_int_equal(units_parse_duration("", CLOCK_NS_PER_S, &ns), -1);
	assert_int_equal(units_parse_duration("-1s", CLOCK_NS_PER_S, &ns), -1);
	assert_int_equal(units_parse_duration("10 s", CLOCK_NS_PER_S, &ns), -1);
	assert_int_equal(units_parse_duration("10q", CLOCK_NS_PER_S, &ns), -1);
	assert_int_equal(units_parse_duration("nan", CLOCK_NS_PER_S, &ns), -1);
	assert_int_equal(units_parse_duration("1e300h", CLOCK_NS_PER_S, &ns), -1);
	uint64_t b;
	assert_int_equal(units_parse_size("1G", &b), 0);
	assert_int_equal(b, 1ULL << 30);
	assert_int_equal(units_parse_size("64KiB", &b), 0);
	assert_int_equal(b, 65536);
	assert_int_equal(units_parse_size("12x", &b), -1);
	long l;
	assert_int_equal(units_parse_long("42", 1, 100, &l), 0);
	assert_int_equal(l, 42);
	assert_int_equal(units_parse_long("0", 1, 100, &l), -1);
	assert_int_equal(units_parse_long("4x", 1, 100, &l), -1);
	char buf[32];
	units_format_duration(3723 * CLOCK_NS_PER_S, buf, sizeof buf);
	assert_string_equal(buf, "1h02m");
	units_format_duration(185 * CLOCK_NS_PER_S, buf, sizeof buf);
	assert_string_equal(buf, "3m05s");
}

static enum cli_result parse(struct config *c, const char **argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	return cli_parse(c, argc, (char **)argv);
}

static void test_cli(void **state)
{
	(void)state;
	struct config c;
	unsetenv("OPENAI_BASE_URL");
	const char *a1[] = {"infertop", NULL};
	assert_int_equal(parse(&c, a1), CLI_RUN);
	assert_string_equal(c.url, "http://127.0.0.1:8000");
	assert_int_equal(c.concurrency, 8);
	assert_true(c.ignore_eos);
	assert_int_equal(c.timeout_ns, 600 * CLOCK_NS_PER_S);
	assert_int_equal(c.api, OAI_CHAT);
	cli_free(&c);

	const char *a2[] = {"infertop", "-c", "32", "--api", "completions", "-d", "2m", "-H", "X-A: b",
			    "--no-ignore-eos", "http://h:9/v1/", NULL};
	assert_int_equal(parse(&c, a2), CLI_RUN);
	assert_string_equal(c.url, "http://h:9");
	assert_int_equal(c.concurrency, 32);
	assert_int_equal(c.api, OAI_COMPLETIONS);
	assert_int_equal(c.duration_ns, 120 * CLOCK_NS_PER_S);
	assert_int_equal(c.nheaders, 1);
	assert_string_equal(c.headers[0], "X-A: b");
	assert_false(c.ignore_eos);
	cli_free(&c);

	/* every value the owning modules list is taken */
	const char *a3[] = {"infertop", "--arrival", "gamma", "--scenario", "summarization", "--dataset",
			    "jsonl:x.jsonl", "--server", "lmdeploy", "--api", "chat", NULL};
	assert_int_equal(parse(&c, a3), CLI_RUN);
	assert_string_equal(c.arrival, "gamma");
	assert_string_equal(c.scenario, "summarization");
	assert_string_equal(c.dataset, "jsonl:x.jsonl");
	assert_string_equal(c.server, "lmdeploy");
	assert_int_equal(c.api, OAI_CHAT);
	cli_free(&c);

	setenv("OPENAI_BASE_URL", "https://api.example/v1", 1);
	assert_int_equal(parse(&c, a1), CLI_RUN);
	assert_string_equal(c.url, "https://api.example");
	cli_free(&c);
	unsetenv("OPENAI_BASE_URL");

	const char *bad[][4] = {
		{"infertop", "-c", "0", NULL},
		{"infertop", "--api", "embeddings", NULL},
		{"infertop", "-d", "forever", NULL},
		{"infertop", "--extra-body", "[1]", NULL},
		{"infertop", "-H", "novalue", NULL},
		{"infertop", "ftp://x", NULL, NULL},
		{"infertop", "--max-concurrency", "4", NULL},
		{"infertop", "--demo", "http://x", NULL},
		{"infertop", "--no-such-option", NULL, NULL},
		/* values the owning modules refuse */
		{"infertop", "--arrival", "bursty", NULL},
		{"infertop", "--scenario", "chat", NULL},
		{"infertop", "--dataset", "sharegpt:", NULL},
		{"infertop", "--server", "vllm2", NULL},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(parse(&c, bad[i]), CLI_EXIT_USAGE);
		cli_free(&c);
	}
}

/* The window forgets what is older than the window and the run keeps all. */
static void test_stats_window(void **state)
{
	(void)state;
	int64_t t0 = 1000 * CLOCK_NS_PER_S;
	struct stats *s = stats_new(10 * CLOCK_NS_PER_S, t0);
	assert_non_null(s);
	struct req_result r = {.ok = true, .ttfb_ns = 1 * CLOCK_NS_PER_MS, .ttft_ns = 100 * CLOCK_NS_PER_MS,
			       .e2e_ns = 500 * CLOCK_NS_PER_MS, .output_tokens = 5, .tokens_from_usage = true,
			       .prompt_tokens = 10, .chunks = 5};
	s->in_flight = 1;
	stats_request_done(s, &r);
	assert_int_equal(s->in_flight, 0);
	assert_int_equal(hist_count(s->win[STAT_TTFT]), 1);
	/* 5 s later a slower request; both in the window. */
	stats_tick(s, t0 + 5 * CLOCK_NS_PER_S);
	r.ttft_ns = 300 * CLOCK_NS_PER_MS;
	stats_request_done(s, &r);
	assert_int_equal(hist_count(s->win[STAT_TTFT]), 2);
	assert_int_equal(s->win_c.completed, 2);
	/* 11 s in: the first request has left the window, not the run. */
	stats_tick(s, t0 + 11 * CLOCK_NS_PER_S);
	assert_int_equal(hist_count(s->win[STAT_TTFT]), 1);
	assert_int_equal(s->win_c.completed, 1);
	assert_int_equal(s->win_c.output_tokens, 5);
	int64_t p = hist_percentile(s->win[STAT_TTFT], 50);
	assert_true(p >= 299700 && p <= 300300);
	assert_int_equal(hist_count(s->run[STAT_TTFT]), 2);
	assert_int_equal(s->run_c.completed, 2);
	double w = stats_window_seconds(s, t0 + 11 * CLOCK_NS_PER_S);
	assert_true(w >= 9.0 && w <= 10.0);
	/* TPOT = (500 - 300) / 4 = 50 ms for the second request. */
	assert_int_equal(hist_count(s->run[STAT_TPOT]), 2);
	/* A failure counts by kind and keeps the message, not the latencies. */
	struct req_result f = {.ok = false, .err = ERR_HTTP, .http_code = 429, .msg = "HTTP 429: slow down"};
	stats_request_done(s, &f);
	assert_int_equal(s->errors[ERR_HTTP], 1);
	assert_int_equal(s->http_codes[429], 1);
	assert_string_equal(s->last_msg[ERR_HTTP], "HTTP 429: slow down");
	assert_int_equal(hist_count(s->run[STAT_TTFT]), 2);
	/* A long stall skips ahead instead of rotating forever. */
	stats_tick(s, t0 + 100000 * CLOCK_NS_PER_S);
	assert_int_equal(hist_count(s->win[STAT_TTFT]), 0);
	assert_int_equal(s->win_c.completed, 0);
	assert_int_equal(s->win_c.failed, 0);
	stats_free(s);
}

/* Exponential gaps: mean 1/rate and coefficient of variation 1. */
static void test_poisson_gaps(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 42);
	const int n = 200000;
	double sum = 0, sumsq = 0;
	for (int i = 0; i < n; i++) {
		double g = rng_exp(&r, 0.05);
		assert_true(g >= 0 && isfinite(g));
		sum += g;
		sumsq += g * g;
	}
	double mean = sum / n, var = sumsq / n - mean * mean, cv = sqrt(var) / mean;
	assert_true(fabs(mean - 0.05) < 0.05 * 0.01);
	assert_true(fabs(cv - 1.0) < 0.01);
}

static void test_synthetic_prompt(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 1);
	char *p = dataset_synthetic_prompt(&r, 100);
	assert_non_null(p);
	int words = 1;
	for (char *c = p; *c; c++)
		words += *c == ' ';
	assert_int_equal(words, 100);
	char *q = dataset_synthetic_prompt(&r, 100);
	assert_string_not_equal(p, q);
	free(p);
	free(q);
}

/* Length distributions: forms, bounds, and the samples' mean and range. */
static void test_dist(void **state)
{
	(void)state;
	struct dist d;
	struct rng r;
	rng_seed(&r, 3);
	assert_int_equal(dist_parse("128", 1000, &d), 0);
	assert_int_equal(d.kind, DIST_FIXED);
	assert_int_equal(dist_sample(&d, &r), 128);
	assert_int_equal(dist_parse("100:200", 1000, &d), 0);
	long lo = 1000, hi = 0;
	double sum = 0;
	for (int i = 0; i < 100000; i++) {
		long v = dist_sample(&d, &r);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
		sum += (double)v;
	}
	assert_int_equal(lo, 100);
	assert_int_equal(hi, 200);
	assert_true(fabs(sum / 100000 - 150.0) < 0.5);
	assert_int_equal(dist_parse("normal:128,32", 1000, &d), 0);
	double s1 = 0, s2 = 0;
	for (int i = 0; i < 100000; i++) {
		double v = (double)dist_sample(&d, &r);
		assert_true(v >= 1 && v <= 1000);
		s1 += v;
		s2 += v * v;
	}
	double mean = s1 / 100000, sd = sqrt(s2 / 100000 - mean * mean);
	assert_true(fabs(mean - 128) < 0.5);
	assert_true(fabs(sd - 32) < 0.5);
	/* Clamped: a wide normal never leaves [1, max]. */
	assert_int_equal(dist_parse("normal:5,100", 20, &d), 0);
	for (int i = 0; i < 10000; i++) {
		long v = dist_sample(&d, &r);
		assert_true(v >= 1 && v <= 20);
	}
	const char *bad[] = {"", "0", "-5", "200:100", "1:", ":5", "normal:", "normal:5", "normal:5,-1",
			     "normal:x,1", "2000", "12abc", "uniform:1,2"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(dist_parse(bad[i], 1000, &d), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_stats_window),
		cmocka_unit_test(test_poisson_gaps),
		cmocka_unit_test(test_synthetic_prompt),
		cmocka_unit_test(test_dist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
