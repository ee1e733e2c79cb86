/* `infertop sim` over HTTP: endpoints, status codes, error bodies, the
 * tokenizer endpoint, SSE framing of chat and completions streams, output
 * lengths, non-streaming responses, the connection limit, and removal of
 * requests whose client went away. Real processes over loopback. */
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

#include "infertop/clock.h"
#include "simutil.h"

#define MODEL "sim-test/m1"

static struct sim_child sim;	/* fixed timing, fast, small context */

static int setup(void **state)
{
	(void)state;
	static const char *const args[] = { "--model",	    MODEL,   "--timing",     "fixed",
					    "--ttft",	    "2ms",   "--itl",	     "1ms",
					    "--kv-tokens",  "1000",  "--max-tokens-default", "12",
					    "--seed",	    "7",     NULL };
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return su_spawn(args, &sim);
}

static int teardown(void **state)
{
	/* A clean exit (status 0) also means no leak report under ASan. */
	int rc = su_stop(&sim);
	su_teardown(state);
	curl_global_cleanup();
	if (rc != 0)
		fprintf(stderr, "sim exited with %d\n", rc);
	return rc == 0 ? 0 : -1;
}

static cJSON *parse_json(const char *s)
{
	cJSON *j = cJSON_Parse(s);
	if (!j)
		fail_msg("not JSON: %s", s);
	return j;
}

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v))
		fail_msg("no number '%s'", k);
	return v->valuedouble;
}

/* {"error":{"message":...,"type":...,"code":status}}, or vLLM's
 * {"object":"error","message":...,...} of a context too long. */
static void assert_openai_error(const struct su_resp *r, long status)
{
	assert_int_equal(r->status, status);
	char ct[128];
	assert_int_equal(su_header(r, "Content-Type", ct, sizeof ct), 0);
	assert_non_null(strstr(ct, "application/json"));
	cJSON *j = parse_json(r->body);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	if (!e && jstr(j, "object") && strcmp(jstr(j, "object"), "error") == 0)
		e = j;
	assert_true(cJSON_IsObject(e));
	assert_non_null(jstr(e, "message"));
	assert_true(strlen(jstr(e, "message")) > 0);
	assert_non_null(jstr(e, "type"));
	assert_int_equal((long)jnum(e, "code"), status);
	cJSON_Delete(j);
}

static void test_models(void **state)
{
	(void)state;
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/v1/models", NULL, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	cJSON *j = parse_json(r.body);
	assert_string_equal(jstr(j, "object"), "list");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
	assert_int_equal(cJSON_GetArraySize(data), 1);
	const cJSON *m = cJSON_GetArrayItem(data, 0);
	assert_string_equal(jstr(m, "id"), MODEL);
	assert_string_equal(jstr(m, "object"), "model");
	assert_int_equal((long)jnum(m, "max_model_len"), 1000);
	cJSON_Delete(j);
	su_resp_free(&r);
}

static void test_health(void **state)
{
	(void)state;
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/health", NULL, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
}

static void test_unknown_path(void **state)
{
	(void)state;
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/v2/nothing", NULL, 5000, &r), CURLE_OK);
	assert_openai_error(&r, 404);
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, NULL, "/v1/chat/completions/x", "{}", 5000, &r), CURLE_OK);
	assert_openai_error(&r, 404);
	su_resp_free(&r);
}

static void test_wrong_method(void **state)
{
	(void)state;
	struct su_resp r;
	char allow[64];
	assert_int_equal(su_request(sim.port, NULL, "/v1/chat/completions", NULL, 5000, &r), CURLE_OK);
	assert_openai_error(&r, 405);
	assert_int_equal(su_header(&r, "Allow", allow, sizeof allow), 0);
	assert_string_equal(allow, "POST");
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, NULL, "/v1/models", "{}", 5000, &r), CURLE_OK);
	assert_openai_error(&r, 405);
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, "DELETE", "/metrics", NULL, 5000, &r), CURLE_OK);
	assert_openai_error(&r, 405);
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, "PUT", "/tokenize", "{}", 5000, &r), CURLE_OK);
	assert_openai_error(&r, 405);
	su_resp_free(&r);
}

static void test_bad_bodies(void **state)
{
	(void)state;
	static const char *const bodies[] = {
		"{not json",
		"",
		"[1,2]",
		"\"just a string\"",
		"{\"model\":\"" MODEL "\"}",
		"{\"messages\":[]}",
		"{\"messages\":\"hi\"}",
		"{\"messages\":[{\"content\":\"no role\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":0}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":-5}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2.5}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":\"7\"}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":\"yes\"}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream_options\":5}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3,\"min_tokens\":4}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"model\":7}",
		/* over the 1000-token context */
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2000}",
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		struct su_resp r;
		assert_int_equal(su_request(sim.port, NULL, "/v1/chat/completions", bodies[i], 5000, &r),
				 CURLE_OK);
		if (r.status != 400)
			fail_msg("body %s: status %ld, want 400", bodies[i], r.status);
		assert_openai_error(&r, 400);
		su_resp_free(&r);
	}
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/v1/completions", "{\"max_tokens\":3}", 5000, &r),
			 CURLE_OK);
	assert_openai_error(&r, 400);
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, NULL, "/v1/completions",
				    "{\"prompt\":[\"a\",\"b\"],\"max_tokens\":3}", 5000, &r),
			 CURLE_OK);
	assert_openai_error(&r, 400);
	su_resp_free(&r);
}

static void test_unknown_model(void **state)
{
	(void)state;
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/v1/chat/completions",
				    "{\"model\":\"gpt-nothing\",\"messages\":[{\"role\":\"user\","
				    "\"content\":\"hi\"}],\"max_tokens\":3}",
				    5000, &r),
			 CURLE_OK);
	assert_openai_error(&r, 404);
	assert_non_null(strstr(r.body, "gpt-nothing"));
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, NULL, "/v1/completions",
				    "{\"model\":\"" MODEL "x\",\"prompt\":\"hi\",\"max_tokens\":3}", 5000, &r),
			 CURLE_OK);
	assert_openai_error(&r, 404);
	su_resp_free(&r);
	assert_int_equal(su_request(sim.port, NULL, "/tokenize", "{\"model\":\"other\",\"prompt\":\"hi\"}",
				    5000, &r),
			 CURLE_OK);
	assert_openai_error(&r, 404);
	su_resp_free(&r);
}

static long tokenize(const char *body, cJSON **out)
{
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/tokenize", body, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	cJSON *j = parse_json(r.body);
	su_resp_free(&r);
	long count = (long)jnum(j, "count");
	const cJSON *toks = cJSON_GetObjectItemCaseSensitive(j, "tokens");
	assert_true(cJSON_IsArray(toks));
	assert_int_equal(cJSON_GetArraySize(toks), count);
	assert_int_equal((long)jnum(j, "max_model_len"), 1000);
	if (out)
		*out = j;
	else
		cJSON_Delete(j);
	return count;
}

static void test_tokenize(void **state)
{
	(void)state;
	/* The documented rule: runs of word bytes and runs of punctuation. */
	assert_int_equal(tokenize("{\"prompt\":\"Hello, world!\"}", NULL), 4);
	assert_int_equal(tokenize("{\"prompt\":\"don't  stop...\\n now\"}", NULL), 6);
	assert_int_equal(tokenize("{\"prompt\":\"\"}", NULL), 0);
	assert_int_equal(tokenize("{\"model\":\"" MODEL "\",\"prompt\":\"one two three\"}", NULL), 3);
	assert_int_equal(tokenize("{\"prompt\":[5,6,7,8]}", NULL), 4);
	assert_int_equal(tokenize("{\"messages\":[{\"role\":\"system\",\"content\":\"a b c\"},"
				  "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"d.\"}]}]}",
				  NULL),
			 5);
	/* Same text, same ids. */
	cJSON *a, *b;
	tokenize("{\"prompt\":\"x y x\"}", &a);
	tokenize("{\"prompt\":\"x\"}", &b);
	const cJSON *ta = cJSON_GetObjectItemCaseSensitive(a, "tokens");
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(b, "tokens");
	assert_int_equal(cJSON_GetArrayItem(ta, 0)->valueint, cJSON_GetArrayItem(ta, 2)->valueint);
	assert_int_equal(cJSON_GetArrayItem(ta, 0)->valueint, cJSON_GetArrayItem(tb, 0)->valueint);
	cJSON_Delete(a);
	cJSON_Delete(b);
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/tokenize", "{\"nothing\":1}", 5000, &r), CURLE_OK);
	assert_openai_error(&r, 400);
	su_resp_free(&r);
}

/* usage.prompt_tokens must use the /tokenize count: the client calibrates
 * its prompts with one and checks the other. */
static void test_usage_matches_tokenize(void **state)
{
	(void)state;
	const char *text = "The quick (brown) fox -- jumps over 3.14 lazy dogs; \\\"quoted\\\" words, "
			   "unicode caf\\u00e9 and emoji \\ud83d\\ude00 end.";
	char body[1024];
	snprintf(body, sizeof body, "{\"prompt\":\"%s\"}", text);
	long n_prompt = tokenize(body, NULL);
	snprintf(body, sizeof body, "{\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", text);
	long n_msgs = tokenize(body, NULL);
	assert_int_equal(n_prompt, n_msgs);
	assert_true(n_prompt > 10);

	snprintf(body, sizeof body, "{\"prompt\":\"%s\",\"max_tokens\":2}", text);
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/v1/completions", body, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	cJSON *j = parse_json(r.body);
	assert_int_equal((long)jnum(cJSON_GetObjectItemCaseSensitive(j, "usage"), "prompt_tokens"),
			 n_prompt);
	cJSON_Delete(j);
	su_resp_free(&r);

	snprintf(body, sizeof body,
		 "{\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}],\"max_tokens\":2}", text);
	assert_int_equal(su_request(sim.port, NULL, "/v1/chat/completions", body, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	j = parse_json(r.body);
	assert_int_equal((long)jnum(cJSON_GetObjectItemCaseSensitive(j, "usage"), "prompt_tokens"),
			 n_msgs);
	cJSON_Delete(j);
	su_resp_free(&r);
}

/* Runs one streaming request to the end. */
static void run_stream(const char *path, const char *json, struct su_stream *s)
{
	struct su_multi mm;
	assert_int_equal(su_multi_init(&mm), 0);
	assert_int_equal(su_stream_init(s, sim.port, path, json, 10000), 0);
	assert_int_equal(su_multi_add(&mm, s), 0);
	assert_int_equal(su_multi_until(&mm, NULL, NULL, 10000), 0);
	su_multi_cleanup(&mm);
	assert_int_equal(s->rc, CURLE_OK);
	assert_int_equal(s->status, 200);
	assert_int_equal(s->framing_error, 0);
	/* Every event is "data: ...\n\n" and nothing follows [DONE]. */
	assert_int_equal(s->scanned, s->len);
	assert_true(s->len >= 14);
	assert_memory_equal(s->raw + s->len - 14, "data: [DONE]\n\n", 14);
}

struct chunk_view {
	cJSON *j;
	const cJSON *choice;	/* NULL when choices is [] */
	const char *text;	/* delta.content or text */
	const char *finish;	/* NULL for null */
};

static void view(const char *data, int chat, struct chunk_view *v)
{
	memset(v, 0, sizeof *v);
	v->j = parse_json(data);
	assert_string_equal(jstr(v->j, "object"), chat ? "chat.completion.chunk" : "text_completion");
	assert_string_equal(jstr(v->j, "model"), MODEL);
	assert_non_null(jstr(v->j, "id"));
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(v->j, "choices");
	assert_true(cJSON_IsArray(ch));
	if (cJSON_GetArraySize(ch) == 0)
		return;
	assert_int_equal(cJSON_GetArraySize(ch), 1);
	v->choice = cJSON_GetArrayItem(ch, 0);
	assert_int_equal((long)jnum(v->choice, "index"), 0);
	if (chat) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(v->choice, "delta");
		assert_true(cJSON_IsObject(d));
		v->text = jstr(d, "content");
	} else {
		v->text = jstr(v->choice, "text");
	}
	v->finish = jstr(v->choice, "finish_reason");
}

static void check_stream(const struct su_stream *s, int chat, int usage, long want_tokens)
{
	size_t i = 0;
	char id[128];
	if (chat) {
		struct chunk_view v;
		assert_true(s->nev > 0);
		view(s->ev[0].data, 1, &v);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(v.choice, "delta");
		assert_string_equal(jstr(d, "role"), "assistant");
		assert_string_equal(v.text, "");
		assert_null(v.finish);
		snprintf(id, sizeof id, "%s", jstr(v.j, "id"));
		assert_int_equal(strncmp(id, "chatcmpl-", 9), 0);
		cJSON_Delete(v.j);
		i = 1;
	} else {
		id[0] = '\0';
	}
	long tokens = 0;
	for (; i < s->nev && strcmp(s->ev[i].data, "[DONE]") != 0; i++) {
		struct chunk_view v;
		view(s->ev[i].data, chat, &v);
		if (!id[0])
			snprintf(id, sizeof id, "%s", jstr(v.j, "id"));
		assert_string_equal(jstr(v.j, "id"), id);
		if (!v.choice) {
			/* The usage chunk: last before [DONE]. */
			assert_true(usage);
			assert_int_equal(i + 2, s->nev);
			const cJSON *u = cJSON_GetObjectItemCaseSensitive(v.j, "usage");
			assert_true(cJSON_IsObject(u));
			long pt = (long)jnum(u, "prompt_tokens"), ct = (long)jnum(u, "completion_tokens");
			assert_int_equal(ct, want_tokens);
			assert_int_equal((long)jnum(u, "total_tokens"), pt + ct);
			assert_true(pt > 0);
			cJSON_Delete(v.j);
			continue;
		}
		assert_null(cJSON_GetObjectItemCaseSensitive(v.j, "usage"));
		assert_non_null(v.text);
		assert_true(strlen(v.text) > 1);
		assert_int_equal(v.text[0], ' ');
		tokens++;
		if (tokens < want_tokens)
			assert_null(v.finish);
		else
			assert_string_equal(v.finish, "length");
		cJSON_Delete(v.j);
	}
	assert_int_equal(tokens, want_tokens);
	assert_int_equal(i + 1, s->nev);
	if (usage)
		assert_null(strstr(s->ev[s->nev - 2].data, "\"choices\":[{"));
	else
		for (size_t k = 0; k < s->nev; k++)
			assert_null(strstr(s->ev[k].data, "\"usage\""));
}

static void test_stream_chat_usage(void **state)
{
	(void)state;
	struct su_stream s;
	run_stream("/v1/chat/completions",
		   "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hi.\"}],"
		   "\"max_tokens\":9,\"ignore_eos\":true,\"stream\":true,"
		   "\"stream_options\":{\"include_usage\":true}}",
		   &s);
	check_stream(&s, 1, 1, 9);
	/* role, 9 tokens, usage, [DONE] */
	assert_int_equal(s.nev, 12);
	su_stream_free(&s);
}

static void test_stream_chat_no_usage(void **state)
{
	(void)state;
	struct su_stream s;
	run_stream("/v1/chat/completions",
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"Say hi.\"}],"
		   "\"max_tokens\":5,\"ignore_eos\":true,\"stream\":true}",
		   &s);
	check_stream(&s, 1, 0, 5);
	assert_int_equal(s.nev, 7);
	su_stream_free(&s);
	/* include_usage false is the same as absent */
	run_stream("/v1/chat/completions",
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"Say hi.\"}],\"max_tokens\":5,"
		   "\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
		   &s);
	check_stream(&s, 1, 0, 5);
	su_stream_free(&s);
}

static void test_stream_completions(void **state)
{
	(void)state;
	struct su_stream s;
	run_stream("/v1/completions",
		   "{\"model\":\"" MODEL "\",\"prompt\":\"Once upon a time\",\"max_tokens\":6,"
		   "\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
		   &s);
	check_stream(&s, 0, 1, 6);
	assert_int_equal(s.nev, 8);
	assert_int_equal(strncmp(s.ev[0].data, "{\"id\":\"cmpl-", 12), 0);
	su_stream_free(&s);
	run_stream("/v1/completions",
		   "{\"prompt\":[1,2,3],\"max_tokens\":3,\"ignore_eos\":true,\"stream\":true}", &s);
	check_stream(&s, 0, 0, 3);
	su_stream_free(&s);
}

static void test_ignore_eos_exact(void **state)
{
	(void)state;
	static const long lens[] = { 1, 2, 7, 33, 200 };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		char body[512];
		snprintf(body, sizeof body,
			 "{\"messages\":[{\"role\":\"user\",\"content\":\"count\"}],\"max_tokens\":%ld,"
			 "\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
			 lens[i]);
		struct su_stream s;
		run_stream("/v1/chat/completions", body, &s);
		check_stream(&s, 1, 1, lens[i]);
		su_stream_free(&s);
	}
	/* max_completion_tokens wins over max_tokens, as in the OpenAI API */
	struct su_stream s;
	run_stream("/v1/chat/completions",
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":50,"
		   "\"max_completion_tokens\":4,\"ignore_eos\":true,\"stream\":true}",
		   &s);
	check_stream(&s, 1, 0, 4);
	su_stream_free(&s);
	/* no limit at all: --max-tokens-default 12 */
	run_stream("/v1/chat/completions",
		   "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"ignore_eos\":true,\"stream\":true}",
		   &s);
	check_stream(&s, 1, 0, 12);
	su_stream_free(&s);
}

/* Without ignore_eos: a seeded length in [max(1, min_tokens), max_tokens],
 * finish_reason "stop" exactly when it ended early. */
static void test_random_lengths(void **state)
{
	(void)state;
	int seen[21] = { 0 };
	int distinct = 0;
	for (int round = 0; round < 24; round++) {
		int min = round < 16 ? 0 : 15;
		char body[512];
		snprintf(body, sizeof body,
			 "{\"prompt\":\"go\",\"max_tokens\":20,\"min_tokens\":%d,\"stream\":true,"
			 "\"stream_options\":{\"include_usage\":true}}",
			 min);
		struct su_stream s;
		run_stream("/v1/completions", body, &s);
		int tokens = 0;
		const char *finish = NULL;
		cJSON *last = NULL;
		for (size_t i = 0; i < s.nev; i++) {
			if (!su_is_token_event(s.ev[i].data))
				continue;
			tokens++;
			cJSON_Delete(last);
			last = parse_json(s.ev[i].data);
		}
		assert_non_null(last);
		finish = jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(last, "choices"), 0),
			      "finish_reason");
		assert_non_null(finish);
		assert_true(tokens >= (min > 1 ? min : 1) && tokens <= 20);
		assert_string_equal(finish, tokens < 20 ? "stop" : "length");
		cJSON *u = parse_json(s.ev[s.nev - 2].data);
		assert_int_equal(
			(long)jnum(cJSON_GetObjectItemCaseSensitive(u, "usage"), "completion_tokens"),
			tokens);
		cJSON_Delete(u);
		cJSON_Delete(last);
		if (!seen[tokens]++)
			distinct++;
		su_stream_free(&s);
	}
	assert_true(distinct >= 3);
}

static void test_non_streaming(void **state)
{
	(void)state;
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/v1/chat/completions",
				    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
				    "\"content\":\"Tell me.\"}],\"max_tokens\":8,\"ignore_eos\":true}",
				    5000, &r),
			 CURLE_OK);
	assert_int_equal(r.status, 200);
	cJSON *j = parse_json(r.body);
	assert_string_equal(jstr(j, "object"), "chat.completion");
	assert_string_equal(jstr(j, "model"), MODEL);
	const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	assert_string_equal(jstr(c0, "finish_reason"), "length");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(c0, "message");
	assert_string_equal(jstr(msg, "role"), "assistant");
	const char *content = jstr(msg, "content");
	assert_non_null(content);
	int words = 0;
	for (const char *p = content; *p; p++)
		words += *p == ' ';
	assert_int_equal(words, 8);
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "usage");
	assert_int_equal((long)jnum(u, "completion_tokens"), 8);
	assert_int_equal((long)jnum(u, "prompt_tokens"), 3);
	assert_int_equal((long)jnum(u, "total_tokens"), 11);
	cJSON_Delete(j);
	su_resp_free(&r);

	assert_int_equal(su_request(sim.port, NULL, "/v1/completions",
				    "{\"prompt\":\"a b\",\"max_tokens\":3,\"ignore_eos\":true,\"stream\":false}",
				    5000, &r),
			 CURLE_OK);
	assert_int_equal(r.status, 200);
	j = parse_json(r.body);
	assert_string_equal(jstr(j, "object"), "text_completion");
	c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	assert_non_null(jstr(c0, "text"));
	assert_int_equal((long)jnum(cJSON_GetObjectItemCaseSensitive(j, "usage"), "completion_tokens"), 3);
	cJSON_Delete(j);
	su_resp_free(&r);
}

static int both_flowing(void *ud)
{
	struct su_stream *s = ud;
	return s[0].nev > 0 && s[1].nev > 0;
}

/* --max-connections 2: a third concurrent connection is refused with 503. */
static void test_connection_limit(void **state)
{
	(void)state;
	static const char *const args[] = { "--max-connections", "2", "--timing", "fixed", "--ttft",
					    "10ms", "--itl", "10ms", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	struct su_multi mm;
	struct su_stream s[2];
	assert_int_equal(su_multi_init(&mm), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(su_stream_init(&s[i], c.port, "/v1/completions",
						"{\"prompt\":\"x\",\"max_tokens\":400,\"ignore_eos\":true,"
						"\"stream\":true}",
						20000),
				 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	/* Both streams have tokens flowing: both connections are open. */
	assert_int_equal(su_multi_until(&mm, both_flowing, s, 10000), 1);
	struct su_resp r;
	assert_int_equal(su_request(c.port, NULL, "/health", NULL, 5000, &r), CURLE_OK);
	assert_openai_error(&r, 503);
	su_resp_free(&r);
	su_multi_cleanup(&mm);
	su_stream_free(&s[0]);
	su_stream_free(&s[1]);
	assert_int_equal(su_stop(&c), 0);
}

struct admitted {
	struct su_stream *s;
	int n;
	int want_role, want_headers;
};

/* Enough streams admitted and all taken in, and two tokens of a running
 * stream after the last headers: an engine step (where admission happens)
 * ended after every arrival. */
static int role_count(void *ud)
{
	struct admitted *a = ud;
	int roles = 0, heads = 0;
	int64_t last = 0;
	for (int i = 0; i < a->n; i++) {
		roles += a->s[i].nev > 0;
		heads += a->s[i].t_headers != 0;
		if (a->s[i].t_headers > last)
			last = a->s[i].t_headers;
	}
	int after = 0;
	for (size_t k = 0; k < a->s[0].nev; k++)
		after += a->s[0].ev[k].t > last;
	return roles >= a->want_role && heads >= a->want_headers && after >= 2;
}

/* Clients that hang up leave the engine: queued ones and running ones. */
static void test_disconnect_removes(void **state)
{
	(void)state;
	static const char *const args[] = { "--max-running", "2", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	struct su_multi mm;
	struct su_stream s[5];
	assert_int_equal(su_multi_init(&mm), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(su_stream_init(&s[i], c.port, "/v1/chat/completions",
						"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
						"\"max_tokens\":5000,\"ignore_eos\":true,\"stream\":true}",
						30000),
				 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	struct admitted a = { s, 5, 2, 5 };
	assert_int_equal(su_multi_until(&mm, role_count, &a, 10000), 1);
	assert_true(su_metric(c.port, "/metrics", "vllm:num_requests_running", NULL) == 2);
	assert_true(su_metric(c.port, "/metrics", "vllm:num_requests_waiting", NULL) == 3);
	su_multi_cleanup(&mm);
	for (int i = 0; i < 5; i++)
		su_stream_free(&s[i]);
	/* The sim notices the hang-ups asynchronously: poll its state. */
	int64_t deadline = clock_now_ns() + 5 * CLOCK_NS_PER_S;
	double run = -1, wait = -1, kv = -1;
	while (clock_now_ns() < deadline) {
		run = su_metric(c.port, "/metrics", "vllm:num_requests_running", NULL);
		wait = su_metric(c.port, "/metrics", "vllm:num_requests_waiting", NULL);
		kv = su_metric(c.port, "/metrics", "vllm:kv_cache_usage_perc", NULL);
		if (run == 0 && wait == 0)
			break;
	}
	assert_true(run == 0);
	assert_true(wait == 0);
	assert_true(kv == 0);
	assert_true(su_metric(c.port, "/metrics", "vllm:request_success_total", NULL) == 0);
	assert_int_equal(su_stop(&c), 0);
}

/* Random bytes and near-JSON to every endpoint: every answer is a clean
 * status, and the server is still there afterwards. */
static void test_garbage_survives(void **state)
{
	(void)state;
	static const char *const paths[] = { "/v1/chat/completions", "/v1/completions", "/tokenize" };
	static const char *const seeds[] = {
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3,\"stream\":true}",
		"{\"prompt\":[1,2,3],\"max_tokens\":2,\"ignore_eos\":true}",
		"{\"prompt\":\"a b\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
	};
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < 300; i++) {
		char body[256];
		const char *seed = seeds[i % 3];
		size_t n = strlen(seed);
		memcpy(body, seed, n + 1);
		for (int e = 0; e < 1 + i % 4; e++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (n == 0)
				break;
			size_t pos = (size_t)(x % n);
			if (x & 0x100)
				body[pos] = (char)(x >> 20);
			else
				n = pos;	/* truncate */
		}
		body[n] = '\0';
		struct su_resp r;
		CURLcode rc = su_request(sim.port, NULL, paths[(i / 3) % 3], body, 5000, &r);
		if (rc != CURLE_OK || (r.status != 200 && r.status != 400 && r.status != 404))
			fail_msg("body '%s': curl %d status %ld", body, (int)rc, r.status);
		su_resp_free(&r);
	}
	struct su_resp r;
	assert_int_equal(su_request(sim.port, NULL, "/health", NULL, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_models),
		cmocka_unit_test(test_health),
		cmocka_unit_test(test_unknown_path),
		cmocka_unit_test(test_wrong_method),
		cmocka_unit_test(test_bad_bodies),
		cmocka_unit_test(test_unknown_model),
		cmocka_unit_test(test_tokenize),
		cmocka_unit_test(test_usage_matches_tokenize),
		cmocka_unit_test(test_stream_chat_usage),
		cmocka_unit_test(test_stream_chat_no_usage),
		cmocka_unit_test(test_stream_completions),
		cmocka_unit_test(test_ignore_eos_exact),
		cmocka_unit_test(test_random_lengths),
		cmocka_unit_test(test_non_streaming),
		cmocka_unit_test(test_garbage_survives),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_disconnect_removes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
