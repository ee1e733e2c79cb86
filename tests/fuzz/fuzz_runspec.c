/* Run specs (infertop serve) under arbitrary bytes: never a crash, an
 * out-of-bounds read or a leak; a refusal always has a message and a
 * printable field; an accepted spec is an argv whose options are all
 * "--NAME[=VALUE]" up to a "--" before the target. The same bytes as a
 * vLLM command line (--from-vllm-args): options only, and a target.
 * Aborts on a violation. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/runspec.h"
#include "infertop/vllm_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int kind(const char *name)
{
	if (strcmp(name, "concurrency") == 0 || strcmp(name, "header") == 0 || strcmp(name, "output") == 0)
		return 1;
	if (strcmp(name, "no-tui") == 0)
		return 0;
	return -1;
}

static void fuzz_line(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	if (!line)
		return;
	memcpy(line, data, size);
	line[size] = '\0';
	struct vllm_args va;
	char field[VLLM_FIELD_MAX], err[1024];
	if (vllm_args_from_line(line, &va, field, err, sizeof err) != 0) {
		if (err[0] == '\0' || va.argv || va.url)
			abort();
	} else {
		if (!va.url || (va.argc && !va.argv) || (va.argv && va.argv[va.argc]))
			abort();
		for (int i = 0; i < va.argc; i++)
			if (strncmp(va.argv[i], "--", 2) != 0)
				abort();
		vllm_args_free(&va);
	}
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_line(data, size);
	struct runspec rs;
	char field[RUNSPEC_FIELD_MAX], err[RUNSPEC_ERR_MAX];
	if (runspec_build((const char *)data, size, kind, &rs, field, err) != 0) {
		if (err[0] == '\0' || strlen(field) >= RUNSPEC_FIELD_MAX || rs.argv)
			abort();
		for (const char *p = field; *p; p++)
			if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
				abort();
		return 0;
	}
	if (rs.argc < 1 || !rs.argv || strcmp(rs.argv[0], "infertop") != 0 || rs.argv[rs.argc])
		abort();
	for (int i = 1; i < rs.argc; i++) {
		if (strcmp(rs.argv[i], "--") == 0) {
			if (i != rs.argc - 2)
				abort();
			break;
		}
		if (strncmp(rs.argv[i], "--", 2) != 0 || strncmp(rs.argv[i], "--output=", 9) == 0)
			abort();
	}
	runspec_free(&rs);
	return 0;
}
