#ifndef INFERTOP_BUCKETS_H
#define INFERTOP_BUCKETS_H

/*
 * vLLM's histogram bucket bounds (upper bounds in seconds, ascending, +Inf
 * implied), declared once: the simulator serves its vllm:* histograms on
 * them and the exporter renders the client's histograms on the same
 * bounds, so a Grafana panel can overlay client and server series bucket
 * for bucket.
 *
 * Source: vLLM's PrometheusStatLogger (vllm/v1/metrics/loggers.py, V1
 * engine, 0.10-0.11; vLLM observes its time_per_output_token histogram
 * with the same per-token gaps as inter_token_latency, deprecated in 0.11):
 *   vllm:time_to_first_token_seconds        -> buckets_ttft
 *   vllm:inter_token_latency_seconds,
 *   vllm:time_per_output_token_seconds      -> buckets_itl
 *   vllm:e2e_request_latency_seconds,
 *   vllm:request_queue_time_seconds (and the other per-request phase
 *   times: its `request_latency_buckets`)   -> buckets_request
 * Every bound is a whole number of microseconds, so the client's
 * microsecond histograms can be cut at them without rounding.
 */

struct buckets {
	const double *le;
	int n;
};

extern const struct buckets buckets_ttft;
extern const struct buckets buckets_itl;
extern const struct buckets buckets_request;

#endif
