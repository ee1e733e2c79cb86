/* Parse throughput on one core: SSE framing alone, framing + the chunk fast
 * path, framing + the cJSON path, at two read sizes. The stream is built in
 * memory: vLLM-shaped requests (role chunk, 128 content chunks of ~250
 * bytes, finish chunk, usage chunk with cached tokens, [DONE]) with the
 * real llama.cpp capture mixed in. The check column sums what the chunks
 * said (output, usage, answer bytes, cached tokens): equal on every path.
 * Usage: bench_parse [SECONDS_PER_RUN] (default 1). The fixture is read
 * from $INFERTOP_FIXTURES or tests/fixtures. */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/openai.h"
#include "infertop/sse.h"

struct sbuf {
	char *p;
	size_t n, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 1 << 20;
		while (cap < b->n + n)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			fprintf(stderr, "bench_parse: out of memory\n");
			exit(1);
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		exit(1);
	sb_add(b, tmp, (size_t)n);
}

static char *load(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *b = NULL;
	long n = -1;
	if (fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n)) != NULL &&
	    fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = b ? (size_t)n : 0;
	return b;
}

static const char *const words[] = {
	" the", " model", " answered", " quickly", ",", " and", " then", " it", " stopped",
	".", " Hello", " world", "\\n", " \\\"quoted\\\"", " caf\\u00e9", " tokens",
};

static void vllm_request(struct sbuf *b, unsigned r)
{
	static const char head[] = "data: {\"id\":\"chatcmpl-5d3c1f0e8a7b4c2d9e6f1a2b%08x\","
				   "\"object\":\"chat.completion.chunk\",\"created\":1732000000,"
				   "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,";
	sb_printf(b, head, r);
	sb_printf(b, "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
		     "\"finish_reason\":null}]}\n\n");
	for (unsigned i = 0; i < 128; i++) {
		sb_printf(b, head, r);
		sb_printf(b, "\"delta\":{\"content\":\"%s\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
			  words[(r + i * 7) % (sizeof words / sizeof words[0])]);
	}
	sb_printf(b, head, r);
	sb_printf(b, "\"delta\":{},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n");
	sb_printf(b, "data: {\"id\":\"chatcmpl-5d3c1f0e8a7b4c2d9e6f1a2b%08x\",\"object\":"
		     "\"chat.completion.chunk\",\"created\":1732000000,\"model\":"
		     "\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[],\"usage\":{\"prompt_tokens\":"
		     "512,\"total_tokens\":640,\"completion_tokens\":128,\"prompt_tokens_details\":"
		     "{\"cached_tokens\":%u}}}\n\n",
		  r, r % 2 * 256);
	sb_printf(b, "data: [DONE]\n\n");
}

enum mode { MODE_SSE, MODE_MEMO, MODE_FAST, MODE_CJSON, MODE_N };
static const char *const mode_names[MODE_N] = { "sse only", "sse+memo", "sse+fast path", "sse+cJSON path" };

/* One stream at a time, as a request reads it: the memo is the stream's. */
struct tally {
	enum mode mode;
	uint64_t events, output, usage, invalid;
	uint64_t text, cached; /* answer bytes and cached tokens seen: the paths agree */
	struct oai_memo memo;
};

static int on_event(void *ud, const struct sse_event *ev)
{
	struct tally *t = ud;
	t->events++;
	if (ev->kind != SSE_DATA || t->mode == MODE_SSE)
		return 0;
	struct oai_chunk c;
	int rc = t->mode == MODE_MEMO   ? oai_chunk_parse_memo(&t->memo, ev->data, ev->len, &c)
		 : t->mode == MODE_FAST ? oai_chunk_parse(ev->data, ev->len, &c)
					: oai_chunk_parse_cjson(ev->data, ev->len, &c);
	if (rc != 0)
		t->invalid++;
	t->output += c.output;
	t->usage += c.usage;
	t->text += c.text_len;
	if (c.cached_tokens > 0)
		t->cached += (uint64_t)c.cached_tokens;
	return 0;
}

static double run(const struct sbuf *s, size_t rd, enum mode mode, double seconds,
		  struct tally *out)
{
	struct sse_parser p;
	if (sse_init(&p, 0) != 0)
		exit(1);
	double best = 0;
	int64_t t_end = clock_now_ns() + (int64_t)(seconds * 1e9);
	do {
		static struct tally t;
		memset(&t, 0, sizeof t);
		t.mode = mode;
		sse_reset(&p);
		int64_t t0 = clock_now_ns();
		for (size_t pos = 0; pos < s->n; pos += rd) {
			size_t n = s->n - pos < rd ? s->n - pos : rd;
			if (sse_feed(&p, s->p + pos, n, on_event, &t) != 0)
				exit(1);
		}
		double dt = (double)(clock_now_ns() - t0) / 1e9;
		double rate = (double)t.events / dt;
		if (rate > best)
			best = rate;
		*out = t;
	} while (clock_now_ns() < t_end);
	sse_free(&p);
	return best;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	if (!(seconds > 0))
		seconds = 1.0;

	const char *dir = getenv("INFERTOP_FIXTURES");
	char path[4096];
	snprintf(path, sizeof path, "%s/llamacpp/chat_stream.txt", dir ? dir : "tests/fixtures");
	size_t flen;
	char *fixture = load(path, &flen);

	struct sbuf s = { 0 };
	unsigned requests = 2000;
	for (unsigned r = 0; r < requests; r++) {
		vllm_request(&s, r);
		if (fixture && r % 8 == 0)
			sb_add(&s, fixture, flen);
	}

	printf("bench_parse: %.1f MB stream, %u vLLM-shaped requests%s\n", (double)s.n / 1e6, requests,
	       fixture ? " + llama.cpp capture every 8th" : " (llama.cpp capture not found)");
	printf("%-16s %6s %14s %10s %s\n", "mode", "read", "chunks/s", "MB/s", "check");
	static const size_t reads[] = { 16384, 1400 };
	for (size_t m = 0; m < MODE_N; m++) {
		for (size_t r = 0; r < 2; r++) {
			struct tally t;
			double rate = run(&s, reads[r], (enum mode)m, seconds, &t);
			double mbps = rate * ((double)s.n / (double)t.events) / 1e6;
			printf("%-16s %6zu %14.0f %10.0f events=%llu output=%llu usage=%llu invalid=%llu",
			       mode_names[m], reads[r], rate, mbps, (unsigned long long)t.events,
			       (unsigned long long)t.output, (unsigned long long)t.usage,
			       (unsigned long long)t.invalid);
			if (m != MODE_SSE)
				printf(" text=%llu cached=%llu", (unsigned long long)t.text,
				       (unsigned long long)t.cached);
			if (m == MODE_MEMO)
				printf(" memo_hits=%u", t.memo.hits);
			printf("\n");
		}
	}
	free(fixture);
	free(s.p);
	return 0;
}
