#ifndef INFERTOP_REQLOG_H
#define INFERTOP_REQLOG_H

/*
 * --request-log FILE: one JSON line per finished request. Lines gather in
 * a 64 KiB buffer written out when full and at least once a second
 * (reqlog_tick), so the loop pays one write() per 64 KiB and never an
 * fsync. Past --request-log-max the file is renamed FILE.1 (FILE.1 to
 * FILE.2 ... up to REQLOG_KEEP) and a new FILE started. A failed write
 * (disk full, file gone) is counted and its lines dropped; the run goes
 * on and the next flush tries again. A line a short write cut is taken
 * back off the file (ftruncate), so the file is whole lines only.
 *
 * Fields of a line (times in s since the run's start, durations in ms,
 * both to the microsecond; null when a request never got that far):
 *   t_intended t_send t_end unix_send queue_ms ttfb_ms ttft_ms e2e_ms
 *   output_tokens input_tokens cached_tokens turn chunks tokens_from
 *   outcome error http_status message
 * (cached_tokens: prompt tokens the server said it served from its
 * prefix cache, null when it did not say; turn: the request's turn in its
 * session, null outside sessions)
 */

#include <stddef.h>
#include <stdint.h>

#define REQLOG_BUF (64 * 1024)
#define REQLOG_KEEP 3

struct cJSON;
struct reqlog;
struct request;
struct req_result;

struct reqlog_stats {
	uint64_t records;        /* lines accepted */
	uint64_t written_bytes;  /* bytes that reached a file */
	uint64_t dropped;        /* lines lost to write errors */
	uint64_t write_errors;
	uint64_t rotations;
	char last_error[200];    /* "" when none */
};

/* Opens path for appending (creating it). NULL with a message in err. */
struct reqlog *reqlog_open(const char *path, uint64_t max_bytes, char *err, size_t errcap);
/* The per-request sinks cfg asks for: the --request-log file and the
 * --save-detailed arrays (detail.h, temporary files in -o's directory).
 * NULL with a message in err on failure; call it only when one is asked
 * for. */
struct config;
struct request_ctx;
struct detail;
struct reqlog *reqlog_open_config(const struct config *cfg, char *err, size_t errcap);
/* Sets ctx's hooks that feed the detailed arrays (nothing when l has
 * none). */
void reqlog_hook(struct reqlog *l, struct request_ctx *ctx);
/* The detailed arrays; NULL when not asked for (or l is NULL). */
struct detail *reqlog_detail(const struct reqlog *l);
/* Flushes, closes, frees; NULL is fine. */
void reqlog_close(struct reqlog *l);
/* --upload: each rotated file goes up as FILE.N (N counting rotations
 * from 1, so none overwrites another), and reqlog_upload() sends the
 * current FILE (the run's end calls it). put(ud, path, name) hands one
 * file to the uploader (upload.h's uploader_put; a function here so the
 * log, which the result readers' fuzz target builds, needs no network
 * code); NULL put: none. */
typedef void (*reqlog_put_fn)(void *ud, const char *path, const char *name);
void reqlog_set_uploader(struct reqlog *l, reqlog_put_fn put, void *ud);
void reqlog_upload(struct reqlog *l);

/* One finished request; t0_ns is the run's start (CLOCK_MONOTONIC). */
void reqlog_request(struct reqlog *l, const struct request *r, const struct req_result *res, int64_t t0_ns);
/* Writes the buffer if it has waited a second or more. */
void reqlog_tick(struct reqlog *l, int64_t now_ns);
/* Writes the buffer now. 0, or -1 if it was lost (counted). */
int reqlog_flush(struct reqlog *l);

const struct reqlog_stats *reqlog_stats(const struct reqlog *l);
/* The log file; NULL when only the detailed arrays are kept. */
const char *reqlog_path(const struct reqlog *l);
/* The result's "request_log" block (src/result/json_write.c): {"path",
 * "records", "written_bytes", "dropped", "write_errors", "rotations",
 * "last_error"}; NULL on out of memory. */
struct cJSON *reqlog_to_json(const struct reqlog *l);

#endif
