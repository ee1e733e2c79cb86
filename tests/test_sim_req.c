/* Pure pieces of the sim: the tokenizer, request body validation, block
 * hashes and the LRU of the prefix cache, fault kind lists and the seeded
 * RNG. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim_internal.h"
#include "sim/sim_req.h"

static long count(const char *s)
{
	return sim_tokenize_text(s, strlen(s), NULL, NULL);
}

struct toks {
	char t[16][16];
	int n;
};

static void grab(void *ud, const char *tok, size_t len)
{
	struct toks *k = ud;
	if (k->n < 16 && len < 16) {
		memcpy(k->t[k->n], tok, len);
		k->t[k->n][len] = '\0';
	}
	k->n++;
}

static void test_tokenizer(void **state)
{
	(void)state;
	assert_int_equal(count(""), 0);
	assert_int_equal(count("   \t\n "), 0);
	assert_int_equal(count("word"), 1);
	assert_int_equal(count("two words"), 2);
	assert_int_equal(count("Hello, world!"), 4);
	assert_int_equal(count("..."), 1);
	assert_int_equal(count("don't"), 3);
	assert_int_equal(count("a.b.c"), 5);
	assert_int_equal(count("(x)"), 3);
	assert_int_equal(count("caf\xc3\xa9 na\xc3\xafve"), 2);	/* UTF-8 bytes are word bytes */
	assert_int_equal(count("3.14"), 3);
	assert_int_equal(count("x\r\ny"), 2);

	struct toks k = { .n = 0 };
	assert_int_equal(sim_tokenize_text("Hi, you...ok", 12, grab, &k), 5);
	assert_int_equal(k.n, 5);
	assert_string_equal(k.t[0], "Hi");
	assert_string_equal(k.t[1], ",");
	assert_string_equal(k.t[2], "you");
	assert_string_equal(k.t[3], "...");
	assert_string_equal(k.t[4], "ok");
	/* explicit length: a NUL is an ordinary byte and what follows counts */
	assert_int_equal(sim_tokenize_text("a\0b", 3, NULL, NULL), 1);
	assert_int_equal(sim_tokenize_text("a\0 b", 4, NULL, NULL), 2);

	assert_int_equal(sim_token_id("abc", 3), sim_token_id("abc", 3));
	assert_true(sim_token_id("abc", 3) != sim_token_id("abd", 3));
	assert_true(sim_token_id("zzzzzz", 6) < SIM_VOCAB);
}

static int parse(const char *body, enum sim_api api, struct sim_req *r, char *err, size_t cap)
{
	return sim_req_parse(body, strlen(body), api, r, NULL, 0, NULL, err, cap);
}

static void test_parse_fields(void **state)
{
	(void)state;
	struct sim_req r;
	char err[256];
	assert_int_equal(parse("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a b\"},"
			       "{\"role\":\"assistant\",\"content\":null}],\"max_tokens\":7,"
			       "\"min_tokens\":2,\"ignore_eos\":true,\"stream\":true,"
			       "\"stream_options\":{\"include_usage\":true}}",
			       SIM_API_CHAT, &r, err, sizeof err),
			 0);
	assert_int_equal(r.api, SIM_API_CHAT);
	assert_int_equal(r.model_len, 1);
	assert_string_equal(r.model, "m");
	assert_int_equal(r.prompt_tokens, 2);
	assert_int_equal(r.max_tokens, 7);
	assert_int_equal(r.min_tokens, 2);
	assert_int_equal(r.ignore_eos, 1);
	assert_int_equal(r.stream, 1);
	assert_int_equal(r.include_usage, 1);

	assert_int_equal(parse("{\"prompt\":\"x y z\"}", SIM_API_COMPLETIONS, &r, err, sizeof err), 0);
	assert_int_equal(r.model_len, -1);
	assert_int_equal(r.max_tokens, -1);
	assert_int_equal(r.min_tokens, 0);
	assert_int_equal(r.stream, 0);
	assert_int_equal(r.prompt_tokens, 3);

	assert_int_equal(parse("{\"prompt\":[[1,2,3,4,5]],\"max_completion_tokens\":3,\"max_tokens\":9}",
			       SIM_API_COMPLETIONS, &r, err, sizeof err),
			 0);
	assert_int_equal(r.prompt_tokens, 5);
	assert_int_equal(r.max_tokens, 3);

	/* /tokenize picks the API by the field present */
	assert_int_equal(parse("{\"messages\":[{\"role\":\"u\",\"content\":\"q\"}]}", SIM_API_TOKENIZE, &r,
			       err, sizeof err),
			 0);
	assert_int_equal(r.api, SIM_API_CHAT);
	assert_int_equal(parse("{\"prompt\":\"q\"}", SIM_API_TOKENIZE, &r, err, sizeof err), 0);
	assert_int_equal(r.api, SIM_API_COMPLETIONS);

	/* a model name too long to be served never matches */
	char big[600];
	int o = snprintf(big, sizeof big, "{\"prompt\":\"q\",\"model\":\"");
	memset(big + o, 'm', 300);
	snprintf(big + o + 300, sizeof big - (size_t)o - 300, "\"}");
	assert_int_equal(parse(big, SIM_API_COMPLETIONS, &r, err, sizeof err), 0);
	assert_int_equal(r.model_len, SIM_MODEL_MAX + 1);

	uint32_t ids[8];
	size_t nids = 99;
	assert_int_equal(sim_req_parse("{\"prompt\":\"a b a c d e f g h i\"}", 32, SIM_API_TOKENIZE, &r,
				       ids, 8, &nids, err, sizeof err),
			 0);
	assert_int_equal(r.prompt_tokens, 10);
	assert_int_equal(nids, 8);
	assert_int_equal(ids[0], ids[2]);
	assert_int_equal(ids[0], sim_token_id("a", 1));
}

static void test_parse_errors(void **state)
{
	(void)state;
	static const struct {
		const char *body;
		enum sim_api api;
		const char *want;	/* in the message */
	} cases[] = {
		{ "", SIM_API_CHAT, "empty" },
		{ "{", SIM_API_CHAT, "JSON" },
		{ "null", SIM_API_CHAT, "object" },
		{ "{}", SIM_API_CHAT, "messages" },
		{ "{}", SIM_API_COMPLETIONS, "prompt" },
		{ "{\"prompt\":5}", SIM_API_COMPLETIONS, "prompt" },
		{ "{\"prompt\":[]}", SIM_API_COMPLETIONS, "prompt" },
		{ "{\"prompt\":[1,\"a\"]}", SIM_API_COMPLETIONS, "token ids" },
		{ "{\"prompt\":[1,-2]}", SIM_API_COMPLETIONS, "token ids" },
		{ "{\"prompt\":[\"a\",\"b\"]}", SIM_API_COMPLETIONS, "batched" },
		{ "{\"prompt\":[{}]}", SIM_API_COMPLETIONS, "prompt" },
		{ "{\"messages\":{}}", SIM_API_CHAT, "messages" },
		{ "{\"messages\":[1]}", SIM_API_CHAT, "object" },
		{ "{\"messages\":[{\"role\":1}]}", SIM_API_CHAT, "role" },
		{ "{\"messages\":[{\"role\":\"u\",\"content\":5}]}", SIM_API_CHAT, "content" },
		{ "{\"messages\":[{\"role\":\"u\",\"content\":[5]}]}", SIM_API_CHAT, "parts" },
		{ "{\"messages\":[{\"role\":\"u\",\"content\":[{\"text\":1}]}]}", SIM_API_CHAT, "text" },
		{ "{\"prompt\":\"x\",\"model\":[]}", SIM_API_COMPLETIONS, "model" },
		{ "{\"prompt\":\"x\",\"max_tokens\":0}", SIM_API_COMPLETIONS, "max_tokens" },
		{ "{\"prompt\":\"x\",\"max_tokens\":1e300}", SIM_API_COMPLETIONS, "max_tokens" },
		{ "{\"prompt\":\"x\",\"max_completion_tokens\":1.5}", SIM_API_COMPLETIONS,
		  "max_completion_tokens" },
		{ "{\"prompt\":\"x\",\"min_tokens\":-1}", SIM_API_COMPLETIONS, "min_tokens" },
		{ "{\"prompt\":\"x\",\"max_tokens\":2,\"min_tokens\":3}", SIM_API_COMPLETIONS, "min_tokens" },
		{ "{\"prompt\":\"x\",\"stream\":1}", SIM_API_COMPLETIONS, "stream" },
		{ "{\"prompt\":\"x\",\"ignore_eos\":\"true\"}", SIM_API_COMPLETIONS, "ignore_eos" },
		{ "{\"prompt\":\"x\",\"stream_options\":[]}", SIM_API_COMPLETIONS, "stream_options" },
		{ "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":0}}", SIM_API_COMPLETIONS,
		  "include_usage" },
		{ "{\"prompt\":\"x\"} trailing", SIM_API_COMPLETIONS, "JSON" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sim_req r;
		char err[256];
		if (parse(cases[i].body, cases[i].api, &r, err, sizeof err) != -1)
			fail_msg("accepted %s", cases[i].body);
		if (!strstr(err, cases[i].want))
			fail_msg("%s: message '%s' lacks '%s'", cases[i].body, err, cases[i].want);
	}
}

static void test_fault_lists(void **state)
{
	(void)state;
	unsigned m = 0;
	char bad[32];
	assert_int_equal(sim_fault_parse_list("all", &m, bad, sizeof bad), 0);
	assert_int_equal(m, (1u << SIM_FAULT_COUNT) - 1);
	assert_int_equal(sim_fault_parse_list("500,stall", &m, bad, sizeof bad), 0);
	assert_int_equal(m, (1u << SIM_FAULT_500) | (1u << SIM_FAULT_STALL));
	assert_int_equal(sim_fault_parse_list("slow-headers", &m, bad, sizeof bad), 0);
	assert_int_equal(m, 1u << SIM_FAULT_SLOW_HEADERS);
	assert_int_equal(sim_fault_parse_list("500,,429", &m, bad, sizeof bad), -1);
	assert_string_equal(bad, "");
	assert_int_equal(sim_fault_parse_list("disconnect,oops", &m, bad, sizeof bad), -1);
	assert_string_equal(bad, "oops");
	for (int k = 0; k < SIM_FAULT_COUNT; k++) {
		assert_int_equal(sim_fault_parse_list(sim_fault_name((enum sim_fault)k), &m, bad, sizeof bad),
				 0);
		assert_int_equal(m, 1u << k);
	}

	/* rate 0 never, rate 1 always, and only listed kinds */
	struct sim_rng r = { 9 };
	unsigned only = (1u << SIM_FAULT_429) | (1u << SIM_FAULT_MALFORMED);
	int hits[SIM_FAULT_COUNT] = { 0 };
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(sim_fault_pick(&r, 0, only), SIM_FAULT_NONE);
		enum sim_fault f = sim_fault_pick(&r, 1, only);
		assert_true(f == SIM_FAULT_429 || f == SIM_FAULT_MALFORMED);
		hits[f]++;
	}
	assert_true(hits[SIM_FAULT_429] > 400 && hits[SIM_FAULT_MALFORMED] > 400);

	/* mid-stream positions: after a first token, before the last */
	for (int i = 0; i < 1000; i++) {
		int32_t p = sim_fault_position(&r, SIM_FAULT_DISCONNECT, 5);
		assert_true(p >= 1 && p <= 4);
		p = sim_fault_position(&r, SIM_FAULT_MALFORMED, 5);
		assert_true(p >= 0 && p <= 4);
	}
	assert_int_equal(sim_fault_position(&r, SIM_FAULT_STALL, 1), 0);
	assert_int_equal(sim_fault_position(&r, SIM_FAULT_500, 9), -1);
}

static void test_rng(void **state)
{
	(void)state;
	struct sim_rng a = { 42 }, b = { 42 }, c = { 43 };
	for (int i = 0; i < 100; i++) {
		uint64_t x = sim_rng_next(&a);
		assert_true(x == sim_rng_next(&b));
		assert_true(x != sim_rng_next(&c));
	}
	double sum = 0;
	for (int i = 0; i < 10000; i++) {
		double u = sim_rng_unit(&a);
		assert_true(u >= 0 && u < 1);
		sum += u;
		assert_true(sim_rng_below(&a, 7) < 7);
	}
	assert_true(sum / 10000 > 0.45 && sum / 10000 < 0.55);
	assert_int_equal(sim_rng_below(&a, 0), 0);
}

static void blocks_of(const char *body, long bt, struct sim_blocks *b, long *tokens)
{
	struct sim_req r;
	char err[256];
	b->block_tokens = bt;
	enum sim_api api = strstr(body, "\"messages\"") ? SIM_API_CHAT : SIM_API_COMPLETIONS;
	if (sim_req_parse_blocks(body, strlen(body), api, &r, b, err, sizeof err) != 0)
		fail_msg("%s: %s", body, err);
	*tokens = r.prompt_tokens;
}

/* Whole blocks only, chained: block k's hash changes with any token
 * before its end and with nothing after; text and its ids hash alike;
 * a chat message's role is part of its content's hash; an answer
 * appended hashes as the same text sent in the next prompt. */
static void test_block_hashes(void **state)
{
	(void)state;
	struct sim_blocks a, b;
	long na, nb;
	blocks_of("{\"prompt\":\"a b c d e f g\"}", 3, &a, &na);
	assert_int_equal(na, 7);
	assert_int_equal(a.n, 2);
	blocks_of("{\"prompt\":\"a b c d e f x y z\"}", 3, &b, &nb);
	assert_int_equal(b.n, 3);
	assert_true(a.hash[0] == b.hash[0] && a.hash[1] == b.hash[1]);
	assert_true(b.hash[2] != b.hash[1] && b.hash[1] != b.hash[0]);
	free(b.hash);
	blocks_of("{\"prompt\":\"X b c d e f\"}", 3, &b, &nb);
	assert_true(a.hash[0] != b.hash[0] && a.hash[1] != b.hash[1]);	/* chained */
	free(b.hash);
	/* the same tokens as ids */
	char ids[256];
	snprintf(ids, sizeof ids, "{\"prompt\":[%u,%u,%u,%u,%u,%u]}", sim_token_id("a", 1),
		 sim_token_id("b", 1), sim_token_id("c", 1), sim_token_id("d", 1), sim_token_id("e", 1),
		 sim_token_id("f", 1));
	blocks_of(ids, 3, &b, &nb);
	assert_int_equal(b.n, 2);
	assert_true(a.hash[0] == b.hash[0] && a.hash[1] == b.hash[1]);
	free(b.hash);
	blocks_of("{\"prompt\":\"a b\"}", 3, &b, &nb);
	assert_int_equal(b.n, 0);
	assert_null(b.hash);
	free(a.hash);

	blocks_of("{\"messages\":[{\"role\":\"user\",\"content\":\"a b c d\"}]}", 2, &a, &na);
	blocks_of("{\"messages\":[{\"role\":\"system\",\"content\":\"a b c d\"}]}", 2, &b, &nb);
	assert_int_equal(na, 4);
	assert_int_equal(a.n, 2);
	assert_true(a.hash[0] != b.hash[0]);
	free(b.hash);
	/* where one message ends and the next begins is part of the prompt */
	blocks_of("{\"messages\":[{\"role\":\"user\",\"content\":\"a b\"},"
		  "{\"role\":\"user\",\"content\":\"c d\"}]}", 2, &b, &nb);
	assert_int_equal(nb, 4);
	assert_true(a.hash[0] == b.hash[0] && a.hash[1] != b.hash[1]);
	free(b.hash);
	free(a.hash);

	/* an answer continues its prompt as the next turn will send it back */
	blocks_of("{\"prompt\":\"a b c\"}", 2, &a, &na);
	assert_int_equal(sim_blocks_append(&a, NULL, " d e f", 6), 0);
	blocks_of("{\"prompt\":\"a b c d e f\"}", 2, &b, &nb);
	assert_int_equal(a.tokens, 6);
	assert_int_equal(a.n, 3);
	assert_int_equal(b.n, 3);
	assert_memory_equal(a.hash, b.hash, 3 * sizeof *a.hash);
	free(a.hash);
	free(b.hash);
	blocks_of("{\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"}]}", 2, &a, &na);
	assert_int_equal(sim_blocks_append(&a, "assistant", " d e f", 6), 0);
	blocks_of("{\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"},"
		  "{\"role\":\"assistant\",\"content\":\"d e f\"},"
		  "{\"role\":\"user\",\"content\":\"g\"}]}", 2, &b, &nb);
	assert_int_equal(a.n, 3);
	assert_int_equal(b.n, 3);
	assert_memory_equal(a.hash, b.hash, 3 * sizeof *a.hash);
	free(a.hash);
	free(b.hash);

	/* a bad body leaves nothing to free */
	struct sim_req r;
	char err[256];
	b.block_tokens = 1;
	assert_int_equal(sim_req_parse_blocks("{\"prompt\":\"a b\",\"max_tokens\":0}", 30,
					      SIM_API_COMPLETIONS, &r, &b, err, sizeof err), -1);
	assert_null(b.hash);
	assert_int_equal(b.n, 0);
}

/* The cache alone: leading hits only, capped, least recently used
 * evicted first, a prompt's first block kept longest. */
static void test_cache_lru(void **state)
{
	(void)state;
	struct sim_cache c;
	sim_cache_init(&c, 4);
	const uint64_t p[] = { 11, 12, 13 }, q[] = { 21, 22 }, r[] = { 11, 99, 13 };
	assert_int_equal(sim_cache_lookup(&c, p, 3, 3), 0);
	assert_int_equal(sim_cache_lookup(&c, p, 3, 2), 2);	/* max_hit */
	assert_int_equal(sim_cache_lookup(&c, r, 3, 3), 1);	/* leading only; 99 enters, 13 is MRU */
	assert_int_equal(c.n, 4);
	/* order now 11, 99, 13, 12: q evicts 12 then 13 */
	assert_int_equal(sim_cache_lookup(&c, q, 2, 2), 0);
	assert_int_equal(c.evictions, 2);
	assert_int_equal(sim_cache_lookup(&c, q, 2, 2), 2);
	assert_int_equal(sim_cache_lookup(&c, p, 1, 1), 1);	/* 11 survived */
	assert_int_equal(sim_cache_lookup(&c, r + 1, 1, 1), 1);	/* 99 too */
	sim_cache_fini(&c);

	/* many blocks through a small cache: the table stays consistent */
	sim_cache_init(&c, 300);
	uint64_t *h = malloc(1000 * sizeof *h);
	assert_non_null(h);
	for (int i = 0; i < 1000; i++)
		h[i] = (uint64_t)i * 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < 1000; i += 10)
		assert_int_equal(sim_cache_lookup(&c, h + i, 10, 10), 0);
	assert_int_equal(c.n, 300);
	assert_int_equal(sim_cache_lookup(&c, h + 700, 300, 300), 300);
	assert_int_equal(sim_cache_lookup(&c, h + 690, 10, 10), 0);
	sim_cache_fini(&c);
	free(h);

	sim_cache_init(&c, 0);	/* a KV smaller than a block caches nothing */
	assert_int_equal(sim_cache_lookup(&c, p, 3, 3), 0);
	assert_int_equal(sim_cache_lookup(&c, p, 3, 3), 0);
	sim_cache_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokenizer),
		cmocka_unit_test(test_block_hashes),
		cmocka_unit_test(test_cache_lru),
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_fault_lists),
		cmocka_unit_test(test_rng),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
