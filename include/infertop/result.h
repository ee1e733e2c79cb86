#ifndef INFERTOP_RESULT_H
#define INFERTOP_RESULT_H

/*
 * The result layer: struct snapshot (snapshot.h) is the one model of a
 * run, live or read from a file; one module per output format renders it
 * and only reads it:
 *
 *   src/result/json_write.c  JSON: snapshot files and -o (snapshot_to_json),
 *                            the server block, `report`/`compare --format json`
 *   src/result/text.c        text: the end-of-run summary, `report`,
 *                            `compare`, the plan's goodput / models / steps /
 *                            matrix tables, the server lines
 *   src/result/csv.c         `report`/`compare --format csv`
 *   src/result/markdown.c    `report`/`compare --format markdown`
 *   src/result/html.c        `report`/`compare --format html`, --html: one
 *                            page, its charts drawn by svg.c (svg.h)
 *
 * The JSON reader (snapshot_read.c) and the writer name enum values with
 * the same tables (src/result/keys.c), each used both ways. The model's
 * own (release, derived figures) is model.c; merging runs merge.c (in
 * snapshot.h); comparing two compare.c (below).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "infertop/stats.h"

struct cJSON;
struct hist;
struct snapshot;
struct config;
struct load;
struct series;

/* ---- key tables (keys.c): {enum value, JSON key}, ended by {-1, NULL} ---- */

struct result_key {
	int id;
	const char *key;
};

extern const struct result_key result_keys_reason[];     /* enum snapshot_reason */
extern const struct result_key result_keys_gauge[];      /* enum server_gauge */
extern const struct result_key result_keys_latency[];    /* enum server_latency */
extern const struct result_key result_keys_plan_kind[];  /* enum plan_kind */
extern const struct result_key result_keys_load_mode[];  /* enum load_mode */

/* The key of id, or dflt when the table has none. */
const char *result_key_name(const struct result_key *t, int id, const char *dflt);
/* The id of key, or -1. */
int result_key_id(const struct result_key *t, const char *key);

/* ---- derived figures, shared by the renderers ---- */

/* One histogram in milliseconds. */
#define RESULT_NSTAT 9
struct result_mstat {
	uint64_t count;
	double v[RESULT_NSTAT]; /* mean std min p50 p90 p95 p99 p99.9 max */
};
extern const char *const result_mstat_keys[RESULT_NSTAT]; /* "mean_ms", ... */
extern const char *const result_mstat_heads[RESULT_NSTAT]; /* "mean", ... */
void result_mstat_of(const struct hist *h, struct result_mstat *m);

/* `infertop compare`: one row per figure, A and B. */
struct result_crow {
	char name[48];
	char key[48];  /* vLLM's name, for --fail-if: p99_ttft_ms, output_throughput */
	char unit[12];
	int prec; /* decimals in text, markdown */
	int better; /* +1: higher is better, -1: lower is, 0: neither */
	double a, b;
	/* The run-to-run noise: where each side's figure would likely fall
	 * on a rerun (about 95 %, compare.c's compare_noise); NaN: unknown. A
	 * change whose intervals overlap is "same". */
	double lo_a, hi_a, lo_b, hi_b;
};
/* ... and, when a run has them, the cache's hit rate and TTFT p50 warm
 * and cold, TTFT p50 by turn and the sessions that failed. */
#define RESULT_MAX_CROWS (9 + 3 + STAT_NMETRICS * 5 + 3 + STATS_TURNS + 1)
struct result_compare {
	const char *file_a, *file_b;
	/* The runs themselves (borrowed): the HTML page overlays their
	 * series. */
	const struct snapshot *a, *b;
	int n;
	struct result_crow rows[RESULT_MAX_CROWS];
	/* Options that differ: {"name": {"a": value, "b": value}}; owned,
	 * NULL when none differ (or out of memory). */
	struct cJSON *options_diff;
	/* --metadata tags that differ, the same shape; NULL when none do. */
	struct cJSON *metadata_diff;
};
/* src/result/compare.c: the rows of a against b, and the options that
 * differ. */
void result_compare_build(struct result_compare *c, const struct snapshot *a, const struct snapshot *b,
			  const char *file_a, const char *file_b);
/* Frees what result_compare_build allocated. */
void result_compare_release(struct result_compare *c);
/* (B - A) in percent of |A|; NaN when A is 0. */
double result_crow_delta_pct(const struct result_crow *r);
/* "better", "worse", "same", or "" (no direction, or no change known).
 * A change under the practical floor (5 % or 1 ms on a latency by
 * default; result_compare_set_min_change) is "same". */
const char *result_crow_verdict(const struct result_crow *r);
/* compare --min-change: "5%,1ms", "10%", "2ms", "0" (no floor). 0, or -1
 * when v is none of those (the floor unchanged). */
int result_compare_set_min_change(const char *v);
/* The last line of a comparison, from the verdicts of the headline rows
 * (throughputs, error share, TTFT, ITL, E2E p50 and p99): "B is better:
 * ttft p50 -12.0%, ..." / "B is worse: ..." / "mixed: B is better on
 * ...; worse on ..." / "no significant difference (...)". */
void result_compare_verdict(const struct result_compare *c, char *buf, size_t cap);
/* The row with this key, NULL if none. */
const struct result_crow *result_compare_find(const struct result_compare *c, const char *key);

/* The time series are kept (and saved) at 1 s for the last hour, at 10 s
 * for the last day, at 1 min past that. */
#define RESULT_SERIES_FINE_S 3600
#define RESULT_SERIES_MID_S 86400

/* ---- JSON (json_write.c) ---- */

/* Parts of a live snapshot that are carried as JSON: the options as given
 * (credentials never), the load changes, the time series. NULL on OOM. */
struct cJSON *result_json_options(const struct config *c, const char *model);
/* The key of the options block that echoes option `option` (a long name
 * of the option table, without "--"), NULL when none does. */
const char *result_option_key(const char *option);
struct cJSON *result_json_load_changes(const struct load *l, int64_t t_start);
struct cJSON *result_json_series(const struct series *ser, int64_t t_start, int64_t elapsed_ns);
/* Each replica's own series (the run's sub-series, see series_sub())
 * as "series" of its object in server's "replicas", written as
 * result_json_series writes the run's; a replica never sampled has none.
 * 0, or -1 on out of memory. */
int result_json_replica_series(struct cJSON *server, const struct series *ser, int64_t t_start,
			       int64_t elapsed_ns);

/* ---- series of a file (series_merge.c) ---- */

/* Series `key` of a result's "series" as points: x in s since the run's
 * start, each stretch of the run at the finest resolution kept (the
 * coarse levels for the time before the finer ones begin). *x, *v
 * malloc'd; returns the count (0: none, or out of memory). */
size_t result_series_points(const struct cJSON *ser, const char *key, double **x, double **v);
/* The series of n runs made side by side on one time axis: windows of
 * the wall clock, start_s counted from start_unix (the merge's start);
 * rates, counts and in-flight summed, percentiles the max of the inputs'
 * (an upper bound: the series keeps no histograms), the server's figures
 * the mean of the inputs' scrapes when same_target (one server), else
 * summed (running, waiting, GPU power) or averaged. "merge": {"inputs",
 * "how": {key: "sum"|"max"|"mean"}} says which. *out NULL when no input
 * has a series. 0, or -1 on out of memory. */
int result_merge_series(struct cJSON **out, const struct snapshot *const *src, size_t n, double start_unix,
			bool same_target);
/* A merge's summary of one input (its "merged_from" entry). */
struct cJSON *result_json_source(const struct snapshot *s);
/* The plan's keys ("plan", "steps", "matrix", "slo", "models") added to o. */
void result_json_plan(struct cJSON *o, const struct snapshot *s);

/* ---- text (text.c) ---- */

/* The options that differ, one "PREFIXname: A -> B" line each, into buf;
 * returns how many (0: the same). */
int result_text_options_diff(char *buf, size_t cap, const struct result_compare *c, const char *prefix);
/* The same for the --metadata tags that differ. */
int result_text_metadata_diff(char *buf, size_t cap, const struct result_compare *c, const char *prefix);
/* Shared by the text and Markdown tables: "2026-01-31 12:00:00 UTC" ("-"
 * when unknown), s or "-", the load as set ("concurrency 8", "rate 20
 * req/s, cap 64 in flight"). */
void result_text_utc(char *buf, size_t cap, double unix_s);
const char *result_text_or_dash(const char *s);
/* A --metadata value as text: a string as it is, anything else as JSON. */
const char *result_text_meta_value(const struct cJSON *v, char *buf, size_t cap);
/* The run's tags and the vLLM arguments it ignored, a line each (text
 * report and summary); nothing when there are none. */
void result_text_metadata(FILE *out, const struct snapshot *s);
void result_text_load(char *buf, size_t cap, const struct snapshot *s);
/* A change in percent as the tables show it: "+12.5%", "-" for NaN. */
void result_text_pct(char *buf, size_t cap, double p);
/* The plan's end-of-run sections (goodput, models, steps or matrix, the
 * plan's note); the text an older file saved when it has no plan data. */
void result_text_plan(FILE *out, const struct snapshot *s);

/* ---- the formats of `report` and `compare --format` ---- */

/* One row a format: its name, another name it answers to (NULL: none),
 * what `report --help` says of it (NULL: nothing), how it renders a run
 * (`report`) and two runs (`compare`). The first row is the default.
 * tools.c makes the --help lists, the --format parser and the dispatch
 * from these rows: a new format is a row here, its two renderers declared
 * below, and the module that writes them. */
#define RESULT_FORMATS(X)                                                                                    \
	X("text", NULL, NULL, result_text_report, result_text_compare)                                       \
	X("json", NULL, NULL, result_json_report, result_json_compare)                                       \
	X("csv", NULL, "the latency table, one row per scope and metric", result_csv_report, result_csv_compare) \
	X("markdown", "md", NULL, result_md_report, result_md_compare)                                       \
	X("html", NULL, "one self-contained page with charts; use -o", result_html_report, result_html_compare)

/* A renderer writes on out: 0, or -1 on out of memory. file is the name
 * the run was read from. */
int result_text_report(FILE *out, const char *file, const struct snapshot *s);
int result_text_compare(FILE *out, const struct result_compare *c);
int result_json_report(FILE *out, const char *file, const struct snapshot *s);
int result_json_compare(FILE *out, const struct result_compare *c);
int result_csv_report(FILE *out, const char *file, const struct snapshot *s);
int result_csv_compare(FILE *out, const struct result_compare *c);
int result_md_report(FILE *out, const char *file, const struct snapshot *s);
int result_md_compare(FILE *out, const struct result_compare *c);
int result_html_report(FILE *out, const char *file, const struct snapshot *s);
int result_html_compare(FILE *out, const struct result_compare *c);

#endif
