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

#endif
