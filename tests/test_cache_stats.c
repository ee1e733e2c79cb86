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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_rate_and_split),
		cmocka_unit_test(test_by_turn),
		cmocka_unit_test(test_warmup_cooldown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
