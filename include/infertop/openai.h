#ifndef INFERTOP_OPENAI_H
#define INFERTOP_OPENAI_H

/* OpenAI-compatible wire JSON: request bodies for /v1/chat/completions and
 * /v1/completions, streamed chunk JSON -> the facts the metrics need, and
 * small helpers for /v1/models and error bodies. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum oai_api { OAI_CHAT, OAI_COMPLETIONS, OAI_API_N };

/* "chat" (OAI_CHAT, the default), "completions"; NULL outside the enum. */
const char *oai_api_name(int api);
/* 0, or -1 for a name that is not one of oai_api_name()'s. */
int oai_api_parse(const char *name, enum oai_api *out);

#define OAI_ERROR_MSG_MAX 192

/* What one streamed chunk says. Fields follow the first occurrence of a
 * duplicated key (as cJSON lookups do); a string counts as empty when its
 * decoded text is empty or starts with a NUL (\u0000). */
struct oai_chunk {
	bool valid;   /* parsed as a JSON object */
	bool choices; /* "choices" is a non-empty array */
	/* Some choice carries output: a non-empty string delta.content,
	 * delta.reasoning, delta.reasoning_content (chat) or text (completions);
	 * null or "" is not output. */
	bool output;
	bool finish; /* some choice has a non-null finish_reason */
	/* "usage" is an object whose completion_tokens is a number in
	 * [0, 2^53] (fractions truncated). */
	bool usage;
	int64_t prompt_tokens, completion_tokens; /* -1 when absent or not such a number */
	/* Prompt tokens served from the server's prefix cache: usage's
	 * prompt_tokens_details.cached_tokens (vLLM, SGLang, OpenAI), else
	 * llama.cpp's top-level timings.cache_n; -1 when absent or not a
	 * number in [0, 2^53]. */
	int64_t cached_tokens;
	/* Where the answer's text is, for sessions that resend it: bytes
	 * [text_off, text_off + text_len) of the chunk are the JSON-escaped
	 * contents (quotes excluded) of its one delta.content (chat) or text
	 * (completions) string, as sent, so they go into a JSON string of a
	 * later request verbatim ("" gives has_text with text_len 0).
	 * has_text false: no such string (null, reasoning and
	 * reasoning_content are not the answer), or more than one (n > 1
	 * choices: which one goes on is not the parser's guess). Set on every
	 * path (fast, memo, cJSON; the last finds the bytes again by the
	 * string's place in the tree). */
	bool has_text;
	uint32_t text_off, text_len;
	/* Top-level "error" is an object (vLLM, SGLang: message from its
	 * "message" string) or a string (TGI: {"error":"...","error_type":"..."}). */
	bool error;
	/* NUL-terminated; truncated on a UTF-8 boundary; control characters
	 * shown as spaces; "" when none. */
	char error_msg[OAI_ERROR_MSG_MAX];
};

/* Parses one chunk (the data of one SSE event). The input must be one JSON
 * value, optionally surrounded by whitespace (space, tab, CR, LF); anything
 * else after it makes the chunk invalid. A single-pass scanner that does not
 * allocate handles the usual shapes and falls back to the cJSON path for
 * anything unusual, with identical results. Returns 0, or -1 when the input
 * is not a JSON object (out->valid false). Out of memory in the fallback
 * also reads as invalid. */
int oai_chunk_parse(const char *json, size_t len, struct oai_chunk *out);

/* The same with cJSON only: the reference the fast path is tested against. */
int oai_chunk_parse_cjson(const char *json, size_t len, struct oai_chunk *out);

/* The fast path alone, for tests and benchmarks: 0 when it handled the
 * chunk (a valid object), -1 when oai_chunk_parse() would fall back to
 * cJSON (*out is then meaningless). */
int oai_chunk_parse_fast(const char *json, size_t len, struct oai_chunk *out);

/* One stream's chunks differ in little but their output text: a server
 * repeats the id, model, index and nulls around it. A memo keeps the bytes
 * of the last chunk before and after its one output string (the parse of
 * those bytes being what it is whatever the string holds), so a chunk that
 * matches them is read by comparing two byte runs and scanning the one
 * string: the result is what oai_chunk_parse() gives, output being whether
 * that string is non-empty. Anything else is parsed whole and, when it has
 * exactly one output string, no error and fits, learned. Exact: nothing is
 * assumed of the bytes that were not compared. */
#define OAI_MEMO_BYTES 320
struct oai_memo {
	uint16_t pre;      /* bytes to the output string's opening quote, it included; 0: none learned */
	uint16_t suf;      /* bytes from its closing quote, it included, to the end */
	bool choices, finish, usage;
	bool text;         /* the output string is the answer (has_text), not reasoning */
	uint32_t hits;     /* chunks read from the memo (tests, benchmarks) */
	int64_t prompt_tokens, completion_tokens, cached_tokens;
	unsigned char bytes[OAI_MEMO_BYTES]; /* the pre bytes, then the suf bytes */
};

/* oai_chunk_parse() through m (zeroed before a stream's first chunk). */
int oai_chunk_parse_memo(struct oai_memo *m, const char *json, size_t len, struct oai_chunk *out);

struct oai_request_opts {
	enum oai_api api;
	const char *model; /* omitted when NULL */
	int max_tokens;    /* omitted when <= 0 */
	bool ignore_eos;   /* also sends "min_tokens": max_tokens */
	bool have_temperature;
	double temperature;
	/* Object whose members are added last, replacing members of the same
	 * name (shallow: a replaced object is replaced whole). May be NULL. */
	const cJSON *extra_body;
};

/* malloc'd, NUL-terminated request JSON for a streaming request:
 * {"model", "messages":[{"role":"user","content":prompt}] (chat) or
 * "prompt" (completions), "max_tokens", "stream":true,
 * "stream_options":{"include_usage":true}, "ignore_eos", "min_tokens",
 * "temperature", ...extra_body}. *len_out (may be NULL) gets its length.
 * NULL on out of memory or when extra_body is not an object. */
char *oai_body_build(const struct oai_request_opts *o, const char *prompt, size_t *len_out);

/* GET /v1/models body -> the id of the first data[] entry that has one.
 * 0, or -1 when there is none, or it does not fit in cap bytes with its NUL. */
int oai_models_first_id(const char *json, size_t len, char *out, size_t cap);

/* The best human-readable message in a non-2xx response body: error.message,
 * error (a string), message, detail (a string, or detail[0].msg), else the
 * body's first 160 printable bytes with whitespace runs squeezed. Always
 * NUL-terminates out (cap > 0); "" for an empty body. */
void oai_error_body_message(const char *body, size_t len, char *out, size_t cap);

/* Whether an HTTP 400 body says the prompt is past the model's context
 * length (vLLM "maximum context length", llama.cpp
 * "exceed_context_size_error", SGLang "longer than the model's context
 * length", TGI "must be <= N"): a session that meets it ends (ERR_CONTEXT). */
bool oai_error_is_context(const char *body, size_t len);

/* oai_body_build() for a chat request that brings its own messages:
 * messages_json (NUL-terminated, a JSON array the caller has validated)
 * goes in verbatim as "messages". An extra_body "messages" still wins, as
 * it does for oai_body_build(). NULL on out of memory, when extra_body is
 * not an object, or when o->api is not OAI_CHAT. */
char *oai_body_build_messages(const struct oai_request_opts *o, const char *messages_json,
			      size_t *len_out);

#endif
