#include "config.h"

#include "infertop/buckets.h"

/* Copied from vLLM's vllm/v1/metrics/loggers.py (see buckets.h); change
 * them only to follow vLLM. */
static const double ttft_le[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,   0.75,
				  1.0,	 2.5,	5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0 };
static const double itl_le[] = { 0.01, 0.025, 0.05, 0.075, 0.1,	 0.15, 0.2,  0.3,  0.4, 0.5,
				 0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0 };
static const double req_le[] = { 0.3,  0.5,  0.8,  1.0,	 1.5,	2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
				 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0 };

#define NB(a) ((int)(sizeof a / sizeof a[0]))

const struct buckets buckets_ttft = { ttft_le, NB(ttft_le) };
const struct buckets buckets_itl = { itl_le, NB(itl_le) };
const struct buckets buckets_request = { req_le, NB(req_le) };
