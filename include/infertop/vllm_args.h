#ifndef INFERTOP_VLLM_ARGS_H
#define INFERTOP_VLLM_ARGS_H

/*
 * vLLM's benchmark_serving.py arguments as infertop options: one table
 * (vllm_args.c) says, for every argument, the option it becomes or why it
 * does not apply here. Two readers share it:
 *
 *   the helm chart's POST /start-load payload (runspec.c): a JSON object,
 *     keys with underscores ("request_rate");
 *   infertop --from-vllm-args "--model X --request-rate 4 ..." (cli.c): a
 *     vLLM command line, "--request-rate" and "--request_rate" alike.
 *
 * Keys that do not apply are accepted and listed (the answer, the
 * result's warnings); only unknown keys are refused, naming them and the
 * accepted ones. Pure: no I/O. Unit-tested in tests/test_vllm_args.c,
 * fuzzed (tests/fuzz/fuzz_runspec.c), run in tests/start_load.sh.
 */

#include <stdbool.h>
#include <stddef.h>

#define VLLM_FIELD_MAX 64

struct cJSON;

struct vllm_args {
	int argc;
	char **argv;            /* infertop options ("--name=value", "--flag"), NULL-terminated */
	char *url;              /* the target: base_url, or http://host:port */
	struct cJSON *ignored;  /* {"key":"why"} for the keys given that do not apply; NULL: none */
};

/* Reads a payload object. 0, or -1 with the offending key in field (""
 * for the whole) and a message in err; out is then empty. */
int vllm_args_from_json(const struct cJSON *obj, struct vllm_args *out, char field[VLLM_FIELD_MAX], char *err,
			size_t errcap);
/* Reads a vLLM command line (words split on blanks, '…' and "…" quote):
 * the same as the payload with the same keys. */
int vllm_args_from_line(const char *line, struct vllm_args *out, char field[VLLM_FIELD_MAX], char *err,
			size_t errcap);
void vllm_args_free(struct vllm_args *a);
/* Whether key (underscores) is one of vLLM's arguments. */
bool vllm_args_known(const char *key);
/* The i-th row for documentation: key, what it becomes (an infertop
 * option, "" for ignored), why it is ignored (NULL when it is not). 0, or
 * -1 past the last. */
int vllm_args_row(int i, const char **key, const char **option, const char **ignored_why);

#endif
