#ifndef INFERTOP_PROFILE_H
#define INFERTOP_PROFILE_H

/* Server metric maps (doc/metrics.md section 2): which Prometheus names each
 * inference server uses for the canonical values of struct server_state,
 * how several engines / ranks combine, and what is derived from counter
 * and histogram deltas between scrapes. Pure: no I/O; the scraper hands in
 * response bodies and timestamps. DCGM (GPU) parsing lives here too. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/prom.h"
#include "infertop/server.h"

/* PROFILE_VLLM, PROFILE_SGLANG, ...: one per line of servers.def. */
enum profile_id {
#define SERVER(id, name, path, help) PROFILE_##id,
#include "infertop/servers.def"
	PROFILE_COUNT
};
#define PROFILE_AUTO (-1)	/* detect from the names */
#define PROFILE_NONE (-1)	/* nothing detected (yet) */

#define PROFILE_URL_MAX 512
#define PROFILE_MAX_CANDIDATES 4

/* "vllm", ... ; "auto" for PROFILE_AUTO; "unknown" for anything else. */
const char *profile_name(int id);
/* "auto" gives PROFILE_AUTO. 0, or -1 for an unknown name. */
int profile_parse(const char *name, int *id);
/* The path a server serves its metrics on ("/metrics", "/v1/metrics", ...). */
const char *profile_metrics_path(int id);
/* The server's name in prose ("vLLM", "llama.cpp", ...); NULL if none. */
const char *profile_help(int id);

/* Metrics URLs to try, in order, for a target base URL (scheme://host:port
 * plus an optional path prefix). A given profile yields one URL: the base
 * plus its path, except Triton, whose metrics are on port 8002 at /metrics
 * whatever port and prefix the API has. PROFILE_AUTO yields /metrics,
 * /prometheus/metrics, /v1/metrics and then Triton's :8002/metrics.
 * Returns the number of URLs written (<= cap), or -1 if base is not an
 * http(s) URL or a URL would not fit. */
int profile_default_urls(int id, const char *base, char urls[][PROFILE_URL_MAX], int cap);

/* The Prometheus series names holding want's metrics (every profile's for
 * PROFILE_AUTO), each once: gauge and counter names, a histogram's
 * _bucket, _sum and _count. For the query of --metrics-prometheus. */
void profile_series_names(int want, void (*fn)(void *ud, const char *name), void *ud);

/* --watch-metric EXPR: `name` or `name{label="value",...}` (values in
 * double quotes with \\ \" \n escapes, only `=` matchers, trailing comma
 * allowed). An empty value matches an absent label, as in PromQL. */
#define PROFILE_WATCH_MATCHERS 8
struct profile_watch_expr {
	char name[128];
	int nm;
	struct {
		char k[64];
		char v[128];	/* unescaped */
	} m[PROFILE_WATCH_MATCHERS];
};
/* 0, or -1 with a message (without the expression) in err. */
int profile_watch_parse(const char *expr, struct profile_watch_expr *out, char *err, size_t errcap);

/* Raw per-scrape quantities before deltas. */
enum profile_slot {
	PSLOT_RUNNING,
	PSLOT_WAITING,
	PSLOT_KV,		/* usage 0..1 per engine */
	PSLOT_KV_USED,		/* blocks used, when only used/max exist */
	PSLOT_KV_TOTAL,
	PSLOT_PREEMPT,		/* counter */
	PSLOT_PREFIX_HITS,	/* counter, tokens */
	PSLOT_PREFIX_QUERIES,	/* counter, tokens */
	PSLOT_PREFIX_RATE,	/* gauge 0..1 */
	PSLOT_PROMPT,		/* counter, tokens */
	PSLOT_GEN,		/* counter, tokens */
	PSLOT_QUEUE_SUM,	/* counter, seconds spent queued (Triton) */
	PSLOT_E2E_SUM,		/* counter, seconds of request duration (Triton) */
	PSLOT_REQ_COUNT,	/* counter, requests those two cover (Triton) */
	PSLOT_COUNT
};

struct profile_value {
	double v;	/* sum over engines (counts, counters) or mean (ratios) */
	double max;	/* max over engines */
	int engines;	/* distinct engines seen (tp/pp rank replicas are one) */
	bool valid;
};

struct profile_raw {
	int profile;			/* the map used: given or detected; PROFILE_NONE */
	int score[PROFILE_COUNT];	/* how many of each profile's names were present */
	struct profile_value slot[PSLOT_COUNT];
	struct prom_hist hist[SRVL_N];	/* seconds, summed over engines */
	bool hist_valid[SRVL_N];
	double watch[SERVER_MAX_WATCH];	/* prom_sum() semantics */
	bool watch_valid[SERVER_MAX_WATCH];
	bool watch_counter[SERVER_MAX_WATCH];
	int nsamples;
	struct prom_error perr;		/* malformed lines skipped */
};

struct profile_tracker;

/* want: a profile or PROFILE_AUTO. watch: nwatch expressions (at most
 * SERVER_MAX_WATCH). window_ns: the span of window figures (rates,
 * server-side percentiles), the same as the client's sliding window;
 * interval_ns: the scrape period (a window shorter than two periods is
 * widened so a baseline exists). NULL with a message in err on a bad watch
 * expression or no memory. The only allocation is here. */
struct profile_tracker *profile_tracker_new(int want, const char *const *watch, size_t nwatch,
					    int64_t window_ns, int64_t interval_ns, char *err,
					    size_t errcap);
void profile_tracker_free(struct profile_tracker *t);

/* One pass over a body: canonical raw values of the profile in use. Fills
 * t's raw result and returns it; NULL if the text holds no sample at all
 * (err then says why: parse error with its line, or empty). Does not touch
 * the history. */
const struct profile_raw *profile_extract(struct profile_tracker *t, const char *text, size_t len,
					  unsigned prom_flags, char *err, size_t errcap);

/* profile_extract() plus the history: updates out's gauges, run
 * aggregates, window and run percentiles, rates, watch values, detected
 * and note. 0, or -1 with err set and out untouched. No allocation. */
int profile_tracker_update(struct profile_tracker *t, const char *text, size_t len, unsigned prom_flags,
			   int64_t now_ns, struct server_state *out, char *err, size_t errcap);

/* The history half of profile_tracker_update(), from a raw reading (one
 * profile_extract() or replicas summed with profile_raw_add()). */
void profile_tracker_apply(struct profile_tracker *t, const struct profile_raw *r, int64_t now_ns,
			   struct server_state *out);

/* Server replicas. After a successful update of t (one replica's tracker):
 * its latest reading in a form that sums exactly across replicas: counters
 * as their increase since t first saw them (restarts handled by t) and
 * histograms as their buckets' increase since then. */
void profile_tracker_summable(const struct profile_tracker *t, struct profile_raw *out);
/* acc += r (*nadded counts the calls; 0 starts acc afresh). Counters and
 * histograms of every replica ever read; gauges only when live (read
 * now): running/waiting summed, KV usage and prefix rate as the mean over
 * replicas (max: the max). Histograms with other buckets make the sum
 * unknown. Call profile_raw_finish() after the last one. */
void profile_raw_add(struct profile_raw *acc, int *nadded, const struct profile_raw *r, bool live);
void profile_raw_finish(struct profile_raw *acc);

/* The profile in use: the given one, or the detected one (PROFILE_NONE
 * until something was detected). */
int profile_tracker_profile(const struct profile_tracker *t);

/* Marks every live value (gauges, window percentiles, watch values)
 * unknown, keeping run aggregates and run figures: the endpoint is down. */
void profile_invalidate_live(struct server_state *out);

/* ---- DCGM exporter ---- */

struct gpu_reading {
	int ngpus;
	double power_w;		/* summed over GPUs */
	bool power_valid;
	double energy_j;	/* summed DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION */
	bool energy_valid;	/* every GPU reported it */
};

/* Fills out->gpu[], ngpus and power_total_w from a DCGM exporter body
 * (GPUs keyed by the gpu/UUID/Hostname labels, in order of appearance).
 * Returns the number of GPUs, or -1 with err set when there is none. */
int gpu_parse_dcgm(const char *text, size_t len, unsigned prom_flags, struct server_state *out,
		   struct gpu_reading *rd, char *err, size_t errcap);

/* Per-GPU history for the GPU view's charts: one point per GPU scrape,
 * the last GPU_HIST_POINTS of them (an hour at the default 1 s), fixed
 * memory however long the run. */
#define GPU_HIST_POINTS 3600
enum gpu_hist_metric { GPU_HIST_UTIL, GPU_HIST_MEM, GPU_HIST_POWER, GPU_HIST_N };
struct gpu_history {
	int64_t t[GPU_HIST_POINTS];
	/* util %, memory used fraction 0..1, power W; NaN: not reported */
	float v[GPU_HIST_N][SERVER_MAX_GPUS][GPU_HIST_POINTS];
	int head, n;     /* ring: the oldest point at (head - n) mod size */
};
/* One point from the GPUs just parsed into s. */
void gpu_history_push(struct gpu_history *h, int64_t t_ns, const struct server_state *s);
/* Resamples one GPU's metric over (to - span, to] into n points, oldest
 * first: a point's value holds until the next one (within 5 s), NaN
 * elsewhere; returns how many scrapes held data. */
size_t gpu_history_read(const struct gpu_history *h, int gpu, enum gpu_hist_metric m, int64_t to_ns,
			int64_t span_ns, double *out, size_t n);
/* Times held: the oldest and newest point; -1 when empty. */
int gpu_history_extent(const struct gpu_history *h, int64_t *first_ns, int64_t *last_ns);

/* Power history for energy per token. */
#define GPU_RING 256
struct gpu_power_ring {
	struct {
		int64_t t;
		double power_w, energy_j;
		bool power_valid, energy_valid;
	} e[GPU_RING];
	int head, n;
};

void gpu_ring_push(struct gpu_power_ring *r, int64_t t_ns, const struct gpu_reading *rd);
/* Mean power (W) over (now - span, now]: from the energy counter's
 * increase when every reading in the span has one and it did not go down,
 * else the mean of the power readings in the span. false if no reading
 * falls in the span. */
bool gpu_ring_mean_power(const struct gpu_power_ring *r, int64_t now_ns, int64_t span_ns, double *watts);
/* Joules per output token over a window: mean power x window seconds /
 * tokens. false when tokens or the window are 0. */
bool gpu_joules_per_token(double watts, double window_s, uint64_t tokens, double *jpt);

#endif
