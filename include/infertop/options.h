#ifndef INFERTOP_OPTIONS_H
#define INFERTOP_OPTIONS_H

/* The run's options as data: what cli.c fills from argv and every module
 * reads. Kept apart from the parser so that the modules the parser asks to
 * check their own values (datasets, plans, servers) need not depend on it. */

#include <stdbool.h>
#include <stdint.h>

#include "infertop/dist.h"
#include "infertop/openai.h"

/* Everything the user can set, after validation. Owned strings are freed by
 * cli_free(). Times are nanoseconds. */
struct config {
	char *url;              /* base URL, no trailing "/" or "/v1" */
	enum oai_api api;
	char *model;            /* NULL: first id from GET /v1/models */
	long concurrency;       /* closed loop target users */
	double rate;            /* > 0: open loop, requests per second */
	long max_concurrency;   /* open-loop cap, 0 = none */
	long max_change;        /* --max-change: a load change above this factor asks first, 0 = none */
	uint64_t seed;
	bool have_seed;         /* --seed given (else a slice derives its own) */
	long slice_index;       /* --slice I/N: this generator's share of the dataset */
	long slice_count;       /* N; 0: no slice, the whole dataset */
	long requests;          /* stop after this many started, 0 = no limit */
	int64_t duration_ns;    /* stop starting after this long, 0 = no limit */
	long input_tokens;      /* plain value or the distribution's mean */
	long output_tokens;
	struct dist input_dist;    /* "128", "100:200", "normal:128,32" */
	struct dist output_dist;
	bool have_output_tokens; /* --output-tokens given: it beats a dataset's own lengths */
	char *dataset;          /* "synthetic", "sharegpt:FILE", "jsonl:FILE", "text:FILE" */
	long prefix_tokens;     /* shared prefix for prefix-cache tests */
	char *prefix_groups;    /* --prefix-groups G,PER,SYS,Q (prefix_groups.h); NULL: none */
	char *trace;            /* --trace FORMAT:FILE (trace_replay.h); NULL: none */
	double trace_speed;     /* time scale: 2 sends twice as fast */
	int64_t trace_window_start_ns, trace_window_len_ns;  /* len 0: to the end */
	long trace_block_tokens;    /* tokens a hash id stands for */
	bool trace_skip_bad;    /* skip and count bad lines instead of refusing */
	char *sessions;         /* --sessions SPEC (sessions.h); NULL: single requests */
	char *session_answers;  /* --session-answers actual|recorded; NULL: actual */
	bool ignore_eos;
	bool have_temperature;
	double temperature;
	char *extra_body;       /* JSON object text, validated */
	char *metadata;         /* --metadata/--metadata-json: a JSON object's text, scrubbed; NULL: none */
	char *vllm_ignored;     /* vLLM arguments given that do not apply: {"key":"why"} text; NULL: none */
	char **headers;         /* "Name: value", NULL-terminated */
	size_t nheaders;
	char *api_key_env;      /* env var holding the key; default OPENAI_API_KEY */
	bool insecure;
	char *cacert;           /* --cacert: CA certificates (PEM) to verify https with */
	int64_t timeout_ns;
	bool new_connection;
	char *http_client;      /* direct (default) or curl (request.h) */
	bool no_tui;
	bool demo;
	int64_t interval_ns;    /* headless progress line period */
	int64_t window_ns;      /* sliding window span */
	int64_t grace_ns;       /* drain time after a stop */
	char *output_path;      /* -o result JSON */
	char *html_path;        /* --html: the report page at the end */
	bool save_detailed;     /* -o also carries vLLM's per-request arrays */
	bool save_texts;        /* ... and generated_texts */
	bool no_config;         /* --no-config: the config file is not read */
	bool quiet;
	char **demo_args;       /* --sim-arg values passed to the demo simulator */
	size_t ndemo_args;

	/* Server metrics (scrape/profile). */
	char *metrics_url;      /* NULL: the profile's path on the target; "none": off */
	char **metrics_urls;    /* every --metrics-url, in order; 2+ = server replicas */
	size_t nmetrics_urls;
	char *metrics_discover;   /* dns:NAME:PORT[/PATH]: each address a replica */
	char *metrics_prometheus; /* Prometheus base URL: each instance a replica */
	char *metrics_selector;   /* {label="v",...} for metrics_prometheus, NULL = all */
	int64_t metrics_interval_ns;
	char *server;           /* "auto" or a profile name */
	char *gpu_metrics_url;  /* DCGM exporter, NULL = none */
	char **watch_metrics;   /* --watch-metric expressions */
	size_t nwatch_metrics;

	/* Workload plans (validated by the plan module when the run is built). */
	char *arrival;          /* poisson (default), constant, gamma */
	double burstiness;      /* gamma shape; 1 = Poisson */
	char *stages;           /* "2m@c=8, 5m@r=20, 3m@c=1..64" */
	char *sweep;            /* "c=1,5,10" or "rate=auto" */
	int64_t stage_duration_ns;  /* per sweep or matrix step */
	long stage_requests;    /* a step ends after this many finished, 0 = by time */
	char *warmup;           /* TIME or a request count */
	int64_t cooldown_ns;
	char *scenario;         /* chatbot, generation, summarization, long */
	bool matrix;
	char *models;           /* "a,b" */
	char *traffic_split;    /* "0.9,0.1" */
	char *slo;              /* "ttft=500ms,tpot=50ms,e2e=10s" */

	/* Snapshots and long runs. */
	char *snapshot_dir;     /* NULL: current directory */
	int64_t snapshot_every_ns;  /* 0: only on demand and at the end */
	char *request_log;      /* per-request JSONL, NULL = off */
	uint64_t request_log_max;   /* rotate past this size */
	char *upload;           /* s3://BUCKET/PREFIX or gs://...; NULL = off */
	char *upload_endpoint;  /* S3-compatible store; NULL = the bucket's own */
	char *upload_region;    /* NULL: AWS_REGION, AWS_DEFAULT_REGION, default */
	bool have_max_error_rate;
	double max_error_rate;  /* exit 3 above this share of failed requests */

	/* Control API (--listen). */
	char *listen;           /* ADDR:PORT, NULL: no control API */
	char *listen_token_env; /* env var holding the bearer token; NULL: none */
	bool listen_metrics_open;   /* GETs need no token */
	char *results_dir;          /* infertop serve: where results go; NULL: "." */
	char **listen_allow_hosts;  /* --listen-allow-host NAME[:PORT], NULL-terminated */
	size_t nlisten_allow_hosts;
	char *data_dir;             /* infertop serve: run specs read dataset files only here; NULL: none */
	char *id;               /* generator id; NULL: hostname:pid */
	double start_at;        /* wall clock (Unix s) the load starts at; 0: at once */
	long workers;           /* engine processes sharing the load; 1: this one */
	int64_t linger_ns;      /* --listen: /metrics stays up this long after the run; -1: default */

	/* infertop fleet (fleet.h). */
	char *fleet_targets;        /* "URL,URL,..." */
	char *fleet_targets_file;   /* one URL a line */
	char *fleet_discover;       /* "dns:NAME:PORT" */
	char *fleet_token_env;      /* env var holding the generators' bearer token */
	long fleet_expect;          /* --expect: ready generators to wait for; 0: none */
	int64_t fleet_expect_timeout_ns;  /* ... at most this long */

	/* Dashboard. */
	double refresh_hz;
	char *theme;            /* NULL: default theme */
	bool ascii;
};

#endif
