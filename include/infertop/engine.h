#ifndef INFERTOP_ENGINE_H
#define INFERTOP_ENGINE_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "infertop/cli.h"
#include "infertop/load.h"
#include "infertop/openai.h"
#include "infertop/plan.h"
#include "infertop/request.h"
#include "infertop/rng.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/stats.h"

/* One run: owns the HTTP glue, the request pool, the load controller and
 * the stats, all on the caller's libev loop. */
enum engine_state { ENGINE_IDLE, ENGINE_RUNNING, ENGINE_DRAINING, ENGINE_DONE };

struct engine;
struct dataset;
struct reqlog;
struct scrape;
struct snapshot_writer;
/* Called on every engine tick (4 Hz) and once more at the end: the headless
 * reporter, the dashboard and tests hang off this. */
typedef void (*engine_tick_fn)(struct engine *e, void *ud, int64_t now_ns);

struct engine {
	const struct config *cfg;
	struct ev_loop *loop;
	struct http *http;
	struct stats *stats;
	struct series *series;      /* one point per second, for the charts */
	/* Server metrics: NULL when --metrics-url none and no GPU exporter. */
	struct server_state *server;
	struct scrape *scrape;
	struct snapshot_writer *snap;   /* s key, SIGUSR1, --snapshot-every */
	struct reqlog *reqlog;          /* --request-log; NULL when off */
	struct load load;
	struct plan *plan;          /* stages, sweeps, warmup, SLOs, models */
	struct request_ctx rctx;
	struct request *live;       /* in-flight requests */
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

	ev_signal sigint, sigterm, sighup;
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
};

/* Builds everything from cfg; errors are written to err. */
struct engine *engine_new(const struct config *cfg, struct ev_loop *loop, char *err, size_t errcap);
void engine_free(struct engine *e);

/* Before the run: checks the server answers and picks the model (GET
 * /v1/models, blocking, bounded by 10 s: nothing is being measured yet).
 * Returns 0, or -1 with a message for the user in err. */
int engine_probe(struct engine *e, char *err, size_t errcap);

/* Starts the load and runs the loop until the run is over. */
void engine_run(struct engine *e);
/* Stop sending; in-flight requests get --grace to finish. */
void engine_stop(struct engine *e, const char *reason);
/* Abort whatever is still in flight and end the run now. */
void engine_abort(struct engine *e, const char *reason);

/* Duration of the run so far (or in total once done), ns. */
int64_t engine_elapsed(const struct engine *e, int64_t now_ns);

#endif
