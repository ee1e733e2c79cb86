/* Prompt sources without a server: parsing of each file kind, errors with
 * file and line, empty and huge inputs, length distributions, the shared
 * prefix, and reproducibility. Token counts are checked with the
 * simulator's tokenizer (sim_tokenize_text), an independent rule. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/cli.h"
#include "infertop/dataset.h"
#include "sim/sim_req.h"

static char fixture_path[4096];

static const char *fixture(const char *name)
{
	const char *dir = getenv("INFERTOP_FIXTURES");
	snprintf(fixture_path, sizeof fixture_path, "%s/datasets/%s", dir ? dir : "tests/fixtures", name);
	return fixture_path;
}

/* A config from a command line, as main() gets it. */
static void parse(struct config *cfg, const char *const *args)
{
	const char *argv[32] = {"infertop"};
	int argc = 1;
	while (args && args[argc - 1])
		argv[argc] = args[argc - 1], argc++;
	argv[argc++] = "http://127.0.0.1:1";
	memset(cfg, 0, sizeof *cfg);
	assert_int_equal(cli_parse(cfg, argc, (char **)argv), CLI_RUN);
}

static struct dataset *open_ok(struct config *cfg, const char *const *args)
{
	parse(cfg, args);
	char err[512] = "";
	struct dataset *d = dataset_open(cfg, err, sizeof err);
	if (!d)
		fail_msg("dataset_open: %s", err);
	return d;
}

static void open_fails(const char *const *args, const char *want)
{
	struct config cfg;
	parse(&cfg, args);
	char err[512] = "";
	struct dataset *d = dataset_open(&cfg, err, sizeof err);
	if (d)
		fail_msg("%s: opened, expected an error with \"%s\"", cfg.dataset, want);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
	cli_free(&cfg);
}

struct body {
	cJSON *root;
	const char *prompt;     /* completions prompt, or the last message's content */
	const cJSON *messages;
	long max_tokens;
	long input_tokens;
	size_t len;
};

static struct body next(struct dataset *d, struct rng *r, enum oai_api api)
{
	struct oai_request_opts o = {.api = api, .model = "m", .max_tokens = 999, .ignore_eos = true};
	struct body b = {0};
	char *json = dataset_next_body(d, r, &o, &b.len, &b.input_tokens);
	assert_non_null(json);
	assert_int_equal(strlen(json), b.len);
	b.root = cJSON_Parse(json);
	free(json);
	assert_non_null(b.root);
	const cJSON *mt = cJSON_GetObjectItem(b.root, "max_tokens");
	assert_true(cJSON_IsNumber(mt));
	b.max_tokens = (long)mt->valuedouble;
	assert_int_equal((long)cJSON_GetObjectItem(b.root, "min_tokens")->valuedouble, b.max_tokens);
	if (api == OAI_CHAT) {
		b.messages = cJSON_GetObjectItem(b.root, "messages");
		assert_true(cJSON_IsArray(b.messages));
		const cJSON *last = cJSON_GetArrayItem(b.messages, cJSON_GetArraySize(b.messages) - 1);
		const cJSON *c = cJSON_GetObjectItem(last, "content");
		b.prompt = cJSON_IsString(c) ? c->valuestring : NULL;
	} else {
		const cJSON *p = cJSON_GetObjectItem(b.root, "prompt");
		assert_true(cJSON_IsString(p));
		b.prompt = p->valuestring;
	}
	return b;
}

static long sim_tokens(const char *s)
{
	return sim_tokenize_text(s, strlen(s), NULL, NULL);
}

static long chars_of(const char *s)
{
	return dataset_utf8_chars(s, strlen(s));
}

/* ---- synthetic ---- */

static void test_synthetic_distributions(void **state)
{
	(void)state;
	struct config cfg;
	const char *args[] = {"--input-tokens", "100:200", "--output-tokens", "normal:64,8", "--seed", "7", NULL};
	struct dataset *d = open_ok(&cfg, args);
	assert_string_equal(dataset_length_source(d), "estimate");
	struct rng r;
	rng_seed(&r, 11);
	double in_sum = 0, out_sum = 0, out_sq = 0;
	long in_min = 1L << 30, in_max = 0;
	const int n = 3000;
	for (int i = 0; i < n; i++) {
		struct body b = next(d, &r, i % 2 ? OAI_CHAT : OAI_COMPLETIONS);
		/* Uncalibrated, a unit (word or period) is one token: the
		 * simulator's tokenizer agrees with the expectation. */
		assert_int_equal(sim_tokens(b.prompt), b.input_tokens);
		in_sum += (double)b.input_tokens;
		in_min = b.input_tokens < in_min ? b.input_tokens : in_min;
		in_max = b.input_tokens > in_max ? b.input_tokens : in_max;
		assert_true(b.max_tokens >= 1);
		out_sum += (double)b.max_tokens;
		out_sq += (double)b.max_tokens * (double)b.max_tokens;
		cJSON_Delete(b.root);
	}
	assert_true(in_min >= 100 && in_max <= 200);
	assert_true(in_min <= 102 && in_max >= 198);
	assert_true(fabs(in_sum / n - 150.0) < 2.5);
	double om = out_sum / n, osd = sqrt(out_sq / n - om * om);
	assert_true(fabs(om - 64.0) < 0.6);
	assert_true(fabs(osd - 8.0) < 0.6);
	dataset_free(d);
	cli_free(&cfg);
}

/* Texts look like sentences: words, with a period every few words. */
static void test_synthetic_text_shape(void **state)
{
	(void)state;
	struct config cfg;
	const char *args[] = {"--input-tokens", "400", NULL};
	struct dataset *d = open_ok(&cfg, args);
	struct rng r;
	rng_seed(&r, 3);
	struct body b = next(d, &r, OAI_CHAT);
	int periods = 0, words = 1;
	for (const char *p = b.prompt; *p; p++) {
		periods += *p == '.';
		words += *p == ' ';
		assert_true(*p == ' ' || *p == '.' || (*p >= 'a' && *p <= 'z'));
	}
	assert_true(periods >= 400 / 16 && periods <= 400 / 6);
	assert_int_equal(words + periods, 400);
	cJSON_Delete(b.root);
	dataset_free(d);
	cli_free(&cfg);
}

static char *common_prefix(const char *a, const char *b)
{
	size_t n = 0;
	while (a[n] && a[n] == b[n])
		n++;
	char *s = strndup(a, n);
	assert_non_null(s);
	return s;
}

static void test_prefix_shared(void **state)
{
	(void)state;
	struct config cfg;
	const char *args[] = {"--input-tokens", "256", "--prefix-tokens", "64", NULL};
	struct dataset *d = open_ok(&cfg, args);
	struct rng r;
	rng_seed(&r, 5);
	struct body first = next(d, &r, OAI_COMPLETIONS);
	for (int i = 0; i < 50; i++) {
		struct body b = next(d, &r, OAI_COMPLETIONS);
		char *cp = common_prefix(first.prompt, b.prompt);
		/* The shared part is the 64-token prefix (a random first
		 * word may by chance extend it a little); the rest differs. */
		long shared = sim_tokens(cp);
		assert_true(shared >= 64 && shared <= 70);
		assert_string_not_equal(first.prompt, b.prompt);
		assert_int_equal(sim_tokens(b.prompt), 256);
		assert_int_equal(b.input_tokens, 256);
		free(cp);
		cJSON_Delete(b.root);
	}
	cJSON_Delete(first.root);
	dataset_free(d);
	cli_free(&cfg);

	/* The same --seed gives the same prefix on another run; another
	 * seed another prefix. */
	const char *a1[] = {"--input-tokens", "128", "--prefix-tokens", "32", "--seed", "9", NULL};
	const char *a2[] = {"--input-tokens", "128", "--prefix-tokens", "32", "--seed", "10", NULL};
	struct config c1, c2, c3;
	struct dataset *d1 = open_ok(&c1, a1), *d2 = open_ok(&c2, a1), *d3 = open_ok(&c3, a2);
	assert_string_equal(d1->prefix, d2->prefix);
	assert_string_not_equal(d1->prefix, d3->prefix);
	assert_int_equal(sim_tokens(d1->prefix), 32);
	dataset_free(d1);
	dataset_free(d2);
	dataset_free(d3);
	cli_free(&c1);
	cli_free(&c2);
	cli_free(&c3);

	open_fails((const char *[]){"--input-tokens", "64", "--prefix-tokens", "64", NULL}, "--prefix-tokens");
}

static void bodies_equal(const char *const *args, uint64_t s1, uint64_t s2, bool want_equal, enum oai_api api)
{
	struct config c1, c2;
	struct dataset *d1 = open_ok(&c1, args), *d2 = open_ok(&c2, args);
	struct rng r1, r2;
	rng_seed(&r1, s1);
	rng_seed(&r2, s2);
	struct oai_request_opts o = {.api = api, .model = "m"};
	bool all_equal = true;
	for (int i = 0; i < 40; i++) {
		size_t l1, l2;
		long t1, t2;
		char *b1 = dataset_next_body(d1, &r1, &o, &l1, &t1);
		char *b2 = dataset_next_body(d2, &r2, &o, &l2, &t2);
		assert_non_null(b1);
		assert_non_null(b2);
		if (l1 != l2 || strcmp(b1, b2) != 0 || t1 != t2)
			all_equal = false;
		free(b1);
		free(b2);
	}
	assert_true(all_equal == want_equal);
	dataset_free(d1);
	dataset_free(d2);
	cli_free(&c1);
	cli_free(&c2);
}

static void test_reproducible(void **state)
{
	(void)state;
	char spec[4200];
	const char *syn[] = {"--input-tokens", "normal:128,30", "--output-tokens", "10:90", "--prefix-tokens", "16", NULL};
	bodies_equal(syn, 42, 42, true, OAI_CHAT);
	bodies_equal(syn, 42, 43, false, OAI_CHAT);
	const char *kinds[][2] = {{"sharegpt", "sharegpt.json"}, {"jsonl", "data.jsonl"}, {"text", "sonnet.txt"}};
	for (size_t k = 0; k < 3; k++) {
		snprintf(spec, sizeof spec, "%s:%s", kinds[k][0], fixture(kinds[k][1]));
		const char *args[] = {"--dataset", spec, "--input-tokens", "50:150", NULL};
		bodies_equal(args, 1, 1, true, OAI_CHAT);
		bodies_equal(args, 1, 2, false, OAI_CHAT);
	}
}

/* ---- ShareGPT ---- */

static const char *const sharegpt_prompts[] = {
	"Write a short poem about the sea at night.",
	"How do I reverse a list in Python?",
	"Explain what a prefix cache does in an inference server, in two sentences.",
	"Traduis en fran\u00e7ais : \"good morning, how are you?\" \u2014 merci !",
	"Is anybody there?",
};
static const char *const sharegpt_replies[] = {
	"The sea at night is a dark and breathing thing, it folds the moon in silver and lets it go again.",
	"Use slicing: items[::-1] gives a reversed copy, and items.reverse() reverses the list in place.",
	("It keeps the attention keys and values of prompt prefixes it has already processed. A new request "
	 "that starts with the same tokens skips that part of the prefill."),
	"Bonjour, comment allez-vous ?",
	NULL,
};

static void test_sharegpt(void **state)
{
	(void)state;
	char spec[4200];
	snprintf(spec, sizeof spec, "sharegpt:%s", fixture("sharegpt.json"));
	struct config cfg;
	struct dataset *d = open_ok(&cfg, (const char *[]){"--dataset", spec, NULL});
	assert_int_equal(d->nrecs, 5);
	assert_int_equal(d->skipped, 2);
	assert_non_null(strstr(dataset_describe(d), "5 prompts"));
	struct rng r;
	rng_seed(&r, 1);
	/* Each round of 5 requests uses each prompt once, in some order. */
	for (int round = 0; round < 3; round++) {
		int seen[5] = {0};
		for (int i = 0; i < 5; i++) {
			struct body b = next(d, &r, round == 1 ? OAI_COMPLETIONS : OAI_CHAT);
			int k = -1;
			for (int j = 0; j < 5; j++)
				if (strcmp(b.prompt, sharegpt_prompts[j]) == 0)
					k = j;
			if (k < 0)
				fail_msg("unexpected prompt \"%s\"", b.prompt);
			seen[k]++;
			/* max_tokens: the reply's length at the estimate's
			 * chars per token; no reply: --output-tokens' default. */
			double want = sharegpt_replies[k]
					      ? (double)chars_of(sharegpt_replies[k]) / DATASET_EST_CHARS_PER_TOKEN
					      : 128;
			assert_true(fabs((double)b.max_tokens - want) <= 0.5);
			double want_in = (double)chars_of(sharegpt_prompts[k]) / DATASET_EST_CHARS_PER_TOKEN;
			assert_true(fabs((double)b.input_tokens - want_in) <= 0.5);
			cJSON_Delete(b.root);
		}
		for (int j = 0; j < 5; j++)
			assert_int_equal(seen[j], 1);
	}
	dataset_free(d);
	cli_free(&cfg);

	/* --output-tokens given: it wins over the replies. */
	d = open_ok(&cfg, (const char *[]){"--dataset", spec, "--output-tokens", "20:30", NULL});
	for (int i = 0; i < 20; i++) {
		struct body b = next(d, &r, OAI_CHAT);
		assert_true(b.max_tokens >= 20 && b.max_tokens <= 30);
		cJSON_Delete(b.root);
	}
	dataset_free(d);
	cli_free(&cfg);

	/* A stream of conversation objects (no array) also reads. */
	snprintf(spec, sizeof spec, "sharegpt:%s", fixture("sharegpt_stream.jsonl"));
	d = open_ok(&cfg, (const char *[]){"--dataset", spec, NULL});
	assert_int_equal(d->nrecs, 2);
	dataset_free(d);
	cli_free(&cfg);
}

/* A prefix goes in front of file prompts (as a system message before a
 * messages record) and is the same for all. */
static void test_file_prefix(void **state)
{
	(void)state;
	char spec[4200];
	snprintf(spec, sizeof spec, "jsonl:%s", fixture("data.jsonl"));
	struct config cfg;
	struct dataset *d = open_ok(&cfg, (const char *[]){"--dataset", spec, "--prefix-tokens", "40", NULL});
	struct rng r;
	rng_seed(&r, 2);
	for (int i = 0; i < 12; i++) {
		struct body b = next(d, &r, OAI_CHAT);
		const cJSON *m0 = cJSON_GetArrayItem(b.messages, 0);
		const char *role = cJSON_GetObjectItem(m0, "role")->valuestring;
		const char *content = cJSON_GetObjectItem(m0, "content")->valuestring;
		if (strcmp(role, "system") == 0 && cJSON_GetArraySize(b.messages) > 1 &&
		    strncmp(content, d->prefix, d->prefix_len) == 0) {
			assert_string_equal(content, d->prefix);
		} else {
			assert_string_equal(role, "user");
			assert_memory_equal(content, d->prefix, d->prefix_len);
			assert_memory_equal(content + d->prefix_len, "\n\n", 2);
		}
		assert_int_equal(sim_tokens(d->prefix), 40);
		cJSON_Delete(b.root);
	}
	dataset_free(d);
	cli_free(&cfg);
}

/* ---- JSON Lines ---- */

static void test_jsonl(void **state)
{
	(void)state;
	char spec[4200];
	snprintf(spec, sizeof spec, "jsonl:%s", fixture("data.jsonl"));
	struct config cfg;
	struct dataset *d = open_ok(&cfg, (const char *[]){"--dataset", spec, NULL});
	assert_int_equal(d->nrecs, 6);
	struct rng r;
	rng_seed(&r, 4);
	int found = 0;
	for (int i = 0; i < 6; i++) {
		struct body b = next(d, &r, OAI_CHAT);
		const cJSON *m0 = cJSON_GetArrayItem(b.messages, 0);
		const char *c0 = cJSON_IsString(cJSON_GetObjectItem(m0, "content"))
					 ? cJSON_GetObjectItem(m0, "content")->valuestring
					 : "";
		if (strcmp(c0, "Summarize the plot of a detective story in three sentences.") == 0) {
			assert_int_equal(b.max_tokens, 64);
			found |= 1;
		} else if (strcmp(c0, "You answer briefly.") == 0) {
			/* messages pass through as given, roles and all */
			assert_int_equal(cJSON_GetArraySize(b.messages), 2);
			assert_int_equal(b.max_tokens, 8);
			found |= 2;
		} else if (cJSON_IsArray(cJSON_GetObjectItem(m0, "content"))) {
			assert_int_equal(b.max_tokens, 128);
			found |= 4;
		} else if (strcmp(c0, "Write a haiku about load testing.") == 0) {
			assert_int_equal(cJSON_GetArraySize(b.messages), 3);
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(b.messages, 1), "content")));
			found |= 8;
		} else if (strcmp(c0, "Indented records and \"escaped quotes\" are fine.") == 0) {
			assert_int_equal(b.max_tokens, 32);
			found |= 16;
		} else {
			assert_string_equal(c0, "List five prime numbers.");
			found |= 32;
		}
		cJSON_Delete(b.root);
	}
	assert_int_equal(found, 63);
	dataset_free(d);
	cli_free(&cfg);

	/* For /v1/completions, a messages record becomes its texts joined. */
	d = open_ok(&cfg, (const char *[]){"--dataset", spec, "--api", "completions", "--output-tokens", "7", NULL});
	found = 0;
	for (int i = 0; i < 6; i++) {
		struct body b = next(d, &r, OAI_COMPLETIONS);
		assert_int_equal(b.max_tokens, 7);
		if (strcmp(b.prompt, "You answer briefly.\n\nWhat is the capital of Norway?") == 0)
			found |= 1;
		if (strcmp(b.prompt, "Describe this picture:") == 0)
			found |= 2;
		cJSON_Delete(b.root);
	}
	assert_int_equal(found, 3);
	dataset_free(d);
	cli_free(&cfg);
}

/* ---- text ---- */

/* sonnet:FILE is vLLM's name for text:FILE: the same prompts. */
static void test_sonnet_name(void **state)
{
	(void)state;
	char spec_t[4200], spec_s[4200];
	snprintf(spec_t, sizeof spec_t, "text:%s", fixture("sonnet.txt"));
	snprintf(spec_s, sizeof spec_s, "sonnet:%s", fixture("sonnet.txt"));
	assert_int_equal(dataset_spec_check(spec_s), 0);
	assert_int_equal(dataset_spec_check("sonnet:"), -1);
	struct config ct, cs;
	struct dataset *t = open_ok(&ct, (const char *[]){"--dataset", spec_t, "--prefix-tokens", "20", NULL});
	struct dataset *s = open_ok(&cs, (const char *[]){"--dataset", spec_s, "--prefix-tokens", "20", NULL});
	assert_int_equal(t->nrecs, s->nrecs);
	struct rng r1, r2;
	rng_seed(&r1, 3);
	rng_seed(&r2, 3);
	for (int i = 0; i < 20; i++) {
		struct body a = next(t, &r1, OAI_CHAT), b = next(s, &r2, OAI_CHAT);
		assert_string_equal(a.prompt, b.prompt);
		cJSON_Delete(a.root);
		cJSON_Delete(b.root);
	}
	dataset_free(t);
	dataset_free(s);
	cli_free(&ct);
	cli_free(&cs);
}

static void test_text(void **state)
{
	(void)state;
	char spec[4200];
	snprintf(spec, sizeof spec, "text:%s", fixture("sonnet.txt"));
	struct config cfg;
	struct dataset *d = open_ok(&cfg, (const char *[]){"--dataset", spec, "--input-tokens", "200:400",
							   "--output-tokens", "2", "--prefix-tokens", "50", NULL});
	assert_int_equal(d->nrecs, 38);
	FILE *f = fopen(fixture("sonnet.txt"), "r");
	assert_non_null(f);
	char *file = calloc(1, 1 << 16);
	assert_non_null(file);
	size_t flen = fread(file, 1, (1 << 16) - 1, f);
	fclose(f);
	file[flen] = '\0';
	/* The prefix is the file's opening, about 50 tokens' worth. */
	assert_memory_equal(d->prefix, file, d->prefix_len);
	assert_true(fabs((double)chars_of(d->prefix) / DATASET_EST_CHARS_PER_TOKEN - 50) <= 2);

	struct rng r;
	rng_seed(&r, 8);
	double sum = 0;
	const int n = 400;
	for (int i = 0; i < n; i++) {
		struct body b = next(d, &r, OAI_CHAT);
		assert_int_equal(b.max_tokens, 2);
		assert_memory_equal(b.prompt, d->prefix, d->prefix_len);
		/* Every line after the prefix comes from the file (the last
		 * one may be cut short). */
		char *copy = strdup(b.prompt + d->prefix_len);
		assert_non_null(copy);
		for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
			assert_non_null(strstr(file, l));
		free(copy);
		double est = (double)chars_of(b.prompt) / DATASET_EST_CHARS_PER_TOKEN;
		/* At most half a word off the length drawn from 200:400. */
		assert_true(b.input_tokens >= 198 && b.input_tokens <= 402);
		assert_true(fabs(est - (double)b.input_tokens) <= 2);
		sum += (double)b.input_tokens;
		cJSON_Delete(b.root);
	}
	assert_true(fabs(sum / n - 300) < 6);
	free(file);
	dataset_free(d);
	cli_free(&cfg);
}

/* ---- errors ---- */

static void test_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *kind, *file, *want;
	} cases[] = {
		{"sharegpt", "sharegpt_bad_json.json", "sharegpt_bad_json.json:5: conversation 2: not valid JSON"},
		{"sharegpt", "sharegpt_bad_turn.json", "sharegpt_bad_turn.json:4: conversation 3: turn 1"},
		{"sharegpt", "sharegpt_truncated.json", "sharegpt_truncated.json:3: conversation 2 never ends"},
		{"sharegpt", "sharegpt_not_array.json", "sharegpt_not_array.json:1: expected a JSON array"},
		{"sharegpt", "sharegpt_no_conversations.json",
		 "sharegpt_no_conversations.json:3: conversation 2: 'conversations' must be an array"},
		{"sharegpt", "data.jsonl", "data.jsonl:1: conversation 1: 'conversations' must be an array"},
		{"sharegpt", "sonnet.txt", "sonnet.txt:1: expected a JSON array"},
		{"sharegpt", "empty.txt", "empty.txt: empty file"},
		{"sharegpt", "blank.txt", "blank.txt: no conversations"},
		{"jsonl", "data_bad_json.jsonl", "data_bad_json.jsonl:3: not valid JSON (column"},
		{"jsonl", "data_no_prompt.jsonl", "data_no_prompt.jsonl:2: needs 'prompt'"},
		{"jsonl", "data_bad_max_tokens.jsonl", "data_bad_max_tokens.jsonl:3: 'max_tokens'"},
		{"jsonl", "data_bad_messages.jsonl", "data_bad_messages.jsonl:2: message 1: 'content'"},
		{"jsonl", "sharegpt.json", "sharegpt.json:1: not valid JSON"},
		{"jsonl", "empty.txt", "empty.txt: empty file"},
		{"jsonl", "blank.txt", "blank.txt: no records"},
		{"text", "text_bad_utf8.txt", "text_bad_utf8.txt:2: not valid UTF-8"},
		{"text", "text_nul.txt", "text_nul.txt:2: NUL byte"},
		{"text", "empty.txt", "empty.txt: empty file"},
		{"text", "blank.txt", "blank.txt: no non-blank lines"},
		{"text", "does-not-exist.txt", "cannot open"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char spec[4200];
		snprintf(spec, sizeof spec, "%s:%s", cases[i].kind, fixture(cases[i].file));
		open_fails((const char *[]){"--dataset", spec, NULL}, cases[i].want);
	}
}

/* Records written to a temporary file; returns its path (static). */
static const char *write_tmp(const char *tag, const char *head, const char *big, size_t big_len, const char *tail)
{
	static char path[256];
	snprintf(path, sizeof path, "/tmp/infertop-test-dataset-%ld-%s", (long)getpid(), tag);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	fputs(head, f);
	assert_int_equal(fwrite(big, 1, big_len, f), big_len);
	fputs(tail, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* An 8 MB prompt on one line (or in one JSON string) loads and is sent
 * whole; a text line that long is cut to the length asked for. */
static void test_huge_lines(void **state)
{
	(void)state;
	const size_t big = (size_t)8 << 20;
	char *s = malloc(big + 1);
	assert_non_null(s);
	for (size_t i = 0; i < big; i++)
		s[i] = i % 6 == 5 ? ' ' : (char)('a' + i % 26);
	s[big] = '\0';
	struct {
		const char *kind, *head, *tail;
		size_t nrecs;
	} cases[] = {
		{"jsonl", "{\"prompt\": \"small one\"}\n{\"prompt\": \"", "\", \"max_tokens\": 5}\n{\"prompt\": \"x\"}\n", 3},
		{"sharegpt", "[{\"conversations\": [{\"from\": \"human\", \"value\": \"",
		 "\"}, {\"from\": \"gpt\", \"value\": \"ok\"}]},\n{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}]\n", 2},
		{"text", "short line\n", "\nanother short line\n", 3},
	};
	for (size_t k = 0; k < 3; k++) {
		const char *path = write_tmp(cases[k].kind, cases[k].head, s, big, cases[k].tail);
		char spec[512];
		snprintf(spec, sizeof spec, "%s:%s", cases[k].kind, path);
		struct config cfg;
		struct dataset *d = open_ok(&cfg, (const char *[]){"--dataset", spec, "--input-tokens", "128", NULL});
		assert_int_equal(d->nrecs, cases[k].nrecs);
		struct rng r;
		rng_seed(&r, 1);
		bool saw_big = false;
		for (int i = 0; i < 30; i++) {
			struct body b = next(d, &r, OAI_CHAT);
			size_t pl = strlen(b.prompt);
			if (k == 2) {
				assert_true(pl < 128 * 6);
			} else if (pl == big) {
				assert_memory_equal(b.prompt, s, big);
				assert_true(b.len > big);
				saw_big = true;
			}
			cJSON_Delete(b.root);
		}
		assert_true(saw_big || k == 2);
		dataset_free(d);
		cli_free(&cfg);
		unlink(path);
	}
	free(s);
}

static void test_describe(void **state)
{
	(void)state;
	struct config cfg;
	struct dataset *d = open_ok(&cfg, (const char *[]){"--input-tokens", "128", "--prefix-tokens", "8", NULL});
	const char *s = dataset_describe(d);
	assert_non_null(strstr(s, "synthetic"));
	assert_non_null(strstr(s, "128"));
	assert_non_null(strstr(s, "estimated"));
	assert_non_null(strstr(s, "prefix 8 tok"));
	dataset_free(d);
	cli_free(&cfg);
}

/* The appended body builder: the given messages verbatim, every other
 * member as oai_body_build() makes it, extra_body still winning. */
static void test_body_messages(void **state)
{
	(void)state;
	const char *msgs = "[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]";
	cJSON *extra = cJSON_Parse("{\"top_p\":0.5,\"max_tokens\":9}");
	assert_non_null(extra);
	struct oai_request_opts o = {.api = OAI_CHAT, .model = "m", .max_tokens = 5, .ignore_eos = true,
				     .have_temperature = true, .temperature = 0.25, .extra_body = extra};
	size_t len = 0, plen = 0;
	char *body = oai_body_build_messages(&o, msgs, &len);
	char *plain = oai_body_build(&o, "x", &plen);
	assert_non_null(body);
	assert_non_null(plain);
	assert_int_equal(strlen(body), len);
	cJSON *b = cJSON_Parse(body), *p = cJSON_Parse(plain);
	assert_non_null(b);
	char *got = cJSON_PrintUnformatted(cJSON_GetObjectItem(b, "messages"));
	assert_string_equal(got, msgs);
	free(got);
	/* Apart from the messages, the same members in the same order. */
	cJSON_DeleteItemFromObject(b, "messages");
	cJSON_DeleteItemFromObject(p, "messages");
	char *bs = cJSON_PrintUnformatted(b), *ps = cJSON_PrintUnformatted(p);
	assert_string_equal(bs, ps);
	assert_int_equal((int)cJSON_GetObjectItem(b, "max_tokens")->valuedouble, 9);
	free(bs);
	free(ps);
	cJSON_Delete(b);
	cJSON_Delete(p);
	free(body);
	free(plain);
	cJSON_Delete(extra);

	extra = cJSON_Parse("{\"messages\":[{\"role\":\"user\",\"content\":\"from extra\"}]}");
	o.extra_body = extra;
	body = oai_body_build_messages(&o, msgs, &len);
	assert_non_null(strstr(body, "from extra"));
	assert_null(strstr(body, "\"system\""));
	free(body);
	cJSON_Delete(extra);

	o.extra_body = NULL;
	o.api = OAI_COMPLETIONS;
	assert_null(oai_body_build_messages(&o, msgs, &len));
}

/* ---- bodies pinned ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* n bodies under options that vary per request (API, model, ignore_eos,
 * temperature, extra_body), folded into one digest with their lengths
 * and token estimates. Each body is also rebuilt by oai_body_build() from
 * the prompt it carries: how a body is assembled may change, its bytes
 * may not. */
static uint64_t bodies_digest(struct dataset *d, uint64_t seed, int n)
{
	cJSON *extra = cJSON_Parse("{\"top_p\":0.9,\"stream\":false}");
	assert_non_null(extra);
	struct rng r;
	rng_seed(&r, seed);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < n; i++) {
		struct oai_request_opts o = {.api = i % 2 ? OAI_CHAT : OAI_COMPLETIONS,
					     .model = i % 3 ? "model-a" : NULL,
					     .ignore_eos = i % 4 < 2,
					     .have_temperature = i % 5 == 0,
					     .temperature = 0.7,
					     .extra_body = i % 7 == 0 ? extra : NULL};
		size_t len = 0;
		long in = 0;
		char *body = dataset_next_body(d, &r, &o, &len, &in);
		assert_non_null(body);
		assert_int_equal(strlen(body), len);
		h = fnv1a(h, body, len + 1);
		char num[32];
		h = fnv1a(h, num, (size_t)snprintf(num, sizeof num, ",%ld;", in));

		cJSON *root = cJSON_Parse(body);
		assert_non_null(root);
		const cJSON *mt = cJSON_GetObjectItem(root, "max_tokens");
		const cJSON *p = o.api == OAI_CHAT
					 ? cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "messages"), 0),
							       "content")
					 : cJSON_GetObjectItem(root, "prompt");
		assert_true(cJSON_IsNumber(mt) && cJSON_IsString(p));
		o.max_tokens = mt->valueint;
		size_t rlen = 0;
		char *again = oai_body_build(&o, p->valuestring, &rlen);
		assert_non_null(again);
		assert_int_equal(rlen, len);
		assert_string_equal(again, body);
		free(again);
		cJSON_Delete(root);
		free(body);
	}
	cJSON_Delete(extra);
	return h;
}

/* The digests were recorded with the bodies built by oai_body_build()
 * from a freshly allocated prompt (before body_shape): the same seed
 * gives the same prompts, lengths and bytes. */
static void test_bodies_pinned(void **state)
{
	(void)state;
	char spec[4200];
	struct {
		const char *args[16];
		uint64_t seed, want;
	} runs[] = {
		{{"--input-tokens", "normal:1024,200", "--output-tokens", "10:300", "--prefix-tokens", "32",
		  "--seed", "5", NULL},
		 3, 0x696cd7de1eac1d63ULL},
		{{"--input-tokens", "1:64", "--output-tokens", "1:5", "--slice", "1/3", NULL}, 4, 0x6b56a9e033034365ULL},
		{{"--dataset", spec, "--input-tokens", "200:400", "--output-tokens", "2:9", "--prefix-tokens", "50",
		  NULL},
		 5, 0x000e47a5f0a4cfabULL},
		{{"--dataset", spec, "--input-tokens", "1:30", NULL}, 6, 0xc1b81760ebe67641ULL},
	};
	snprintf(spec, sizeof spec, "text:%s", fixture("sonnet.txt"));
	bool all = true;
	for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
		struct config cfg;
		struct dataset *d = open_ok(&cfg, runs[k].args);
		uint64_t h = bodies_digest(d, runs[k].seed, 500);
		if (h != runs[k].want) {
			print_message("run %zu: digest 0x%016llxULL, pinned 0x%016llxULL\n", k, (unsigned long long)h,
				      (unsigned long long)runs[k].want);
			all = false;
		}
		dataset_free(d);
		cli_free(&cfg);
	}
	assert_true(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic_distributions),
		cmocka_unit_test(test_synthetic_text_shape),
		cmocka_unit_test(test_prefix_shared),
		cmocka_unit_test(test_reproducible),
		cmocka_unit_test(test_sharegpt),
		cmocka_unit_test(test_file_prefix),
		cmocka_unit_test(test_jsonl),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_sonnet_name),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_huge_lines),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_body_messages),
		cmocka_unit_test(test_bodies_pinned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
