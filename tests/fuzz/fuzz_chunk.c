/* Differential: the non-allocating chunk scanner against the cJSON
 * reference. Whenever the fast path claims a chunk, and always for the
 * combined oai_chunk_parse(), every field must equal what cJSON gives.
 * The memo too: the input is also read as two chunks of one stream (split
 * at the first 0xff byte), the second through what the first taught, and
 * as the first chunk with its output string's text swapped for the
 * second part, which is what makes the memo's comparison succeed.
 * Every field is compared, the cached-token count and where the answer's
 * text is among them (cJSON gives no offsets: its path finds the bytes
 * again on its own). Aborts on any difference. */
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
		" completion=%" PRId64 " cached=%" PRId64 " text=%d@%" PRIu32 "+%" PRIu32
		" error=%d msg=\"%s\"\n",
		who, c->valid, c->choices, c->output, c->finish, c->usage, c->prompt_tokens,
		c->completion_tokens, c->cached_tokens, c->has_text, c->text_off, c->text_len, c->error,
		c->error_msg);
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
	    a->completion_tokens == b->completion_tokens && a->cached_tokens == b->cached_tokens &&
	    a->has_text == b->has_text && a->text_off == b->text_off && a->text_len == b->text_len &&
	    a->error == b->error &&
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
	if (!ref.valid && (ref.cached_tokens != -1 || ref.has_text))
		abort();
	/* The answer's bytes are a string's insides: quotes either side. */
	if (ref.has_text && (ref.text_off == 0 || (size_t)ref.text_off + ref.text_len >= size ||
			     data[ref.text_off - 1] != '"' || data[ref.text_off + ref.text_len] != '"'))
		abort();
	if (!ref.has_text && (ref.text_off || ref.text_len))
		abort();

	if (oai_chunk_parse_fast(json, size, &fast) == 0) {
		check_msg(&fast);
		same(&fast, 0, &ref, rr, "fast path", data, size);
	}

	int rc = oai_chunk_parse(json, size, &comb);
	check_msg(&comb);
	same(&comb, rc, &ref, rr, "oai_chunk_parse", data, size);

	/* The memo: A 0xff B. */
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t alen = cut ? (size_t)(cut - data) : size;
	const char *b = cut ? (const char *)cut + 1 : "";
	size_t blen = cut ? size - alen - 1 : 0;
	struct oai_memo m;
	memset(&m, 0, sizeof m);
	struct oai_chunk a_ref, a_memo, b_ref, b_memo;
	int ra = oai_chunk_parse_cjson(json, alen, &a_ref);
	int ram = oai_chunk_parse_memo(&m, json, alen, &a_memo);
	same(&a_memo, ram, &a_ref, ra, "memo (first chunk)", data, alen);
	struct oai_memo learned = m;
	int rb = oai_chunk_parse_cjson(b, blen, &b_ref);
	int rm = oai_chunk_parse_memo(&m, b, blen, &b_memo);
	check_msg(&b_memo);
	same(&b_memo, rm, &b_ref, rb, "memo (second chunk)", (const uint8_t *)b, blen);

	/* A's bytes around its output string with B inside. */
	if (learned.pre) {
		size_t suf = learned.suf, pre = learned.pre;
		if (pre + suf > alen)
			abort();
		size_t n = pre + blen + suf;
		char *c = malloc(n);
		if (!c)
			return 0;
		memcpy(c, json, pre);
		memcpy(c + pre, b, blen);
		memcpy(c + pre + blen, json + alen - suf, suf);
		struct oai_chunk c_ref, c_memo;
		int rcr = oai_chunk_parse_cjson(c, n, &c_ref);
		m = learned;
		int rcm = oai_chunk_parse_memo(&m, c, n, &c_memo);
		check_msg(&c_memo);
		same(&c_memo, rcm, &c_ref, rcr, "memo (text swapped)", (const uint8_t *)c, n);
		free(c);
	}
	return 0;
}
