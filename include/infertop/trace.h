#ifndef INFERTOP_TRACE_H
#define INFERTOP_TRACE_H

/* Production traces (--trace): a streaming reader of Mooncake JSONL, the
 * Azure LLM inference CSV and BurstGPT CSV. Pure, like sse.c: bytes in,
 * records out, no I/O and no clock of its own.
 *
 * Formats, one record a line:
 *   mooncake  JSON object: "timestamp" (ms), "input_length",
 *             "output_length", optional "hash_ids" (array of whole numbers,
 *             at most TRACE_MAX_HASH_IDS), "session_id" (string or number),
 *             "delay" (ms after the previous line, used when the line has
 *             no timestamp).
 *   azure     CSV with a header naming TIMESTAMP, ContextTokens and
 *             GeneratedTokens (any order, other columns ignored);
 *             TIMESTAMP is "YYYY-MM-DD HH:MM:SS[.fraction]".
 *   burstgpt  CSV with a header naming "Timestamp" (seconds),
 *             "Request tokens" and "Response tokens" (Model, Total tokens,
 *             Log Type ignored).
 * Times are relative to the earliest record: the first one out is at 0.
 * Blank lines are ignored.
 *
 * A line that does not parse is an error "NAME:LINE: FIELD: what", unless
 * skip_bad: then it is counted (and the first such message kept) and
 * reading goes on.
 *
 * Order. Records come out sorted by time through a reorder window of
 * TRACE_REORDER records (a heap): a record later in the file but earlier
 * in time than records before it is put in its place and counted as
 * reordered, as long as it is out of place by fewer than TRACE_REORDER
 * records. One further out (its time is before a record already handed
 * out) is an error naming its line (skipped and counted with skip_bad).
 *
 * Memory: the pending part of one line (at most TRACE_MAX_LINE bytes) and
 * the window, TRACE_REORDER records with their hash ids; never the file. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum trace_format { TRACE_MOONCAKE, TRACE_AZURE, TRACE_BURSTGPT, TRACE_FORMAT_N };

#define TRACE_MAX_LINE (1u << 20)
#define TRACE_MAX_HASH_IDS 4096
#define TRACE_REORDER 1024
#define TRACE_SESSION_MAX 64
#define TRACE_MAX_TOKENS 10000000L	/* the length options' ceiling */

struct trace_rec {
	int64_t t_ns;           /* from the earliest record */
	long input_tokens;
	long output_tokens;
	uint64_t line;          /* in the file, from 1 */
	uint32_t nhash;
	uint64_t *hash;         /* nhash block ids; owned by the reader */
	char session[TRACE_SESSION_MAX];  /* "" when none */
};

struct trace_counts {
	uint64_t lines;         /* read so far */
	uint64_t records;       /* handed out */
	uint64_t skipped;       /* bad lines skipped (skip_bad) */
	uint64_t reordered;     /* records earlier than one before them in the file */
	char first_bad[256];    /* the first skipped line's message */
};

struct trace_reader;

/* "mooncake", "azure", "burstgpt"; NULL past the last. */
const char *trace_format_name(int i);
/* "FORMAT:FILE" into *f and *path (pointing into spec). 0, or -1. */
int trace_spec_parse(const char *spec, enum trace_format *f, const char **path);

/* name is what messages call the input (the file's name). NULL on OOM. */
struct trace_reader *trace_reader_new(enum trace_format f, const char *name, bool skip_bad);
void trace_reader_free(struct trace_reader *r);

/* Gives the reader more input (len 0: the end of it). Call it only after
 * trace_reader_next() returned TRACE_NEED_INPUT. 0, or -1 on OOM. */
int trace_reader_feed(struct trace_reader *r, const char *buf, size_t len);

enum trace_next { TRACE_ERROR = -1, TRACE_NEED_INPUT = 0, TRACE_RECORD = 1, TRACE_END = 2 };
/* The next record in time order into *rec (valid until the next call);
 * TRACE_ERROR with "NAME:LINE: ..." in err (the reader is then done). */
enum trace_next trace_reader_next(struct trace_reader *r, const struct trace_rec **rec, char *err,
				  size_t errcap);
const struct trace_counts *trace_reader_counts(const struct trace_reader *r);

/* Parses one Azure TIMESTAMP into ns since 1970 (UTC, no zone). 0, or -1.
 * Exposed for the tests. */
int trace_parse_datetime(const char *s, size_t len, int64_t *ns);

#endif
