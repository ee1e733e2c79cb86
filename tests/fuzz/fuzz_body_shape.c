/* Differential: body_shape_build() against oai_body_build(), its oracle.
 * One shape lives across inputs, so options that change from one input
 * to the next make it again, as a plan's steps would. The first byte
 * picks the API (bit 0), a model (bit 1), ignore_eos (bit 2), a
 * temperature (bit 3) and an extra_body (bits 4-7, some printing a
 * placeholder); the next four are max_tokens (little-endian), the next
 * the model's length; then the model and the prompt, NULs and all.
 * Aborts when the bodies differ, or when a shape that should have
 * passed its check did not. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/body_shape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const extras_json[] = {
	"{\"top_p\":0.5}",
	"{\"max_tokens\":3,\"stream\":false}",
	"{\"messages\":[],\"prompt\":\"p\"}",
	"{\"model\":\"x\",\"min_tokens\":1}",
	"{\"seed\":2147483001}",
	"{\"s\":\"\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\"}",
	"{\"s\":\"\\u0006\\u0005\\u0004\\u0003\\u0002\\u0001\"}",
	"[1]",
};
#define NEXTRAS (sizeof extras_json / sizeof extras_json[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Kept for the process: the shape compares extra_body by pointer. */
	static cJSON *extras[NEXTRAS];
	static struct body_shape shape;
	if (!extras[0])
		for (size_t i = 0; i < NEXTRAS; i++)
			if (!(extras[i] = cJSON_Parse(extras_json[i])))
				abort();
	if (size < 6)
		return 0;
	struct oai_request_opts o = {
		.api = data[0] & 1 ? OAI_COMPLETIONS : OAI_CHAT,
		.ignore_eos = data[0] & 4,
		.have_temperature = data[0] & 8,
		.temperature = 0.25 * (data[0] >> 6),
	};
	unsigned x = data[0] >> 4;
	o.extra_body = x && x <= NEXTRAS ? extras[x - 1] : NULL;
	o.max_tokens = (int)((uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
			     (uint32_t)data[4] << 24);
	size_t rest = size - 6, mlen = data[5] < rest ? data[5] : rest;
	/* Both strings NUL-terminated after their bytes, as callers give them. */
	char *model = malloc(mlen + 1), *prompt = malloc(rest - mlen + 1);
	if (!model || !prompt)
		abort();
	memcpy(model, data + 6, mlen);
	model[mlen] = '\0';
	memcpy(prompt, data + 6 + mlen, rest - mlen);
	prompt[rest - mlen] = '\0';
	if (data[0] & 2)
		o.model = model;

	size_t want_len = 0, got_len = 0;
	char *want = oai_body_build(&o, prompt, &want_len);
	char *got = body_shape_build(&shape, &o, prompt, rest - mlen, &got_len);
	if (!want != !got || (want && (want_len != got_len || memcmp(want, got, want_len + 1) != 0))) {
		fprintf(stderr, "want %s\ngot  %s\n", want ? want : "NULL", got ? got : "NULL");
		abort();
	}
	/* Without a placeholder in extra_body the shape must have passed
	 * its check: a wrong escape caught there would else go unseen, its
	 * bodies all coming from oai_body_build(). */
	if (o.max_tokens > 0 && x <= 4 && !shape.usable)
		abort();
	free(want);
	free(got);
	free(model);
	free(prompt);
	return 0;
}
