#ifndef INFERTOP_SERVER_H
#define INFERTOP_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct gpu_history;

/* What the server says about itself, in canonical form whatever its
 * metric names (doc/metrics.md section 2). Written only by the scraper; the dashboard,
 * the progress line and the JSON result read it. Every value carries a
 * validity bit so a metric the server lacks shows as "–", never 0. */

enum server_gauge {
	SRV_RUNNING,        /* requests in the running batch */
	SRV_WAITING,        /* queue depth */
	SRV_KV_USAGE,       /* 0..1, mean over engines/ranks */
	SRV_KV_USAGE_MAX,   /* 0..1, max over engines/ranks */
	SRV_PREEMPT_RATE,   /* preemptions per second */
	SRV_PREFIX_HIT,     /* prefix-cache hit rate 0..1 */
	SRV_PROMPT_TOK_S,   /* server prompt tokens per second */
	SRV_GEN_TOK_S,      /* server generation tokens per second */
	SRV_NGAUGES
};

/* Server-side latency histograms, as percentiles of bucket deltas over the
 * same sliding window as the client stats. Seconds. */
enum server_latency { SRVL_TTFT, SRVL_ITL, SRVL_E2E, SRVL_QUEUE, SRVL_N };

enum server_status {
	SERVER_OFF,         /* scraping disabled */
	SERVER_PENDING,     /* no answer yet */
	SERVER_UP,
	SERVER_STALE,       /* last scrape failed, older values shown */
	SERVER_DOWN         /* several failures in a row; backing off */
};

struct server_value {
	double v;
	bool valid;
	/* For a quantile read off Prometheus buckets: the bucket it lies in
	 * (both 0 otherwise: the value is exact). */
	double lo, hi;
};

/* A server latency (seconds) as milliseconds for people, the one
 * formatter of every output (dashboard, progress line, summary, report).
 * An exact value prints as a number; a quantile read off buckets prints
 * as its bucket, never as an interpolated number: "<=300" when the bucket
 * starts at 0, "100-300", ">60" in the overflow bucket, and from 1 s on in
 * seconds with the unit ("10-20 s", ">20 s"). "-" when unknown. Returns
 * true when buf carries its own unit (" s"); otherwise it is ms. */
bool server_format_ms(const struct server_value *v, char *buf, size_t cap);

struct server_agg {         /* over the whole run, valid samples only */
	double min, max, sum;
	uint64_t n;
};

#define SERVER_MAX_GPUS 16
#define SERVER_MAX_WATCH 16

struct server_gpu {
	char name[64];          /* modelName label, or the gpu index */
	struct server_value util_pct, mem_used_mib, mem_total_mib, power_w, temp_c, sm_clock_mhz;
	struct server_value gr_active, dram_active, tensor_active;   /* 0..1 */
	int index;              /* the gpu label, -1 if absent */
};

struct server_watch {
	char expr[128];
	struct server_value value;
	struct server_value rate;   /* per second over the window, counters only */
};

/* A server histogram's increase over the run, bucket by bucket (not
 * cumulative): count[i] requests fell in (le[i-1], le[i]] seconds, the
 * first bucket from 0, the last le +Inf. n = 0: unknown. */
#define SERVER_BUCKETS_MAX 64
struct server_buckets {
	int n;
	double le[SERVER_BUCKETS_MAX];
	double count[SERVER_BUCKETS_MAX];
};

#define SERVER_MAX_REPLICAS 16
#define SERVER_MAX_REPLICAS_STR "16"

/* One replica of the server (repeated --metrics-url, an address of
 * --metrics-discover, an instance of --metrics-prometheus), as its own
 * scrape read it. */
struct server_replica {
	char url[256];              /* redacted: no credentials, no query; or the instance */
	enum server_status status;
	bool gone;                  /* left the DNS or Prometheus answer: down, its counts kept */
	char last_error[200];
	int64_t last_ok_ns;
	struct server_value running, waiting, kv, kv_max;
	struct server_value run_gen_tokens;   /* generated over the run */
};

struct server_state {
	enum server_status status;
	char url[256];
	char detected[32];          /* profile in use, e.g. "vllm" */
	char last_error[200];
	int64_t last_ok_ns;
	uint64_t scrapes, failures;

	struct server_value gauge[SRV_NGAUGES];
	struct server_agg agg[SRV_NGAUGES];
	struct server_value p50[SRVL_N], p90[SRVL_N], p99[SRVL_N];

	enum server_status gpu_status;
	char gpu_error[200];
	int ngpus;
	struct server_gpu gpu[SERVER_MAX_GPUS];
	struct server_value power_total_w;
	struct server_value joules_per_token;   /* over the window */

	int nwatch;
	struct server_watch watch[SERVER_MAX_WATCH];

	/* Added with the scraper. */
	int64_t last_attempt_ns;    /* when the last scrape was sent */
	uint64_t skipped;           /* ticks skipped: the previous scrape was still in flight */
	char note[160];             /* not an error: e.g. the given --server's names are absent */
	struct server_value mean[SRVL_N];   /* window mean from _sum/_count deltas, seconds */
	/* Over the run: deltas between the run's first and latest scrape. */
	struct server_value run_p50[SRVL_N], run_p90[SRVL_N], run_p99[SRVL_N], run_mean[SRVL_N];
	struct server_value run_prompt_tokens, run_gen_tokens, run_preemptions;
	char gpu_url[256];
	uint64_t gpu_scrapes, gpu_failures;
	int64_t gpu_last_ok_ns;
	struct server_agg power_agg;        /* power_total_w over the run */
	struct server_agg jpt_agg;          /* joules_per_token over the run */
	/* Per-GPU history for the GPU view (owned by the scraper); NULL
	 * when no GPU metrics are scraped, or in a loaded file. */
	const struct gpu_history *gpu_hist;

	/* Server replicas: 0 with one endpoint. With 2+, the figures above
	 * sum (or average, see the man page) the replicas' own scrapes. */
	int nreplicas, replicas_read;   /* replicas_read: up or stale now */
	/* A source that finds the replicas (--metrics-discover,
	 * --metrics-prometheus): what it is, and why it found none or not
	 * all ("" when fine). Empty with --metrics-url. */
	char replicas_source[200];
	char replicas_error[200];
	struct server_replica replica[SERVER_MAX_REPLICAS];

	/* The latency histograms' buckets over the run (what run_p50..
	 * are read off), for a chart of the bucket counts themselves. */
	struct server_buckets run_buckets[SRVL_N];
};

struct cJSON;

const char *server_status_name(enum server_status s);
/* Zeroes st: status SERVER_OFF, every value unknown. */
void server_state_init(struct server_state *st);
void server_agg_add(struct server_agg *a, double v);
/* NaN when the aggregate has no sample. */
double server_agg_mean(const struct server_agg *a);
/* Renderers (the result layer): server_to_json in src/result/json_write.c;
 * server_format_ms, server_format_brief and server_print_summary in
 * src/result/text.c. */

/* The "server" object of the JSON result; unknown values are null. NULL on
 * out of memory. */
struct cJSON *server_to_json(const struct server_state *st);
/* Progress-line fragment: "run 8 wait 24 kv 63%", with "-" for unknown
 * values, or "server metrics: down (connection refused)". */
void server_format_brief(const struct server_state *st, char *buf, size_t cap);
/* A few lines for the end-of-run text summary (nothing when off). */
void server_print_summary(FILE *out, const struct server_state *st);

#endif
