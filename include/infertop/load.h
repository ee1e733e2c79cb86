#ifndef INFERTOP_LOAD_H
#define INFERTOP_LOAD_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "infertop/rng.h"

/* The load controller decides when requests start. Closed loop keeps N
 * requests in flight; open loop starts requests at Poisson arrival times,
 * optionally capped at max in flight, in which case arrivals wait in a FIFO
 * and their intended send time is kept (client queue time). Changes take
 * effect at once: raising starts requests immediately, lowering lets
 * in-flight requests finish. */
enum load_mode { LOAD_CLOSED, LOAD_OPEN };

/* Starts one request meant to be sent at t_intended. Returns 0, or -1 if it
 * could not be started (the controller stops trying until the next event). */
typedef int (*load_start_fn)(void *ud, int64_t t_intended);
typedef uint64_t (*load_in_flight_fn)(void *ud);

#define LOAD_PENDING_MAX (1u << 20)
#define LOAD_EVENTS 256

struct load_event {
	int64_t t_ns;
	enum load_mode mode;
	double value;     /* concurrency or rate */
};

struct load {
	struct ev_loop *loop;
	enum load_mode mode;
	long concurrency;
	double rate;
	long max_concurrency;      /* open-loop cap, 0 = none */
	bool paused;
	bool stopped;
	uint64_t limit;            /* max requests to start, 0 = none */
	uint64_t started;
	uint64_t dropped;          /* arrivals beyond LOAD_PENDING_MAX */
	struct rng rng;
	ev_timer arrival;
	int64_t next_intended;

	int64_t *pending;          /* ring of intended times, grown on demand */
	uint32_t pending_cap, pending_head, pending_len;

	struct load_event events[LOAD_EVENTS];  /* ring: latest changes */
	uint32_t nevents;

	load_start_fn start;
	load_in_flight_fn in_flight;
	void *ud;
};

void load_init(struct load *l, struct ev_loop *loop, uint64_t seed,
	       load_start_fn start, load_in_flight_fn in_flight, void *ud);
void load_free(struct load *l);
void load_set_limit(struct load *l, uint64_t requests);
void load_set_max_concurrency(struct load *l, long n);
/* Both switch mode if needed, record a timed event and act immediately. */
void load_set_concurrency(struct load *l, long n);
void load_set_rate(struct load *l, double rate);
void load_pause(struct load *l, bool paused);
/* No more starts, ever (stop conditions, Ctrl-C). Pending arrivals dropped. */
void load_stop(struct load *l);
/* A request ended: closed loop refills, open loop drains the FIFO. */
void load_on_done(struct load *l);
uint32_t load_pending(const struct load *l);
bool load_exhausted(const struct load *l);   /* limit reached or stopped */

#endif
