#ifndef INFERTOP_TRACE_REPLAY_H
#define INFERTOP_TRACE_REPLAY_H

/* --trace FORMAT:FILE replayed on a fixed schedule (trace.h reads it).
 *
 * Opening reads the whole file once, through a 64 KiB buffer, to find bad
 * lines before anything is sent (the run does not start on one unless
 * --trace-skip-bad) and to count the records in --trace-window. During the
 * run the file is read again from the start, a chunk at a time as the
 * schedule needs the next record: memory is the reader's (trace.h) plus
 * the records scheduled but not yet sent (at most LOAD_SCHEDULE_BACKLOG
 * and those in flight), never the file.
 *
 * Times: a record at trace time t (from the trace's earliest record) is
 * sent at (t - window start) / speed after the run starts; records before
 * the window's start are passed over, the replay ends at its end.
 *
 * Slices (--slice I/N, one per generator of a fleet): a record with a
 * session id goes to slice trace_session_hash(id) mod N, so a session is
 * never split between generators; one without, to slice (its index in
 * the trace, in time order, from 0) mod N. Every generator reads the same
 * file the same way, so the N slices are disjoint and together exactly the
 * trace; each keeps the trace's own times (a slice's first record is not
 * moved to 0), so generators started together send on one schedule. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/trace.h"

struct config;
struct trace_replay;

/* NULL with "FILE:LINE: FIELD: what" (or why the file cannot be read) in
 * err: the run must not start. */
struct trace_replay *trace_replay_open(const struct config *cfg, char *err, size_t errcap);
void trace_replay_free(struct trace_replay *tr);

/* Schedules the next record: *at_ns gets its send time from the start of
 * the replay. false when there is none (the end of the window or of the
 * file). */
bool trace_replay_next(struct trace_replay *tr, int64_t *at_ns);
/* The oldest scheduled record not yet sent (NULL: none), and its removal
 * once its request has started. */
const struct trace_rec *trace_replay_peek(const struct trace_replay *tr);
void trace_replay_pop(struct trace_replay *tr);

/* Whether every record of the window has been scheduled. */
bool trace_replay_ended(const struct trace_replay *tr);
/* Records in the window (from the first reading), and sent so far. */
uint64_t trace_replay_total(const struct trace_replay *tr);
uint64_t trace_replay_sent(const struct trace_replay *tr);
/* "mooncake:FILE: 1000 records over 10.0 s, speed 1x, 3 reordered, 2 bad
 * lines skipped (first: ...)" for banners and results. */
const char *trace_replay_describe(const struct trace_replay *tr);
/* Why a run's end cut the replay short: "trace cut at -d: 120 of 1000
 * records sent"; the string lives as long as tr. */
const char *trace_replay_cut_note(struct trace_replay *tr);

/* What the result records of a replay (json_write.c: the "trace"
 * object). Strings live as long as tr. */
struct trace_replay_info {
	const char *format;             /* "mooncake", "azure", "burstgpt" */
	const char *file;               /* the file's name, without its directory */
	uint64_t records;               /* in the window, this slice's */
	uint64_t records_in_window;     /* every slice's */
	uint64_t sent;
	uint64_t reordered, skipped;    /* the first reading's counts */
	const char *first_bad;          /* "" none; the path cut to the name */
	double speed;
	int64_t window_start_ns, window_len_ns;  /* len 0: to the end */
	int64_t span_ns;                /* the last record's time in the window */
	long block_tokens;              /* tokens a hash id stands for */
	long slice_index, slice_count;  /* count 0: no slice */
	bool by_session;                /* records carry session ids */
	bool ended;                     /* every record scheduled */
	bool cut;                       /* the run's -d cut it (trace_replay_cut_note) */
};
void trace_replay_info(const struct trace_replay *tr, struct trace_replay_info *out);

/* The result's "trace" object (src/result/json_write.c): the info above,
 * (taken by trace_replay_info, so the writer needs no replay), and the
 * schedule's lateness, which is the client queue time: the
 * figures of queue (the run's STAT_QUEUE histogram; NULL: none). NULL on
 * out of memory. */
struct cJSON;
struct hist;
struct cJSON *trace_replay_to_json(const struct trace_replay_info *info, const struct hist *queue);

/* FNV-1a of a session id; the slice of a record that is the index-th of
 * the trace (time order, from 0) among count slices (0 when count <= 1). */
uint64_t trace_session_hash(const char *id);
long trace_slice_of(const struct trace_rec *rec, uint64_t index, long count);

/* "START,LEN" seconds (decimals allowed, LEN 0: to the end). 0, or -1. */
int trace_window_parse(const char *s, int64_t *start_ns, int64_t *len_ns);

#endif
