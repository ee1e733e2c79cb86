/* The sim's request-body parser under arbitrary bytes: it must never crash,
 * read out of bounds or leak, must answer 0 or -1, and what it accepts
 * must be self-consistent. The first byte picks the endpoint; the rest is
 * the body, handed over without a terminating NUL. Aborts on a violation. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	enum sim_api api = (enum sim_api)(data[0] % 3);
	const char *body = (const char *)data + 1;
	size_t len = size - 1;

	struct sim_req r;
	char err[128];
	uint32_t ids[64];
	size_t nids = 0;
	int rc = sim_req_parse(body, len, api, &r, ids, 64, &nids, err, sizeof err);
	if (rc != 0 && rc != -1)
		abort();
	if (rc == -1) {
		/* refused: always with a message */
		if (err[0] == '\0' || strlen(err) >= sizeof err)
			abort();
		return 0;
	}
	if (r.api != SIM_API_CHAT && r.api != SIM_API_COMPLETIONS)
		abort();
	if (api != SIM_API_TOKENIZE && r.api != api)
		abort();
	if (r.prompt_tokens < 0 || (size_t)r.prompt_tokens > len)
		abort();
	if (nids != ((size_t)r.prompt_tokens < 64 ? (size_t)r.prompt_tokens : 64))
		abort();
	if (r.max_tokens != -1 && r.max_tokens < 1)
		abort();
	if (r.min_tokens < 0 || (r.max_tokens >= 1 && r.min_tokens > r.max_tokens))
		abort();
	if (r.model_len < -1 || r.model_len > SIM_MODEL_MAX + 1)
		abort();
	if (r.model_len >= 0 && r.model_len <= SIM_MODEL_MAX && strlen(r.model) > (size_t)r.model_len)
		abort();
	/* without ids the same answer */
	struct sim_req r2;
	if (sim_req_parse(body, len, api, &r2, NULL, 0, NULL, err, sizeof err) != 0 ||
	    r2.prompt_tokens != r.prompt_tokens || r2.max_tokens != r.max_tokens)
		abort();
	/* the tokenizer's count never exceeds the bytes */
	if (sim_tokenize_text(body, len, NULL, NULL) > (long)len)
		abort();
	return 0;
}
