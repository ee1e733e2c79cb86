/* The dataset file parsers (ShareGPT, JSONL, text) under arbitrary bytes,
 * read through fmemopen() exactly as from a file: they must never crash,
 * read out of bounds or leak; a refusal names the file; an accepted file
 * has prompts, and every body built from it is JSON with a max_tokens.
 * The first byte picks the kind (bits 0-1), the API (bit 2), a shared
 * prefix (bit 3) and a --slice (bits 4-5: none or 2..4 slices, bits 6-7
 * the index); the rest is the file. Aborts on a violation. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "infertop/cli.h"
#include "infertop/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_body(struct dataset *d, struct rng *r, enum oai_api api)
{
	struct oai_request_opts o = {.api = api, .model = "m", .ignore_eos = true};
	size_t len = 0;
	long in = -1;
	char *body = dataset_next_body(d, r, &o, &len, &in);
	if (!body)
		abort();
	if (strlen(body) != len || in < 0)
		abort();
	cJSON *root = cJSON_ParseWithLength(body, len);
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
	if (!cJSON_IsObject(root) || !cJSON_IsNumber(mt) || mt->valuedouble < 1)
		abort();
	if (api == OAI_CHAT && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "messages")))
		abort();
	if (api == OAI_COMPLETIONS && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "prompt")))
		abort();
	cJSON_Delete(root);
	free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const specs[] = {"sharegpt:fuzz", "jsonl:fuzz", "text:fuzz", "jsonl:fuzz"};
	if (size < 2)
		return 0;
	char spec[32];
	snprintf(spec, sizeof spec, "%s", specs[data[0] & 3]);
	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.dataset = spec;
	cfg.api = data[0] & 4 ? OAI_COMPLETIONS : OAI_CHAT;
	cfg.prefix_tokens = data[0] & 8 ? 8 : 0;
	cfg.seed = 1;
	if (data[0] & 0x30) {
		cfg.slice_count = ((data[0] >> 4) & 3) + 1;
		cfg.slice_index = (data[0] >> 6) % cfg.slice_count;
	}
	cfg.input_tokens = 64;
	cfg.output_tokens = 16;
	if (dist_parse("32:96", 1000, &cfg.input_dist) != 0 || dist_parse("16", 1000, &cfg.output_dist) != 0)
		abort();

	FILE *f = fmemopen((void *)(data + 1), size - 1, "rb");
	if (!f)
		return 0;
	char err[512] = "";
	struct dataset *d = dataset_open_stream(&cfg, f, "fuzz", err, sizeof err);
	fclose(f);
	if (!d) {
		if (strncmp(err, "fuzz", 4) != 0 && strcmp(err, "out of memory") != 0)
			abort();
		return 0;
	}
	if (d->nrecs == 0)
		abort();
	for (size_t i = 0; i < d->nrecs; i++)
		if (dataset_utf8_chars(d->recs[i].text, d->recs[i].len) < 0 && !d->recs[i].messages)
			abort();
	struct rng r;
	rng_seed(&r, 1);
	for (int i = 0; i < 4; i++)
		check_body(d, &r, cfg.api);
	dataset_free(d);
	return 0;
}
