#ifndef INFERTOP_PLAN_H
#define INFERTOP_PLAN_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "infertop/dist.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/rng.h"
#include "infertop/slo.h"
#include "infertop/stats.h"

struct config;

/* Workload plans: what load runs when, and what is measured.
 *
 *   warmup  ->  steps (stages, a sweep, or the scenario matrix)  ->  cooldown
 *
 * Warmup runs the first step's load (or -c / -r) for --warmup TIME or until
 * N requests have ended, then the stats start afresh. Cooldown keeps the
 * last load for --cooldown TIME with the whole-run figures frozen. Stages
 * follow each other without a break (a request counts in the stage it ends
 * in); sweep and matrix steps are isolated: at the end of a step no new
 * request starts, the step ends when the last in-flight one has, and the
 * next step starts on an idle server. Every step gets its own figures
 * (the run histograms minus a copy taken at the step start: exact, and
 * memory stays fixed however long the step).
 *
 * A load change by the user (keys) during a plan takes over: the plan's
 * clock stops ("manual") until plan_resume(), which puts the plan's load
 * back and goes on where it stopped. A user pause holds the clock too and
 * unpausing goes on. Both are in the timeline, and the held time is in the
 * step's result. */

/* OCI's scenario presets (input / output tokens). */
enum plan_scenario { PLAN_SCEN_CHATBOT, PLAN_SCEN_GENERATION, PLAN_SCEN_SUMMARIZATION, PLAN_SCEN_LONG, PLAN_SCEN_N };

struct plan_scenario_def {
	const char *name;
	long input_tokens;
	long output_tokens;
};

/* NULL outside 0..PLAN_SCEN_N-1. */
const struct plan_scenario_def *plan_scenario_def(int i);
/* Index of "chatbot", ... or -1. */
int plan_scenario_find(const char *name);

enum plan_kind { PLAN_NONE, PLAN_STAGES, PLAN_SWEEP, PLAN_MATRIX };

enum plan_role {
	PLAN_ROLE_FIXED,        /* its target is given */
	PLAN_ROLE_SYNC,         /* rate=auto: one user, measures the synchronous rate */
	PLAN_ROLE_THROUGHPUT,   /* rate=auto: many users, measures the top rate */
	PLAN_ROLE_AUTO_RATE,    /* rate=auto: a rate set from the two above */
};

#define PLAN_STEPS_MAX 1000
#define PLAN_LABEL_MAX 48
/* rate=auto: the default number of constant-rate steps (as GuideLLM's
 * sweep: synchronous, throughput, then 8 rates). */
#define PLAN_AUTO_RATES 8
/* rate=auto: the throughput step saturates the server, as GuideLLM's does:
 * open loop at PLAN_SATURATE_FACTOR x the rate its in-flight cap could
 * carry at the synchronous step's latency (latency only grows with load,
 * so well above what the server can serve), capped at --max-concurrency
 * in flight, by default PLAN_SATURATE_CAP or the descriptor limit's
 * share (cmd_concurrency_limit), whichever is lower: room enough to see
 * the server's own limit. */
#define PLAN_SATURATE_FACTOR 2
#define PLAN_SATURATE_CAP 1024

struct plan_step {
	char label[PLAN_LABEL_MAX];
	enum load_mode mode;
	double from, to;        /* target at the start and at the end: a ramp when they differ */
	int64_t duration_ns;
	int scenario;           /* lengths preset, -1: --input-tokens / --output-tokens */
	enum plan_role role;
	int auto_k, auto_n;     /* PLAN_ROLE_AUTO_RATE: k-th of n rates */
	bool drain;             /* isolated: hold at the end until in-flight requests finish */
};

/* Everything the options say about the plan, validated. */
struct plan_spec {
	enum plan_kind kind;
	struct plan_step *steps;
	size_t nsteps;
	int scenario;               /* --scenario, -1 none */
	enum load_arrival arrival;
	bool arrival_given;         /* --arrival or --burstiness given */
	double shape;               /* gamma shape (--burstiness) */
	int64_t warmup_ns;          /* 0: none or by count */
	uint64_t warmup_requests;   /* 0: none or by time */
	int64_t cooldown_ns;
	int64_t main_ns;            /* no steps: measured time after warmup (-d); 0 = open-ended */
	/* --stage-requests: a step ends once this many requests ended in it
	 * (completed or failed); an isolated step sends exactly this many.
	 * 0: steps end by time. */
	uint64_t stage_requests;
	long max_concurrency;       /* --max-concurrency, 0 = none (open-loop steps) */
	long saturate_cap;          /* rate=auto's throughput step: in-flight cap */
	enum load_mode base_mode;   /* -c / -r */
	double base_value;
	long peak_concurrency;      /* most users any step asks for (descriptor check) */
};

/* Parses and cross-checks --stages, --sweep, --stage-duration, --matrix,
 * --scenario, --warmup, --cooldown, --arrival, --burstiness (and -d, -c,
 * -r). 0, or -1 with a message naming the option in err. */
int plan_spec_parse(const struct config *cfg, struct plan_spec *out, char *err, size_t cap);
void plan_spec_free(struct plan_spec *s);
/* rate=auto: sets the targets and labels of the AUTO_RATE steps from the
 * measured synchronous and throughput rates (req/s), evenly spaced:
 * rate_k = sync + (top - sync) * k / n. Returns how many were set. */
size_t plan_spec_auto_rates(struct plan_spec *s, double sync_rate, double top_rate);
/* rate=auto: sets the throughput step's rate from the synchronous rate
 * (req/s; 0 when it completed nothing), PLAN_SATURATE_FACTOR x the rate
 * saturate_cap requests in flight carry at that latency. */
void plan_spec_saturate_rate(struct plan_spec *s, double sync_rate);

/* ---- Multi-model traffic (src/engine/models.c) ---------------------------- */

#define MODELS_MAX 64

/* Per-model figures: counters, goodput counts and three histograms (TTFT,
 * TPOT, E2E): about 0.55 MiB a model, against ~18 MiB (virtual) for a
 * whole struct stats, and ITL is recorded by the request itself straight
 * into the run's stats, so a per-model ITL would need the request to know
 * its model. TPOT (per request) covers the decode speed per model. */
struct model_stats {
	char *name;
	double share;               /* configured, normalised to sum 1 */
	uint64_t picked;            /* requests sent to it */
	uint64_t completed, failed;
	uint64_t input_tokens, output_tokens;
	struct slo_counts slo;
	struct hist *ttft, *tpot, *e2e;
};

struct models {
	size_t n;
	struct model_stats m[MODELS_MAX];
	double cum[MODELS_MAX];     /* cumulative shares, cum[n-1] == 1 */
	struct rng rng;
	bool frozen;                /* cooldown: figures stop, picks go on */
};

/* --models "a,b" and --traffic-split "0.9,0.1" (weights, normalised; even
 * when split is NULL). models NULL: *out = NULL, returns 0. 0, or -1 with
 * a message in err. */
int models_new(const char *models, const char *split, uint64_t seed, struct models **out, char *err,
	       size_t cap);
void models_free(struct models *m);
/* Index of the model for the next request, drawn by the split. */
size_t models_pick(struct models *m);
/* One finished request of model idx; slo_bits from slo_check (NULL slo:
 * none given). */
void models_record(struct models *m, size_t idx, const struct req_result *r, const struct slo *slo,
		   unsigned slo_bits);
void models_reset(struct models *m);
void models_freeze(struct models *m);

/* ---- The running plan --------------------------------------------- */

enum plan_phase { PLAN_IDLE, PLAN_WARMUP, PLAN_RUN, PLAN_DRAIN, PLAN_COOLDOWN, PLAN_DONE };

struct plan_metric {
	uint64_t count;
	double mean_ms, p50_ms, p90_ms, p99_ms;
};

/* One step's figures, fixed when the step ends. Times since the plan
 * started. */
struct plan_step_result {
	int index;
	char label[PLAN_LABEL_MAX];
	int scenario;
	enum load_mode mode;
	double target_from, target_to;
	enum load_arrival arrival;
	double t_start_s, t_end_s, duration_s;
	double held_s;              /* plan clock held: manual control or pause */
	bool partial;               /* cut short by the end of the run */
	uint64_t started, completed, failed;
	/* Sent, not finished when the step ended: still in flight then, or
	 * cut by the run's end during the step (they are neither completed
	 * nor failed; one still in flight may finish in the next step). */
	uint64_t incomplete;
	uint64_t unsent;            /* open loop: arrivals still queued at the step end */
	uint64_t input_tokens, output_tokens;
	/* Per completed request: prompt and output tokens (0 without one). */
	double mean_input_tokens, mean_output_tokens;
	double request_throughput, output_throughput, total_token_throughput;
	double mean_concurrency;    /* in-flight requests, sampled every 100 ms */
	uint64_t max_concurrency;   /* most in flight at once during the step */
	struct slo_counts slo;
	double request_goodput;
	struct plan_metric ttft, tpot, itl, e2e;
};

enum plan_event_kind {
	PLAN_EV_START,
	PLAN_EV_WARMUP_END,
	PLAN_EV_STEP,
	PLAN_EV_STEP_END,      /* load held, in-flight requests finishing */
	PLAN_EV_MANUAL,
	PLAN_EV_RESUME,
	PLAN_EV_PAUSE,
	PLAN_EV_UNPAUSE,
	PLAN_EV_COOLDOWN,
	PLAN_EV_DONE,
};

struct plan_event {
	int64_t t_ns;
	enum plan_event_kind kind;
	int step;                   /* -1: none */
	enum load_mode mode;        /* the load after the event */
	double value;
};

#define PLAN_TIMELINE 512

struct plan;
typedef void (*plan_end_fn)(void *ud);

/* Builds the plan, the SLOs and the models from cfg; nothing runs yet.
 * 0, or -1 with a message for the user in err (exit status 2). */
int plan_new(const struct config *cfg, struct plan **out, char *err, size_t cap);
void plan_free(struct plan *p);

/* Sets the first load (the first step's, or -c / -r), starts the plan's
 * timers on loop and listens to the load's user changes. on_end is called
 * once when the plan is over (after the cooldown); the caller stops the
 * run then. */
void plan_start(struct plan *p, struct ev_loop *loop, struct load *l, struct stats *s, plan_end_fn on_end,
		void *ud);
/* The run ended (for any reason): a step still open is closed as partial,
 * timers stop. Safe to call more than once. */
void plan_finish(struct plan *p, int64_t now_ns);
/* A request ended (after the stats took it): SLO check, per-model figures,
 * warmup count, end of a draining step. model_idx from plan_pick_model. */
void plan_request_done(struct plan *p, int model_idx, const struct req_result *res, int64_t now_ns);

/* Per request: the current lengths (a scenario's, else dflt) ... */
const struct dist *plan_input_dist(const struct plan *p, const struct dist *dflt);
const struct dist *plan_output_dist(const struct plan *p, const struct dist *dflt);
/* ... and the model: drawn by --traffic-split (*idx its index), else dflt
 * (*idx = -1). */
const char *plan_pick_model(struct plan *p, const char *dflt, int *idx);

/* No steps, warmup or cooldown with -d: the plan times the run (warmup and
 * cooldown come on top of -d), so the caller must not stop at -d itself. */
bool plan_owns_duration(const struct plan *p);
/* Most users any step asks for (to size descriptors), at least -c. */
long plan_peak_concurrency(const struct plan *p);

/* The dashboard: a load change that did not go through load_set_* (those
 * reach the plan by themselves), and the resume key. Resume returns 0, or
 * -1 when there is nothing to resume. */
void plan_manual_override(struct plan *p, int64_t now_ns);
int plan_resume(struct plan *p, int64_t now_ns);

/* Read side (screen, report, tests). */
enum plan_phase plan_phase(const struct plan *p);
bool plan_is_manual(const struct plan *p);
bool plan_has_steps(const struct plan *p);
/* "warming up", "running", "draining", "cooling down", "done", "manual",
 * "paused" (the last two override the phase); "" for no plan. */
const char *plan_state_name(const struct plan *p);
/* Header text: "step 3/8 c=10, 1m12s left", "warming up, 20 requests
 * left", "manual (r resumes the plan)"; "" when there is no plan. */
void plan_status(const struct plan *p, int64_t now_ns, char *buf, size_t cap);
/* Current step (0-based) and the number of steps; -1 before the first. */
int plan_step_index(const struct plan *p, size_t *nsteps);
const struct plan_spec *plan_get_spec(const struct plan *p);
/* Finished steps, in order; the array grows as steps end (a live table). */
size_t plan_steps(const struct plan *p, const struct plan_step_result **out);
/* The open step's figures so far, refreshed on the plan's tick once a
 * second; NULL when no step is open. */
const struct plan_step_result *plan_live_step(const struct plan *p);
/* Timeline in time order, at most cap entries (the latest PLAN_TIMELINE
 * are kept). Returns how many were written. */
size_t plan_timeline(const struct plan *p, struct plan_event *out, size_t cap);
const char *plan_event_name(enum plan_event_kind k);

const struct slo *plan_slo(const struct plan *p);           /* NULL: no --slo */
const struct models *plan_models(const struct plan *p);     /* NULL: no --models */
/* Whole-run goodput (req/s over run_s, the measured seconds) and the
 * window's (req/s over the SLO window); 0 without --slo. */
double plan_goodput(const struct plan *p, double run_s);
double plan_goodput_window(const struct plan *p, int64_t now_ns);
/* The dashboard's window reset (z): the SLO window empties with the stats'. */
void plan_window_reset(struct plan *p, int64_t now_ns);
/* Measured span: from the warmup end (or run_start) to the cooldown start
 * (or run_end), in seconds. */
double plan_measured_seconds(const struct plan *p, int64_t run_start_ns, int64_t run_end_ns);

/* What the result layer reads besides the accessors above: rate=auto's
 * measured rates (0 before they are known), the plan's note ("" none), the
 * plan clock's origin (timeline t_ns are since it) and how many timeline
 * events were dropped (the latest PLAN_TIMELINE are kept). The plan's
 * results are rendered by the result layer (src/result/): text.c and
 * json_write.c, from struct snapshot. */
struct plan_result_info {
	double sync_rate, top_rate;
	const char *note;
	int64_t t0;
	uint64_t timeline_dropped;
};
void plan_result_info(const struct plan *p, struct plan_result_info *out);

#endif
