#ifndef INFERTOP_EXPORTER_H
#define INFERTOP_EXPORTER_H

/*
 * The client side of a run as Prometheus text (what --listen serves on
 * /metrics): a pure renderer of a struct run_view, rendered at scrape time
 * from the run's current state, so the exposition, the screen and the
 * result files always agree. The metric names are listed in the man page
 * (EXPORTED METRICS) and doc/metrics.md section 6.
 *
 * Every latency is a classic histogram on vLLM's bounds for the same
 * metric (buckets.h), cut from the run's whole-run microsecond
 * histograms with hist_cumulative(): _count, _sum and +Inf are exact; an
 * `le` bucket is exact below 2.048 ms and otherwise may miss the samples
 * within a relative 2^-10 below its bound (never counts one above it).
 */

#include <stddef.h>
#include <stdint.h>

struct run_view;

/* Prometheus text exposition (format 0.0.4) of the client side of a run.
 * malloc'd, NUL-terminated, *len set; NULL on out of memory. generator_id:
 * the `--id` (default hostname:pid), never NULL. */
char *exporter_text(const struct run_view *v, const char *generator_id, int64_t now_ns, size_t *len);

/* The counts of the runs a process has finished (serve runs one after
 * another): counters and histograms are exported as these plus the
 * current run's, so they only grow for the life of the process, and
 * between runs they stay at the last run's final counts. The run id is a
 * label of infertop_run_info, never a reset. */
struct exporter_totals;
struct exporter_totals *exporter_totals_new(void);   /* NULL on out of memory */
void exporter_totals_free(struct exporter_totals *t);
/* A run is over: its final counts join the totals. */
void exporter_totals_add(struct exporter_totals *t, const struct run_view *v);
/* ok + error requests in the totals. */
uint64_t exporter_totals_requests(const struct exporter_totals *t);
/* exporter_text over t (NULL: none) plus v (NULL: between runs). */
char *exporter_text_totals(const struct run_view *v, const struct exporter_totals *t, const char *generator_id,
			   int64_t now_ns, size_t *len);

#endif
