/* --prefix-groups without a server: the parser's errors (named fields),
 * the option's conflicts, and the bodies: one system prompt per group,
 * byte for byte the same on every request of the group and different
 * between groups, distinct questions, the round robin over the pairs,
 * the lengths (uncalibrated and calibrated), the completions form, texts
 * that --seed does not change, and slices that together walk the pairs
 * once. */
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

#include "infertop/cli.h"
#include "infertop/dataset.h"
#include "infertop/prefix_groups.h"

static enum cli_result parse_args(struct config *cfg, const char *const *args, char *err, size_t cap)
{
	const char *argv[32] = {"infertop"};
	int argc = 1;
	while (args[argc - 1])
		argv[argc] = args[argc - 1], argc++;
	argv[argc++] = "http://127.0.0.1:1";
	char field[64];
	memset(cfg, 0, sizeof *cfg);
	return cli_parse_capture(cfg, argc, (char **)argv, err, cap, field, sizeof field);
}

static void test_parse_errors(void **state)
{
	(void)state;
	struct prefix_groups_spec sp;
	char err[256];
	assert_int_equal(prefix_groups_parse("8,4,512,64", &sp, err, sizeof err), 0);
	assert_int_equal(sp.groups, 8);
	assert_int_equal(sp.per_group, 4);
	assert_int_equal(sp.system_tokens, 512);
	assert_int_equal(sp.question_tokens, 64);
	static const struct {
		const char *in, *want;
	} bad[] = {
		{"", "G: expected a whole number from 1 to 1000000"},
		{"0,4,512,64", "G: expected a whole number"},
		{"8,x,512,64", "PER_GROUP: expected a whole number"},
		{"8,4,-1,64", "SYSTEM_TOK: expected a whole number from 1 to 10000000"},
		{"8,4,512,0", "QUESTION_TOK: expected a whole number"},
		{"8,4,512,99999999", "QUESTION_TOK: expected a whole number"},
		{"8,4,512", "expected four numbers G,PER_GROUP,SYSTEM_TOK,QUESTION_TOK, got fewer"},
		{"8,4,512,64,1", "got more"},
		{"8,4,512,64,", "got more"},
		{"8, 4,512,64", "PER_GROUP: expected"},
		{"2000000,1,1,1", "G: expected a whole number from 1 to 1000000"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_int_equal(prefix_groups_parse(bad[i].in, &sp, err, sizeof err), -1);
		if (!strstr(err, bad[i].want))
			fail_msg("'%s': got '%s', want '%s'", bad[i].in, err, bad[i].want);
	}
	/* The command line says the option and the value. */
	struct config cfg;
	const char *const a[] = {"--prefix-groups", "8,4", NULL};
	assert_int_equal(parse_args(&cfg, a, err, sizeof err), CLI_EXIT_USAGE);
	assert_non_null(strstr(err, "invalid value '8,4' for --prefix-groups: expected four numbers"));
	cli_free(&cfg);
}

static void test_conflicts(void **state)
{
	(void)state;
	static const char *const with[][3] = {
		{"--dataset", "sharegpt:x.json", NULL},
		{"--prefix-tokens", "10", NULL},
		{"--trace", "mooncake:t.jsonl", NULL},
	};
	for (size_t i = 0; i < sizeof with / sizeof with[0]; i++) {
		const char *const a[] = {"--prefix-groups", "2,2,10,5", with[i][0], with[i][1], NULL};
		struct config cfg;
		char err[256];
		assert_int_equal(parse_args(&cfg, a, err, sizeof err), CLI_EXIT_USAGE);
		assert_non_null(strstr(err, "--prefix-groups builds the prompts"));
		cli_free(&cfg);
	}
	const char *const ok[] = {"--prefix-groups", "2,2,10,5", "--dataset", "synthetic", NULL};
	struct config cfg;
	char err[256];
	assert_int_equal(parse_args(&cfg, ok, err, sizeof err), CLI_RUN);
	cli_free(&cfg);
}

/* Words and periods, the synthetic text's units. */
static long units(const char *s)
{
	long n = 0;
	for (const char *p = s; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			break;
		if (*p == '.') {
			n++, p++;
			continue;
		}
		n++;
		while (*p && *p != ' ' && *p != '\n' && *p != '.')
			p++;
	}
	return n;
}

struct req {
	char sys[4096], q[4096];
	long in;
	int max_tokens;
};

static void next_req(struct dataset *d, struct rng *r, const struct oai_request_opts *o, struct req *out)
{
	size_t len;
	long in;
	char *body = dataset_next_body(d, r, o, &len, &in);
	assert_non_null(body);
	assert_int_equal(len, strlen(body));
	cJSON *j = cJSON_Parse(body);
	assert_non_null(j);
	memset(out, 0, sizeof *out);
	out->in = in;
	out->max_tokens = cJSON_GetObjectItem(j, "max_tokens")->valueint;
	const cJSON *m = cJSON_GetObjectItem(j, "messages");
	if (m) {
		assert_int_equal(cJSON_GetArraySize(m), 2);
		const cJSON *s = cJSON_GetArrayItem(m, 0), *u = cJSON_GetArrayItem(m, 1);
		assert_string_equal(cJSON_GetObjectItem(s, "role")->valuestring, "system");
		assert_string_equal(cJSON_GetObjectItem(u, "role")->valuestring, "user");
		snprintf(out->sys, sizeof out->sys, "%s", cJSON_GetObjectItem(s, "content")->valuestring);
		snprintf(out->q, sizeof out->q, "%s", cJSON_GetObjectItem(u, "content")->valuestring);
	} else {
		const char *p = cJSON_GetObjectItem(j, "prompt")->valuestring;
		const char *cut = strstr(p, "\n\n");
		assert_non_null(cut);
		snprintf(out->sys, sizeof out->sys, "%.*s", (int)(cut - p), p);
		snprintf(out->q, sizeof out->q, "%s", cut + 2);
	}
	cJSON_Delete(j);
	free(body);
}

#define G 3
#define PER 2

static void check_groups(const char *api)
{
	const char *const a[] = {"--prefix-groups", "3,2,50,10", "--api", api, "--output-tokens", "7", NULL};
	struct config cfg;
	char err[256];
	assert_int_equal(parse_args(&cfg, a, err, sizeof err), CLI_RUN);
	struct dataset *d = dataset_open(&cfg, err, sizeof err);
	if (!d)
		fail_msg("dataset_open: %s", err);
	assert_non_null(strstr(dataset_describe(d), "prefix groups: 3 x 2, system 50 tok, question 10 tok"));
	struct oai_request_opts o = {.api = cfg.api, .model = "m"};
	struct rng r;
	rng_seed(&r, 1);
	static struct req q[2 * G * PER];
	for (int k = 0; k < 2 * G * PER; k++) {
		next_req(d, &r, &o, &q[k]);
		/* Uncalibrated: one token a unit, nothing added. */
		assert_int_equal(units(q[k].sys), 50);
		assert_int_equal(units(q[k].q), 10);
		assert_int_equal(q[k].in, 60);
		assert_int_equal(q[k].max_tokens, 7);
	}
	for (int i = 0; i < 2 * G * PER; i++)
		for (int j = 0; j < 2 * G * PER; j++) {
			bool same_group = i % G == j % G;
			bool same_pair = i % (G * PER) == j % (G * PER);
			/* Same group: the same system bytes; else different. */
			assert_int_equal(strcmp(q[i].sys, q[j].sys) == 0, same_group);
			/* Every pair its own question, the same on its repeat. */
			assert_int_equal(strcmp(q[i].q, q[j].q) == 0, same_pair);
		}
	dataset_free(d);
	cli_free(&cfg);
}

static void test_chat(void **state)
{
	(void)state;
	check_groups("chat");
}

static void test_completions(void **state)
{
	(void)state;
	check_groups("completions");
}

/* Calibrated (dataset.h's fit, as calibrate.c sets it): 2 tokens a unit
 * and 4 tokens the server adds to every prompt. The system text is SYS of
 * the server's tokens, the question carries the 4: SYS + Q in all. */
static void test_calibrated(void **state)
{
	(void)state;
	const char *const a[] = {"--prefix-groups", "2,2,100,24", "--api", "completions", NULL};
	struct config cfg;
	char err[256];
	assert_int_equal(parse_args(&cfg, a, err, sizeof err), CLI_RUN);
	struct dataset *d = dataset_open(&cfg, err, sizeof err);
	assert_non_null(d);
	d->slope = 2.0;
	d->overhead = 4.0;
	d->calibrated = true;
	dataset_update_desc(d);
	assert_non_null(strstr(dataset_describe(d), "tokenize-calibrated"));
	struct oai_request_opts o = {.api = OAI_COMPLETIONS, .model = "m"};
	struct rng r;
	rng_seed(&r, 1);
	struct req q;
	next_req(d, &r, &o, &q);
	assert_int_equal(units(q.sys), 50);
	assert_int_equal(units(q.q), 10);
	assert_int_equal(q.in, 124);
	dataset_free(d);
	cli_free(&cfg);
}

/* --seed does not change the texts: infertop fleet --start gives each
 * generator its own, and a group's prompt must be one. */
static void test_seed_free(void **state)
{
	(void)state;
	struct req q[2];
	for (int i = 0; i < 2; i++) {
		const char *const a[] = {"--prefix-groups", "2,2,30,6", "--seed", i ? "77" : "1", NULL};
		struct config cfg;
		char err[256];
		assert_int_equal(parse_args(&cfg, a, err, sizeof err), CLI_RUN);
		struct dataset *d = dataset_open(&cfg, err, sizeof err);
		assert_non_null(d);
		struct oai_request_opts o = {.api = OAI_CHAT};
		struct rng r;
		rng_seed(&r, cfg.seed);
		next_req(d, &r, &o, &q[i]);
		dataset_free(d);
		cli_free(&cfg);
	}
	assert_string_equal(q[0].sys, q[1].sys);
	assert_string_equal(q[0].q, q[1].q);
}

/* Two slices: the same texts as one generator (the fleet's seed), and
 * together every pair once per round. */
static void test_slices(void **state)
{
	(void)state;
	struct req one[G * PER], sl[2][G * PER / 2];
	struct oai_request_opts o = {.api = OAI_CHAT};
	struct rng r;
	rng_seed(&r, 1);
	char err[256];
	struct config cfg;
	const char *const a[] = {"--prefix-groups", "3,2,20,4", NULL};
	assert_int_equal(parse_args(&cfg, a, err, sizeof err), CLI_RUN);
	struct dataset *d = dataset_open(&cfg, err, sizeof err);
	assert_non_null(d);
	for (int k = 0; k < G * PER; k++)
		next_req(d, &r, &o, &one[k]);
	dataset_free(d);
	cli_free(&cfg);
	for (int s = 0; s < 2; s++) {
		const char *const b[] = {"--prefix-groups", "3,2,20,4", "--slice", s ? "1/2" : "0/2", NULL};
		assert_int_equal(parse_args(&cfg, b, err, sizeof err), CLI_RUN);
		d = dataset_open(&cfg, err, sizeof err);
		assert_non_null(d);
		for (int k = 0; k < G * PER / 2; k++)
			next_req(d, &r, &o, &sl[s][k]);
		dataset_free(d);
		cli_free(&cfg);
	}
	for (int k = 0; k < G * PER; k++) {
		const struct req *x = &sl[k % 2][k / 2];
		assert_string_equal(x->sys, one[k].sys);
		assert_string_equal(x->q, one[k].q);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_chat),
		cmocka_unit_test(test_completions),
		cmocka_unit_test(test_calibrated),
		cmocka_unit_test(test_seed_free),
		cmocka_unit_test(test_slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
