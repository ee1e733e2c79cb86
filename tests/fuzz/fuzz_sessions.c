/* --sessions under arbitrary bytes: the SPEC parser, and the session
 * file parsers (ShareGPT, JSONL kept as whole conversations) read through
 * fmemopen() as from a file. They must never crash, read out of bounds
 * or leak; a refused file is named; an accepted one keeps conversations
 * that are JSON arrays of {"role","content"} string pairs with at least
 * one user message, each handed out whole. The first byte picks what
 * (bit 0: SPEC or file), the file's kind (bit 1), the API (bit 2) and a
 * --slice (bits 4-5: none or 2..4 slices, bits 6-7 the index); the rest
 * is the input. Aborts on a violation. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "infertop/dataset.h"
#include "infertop/options.h"
#include "infertop/sessions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_spec(const uint8_t *data, size_t size)
{
	char spec[256];
	size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
	memcpy(spec, data, n);
	spec[n] = '\0';
	struct sessions_spec sp;
	char err[256] = "";
	if (sessions_spec_parse(spec, &sp, err, sizeof err) != 0) {
		if (!err[0])
			abort();
		return;
	}
	if (sp.file ? sp.turns != 0 : sp.turns < 1 || sp.turns > SESSIONS_MAX_TURNS)
		abort();
	struct rng r;
	rng_seed(&r, 1);
	int64_t t = sessions_think_sample(&sp.think, &r);
	if (t < 0 || t > SESSIONS_MAX_THINK_NS)
		abort();
	char buf[64];
	struct sessions_think back;
	if (sessions_think_parse(sessions_think_text(&sp.think, buf, sizeof buf), &back) != 0 ||
	    back.kind != sp.think.kind)
		abort();
}

static void check_conversation(const struct dataset_rec *rec)
{
	cJSON *a = cJSON_ParseWithLength(rec->text, rec->len);
	if (!cJSON_IsArray(a) || !rec->messages)
		abort();
	int users = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, a) {
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
		if (!cJSON_IsString(role) || !cJSON_IsString(c))
			abort();
		users += strcmp(role->valuestring, "user") == 0;
	}
	if (users == 0)
		abort();
	cJSON_Delete(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	if (!(data[0] & 1)) {
		fuzz_spec(data + 1, size - 1);
		return 0;
	}
	char spec[32], sessions[] = "file";
	snprintf(spec, sizeof spec, "%s", data[0] & 2 ? "jsonl:fuzz" : "sharegpt:fuzz");
	struct config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.dataset = spec;
	cfg.sessions = sessions;
	cfg.api = data[0] & 4 ? OAI_COMPLETIONS : OAI_CHAT;
	cfg.seed = 1;
	if (data[0] & 0x30) {
		cfg.slice_count = ((data[0] >> 4) & 3) + 1;
		cfg.slice_index = (data[0] >> 6) % cfg.slice_count;
	}
	cfg.input_tokens = 64;
	cfg.output_tokens = 16;
	if (dist_parse("64", 1000, &cfg.input_dist) != 0 || dist_parse("16", 1000, &cfg.output_dist) != 0)
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
	if (d->nrecs == 0 || !d->sessions)
		abort();
	for (size_t i = 0; i < d->nrecs; i++)
		check_conversation(&d->recs[i]);
	struct rng r;
	rng_seed(&r, 1);
	for (size_t i = 0; i < d->nrecs + 1; i++)
		if (!dataset_next_record(d, &r))
			abort();
	dataset_free(d);
	return 0;
}
