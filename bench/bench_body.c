/* The per-request cost of a request body: dataset_next_body() on one core
 * for a synthetic dataset (chat and completions) and a sonnet-style text
 * dataset, TOKENS-token prompts, a model name and --ignore-eos as a run
 * would send them; then the body alone from ready prompts, cJSON's way
 * (oai_body_build) and body_shape's. Prints bodies/s and ns per body, the
 * best of three rounds (the machine's noise only ever adds). Usage:
 * bench_body [BODIES] [TOKENS] (default 100000 1024). The text file is
 * tests/fixtures/datasets/sonnet.txt under $INFERTOP_FIXTURES or
 * tests/fixtures. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/body_shape.h"
#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/options.h"

#define ROUNDS 3

static struct dataset *open_dataset(struct config *cfg, const char *spec, const char *tokens)
{
	char *argv[] = {"infertop", "--dataset", (char *)spec, "--input-tokens", (char *)tokens,
			"--output-tokens", "128", "--seed", "1", "http://127.0.0.1:1", NULL};
	memset(cfg, 0, sizeof *cfg);
	if (cli_parse(cfg, 10, argv) != CLI_RUN)
		return NULL;
	char err[512] = "";
	struct dataset *d = dataset_open(cfg, err, sizeof err);
	if (!d)
		fprintf(stderr, "bench_body: %s: %s\n", spec, err);
	return d;
}

static void run(const char *name, const char *spec, const char *tokens, enum oai_api api, long n)
{
	struct config cfg;
	struct dataset *d = open_dataset(&cfg, spec, tokens);
	if (!d) {
		printf("%-24s skipped\n", name);
		cli_free(&cfg);
		return;
	}
	struct oai_request_opts o = {.api = api, .model = "meta-llama/Llama-3.1-8B-Instruct", .ignore_eos = true};
	struct rng r;
	rng_seed(&r, 1);
	double best = 0;
	size_t bytes = 0;
	for (int round = 0; round < ROUNDS; round++) {
		bytes = 0;
		int64_t t0 = clock_now_ns();
		for (long i = 0; i < n; i++) {
			size_t len = 0;
			long in = 0;
			char *body = dataset_next_body(d, &r, &o, &len, &in);
			if (!body) {
				fprintf(stderr, "bench_body: out of memory\n");
				exit(1);
			}
			bytes += len;
			free(body);
		}
		double dt = (double)(clock_now_ns() - t0) / 1e9;
		if (round == 0 || dt < best)
			best = dt;
	}
	printf("%-24s %9.0f bodies/s %8.0f ns/body  (%zu bytes a body)\n", name, (double)n / best,
	       best * 1e9 / (double)n, bytes / (size_t)n);
	dataset_free(d);
	cli_free(&cfg);
}

/* The body alone, from prompts made beforehand: oai_body_build() against
 * body_shape_build(). lines puts a newline every twelfth word, as text
 * datasets have (each one an escape). */
static void run_build(const char *name, enum oai_api api, long units, bool lines, long n)
{
	enum { NPROMPTS = 64 };
	char *prompts[NPROMPTS];
	size_t lens[NPROMPTS];
	struct rng r;
	rng_seed(&r, 2);
	for (int i = 0; i < NPROMPTS; i++) {
		char *buf = NULL;
		size_t len = 0, cap = 0;
		if (dataset_synthetic_units(&r, units, &buf, &len, &cap) != 0) {
			fprintf(stderr, "bench_body: out of memory\n");
			exit(1);
		}
		for (size_t k = 0, words = 0; lines && k < len; k++)
			if (buf[k] == ' ' && ++words % 12 == 0)
				buf[k] = '\n';
		prompts[i] = buf;
		lens[i] = len;
	}
	struct oai_request_opts o = {.api = api, .model = "meta-llama/Llama-3.1-8B-Instruct", .ignore_eos = true};
	double best[2] = {0, 0};
	for (int round = 0; round < ROUNDS; round++)
		for (int way = 0; way < 2; way++) {
			struct body_shape shape = {0};
			int64_t t0 = clock_now_ns();
			for (long i = 0; i < n; i++) {
				o.max_tokens = 1 + (int)(i % 512);
				size_t len = 0;
				int k = (int)(i % NPROMPTS);
				char *body = way ? body_shape_build(&shape, &o, prompts[k], lens[k], &len)
						 : oai_body_build(&o, prompts[k], &len);
				if (!body) {
					fprintf(stderr, "bench_body: out of memory\n");
					exit(1);
				}
				free(body);
			}
			double dt = (double)(clock_now_ns() - t0) / 1e9;
			if (round == 0 || dt < best[way])
				best[way] = dt;
			body_shape_free(&shape);
		}
	for (int way = 0; way < 2; way++)
		printf("%-24s %-16s %9.0f bodies/s %8.0f ns/body\n", name, way ? "body_shape_build" : "oai_body_build",
		       (double)n / best[way], best[way] * 1e9 / (double)n);
	for (int i = 0; i < NPROMPTS; i++)
		free(prompts[i]);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	const char *tokens = argc > 2 ? argv[2] : "1024";
	if (n < 1)
		n = 1;
	const char *dir = getenv("INFERTOP_FIXTURES");
	char text[4200];
	snprintf(text, sizeof text, "text:%s/datasets/sonnet.txt", dir ? dir : "tests/fixtures");
	printf("dataset_next_body, %ld bodies, %s-token prompts, best of %d\n", n, tokens, ROUNDS);
	run("synthetic chat", "synthetic", tokens, OAI_CHAT, n);
	run("synthetic completions", "synthetic", tokens, OAI_COMPLETIONS, n);
	run("text chat", text, tokens, OAI_CHAT, n);
	long units = atol(tokens);
	printf("the body alone, %ld-word prompts made beforehand\n", units);
	run_build("chat", OAI_CHAT, units, false, n);
	run_build("completions", OAI_COMPLETIONS, units, false, n);
	run_build("chat, lines", OAI_CHAT, units, true, n);
	return 0;
}
