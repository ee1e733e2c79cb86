#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/json_str.h"
#include "sim_internal.h"

/* Readable filler: a client showing the text shows words, and every word
 * is plain ASCII that needs no JSON escaping. */
static const char *const words[] = {
	"the",	   "quick",  "brown",   "fox",	  "jumps",  "over",    "lazy",	  "dog",
	"model",   "token",  "stream",  "server", "batch",  "cache",   "latency", "answer",
	"while",   "every",  "small",   "light",  "river",  "stone",   "garden",  "window",
	"morning", "silver", "quiet",   "paper",  "engine", "signal",  "number",  "simple",
	"and",	   "of",     "to",	"in",	  "is",	    "that",    "for",	  "it",
	"with",	   "as",     "on",	"was",	  "at",	    "by",      "this",	  "from",
	"reads",   "writes", "measures", "waits", "sends",  "returns", "counts",  "moves",
	"bright",  "steady", "exact",   "linear", "random", "careful", "early",	  "late",
};
#define NWORDS (sizeof words / sizeof words[0])

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static const char *word_at(const struct sim_rq *rq, int32_t k)
{
	return words[mix64(rq->id * 0x9e3779b97f4a7c15ULL + (uint64_t)k) % NWORDS];
}

const char *sim_render_word(const struct sim_rq *rq, int32_t k)
{
	return word_at(rq, k);
}

/* "chatcmpl-" + 32 hex digits, like vLLM's uuid4 hex ids. */
static void fmt_id(const struct sim_rq *rq, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s-%016" PRIx64 "%016" PRIx64,
		 rq->api == SIM_API_CHAT ? "chatcmpl" : "cmpl", mix64(rq->id),
		 mix64(rq->id ^ 0x5bd1e9955bd1e995ULL));
}

static size_t clamp(int n)
{
	return n < 0 ? 0 : (size_t)n;
}

size_t sim_render_role(const struct sim_server *s, const struct sim_rq *rq, char *buf, size_t cap)
{
	char id[48];
	fmt_id(rq, id, sizeof id);
	return clamp(snprintf(buf, cap,
			      "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%" PRId64
			      ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
			      "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
			      id, rq->created, s->model_json));
}

static const char *finish_json(const struct sim_rq *rq)
{
	return rq->finish_stop ? "\"stop\"" : "\"length\"";
}

size_t sim_render_token(const struct sim_server *s, const struct sim_rq *rq, int32_t k, char *buf,
			size_t cap)
{
	char id[48];
	fmt_id(rq, id, sizeof id);
	const char *w = word_at(rq, k);
	const char *fin = k + 1 == rq->target ? finish_json(rq) : "null";
	if (rq->fault == SIM_FAULT_MALFORMED && k == rq->fault_at) {
		/* Cut off inside the object: no JSON parser accepts this. */
		return clamp(snprintf(buf, cap,
				      "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%" PRId64
				      ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"%s\":\"%s %s\"\n\n",
				      id, rq->api == SIM_API_CHAT ? "chat.completion.chunk" : "text_completion",
				      rq->created, s->model_json, rq->api == SIM_API_CHAT ? "delta" : "text",
				      "", w));
	}
	if (rq->api == SIM_API_CHAT)
		return clamp(snprintf(buf, cap,
				      "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%" PRId64
				      ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" %s\"},"
				      "\"logprobs\":null,\"finish_reason\":%s}]}\n\n",
				      id, rq->created, s->model_json, w, fin));
	return clamp(snprintf(buf, cap,
			      "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%" PRId64
			      ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\" %s\",\"logprobs\":null,"
			      "\"finish_reason\":%s}]}\n\n",
			      id, rq->created, s->model_json, w, fin));
}

/* The usage object (vLLM's members, with prompt_tokens_details as vLLM
 * sends it when --enable-prompt-tokens-details is on), and for the
 * llamacpp profile llama-server's timings object after it, as in the
 * capture in tests/fixtures/llamacpp: `"usage":{...},"timings":{...}`. */
static size_t render_usage(const struct sim_server *s, const struct sim_rq *rq, char *buf, size_t cap)
{
	int n = snprintf(buf, cap,
			 "\"usage\":{\"prompt_tokens\":%" PRId32 ",\"total_tokens\":%" PRId32
			 ",\"completion_tokens\":%" PRId32 ",\"prompt_tokens_details\":{\"cached_tokens\":%" PRId32
			 "}}",
			 rq->prompt_tokens, rq->prompt_tokens + rq->target, rq->target, rq->cached_tokens);
	if (s->opt.profile != SIM_PROF_LLAMACPP || n < 0 || (size_t)n >= cap)
		return clamp(n);
	double prompt_ms = (double)(rq->t_first - rq->t_admit) / 1e6;
	double predicted_ms = (double)(rq->t_last - rq->t_first) / 1e6;
	int m = snprintf(buf + n, cap - (size_t)n,
			 ",\"timings\":{\"cache_n\":%" PRId32 ",\"prompt_n\":%" PRId32
			 ",\"prompt_ms\":%.3f,\"predicted_n\":%" PRId32 ",\"predicted_ms\":%.3f}",
			 rq->cached_tokens, rq->prompt_tokens - rq->cached_tokens, prompt_ms, rq->target,
			 predicted_ms);
	return clamp(n) + clamp(m);
}

size_t sim_render_tail(const struct sim_server *s, const struct sim_rq *rq, char *buf, size_t cap)
{
	static const char done[] = "data: [DONE]\n\n";
	if (!rq->include_usage)
		return clamp(snprintf(buf, cap, "%s", done));
	char id[48], usage[512];
	fmt_id(rq, id, sizeof id);
	render_usage(s, rq, usage, sizeof usage);
	return clamp(snprintf(buf, cap,
			      "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%" PRId64
			      ",\"model\":\"%s\",\"choices\":[],%s}\n\n%s",
			      id, rq->api == SIM_API_CHAT ? "chat.completion.chunk" : "text_completion",
			      rq->created, s->model_json, usage, done));
}

char *sim_render_full(const struct sim_server *s, const struct sim_rq *rq, size_t *len)
{
	/* Longest word is 8 bytes, plus the space. */
	size_t cap = (size_t)rq->target * 9 + 1536 + strlen(s->model_json);
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	char id[48];
	fmt_id(rq, id, sizeof id);
	int n;
	if (rq->api == SIM_API_CHAT)
		n = snprintf(buf, cap,
			     "{\"id\":\"%s\",\"object\":\"chat.completion\",\"created\":%" PRId64
			     ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
			     "\"content\":\"",
			     id, rq->created, s->model_json);
	else
		n = snprintf(buf, cap,
			     "{\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%" PRId64
			     ",\"model\":\"%s\",\"choices\":[{\"index\":0,\"text\":\"",
			     id, rq->created, s->model_json);
	size_t o = clamp(n);
	for (int32_t k = 0; k < rq->target; k++) {
		const char *w = word_at(rq, k);
		size_t wl = strlen(w);
		buf[o++] = ' ';
		memcpy(buf + o, w, wl);
		o += wl;
	}
	char usage[512];
	render_usage(s, rq, usage, sizeof usage);
	n = snprintf(buf + o, cap - o, "\"%s,\"logprobs\":null,\"finish_reason\":%s}],%s}",
		     rq->api == SIM_API_CHAT ? "}" : "", finish_json(rq), usage);
	o += clamp(n);
	if (rq->fault == SIM_FAULT_MALFORMED)
		o /= 2;	/* a truncated document */
	buf[o] = '\0';
	*len = o;
	return buf;
}

char *sim_render_error(const char *message, const char *type, int code, size_t *len)
{
	char esc[1024];
	json_str_escape(esc, sizeof esc, message, JSON_STR_STRICT);
	size_t cap = strlen(esc) + strlen(type) + 96;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	int n = snprintf(buf, cap, "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"code\":%d}}", esc,
			 type, code);
	*len = clamp(n);
	return buf;
}

char *sim_render_error_vllm(const char *message, const char *type, int code, size_t *len)
{
	char esc[1024];
	json_str_escape(esc, sizeof esc, message, JSON_STR_STRICT);
	size_t cap = strlen(esc) + strlen(type) + 128;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	int n = snprintf(buf, cap,
			 "{\"object\":\"error\",\"message\":\"%s\",\"type\":\"%s\",\"param\":null,"
			 "\"code\":%d}",
			 esc, type, code);
	*len = clamp(n);
	return buf;
}
