#ifndef INFERTOP_ENGINE_H
#define INFERTOP_ENGINE_H

/* One run: owns the HTTP glue, the request pool, the load controller and
 * the stats, all on the caller's libev loop. Its state is private
 * (engine_internal.h): readers take a struct run_view (engine_view) and
 * changes go through the command interface (command.h). */

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/command.h"
#include "infertop/view.h"

struct config;
struct engine;
struct snapshot_writer;

/* Called on every engine tick (4 Hz) and once more at the end: the headless
 * reporter, the dashboard and tests hang off this. */
typedef void (*engine_tick_fn)(struct engine *e, void *ud, int64_t now_ns);

/* Builds everything from cfg; errors are written to err. */
struct engine *engine_new(const struct config *cfg, struct ev_loop *loop, char *err, size_t errcap);
void engine_free(struct engine *e);

/* Before the run, on the engine's loop: checks the server answers and
 * picks the model (GET /v1/models, bounded by 10 s), then calibrates the
 * prompt lengths (dataset.h); then fn(ud, rc, err): rc 0, or -1 with a
 * message for the user in err. Returns -1 (fn not called) when it cannot
 * start. engine_probe_cancel drops it unsaid; engine_free does too. */
typedef void (*engine_probed_fn)(void *ud, int rc, const char *err);
int engine_probe_start(struct engine *e, engine_probed_fn fn, void *ud);
void engine_probe_cancel(struct engine *e);
/* The same, running the loop until it is over (tests, benches). */
int engine_probe(struct engine *e, char *err, size_t errcap);

/* Called once when the run is over (state ENGINE_DONE), on the loop, from
 * inside the engine's own callbacks: do not free the engine in it (defer
 * that to the next loop iteration). */
typedef void (*engine_done_fn)(struct engine *e, void *ud);
void engine_set_on_done(struct engine *e, engine_done_fn fn, void *ud);

/* Starts the load on the loop and returns; the loop is the caller's to
 * run (serve). The done callback says when the run is over. */
void engine_start(struct engine *e);
/* engine_start, then runs the loop until the run is over: tests and
 * benches that drive an engine by hand (a run proper goes through
 * session.h, which also writes its result). */
void engine_run(struct engine *e);
/* Stop sending; in-flight requests get --grace to finish. */
void engine_stop(struct engine *e, const char *reason);
/* Abort whatever is still in flight and end the run now. */
void engine_abort(struct engine *e, const char *reason);

/* Duration of the run so far (or in total once done), ns. */
int64_t engine_elapsed(const struct engine *e, int64_t now_ns);

/* The run as readers see it (see view.h); cheap, take one per use. */
void engine_view(const struct engine *e, struct run_view *v);
/* Called on every tick (4 Hz) and once at the end; one callback. */
void engine_set_on_tick(struct engine *e, engine_tick_fn fn, void *ud);
struct ev_loop *engine_loop(const struct engine *e);
/* The background snapshot writer (s key, SIGUSR1, --snapshot-every). */
struct snapshot_writer *engine_snapshot_writer(const struct engine *e);
/* The request log (--request-log, --save-detailed); NULL when none. */
struct reqlog *engine_reqlog(const struct engine *e);
/* The completions/chat URL requests go to (credentials in it: redact
 * before showing). */
const char *engine_endpoint(const struct engine *e);
/* --trace's description (trace_replay_describe()); NULL without a trace. */
const char *engine_trace_describe(const struct engine *e);
/* --sessions' description (sessions_describe()); NULL without sessions. */
const char *engine_sessions_describe(const struct engine *e);

#endif
