/* The sim's prefix cache, over HTTP to real processes: a prompt sharing
 * whole blocks with an earlier one reports them as
 * usage.prompt_tokens_details.cached_tokens and its time to first token
 * shrinks (read from the sim's own histogram, not the wall clock); the
 * prefix cache counters of /metrics are the sums over the answers; the
 * cache is an LRU of --kv-tokens / --kv-block-tokens blocks; and a context
 * past --max-model-len gets the 400 vLLM sends. */
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

#include "simutil.h"

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

/* "<p>0 <p>1 ... <p>(n-1)": n distinct words, n tokens for the sim's
 * tokenizer (see infertop/sim.h); words [0, shared) are "w<i>" for every
 * prefix p, so two texts share exactly their first `shared` tokens. */
static char *words(const char *p, int shared, int n)
{
	size_t cap = (size_t)n * 16 + 1;
	char *s = malloc(cap);
	assert_non_null(s);
	size_t o = 0;
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, cap - o, "%s%s%d", i ? " " : "", i < shared ? "w" : p, i);
	return s;
}

struct answer {
	long prompt, cached;
	long cache_n;		/* llama.cpp's timings.cache_n; -1 when absent */
	long prompt_n;
};

static long member(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v))
		fail_msg("no number '%s'", k);
	return (long)v->valuedouble;
}

/* The usage (and timings) of an answer, streamed or not: the only object
 * carrying "usage" in either. */
static void read_answer(const char *body, struct answer *a)
{
	const char *u = strstr(body, "\"usage\":");
	if (!u)
		fail_msg("no usage in %s", body);
	/* cJSON stops after the object: what follows it does not matter */
	cJSON *j = cJSON_Parse(u + 8);
	assert_non_null(j);
	a->prompt = member(j, "prompt_tokens");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "prompt_tokens_details");
	assert_true(cJSON_IsObject(d));
	a->cached = member(d, "cached_tokens");
	cJSON_Delete(j);
	a->cache_n = a->prompt_n = -1;
	const char *t = strstr(body, "\"timings\":");
	if (t) {
		j = cJSON_Parse(t + 10);
		assert_non_null(j);
		a->cache_n = member(j, "cache_n");
		a->prompt_n = member(j, "prompt_n");
		cJSON_Delete(j);
	}
}

/* One request with text as the prompt (chat: one user message after a
 * fixed system one), streamed or not; returns its usage. */
static void ask(int port, int chat, int stream, const char *text, int max_tokens, struct answer *a)
{
	size_t cap = strlen(text) + 512;
	char *body = malloc(cap);
	assert_non_null(body);
	const char *tail = stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}" : "";
	if (chat)
		snprintf(body, cap,
			 "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
			 "{\"role\":\"user\",\"content\":\"%s\"}],\"max_tokens\":%d,\"ignore_eos\":true%s}",
			 text, max_tokens, tail);
	else
		snprintf(body, cap, "{\"prompt\":\"%s\",\"max_tokens\":%d,\"ignore_eos\":true%s}", text,
			 max_tokens, tail);
	struct su_resp r;
	assert_int_equal(su_request(port, NULL, chat ? "/v1/chat/completions" : "/v1/completions", body,
				    30000, &r),
			 CURLE_OK);
	if (r.status != 200)
		fail_msg("status %ld: %s", r.status, r.body);
	read_answer(r.body, a);
	su_resp_free(&r);
	free(body);
}

static double metric(int port, const char *name)
{
	double v = su_metric(port, "/metrics", name, NULL);
	if (v < 0)
		fail_msg("metric %s missing", name);
	return v;
}

/* Fixed timing: the second prompt shares 170 tokens with the first (172
 * in chat, with the system message), so 10 whole 16-token blocks (160
 * tokens) are cached, and its TTFT is --ttft scaled by its uncached
 * share, 40 of 200 tokens (42 of 202). */
static void test_shared_prefix_fixed(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "100ms", "--itl", "1ms", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	char *a = words("a", 200, 200), *b = words("b", 170, 200);
	const char *ttft = "vllm:time_to_first_token_seconds_sum";
	for (int chat = 0; chat < 2; chat++) {
		struct answer x, y;
		double t0 = metric(c.port, ttft);
		ask(c.port, chat, 0, a, 4, &x);
		double t1 = metric(c.port, ttft);
		ask(c.port, chat, 1, b, 4, &y);
		double t2 = metric(c.port, ttft);
		printf("# %s: cached %ld then %ld; ttft %.6f s then %.6f s\n",
		       chat ? "chat" : "completions", x.cached, y.cached, t1 - t0, t2 - t1);
		/* chat: the system message's "be brief" adds 2 */
		assert_int_equal(x.prompt, 200 + 2 * chat);
		assert_int_equal(y.prompt, 200 + 2 * chat);
		/* the chat template's tokens are not counted: the first chat
		 * request does not hit the completions' blocks */
		assert_int_equal(x.cached, 0);
		assert_int_equal(y.cached, 160);
		assert_true(fabs((t1 - t0) - 0.1) < 1e-6);
		assert_true(fabs((t2 - t1) - 0.1 * (40 + 2 * chat) / (200 + 2 * chat)) < 1e-6);
	}
	free(a);
	free(b);
	assert_int_equal(su_stop(&c), 0);
}

/* Batching: 100 prompt tokens per 5 ms step. A 2000-token prompt takes
 * 20 steps to the first token; the same prompt again has every block but
 * the one holding its last token cached (1984 tokens) and needs one step. */
static void test_shared_prefix_batching(void **state)
{
	(void)state;
	static const char *const args[] = { "--step-time", "4ms", "--step-time-per-seq", "1ms",
					    "--prefill-rate", "20000", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	char *a = words("a", 0, 2000);
	const char *ttft = "vllm:time_to_first_token_seconds_sum";
	struct answer x, y;
	ask(c.port, 0, 1, a, 10, &x);
	double t1 = metric(c.port, ttft);
	ask(c.port, 0, 0, a, 10, &y);
	double t2 = metric(c.port, ttft);
	printf("# cached %ld then %ld; ttft %.6f s then %.6f s\n", x.cached, y.cached, t1, t2 - t1);
	assert_int_equal(x.cached, 0);
	assert_int_equal(y.cached, 1984);
	assert_true(fabs(t1 - 0.100) < 1e-9);
	assert_true(fabs((t2 - t1) - 0.005) < 1e-9);
	free(a);
	assert_int_equal(su_stop(&c), 0);
}

/* Requests of every kind with overlapping prefixes: the server's counters
 * are the sums of what the answers said, in each profile's names; the
 * llamacpp profile adds timings.cache_n, equal to cached_tokens. */
static void test_counters_are_sums(void **state)
{
	(void)state;
	static const char *const profiles[] = { "vllm", "sglang", "llamacpp" };
	for (size_t p = 0; p < sizeof profiles / sizeof profiles[0]; p++) {
		const char *args[] = { "--profile", profiles[p], "--timing", "fixed", "--ttft", "1ms",
				       "--itl", "1ms", "--kv-block-tokens", "8", NULL };
		struct sim_child c;
		assert_int_equal(su_spawn(args, &c), 0);
		long prompt = 0, cached = 0;
		for (int i = 0; i < 12; i++) {
			char pre[8];
			snprintf(pre, sizeof pre, "p%d", i % 3);
			/* shares 0 to 55 tokens with the earlier ones */
			char *t = words(pre, (i * 5) % 56, 40 + i);
			struct answer a;
			ask(c.port, i % 2, (i / 2) % 2, t, 2, &a);
			free(t);
			assert_int_equal(a.prompt, 40 + i + (i % 2) * 2);	/* chat: + "be brief" */
			assert_true(a.cached % 8 == 0 && a.cached < a.prompt);
			if (strcmp(profiles[p], "llamacpp") == 0) {
				assert_int_equal(a.cache_n, a.cached);
				assert_int_equal(a.prompt_n, a.prompt - a.cached);
			} else {
				assert_int_equal(a.cache_n, -1);
			}
			prompt += a.prompt;
			cached += a.cached;
		}
		printf("# %s: %ld of %ld prompt tokens cached\n", profiles[p], cached, prompt);
		assert_true(cached > 0);
		if (strcmp(profiles[p], "vllm") == 0) {
			assert_true(metric(c.port, "vllm:prefix_cache_queries_total") == (double)prompt);
			assert_true(metric(c.port, "vllm:prefix_cache_hits_total") == (double)cached);
		} else if (strcmp(profiles[p], "sglang") == 0) {
			assert_true(metric(c.port, "sglang:prompt_tokens_total") == (double)prompt);
			assert_true(metric(c.port, "sglang:cached_tokens_total") == (double)cached);
			assert_true(fabs(metric(c.port, "sglang:cache_hit_rate") -
					 (double)cached / (double)prompt) < 1e-12);
		} else {
			assert_true(metric(c.port, "llamacpp:prompt_tokens_cached_total") == (double)cached);
			/* llama.cpp counts prompt tokens without the cached ones */
			assert_true(metric(c.port, "llamacpp:prompt_tokens_total") ==
				    (double)(prompt - cached));
		}
		assert_int_equal(su_stop(&c), 0);
	}
}

/* 128 tokens of KV in 16-token blocks: room for 8 blocks, two prompts of
 * 65 tokens (4 whole blocks each). A is used again after B, so when C
 * arrives the least recently used blocks are B's: A still hits, B is gone.
 * (First-in-first-out would have evicted A; no eviction would keep B.) */
static void test_lru_eviction(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
					    "--kv-tokens", "128", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	char *a = words("a", 0, 65), *b = words("b", 0, 65), *cc = words("c", 0, 65);
	static const struct {
		char which;
		long cached;
	} steps[] = { { 'a', 0 }, { 'a', 64 }, { 'b', 0 }, { 'b', 64 }, { 'a', 64 },
		      { 'c', 0 }, { 'a', 64 }, { 'b', 0 } };
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		struct answer x;
		const char *t = steps[i].which == 'a' ? a : steps[i].which == 'b' ? b : cc;
		ask(c.port, 0, 0, t, 2, &x);
		if (x.cached != steps[i].cached)
			fail_msg("step %zu (%c): %ld tokens cached, want %ld", i, steps[i].which, x.cached,
				 steps[i].cached);
	}
	free(a);
	free(b);
	free(cc);
	assert_int_equal(su_stop(&c), 0);
}

/* {"object":"error","message":M,"type":"BadRequestError","param":null,"code":400} */
static void assert_context_error(int port, const char *body, const char *want)
{
	struct su_resp r;
	assert_int_equal(su_request(port, NULL, "/v1/completions", body, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 400);
	cJSON *j = cJSON_Parse(r.body);
	if (!j)
		fail_msg("not JSON: %s", r.body);
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "object");
	assert_true(cJSON_IsString(o) && strcmp(o->valuestring, "error") == 0);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
	assert_true(cJSON_IsString(m));
	assert_string_equal(m->valuestring, want);
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
	assert_true(cJSON_IsString(t) && strcmp(t->valuestring, "BadRequestError") == 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "param")));
	assert_int_equal(member(j, "code"), 400);
	cJSON_Delete(j);
	su_resp_free(&r);
}

static void assert_ok(int port, const char *body)
{
	struct su_resp r;
	assert_int_equal(su_request(port, NULL, "/v1/completions", body, 5000, &r), CURLE_OK);
	if (r.status != 200)
		fail_msg("status %ld: %s", r.status, r.body);
	su_resp_free(&r);
}

/* vLLM checks prompt + max_tokens against max_model_len (the prompt alone
 * when max_tokens is absent); --max-model-len sets it apart from
 * --kv-tokens, and /v1/models says it. */
static void test_context_too_long(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
					    "--kv-tokens", "1000", "--max-model-len", "100",
					    "--max-tokens-default", "3", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	char *p90 = words("a", 0, 90), *p100 = words("a", 0, 100), *p99 = words("a", 0, 99);
	char body[2048];
	snprintf(body, sizeof body, "{\"prompt\":\"%s\",\"max_tokens\":11}", p90);
	assert_context_error(c.port, body,
			     "This model's maximum context length is 100 tokens. However, you requested "
			     "101 tokens (90 in the messages, 11 in the completion). Please reduce the "
			     "length of the messages or completion.");
	snprintf(body, sizeof body, "{\"prompt\":\"%s\",\"max_tokens\":10}", p90);
	assert_ok(c.port, body);
	snprintf(body, sizeof body, "{\"prompt\":\"%s\"}", p100);
	assert_context_error(c.port, body,
			     "This model's maximum context length is 100 tokens. However, you requested "
			     "100 tokens in the messages, Please reduce the length of the messages.");
	/* no max_tokens: the default is cut to the room left */
	snprintf(body, sizeof body, "{\"prompt\":\"%s\",\"stream\":true,\"stream_options\":"
				    "{\"include_usage\":true}}", p99);
	struct su_resp r;
	assert_int_equal(su_request(c.port, NULL, "/v1/completions", body, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"completion_tokens\":1"));
	su_resp_free(&r);
	assert_int_equal(su_request(c.port, NULL, "/v1/models", NULL, 5000, &r), CURLE_OK);
	assert_non_null(strstr(r.body, "\"max_model_len\":100}"));
	su_resp_free(&r);
	free(p90);
	free(p100);
	free(p99);
	assert_int_equal(su_stop(&c), 0);
}

/* The answer's text of a non-streamed response (chat or completions). */
static char *answer_text(const char *body)
{
	cJSON *j = cJSON_Parse(body);
	assert_non_null(j);
	const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c0, "message");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(m ? m : c0, m ? "content" : "text");
	assert_true(cJSON_IsString(t));
	char *out = strdup(t->valuestring);
	assert_non_null(out);
	cJSON_Delete(j);
	return out;
}

/* A session's second turn sends the first turn's prompt and answer back:
 * the answer's blocks were cached as it was generated, so the hit covers
 * prompt and answer (122 tokens: 7 blocks, 112 tokens), not just the
 * first prompt (102 tokens: 6 blocks, 96). Completions alike, without
 * the chat roles: 120 shared tokens, 112 cached. */
static void test_answer_cached(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "1ms", "--itl", "1ms", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	char *p1 = words("a", 100, 100), *p2 = words("q", 0, 30);
	for (int chat = 0; chat < 2; chat++) {
		size_t cap = 8192;
		char *body = malloc(cap);
		assert_non_null(body);
		if (chat)
			snprintf(body, cap,
				 "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
				 "{\"role\":\"user\",\"content\":\"%s\"}],\"max_tokens\":20,\"ignore_eos\":true}",
				 p1);
		else
			snprintf(body, cap, "{\"prompt\":\"%s\",\"max_tokens\":20,\"ignore_eos\":true}", p1);
		const char *path = chat ? "/v1/chat/completions" : "/v1/completions";
		struct su_resp r;
		assert_int_equal(su_request(c.port, NULL, path, body, 5000, &r), CURLE_OK);
		assert_int_equal(r.status, 200);
		char *ans = answer_text(r.body);
		su_resp_free(&r);
		if (chat)
			snprintf(body, cap,
				 "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
				 "{\"role\":\"user\",\"content\":\"%s\"},"
				 "{\"role\":\"assistant\",\"content\":\"%s\"},"
				 "{\"role\":\"user\",\"content\":\"%s\"}],\"max_tokens\":2}",
				 p1, ans, p2);
		else
			snprintf(body, cap, "{\"prompt\":\"%s%s %s\",\"max_tokens\":2}", p1, ans, p2);
		free(ans);
		assert_int_equal(su_request(c.port, NULL, path, body, 5000, &r), CURLE_OK);
		assert_int_equal(r.status, 200);
		struct answer a;
		read_answer(r.body, &a);
		su_resp_free(&r);
		free(body);
		printf("# %s turn 2: %ld of %ld tokens cached\n", chat ? "chat" : "completions", a.cached,
		       a.prompt);
		assert_int_equal(a.prompt, 150 + 2 * chat);
		assert_int_equal(a.cached, 112);
	}
	free(p1);
	free(p2);
	assert_int_equal(su_stop(&c), 0);
}

/* --no-prefix-caching: the same prompt twice is prefilled twice. */
static void test_caching_off(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "10ms", "--itl", "1ms",
					    "--no-prefix-caching", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	char *a = words("a", 0, 100);
	struct answer x;
	for (int i = 0; i < 2; i++) {
		ask(c.port, 0, 0, a, 2, &x);
		assert_int_equal(x.cached, 0);
	}
	assert_true(metric(c.port, "vllm:prefix_cache_queries_total") == 200);
	assert_true(metric(c.port, "vllm:prefix_cache_hits_total") == 0);
	assert_true(fabs(metric(c.port, "vllm:time_to_first_token_seconds_sum") - 0.02) < 1e-6);
	free(a);
	assert_int_equal(su_stop(&c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_shared_prefix_fixed, su_teardown),
		cmocka_unit_test_teardown(test_shared_prefix_batching, su_teardown),
		cmocka_unit_test_teardown(test_counters_are_sums, su_teardown),
		cmocka_unit_test_teardown(test_lru_eviction, su_teardown),
		cmocka_unit_test_teardown(test_context_too_long, su_teardown),
		cmocka_unit_test_teardown(test_answer_cached, su_teardown),
		cmocka_unit_test_teardown(test_caching_off, su_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
