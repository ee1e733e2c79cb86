/* Fixed timing is the ground truth of infertop's fidelity tests: a client
 * measuring the sim must see the configured TTFT and ITL. Timestamps are
 * taken in curl's write callback, as the client engine does. Medians over
 * many small rounds keep the check meaningful on a loaded machine (make
 * -j check runs other tests beside this one): a burst of CPU contention
 * then spoils a round or two, not the median. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/clock.h"
#include "simutil.h"

#define STREAMS 2
#define ROUNDS 12
#define TOKENS 13

/* ttft: from the send; from_role: from the role-only chunk, which the sim
 * sends the moment it has the request, so it holds the sim's own timing
 * without the request's trip; ttfb: send to the first event. */
static void measure(int port, const char *path, const char *json, double *ttft, size_t *nttft,
		    double *itl, size_t *nitl, double *from_role, double *ttfb)
{
	struct su_multi mm;
	struct su_stream s[STREAMS];
	assert_int_equal(su_multi_init(&mm), 0);
	for (int i = 0; i < STREAMS; i++) {
		assert_int_equal(su_stream_init(&s[i], port, path, json, 20000), 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	assert_int_equal(su_multi_until(&mm, NULL, NULL, 20000), 0);
	su_multi_cleanup(&mm);
	for (int i = 0; i < STREAMS; i++) {
		assert_int_equal(s[i].rc, CURLE_OK);
		assert_int_equal(s[i].status, 200);
		int64_t sent = s[i].t_sent;
		assert_true(sent > 0);
		int64_t prev = 0;
		int tokens = 0;
		for (size_t k = 0; k < s[i].nev; k++) {
			if (!su_is_token_event(s[i].ev[k].data))
				continue;
			int64_t t = s[i].ev[k].t;
			if (tokens == 0) {
				from_role[*nttft] = (double)(t - s[i].ev[0].t) / 1e6;
				ttft[(*nttft)++] = (double)(t - sent) / 1e6;
			} else {
				itl[(*nitl)++] = (double)(t - prev) / 1e6;
			}
			prev = t;
			tokens++;
		}
		assert_int_equal(tokens, TOKENS);
		ttfb[*nttft - 1] = (double)(s[i].ev[0].t - sent) / 1e6;
		su_stream_free(&s[i]);
	}
}

static void check(const char *const *args, const char *path, const char *json, int chat,
		  double want_ttft, double want_itl)
{
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	double ttft[STREAMS * ROUNDS], role[STREAMS * ROUNDS], ttfb[STREAMS * ROUNDS];
	double itl[STREAMS * ROUNDS * TOKENS];
	size_t nttft = 0, nitl = 0;
	for (int r = 0; r < ROUNDS; r++)
		measure(c.port, path, json, ttft, &nttft, itl, &nitl, role, ttfb);
	double mt = su_median(ttft, nttft), mi = su_median(itl, nitl);
	printf("# %s: median TTFT %.3f ms (want %.1f), median ITL %.3f ms (want %.1f), %zu gaps\n",
	       path, mt, want_ttft, mi, want_itl, nitl);
	assert_true(mt >= want_ttft - 2.0 && mt <= want_ttft + 2.0);
	assert_true(mi >= want_itl - 0.5 && mi <= want_itl + 0.5);
	if (chat) {
		/* The role chunk goes out when the request is taken in, so a
		 * client can tell TTFB from TTFT, and the first token follows it
		 * by exactly --ttft. */
		double mr = su_median(role, nttft), mb = su_median(ttfb, nttft);
		printf("# median TTFB %.3f ms, first token - role chunk %.3f ms\n", mb, mr);
		assert_true(mb < want_ttft / 2);
		assert_true(mr >= want_ttft - 1.0 && mr <= want_ttft + 1.0);
	}
	assert_int_equal(su_stop(&c), 0);
}

static void test_fixed_chat(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "50ms", "--itl", "10ms", NULL };
	check(args, "/v1/chat/completions",
	      "{\"messages\":[{\"role\":\"user\",\"content\":\"time me\"}],\"max_tokens\":13,"
	      "\"ignore_eos\":true,\"stream\":true}",
	      1, 50.0, 10.0);
}

/* --ttft/--itl alone imply fixed timing; other values, other API. */
static void test_fixed_implied_completions(void **state)
{
	(void)state;
	static const char *const args[] = { "--ttft", "30ms", "--itl", "4ms", NULL };
	check(args, "/v1/completions",
	      "{\"prompt\":\"time me\",\"max_tokens\":13,\"ignore_eos\":true,\"stream\":true}", 0,
	      30.0, 4.0);
}

static int setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int teardown(void **state)
{
	su_teardown(state);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fixed_chat, su_teardown),
		cmocka_unit_test_teardown(test_fixed_implied_completions, su_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
