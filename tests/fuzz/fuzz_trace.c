/* The trace reader (trace.h) under arbitrary bytes and arbitrary feed
 * boundaries. The first byte picks the format (bits 0-1), skip_bad (bit 2)
 * and the feed size (bits 3-7: 1 to 32 bytes, or the whole input when 0);
 * the rest is the file. However it is cut, the outcome (records, counts,
 * the error) must equal one whole feed's; records come out in time order
 * from 0, within the documented bounds; an error names the input. Aborts
 * on a violation. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	uint64_t n;
	uint64_t sum;           /* of times, lengths and ids: a fingerprint */
	int rc;
	char err[512];
	struct trace_counts counts;
};

static void run(enum trace_format f, bool skip, const uint8_t *d, size_t len, size_t step, struct outcome *o)
{
	memset(o, 0, sizeof *o);
	struct trace_reader *r = trace_reader_new(f, "fz", skip);
	if (!r)
		abort();
	size_t off = 0;
	int64_t last = -1;
	for (;;) {
		const struct trace_rec *rec;
		int rc = trace_reader_next(r, &rec, o->err, sizeof o->err);
		o->rc = rc;
		if (rc == TRACE_RECORD) {
			if (rec->t_ns < 0 || rec->t_ns < last || (o->n == 0 && rec->t_ns != 0))
				abort();
			if (rec->input_tokens < 0 || rec->input_tokens > TRACE_MAX_TOKENS || rec->output_tokens < 0 ||
			    rec->output_tokens > TRACE_MAX_TOKENS || rec->nhash > TRACE_MAX_HASH_IDS ||
			    (rec->nhash && !rec->hash) || strlen(rec->session) >= TRACE_SESSION_MAX)
				abort();
			last = rec->t_ns;
			o->sum += (uint64_t)rec->t_ns + (uint64_t)rec->input_tokens * 3 + (uint64_t)rec->output_tokens * 7 +
				  rec->line * 11;
			for (uint32_t i = 0; i < rec->nhash; i++)
				o->sum += rec->hash[i] * 13;
			o->n++;
			continue;
		}
		if (rc != TRACE_NEED_INPUT)
			break;
		size_t n = len - off < step ? len - off : step;
		if (trace_reader_feed(r, (const char *)d + off, n) != 0)
			abort();
		off += n;
	}
	o->counts = *trace_reader_counts(r);
	if (o->counts.records != o->n)
		abort();
	if (o->rc == TRACE_ERROR && strncmp(o->err, "fz:", 3) != 0)
		abort();
	if (o->rc == TRACE_ERROR && skip && !strstr(o->err, "header") && !strstr(o->err, "memory"))
		abort(); /* with skip_bad only a missing header stops the reading */
	trace_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum trace_format f = (enum trace_format)(data[0] & 3) % TRACE_FORMAT_N;
	bool skip = data[0] & 4;
	size_t step = data[0] >> 3;
	static struct outcome whole, cut;
	run(f, skip, data + 1, size - 1, size, &whole);
	run(f, skip, data + 1, size - 1, step ? step : size, &cut);
	if (whole.n != cut.n || whole.sum != cut.sum || whole.rc != cut.rc || strcmp(whole.err, cut.err) != 0 ||
	    whole.counts.skipped != cut.counts.skipped || whole.counts.reordered != cut.counts.reordered ||
	    whole.counts.lines != cut.counts.lines || strcmp(whole.counts.first_bad, cut.counts.first_bad) != 0)
		abort();
	return 0;
}
