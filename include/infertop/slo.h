#ifndef INFERTOP_SLO_H
#define INFERTOP_SLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/stats.h"

/* Service-level objectives and goodput (--slo ttft=500ms,tpot=50ms,e2e=10s).
 *
 * A finished request meets an SLO when it completed and its figure is
 * within the limit (<=). TTFT and E2E are counted from the actual send,
 * as vLLM's bench serve does; TPOT is (E2E - TTFT) / (output_tokens - 1),
 * and a one-token request has TPOT 0 (vLLM's rule), so it meets any TPOT
 * SLO. A failed request meets none. Goodput is the rate of requests that
 * meet every given SLO; shares are over every finished request (completed
 * and failed). Counters exist for the whole run and for a sliding window
 * of STATS_SLICES slices, like struct stats. */
enum slo_kind { SLO_TTFT, SLO_TPOT, SLO_E2E, SLO_N };

struct slo_counts {
	uint64_t ended;            /* completed + failed */
	uint64_t met_all;          /* met every given SLO */
	uint64_t met[SLO_N];       /* met that SLO (0 for SLOs not given) */
};

struct slo {
	bool set[SLO_N];
	int64_t limit_ns[SLO_N];
	bool frozen;               /* whole-run counters stopped (cooldown) */
	int64_t start_ns;
	int64_t slice_ns;
	int64_t slice_start_ns;
	int cur;
	int slices_used;
	struct slo_counts run, win, slice[STATS_SLICES];
};

/* Parses "ttft=500ms,tpot=50ms,e2e=10s" (keys ttft, tpot, e2e or e2el;
 * "=" or ":" between key and value; "," or spaces between items; a bare
 * number is milliseconds, as in vLLM's --goodput). NULL or "" sets none.
 * 0, or -1 with a message in err. */
int slo_parse(const char *spec, struct slo *out, char *err, size_t cap);
/* Any SLO given? */
bool slo_active(const struct slo *s);
/* Starts the counters (empty) with the stats window span. */
void slo_start(struct slo *s, int64_t window_ns, int64_t now_ns);
/* Bit k set when the request meets SLO k (only given SLOs are tested);
 * SLO_ALL_MET set when it meets every given one. */
#define SLO_ALL_MET (1u << SLO_N)
unsigned slo_check(const struct slo *s, const struct req_result *r);
/* Counts one finished request (run and window); returns slo_check's bits. */
unsigned slo_record(struct slo *s, const struct req_result *r);
/* Adds one request's bits to a counts record (per step, per model). */
void slo_counts_add(const struct slo *s, struct slo_counts *c, unsigned bits);
void slo_counts_sub(struct slo_counts *a, const struct slo_counts *b);
/* Advances the window; call at least once per slice. */
void slo_tick(struct slo *s, int64_t now_ns);
/* Empty the window (the dashboard's z key); the run counters stay. */
void slo_window_reset(struct slo *s, int64_t now_ns);
/* Forget everything (warmup end); window restarts at now. */
void slo_reset(struct slo *s, int64_t now_ns);
/* Whole-run counters stop (cooldown); the window goes on. */
void slo_freeze(struct slo *s);
double slo_window_seconds(const struct slo *s, int64_t now_ns);
/* Share (0..1) of c's finished requests meeting SLO k, or every SLO when
 * k == SLO_N; 0 when nothing finished. */
double slo_share(const struct slo_counts *c, int k);
const char *slo_name(enum slo_kind k);
/* "ttft<=500ms tpot<=50ms" */
void slo_describe(const struct slo *s, char *buf, size_t cap);

#endif
