#ifndef INFERTOP_COMMAND_H
#define INFERTOP_COMMAND_H

/*
 * The engine's command interface: the only way anything outside the engine
 * changes a run. A key on the dashboard, a control-API POST (--listen), a
 * fleet fan-out and a signal all call these and get the same status back,
 * so the screen, the API and the log describe a change the same way.
 *
 * Every command fills *out (when not NULL) with a one-line message meant
 * for people ("concurrency 32", "the run is over") and records the change,
 * with its source, as the engine's last command: the dashboard shows it
 * ("load set to 32 by API") whoever issued it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine;

enum cmd_source {
	CMD_SRC_KEY,        /* the dashboard's keys */
	CMD_SRC_API,        /* the control API (--listen, serve) */
	CMD_SRC_FLEET,      /* a fleet's fan-out (arrives through the API) */
	CMD_SRC_SIGNAL,     /* SIGINT, SIGTERM, SIGHUP, SIGUSR1 */
	CMD_SRC_PLAN,       /* stages and sweeps */
	CMD_SRC_N
};

enum cmd_status {
	CMD_OK = 0,         /* done */
	CMD_UNCHANGED,      /* valid, but nothing to do (already paused, same target) */
	CMD_REFUSED,        /* not now: the run is stopping or over, a plan holds the load */
	CMD_INVALID,        /* a value out of range or of the wrong kind */
	CMD_FAILED,         /* tried and failed (e.g. a snapshot could not start) */
	CMD_STATUS_N
};

#define CMD_MSG_MAX 160
#define CMD_PATH_MAX 4096

struct cmd_result {
	enum cmd_status status;
	char msg[CMD_MSG_MAX];
	char path[CMD_PATH_MAX];   /* engine_cmd_snapshot: the file being written */
};

/* Stable lower-case names ("key", "api", ...; "ok", "refused", ...), for
 * messages, JSON and logs. */
const char *cmd_source_name(enum cmd_source s);
const char *cmd_status_name(enum cmd_status s);

/* Limits every source is held to. Concurrency is also capped by the file
 * descriptor limit (cmd_concurrency_limit), which a command reports. */
#define CMD_CONCURRENCY_MAX 1000000000L
#define CMD_RATE_MIN (1.0 / 60)     /* below one request a minute a run says nothing */
#define CMD_RATE_MAX 1e6            /* above, the client is the bottleneck */

/* A typo must not flood the target: a change of the load to more than
 * --max-change times the current (default 4), or the current + 256,
 * whichever is more, is applied only once confirmed (the dashboard asks
 * y/n; the control API wants "force": true). Going down never asks. */
#define CMD_MAX_CHANGE_DEFAULT 4
#define CMD_MAX_CHANGE_ABS 256
/* Counted from the lowest load of the last 10 s: ] ] ] ] is one change. */
#define CMD_MAX_CHANGE_WINDOW_NS (10 * 1000000000LL)
struct load;
/* True when setting the load to `target` (a concurrency, or with rate a
 * rate in req/s) is over l->max_change from the lowest load of the last
 * 10 s; why gets the sentence that says so ("concurrency 999999 is over
 * 4x the current 8 or +256 (--max-change)"). Switching between closed and
 * open loop counts from 0. */
bool cmd_change_too_big(const struct load *l, bool rate, double target, char *why, size_t cap);

/* The highest concurrency the file descriptor limit allows. */
long cmd_concurrency_limit(void);

/* Closed loop with n users (switches an open loop to closed). */
enum cmd_status engine_cmd_set_concurrency(struct engine *e, long n, enum cmd_source src, struct cmd_result *out);
/* Open loop at r requests/s (switches a closed loop to open). */
enum cmd_status engine_cmd_set_rate(struct engine *e, double r, enum cmd_source src, struct cmd_result *out);
/* No new requests; in-flight ones finish. */
enum cmd_status engine_cmd_pause(struct engine *e, enum cmd_source src, struct cmd_result *out);
enum cmd_status engine_cmd_resume(struct engine *e, enum cmd_source src, struct cmd_result *out);
/* Starts writing a snapshot in the background; out->path names the file. */
enum cmd_status engine_cmd_snapshot(struct engine *e, enum cmd_source src, struct cmd_result *out);
/* Graceful stop, as the first Ctrl-C: no new requests, --grace to drain,
 * then the run ends and its result is written. While draining, a second
 * stop aborts what is still in flight, as a second Ctrl-C does. */
enum cmd_status engine_cmd_stop(struct engine *e, enum cmd_source src, struct cmd_result *out);
/* Empties the sliding window (the whole-run figures stay). */
enum cmd_status engine_cmd_window_reset(struct engine *e, enum cmd_source src, struct cmd_result *out);
/* Hands the load back to the plan after a manual change. */
enum cmd_status engine_cmd_plan_resume(struct engine *e, enum cmd_source src, struct cmd_result *out);

#endif
