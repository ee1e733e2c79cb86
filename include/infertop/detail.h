#ifndef INFERTOP_DETAIL_H
#define INFERTOP_DETAIL_H

/*
 * --save-detailed: vLLM's per-request arrays in the -o result
 * (benchmark_serving.py --save-detailed): input_lens, output_lens, ttfts
 * (s), itls (a list of s per request), errors ("" for a success) and, with
 * --save-detailed-texts, generated_texts. One entry per request that
 * ended, in the order they ended, failed ones included as vLLM does (ttft
 * 0 unless a token came, itls [], output_lens 0).
 *
 * Memory stays flat however long the run: each array is a temporary file
 * (unlinked at once, in the result's directory) that rows are appended to
 * as requests end; only requests still in flight hold their gaps (and
 * text) here. The result writer copies the files into -o at the end
 * (detail_write_arrays).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct detail;

/* Temporary files in dir (NULL: "."). NULL with a message in err. */
struct detail *detail_open(const char *dir, bool texts, char *err, size_t errcap);
void detail_close(struct detail *d);
bool detail_texts(const struct detail *d);

/* A batch of a request's ITL gaps (us) as they leave its buffer; req is
 * only a key. */
void detail_gaps(struct detail *d, const void *req, const uint32_t *gaps_us, size_t n);
/* An output chunk's data (the SSE event's JSON), for generated_texts. */
void detail_chunk(struct detail *d, const void *req, const char *json, size_t len);
/* The text gathered for req so far ("" when none), NUL-terminated. */
const char *detail_text(const struct detail *d, const void *req);

/* One request ended: its row. error_json and text_json are JSON string
 * bodies already escaped (NULL: ""); ttft_s < 0 is written 0 (no token). */
struct detail_row {
	int64_t input_len, output_len;
	double ttft_s;
	bool ok;
	const char *error_json;
	const char *text_json;
};
void detail_request(struct detail *d, const void *req, const struct detail_row *row);

/* Rows written so far. */
uint64_t detail_rows(const struct detail *d);

/* Writes ,"input_lens":[...],"output_lens":[...],... to fd (the arrays
 * streamed from the temporary files). 0, or -1 with errno set; a write
 * to a temporary file that failed during the run (disk full) fails here,
 * so no file ever carries arrays of different lengths. */
int detail_write_arrays(struct detail *d, int fd);

#endif
