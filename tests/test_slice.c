/* --slice I/N without a server: the spec's parser, the seed a slice gets,
 * N slices of each file kind disjoint and together the whole file (record
 * by record, against the unsliced dataset), the shared prefix the same in
 * every slice, synthetic streams that differ between slices even with one
 * --seed, and the errors (an empty slice, a bad record outside the slice). */
#include "config.h"

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

static char fixture_path[4096];

static const char *fixture(const char *name)
{
	const char *dir = getenv("INFERTOP_FIXTURES");
	snprintf(fixture_path, sizeof fixture_path, "%s/datasets/%s", dir ? dir : "tests/fixtures", name);
	return fixture_path;
}

/* cli_parse of `infertop ARGS... http://127.0.0.1:1`; returns its result. */
static enum cli_result parse_args(struct config *cfg, const char *const *args)
{
	const char *argv[32] = {"infertop"};
	int argc = 1;
	while (args[argc - 1])
		argv[argc] = args[argc - 1], argc++;
	argv[argc++] = "http://127.0.0.1:1";
	memset(cfg, 0, sizeof *cfg);
	return cli_parse(cfg, argc, (char **)argv);
}

/* The dataset of a command line; NULL with the error in err. */
static struct dataset *open_args(struct config *cfg, const char *const *args, char *err, size_t cap)
{
	assert_int_equal(parse_args(cfg, args), CLI_RUN);
	err[0] = '\0';
	return dataset_open(cfg, err, cap);
}

static struct dataset *open_ok(struct config *cfg, const char *const *args)
{
	char err[512];
	struct dataset *d = open_args(cfg, args, err, sizeof err);
	if (!d)
		fail_msg("dataset_open: %s", err);
	return d;
}

/* The prompt text of the next body (completions API: one string). */
static char *next_prompt(struct dataset *d, struct rng *r)
{
	struct oai_request_opts o = {.api = OAI_COMPLETIONS, .model = "m", .ignore_eos = true};
	size_t len;
	long in;
	char *json = dataset_next_body(d, r, &o, &len, &in);
	assert_non_null(json);
	cJSON *root = cJSON_Parse(json);
	free(json);
	const cJSON *p = cJSON_GetObjectItem(root, "prompt");
	assert_true(cJSON_IsString(p));
	char *s = strdup(p->valuestring);
	cJSON_Delete(root);
	assert_non_null(s);
	return s;
}

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		long i, n;
	} good[] = {{"0/1", 0, 1}, {"2/3", 2, 3}, {"0/3", 0, 3}, {"99999/100000", 99999, 100000}, {"007/010", 7, 10}};
	for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
		long i = -1, n = -1;
		if (dataset_slice_parse(good[k].s, &i, &n) != 0)
			fail_msg("'%s' refused", good[k].s);
		assert_int_equal(i, good[k].i);
		assert_int_equal(n, good[k].n);
	}
	static const char *const bad[] = {"", "3", "3/3", "4/3", "-1/3", "1/-3", "1/0", "0/0", "1/", "/3", "1/3x",
					  " 1/3", "1/3 ", "1 /3", "+1/3", "1/+3", "0/100001", "1/3/4", "a/b",
					  "0/99999999999999999999999", "0x1/3", "1.0/3", "1:3"};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		long i = 42, n = 42;
		if (dataset_slice_parse(bad[k], &i, &n) == 0)
			fail_msg("'%s' accepted", bad[k]);
		assert_int_equal(i, 42);
		assert_int_equal(n, 42);
	}
}

static void test_cli_seed(void **state)
{
	(void)state;
	struct config cfg;
	const char *none[] = {NULL};
	assert_int_equal(parse_args(&cfg, none), CLI_RUN);
	assert_int_equal(cfg.slice_count, 0);
	assert_int_equal(cfg.seed, 1);
	cli_free(&cfg);
	/* Without --seed, each slice its own seed: 1 + I. */
	for (long i = 0; i < 3; i++) {
		char s[48];
		snprintf(s, sizeof s, "%ld/3", i);
		const char *args[] = {"--slice", s, NULL};
		assert_int_equal(parse_args(&cfg, args), CLI_RUN);
		assert_int_equal(cfg.slice_index, i);
		assert_int_equal(cfg.slice_count, 3);
		assert_int_equal(cfg.seed, 1 + i);
		assert_false(cfg.have_seed);
		cli_free(&cfg);
	}
	/* An explicit --seed is kept, before or after --slice. */
	const char *a1[] = {"--seed", "7", "--slice", "2/3", NULL};
	const char *a2[] = {"--slice", "2/3", "--seed", "7", NULL};
	assert_int_equal(parse_args(&cfg, a1), CLI_RUN);
	assert_int_equal(cfg.seed, 7);
	cli_free(&cfg);
	assert_int_equal(parse_args(&cfg, a2), CLI_RUN);
	assert_int_equal(cfg.seed, 7);
	cli_free(&cfg);
	/* The last --slice wins (serve puts the environment's first). */
	const char *a3[] = {"--slice=0/2", "--slice=4/5", NULL};
	assert_int_equal(parse_args(&cfg, a3), CLI_RUN);
	assert_int_equal(cfg.slice_index, 4);
	assert_int_equal(cfg.slice_count, 5);
	cli_free(&cfg);
	const char *bad[] = {"--slice", "3/3", NULL};
	assert_int_equal(parse_args(&cfg, bad), CLI_EXIT_USAGE);
	cli_free(&cfg);
}

/* Slice i of n holds records i, i+n, i+2n, ... of the whole dataset: so
 * the slices are disjoint and together the whole. Then every prompt a
 * slice sends is one of its own, each once before any repeats. */
static void check_partition(const char *spec, const char *api, long n)
{
	struct config wc;
	const char *wargs[] = {"--dataset", spec, "--api", api, NULL};
	struct dataset *whole = open_ok(&wc, wargs);
	size_t total = 0;
	for (long i = 0; i < n; i++) {
		char s[48];
		snprintf(s, sizeof s, "%ld/%ld", i, n);
		struct config cfg;
		const char *args[] = {"--dataset", spec, "--api", api, "--slice", s, NULL};
		char err[512];
		struct dataset *d = open_args(&cfg, args, err, sizeof err);
		if ((size_t)i >= whole->nrecs) {
			/* More slices than records: the extra ones are empty. */
			assert_null(d);
			assert_non_null(strstr(err, "is empty"));
			cli_free(&cfg);
			continue;
		}
		if (!d)
			fail_msg("%s slice %s: %s", spec, s, err);
		assert_int_equal(d->seen, whole->nrecs);
		assert_int_equal(d->nrecs, (whole->nrecs - (size_t)i + (size_t)n - 1) / (size_t)n);
		for (size_t k = 0; k < d->nrecs; k++) {
			const struct dataset_rec *a = &d->recs[k], *b = &whole->recs[(size_t)i + k * (size_t)n];
			assert_int_equal(a->len, b->len);
			assert_memory_equal(a->text, b->text, a->len);
			assert_int_equal(a->max_tokens, b->max_tokens);
			assert_int_equal(a->reply_chars, b->reply_chars);
		}
		total += d->nrecs;
		char want[64];
		snprintf(want, sizeof want, "slice %s:", s);
		if (!strstr(dataset_describe(d), want))
			fail_msg("describe '%s' lacks '%s'", dataset_describe(d), want);
		/* Bodies (completions: plain text): each of the slice's
		 * prompts once, then again. */
		if (strcmp(api, "completions") == 0) {
			struct rng r;
			rng_seed(&r, 9);
			size_t *used = calloc(d->nrecs, sizeof *used);
			assert_non_null(used);
			for (size_t k = 0; k < 2 * d->nrecs; k++) {
				char *p = next_prompt(d, &r);
				size_t hit = d->nrecs;
				for (size_t j = 0; j < d->nrecs && hit == d->nrecs; j++)
					if (strcmp(d->recs[j].text, p) == 0)
						hit = j;
				if (hit == d->nrecs)
					fail_msg("slice %s sent a prompt not its own: '%s'", s, p);
				used[hit]++;
				free(p);
			}
			for (size_t j = 0; j < d->nrecs; j++)
				assert_int_equal(used[j], 2);
			free(used);
		}
		dataset_free(d);
		cli_free(&cfg);
	}
	assert_int_equal(total, whole->nrecs);
	dataset_free(whole);
	cli_free(&wc);
}

static char tmpdir[] = "/tmp/infertop-slice-XXXXXX";

/* A JSONL file of 100 distinct prompts ("prompt 0" ...). */
static const char *write_jsonl(void)
{
	static char path[128];
	snprintf(path, sizeof path, "%s/p100.jsonl", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 100; i++)
		fprintf(f, "{\"prompt\": \"prompt %d of the file\"%s}\n", i, i % 7 ? "" : ", \"max_tokens\": 5");
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_file_partition(void **state)
{
	(void)state;
	char spec[4200];
	assert_non_null(mkdtemp(tmpdir));
	snprintf(spec, sizeof spec, "jsonl:%s", write_jsonl());
	check_partition(spec, "completions", 3);
	check_partition(spec, "completions", 7);
	check_partition(spec, "completions", 1);
	snprintf(spec, sizeof spec, "sharegpt:%s", fixture("sharegpt.json"));
	check_partition(spec, "chat", 3);
	snprintf(spec, sizeof spec, "sharegpt:%s", fixture("sharegpt_stream.jsonl"));
	check_partition(spec, "chat", 3);
	snprintf(spec, sizeof spec, "jsonl:%s", fixture("data.jsonl"));
	check_partition(spec, "chat", 3);
	check_partition(spec, "completions", 3);
	/* More slices than records. */
	check_partition(spec, "completions", 12);
	char p[256];
	snprintf(p, sizeof p, "%s/p100.jsonl", tmpdir);
	unlink(p);
	rmdir(tmpdir);
}

/* Text (sonnet): every line stays for the shared prefix, which is the same
 * in every slice; a slice samples only its own lines. */
static void test_text(void **state)
{
	(void)state;
	char spec[4200];
	snprintf(spec, sizeof spec, "sonnet:%s", fixture("sonnet.txt"));
	struct config wc;
	const char *wargs[] = {"--dataset", spec, "--prefix-tokens", "20", "--input-tokens", "60", NULL};
	struct dataset *whole = open_ok(&wc, wargs);
	size_t covered = 0;
	for (long i = 0; i < 3; i++) {
		char s[48];
		snprintf(s, sizeof s, "%ld/3", i);
		struct config cfg;
		const char *args[] = {"--dataset", spec, "--prefix-tokens", "20", "--input-tokens", "60", "--slice", s, NULL};
		struct dataset *d = open_ok(&cfg, args);
		assert_int_equal(d->nrecs, whole->nrecs);
		assert_int_equal(d->prefix_len, whole->prefix_len);
		assert_memory_equal(d->prefix, whole->prefix, d->prefix_len);
		for (size_t k = 0; k < d->nslice_lines; k++)
			assert_int_equal(d->slice_lines[k], (size_t)i + 3 * k);
		covered += d->nslice_lines;
		/* Each body: the prefix, then lines of this slice only (the
		 * last one maybe cut). */
		struct rng r;
		rng_seed(&r, 3);
		for (int k = 0; k < 20; k++) {
			char *p = next_prompt(d, &r);
			assert_memory_equal(p, d->prefix, d->prefix_len);
			char *line = p + d->prefix_len, *save = NULL;
			for (char *t = strtok_r(line, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
				bool mine = false;
				for (size_t j = 0; j < d->nslice_lines && !mine; j++)
					mine = strncmp(d->recs[d->slice_lines[j]].text, t, strlen(t)) == 0;
				if (!mine)
					fail_msg("slice %s sent a line not its own: '%s'", s, t);
			}
			free(p);
		}
		dataset_free(d);
		cli_free(&cfg);
	}
	assert_int_equal(covered, whole->nrecs);
	dataset_free(whole);
	cli_free(&wc);
}

/* The first 16 prompts of a synthetic dataset from a command line;
 * returns the length of its prefix. */
static size_t synthetic_prompts(const char *const *args, char *out[16])
{
	struct config cfg;
	struct dataset *d = open_ok(&cfg, args);
	/* What the engine passes: a generator seeded from --seed. A sliced
	 * dataset draws from its own. */
	struct rng r;
	rng_seed(&r, cfg.seed ^ 0x5eedULL);
	for (int k = 0; k < 16; k++)
		out[k] = next_prompt(d, &r);
	size_t plen = d->prefix_len;
	dataset_free(d);
	cli_free(&cfg);
	return plen;
}

static void free_prompts(char *p[16])
{
	for (int k = 0; k < 16; k++)
		free(p[k]);
}

static void test_synthetic(void **state)
{
	(void)state;
	/* Same --seed everywhere, then none: either way the slices' streams
	 * differ at every request, and a slice repeats its own. The prefix
	 * (--prefix-tokens) is the fleet's: the same in every slice. */
	for (int explicit_seed = 0; explicit_seed < 2; explicit_seed++) {
		char *p[3][16], *again[16];
		size_t plen[3];
		for (int i = 0; i < 3; i++) {
			char s[48];
			snprintf(s, sizeof s, "%d/3", i);
			const char *with[] = {"--slice", s, "--seed", "5", "--prefix-tokens", "12", "--input-tokens",
					      "40", NULL};
			const char *without[] = {"--slice", s, "--prefix-tokens", "12", "--input-tokens", "40", NULL};
			plen[i] = synthetic_prompts(explicit_seed ? with : without, p[i]);
		}
		assert_true(plen[0] > 20);
		assert_int_equal(plen[1], plen[0]);
		assert_int_equal(plen[2], plen[0]);
		for (int k = 0; k < 16; k++) {
			assert_string_not_equal(p[0][k], p[1][k]);
			assert_string_not_equal(p[1][k], p[2][k]);
			assert_string_not_equal(p[0][k], p[2][k]);
			assert_memory_equal(p[0][k], p[1][k], plen[0]);
			assert_memory_equal(p[0][k], p[2][k], plen[0]);
		}
		const char *with1[] = {"--slice", "1/3", "--seed", "5", "--prefix-tokens", "12", "--input-tokens", "40", NULL};
		const char *without1[] = {"--slice", "1/3", "--prefix-tokens", "12", "--input-tokens", "40", NULL};
		synthetic_prompts(explicit_seed ? with1 : without1, again);
		for (int k = 0; k < 16; k++)
			assert_string_equal(again[k], p[1][k]);
		free_prompts(again);
		for (int i = 0; i < 3; i++)
			free_prompts(p[i]);
	}
	/* The prefix of a slice without --seed is that of the unsliced run
	 * (seed 1), so one fleet shares one prefix cache entry. */
	char *a[16], *b[16];
	const char *plain[] = {"--prefix-tokens", "12", "--input-tokens", "40", NULL};
	const char *sliced[] = {"--slice", "2/3", "--prefix-tokens", "12", "--input-tokens", "40", NULL};
	size_t la = synthetic_prompts(plain, a);
	size_t lb = synthetic_prompts(sliced, b);
	assert_int_equal(la, lb);
	assert_memory_equal(a[0], b[0], la);
	assert_string_not_equal(a[0], b[0]);
	free_prompts(a);
	free_prompts(b);
}

static void test_errors(void **state)
{
	(void)state;
	char spec[4200], err[512];
	struct config cfg;
	/* A bad record outside this slice still fails: every generator of a
	 * fleet refuses the same file with the same FILE:LINE. */
	snprintf(spec, sizeof spec, "jsonl:%s", fixture("data_bad_json.jsonl"));
	for (int i = 0; i < 2; i++) {
		const char *args[] = {"--dataset", spec, "--slice", i ? "99/100" : "0/100", NULL};
		struct dataset *d = open_args(&cfg, args, err, sizeof err);
		assert_null(d);
		assert_non_null(strstr(err, "data_bad_json.jsonl:"));
		assert_non_null(strstr(err, "not valid JSON"));
		cli_free(&cfg);
	}
	snprintf(spec, sizeof spec, "sonnet:%s", fixture("sonnet.txt"));
	const char *args[] = {"--dataset", spec, "--slice", "99999/100000", NULL};
	assert_null(open_args(&cfg, args, err, sizeof err));
	if (!strstr(err, "--slice 99999/100000 is empty: the file has"))
		fail_msg("error: %s", err);
	cli_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_cli_seed),
		cmocka_unit_test(test_file_partition),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
