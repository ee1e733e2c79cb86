#ifndef INFERTOP_DATASET_H
#define INFERTOP_DATASET_H

/* Prompt sources (--dataset): synthetic text of a target length, ShareGPT
 * JSON, JSON Lines, and sonnet-style plain text. A dataset is opened (and a
 * file parsed, every malformed record reported as FILE:LINE) before the
 * run, calibrated once against the server's POST /tokenize, then hands out
 * one ready request body per request.
 *
 * Lengths. --input-tokens is the whole prompt as the server counts it
 * (usage.prompt_tokens): the shared --prefix-tokens prefix included, and
 * the tokens the server adds itself (BOS, chat template) when calibration
 * could measure them. Calibration fits tokens = overhead + slope * units
 * (units: words of the synthetic text, characters of file text) from two
 * /tokenize calls; without /tokenize the slope is an estimate (one token
 * per synthetic word or period, DATASET_EST_CHARS_PER_TOKEN characters per
 * token of file text) and the overhead 0.
 *
 * Memory. Synthetic: the prefix, and (text too) room for the longest
 * prompt built so far, kept from one request to the next. Files are read
 * once, through a 64 KiB buffer, and only what a request needs is kept:
 * the prompt text (ShareGPT: the first human turn; JSONL messages: the
 * array as compact JSON) packed into 1 MiB blocks (prompts over 64 KiB get
 * their own block, so at most 1/16 of a block is wasted), plus 36 bytes
 * per record. While a record is parsed, up to about three times its raw
 * size is held (raw text, cJSON tree, kept copy). A text dataset keeps
 * every non-blank line. Records larger than DATASET_MAX_RECORD bytes are
 * refused. With --slice I/N a ShareGPT or JSONL dataset keeps only its
 * slice's records (about 1/N of the above); a text dataset keeps every
 * line. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "infertop/body_shape.h"
#include "infertop/dist.h"
#include "infertop/openai.h"
#include "infertop/rng.h"

struct config;

#define DATASET_MAX_RECORD (256u << 20)
#define DATASET_EST_CHARS_PER_TOKEN 4.0
#define DATASET_MAX_TOKENS 10000000L	/* same ceiling as the length options */

/* ---- The engine's interface. ---- */

struct dataset;
struct curl_slist;

/* Builds the dataset cfg->dataset names and parses its file. NULL with a
 * message in err ("FILE:LINE: what is wrong") on any error: the run must
 * not start. */
struct dataset *dataset_open(const struct config *cfg, char *err, size_t errcap);

/* --slice I/N: generator I (from 0) of N takes every N-th usable record
 * of a file, starting at the I-th (ShareGPT conversations without a human
 * turn do not count), so the N slices are disjoint and together the whole
 * file. Interleaved rather than contiguous: files are often sorted or
 * grouped (by length, source, language), and every N-th record gives
 * each slice the whole file's mix; it also needs no count of the records
 * before the file is read. A text (sonnet) file keeps every line for the
 * shared prefix and samples only its slice's lines. Every sliced dataset
 * draws from a stream of its own, seeded from the seed and the index, so
 * synthetic prompts differ between slices even with the same --seed. */
#define DATASET_MAX_SLICES 100000L	/* a Kubernetes Indexed Job's completions limit */

/* "I/N": decimal, 0 <= I < N <= DATASET_MAX_SLICES. 0, or -1. */
int dataset_slice_parse(const char *s, long *index, long *count);
/* The seed of slice index when no --seed is given: base + index, so the
 * generators of a fleet never share one and each is reproducible. */
uint64_t dataset_slice_seed(uint64_t base, long index);

/* --dataset's forms, default first: "synthetic", "sharegpt:FILE", ...;
 * NULL past the last. */
const char *dataset_spec_form(int i);
/* The file a --dataset value names ("sharegpt:FILE" and the like), the
 * form's prefix length in *plen; NULL: none (synthetic). */
const char *dataset_spec_file(const char *spec, size_t *plen);
/* 0 when spec has one of those forms (a FILE not yet opened), else -1. */
int dataset_spec_check(const char *spec);

/* Before the run, on the loop: POST base_url/tokenize with the run's
 * headers and TLS settings (-k, --cacert) to fit the server's token
 * counts, then fn(ud, rc, err). rc is 0 also when it falls back to the
 * estimate (the reason is then in err, and in dataset_describe()); -1 only
 * when out of memory. secrets (NULL-terminated, may be NULL) are scrubbed
 * from what the server answers before it reaches err (redact.h). Returns
 * a handle for dataset_calibrate_cancel() while it goes on,
 * CALIBRATE_ENDED when fn was already called, or NULL (and fn is not
 * called) when it cannot start. */
struct http;
struct calib;
struct tls_opts;
typedef void (*calibrate_fn)(void *ud, int rc, const char *err);
#define CALIBRATE_ENDED ((struct calib *)1)
struct calib *dataset_calibrate_start(struct dataset *d, struct http *h, const char *base_url,
				      struct curl_slist *headers, const char *const *secrets, const char *model,
				      const struct tls_opts *tls, calibrate_fn fn, void *ud);
/* Ends it without a word to fn (its owner is going away). */
void dataset_calibrate_cancel(struct calib *c);

/* The next request body (malloc'd JSON, *len its length) for the API,
 * model and options in base; max_tokens comes from the dataset (or
 * --output-tokens). *input_tokens gets the expected prompt tokens. NULL
 * when out of memory. */
char *dataset_next_body(struct dataset *d, struct rng *r, const struct oai_request_opts *base,
			size_t *len, long *input_tokens);
/* One request of a trace (--trace): its lengths and the hash ids of its
 * prompt's blocks. */
struct dataset_trace_req {
	long input_tokens, output_tokens;
	const uint64_t *hash;
	uint32_t nhash;
	long block_tokens;      /* tokens a hash id stands for */
};
/* The body for a trace request: block i of the prompt is block_tokens
 * tokens of synthetic words drawn from a stream seeded by hash[i] alone
 * (not --seed: every generator of a fleet writes the same block), so requests sharing a prefix of hash ids share that
 * prefix byte for byte; the blocks are cut at input_tokens, and what the
 * ids do not cover is random words from r. max_tokens is output_tokens
 * (at least 1). Like dataset_next_body() otherwise. */
char *dataset_trace_body(struct dataset *d, struct rng *r, const struct oai_request_opts *base,
			 const struct dataset_trace_req *t, size_t *len, long *input_tokens);

/* The next record of a sharegpt/jsonl dataset in its shuffled order (as
 * dataset_next_body takes them): --sessions file's conversations. NULL
 * for the other kinds. */
const struct dataset_rec *dataset_next_record(struct dataset *d, struct rng *r);

/* Lengths for the next bodies: a plan step (scenario, matrix) changes them
 * mid-run. With out_override the output length beats a file's own. */
void dataset_set_lengths(struct dataset *d, const struct dist *in, const struct dist *out, bool out_override);

/* One line for banners and results, e.g. "synthetic: in 128 tok, out 128
 * tok (tokenize-calibrated, 1.10 tok/word)". */
const char *dataset_describe(const struct dataset *d);
/* "tokenize" after a successful calibration, else "estimate" (also for
 * NULL). */
const char *dataset_length_source(const struct dataset *d);
void dataset_free(struct dataset *d);

/* Synthetic prompt: `words` random common words, no punctuation. Random
 * per request so a server's prefix cache cannot turn the prefill into a
 * lookup. Returns a malloc'd NUL-terminated string, NULL on OOM. */
char *dataset_synthetic_prompt(struct rng *r, long words);

/* ---- Shared by dataset.c, dataset_file.c, calibrate.c and the tests. ---- */

enum dataset_kind { DATASET_SYNTHETIC, DATASET_SHAREGPT, DATASET_JSONL, DATASET_TEXT };

/* One kept prompt (or, for text, one line). */
struct dataset_rec {
	char *text;             /* prompt text, or a messages array as compact JSON */
	uint32_t len;           /* bytes of text */
	uint32_t chars;         /* UTF-8 characters the model reads (message texts only) */
	uint32_t reply_chars;   /* ShareGPT: characters of the first reply; 0 = none */
	int32_t max_tokens;     /* JSONL: the record's max_tokens; 0 = none */
	bool messages;          /* text is a JSON messages array (chat API only) */
};

struct dataset_block;

struct dataset {
	enum dataset_kind kind;
	char *path;             /* file datasets */
	enum oai_api api;
	struct dist input_dist, output_dist;
	long input_mean;
	bool output_override;   /* --output-tokens given: beats the file's lengths */
	long prefix_tokens;     /* asked for */
	uint64_t seed;          /* shared by every slice: the prefix's */

	/* --slice (count 0: the whole dataset). */
	long slice_index, slice_count;
	size_t seen;            /* usable records in the file, every slice's */
	uint32_t *slice_lines;  /* text: this slice's lines */
	size_t nslice_lines;
	struct rng slice_rng;   /* a sliced dataset's own draws */

	struct dataset_rec *recs;
	size_t nrecs, caprecs;
	uint32_t *order;        /* incremental shuffle of recs */
	size_t cursor;
	struct dataset_block *blocks;
	uint64_t kept_bytes;
	size_t skipped;         /* ShareGPT conversations without a human turn */
	/* --sessions file: each record is a whole conversation, a JSON
	 * messages array of {"role","content"} with string contents (ShareGPT
	 * turns mapped to user/assistant/system); one without a user message
	 * is refused, never skipped. */
	bool sessions;

	/* The shared prefix: synthetic words (synthetic, sharegpt, jsonl) or
	 * the file's first lines (text). prefix_msg is the system message
	 * carrying it in front of a messages record. */
	char *prefix;
	size_t prefix_len;
	char *prefix_msg;
	double prefix_tok;      /* its tokens, overhead excluded */
	double prefix_scale;    /* calibration's correction of the prefix length */

	/* tokens = overhead + slope * units */
	double slope;
	double overhead;
	bool calibrated;
	char note[192];         /* why calibration fell back, "" if it did not */
	char desc[768];

	/* Synthetic and text prompts are built here and kept for the next
	 * request, which needs about as much room; their bodies come from
	 * the shape, made once for the run's options. */
	char *scratch;
	size_t scratch_cap;
	struct body_shape shape;

	/* --prefix-groups (prefix_groups.h): the synthetic dataset's bodies
	 * come from there; NULL: not given. */
	struct prefix_groups *pg;
};

/* Parses a dataset file from f ("name" in messages) into d, whose kind is
 * set. 0, or -1 with "name:LINE: ..." in err. Also used by the fuzz target
 * through fmemopen(). */
int dataset_load(struct dataset *d, FILE *f, const char *name, char *err, size_t errcap);

/* Like dataset_open() but reading an open stream (not closed) named name;
 * the kind and options come from cfg, the path part of cfg->dataset is
 * ignored. */
struct dataset *dataset_open_stream(const struct config *cfg, FILE *f, const char *name, char *err,
				    size_t errcap);

/* The steps of dataset_open() (dataset_file.c): an empty store of the kind
 * cfg names, and its end once records are in (order, prefix, lengths).
 * NULL / -1 with a message in err. */
struct dataset *dataset_new(const struct config *cfg, char *err, size_t errcap);
int dataset_finish(struct dataset *d, char *err, size_t errcap);

/* Counts one usable record of a sharegpt/jsonl file: true when it belongs
 * to this dataset's slice and is to be kept (dataset_add). */
bool dataset_take(struct dataset *d);

/* Keeps a copy of text[0..len) as a new record; fills in len. NULL when
 * out of memory or past the 2^32-1 record limit. */
struct dataset_rec *dataset_add(struct dataset *d, const char *text, size_t len);

/* Characters of valid UTF-8 text, or -1 when it is not valid UTF-8. */
long dataset_utf8_chars(const char *s, size_t len);

/* Synthetic text of exactly `units` units (a unit is a vocabulary word or
 * a sentence-ending period: one token each in the usual BPE vocabularies
 * and in the simulator), appended to *buf. 0, or -1 when out of memory. */
int dataset_synthetic_units(struct rng *r, long units, char **buf, size_t *len, size_t *cap);

/* Rebuilds the prefix (and its description) for the current slope. */
int dataset_build_prefix(struct dataset *d);
/* Sample text for calibration: synthetic text of `units` units, or about
 * `units` characters of the file's prompts. malloc'd; *units_out gets the
 * units it really holds. NULL when out of memory. */
char *dataset_sample_text(const struct dataset *d, long units, long *units_out);
/* Rewrites desc after the slope or the source changed. */
void dataset_update_desc(struct dataset *d);

#endif
