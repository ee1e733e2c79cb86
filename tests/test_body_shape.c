/* body_shape against its oracle, oai_body_build(): every body must be the
 * same bytes, for both APIs, every option, extra_body members that add to
 * or replace the body's own, an extra_body that holds a placeholder (the
 * shape's check must catch it), every byte in a prompt, long and empty
 * prompts, options that change between calls, and a few thousand random
 * bodies. */
#include "config.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/body_shape.h"
#include "infertop/rng.h"

/* The shape's body and oai_body_build()'s: both NULL, or the same bytes
 * and length. */
static void same_n(struct body_shape *s, const struct oai_request_opts *o, const char *prompt, size_t prompt_len)
{
	size_t want_len = 7, got_len = 7;
	char *want = oai_body_build(o, prompt, &want_len);
	char *got = body_shape_build(s, o, prompt, prompt_len, &got_len);
	if (!want || !got) {
		if (want || got)
			fail_msg("oai_body_build %s, body_shape_build %s", want ? want : "NULL", got ? got : "NULL");
	} else if (want_len != got_len || memcmp(want, got, want_len + 1) != 0) {
		fail_msg("bodies differ:\n want (%zu) %s\n got  (%zu) %s", want_len, want, got_len, got);
	}
	free(want);
	free(got);
}

static void same(struct body_shape *s, const struct oai_request_opts *o, const char *prompt)
{
	same_n(s, o, prompt, prompt ? strlen(prompt) : 0);
}

static const char *const prompts[] = {
	"", "x", "Hello, world.", "a \"quoted\" word", "back\\slash", "two\nlines\r\n\ttabbed",
	"ctl \x01\x02\x1f\x7f end", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 / slash", "\"", "\\",
};
#define NPROMPTS (sizeof prompts / sizeof prompts[0])
static const int max_tokens[] = {1, 9, 10, 99, 128, 1000, 65536, 2147483001, INT_MAX};
#define NMAX (sizeof max_tokens / sizeof max_tokens[0])

/* Every prompt with every max_tokens; the shape must have passed its
 * check when usable is asked for. */
static void sweep(const struct oai_request_opts *base, bool usable)
{
	struct body_shape s = {0};
	struct oai_request_opts o = *base;
	for (size_t i = 0; i < NPROMPTS; i++)
		for (size_t k = 0; k < NMAX; k++) {
			o.max_tokens = max_tokens[k];
			same(&s, &o, prompts[i]);
			assert_true(s.made);
			if (s.usable != usable)
				fail_msg("shape %s, expected %s", s.usable ? "usable" : "unusable",
					 usable ? "usable" : "unusable");
		}
	body_shape_free(&s);
	assert_false(s.made);
	assert_null(s.text);
}

static void test_options(void **state)
{
	(void)state;
	for (int api = 0; api < OAI_API_N; api++)
		for (int model = 0; model < 2; model++)
			for (int eos = 0; eos < 2; eos++)
				for (int temp = 0; temp < 3; temp++) {
					struct oai_request_opts o = {
						.api = (enum oai_api)api,
						.model = model ? "meta-llama/Llama-3.1-8B-Instruct" : NULL,
						.ignore_eos = eos,
						.have_temperature = temp > 0,
						.temperature = temp == 1 ? 0.7 : 0,
					};
					sweep(&o, true);
				}
}

/* The number of slots the placeholder body was cut into, for a shape made
 * with these options. */
static int slots_for(const struct oai_request_opts *base)
{
	struct body_shape s = {0};
	struct oai_request_opts o = *base;
	o.max_tokens = 5;
	free(body_shape_build(&s, &o, "p", 1, NULL));
	assert_true(s.usable);
	int n = s.nslots;
	body_shape_free(&s);
	return n;
}

static void test_slots(void **state)
{
	(void)state;
	struct oai_request_opts o = {.api = OAI_CHAT};
	assert_int_equal(slots_for(&o), 2); /* prompt, max_tokens */
	o.model = "m";
	assert_int_equal(slots_for(&o), 3);
	o.ignore_eos = true; /* and min_tokens */
	assert_int_equal(slots_for(&o), 4);
	o.api = OAI_COMPLETIONS;
	assert_int_equal(slots_for(&o), 4);
}

static void test_extra_body(void **state)
{
	(void)state;
	static const char *const extras[] = {
		"{}",
		"{\"top_p\":0.9,\"n\":1,\"stop\":[\"\\n\",\"END\"],\"logit_bias\":{\"50256\":-100}}",
		"{\"max_tokens\":5}",
		"{\"min_tokens\":3}",
		"{\"max_tokens\":5,\"min_tokens\":3}",
		"{\"prompt\":\"from extra\"}",
		"{\"messages\":[{\"role\":\"system\",\"content\":\"s\"}]}",
		"{\"stream\":false}",
		"{\"stream_options\":{\"include_usage\":false,\"continuous_usage_stats\":true}}",
		"{\"model\":\"from-extra\"}",
		"{\"ignore_eos\":false,\"temperature\":1.5}",
		"{\"max_tokens\":null,\"prompt\":null,\"messages\":null}",
		"{\"x\":\"a number 2147483001 in a string\"}",
		"{\"seed\":2147483000,\"y\":21474830012}",
	};
	for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++) {
		cJSON *extra = cJSON_Parse(extras[i]);
		assert_non_null(extra);
		for (int api = 0; api < OAI_API_N; api++)
			for (int eos = 0; eos < 2; eos++) {
				struct oai_request_opts o = {.api = (enum oai_api)api, .model = "m", .ignore_eos = eos,
							     .extra_body = extra};
				sweep(&o, true);
			}
		cJSON_Delete(extra);
	}
}

/* An extra_body that prints a placeholder: cut apart it looks like one
 * more slot (or one too many), and only the check tells. The bodies stay
 * oai_body_build()'s. */
static void test_placeholder_in_extra(void **state)
{
	(void)state;
	cJSON *extra[6];
	extra[0] = cJSON_CreateObject();
	cJSON_AddStringToObject(extra[0], "x", "\x01\x02\x03\x04\x05\x06");
	extra[1] = cJSON_CreateObject();
	cJSON_AddStringToObject(extra[1], "\x06\x05\x04\x03\x02\x01", "model mark as a key");
	extra[2] = cJSON_Parse("{\"seed\":2147483001}");
	extra[3] = cJSON_Parse("{\"s\":\"a:2147483001,b\"}");
	extra[4] = cJSON_CreateObject();
	cJSON_AddStringToObject(extra[4], "messages", "\x01\x02\x03\x04\x05\x06");
	extra[5] = cJSON_CreateObject();
	cJSON_AddStringToObject(extra[5], "prompt", "\x01\x02\x03\x04\x05\x06");
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
		assert_non_null(extra[i]);
		for (int api = 0; api < OAI_API_N; api++)
			for (int eos = 0; eos < 2; eos++) {
				struct oai_request_opts o = {.api = (enum oai_api)api, .model = "m", .ignore_eos = eos,
							     .extra_body = extra[i]};
				/* Where extra[4] or extra[5] replaces the
				 * prompt, its mark is the only one, in a place
				 * whose bytes never change: the check's samples
				 * tell; elsewhere there are two prompt marks. */
				sweep(&o, false);
			}
		cJSON_Delete(extra[i]);
	}

	/* Not an object: oai_body_build() refuses it, so does the shape. */
	cJSON *arr = cJSON_Parse("[1,2]");
	struct oai_request_opts o = {.api = OAI_CHAT, .max_tokens = 4, .extra_body = arr};
	struct body_shape s = {0};
	assert_null(body_shape_build(&s, &o, "p", 1, NULL));
	assert_null(body_shape_build(&s, &o, "p", 1, NULL));
	body_shape_free(&s);
	cJSON_Delete(arr);
}

static void test_max_tokens_not_positive(void **state)
{
	(void)state;
	struct body_shape s = {0};
	static const int mt[] = {0, -1, -2147483001, INT_MIN, 5, 0, 7};
	for (int api = 0; api < OAI_API_N; api++)
		for (size_t k = 0; k < sizeof mt / sizeof mt[0]; k++) {
			struct oai_request_opts o = {.api = (enum oai_api)api, .model = "m", .ignore_eos = true,
						     .max_tokens = mt[k]};
			same(&s, &o, "a prompt");
			/* max_tokens <= 0 leaves the shape alone. */
			if (mt[k] <= 0 && k == 0 && api == 0)
				assert_false(s.made);
		}
	body_shape_free(&s);
}

static void test_bytes(void **state)
{
	(void)state;
	struct body_shape s = {0};
	for (int api = 0; api < OAI_API_N; api++) {
		struct oai_request_opts o = {.api = (enum oai_api)api, .model = "m", .max_tokens = 16};
		char all[256];
		for (int b = 1; b < 256; b++)
			all[b - 1] = (char)b;
		all[255] = '\0';
		same(&s, &o, all);
		/* Each byte alone, and at every place in and around an
		 * eight-byte word, ahead of a tail. */
		for (int b = 1; b < 256; b++) {
			char one[2] = {(char)b, 0};
			same(&s, &o, one);
			char line[40];
			for (size_t at = 0; at + 1 < sizeof line; at += 3) {
				memset(line, 'a', sizeof line - 1);
				line[sizeof line - 1] = '\0';
				line[at] = (char)b;
				same(&s, &o, line);
			}
		}
		/* A NUL ends the prompt, wherever prompt_len says it ends. */
		same_n(&s, &o, "ab\0cd", 5);
		same_n(&s, &o, "0123456789\0\"\\\n", 14);
		same_n(&s, &o, "\0xyz", 4);
		same_n(&s, &o, "", 0);
		same_n(&s, &o, NULL, 0);

		/* 64 KiB: plain words, then every byte but NUL. */
		size_t big = 64 << 10;
		char *p = malloc(big + 1);
		assert_non_null(p);
		for (size_t i = 0; i < big; i++)
			p[i] = "lorem ipsum dolor "[i % 18];
		p[big] = '\0';
		same(&s, &o, p);
		struct rng r;
		rng_seed(&r, 64);
		for (size_t i = 0; i < big; i++)
			p[i] = (char)(1 + rng_below(&r, 255));
		same(&s, &o, p);
		free(p);
		assert_true(s.usable);
	}
	body_shape_free(&s);
}

/* One shape, options changing under it: remade when anything but the
 * model, the prompt or max_tokens changes; the model is a slot. */
static void test_options_change(void **state)
{
	(void)state;
	struct body_shape s = {0};
	cJSON *e1 = cJSON_Parse("{\"top_p\":0.5}"), *e2 = cJSON_Parse("{\"top_p\":0.5}");
	struct oai_request_opts o = {.api = OAI_CHAT, .model = "model-A", .max_tokens = 3};
	same(&s, &o, "one");
	assert_true(s.made && s.usable && s.has_model);
	const char *models[] = {"model-B", "model-A", "a \"quoted\"\nmodel\x01", "", "model-A"};
	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
		o.model = models[i];
		same(&s, &o, "two");
		assert_true(body_shape_fits(&s, &o));
	}
	o.model = NULL;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "three");
	assert_false(s.has_model);
	o.model = "model-A";
	same(&s, &o, "four");
	assert_true(s.has_model);

	o.ignore_eos = true;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "five");
	assert_true(s.ignore_eos);
	o.have_temperature = true;
	o.temperature = 0.5;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "six");
	o.temperature = 0.25;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "seven");
	o.have_temperature = false;
	same(&s, &o, "eight");
	/* Without have_temperature the value is not printed: no remake. */
	o.temperature = 9;
	assert_true(body_shape_fits(&s, &o));
	o.extra_body = e1;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "nine");
	/* The same members in another object: compared by pointer. */
	o.extra_body = e2;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "ten");
	o.api = OAI_COMPLETIONS;
	assert_false(body_shape_fits(&s, &o));
	same(&s, &o, "eleven");
	o.extra_body = NULL;
	same(&s, &o, "twelve");
	assert_true(s.usable);
	body_shape_free(&s);
	cJSON_Delete(e1);
	cJSON_Delete(e2);
}

/* Random prompts (mostly text, now and then quotes, control bytes, UTF-8
 * and NULs), random max_tokens, and options that change now and then. */
static void random_prompt(struct rng *r, char *p, size_t *len)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ 0123456789.,;:!?/'()-";
	static const char special[] = "\"\\\b\f\n\r\t\x01\x1f\x7f";
	size_t n = rng_below(r, 4) == 0 ? rng_below(r, 24) : rng_below(r, 600);
	unsigned mix = (unsigned)rng_below(r, 4);
	for (size_t i = 0; i < n; i++) {
		uint64_t k = rng_below(r, 100);
		if (mix == 0 || k < 80)
			p[i] = plain[rng_below(r, sizeof plain - 1)];
		else if (k < 90)
			p[i] = special[rng_below(r, sizeof special - 1)];
		else if (k < 99)
			p[i] = (char)(0x80 + rng_below(r, 128));
		else
			p[i] = (char)rng_below(r, 32);
	}
	p[n] = '\0';
	*len = n;
}

static void test_random(void **state)
{
	(void)state;
	static const char *const models[] = {NULL, "m", "meta-llama/Llama-3.1-8B-Instruct", "q\"m\\\x02"};
	static const double temps[] = {0, 0.7, 1e-9, 123456.789, -0.0};
	cJSON *extras[] = {NULL, cJSON_Parse("{\"top_k\":40}"), cJSON_Parse("{\"max_tokens\":1}"),
			   cJSON_Parse("{\"seed\":2147483001}")};
	struct rng r;
	rng_seed(&r, 2024);
	struct body_shape s = {0};
	char p[700];
	struct oai_request_opts o = {.api = OAI_CHAT};
	for (int i = 0; i < 6000; i++) {
		/* Options change on one request in 50 (most bodies go
		 * through a made shape), the model on one in 3. */
		if (rng_below(&r, 50) == 0) {
			o.api = (enum oai_api)rng_below(&r, OAI_API_N);
			o.ignore_eos = rng_below(&r, 2);
			o.have_temperature = rng_below(&r, 2);
			o.temperature = temps[rng_below(&r, sizeof temps / sizeof temps[0])];
			o.extra_body = extras[rng_below(&r, sizeof extras / sizeof extras[0])];
		}
		if (rng_below(&r, 3) == 0)
			o.model = models[rng_below(&r, sizeof models / sizeof models[0])];
		uint64_t k = rng_below(&r, 10);
		o.max_tokens = k == 0   ? (int)rng_below(&r, 3) - 2
			       : k < 5  ? 1 + (int)rng_below(&r, 4096)
			       : k < 9  ? 1 + (int)rng_below(&r, 100)
					: 1 + (int)rng_below(&r, INT_MAX);
		size_t len;
		random_prompt(&r, p, &len);
		same_n(&s, &o, p, len);
	}
	body_shape_free(&s);
	for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++)
		cJSON_Delete(extras[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_extra_body),
		cmocka_unit_test(test_placeholder_in_extra),
		cmocka_unit_test(test_max_tokens_not_positive),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_options_change),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
