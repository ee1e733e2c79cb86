#ifndef INFERTOP_RUNSPEC_H
#define INFERTOP_RUNSPEC_H

/*
 * infertop serve's run specs as data: a JSON body turned into the argv
 * cli_parse takes, so a run over HTTP is configured by exactly the code
 * that configures one on the command line. Two forms are accepted:
 *
 *   infertop's own: every CLI option by its long name, "url" the target:
 *     {"url":"http://h:8000","concurrency":64,"duration":"10m","no-tui":true}
 *     (a value: string or number; a flag: true or false; a repeatable
 *     option: an array)
 *   the vLLM helm chart's POST /start-load payload: vLLM's benchmark
 *     arguments (host, port, num_prompts, request_rate, ...), told apart
 *     by its keys and mapped by vllm_args.h's table.
 *
 * Pure: no I/O, nothing printed. A refusal names the field, which serve
 * sends as the 400's JSON. Unit-tested (tests/test_runspec.c) and fuzzed
 * (tests/fuzz/fuzz_runspec.c).
 */

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

#define RUNSPEC_BODY_MAX 4096
#define RUNSPEC_ERR_MAX 1024  /* an unknown /start-load key lists the accepted ones */
#define RUNSPEC_FIELD_MAX 64

/* What an option is: 1 takes a value, 0 a flag, -1 no such option
 * (cli_option_kind in the program; a table in tests). */
typedef int (*runspec_kind_fn)(const char *name);

struct runspec {
	int argc;
	char **argv;        /* argv[0] "infertop", NULL-terminated, owned */
	bool start_load;    /* the body was the /start-load form */
	struct cJSON *ignored;  /* /start-load keys accepted and ignored: {"key":"why"}, or NULL */
};

/* Builds out from a body of len bytes (no NUL needed). 0, or -1 with the
 * offending field in field ("" for the body as a whole) and a message in
 * err; out is then empty. */
int runspec_build(const char *body, size_t len, runspec_kind_fn kind, struct runspec *out,
		  char field[RUNSPEC_FIELD_MAX], char err[RUNSPEC_ERR_MAX]);
void runspec_free(struct runspec *rs);

#endif
