#ifndef INFERTOP_ENGINE_INTERNAL_H
#define INFERTOP_ENGINE_INTERNAL_H

/* The engine's own state. Only the engine's files (engine.c, command.c),
 * the composition of a run in tests and benches read this; everything else
 * reads a struct run_view (view.h) and acts through command.h. */

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "infertop/options.h"
#include "infertop/engine.h"
#include "infertop/load.h"
#include "infertop/openai.h"
#include "infertop/plan.h"
#include "infertop/request.h"
#include "infertop/rng.h"
#include "infertop/sampler.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/stats.h"
#include "infertop/view.h"

struct dataset;
struct trace_replay;
struct sessions;
struct reqlog;
struct reqtrack;
struct scrape;
struct snapshot_writer;

struct engine {
	const struct config *cfg;
	struct ev_loop *loop;
	struct http *http;
	struct probe *probe;        /* engine_probe_start's, while it goes on */
	struct stats *stats;
	struct series *series;      /* one point per second, for the charts */
	struct sampler sampler;     /* what turns the run into series points */
	/* Server metrics: NULL when --metrics-url none and no GPU exporter. */
	struct server_state *server;
	struct scrape *scrape;
	struct snapshot_writer *snap;   /* s key, SIGUSR1, --snapshot-every */
	struct reqlog *reqlog;          /* --request-log; NULL when off */
	struct load load;
	struct plan *plan;          /* stages, sweeps, warmup, SLOs, models */
	struct request_ctx rctx;
	struct request *live;       /* in-flight requests */
	struct reqtrack *rt;        /* the requests view's lists (reads live) */
	struct request *spare;      /* finished, ready for reuse */
	uint64_t pool_size;
	long cache_size;            /* connections curl keeps for reuse */

	char *endpoint;
	char run_id[33];               /* one per run: merge refuses the same run twice */
	char *model;
	struct curl_slist *headers;
	char **secrets;                /* key, URL password and query values: scrubbed
	                                * from whatever a server echoes (redact.h) */
	struct oai_request_opts ropts;
	struct cJSON *extra_body;
	struct rng prompt_rng;
	struct dataset *dataset;    /* prompt source, see dataset.h */
	struct trace_replay *trace; /* --trace: the schedule and its requests; NULL: none */
	struct sessions *sessions;  /* --sessions: the load starts sessions; NULL: none */

	bool hung_up;                   /* SIGHUP: the terminal is gone */
	ev_timer tick, grace, duration;
	ev_timer retry;             /* refill after connection failures */
	int64_t backoff_ns;         /* 0 while the server accepts connections */
	int backoff_code;           /* why: 0 refused connections, else 429/503 */
	uint64_t jitter;            /* backoff jitter state */
	int interrupts;
	enum engine_state state;
	int64_t t_start;
	int64_t t_stop;             /* when sending stopped */
	int64_t t_end;
	const char *stop_reason;

	engine_tick_fn on_tick;
	void *on_tick_ud;
	engine_done_fn on_done;
	void *on_done_ud;
	bool running_loop;     /* inside engine_run's ev_run: the end breaks it */
	struct cmd_record last_cmd;  /* what the last command did, and who sent it */
};


/* --sessions: the load was unpaused; sessions that finished thinking
 * while it was paused send their next turns (engine_cmd.c). */
void engine_sessions_release(struct engine *e);

#endif
