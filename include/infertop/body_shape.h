#ifndef INFERTOP_BODY_SHAPE_H
#define INFERTOP_BODY_SHAPE_H

/* Request bodies without cJSON on every request. A body is the same bytes
 * around its prompt, model and max_tokens for as long as the other request
 * options stay the same, so those bytes are printed once by
 * oai_body_build() with recognisable placeholders, cut at the
 * placeholders, and each body is then the pieces with the prompt and model
 * escaped as cJSON 1.7.15 escapes a string and max_tokens printed as it
 * prints an int: one pass to count, one malloc, one pass to copy.
 *
 * Every body is byte-equal to oai_body_build()'s. A shape is checked when
 * it is made: two sample bodies (quotes, backslashes, control bytes, UTF-8
 * in the prompt and the model, other max_tokens) must equal
 * oai_body_build()'s byte for byte, or the shape is kept as unusable and
 * every body goes through oai_body_build() (an extra_body that happens to
 * hold a placeholder, or one that is not an object).
 *
 * The model is a slot rather than part of the shape: the engine picks a
 * model per request from a --models mix, and a shape made per model would
 * be made again on most requests of a mix. */

#include <stdbool.h>
#include <stddef.h>

#include "infertop/openai.h"

/* A prompt, a model and max_tokens twice (also min_tokens with ignore_eos). */
#define BODY_SHAPE_SLOTS 4

enum body_slot { BODY_SLOT_PROMPT, BODY_SLOT_MODEL, BODY_SLOT_NUMBER };

/* Owned by the caller; zero-initialised is empty. */
struct body_shape {
	/* What it was made for: every option but the prompt, the model's
	 * text and max_tokens. extra_body is compared by pointer: the engine
	 * parses it once and never changes it. */
	bool made;
	bool usable; /* passed its check */
	enum oai_api api;
	bool has_model;
	bool ignore_eos;
	bool have_temperature;
	double temperature;
	const cJSON *extra_body;

	/* The placeholder body with the placeholders cut out (fixed bytes,
	 * NUL-terminated); slot i goes in at offset at[i]. */
	char *text;
	size_t fixed;
	int nslots;
	size_t at[BODY_SHAPE_SLOTS];
	enum body_slot what[BODY_SHAPE_SLOTS];
};

/* malloc'd, NUL-terminated, byte-equal to oai_body_build(o, prompt,
 * len_out) for every prompt, model and max_tokens. prompt_len is
 * strlen(prompt), which the caller knows; prompt[0..prompt_len) must be
 * readable, and a NUL inside ends the prompt, as it would for
 * oai_body_build(). The shape is made on first use and made again when
 * the options it was made for change; max_tokens <= 0 and an unusable
 * shape go through oai_body_build(). NULL on out of memory or when
 * extra_body is not an object, as oai_body_build(). */
char *body_shape_build(struct body_shape *s, const struct oai_request_opts *o, const char *prompt,
		       size_t prompt_len, size_t *len_out);

/* Whether s was made for o's options (any model text, any max_tokens). */
bool body_shape_fits(const struct body_shape *s, const struct oai_request_opts *o);

/* Back to empty. */
void body_shape_free(struct body_shape *s);

#endif
