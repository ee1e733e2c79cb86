#ifndef INFERTOP_REQTRACK_H
#define INFERTOP_REQTRACK_H

/*
 * What the requests view (k9s-style) lists, in bounded memory: the
 * requests in flight are the engine's own live list, read in place (never
 * copied); of the finished ones only a fixed number of fixed-size records
 * is kept: the slowest REQTRACK_N by TTFT, by E2E and by worst chunk gap,
 * and the last REQTRACK_N. Nothing here grows with the length of the run.
 *
 * The engine feeds it at request start (a sequence number and the model)
 * and at request end (one record). The per-chunk path is not touched: a
 * request keeps its own worst gap and last gaps when its ITL buffer is
 * flushed (request.c), once every REQUEST_ITL_BUF chunks.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/request.h"
#include "infertop/stats.h"

#define REQTRACK_N 32
#define REQTRACK_GAPS REQUEST_ITL_KEEP
#define REQTRACK_MODEL_MAX 48

/* The lists the view shows, in the order of its tabs. */
enum reqtrack_list { RT_INFLIGHT, RT_SLOW_TTFT, RT_SLOW_E2E, RT_SLOW_ITL, RT_RECENT, RT_LIST_N };

/* Where a request is: finished, or how far an in-flight one got. */
/* RT_INCOMPLETE: still streaming when the run ended (req_result.incomplete):
 * neither a success nor a failure. */
enum reqtrack_phase { RT_WAITING, RT_PREFILL, RT_STREAMING, RT_OK, RT_FAILED, RT_INCOMPLETE };

/* One request, finished (kept) or in flight (made on the fly from the live
 * request). Times are ns from the send; -1: not (yet) known. */
struct reqtrack_rec {
	uint64_t seq;                 /* 1, 2, ... in start order */
	char model[REQTRACK_MODEL_MAX];
	enum reqtrack_phase phase;
	int http;                     /* status code, 0: none yet */
	enum err_kind err;            /* when failed */
	char msg[STATS_MSG_MAX];      /* the error as recorded (scrubbed), "" if none */
	int64_t t_send;               /* clock_now_ns() time of the send */
	int64_t ttfb_ns, ttft_ns;
	int64_t e2e_ns;               /* in flight: time since the send; failed:
	                               * until its last bytes arrived */
	int64_t tokens_in, tokens_out;
	uint64_t chunks;
	uint32_t worst_gap_us;        /* 0: fewer than two chunks */
	uint32_t ngaps;
	uint32_t gaps_us[REQTRACK_GAPS]; /* the last chunk gaps, oldest first */
};

struct reqtrack {
	struct request *const *live;  /* the owner's in-flight list (its head) */
	uint64_t next_seq;
	uint64_t finished;
	uint32_t nslow[3];
	/* Slowest first; index 0..2: RT_SLOW_TTFT..RT_SLOW_ITL. */
	struct reqtrack_rec slow[3][REQTRACK_N];
	uint32_t recent_head, recent_len;   /* ring: head is the next slot */
	struct reqtrack_rec recent[REQTRACK_N];
};

/* live: where the owner keeps the head of its in-flight list. */
struct reqtrack *reqtrack_new(struct request *const *live);
void reqtrack_free(struct reqtrack *t);
/* Forgets the finished requests (window reset); in-flight ones stay. */
void reqtrack_clear(struct reqtrack *t);

/* A request is about to start: it gets its number and model (a string
 * that lives as long as the run). t may be NULL: no tracking. */
void reqtrack_start(struct reqtrack *t, struct request *r, const char *model);
/* It ended (before its gaps are dropped): one record into the ring, and
 * into each slowest set it belongs to (successes only, as the latency
 * statistics). */
void reqtrack_done(struct reqtrack *t, const struct request *r, const struct req_result *res);

/* An in-flight request as a record at now_ns; with_gaps copies its last
 * chunk gaps too (the detail), else ngaps is 0 (a table row). */
void reqtrack_rec_live(const struct request *r, int64_t now_ns, bool with_gaps, struct reqtrack_rec *out);

/* Records kept in a list (not RT_INFLIGHT): slowest first, or for
 * RT_RECENT newest first. */
size_t reqtrack_count(const struct reqtrack *t, enum reqtrack_list l);
const struct reqtrack_rec *reqtrack_get(const struct reqtrack *t, enum reqtrack_list l, size_t i);
/* The first in-flight request (then ->next), NULL when none. */
const struct request *reqtrack_live_first(const struct reqtrack *t);
/* By sequence number: in flight, or a kept record; NULL if neither. */
const struct request *reqtrack_live_find(const struct reqtrack *t, uint64_t seq);
const struct reqtrack_rec *reqtrack_find(const struct reqtrack *t, uint64_t seq);

/* "waiting", "prefill", "streaming", "ok", "failed". */
const char *reqtrack_phase_name(enum reqtrack_phase p);
/* The filter of the view: a case-insensitive substring of the model, the
 * status (phase name, or "http NNN") or the error kind. "" matches all. */
bool reqtrack_match(const struct reqtrack_rec *rec, const char *filter);
/* The last gaps of a request, oldest first, into out (at most cap):
 * those kept at its last flush, then those in its buffer. */
uint32_t reqtrack_gaps(const struct request *r, uint32_t *out, uint32_t cap);
/* Its worst gap so far (us). */
uint32_t reqtrack_worst_gap(const struct request *r);

#endif
