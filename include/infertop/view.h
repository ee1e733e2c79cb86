#ifndef INFERTOP_VIEW_H
#define INFERTOP_VIEW_H

/*
 * What a run looks like from outside the engine: the dashboard's widgets,
 * the sampler, the snapshot builder and the reporters read a struct
 * run_view and never the engine. Every pointer is const: a reader cannot
 * change the run (changes go through the command interface, command.h).
 *
 * A view is a handful of pointers into the live run, filled by
 * engine_view() in a few nanoseconds, so a frame, a tick or an API request
 * takes a fresh one each time instead of keeping one: the pointers stay
 * valid only as long as the engine does.
 */

#include <stdbool.h>
#include <stdint.h>

#include "infertop/command.h"

struct config;
struct dataset;
struct load;
struct plan;
struct plan_step_result;
struct reqlog;
struct reqtrack;
struct series;
struct trace_replay;
struct server_state;
struct stats;

enum engine_state { ENGINE_IDLE, ENGINE_RUNNING, ENGINE_DRAINING, ENGINE_DONE };

/* The last command the engine carried out (or refused), whoever sent it:
 * the dashboard tells a change made by the API apart from a key press. */
struct cmd_record {
	uint64_t seq;               /* 0: no command yet; grows by one per command */
	enum cmd_source source;
	enum cmd_status status;
	int64_t at_ns;
	char msg[CMD_MSG_MAX];
};

struct run_view {
	const struct config *cfg;        /* the options the run was started with */
	enum engine_state state;
	const char *stop_reason;         /* NULL until the run starts stopping */
	int interrupts;                  /* signals that asked the run to stop */
	bool hung_up;                    /* SIGHUP: no terminal any more */
	const char *run_id;
	const char *model;               /* the model asked for (probed or -m) */
	int64_t t_start, t_end;          /* 0 until started / done */
	const struct stats *stats;
	const struct load *load;         /* targets, mode, pause, events */
	int backoff_code;                /* 0 refused connections, else 429/503 */
	const struct plan *plan;         /* stages, sweeps, warmup, SLOs, models */
	/* The open plan step so far, computed on the plan's own tick (it
	 * costs histogram copies); NULL when no step is open. */
	const struct plan_step_result *live_step;
	const struct server_state *server;   /* NULL: no server metrics */
	const struct series *series;         /* one point per second */
	const struct dataset *dataset;       /* the prompt source */
	const struct reqlog *reqlog;         /* NULL: no --request-log */
	const struct trace_replay *trace;    /* NULL: no --trace */
	const struct cmd_record *last_cmd;   /* seq 0: none yet */
	/* In flight, slowest and recent requests (reqtrack.h); NULL: none. */
	const struct reqtrack *requests;
};

/* Time the run has lasted at now_ns (its whole length once it is done). */
int64_t run_view_elapsed(const struct run_view *v, int64_t now_ns);

#endif
