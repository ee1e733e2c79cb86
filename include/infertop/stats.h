#ifndef INFERTOP_STATS_H
#define INFERTOP_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/hist.h"

/* Client-side figures, per doc/metrics.md section 1. Latencies are stored in
 * microseconds in log-linear histograms: constant memory however long the
 * run. Each metric has a whole-run histogram and a sliding window made of
 * STATS_SLICES slices (window = sum of slices; the expiring slice is
 * subtracted), so window percentiles cost no per-sample memory either. The
 * metrics, their names and how each output shows them are declared once,
 * in client_metrics.def. */
enum stat_metric {
#define CLIENT_METRIC(id, ...) STAT_##id,
#include "infertop/client_metrics.def"
	STAT_NMETRICS
};

enum err_kind {
	ERR_CONNECT,    /* could not connect / resolve / TLS */
	ERR_TIMEOUT,    /* --timeout hit */
	ERR_HTTP,       /* non-2xx status; by code in http_codes[] */
	ERR_TRUNCATED,  /* stream ended without [DONE] */
	ERR_EVENT,      /* error object or error: line inside the stream */
	ERR_BAD_JSON,   /* a chunk that is not a JSON object */
	ERR_OVERSIZE,   /* an SSE event larger than the parser's bound */
	ERR_NO_OUTPUT,  /* [DONE] without a single output chunk */
	ERR_ABORTED,    /* still running when the grace period ended: the
	                 * request is incomplete (req_result.incomplete), not
	                 * counted as failed */
	ERR_OTHER,      /* any other transfer failure */
	ERR_CONTEXT,    /* HTTP 400: the prompt is past the model's context length
	                 * (oai_error_is_context); ends a session (--sessions) */
	ERR_NKINDS
};

#define STATS_SLICES 10
#define STATS_MSG_MAX 200
#define STATS_HTTP_CODES 600

struct stats_counters {
	uint64_t completed;
	uint64_t failed;
	/* Cut by the run's (or a step's) end while still streaming: neither
	 * completed nor failed; their output tokens so far are in
	 * output_tokens (and chunks). */
	uint64_t incomplete;
	uint64_t incomplete_tokens;   /* their share of output_tokens (not saved) */
	uint64_t output_tokens;
	uint64_t input_tokens;
	uint64_t chunks;
	/* Output chunks counted the moment they arrive, from every request
	 * (the fields above move only when a request ends): live rates come
	 * from these, so a steady load draws a flat line, not a saw-tooth. */
	uint64_t streamed;
	/* The prefix cache, over successful requests: those whose server said
	 * how many prompt tokens it served from its cache (req_result's
	 * cached_tokens), their prompt tokens and cached tokens, and those
	 * that said nothing (known + unknown = completed). Hit rate = prompt_cached / prompt_known, for the
	 * window too (the dashboard's live figure). */
	uint64_t cache_known, cache_unknown, prompt_known, prompt_cached;
};

/* What one finished request contributes. Times in ns; < 0 = not reached. */
struct req_result {
	bool ok;
	/* Not ok, err ERR_ABORTED: the run ended under it. Not a failure:
	 * counted apart, its output so far (output_tokens, chunks) kept. */
	bool incomplete;
	enum err_kind err;
	int http_code;
	const char *msg;
	int64_t queue_ns;
	int64_t ttfb_ns;
	int64_t ttft_ns;
	int64_t e2e_ns;
	int64_t output_tokens;
	bool tokens_from_usage;
	int64_t prompt_tokens;   /* from usage; < 0 = unknown */
	uint64_t chunks;         /* output-carrying chunks */
	int64_t retry_after_ns;  /* the server's Retry-After; < 0 = none */
	int64_t usage_tokens;    /* usage.completion_tokens; < 0 = not sent */
	/* Prompt tokens the server served from its prefix cache
	 * (usage.prompt_tokens_details.cached_tokens, llama.cpp's
	 * timings.cache_n); < 0 = the server did not say. */
	int64_t cached_tokens;
	/* The request's turn in its session (--sessions), from 1; 0 = not a
	 * session's. */
	uint32_t turn;
};

/* What one finished session contributes (--sessions). */
struct session_result {
	bool ok;                 /* every turn it was given succeeded */
	bool context_limit;      /* ended by the server's context-length 400 */
	bool incomplete;         /* cut by the run's end (-d, Ctrl-C): not a failure */
	uint32_t turns;          /* turns that succeeded */
	int64_t duration_ns;     /* first turn's send to the last turn's end */
	int64_t context_tokens;  /* prompt tokens of its last turn sent */
};

/* By-turn figures: turns 1 to STATS_TURNS - 1 each, the last bucket every
 * later turn ("8+"), so labels stay bounded however long sessions run. */
#define STATS_TURNS 8

/* Whole-run histograms that only some runs fill: the prefix cache's TTFT
 * split, per-turn TTFT and E2E (--sessions), and per-session figures.
 * Each is made at its first sample and NULL until then, so a run without
 * them pays nothing, and has no window or slices (a struct hist is
 * ~184 KiB: all of them at most 21 x 184 KiB, pages touched as filled).
 * Latencies in us; turns and context tokens as plain counts. */
enum stats_xhist {
	XH_TTFT_WARM,      /* TTFT of requests with cached >= half the prompt */
	XH_TTFT_COLD,      /* TTFT of the rest whose cache use is known */
	XH_TURN_TTFT,      /* + stats_turn_index(turn) */
	XH_TURN_E2E = XH_TURN_TTFT + STATS_TURNS,
	XH_SESSION_DURATION = XH_TURN_E2E + STATS_TURNS,
	XH_SESSION_TURNS,   /* turns that succeeded, per session */
	XH_SESSION_CONTEXT, /* prompt tokens of a session's last turn */
	XH_N
};

struct stats {
	int64_t start_ns;
	int64_t slice_ns;
	int64_t slice_start_ns;
	int cur;
	int slices_used;          /* slices holding data, current included */
	struct hist *run[STAT_NMETRICS];
	struct hist *win[STAT_NMETRICS];
	struct hist *slice[STAT_NMETRICS][STATS_SLICES];
	struct stats_counters run_c;
	struct stats_counters win_c;
	struct stats_counters slice_c[STATS_SLICES];

	uint64_t started;
	uint64_t in_flight;
	uint64_t max_in_flight;
	uint64_t step_max_in_flight;  /* since the plan's step began (plan.c sets it) */
	uint64_t connections;         /* TCP connections opened (reuse keeps this flat) */
	uint64_t connection_retries;  /* requests resent on a fresh connection after the
	                               * server closed a kept-alive one under them */
	uint64_t tokens_from_usage;   /* requests whose count came from usage */
	/* Succeeded, but usage.completion_tokens and the chunks disagree by
	 * more than 2x: the server's count or its stream is suspect. */
	uint64_t usage_mismatch;
	char usage_mismatch_msg[STATS_MSG_MAX];
	uint64_t tokens_from_chunks;
	uint64_t errors[ERR_NKINDS];
	uint64_t http_codes[STATS_HTTP_CODES];
	char last_msg[ERR_NKINDS][STATS_MSG_MAX];
	enum err_kind last_err;       /* kind of the newest failure */
	int last_http;                /* its status when it was ERR_HTTP */
	bool run_frozen;              /* cooldown: only the window still records */
	/* Every request of the run, warmup and cooldown included, never reset:
	 * rates over time (the charts) come from these. */
	struct stats_counters all_c;
	uint32_t resets;              /* times stats_reset_run ran (counters dropped) */
	/* Sessions (--sessions) that ended: all, those with a failed turn,
	 * those of which ended at the context limit; turns that succeeded. */
	uint64_t sessions_done, sessions_failed, sessions_context, session_turns;
	uint64_t sessions_incomplete;  /* of the done, cut by the run's end */
	/* enum stats_xhist; NULL: no sample yet. Frozen and reset with the
	 * whole-run figures. */
	struct hist *xh[XH_N];
};

struct stats *stats_new(int64_t window_ns, int64_t now_ns);
void stats_free(struct stats *s);

/* Advances the window; call at least once per slice (window/STATS_SLICES). */
void stats_tick(struct stats *s, int64_t now_ns);
/* Empties the sliding window (the dashboard's z key); whole-run figures
 * stay. The window then grows again from now_ns. */
void stats_window_reset(struct stats *s, int64_t now_ns);

void stats_record(struct stats *s, enum stat_metric m, int64_t ns);
/* ITL gaps arrive in per-request batches (µs), recorded when the request
 * succeeds so that failed requests stay out of the latency figures. */
void stats_record_itl_us(struct stats *s, const uint32_t *gaps, size_t n);
void stats_request_done(struct stats *s, const struct req_result *r);
/* A session ended (every turn already went through stats_request_done). */
void stats_session_done(struct stats *s, const struct session_result *r);

/* turn's bucket of the by-turn figures (0 for turn 1, the last for
 * STATS_TURNS and later); -1 for 0, not a session's request. */
int stats_turn_index(uint32_t turn);
/* The bucket's label: "1" ... "7", "8+". */
const char *stats_turn_label(int index);
/* Whether a request counts as "mostly cached" (cached >= half of its
 * prompt tokens); both known. */
bool stats_cache_warm(int64_t cached_tokens, int64_t prompt_tokens);
/* Hit rate of a counter set: prompt_cached / prompt_known, NaN when no
 * request said. */
double stats_cache_hit_rate(const struct stats_counters *c);
/* Whether the outputs show the cache's figures: a response said some of
 * its prompt was cached (in run or window), or the run has sessions and a
 * response said anything. A server that always says 0 (a cache that
 * never hits, or random prompts against the simulator) adds nothing to a
 * run without sessions: its documents stay as they were. */
bool stats_cache_shown(const struct stats_counters *run, const struct stats_counters *win, bool sessions);

/* Seconds the window currently covers (shorter than the window early on). */
double stats_window_seconds(const struct stats *s, int64_t now_ns);

uint64_t stats_errors_total(const struct stats *s);

/* Warmup end: every figure (whole run and window, counters, errors) starts
 * afresh at now, as if the run began then; in_flight, started and
 * connections stay. Readers that keep counter deltas see `resets` grow. */
void stats_reset_run(struct stats *s, int64_t now_ns);
/* Cooldown: from now on requests reach the window only; the whole-run
 * histograms, counters and errors stay as they are. */
void stats_freeze_run(struct stats *s);
const char *stats_metric_name(enum stat_metric m);
/* The metrics an output lists, in its own order: pos[m] is m's place there
 * (1 first, 0 left out; a client_metrics.def column). Fills order[] and
 * returns how many. */
int stats_metric_order(const unsigned char pos[STAT_NMETRICS], enum stat_metric order[STAT_NMETRICS]);
const char *stats_err_name(enum err_kind k);

/* One output chunk has just arrived (the hot path: four increments). */
static inline void stats_chunk_arrived(struct stats *s)
{
	s->all_c.streamed++;
	s->win_c.streamed++;
	s->slice_c[s->cur].streamed++;
	if (!s->run_frozen)
		s->run_c.streamed++;
}
/* Output tokens per chunk over the finished requests (usage over chunks:
 * llama.cpp merges byte pieces, some servers batch tokens), 1 before any;
 * turns streamed chunks into a live token count. */
double stats_tokens_per_chunk(const struct stats *s);
/* a += b, every field (merges and the window's slices). */
void stats_counters_add(struct stats_counters *a, const struct stats_counters *b);
/* The live output token count of a counter set. */
double stats_live_tokens(const struct stats *s, const struct stats_counters *c);

#endif
