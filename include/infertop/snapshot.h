#ifndef INFERTOP_SNAPSHOT_H
#define INFERTOP_SNAPSHOT_H

/*
 * Snapshots: the whole state of a run as one JSON document (schema in
 * man/infertop-snapshot.5), written during the run (the `s` key, SIGUSR1,
 * --snapshot-every) and at its end (the -o result is the final snapshot),
 * read back by `infertop report|merge|compare`.
 *
 * struct snapshot is the one in-memory model of a run: built from a live
 * run (snapshot.c, from its view) it borrows the engine's histograms; read
 * from a file (snapshot_read.c) or merged (merge.c) it owns decoded
 * copies, which model.c frees. The plan's results
 * are data (struct snapshot_plan), not text. Each output format is one
 * module that only reads the model (include/infertop/result.h): JSON
 * (snapshot_to_json, json_write.c), text (snapshot_print_summary, report,
 * compare: text.c), CSV and Markdown. Either way snapshot_to_json() writes
 * the same schema, so a file read back and written again keeps every
 * number.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "infertop/slo.h"
#include "infertop/stats.h"

#define SNAPSHOT_SCHEMA 1

enum snapshot_reason {
	SNAPSHOT_KEY,       /* the dashboard's `s` */
	SNAPSHOT_SIGNAL,    /* SIGUSR1 */
	SNAPSHOT_PERIODIC,  /* --snapshot-every */
	SNAPSHOT_FINAL,     /* end of the run */
	SNAPSHOT_MERGED,    /* `infertop merge` */
	SNAPSHOT_API,       /* POST /v1/snapshot of the control API */
	SNAPSHOT_STATUS,    /* GET /v1/status: the live state, not a file */
	SNAPSHOT_NREASONS
};

struct cJSON;
struct config;
struct ev_loop;
struct run_view;

/* The plan's results as data (JSON keys "plan", "steps", "matrix", "slo",
 * "models"): what the text summary and the JSON writer render. */

#define SNAPSHOT_LABEL_MAX 48
#define SNAPSHOT_MATRIX_MAX 8

/* One latency in ms, as the plan summarises it. */
struct snapshot_metric {
	uint64_t count;
	double mean_ms, p50_ms, p90_ms, p99_ms;
};

struct snapshot_step {
	int index;                  /* 0-based */
	char label[SNAPSHOT_LABEL_MAX];
	char scenario[24];          /* "" none */
	double scenario_input_tokens, scenario_output_tokens;
	bool open_loop;
	double target, target_end;  /* equal unless the step ramps */
	char arrival[16];           /* open loop */
	double start_s, end_s, duration_s, held_s;
	bool partial;
	uint64_t started, completed, failed, unsent, input_tokens, output_tokens;
	uint64_t incomplete;        /* sent, not finished at the step's end */
	uint64_t max_concurrency;   /* most in flight at once */
	double mean_input_tokens, mean_output_tokens;   /* per completed request */
	double request_throughput, output_throughput, total_token_throughput, mean_concurrency;
	double request_goodput;     /* with SLOs */
	double slo_share[SLO_N + 1];  /* share meeting SLO k, [SLO_N]: every SLO */
	struct snapshot_metric ttft, tpot, itl, e2e;
};

struct snapshot_event {
	double t_s;                 /* since the plan's start */
	char event[24];
	int step;                   /* -1: none */
	bool open_loop;
	double target;
};

struct snapshot_model {
	char name[128];
	double share;
	uint64_t sent, completed, failed, input_tokens, output_tokens;
	double request_throughput, output_throughput, request_goodput;
	double slo_share[SLO_N + 1];
	struct snapshot_metric ttft, tpot, e2e;
};

struct snapshot_plan {
	bool present;               /* a "plan" object: every run, not a merge */
	int kind;                   /* enum plan_kind */
	char arrival[16];
	double burstiness;
	char scenario[24];          /* --scenario, "" none */
	double warmup_s;            /* 0: none */
	uint64_t warmup_requests;
	double cooldown_s, measured_duration_s;
	uint64_t planned_steps;
	char state[24];
	bool have_auto_rates;
	double sync_rate, top_rate; /* rate=auto's measured rates */
	char note[200];
	struct snapshot_event *timeline;
	size_t ntimeline;
	uint64_t timeline_dropped;
	struct snapshot_step *steps;
	size_t nsteps;
	size_t nmatrix;             /* kind matrix: the scenarios it covers */
	char matrix[SNAPSHOT_MATRIX_MAX][24];
	bool have_slo;              /* a "slo" object: limits given */
	bool slo_set[SLO_N];
	double slo_limit_ms[SLO_N];
	bool have_models;
	struct snapshot_model *models;
	size_t nmodels;
};

struct snapshot {
	int schema;
	enum snapshot_reason reason;
	char version[32];
	char host[256];
	char run_id[33];            /* 128 random bits in hex; "" in older files */
	char target_url[1024];      /* user:password@, query and fragment removed */
	char model[256];
	char server_detected[32];   /* scraper profile; "" when unknown */
	char status[16];            /* running, draining, done, merged */
	char stop_reason[128];
	char token_source[16];      /* usage, chunks, mixed */
	char input_length_source[32];
	double start_unix;          /* wall clock at the run's start, s */
	double taken_unix;          /* wall clock when this snapshot was taken */
	double elapsed;             /* s since the run's start, warmup and cooldown included */
	double duration;            /* s measured: without warmup and cooldown (a merge: the union) */

	/* Load as set at the snapshot; a merge sums the targets. */
	bool open_loop;
	double concurrency;
	double rate;
	double max_concurrency;     /* open-loop cap, 0 = none */
	bool paused;
	uint64_t in_flight;
	uint64_t pending;           /* open-loop arrivals waiting for the cap */
	/* vLLM's request_rate (INFINITY: closed loop, written "inf") and
	 * max_concurrency (NaN: null), from the options as given. */
	double vllm_request_rate;
	double vllm_max_concurrency;
	double burstiness;          /* arrival shape (1 = Poisson); NaN: mixed */

	struct stats_counters run_c, win_c;
	double win_seconds;
	uint64_t started, max_in_flight, connections, connection_retries;
	uint64_t tokens_from_usage, tokens_from_chunks;
	uint64_t usage_mismatch;            /* warning: usage vs chunks over 2x */
	char usage_mismatch_msg[STATS_MSG_MAX];
	uint64_t errors[ERR_NKINDS];
	char last_msg[ERR_NKINDS][STATS_MSG_MAX];
	uint64_t http_codes[STATS_HTTP_CODES];
	double max_output_tok_s;    /* NaN when unknown */

	/* --slo: whole-run counts (exact, they add in a merge). */
	bool have_slo;
	char slo_desc[160];
	struct slo_counts slo_run;

	struct hist *run[STAT_NMETRICS];
	struct hist *win[STAT_NMETRICS];
	/* The prefix cache's and sessions' whole-run histograms (enum
	 * stats_xhist); NULL: none (the cache counters are in run_c/win_c). */
	struct hist *xh[XH_N];
	/* --sessions: as struct stats counts them. */
	uint64_t sessions_done, sessions_failed, sessions_context, session_turns;
	uint64_t sessions_incomplete;
	bool owns_hists;
	/* Written lean: a status document for a reader that merges (infertop
	 * fleet). What the histograms and counters already say (means,
	 * percentiles, rates, vLLM's derived keys, the definitions) is left
	 * out: half the bytes, and most of the parsing, of a fleet's poll. */
	bool lean;
	unsigned nruns;             /* 1, or how many runs a merge added */

	/* Carried through as JSON, owned, NULL when absent. */
	struct cJSON *options;      /* every option (header values never) */
	/* A merge: the options whose values differ between its inputs, name
	 * to their values in input order ("options_differ"); NULL otherwise.
	 * options then holds those every input shares. */
	struct cJSON *options_differ;
	struct cJSON *metadata;     /* --metadata tags: an object; NULL: none given */
	struct cJSON *vllm_ignored; /* vLLM arguments given and ignored: {"key":"why"}; NULL: none */
	struct cJSON *load_changes; /* [{t_s, mode, value}] */
	struct cJSON *server;       /* server_to_json() */
	struct cJSON *series;       /* time series */
	struct cJSON *request_log;  /* --request-log counters */
	struct cJSON *trace;        /* --trace: the replay (trace_replay_to_json) */
	struct cJSON *sources;      /* a merge: one summary per input */
	/* A fleet --start's merge: the generators planned and merged, those
	 * lost (id, run, when, why), the load planned and achieved
	 * (fleet_start.c builds it; "fleet" in the file). */
	struct cJSON *fleet;
	struct snapshot_plan plan;  /* owned arrays */
	/* An older file's pre-rendered plan text ("plan_summary_text"), shown
	 * when it has no plan data; never written. */
	char *plan_text;
};

const char *snapshot_reason_name(enum snapshot_reason r);


/* Fills s from a live run's view at now_ns (CLOCK_MONOTONIC). Histograms
 * are borrowed: s is valid while the engine is and untouched. Reads
 * v->server, v->series and v->reqlog when they are not NULL. 0, or -1 on
 * out of memory (s is then released). */
int snapshot_from_view(struct snapshot *s, const struct run_view *v, int64_t now_ns, enum snapshot_reason why);
/* Frees what s owns and zeroes it. */
void snapshot_release(struct snapshot *s);
/* Frees the plan data's arrays and zeroes it. */
void snapshot_plan_release(struct snapshot_plan *p);

/* The document (src/result/json_write.c, the one JSON writer); NULL on
 * out of memory. */
struct cJSON *snapshot_to_json(const struct snapshot *s);
/* The document printed; malloc'd, NULL on out of memory. */
char *snapshot_to_text(const struct snapshot *s);
/* snapshot_from_view + snapshot_to_json, printed; malloc'd, NULL on OOM. */
char *snapshot_build(const struct run_view *v, int64_t now_ns, enum snapshot_reason why);
/* The same, for a caller that builds documents again and again: *size
 * is the last document's length (0: none yet), used to size the buffer,
 * and becomes this one's. */
char *snapshot_build_sized(const struct run_view *v, int64_t now_ns, enum snapshot_reason why, size_t *size);
/* s as text, as snapshot_build_sized prints it (a status document on one
 * line, files formatted); *size as there. Reads s only: a thread may
 * print a snapshot whose histograms are its own copies. */
char *snapshot_text_sized(const struct snapshot *s, size_t *size);
/* snapshot_build_sized of a lean document (struct snapshot's lean). */
char *snapshot_build_lean(const struct run_view *v, int64_t now_ns, enum snapshot_reason why, size_t *size);

/* Parses a document (any text cJSON accepts, len bytes) into s. 0, or -1
 * with a message in err: not JSON, a newer or missing schema, a histogram
 * that does not decode, counters that are not non-negative integers. */
int snapshot_parse(struct snapshot *s, const char *text, size_t len, char *err, size_t errcap);
/* snapshot_parse for a reader that parses documents again and again (the
 * fleet: 64 generators at 4 Hz): s is zeroed or holds an earlier parse or
 * merge, whose 16 histograms (188 KB each) are reset and reused instead of
 * allocated and zeroed anew. The rest of s is released first. */
int snapshot_reparse(struct snapshot *s, const char *text, size_t len, char *err, size_t errcap);
/* snapshot_parse on a file's contents. */
int snapshot_read_file(struct snapshot *s, const char *path, char *err, size_t errcap);

/* (merge.c) dst = the union of n runs made side by side: histograms added, counters
 * summed, load targets summed, duration from the earliest start to the
 * latest end. Exact for every count and histogram. 0, or -1 with err. */
int snapshot_merge(struct snapshot *dst, const struct snapshot *const *src, size_t n, char *err, size_t errcap);
/* Runs against different targets or models add up to nothing meaningful:
 * how many of the two (target URL, model) differ among the merged runs'
 * summaries (a merged snapshot's "merged_from"), 0 when none; msg words
 * it ("target_url differs: http://a vs http://b"). */
int snapshot_merge_targets_differ(const struct cJSON *sources, char *msg, size_t cap);
/* snapshot_merge into a dst that is zeroed or holds an earlier parse or
 * merge, whose histograms are reused (see snapshot_reparse). */
int snapshot_remerge(struct snapshot *dst, const struct snapshot *const *src, size_t n, char *err, size_t errcap);

/* Number items for snapshot documents (cJSON's own printing may round
 * the last bits): the shortest text that reads back as exactly d, null
 * when d is not finite; the same for a float; an integer. */
struct cJSON *snapshot_json_number(double d);
struct cJSON *snapshot_json_float(float f);
struct cJSON *snapshot_json_u64(uint64_t v);

struct server_state;
/* Reads a "server" block (as server_to_json wrote it) back into st, for
 * server_print_summary and tables; anything absent stays unknown. */
void snapshot_server_state(const struct cJSON *j, struct server_state *st);

/* Derived figures, the same for live, read and merged snapshots. */
uint64_t snapshot_failed(const struct snapshot *s);
/* Whether the run has prefix-cache figures (a request said how much of
 * its prompt was cached) and session figures (a session ended or a
 * session's turn succeeded): the outputs show their blocks only then. */
bool snapshot_has_cache(const struct snapshot *s);
bool snapshot_has_sessions(const struct snapshot *s);
/* s's histogram x, NULL when it holds no sample. */
const struct hist *snapshot_xhist(const struct snapshot *s, enum stats_xhist x);
double snapshot_rate(uint64_t count, double seconds);

/* The vLLM-style summary block plus TTFB and queue sections, errors and
 * token source, the plan's sections: exactly what a run prints at its end
 * (src/result/text.c). */
void snapshot_print_summary(FILE *out, const struct snapshot *s);

/* ---- writing (snapshot_write.c) ---- */

/* Writes len bytes to path atomically: a temporary file in the same
 * directory, fsync, rename over path, fsync of the directory. With
 * no_clobber, an existing path is never replaced: "-2", "-3"... is put
 * before the ".json" of the name, and the name used is copied back into
 * path (pathcap bytes). 0, or -1 with err; no partial file is ever left at
 * the final name, and the temporary file is removed on failure. */
int snapshot_write_atomic(char *path, size_t pathcap, bool no_clobber, const char *data, size_t len, char *err,
			  size_t errcap);

/* Name for a snapshot taken at wall time `wall` (s): DIR/infertop-
 * YYYYmmdd-HHMMSS.json in UTC ("." when dir is NULL). */
void snapshot_path(char *buf, size_t cap, const char *dir, double wall);

struct snapshot_result {
	bool ok;
	enum snapshot_reason reason;
	char path[1024];            /* written, or the name that was tried */
	char error[256];            /* when !ok: why, errno text included */
	int64_t t_request_ns;       /* asked for (CLOCK_MONOTONIC) */
	int64_t t_done_ns;          /* outcome known */
	int64_t stall_ns;           /* the loop's cost: pipe() and fork() */
};

/* Outcome of a background snapshot, called on the loop. */
typedef void (*snapshot_done_fn)(void *ud, const struct snapshot_result *r);

struct snapshot_writer;

/* Background writer for engine e: SIGUSR1 and --snapshot-every watchers
 * on e->loop (started by snapshot_writer_start), one forked child at a
 * time serialising and writing, so the loop only pays for fork(). Without
 * a callback each outcome is one line on stderr (successes not with -q).
 * The functions below accept a NULL writer and then do nothing
 * (snapshot_request returns -1). NULL on out of memory. */
/* The writer's view of the run: filled in the forked child when a
 * snapshot is taken. */
typedef void (*snapshot_view_fn)(void *ud, struct run_view *v);
struct snapshot_writer *snapshot_writer_new(struct ev_loop *loop, const struct config *cfg, snapshot_view_fn view,
					    void *ud);
/* Waits for a write still in progress (its outcome is reported), frees. */
void snapshot_writer_free(struct snapshot_writer *w);
void snapshot_writer_set_callback(struct snapshot_writer *w, snapshot_done_fn fn, void *ud);
/* --upload: each snapshot written is handed to up (NULL: none). */
struct uploader;
void snapshot_writer_set_uploader(struct snapshot_writer *w, struct uploader *up);
void snapshot_writer_start(struct snapshot_writer *w);
/* Stops the watchers (a write in progress finishes). */
void snapshot_writer_stop(struct snapshot_writer *w);

/* Asks for a snapshot now. Returns 0 when a writer started, 1 when one was
 * still busy (this request then runs as soon as it ends; several such
 * requests make one snapshot), -1 when fork() or pipe() failed (reported
 * through the callback, and the next request tries again). */
int snapshot_request(struct snapshot_writer *w, enum snapshot_reason why);
/* True while a child is writing. */
bool snapshot_busy(const struct snapshot_writer *w);
/* The file the running child writes; NULL when none is running. */
const char *snapshot_writing_path(const struct snapshot_writer *w);
/* The last outcome (ok false, path "" before the first), and how many
 * snapshots were written and failed so far. */
const struct snapshot_result *snapshot_last(const struct snapshot_writer *w);
uint64_t snapshot_written(const struct snapshot_writer *w);
uint64_t snapshot_failures(const struct snapshot_writer *w);

/* A directory the run writes into (--snapshot-dir, serve's --results-dir)
 * must be one we can create files in (a file is made there and removed):
 * 0, or -1 with the reason in err, which names it as "OPTION DIR". */
int snapshot_dir_check(const char *option, const char *dir, char *err, size_t errcap);
/* The same for -o FILE, before anything is sent: FILE is not a directory
 * and its directory takes a new file. 0, or -1 with the reason in err. */
int snapshot_output_check(const char *path, char *err, size_t errcap);
/* At the end of the run (synchronous: nothing is measured any more). The
 * final snapshot goes to -o when given, else to the snapshot directory when
 * snapshots were in use (--snapshot-dir, --snapshot-every, or one taken
 * during the run). When that write fails the result goes to $TMPDIR (else
 * /tmp) under the same name, never over an existing file, and `log` says
 * where. Messages on `log` (successes not with -q). 0, or -1 if the file
 * could not be written where asked (even when saved in the fallback). */
int snapshot_write_final(const struct run_view *v, const struct snapshot_writer *w, FILE *log);
/* snapshot_write_final, also copying into where (wherecap bytes) the file
 * actually written: the one asked for, the fallback, or "" when none. */
int snapshot_write_final_at(const struct run_view *v, const struct snapshot_writer *w, FILE *log, char *where,
			    size_t wherecap);

#endif
