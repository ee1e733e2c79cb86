#ifndef INFERTOP_LOAD_H
#define INFERTOP_LOAD_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "infertop/rng.h"

/* The load controller decides when requests start. Closed loop keeps N
 * requests in flight; open loop starts requests at arrival times drawn from
 * an arrival process (Poisson, constant spacing or gamma), optionally capped
 * at max in flight, in which case arrivals wait in a FIFO and their intended
 * send time is kept (client queue time). Changes take effect at once:
 * raising starts requests immediately, lowering lets in-flight requests
 * finish. */
enum load_mode { LOAD_CLOSED, LOAD_OPEN };

/* Open-loop inter-arrival times, all with mean 1/rate. Gamma has shape k
 * (--burstiness, as vLLM's bench serve): coefficient of variation
 * 1/sqrt(k), so k = 1 is Poisson, k < 1 burstier, k > 1 smoother. */
enum load_arrival { LOAD_POISSON, LOAD_CONSTANT, LOAD_GAMMA, LOAD_ARRIVAL_N };

/* Who made a change: the user (keys, the initial -c/-r) or a plan. */
enum load_source { LOAD_SRC_USER, LOAD_SRC_PLAN };

/* What an observer is told about (changes made through the load_set_*
 * and load_pause calls, not the load_plan_* ones). */
enum load_change { LOAD_CHANGE_TARGET, LOAD_CHANGE_PAUSE, LOAD_CHANGE_UNPAUSE };

/* Starts one request meant to be sent at t_intended. Returns 0, or -1 if it
 * could not be started (the controller stops trying until the next event). */
typedef int (*load_start_fn)(void *ud, int64_t t_intended);
typedef uint64_t (*load_in_flight_fn)(void *ud);
typedef void (*load_observer_fn)(void *ud, enum load_change what, int64_t now_ns);
/* A fixed schedule's next arrival: true with *at_ns (ns after the
 * schedule's start, never decreasing), false when there is none left. */
typedef bool (*load_schedule_fn)(void *ud, int64_t *at_ns);

#define LOAD_PENDING_MAX (1u << 20)
/* A fixed schedule's arrivals waiting to start, at most: past this the
 * schedule waits too (its arrivals are then sent later, which shows as
 * lateness), so a trace replayed into a capped or backing-off load holds
 * this many of its records, never the rest of the file. */
#define LOAD_SCHEDULE_BACKLOG (1u << 14)
/* Requests started in one go, at most. Each start costs a handle, a
 * connection and a curl pass; starting 15,000 at once kept the loop from
 * timers, scrapes and the screen for seconds. The rest follow on the next
 * loop iterations, with I/O served in between. */
#define LOAD_START_BATCH 128
#define LOAD_EVENTS 256
/* Rates below this are treated as this: a ramp from r=0 still has a finite
 * next arrival, which later rate changes rescale. */
#define LOAD_RATE_MIN 1e-6

struct load_event {
	int64_t t_ns;
	enum load_mode mode;
	double value;     /* concurrency or rate */
	enum load_source source;
};

struct load {
	struct ev_loop *loop;
	enum load_mode mode;
	long concurrency;
	double rate;
	long max_concurrency;      /* open-loop cap, 0 = none */
	long max_change;           /* --max-change factor, 0 = none (cmd_change_too_big) */
	bool paused;               /* by the user */
	bool held;                 /* by a plan, between measured steps */
	bool backing_off;          /* the server asked to wait (429, 503, refusals) */
	bool stopped;
	uint64_t limit;            /* max requests to start, 0 = none */
	uint64_t cap_at;           /* a plan step's: no start once started reaches it, 0 = none */
	uint64_t started;
	uint64_t dropped;          /* arrivals beyond LOAD_PENDING_MAX */
	enum load_arrival arrival;
	double shape;              /* gamma shape (burstiness) */
	struct rng rng;
	ev_timer arrival_timer;
	int64_t next_intended;
	ev_timer ramp_timer;       /* continues a fill cut at LOAD_START_BATCH */
	ev_tstamp batch_at;        /* the loop iteration batch_left is for */
	int batch_left;            /* starts left in it */

	int64_t *pending;          /* ring of intended times, grown on demand */
	uint32_t pending_cap, pending_head, pending_len;

	struct load_event events[LOAD_EVENTS];  /* ring: latest changes */
	uint32_t nevents;

	load_start_fn start;
	load_in_flight_fn in_flight;
	void *ud;
	load_observer_fn observer;
	void *observer_ud;

	load_schedule_fn schedule;  /* a fixed schedule (--trace); NULL: none */
	void *schedule_ud;
	int64_t schedule_t0;
	bool schedule_done;         /* its last arrival is in */
};

void load_init(struct load *l, struct ev_loop *loop, uint64_t seed,
	       load_start_fn start, load_in_flight_fn in_flight, void *ud);
void load_free(struct load *l);
void load_set_limit(struct load *l, uint64_t requests);
void load_set_max_concurrency(struct load *l, long n);
/* Both switch mode if needed, record a timed event, tell the observer and
 * act immediately. A rate change rescales the time left to the next
 * arrival by old/new rate, which keeps a Poisson process exact and a
 * constant or gamma one in phase (so a ramp updated often still fires). */
void load_set_concurrency(struct load *l, long n);
void load_set_rate(struct load *l, double rate);
void load_pause(struct load *l, bool paused);
/* No more starts, ever (stop conditions, Ctrl-C). Pending arrivals dropped. */
void load_stop(struct load *l);
/* The server asked the client to wait: no request starts until the
 * backoff ends. Closed-loop users wait; open-loop arrivals keep their
 * intended times and queue (their wait shows as client queue time). */
void load_backoff(struct load *l, bool on);
/* A request ended: closed loop refills, open loop drains the FIFO. */
void load_on_done(struct load *l);
uint32_t load_pending(const struct load *l);
bool load_exhausted(const struct load *l);   /* limit reached or stopped */

/* Arrival process for the next gaps (the one already scheduled stands).
 * shape only matters for gamma and must be > 0. */
void load_set_arrival(struct load *l, enum load_arrival a, double shape);
/* "poisson", "constant", "gamma" (NULL: poisson). 0, or -1 if unknown. */
int load_arrival_parse(const char *name, enum load_arrival *out);
/* Every value below LOAD_ARRIVAL_N has its own name (LOAD_POISSON, the
 * default, is listed first); anything else is "poisson". */
const char *load_arrival_name(enum load_arrival a);
/* One inter-arrival gap in seconds, mean 1/rate (rate > 0). Pure apart
 * from the rng, so the statistics can be tested without a clock. */
double load_arrival_gap(enum load_arrival a, double shape, double rate, struct rng *r);

/* Open loop on a fixed schedule from now on: arrivals at the times fn
 * gives, each with its intended time (lateness shows as client queue
 * time), started in that order; none is dropped (see
 * LOAD_SCHEDULE_BACKLOG). Rate and concurrency changes are then ignored;
 * a pause shifts the rest of the schedule by its length. Once fn has no
 * more, the load is exhausted when the arrivals in hand have started. */
void load_set_schedule(struct load *l, load_schedule_fn fn, void *ud);

/* One observer (the plan) hears about changes made by the user. */
void load_set_observer(struct load *l, load_observer_fn fn, void *ud);
/* A plan's changes: like load_set_*, but the observer is not told, and a
 * load event (source LOAD_SRC_PLAN) is recorded only when mark is true
 * (step boundaries yes, the small steps of a ramp no). */
void load_plan_concurrency(struct load *l, long n, bool mark);
void load_plan_rate(struct load *l, double rate, bool mark);
/* Hold: no new starts while in-flight requests finish (a plan between
 * measured steps). Holding drops the open-loop FIFO and returns how many
 * arrivals it held; releasing restarts an open loop's arrivals from now. */
uint32_t load_plan_hold(struct load *l, bool hold);
/* A step of N requests (--stage-requests): at most n more starts, then
 * none until the next call; 0 lifts the cap. */
void load_plan_cap(struct load *l, uint64_t n);

#endif
