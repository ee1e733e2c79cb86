#ifndef INFERTOP_SAMPLER_H
#define INFERTOP_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/series.h"

/* Turns a run's counters and histograms into one series point per
 * second, and new load-change events into chart markers. */

struct run_view;

/* What the sampler remembers between calls (the run owns one, beside its
 * series); zero-initialised before the first call. */
struct sampler {
	bool started;
	int64_t next_ns;            /* next point due */
	int64_t prev_ns;            /* time of the previous counter reading */
	uint64_t prev_completed, prev_failed, prev_streamed;
	uint32_t seen_events;       /* load events already turned into markers */
	bool prev_paused;
	int prev_state;
	/* Each server replica's generated-token counter at its last scrape
	 * seen, and the rate between its last two. */
	struct sampler_replica {
		int64_t ok_ns;          /* 0: none seen yet */
		double gen, rate;
	} rep[SERIES_SUBS_MAX];
};

/* Call at every engine tick (at least once a second): pushes one point per
 * elapsed second (rates from counter deltas over the actual time between
 * points, window p50s and p99s in ms, the window's cache hit rate,
 * in-flight, target; server gauges and GPU power from
 * v->server when known, NaN otherwise) and marks load changes, pauses and
 * the start of draining. With 2+ server replicas, each replica's point
 * (enum series_replica_col) goes to its sub-series of s, made when the
 * replica first appears. Cheap when no point is due. */
void sampler_push(struct sampler *p, struct series *s, const struct run_view *v, int64_t now_ns);

/* The label a load change gets on the charts, e.g. "c=16" or "r=2.5/s". */
void sampler_event_label(int mode, double value, char *buf, size_t cap);

#endif
