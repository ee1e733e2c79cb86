/* The per-request cost of a request body: dataset_next_body() on one core
 * for a synthetic dataset (chat and completions) and a sonnet-style text
 * dataset, TOKENS-token prompts, a model name and --ignore-eos as a run
 * would send them. Prints bodies/s and ns per body, the best of three
 * rounds (the machine's noise only ever adds). Usage:
 * bench_body [BODIES] [TOKENS] (default 100000 1024). The text file is
 * tests/fixtures/datasets/sonnet.txt under $INFERTOP_FIXTURES or
 * tests/fixtures. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	return 0;
}
