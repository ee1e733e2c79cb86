/* What the cache did and what sessions did (issue 25, item 4): the
 * client-side hit rate over the run and the window, TTFT split by
 * "mostly cached" and "cold", TTFT and E2E by turn (1..7, "8+"), the
 * per-session figures; warmup resets them, cooldown freezes them. The
 * outputs (result JSON, merge, text, /metrics) are checked further down. */
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

#include "infertop/clock.h"
#include "infertop/hist.h"
#include "infertop/result.h"
#include "infertop/rng.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"

#define MS CLOCK_NS_PER_MS

static struct req_result ok_req(int64_t ttft_ms, int64_t prompt, int64_t cached, uint32_t turn)
{
	return (struct req_result){.ok = true, .ttfb_ns = ttft_ms * MS, .ttft_ns = ttft_ms * MS,
				   .e2e_ns = (ttft_ms + 100) * MS, .output_tokens = 10, .tokens_from_usage = true,
				   .prompt_tokens = prompt, .chunks = 10, .usage_tokens = 10,
				   .retry_after_ns = -1, .cached_tokens = cached, .turn = turn};
}

static void done(struct stats *s, struct req_result r)
{
	s->in_flight++;
	stats_request_done(s, &r);
}

static void test_hit_rate_and_split(void **state)
{
	(void)state;
	int64_t t0 = 1000 * CLOCK_NS_PER_S;
	struct stats *s = stats_new(10 * CLOCK_NS_PER_S, t0);
	assert_non_null(s);
	/* No server word yet: nothing made, hit rate unknown. */
	done(s, ok_req(50, 1000, -1, 0));
	assert_int_equal(s->run_c.cache_unknown, 1);
	assert_int_equal(s->run_c.cache_known, 0);
	assert_true(isnan(stats_cache_hit_rate(&s->run_c)));
	for (int x = 0; x < XH_N; x++)
		assert_null(s->xh[x]);
	/* 900 of 1000 cached: warm; 400 of 1000: cold; 500 of 1000: warm
	 * (half counts as mostly cached). */
	done(s, ok_req(20, 1000, 900, 0));
	done(s, ok_req(80, 1000, 400, 0));
	done(s, ok_req(30, 1000, 500, 0));
	assert_int_equal(s->run_c.cache_known, 3);
	assert_int_equal(s->run_c.prompt_known, 3000);
	assert_int_equal(s->run_c.prompt_cached, 1800);
	assert_true(fabs(stats_cache_hit_rate(&s->run_c) - 0.6) < 1e-12);
	assert_int_equal(hist_count(s->xh[XH_TTFT_WARM]), 2);
	assert_int_equal(hist_count(s->xh[XH_TTFT_COLD]), 1);
	assert_int_equal(hist_max(s->xh[XH_TTFT_WARM]), 30000);
	assert_int_equal(hist_min(s->xh[XH_TTFT_COLD]), 80000);
	/* A failure says nothing about the cache. */
	struct req_result f = {.ok = false, .err = ERR_CONTEXT, .http_code = 400, .cached_tokens = 5,
			       .prompt_tokens = 10, .turn = 3};
	s->in_flight++;
	stats_request_done(s, &f);
	assert_int_equal(s->run_c.cache_known + s->run_c.cache_unknown, 4);
	assert_null(s->xh[XH_TURN_TTFT + 2]);
	assert_int_equal(s->errors[ERR_CONTEXT], 1);
	assert_int_equal(s->http_codes[400], 1);
	/* The window: 11 s later the first requests have left it, not the run. */
	stats_tick(s, t0 + 11 * CLOCK_NS_PER_S);
	done(s, ok_req(10, 100, 100, 0));
	assert_int_equal(s->win_c.cache_known, 1);
	assert_int_equal(s->win_c.cache_unknown, 0);
	assert_true(fabs(stats_cache_hit_rate(&s->win_c) - 1.0) < 1e-12);
	assert_int_equal(s->run_c.prompt_cached, 1900);
	stats_free(s);
}

static void test_by_turn(void **state)
{
	(void)state;
	struct stats *s = stats_new(10 * CLOCK_NS_PER_S, 0);
	assert_non_null(s);
	assert_int_equal(stats_turn_index(0), -1);
	assert_int_equal(stats_turn_index(1), 0);
	assert_int_equal(stats_turn_index(7), 6);
	assert_int_equal(stats_turn_index(8), 7);
	assert_int_equal(stats_turn_index(1000000), 7);
	assert_string_equal(stats_turn_label(0), "1");
	assert_string_equal(stats_turn_label(7), "8+");
	/* Not a session's request: no by-turn histogram is made. */
	done(s, ok_req(10, 10, -1, 0));
	for (int t = 0; t < STATS_TURNS; t++)
		assert_null(s->xh[XH_TURN_TTFT + t]);
	/* Turns 1..12: 1..7 each their own, 8..12 share "8+". */
	for (uint32_t turn = 1; turn <= 12; turn++)
		done(s, ok_req(100 * turn, 10, -1, turn));
	for (int t = 0; t < 7; t++) {
		assert_int_equal(hist_count(s->xh[XH_TURN_TTFT + t]), 1);
		assert_int_equal(hist_min(s->xh[XH_TURN_TTFT + t]), 100000 * (t + 1));
		assert_int_equal(hist_min(s->xh[XH_TURN_E2E + t]), 100000 * (t + 1) + 100000);
	}
	assert_int_equal(hist_count(s->xh[XH_TURN_TTFT + 7]), 5);
	assert_int_equal(hist_count(s->xh[XH_TURN_E2E + 7]), 5);
	/* Only the cache-free requests: no TTFT split. */
	assert_null(s->xh[XH_TTFT_WARM]);
	assert_null(s->xh[XH_TTFT_COLD]);

	struct session_result a = {.ok = true, .turns = 4, .duration_ns = 2000 * MS, .context_tokens = 3000};
	struct session_result b = {.ok = false, .context_limit = true, .turns = 2, .duration_ns = 500 * MS,
				   .context_tokens = 8192};
	stats_session_done(s, &a);
	stats_session_done(s, &b);
	assert_int_equal(s->sessions_done, 2);
	assert_int_equal(s->sessions_failed, 1);
	assert_int_equal(s->sessions_context, 1);
	assert_int_equal(s->session_turns, 6);
	assert_int_equal(hist_count(s->xh[XH_SESSION_DURATION]), 2);
	assert_int_equal(hist_max(s->xh[XH_SESSION_DURATION]), 2000000);
	assert_int_equal(hist_max(s->xh[XH_SESSION_TURNS]), 4);
	assert_true(fabs(hist_mean(s->xh[XH_SESSION_TURNS]) - 3.0) < 1e-12);
	assert_int_equal(hist_max(s->xh[XH_SESSION_CONTEXT]), 8192);
	stats_free(s);
}

/* Warmup's end drops what came before; cooldown keeps the run as it was
 * while the window (and its hit rate) goes on. */
static void test_warmup_cooldown(void **state)
{
	(void)state;
	struct stats *s = stats_new(10 * CLOCK_NS_PER_S, 0);
	assert_non_null(s);
	done(s, ok_req(10, 100, 90, 1));
	struct session_result a = {.ok = true, .turns = 1, .duration_ns = 10 * MS, .context_tokens = 100};
	stats_session_done(s, &a);
	stats_reset_run(s, CLOCK_NS_PER_S);
	assert_int_equal(s->run_c.cache_known, 0);
	assert_int_equal(s->run_c.prompt_cached, 0);
	assert_int_equal(s->win_c.cache_known, 0);
	assert_int_equal(s->sessions_done, 0);
	for (int x = 0; x < XH_N; x++)
		assert_true(!s->xh[x] || hist_count(s->xh[x]) == 0);

	done(s, ok_req(20, 100, 10, 2));
	stats_freeze_run(s);
	done(s, ok_req(30, 100, 100, 2));
	stats_session_done(s, &a);
	assert_int_equal(s->run_c.cache_known, 1);
	assert_int_equal(s->run_c.prompt_cached, 10);
	assert_int_equal(s->win_c.cache_known, 2);
	assert_int_equal(s->win_c.prompt_cached, 110);
	assert_int_equal(hist_count(s->xh[XH_TURN_TTFT + 1]), 1);
	assert_int_equal(hist_count(s->xh[XH_TTFT_COLD]), 1);
	assert_true(!s->xh[XH_TTFT_WARM] || hist_count(s->xh[XH_TTFT_WARM]) == 0);
	assert_int_equal(s->sessions_done, 0);
	assert_true(!s->xh[XH_SESSION_DURATION] || hist_count(s->xh[XH_SESSION_DURATION]) == 0);
	stats_free(s);
}

/* ---- the outputs ---- */

/* A snapshot of st as a live run gives it (histograms borrowed). */
static void snap_of(struct snapshot *s, const struct stats *st, const char *run_id)
{
	memset(s, 0, sizeof *s);
	s->schema = SNAPSHOT_SCHEMA;
	s->reason = SNAPSHOT_FINAL;
	s->nruns = 1;
	s->duration = s->elapsed = 60;
	s->win_seconds = 10;
	s->vllm_request_rate = INFINITY;
	s->burstiness = 1;
	s->max_output_tok_s = NAN;
	snprintf(s->run_id, sizeof s->run_id, "%s", run_id);
	snprintf(s->status, sizeof s->status, "done");
	snprintf(s->token_source, sizeof s->token_source, "usage");
	s->run_c = st->run_c;
	s->win_c = st->win_c;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = st->run[m];
		s->win[m] = st->win[m];
	}
	memcpy(s->xh, st->xh, sizeof s->xh);
	s->sessions_done = st->sessions_done;
	s->sessions_failed = st->sessions_failed;
	s->sessions_context = st->sessions_context;
	s->session_turns = st->session_turns;
}

static void parse_text(struct snapshot *out, const char *t)
{
	char err[256];
	if (snapshot_parse(out, t, strlen(t), err, sizeof err) != 0)
		fail_msg("%s", err);
}

static char *summary(const struct snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	snapshot_print_summary(f, s);
	fclose(f);
	return buf;
}

/* Buckets, count, min, max, sum: exact (the sum of squares is a double). */
static void same_hist(const struct hist *x, const struct hist *y)
{
	if (!x || !hist_count(x)) {
		assert_true(!y || hist_count(y) == 0);
		return;
	}
	assert_non_null(y);
	char *a = hist_encode(x), *b = hist_encode(y);
	char *sa = strrchr(a, ','), *sb = strrchr(b, ',');
	assert_int_equal(sa - a, sb - b);
	assert_memory_equal(a, b, (size_t)(sa - a));
	assert_string_equal(strchr(sa, ':'), strchr(sb, ':'));
	free(a);
	free(b);
}

static void same_figures(const struct snapshot *a, const struct snapshot *b)
{
	assert_int_equal(a->run_c.cache_known, b->run_c.cache_known);
	assert_int_equal(a->run_c.cache_unknown, b->run_c.cache_unknown);
	assert_int_equal(a->run_c.prompt_known, b->run_c.prompt_known);
	assert_int_equal(a->run_c.prompt_cached, b->run_c.prompt_cached);
	assert_int_equal(a->win_c.prompt_cached, b->win_c.prompt_cached);
	assert_int_equal(a->win_c.cache_known, b->win_c.cache_known);
	assert_int_equal(a->sessions_done, b->sessions_done);
	assert_int_equal(a->sessions_failed, b->sessions_failed);
	assert_int_equal(a->sessions_context, b->sessions_context);
	assert_int_equal(a->session_turns, b->session_turns);
	for (int x = 0; x < XH_N; x++)
		same_hist(a->xh[x], b->xh[x]);
}

/* A random session workload into st (and into all, the union). */
static void feed(struct rng *r, struct stats *st, struct stats *all, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t turn = (uint32_t)(rng_next(r) % 12);
		int64_t prompt = 1 + (int64_t)(rng_next(r) % 5000);
		int64_t cached = rng_next(r) % 5 == 0 ? -1 : (int64_t)(rng_next(r) % (uint64_t)prompt);
		struct req_result q = ok_req(1 + (int64_t)(rng_next(r) % 3000), prompt, cached, turn);
		done(st, q);
		done(all, q);
		if (turn && rng_next(r) % 4 == 0) {
			struct session_result sr = {.ok = rng_next(r) % 3 != 0, .turns = turn,
						    .duration_ns = (int64_t)(rng_next(r) % 100000) * MS,
						    .context_tokens = prompt};
			sr.context_limit = !sr.ok && rng_next(r) % 2;
			stats_session_done(st, &sr);
			stats_session_done(all, &sr);
		}
	}
}

/* Written, read back and written again: the same document, the same
 * figures; two runs merged: exactly the figures of the union. */
static void test_json_roundtrip_and_merge(void **state)
{
	(void)state;
	struct stats *a = stats_new(10 * CLOCK_NS_PER_S, 0), *b = stats_new(10 * CLOCK_NS_PER_S, 0),
		     *u = stats_new(10 * CLOCK_NS_PER_S, 0);
	assert_true(a && b && u);
	struct rng r;
	rng_seed(&r, 25);
	feed(&r, a, u, 3000);
	feed(&r, b, u, 2000);
	struct snapshot sa, sb, su, ra, rb, m;
	snap_of(&sa, a, "aaaa");
	snap_of(&sb, b, "bbbb");
	snap_of(&su, u, "uuuu");
	assert_true(snapshot_has_cache(&sa) && snapshot_has_sessions(&sa));

	char *ta = snapshot_to_text(&sa), *tb = snapshot_to_text(&sb);
	assert_non_null(ta);
	assert_non_null(strstr(ta, "\"cache\""));
	assert_non_null(strstr(ta, "\"by_turn\""));
	assert_non_null(strstr(ta, "\"8+\""));
	parse_text(&ra, ta);
	parse_text(&rb, tb);
	same_figures(&sa, &ra);
	char *ta2 = snapshot_to_text(&ra);
	assert_string_equal(ta, ta2);

	const struct snapshot *parts[] = {&ra, &rb};
	char err[256];
	if (snapshot_merge(&m, parts, 2, err, sizeof err) != 0)
		fail_msg("%s", err);
	same_figures(&su, &m);
	/* And again, reusing the merge's histograms (the fleet's path). */
	if (snapshot_remerge(&m, parts, 2, err, sizeof err) != 0)
		fail_msg("%s", err);
	same_figures(&su, &m);
	/* The merge's own document reads back the same. */
	char *tm = snapshot_to_text(&m);
	struct snapshot rm;
	parse_text(&rm, tm);
	same_figures(&su, &rm);

	free(ta);
	free(tb);
	free(ta2);
	free(tm);
	snapshot_release(&ra);
	snapshot_release(&rb);
	snapshot_release(&m);
	snapshot_release(&rm);
	stats_free(a);
	stats_free(b);
	stats_free(u);
}

/* The summary has the row label: value (its "%-40s %-10" layout). */
static bool has_row(const char *sum, const char *label, const char *value)
{
	char want[128];
	snprintf(want, sizeof want, "\n%-40s %s", label, value);
	return strstr(sum, want) != NULL;
}

/* A run without cache reports or sessions: no "cache"/"sessions" key, no
 * summary block (old documents and goldens unchanged). With them: the
 * blocks and the by-turn table, with "8+". */
static void test_blocks_only_with_data(void **state)
{
	(void)state;
	struct stats *st = stats_new(10 * CLOCK_NS_PER_S, 0);
	assert_non_null(st);
	done(st, ok_req(10, 100, -1, 0));
	struct snapshot s;
	snap_of(&s, st, "cccc");
	char *t = snapshot_to_text(&s), *sum = summary(&s);
	assert_null(strstr(t, "\"cache\""));
	assert_null(strstr(t, "\"sessions\""));
	assert_null(strstr(sum, "Prefix cache"));
	assert_null(strstr(sum, "Sessions"));
	free(t);
	free(sum);

	/* A server that says 0 to single requests (random prompts against
	 * the simulator): the file keeps what it said (the counters read
	 * back whole), the summary shows nothing. */
	done(st, ok_req(10, 100, 0, 0));
	snap_of(&s, st, "cccc");
	t = snapshot_to_text(&s);
	sum = summary(&s);
	assert_non_null(strstr(t, "\"cache\""));
	assert_non_null(strstr(t, "\"cached_tokens\""));
	assert_null(strstr(sum, "Prefix cache"));
	free(t);
	free(sum);

	done(st, ok_req(10, 100, 80, 0));
	snap_of(&s, st, "cccc");
	sum = summary(&s);
	assert_non_null(strstr(sum, " Prefix cache "));
	assert_true(has_row(sum, "Cache hit rate (%):", "40.00 "));
	assert_true(has_row(sum, "Requests not reporting them:", "1 "));
	assert_true(has_row(sum, "Requests, cold:", "1 "));
	assert_null(strstr(sum, " Sessions "));
	free(sum);

	done(st, ok_req(200, 100, -1, 1));
	done(st, ok_req(300, 100, -1, 9));
	snap_of(&s, st, "cccc");
	sum = summary(&s);
	assert_non_null(strstr(sum, " Sessions "));
	assert_non_null(strstr(sum, "\n1            1    200.00    200.00    300.00    300.00\n"));
	assert_non_null(strstr(sum, "\n8+           1    300.00    300.00    400.00    400.00\n"));
	assert_null(strstr(sum, "\n2 "));
	free(sum);
	stats_free(st);
}

typedef int (*report_fn)(FILE *, const char *, const struct snapshot *);

static char *report_of(report_fn fn, const struct snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(fn(f, "r.json", s), 0);
	fclose(f);
	return buf;
}

/* `infertop report` in every format: the cache and sessions parts only in
 * a run that has them. */
static void test_report_formats(void **state)
{
	(void)state;
	struct stats *st = stats_new(10 * CLOCK_NS_PER_S, 0);
	assert_non_null(st);
	done(st, ok_req(10, 100, -1, 0));
	struct snapshot s;
	snap_of(&s, st, "dddd");
	static const report_fn fns[] = {result_text_report, result_json_report, result_csv_report, result_md_report};
	static const char *const cache_word[] = {"Prefix cache", "\"cache\"", "ttft_cold", "## Prefix cache"};
	static const char *const turn_word[] = {"\n8+ ", "\"8+\"", "ttft_turn_8+", "| 8+ |"};
	for (size_t i = 0; i < 4; i++) {
		char *t = report_of(fns[i], &s);
		assert_null(strstr(t, cache_word[i]));
		assert_null(strstr(t, turn_word[i]));
		free(t);
	}
	done(st, ok_req(500, 100, 10, 9));
	struct session_result sr = {.ok = true, .turns = 9, .duration_ns = CLOCK_NS_PER_S, .context_tokens = 900};
	stats_session_done(st, &sr);
	snap_of(&s, st, "dddd");
	for (size_t i = 0; i < 4; i++) {
		char *t = report_of(fns[i], &s);
		if (!strstr(t, cache_word[i]) || !strstr(t, turn_word[i]))
			fail_msg("format %zu lacks \"%s\" or \"%s\":\n%s", i, cache_word[i], turn_word[i], t);
		free(t);
	}
	stats_free(st);
}

/* `infertop compare`: the cache's and sessions' rows only when a run has
 * them; B's higher hit rate is better, its slower turn 2 worse. */
static void test_compare_rows(void **state)
{
	(void)state;
	struct stats *a = stats_new(10 * CLOCK_NS_PER_S, 0), *b = stats_new(10 * CLOCK_NS_PER_S, 0);
	assert_true(a && b);
	done(a, ok_req(10, 100, -1, 0));
	done(b, ok_req(10, 100, -1, 0));
	struct snapshot sa, sb;
	snap_of(&sa, a, "aaaa");
	snap_of(&sb, b, "bbbb");
	struct result_compare c;
	result_compare_build(&c, &sa, &sb, "a", "b");
	int plain = c.n;
	assert_null(result_compare_find(&c, "cache_hit_rate"));
	assert_null(result_compare_find(&c, "median_ttft_turn_8+_ms"));
	result_compare_release(&c);

	done(a, ok_req(100, 1000, 500, 2));
	done(b, ok_req(300, 1000, 900, 2));
	snap_of(&sa, a, "aaaa");
	snap_of(&sb, b, "bbbb");
	result_compare_build(&c, &sa, &sb, "a", "b");
	assert_int_equal(c.n, plain + 3 + STATS_TURNS + 1);
	assert_true(c.n <= RESULT_MAX_CROWS);
	const struct result_crow *r = result_compare_find(&c, "cache_hit_rate");
	assert_non_null(r);
	assert_true(fabs(r->a - 0.5) < 1e-12 && fabs(r->b - 0.9) < 1e-12);
	assert_string_equal(result_crow_verdict(r), "better");
	r = result_compare_find(&c, "median_ttft_turn_2_ms");
	assert_non_null(r);
	assert_string_equal(result_crow_verdict(r), "worse");
	r = result_compare_find(&c, "median_ttft_turn_8+_ms");
	assert_non_null(r);
	assert_string_equal(result_crow_verdict(r), "");
	result_compare_release(&c);
	stats_free(a);
	stats_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_rate_and_split),
		cmocka_unit_test(test_by_turn),
		cmocka_unit_test(test_warmup_cooldown),
		cmocka_unit_test(test_json_roundtrip_and_merge),
		cmocka_unit_test(test_blocks_only_with_data),
		cmocka_unit_test(test_report_formats),
		cmocka_unit_test(test_compare_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
