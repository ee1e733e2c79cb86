/* What a session's request keeps, end to end against a simulator process:
 * the kept answer (request.answer, the bytes oai_chunk.text_off/text_len
 * point at) is the server's text, and the prefix-cache count the server
 * sends (usage.prompt_tokens_details.cached_tokens) reaches req_result.
 *
 * The next turn sends the kept bytes back verbatim as the assistant
 * message: the simulator caches a finished answer as exactly that message
 * (infertop sim --help), so the turn finds every whole block of the
 * conversation in its cache only if the bytes are the answer byte for
 * byte; and its cached_tokens is what the simulator's own counter
 * (vllm:prefix_cache_hits_total) moved by. The server's hit rate read
 * from two scrapes of its /metrics (the server panel's "prefix hit") is
 * then the cached share of the prompt tokens the two turns sent. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <ev.h>

#include "infertop/clock.h"
#include "infertop/openai.h"
#include "infertop/profile.h"
#include "infertop/request.h"
#include "infertop/server.h"
#include "enginefix.h"
#include "simutil.h"

#define ANSWER_TOKENS 24
#define BLOCK 16 /* the simulator's --kv-block-tokens */

struct turn {
	struct ev_loop *loop;
	struct req_result res;
	bool done;
	char *streamed; /* delta.content of every output chunk, decoded by cJSON */
	size_t streamed_len;
};

static void on_done(void *ud, struct request *r, const struct req_result *res)
{
	(void)r;
	struct turn *t = ud;
	t->res = *res;
	t->res.msg = NULL;
	t->done = true;
	ev_break(t->loop, EVBREAK_ALL);
}

/* Independent of the parser's offsets: each output chunk read whole. */
static void on_output(void *ud, const struct request *r, const char *data, size_t len)
{
	(void)r;
	struct turn *t = ud;
	cJSON *j = cJSON_ParseWithLength(data, len);
	assert_non_null(j);
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
	const cJSON *content = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "delta"), "content");
	assert_true(cJSON_IsString(content));
	size_t n = strlen(content->valuestring);
	t->streamed = realloc(t->streamed, t->streamed_len + n + 1);
	assert_non_null(t->streamed);
	memcpy(t->streamed + t->streamed_len, content->valuestring, n + 1);
	t->streamed_len += n;
	cJSON_Delete(j);
}

static void give_up(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* One chat request with these messages, its answer kept in *a. */
static void run_turn(struct enginefix *f, const char *messages, struct request_answer *a, uint32_t turn,
		     struct turn *t)
{
	memset(t, 0, sizeof *t);
	t->loop = f->loop;
	struct request_ctx ctx = f->e->rctx;
	ctx.on_done = on_done;
	ctx.ud = t;
	ctx.on_output = on_output;
	ctx.detail_ud = t;
	struct oai_request_opts o = f->e->ropts;
	o.max_tokens = ANSWER_TOKENS;
	o.ignore_eos = true;
	size_t len;
	char *body = oai_body_build_messages(&o, messages, &len);
	assert_non_null(body);
	struct request *r = request_new(&ctx);
	assert_non_null(r);
	r->answer = a;
	r->turn = turn;
	assert_int_equal(request_start(r, body, len, clock_now_ns()), 0);
	ev_timer guard;
	ev_timer_init(&guard, give_up, 20., 0.);
	ev_timer_start(f->loop, &guard);
	ev_run(f->loop, 0);
	ev_timer_stop(f->loop, &guard);
	assert_true(t->done);
	request_free(r);
	assert_true(t->res.ok);
	assert_int_equal(t->res.turn, turn);
}

/* The sim's /metrics into the tracker the server panel reads. */
static void scrape(struct enginefix *f, struct profile_tracker *t, struct server_state *st)
{
	struct su_resp resp;
	assert_int_equal(su_request(f->sim.port, NULL, "/metrics", NULL, 5000, &resp), CURLE_OK);
	assert_int_equal(resp.status, 200);
	char err[256];
	if (profile_tracker_update(t, resp.body, resp.len, 0, clock_now_ns(), st, err, sizeof err) != 0)
		fail_msg("profile_tracker_update: %s", err);
	su_resp_free(&resp);
}

static void test_kept_answer_and_cached_tokens(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "2ms", "--itl", "1ms", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-n", "1", NULL};
	enginefix_engine(f, args);

	/* Turn 1: 40 distinct words, 40 prompt tokens; nothing cached yet. */
	char user1[512] = "", user2[] = "and what next";
	for (int i = 0; i < 40; i++)
		snprintf(user1 + strlen(user1), sizeof user1 - strlen(user1), "%sq%d", i ? " " : "", i);
	char m1[1024];
	snprintf(m1, sizeof m1, "[{\"role\":\"user\",\"content\":\"%s\"}]", user1);
	char err[256];
	struct profile_tracker *pt = profile_tracker_new(PROFILE_AUTO, NULL, 0, 600 * CLOCK_NS_PER_S,
							 CLOCK_NS_PER_S, err, sizeof err);
	assert_non_null(pt);
	struct server_state st;
	server_state_init(&st);
	scrape(f, pt, &st);
	struct request_answer a = {0};
	struct turn t1;
	double hits0 = su_metric(f->sim.port, "/metrics", "vllm:prefix_cache_hits_total", NULL);
	run_turn(f, m1, &a, 1, &t1);
	assert_int_equal(t1.res.prompt_tokens, 40);
	assert_int_equal(t1.res.output_tokens, ANSWER_TOKENS);
	assert_int_equal(t1.res.cached_tokens, 0);
	assert_false(a.too_long);

	/* The kept bytes, as a JSON string, are what the chunks said. */
	assert_true(a.len > 0);
	char *quoted = malloc(a.len + 3);
	assert_non_null(quoted);
	quoted[0] = '"';
	memcpy(quoted + 1, a.buf, a.len);
	memcpy(quoted + 1 + a.len, "\"", 2);
	cJSON *kept = cJSON_Parse(quoted);
	assert_true(cJSON_IsString(kept));
	assert_non_null(t1.streamed);
	assert_string_equal(kept->valuestring, t1.streamed);
	cJSON_Delete(kept);
	free(quoted);

	/* Turn 2 resends it verbatim: user1 and the answer are cached, all
	 * their whole blocks (the new words after them are not). */
	size_t cap = a.len + 2048;
	char *m2 = malloc(cap);
	assert_non_null(m2);
	snprintf(m2, cap,
		 "[{\"role\":\"user\",\"content\":\"%s\"},{\"role\":\"assistant\",\"content\":\"%.*s\"},"
		 "{\"role\":\"user\",\"content\":\"%s\"}]",
		 user1, (int)a.len, a.buf, user2);
	struct request_answer a2 = {0};
	struct turn t2;
	double hits1 = su_metric(f->sim.port, "/metrics", "vllm:prefix_cache_hits_total", NULL);
	run_turn(f, m2, &a2, 2, &t2);
	assert_int_equal(t2.res.prompt_tokens, 40 + ANSWER_TOKENS + 3);
	assert_int_equal(t2.res.cached_tokens, (40 + ANSWER_TOKENS) / BLOCK * BLOCK);
	double hits2 = su_metric(f->sim.port, "/metrics", "vllm:prefix_cache_hits_total", NULL);
	assert_true(hits1 - hits0 == 0);
	assert_true(hits2 - hits1 == (double)t2.res.cached_tokens);
	assert_true(a2.len > 0);

	scrape(f, pt, &st);
	assert_string_equal(st.detected, "vllm");
	assert_true(st.gauge[SRV_PREFIX_HIT].valid);
	double want = (double)t2.res.cached_tokens / (double)(t1.res.prompt_tokens + t2.res.prompt_tokens);
	assert_true(st.gauge[SRV_PREFIX_HIT].v == want);
	profile_tracker_free(pt);

	free(m2);
	free(a.buf);
	free(a2.buf);
	free(t1.streamed);
	free(t2.streamed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kept_answer_and_cached_tokens, enginefix_setup,
						enginefix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
