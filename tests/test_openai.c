#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/openai.h"
#include "infertop/sse.h"
#include "testutil.h"

static void assert_same_chunk(const struct oai_chunk *a, const struct oai_chunk *b)
{
	assert_int_equal(a->valid, b->valid);
	assert_int_equal(a->choices, b->choices);
	assert_int_equal(a->output, b->output);
	assert_int_equal(a->finish, b->finish);
	assert_int_equal(a->usage, b->usage);
	assert_int_equal(a->prompt_tokens, b->prompt_tokens);
	assert_int_equal(a->completion_tokens, b->completion_tokens);
	assert_int_equal(a->cached_tokens, b->cached_tokens);
	assert_int_equal(a->has_text, b->has_text);
	assert_int_equal(a->text_off, b->text_off);
	assert_int_equal(a->text_len, b->text_len);
	assert_int_equal(a->error, b->error);
	assert_string_equal(a->error_msg, b->error_msg);
}

/* One memo for every chunk a test parses, as a stream's: what it learns
 * from one chunk is tried on the next. */
static struct oai_memo memo;

static int memo_reset(void **state)
{
	(void)state;
	memset(&memo, 0, sizeof memo);
	return 0;
}

/* Parses with all four entry points; they must agree. need_fast: the
 * fast path must handle it without falling back. */
static int parse3(const char *json, size_t len, struct oai_chunk *out, bool need_fast)
{
	struct oai_chunk ref, fast, memoed;
	int rr = oai_chunk_parse_cjson(json, len, &ref);
	int rc = oai_chunk_parse(json, len, out);
	assert_int_equal(rc, rr);
	assert_int_equal(out->valid, rc == 0);
	assert_same_chunk(out, &ref);
	int rf = oai_chunk_parse_fast(json, len, &fast);
	if (need_fast && rf != 0)
		fail_msg("fast path fell back on: %.*s", (int)len, json);
	if (rf == 0)
		assert_same_chunk(&fast, &ref);
	assert_int_equal(oai_chunk_parse_memo(&memo, json, len, &memoed), rr);
	assert_same_chunk(&memoed, &ref);
	return rc;
}

static int parse_lit(const char *json, struct oai_chunk *out, bool need_fast)
{
	return parse3(json, strlen(json), out, need_fast);
}

/* The kept bytes, between quotes, decode to what a cJSON tree of the
 * chunk holds in its choice's delta.content or text; no text when the tree
 * has no such string. Single-choice chunks (the captures'). */
static void check_text_by_tree(const char *json, size_t len, const struct oai_chunk *c)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	assert_non_null(root);
	const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "choices"), 0);
	const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "delta"), "content");
	if (!cJSON_IsString(want))
		want = cJSON_GetObjectItem(choice, "text");
	assert_int_equal(c->has_text, cJSON_IsString(want));
	if (c->has_text) {
		assert_true((size_t)c->text_off + c->text_len < len);
		assert_int_equal(json[c->text_off - 1], '"');
		char *q = malloc((size_t)c->text_len + 3);
		assert_non_null(q);
		q[0] = '"';
		memcpy(q + 1, json + c->text_off, c->text_len);
		memcpy(q + 1 + c->text_len, "\"", 2);
		cJSON *got = cJSON_Parse(q);
		assert_true(cJSON_IsString(got));
		assert_string_equal(got->valuestring, want->valuestring);
		cJSON_Delete(got);
		free(q);
	}
	cJSON_Delete(root);
}

/* ---- the llama.cpp captures ---- */

struct stream_facts {
	size_t chunks, output, finish, usage_chunks, done;
	size_t first_output; /* index of the first output chunk + 1 */
	size_t finish_at, usage_at; /* index + 1 */
	bool finish_with_output;
	struct oai_chunk first, last_usage;
	/* Independent of the JSON code: chunks whose raw text has a non-empty
	 * "content":"... or "text":"... */
	size_t raw_output;
	int64_t cached; /* the last cached_tokens said, -1: none */
};

static int facts_cb(void *ud, const struct sse_event *ev)
{
	struct stream_facts *f = ud;
	if (ev->kind == SSE_DONE) {
		f->done++;
		return 0;
	}
	assert_int_equal(ev->kind, SSE_DATA);
	assert_int_equal(f->done, 0);
	struct oai_chunk c;
	assert_int_equal(parse3(ev->data, ev->len, &c, true), 0);
	assert_false(c.error);
	check_text_by_tree(ev->data, ev->len, &c);
	f->chunks++;
	if (c.cached_tokens >= 0)
		f->cached = c.cached_tokens;
	if (f->chunks == 1)
		f->first = c;
	if (c.output) {
		f->output++;
		if (!f->first_output)
			f->first_output = f->chunks;
	}
	if (c.finish) {
		f->finish++;
		f->finish_at = f->chunks;
		f->finish_with_output = c.output;
	}
	if (c.usage) {
		f->usage_chunks++;
		f->usage_at = f->chunks;
		f->last_usage = c;
	}
	/* Raw check; the captures escape quotes as \" so a non-empty string
	 * never starts with a bare quote. */
	char *tmp = malloc(ev->len + 1);
	assert_non_null(tmp);
	memcpy(tmp, ev->data, ev->len);
	tmp[ev->len] = '\0';
	const char *p = strstr(tmp, "\"content\":\"");
	const char *t = strstr(tmp, "\"text\":\"");
	if ((p && p[11] != '"') || (t && t[8] != '"'))
		f->raw_output++;
	free(tmp);
	return 0;
}

static void stream_facts(const char *name, struct stream_facts *f, long *raw_completion,
			 long *raw_prompt)
{
	size_t len;
	char *buf = testutil_fixture("llamacpp", name, &len);
	memset(f, 0, sizeof *f);
	f->cached = -1;
	struct sse_parser p;
	assert_int_equal(sse_init(&p, 0), 0);
	assert_int_equal(sse_feed(&p, buf, len, facts_cb, f), 0);
	assert_int_equal(f->done, 1);
	sse_free(&p);
	const char *u = strstr(buf, "\"completion_tokens\":");
	const char *q = strstr(buf, "\"prompt_tokens\":");
	assert_non_null(u);
	assert_non_null(q);
	*raw_completion = strtol(u + 20, NULL, 10);
	*raw_prompt = strtol(q + 16, NULL, 10);
	free(buf);
}

static void test_fixture_chat(void **state)
{
	(void)state;
	struct stream_facts f;
	long ct, pt;
	stream_facts("chat_stream.txt", &f, &ct, &pt);
	/* Role-only first chunk with "content":null: an event, not output. */
	assert_true(f.first.valid);
	assert_true(f.first.choices);
	assert_false(f.first.output);
	assert_false(f.first.finish);
	assert_false(f.first.usage);
	assert_int_equal(f.first_output, 2);
	/* README: 64 tokens arrive in only 54 content chunks. */
	assert_int_equal(f.output, f.raw_output);
	assert_int_equal(f.output, 54);
	/* One finish chunk (empty delta), then usage alone with "choices":[]. */
	assert_int_equal(f.finish, 1);
	assert_false(f.finish_with_output);
	assert_int_equal(f.usage_chunks, 1);
	assert_int_equal(f.usage_at, f.chunks);
	assert_int_equal(f.finish_at + 1, f.usage_at);
	assert_false(f.last_usage.choices);
	assert_int_equal(f.last_usage.completion_tokens, ct);
	assert_int_equal(f.last_usage.completion_tokens, 64);
	assert_int_equal(f.last_usage.prompt_tokens, pt);
	assert_int_equal(f.chunks, 1 + f.output + 2);
	/* Nothing cached on that first request (both places say 0). */
	assert_int_equal(f.last_usage.cached_tokens, 0);
	assert_int_equal(f.cached, 0);
}

static void test_fixture_clean_chat(void **state)
{
	(void)state;
	struct stream_facts f;
	long ct, pt;
	stream_facts("clean_chat_stream.txt", &f, &ct, &pt);
	assert_false(f.first.output);
	assert_int_equal(f.output, f.raw_output);
	/* README: one chunk per token. */
	assert_int_equal(f.output, (size_t)ct);
	assert_int_equal(f.last_usage.completion_tokens, 64);
	assert_int_equal(f.last_usage.prompt_tokens, pt);
	assert_int_equal(f.finish, 1);
	assert_false(f.last_usage.choices);
}

static void test_fixture_completions(void **state)
{
	(void)state;
	struct stream_facts f;
	long ct, pt;
	stream_facts("completions_stream.txt", &f, &ct, &pt);
	assert_true(f.first.output);
	assert_int_equal(f.output, f.raw_output);
	/* README: usage arrives inside the last chunk, with finish_reason. */
	assert_int_equal(f.finish, 1);
	assert_int_equal(f.usage_chunks, 1);
	assert_int_equal(f.finish_at, f.chunks);
	assert_int_equal(f.usage_at, f.chunks);
	assert_true(f.last_usage.choices);
	assert_true(f.last_usage.finish);
	assert_int_equal(f.last_usage.completion_tokens, ct);
	assert_int_equal(f.last_usage.completion_tokens, 64);
	assert_int_equal(f.last_usage.prompt_tokens, pt);
	/* Every chunk before the last carries text, the last has "". */
	assert_int_equal(f.output, f.chunks - 1);
	/* One prompt token was in llama-server's cache: usage's
	 * prompt_tokens_details and timings.cache_n both say 1. */
	assert_int_equal(f.last_usage.cached_tokens, 1);
	/* llama.cpp repeats all but the text (and "created", once a second):
	 * most chunks are read from the memo. */
	assert_true(memo.hits >= f.chunks / 2);
}

/* A session's second turn on llama-server with its prompt cache: the
 * cached count in both of its places, and each chunk's answer bytes. */
static void test_fixture_session_turn(void **state)
{
	(void)state;
	struct stream_facts f;
	long ct, pt;
	stream_facts("session_turn2.txt", &f, &ct, &pt);
	size_t len;
	char *buf = testutil_fixture("llamacpp", "session_turn2.txt", &len);
	const char *u = strstr(buf, "\"cached_tokens\":");
	const char *n = strstr(buf, "\"cache_n\":");
	assert_non_null(u);
	assert_non_null(n);
	long raw_cached = strtol(u + 16, NULL, 10), raw_cache_n = strtol(n + 10, NULL, 10);
	free(buf);
	assert_int_equal(raw_cached, 117);
	assert_int_equal(raw_cache_n, raw_cached);
	assert_int_equal(f.last_usage.cached_tokens, raw_cached);
	assert_int_equal(f.cached, raw_cached);
	assert_true(f.last_usage.cached_tokens < pt);
	assert_int_equal(f.usage_at, f.chunks);
}

/* ---- the memo: a chunk shaped as the last one ---- */

static int memo_parse(const char *json, struct oai_chunk *out)
{
	struct oai_chunk ref;
	int rr = oai_chunk_parse_cjson(json, strlen(json), &ref);
	int rc = oai_chunk_parse_memo(&memo, json, strlen(json), out);
	assert_int_equal(rc, rr);
	assert_same_chunk(out, &ref);
	return rc;
}

#define CHUNK(text) "{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"" text "\",\"finish_reason\":null}]}"

static void test_memo(void **state)
{
	(void)state;
	struct oai_chunk c;
	uint32_t h = 0;
#define HIT(json, want_output) do { memo_parse(json, &c); assert_int_equal(memo.hits, ++h); \
		assert_int_equal(c.output, want_output); } while (0)
#define MISS(json) do { memo_parse(json, &c); assert_int_equal(memo.hits, h); } while (0)
	MISS(CHUNK(" one"));                      /* learned */
	assert_int_not_equal(memo.pre, 0);
	HIT(CHUNK(" two"), true);
	HIT(CHUNK(""), false);                    /* empty: no output */
	HIT(CHUNK("\\u0000x"), false);           /* reads as empty in cJSON */
	HIT(CHUNK("a \\\"quoted\\\" \\\\ \\u00e9 \\ud83d\\ude00 \xc3\xa9"), true);
	HIT(CHUNK("\\\",\\\"finish_reason\\\":null}]}"), true); /* the suffix, escaped, inside */
	/* The string ends early and the rest differs: read whole. */
	MISS("{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"stop\"}]}");
	assert_true(c.finish);
	/* That was learned: its shape now carries finish. */
	HIT("{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"yz\",\"finish_reason\":\"stop\"}]}", true);
	assert_true(c.finish);
	MISS(CHUNK("w"));                         /* back to the first shape */
	assert_false(c.finish);
	HIT(CHUNK("v"), true);
	/* The closing quote where the suffix should start, text after it. */
	MISS(CHUNK("a\",\"text\":\"b"));
	/* Bad strings: a raw control byte, a lone surrogate, a bad escape. */
	MISS(CHUNK("a\x01b"));
	MISS(CHUNK("\\udc00"));
	MISS(CHUNK("\\q"));
	/* Cut short, one byte more, one byte different after the string. */
	MISS("{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":null}]");
	MISS(CHUNK("x") " ");
	MISS("{\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":nulL}]}");
	/* A different prefix (another request's id) misses and is learned. */
	MISS("{\"id\":\"cmpl-2\",\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":null}]}");
	HIT("{\"id\":\"cmpl-2\",\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":null}]}", false);

	/* Two output strings: which one made the output is not one string's
	 * business, so such a chunk is not learned. */
	memo_reset(NULL);
	h = 0;
	const char *two = "{\"choices\":[{\"delta\":{\"content\":\"\",\"reasoning_content\":\"r\"}}]}";
	MISS(two);
	assert_true(c.output);
	assert_int_equal(memo.pre, 0);
	MISS("{\"choices\":[{\"delta\":{\"content\":\"x\",\"reasoning_content\":\"\"}}]}");
	/* An error is not learned; a usage chunk with text is, numbers and all. */
	MISS("{\"error\":{\"message\":\"boom\"},\"choices\":[{\"text\":\"a\"}]}");
	assert_true(c.error);
	assert_int_equal(memo.pre, 0);
	MISS("{\"choices\":[{\"text\":\"a\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}");
	HIT("{\"choices\":[{\"text\":\"bc\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}", true);
	assert_true(c.usage);
	assert_int_equal(c.prompt_tokens, 7);
	assert_int_equal(c.completion_tokens, 9);
	/* null where the string was: read whole. */
	MISS("{\"choices\":[{\"text\":null}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}");
	assert_false(c.output);

	/* What sessions take from a hit: the answer where the memo's prefix
	 * ends, the cached-token count learned with the rest. */
	memo_reset(NULL);
	h = 0;
	MISS("{\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":9,"
	     "\"prompt_tokens_details\":{\"cached_tokens\":4}},\"timings\":{\"cache_n\":4}}");
	const char *t = "{\"choices\":[{\"text\":\"b\\\"c\",\"finish_reason\":\"length\"}],\"usage\":"
			"{\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":4}},\"timings\":{\"cache_n\":4}}";
	HIT(t, true);
	assert_int_equal(c.cached_tokens, 4);
	assert_true(c.has_text);
	assert_int_equal(c.text_off, memo.pre);
	assert_int_equal(c.text_len, strlen(t) - memo.pre - memo.suf);
	assert_memory_equal(t + c.text_off, "b\\\"c", c.text_len);
	/* A reasoning stream's memo: output, never the answer. */
	memo_reset(NULL);
	h = 0;
	MISS("{\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"x\"}}]}");
	HIT("{\"choices\":[{\"delta\":{\"content\":null,\"reasoning_content\":\"yz\"}}]}", true);
	assert_false(c.has_text);
	assert_int_equal(c.cached_tokens, -1);
	/* Its answer after it: another shape, learned as the answer. */
	MISS("{\"choices\":[{\"delta\":{\"content\":\"x\",\"reasoning_content\":null}}]}");
	HIT("{\"choices\":[{\"delta\":{\"content\":\"\",\"reasoning_content\":null}}]}", false);
	assert_true(c.has_text);
	assert_int_equal(c.text_len, 0);

	/* A chunk too long to keep is parsed and not learned. */
	memo_reset(NULL);
	h = 0;
	char big[OAI_MEMO_BYTES + 200];
	int n = snprintf(big, sizeof big, "{\"pad\":\"%0*d\",\"choices\":[{\"text\":\"a\"}]}", OAI_MEMO_BYTES, 0);
	assert_true(n > 0 && (size_t)n < sizeof big);
	MISS(big);
	assert_int_equal(memo.pre, 0);
	MISS(big);
#undef HIT
#undef MISS
}

/* ---- common server shapes: all on the fast path ---- */

static void test_server_shapes(void **state)
{
	(void)state;
	struct oai_chunk c;

	/* vLLM */
	parse_lit("{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1732000000,"
		  "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":"
		  "{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}",
		  &c, true);
	assert_true(c.choices);
	assert_false(c.output);
	parse_lit("{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":"
		  "\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" Hello\"},\"logprobs\":null,"
		  "\"finish_reason\":null}]}",
		  &c, true);
	assert_true(c.output);
	assert_false(c.finish);
	assert_false(c.usage);
	assert_int_equal(c.completion_tokens, -1);
	assert_int_equal(c.prompt_tokens, -1);
	parse_lit("{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
		  "\"finish_reason\":\"stop\",\"stop_reason\":null}]}",
		  &c, true);
	assert_true(c.finish);
	assert_false(c.output);
	parse_lit("{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
		  "\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"total_tokens\":140,"
		  "\"completion_tokens\":128}}",
		  &c, true);
	assert_false(c.choices);
	assert_true(c.usage);
	assert_int_equal(c.completion_tokens, 128);
	assert_int_equal(c.prompt_tokens, 12);
	/* vLLM reasoning (late 2025), SGLang / llama.cpp reasoning_content. */
	parse_lit("{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"Let me think\"},"
		  "\"finish_reason\":null}]}",
		  &c, true);
	assert_true(c.output);
	parse_lit("{\"id\":\"7f\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"qwen\","
		  "\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":null,"
		  "\"reasoning_content\":\"Hmm\",\"tool_calls\":null},\"logprobs\":null,"
		  "\"finish_reason\":null,\"matched_stop\":null}],\"usage\":null}",
		  &c, true);
	assert_true(c.output);
	assert_false(c.usage);
	parse_lit("{\"choices\":[{\"delta\":{\"content\":\"\",\"reasoning_content\":\"\","
		  "\"reasoning\":null}}]}",
		  &c, true);
	assert_false(c.output);
	/* TGI */
	parse_lit("{\"object\":\"chat.completion.chunk\",\"id\":\"\",\"created\":1732000000,\"model\":"
		  "\"tgi\",\"system_fingerprint\":\"2.4.0-native\",\"choices\":[{\"index\":0,\"delta\":"
		  "{\"role\":\"assistant\",\"content\":\"Hi\"},\"logprobs\":null,\"finish_reason\":null}],"
		  "\"usage\":null}",
		  &c, true);
	assert_true(c.output);
	/* OpenAI completions */
	parse_lit("{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"x\","
		  "\"choices\":[{\"text\":\" the\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}",
		  &c, true);
	assert_true(c.output);
	/* Output in a choice other than the first. */
	parse_lit("{\"choices\":[{\"index\":0,\"delta\":{}},{\"index\":1,\"delta\":{\"content\":\"y\"}}]}",
		  &c, true);
	assert_true(c.output);
	/* Escapes and unicode escapes are output too; \u0000 first is empty
	 * (as in cJSON's C strings). */
	parse_lit("{\"choices\":[{\"delta\":{\"content\":\"\\u00e9\\ud83d\\ude00\\n\\\"\"}}]}", &c,
		  true);
	assert_true(c.output);
	parse_lit("{\"choices\":[{\"delta\":{\"content\":\"\\u0000abc\"}}]}", &c, true);
	assert_false(c.output);
	/* Whitespace between every token. */
	parse_lit(" { \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } , \"finish_reason\" : "
		  "null } ] , \"usage\" : { \"completion_tokens\" : 7 } } \r\n",
		  &c, true);
	assert_true(c.output);
	assert_int_equal(c.completion_tokens, 7);
	/* Nested arrays around and among choices. */
	parse_lit("{\"choices\":[[1,[2,[3,{\"a\":[]}]]],{\"delta\":{\"content\":\"x\"}}],"
		  "\"extra\":[[[[[[]]]]]]}",
		  &c, true);
	assert_true(c.output);
	/* Duplicate keys: the first one counts, as with cJSON lookups. */
	parse_lit("{\"choices\":[],\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null,"
		  "\"usage\":{\"completion_tokens\":5}}",
		  &c, true);
	assert_false(c.choices);
	assert_false(c.output);
	assert_false(c.usage);
	parse_lit("{\"choices\":[{\"delta\":{\"content\":null,\"content\":\"x\"},\"finish_reason\":null,"
		  "\"finish_reason\":\"stop\"}]}",
		  &c, true);
	assert_false(c.output);
	assert_false(c.finish);
}

/* ---- what sessions take: the cached-token count and the answer's text ---- */

/* c's text is exactly the bytes `raw` where they first stand in json
 * between quotes. */
static void assert_text(const char *json, const struct oai_chunk *c, const char *raw)
{
	assert_true(c->has_text);
	char needle[256];
	snprintf(needle, sizeof needle, "\"%s\"", raw);
	const char *at = strstr(json, needle);
	assert_non_null(at);
	assert_int_equal(c->text_off, at + 1 - json);
	assert_int_equal(c->text_len, strlen(raw));
}

static void test_cached_tokens(void **state)
{
	(void)state;
	struct oai_chunk c;
	/* vLLM's (and SGLang's) usage chunk. */
	parse_lit("{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
		  "\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"total_tokens\":1328,"
		  "\"completion_tokens\":128,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, 1024);
	assert_int_equal(c.prompt_tokens, 1200);
	assert_false(c.has_text);
	/* Prefix caching off: vLLM sends null details, or none at all. */
	parse_lit("{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,"
		  "\"prompt_tokens_details\":null}}",
		  &c, true);
	assert_true(c.usage);
	assert_int_equal(c.cached_tokens, -1);
	parse_lit("{\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,"
		  "\"prompt_tokens_details\":{\"cached_tokens\":null,\"audio_tokens\":0}}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, -1);
	/* llama.cpp's last chunk with timings only (builds before it filled
	 * prompt_tokens_details), finish and all. */
	parse_lit("{\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\"created\":1,"
		  "\"id\":\"chatcmpl-x\",\"model\":\"tiny.gguf\",\"object\":\"chat.completion.chunk\","
		  "\"timings\":{\"prompt_n\":12,\"prompt_ms\":2.4,\"cache_n\":37,\"predicted_n\":64,"
		  "\"predicted_ms\":14.5,\"predicted_per_second\":4329.3}}",
		  &c, true);
	assert_true(c.finish);
	assert_false(c.usage);
	assert_int_equal(c.cached_tokens, 37);
	/* Both: usage's count wins; timings stands in when usage's is not a
	 * count. */
	parse_lit("{\"usage\":{\"completion_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":5}},"
		  "\"timings\":{\"cache_n\":7}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, 5);
	parse_lit("{\"timings\":{\"cache_n\":7},\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":5}}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, 5);
	parse_lit("{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":\"5\"}},\"timings\":{\"cache_n\":7}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, 7);
	parse_lit("{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":-5}},\"timings\":{\"cache_n\":7}}",
		  &c, false);
	assert_int_equal(c.cached_tokens, 7);
	/* Only at those places: not timings nested deeper, not a top-level
	 * cached_tokens, not usage.cached_tokens. */
	parse_lit("{\"x\":{\"timings\":{\"cache_n\":7}},\"cached_tokens\":3,\"usage\":{\"cached_tokens\":4}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, -1);
	/* Duplicate keys: the first one counts. */
	parse_lit("{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":2,\"cached_tokens\":9},"
		  "\"prompt_tokens_details\":{\"cached_tokens\":8}},\"timings\":null,\"timings\":{\"cache_n\":1}}",
		  &c, true);
	assert_int_equal(c.cached_tokens, 2);
	parse_lit("{\"timings\":null,\"timings\":{\"cache_n\":1}}", &c, true);
	assert_int_equal(c.cached_tokens, -1);
	/* Numbers cJSON converts: a fraction truncated, 2^53 the limit. */
	parse_lit("{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":12.9}}}", &c, false);
	assert_int_equal(c.cached_tokens, 12);
	parse_lit("{\"timings\":{\"cache_n\":1e300}}", &c, false);
	assert_int_equal(c.cached_tokens, -1);
	parse_lit("{\"timings\":{\"cache_n\":0}}", &c, true);
	assert_int_equal(c.cached_tokens, 0);
}

static void test_answer_text(void **state)
{
	(void)state;
	struct oai_chunk c;
	const char *j;
	/* vLLM chat: the JSON-escaped bytes as sent. */
	j = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
	    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"say \\\"hi\\\" \\\\ a\\nb caf\\u00e9 "
	    "\xc3\xa9 \\ud83d\\ude00\"},\"logprobs\":null,\"finish_reason\":null}]}";
	parse_lit(j, &c, true);
	assert_text(j, &c, "say \\\"hi\\\" \\\\ a\\nb caf\\u00e9 \xc3\xa9 \\ud83d\\ude00");
	/* The role chunk: "" is text (of nothing), null is none. */
	j = "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}";
	parse_lit(j, &c, true);
	assert_true(c.has_text);
	assert_int_equal(c.text_len, 0);
	assert_int_equal(c.text_off, strstr(j, "\"\"}") - j + 1);
	parse_lit("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}", &c, true);
	assert_false(c.has_text);
	/* Reasoning is output, not the answer. */
	parse_lit("{\"choices\":[{\"index\":0,\"delta\":{\"role\":null,\"content\":null,"
		  "\"reasoning_content\":\"Hmm\"}}]}",
		  &c, true);
	assert_true(c.output);
	assert_false(c.has_text);
	parse_lit("{\"choices\":[{\"delta\":{\"reasoning\":\"Let me think\"}}]}", &c, true);
	assert_true(c.output);
	assert_false(c.has_text);
	j = "{\"choices\":[{\"delta\":{\"reasoning_content\":\"r\",\"content\":\"answer\",\"reasoning\":\"s\"}}]}";
	parse_lit(j, &c, true);
	assert_text(j, &c, "answer");
	/* Completions: text. */
	j = "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"x\","
	    "\"choices\":[{\"text\":\" the\\t\\/end\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}";
	parse_lit(j, &c, true);
	assert_text(j, &c, " the\\t\\/end");
	/* Duplicate keys: the first one counts, at every level. */
	j = "{\"choices\":[{\"delta\":{\"content\":\"first\",\"content\":\"second\"}}]}";
	parse_lit(j, &c, true);
	assert_text(j, &c, "first");
	parse_lit("{\"choices\":[{\"delta\":{\"content\":null,\"content\":\"x\"}}]}", &c, true);
	assert_false(c.has_text);
	j = "{\"choices\":[{\"delta\":{\"content\":\"a\"},\"delta\":{\"content\":\"b\"}}],"
	    "\"choices\":[{\"text\":\"c\"}]}";
	parse_lit(j, &c, true);
	assert_text(j, &c, "a");
	/* Not the answer: a string elsewhere, content that is not a string. */
	parse_lit("{\"choices\":[{\"delta\":{\"text\":\"x\",\"content\":7},\"content\":\"y\"}],"
		  "\"text\":\"z\"}",
		  &c, true);
	assert_false(c.has_text);
	/* Two answers (n > 1, or content and text in one choice): which one
	 * goes on is not the parser's guess. */
	parse_lit("{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}},"
		  "{\"index\":1,\"delta\":{\"content\":\"b\"}}]}",
		  &c, true);
	assert_false(c.has_text);
	parse_lit("{\"choices\":[{\"text\":\"a\",\"delta\":{\"content\":\"b\"}}]}", &c, true);
	assert_false(c.has_text);
	/* One answer among choices that have none. */
	j = "{\"choices\":[1,{\"delta\":{}},{\"delta\":{\"content\":\"only\"}},{\"text\":null}]}";
	parse_lit(j, &c, true);
	assert_text(j, &c, "only");

	/* Where the fast path leaves the chunk to cJSON, the bytes are found
	 * all the same: escaped keys, deep nesting before the answer, odd
	 * whitespace, a BOM. */
	j = "{\"a\\u0062\":[\"}\\\"]\",{\"]\":[]}],\"cho\\u0069ces\":[\"x\",{\"d\\u0065lta\":{\"content\":\"e\\\"s\"},"
	    "\"text\":5}]}";
	assert_int_equal(parse_lit(j, &c, false), 0);
	assert_text(j, &c, "e\\\"s");
	assert_int_equal(oai_chunk_parse_fast(j, strlen(j), &c), -1);
	char deep[300];
	strcpy(deep, "{\"a\":");
	for (int i = 0; i < 60; i++)
		strcat(deep, "[");
	for (int i = 0; i < 60; i++)
		strcat(deep, "]");
	strcat(deep, ",\"choices\":[{\"text\":\"t\\\"u\"}]}");
	assert_int_equal(parse_lit(deep, &c, false), 0);
	assert_text(deep, &c, "t\\\"u");
	j = "\x01{\x02\"choices\"\x03:\x04[\x05{\"delta\"\x06:{\"content\":\"w\"}}]}";
	assert_int_equal(parse_lit(j, &c, false), 0);
	assert_text(j, &c, "w");
	j = "\xef\xbb\xbf{\"choices\":[{\"text\":\"bom\"}]}";
	assert_int_equal(parse_lit(j, &c, false), 0);
	assert_text(j, &c, "bom");
	/* A raw control byte in the text: cJSON's, fast path bails. */
	j = "{\"choices\":[{\"text\":\"a\x01b\"}]}";
	assert_int_equal(parse_lit(j, &c, false), 0);
	assert_text(j, &c, "a\x01b");
}

static void test_error_shapes(void **state)
{
	(void)state;
	struct oai_chunk c;
	/* vLLM */
	parse_lit("{\"error\":{\"object\":\"error\",\"message\":\"The model `x` does not exist.\","
		  "\"type\":\"NotFoundError\",\"param\":null,\"code\":404}}",
		  &c, true);
	assert_true(c.valid);
	assert_true(c.error);
	assert_false(c.choices);
	assert_string_equal(c.error_msg, "The model `x` does not exist.");
	/* SGLang */
	parse_lit("{\"error\": {\"message\": \"Requested token count exceeds the limit\", "
		  "\"type\": \"BadRequestError\", \"code\": 400}}",
		  &c, true);
	assert_true(c.error);
	assert_string_equal(c.error_msg, "Requested token count exceeds the limit");
	/* TGI */
	parse_lit("{\"error\":\"Input validation error: `inputs` must be <= 4096\","
		  "\"error_type\":\"validation\"}",
		  &c, true);
	assert_true(c.error);
	assert_string_equal(c.error_msg, "Input validation error: `inputs` must be <= 4096");
	/* Escapes decoded, control characters shown as spaces, stops at NUL. */
	parse_lit("{\"error\":{\"message\":\"caf\\u00e9 \\ud83d\\ude00 a\\nb \\\"q\\\" \\/ \\u0000 gone\"}}",
		  &c, true);
	assert_string_equal(c.error_msg, "caf\xc3\xa9 \xf0\x9f\x98\x80 a b \"q\" / ");
	/* An error object without a message is still an error. */
	parse_lit("{\"error\":{\"code\":500,\"message\":null}}", &c, true);
	assert_true(c.error);
	assert_string_equal(c.error_msg, "");
	parse_lit("{\"error\":null,\"choices\":[]}", &c, true);
	assert_false(c.error);
	parse_lit("{\"error\":42}", &c, true);
	assert_false(c.error);

	/* Long messages: truncated on a character boundary. */
	char json[600];
	strcpy(json, "{\"error\":{\"message\":\"");
	size_t n = strlen(json);
	memset(json + n, 'x', 190);
	n += 190;
	strcpy(json + n, "\\u00e9tail and more text here\"}}");
	parse_lit(json, &c, true);
	assert_int_equal(strlen(c.error_msg), 190);
	strcpy(json + n - 1, "\\u00e9tail\"}}");
	parse_lit(json, &c, true);
	assert_int_equal(strlen(c.error_msg), 191);
	assert_memory_equal(c.error_msg + 189, "\xc3\xa9", 2);
}

static void test_invalid_and_odd(void **state)
{
	(void)state;
	struct oai_chunk c;
	static const char *const invalid[] = {
		"",
		"{\"choices\":[{\"delta\":{\"content\":\"x\"}}",
		"{\"choices\":[]} x",
		"{\"choices\":[]}{}",
		"[1,2,3]",
		"\"str\"",
		"null",
		"{\"a\":1,}",
		"{\"a\":nul}",
		"{\"error\":\"\\ud800\"}",
		"{\"error\":\"\\x\"}",
		"{\"a\" 1}",
		"{'a':1}",
		"not json at all",
	};
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		assert_int_equal(parse_lit(invalid[i], &c, false), -1);
		assert_false(c.valid);
		assert_false(c.error);
		assert_int_equal(c.completion_tokens, -1);
	}
	/* A NUL after the object is garbage too. */
	assert_int_equal(parse3("{\"a\":1}\0", 8, &c, false), -1);
	/* Trailing whitespace is fine. */
	assert_int_equal(parse_lit("{\"choices\":[]} \r\n\t", &c, true), 0);

	/* Shapes the fast path leaves to cJSON: same answers either way. */
	assert_int_equal(parse_lit("{\"cho\\u0069ces\":[{\"delta\":{\"content\":\"x\"}}]}", &c, false), 0);
	assert_true(c.output);
	assert_int_equal(parse_lit("{\"usage\":{\"completion_tokens\":1e2,\"prompt_tokens\":-3}}", &c,
				   false),
			 0);
	assert_true(c.usage);
	assert_int_equal(c.completion_tokens, 100);
	assert_int_equal(c.prompt_tokens, -1);
	assert_int_equal(parse_lit("{\"usage\":{\"completion_tokens\":12.7}}", &c, false), 0);
	assert_int_equal(c.completion_tokens, 12);
	assert_int_equal(parse_lit("{\"usage\":{\"completion_tokens\":\"5\"}}", &c, true), 0);
	assert_false(c.usage);
	/* cJSON reads an invalid \u escape as NUL: empty, not output. */
	assert_int_equal(parse_lit("{\"choices\":[{\"delta\":{\"content\":\"\\uZZZZ\"}}]}", &c, false), 0);
	assert_false(c.output);
	/* Leading non-JSON control bytes: cJSON skips them as whitespace. */
	assert_int_equal(parse_lit("\x01{\"choices\":[1]}", &c, false), 0);
	assert_true(c.choices);

	char deep[200];
	strcpy(deep, "{\"a\":");
	for (int i = 0; i < 60; i++)
		strcat(deep, "[");
	for (int i = 0; i < 60; i++)
		strcat(deep, "]");
	strcat(deep, ",\"choices\":[{\"text\":\"t\"}]}");
	assert_int_equal(parse_lit(deep, &c, false), 0);
	assert_true(c.output);
}

/* Every seed of the differential fuzz target, replayed here too. */
static void test_fuzz_corpus_agrees(void **state)
{
	(void)state;
	const char *src = getenv("INFERTOP_SRCDIR");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/chunk", src ? src : ".");
	DIR *dp = opendir(dir);
	if (!dp)
		fail_msg("cannot open %s (set INFERTOP_SRCDIR)", dir);
	struct dirent *e;
	int files = 0;
	while ((e = readdir(dp)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[4400];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		char buf[8192];
		size_t n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		struct oai_chunk c;
		/* The captures' chunks must all stay on the fast path. */
		parse3(buf, n, &c, strncmp(e->d_name, "llamacpp_", 9) == 0);
		files++;
	}
	closedir(dp);
	assert_true(files > 100);
}

/* ---- request bodies and helpers ---- */

static cJSON *parse_body(const char *body, size_t len)
{
	assert_non_null(body);
	assert_int_equal(strlen(body), len);
	cJSON *j = cJSON_Parse(body);
	assert_non_null(j);
	return j;
}

static void test_body_build(void **state)
{
	(void)state;
	struct oai_request_opts o = {
		.api = OAI_CHAT, .model = "m1", .max_tokens = 128, .ignore_eos = true,
		.have_temperature = true, .temperature = 0.5,
	};
	size_t len = 0;
	char *body = oai_body_build(&o, "Hi \"there\"\n", &len);
	cJSON *j = parse_body(body, len);
	assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "m1");
	cJSON *msgs = cJSON_GetObjectItem(j, "messages");
	assert_true(cJSON_IsArray(msgs));
	assert_int_equal(cJSON_GetArraySize(msgs), 1);
	cJSON *m = cJSON_GetArrayItem(msgs, 0);
	assert_string_equal(cJSON_GetObjectItem(m, "role")->valuestring, "user");
	assert_string_equal(cJSON_GetObjectItem(m, "content")->valuestring, "Hi \"there\"\n");
	assert_null(cJSON_GetObjectItem(j, "prompt"));
	assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 128);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "stream")));
	assert_true(cJSON_IsTrue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stream_options"), "include_usage")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ignore_eos")));
	assert_int_equal(cJSON_GetObjectItem(j, "min_tokens")->valueint, 128);
	assert_true(cJSON_GetObjectItem(j, "temperature")->valuedouble == 0.5);
	cJSON_Delete(j);
	free(body);

	/* Completions, no ignore_eos, no temperature, no model. */
	struct oai_request_opts c = { .api = OAI_COMPLETIONS, .max_tokens = 16 };
	body = oai_body_build(&c, "Once upon", &len);
	j = parse_body(body, len);
	assert_string_equal(cJSON_GetObjectItem(j, "prompt")->valuestring, "Once upon");
	assert_null(cJSON_GetObjectItem(j, "messages"));
	assert_null(cJSON_GetObjectItem(j, "model"));
	assert_null(cJSON_GetObjectItem(j, "ignore_eos"));
	assert_null(cJSON_GetObjectItem(j, "min_tokens"));
	assert_null(cJSON_GetObjectItem(j, "temperature"));
	assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 16);
	cJSON_Delete(j);
	free(body);

	/* extra_body: merged last, replacing whole members. */
	cJSON *extra = cJSON_Parse("{\"max_tokens\":5,\"top_p\":0.9,"
				   "\"stream_options\":{\"include_usage\":false},\"model\":\"m2\"}");
	assert_non_null(extra);
	o.extra_body = extra;
	body = oai_body_build(&o, "x", NULL);
	j = parse_body(body, strlen(body));
	assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 5);
	assert_true(cJSON_GetObjectItem(j, "top_p")->valuedouble == 0.9);
	assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "m2");
	assert_true(cJSON_IsFalse(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stream_options"), "include_usage")));
	/* No duplicated keys after the merge. */
	int n_max = 0;
	cJSON *it;
	cJSON_ArrayForEach(it, j)
		n_max += strcmp(it->string, "max_tokens") == 0;
	assert_int_equal(n_max, 1);
	cJSON_Delete(j);
	free(body);
	cJSON_Delete(extra);

	extra = cJSON_Parse("[1]");
	o.extra_body = extra;
	assert_null(oai_body_build(&o, "x", NULL));
	cJSON_Delete(extra);
}

static void test_models_first_id(void **state)
{
	(void)state;
	size_t len;
	char *buf = testutil_fixture("llamacpp", "models.json", &len);
	char id[64];
	assert_int_equal(oai_models_first_id(buf, len, id, sizeof id), 0);
	/* The id found independently in the raw text. */
	const char *d = strstr(buf, "\"data\":[{\"id\":\"");
	assert_non_null(d);
	d += strlen("\"data\":[{\"id\":\"");
	assert_memory_equal(id, d, strlen(id));
	assert_int_equal(d[strlen(id)], '"');
	assert_string_equal(id, "tiny.gguf");
	char small[4];
	assert_int_equal(oai_models_first_id(buf, len, small, sizeof small), -1);
	free(buf);

	const char *two = "{\"object\":\"list\",\"data\":[{\"object\":\"model\"},{\"id\":\"b\"},{\"id\":\"c\"}]}";
	assert_int_equal(oai_models_first_id(two, strlen(two), id, sizeof id), 0);
	assert_string_equal(id, "b");
	assert_int_equal(oai_models_first_id("{\"data\":[]}", 11, id, sizeof id), -1);
	assert_int_equal(oai_models_first_id("{\"data\":", 8, id, sizeof id), -1);
	assert_int_equal(oai_models_first_id("", 0, id, sizeof id), -1);
}

static void test_error_body_message(void **state)
{
	(void)state;
	static const struct {
		const char *body, *want;
	} cases[] = {
		{ "{\"error\":{\"message\":\"bad model\",\"type\":\"x\"},\"message\":\"no\"}", "bad model" },
		{ "{\"error\":\"tgi says no\",\"error_type\":\"validation\"}", "tgi says no" },
		{ "{\"object\":\"error\",\"message\":\"old vllm\",\"code\":400}", "old vllm" },
		{ "{\"detail\":\"Not Found\"}", "Not Found" },
		{ "{\"detail\":[{\"loc\":[\"body\",\"model\"],\"msg\":\"field required\"}]}", "field required" },
		{ "{\"error\":{\"message\":\"\"},\"message\":\"fallback\"}", "fallback" },
		{ "{\"error\":{\"message\":\"line1\\nline2\"}}", "line1 line2" },
		{ "Internal Server Error\r\n\r\n   retry later  \n", "Internal Server Error retry later" },
		{ "{\"unrelated\":true}", "{\"unrelated\":true}" },
		{ "", "" },
	};
	char out[256];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		oai_error_body_message(cases[i].body, strlen(cases[i].body), out, sizeof out);
		assert_string_equal(out, cases[i].want);
	}

	char html[1000];
	strcpy(html, "<html><body>");
	for (int i = 0; i < 50; i++)
		strcat(html, "<p>oops</p>\n");
	oai_error_body_message(html, strlen(html), out, sizeof out);
	assert_int_equal(strlen(out), 160);
	assert_memory_equal(out, "<html><body><p>oops</p> <p>", 27);

	const char *cafes = "{\"error\":\"caf\xc3\xa9s\"}";
	char tiny[8];
	oai_error_body_message(cafes, strlen(cafes), tiny, sizeof tiny);
	assert_string_equal(tiny, "caf\xc3\xa9s");
	char tinier[5];
	oai_error_body_message(cafes, strlen(cafes), tinier, sizeof tinier);
	assert_string_equal(tinier, "caf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fixture_chat, memo_reset),
		cmocka_unit_test_setup(test_fixture_clean_chat, memo_reset),
		cmocka_unit_test_setup(test_fixture_completions, memo_reset),
		cmocka_unit_test_setup(test_fixture_session_turn, memo_reset),
		cmocka_unit_test_setup(test_memo, memo_reset),
		cmocka_unit_test(test_server_shapes),
		cmocka_unit_test(test_cached_tokens),
		cmocka_unit_test(test_answer_text),
		cmocka_unit_test(test_error_shapes),
		cmocka_unit_test(test_invalid_and_odd),
		cmocka_unit_test(test_fuzz_corpus_agrees),
		cmocka_unit_test(test_body_build),
		cmocka_unit_test(test_models_first_id),
		cmocka_unit_test(test_error_body_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
