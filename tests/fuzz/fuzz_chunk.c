/* Differential: the non-allocating chunk scanner against the cJSON
 * reference. Whenever the fast path claims a chunk, and always for the
 * combined oai_chunk_parse(), every field must equal what cJSON gives.
 * Aborts on any difference. */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/openai.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void dump(const char *who, const struct oai_chunk *c)
{
	fprintf(stderr,
		"%s: valid=%d choices=%d output=%d finish=%d usage=%d prompt=%" PRId64
		" completion=%" PRId64 " error=%d msg=\"%s\"\n",
		who, c->valid, c->choices, c->output, c->finish, c->usage, c->prompt_tokens,
		c->completion_tokens, c->error, c->error_msg);
}

static void check_msg(const struct oai_chunk *c)
{
	if (!memchr(c->error_msg, '\0', sizeof c->error_msg))
		abort();
	for (const char *p = c->error_msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
}

static void same(const struct oai_chunk *a, int ra, const struct oai_chunk *b, int rb,
		 const char *what, const uint8_t *data, size_t size)
{
	if (ra == rb && a->valid == b->valid && a->choices == b->choices && a->output == b->output &&
	    a->finish == b->finish && a->usage == b->usage && a->prompt_tokens == b->prompt_tokens &&
	    a->completion_tokens == b->completion_tokens && a->error == b->error &&
	    strcmp(a->error_msg, b->error_msg) == 0)
		return;
	fprintf(stderr, "fuzz_chunk: %s disagrees with cJSON on %zu bytes: %.*s\n", what, size,
		(int)(size < 400 ? size : 400), (const char *)data);
	dump(what, a);
	dump("cjson", b);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *json = (const char *)data;
	struct oai_chunk ref, fast, comb;

	int rr = oai_chunk_parse_cjson(json, size, &ref);
	if ((rr == 0) != ref.valid)
		abort();
	check_msg(&ref);
	if (!ref.valid && (ref.choices || ref.output || ref.finish || ref.usage || ref.error ||
			   ref.prompt_tokens != -1 || ref.completion_tokens != -1 || ref.error_msg[0]))
		abort();
	if (ref.usage != (ref.completion_tokens >= 0))
		abort();

	if (oai_chunk_parse_fast(json, size, &fast) == 0) {
		check_msg(&fast);
		same(&fast, 0, &ref, rr, "fast path", data, size);
	}

	int rc = oai_chunk_parse(json, size, &comb);
	check_msg(&comb);
	same(&comb, rc, &ref, rr, "oai_chunk_parse", data, size);
	return 0;
}
