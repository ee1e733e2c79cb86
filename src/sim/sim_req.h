#ifndef INFERTOP_SIM_REQ_H
#define INFERTOP_SIM_REQ_H

/* Request bodies of the simulated server: JSON in, validated fields out.
 * Pure (cJSON only, no server state), so it can be fuzzed and unit-tested
 * on its own. The tokenizer is described in infertop/sim.h. */

#include <stddef.h>
#include <stdint.h>

#define SIM_MODEL_MAX 256	/* longest model name the sim accepts or serves */

enum sim_api {
	SIM_API_CHAT,		/* /v1/chat/completions: "messages" */
	SIM_API_COMPLETIONS,	/* /v1/completions: "prompt" */
	SIM_API_TOKENIZE,	/* /tokenize: either */
};

struct sim_req {
	enum sim_api api;	/* chat or completions; tokenize resolves to one */
	/* "model": absent = model_len -1; longer than SIM_MODEL_MAX = that + 1
	 * (never equal to a served name), model[] holding a truncated copy. */
	int model_len;
	char model[SIM_MODEL_MAX + 1];
	long prompt_tokens;
	long max_tokens;	/* max_completion_tokens, else max_tokens; -1 = absent */
	long min_tokens;	/* 0 when absent */
	int stream;
	int include_usage;	/* stream_options.include_usage */
	int ignore_eos;
};

/* Calls fn for each token of the text (see the rule in sim.h). Returns the
 * count. fn may be NULL. */
typedef void (*sim_token_fn)(void *ud, const char *tok, size_t len);
long sim_tokenize_text(const char *s, size_t len, sim_token_fn fn, void *ud);

/* A stable token id for a token's text, in [0, SIM_VOCAB). */
#define SIM_VOCAB 32000u
uint32_t sim_token_id(const char *tok, size_t len);

/* Parses and validates a body (need not be NUL-terminated). On success
 * returns 0 and fills *out. On a malformed or invalid body returns -1 with
 * a one-line OpenAI-style message in err. For SIM_API_TOKENIZE, "messages"
 * selects chat, else "prompt"; sampling fields are parsed all the same.
 * When ids is not NULL, the prompt's token ids are also written there
 * (*nids = min(count, idcap)). */
int sim_req_parse(const char *body, size_t len, enum sim_api api, struct sim_req *out,
		  uint32_t *ids, size_t idcap, size_t *nids, char *err, size_t errcap);

/* The prompt's content for the prefix cache: a hash per whole block of
 * block_tokens tokens, chained (a block's hash covers every token before
 * it too, as vLLM's block hashes do), so two prompts share block k's hash
 * exactly when they share their first (k + 1) x block_tokens tokens. The
 * tokens hashed are the ids of sim_token_id() (or the given ids), so text
 * and its /tokenize ids hash alike. A chat prompt is rendered as each
 * message's role followed by its content: the role is part of the hash
 * (it changes the next token's) but, as in usage.prompt_tokens, counts no
 * token. */
struct sim_blocks {
	long block_tokens;	/* in: tokens per block, >= 1 */
	uint64_t *hash;		/* out: malloc'd (NULL when n is 0); the caller frees */
	long n;			/* out: tokens / block_tokens */
	/* where hashing stopped, for sim_blocks_append() */
	long tokens;
	uint64_t state, salt;
	long cap;
};

/* sim_req_parse() that also hashes the prompt's blocks into *blk. On
 * error (or out of memory: -1 with a message) blk->hash is NULL. */
int sim_req_parse_blocks(const char *body, size_t len, enum sim_api api, struct sim_req *out,
			 struct sim_blocks *blk, char *err, size_t errcap);

/* Goes on hashing as if text followed the prompt, as the start of a
 * message of this role when role is not NULL: a chat answer continues its
 * prompt as the assistant message the next turn will carry. 0, or -1 out
 * of memory (the blocks so far stay). */
int sim_blocks_append(struct sim_blocks *blk, const char *role, const char *text, size_t len);

#endif
