#include "config.h"

/* The names enum values have in result files: one table per enum, used by
 * the JSON writer (json_write.c) to name a value and by the reader
 * (snapshot_read.c) to find it again. */

#include "infertop/result.h"
#include "infertop/snapshot.h"

#include <string.h>

#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/server.h"

const struct result_key result_keys_reason[] = {
	{SNAPSHOT_KEY, "key"},
	{SNAPSHOT_SIGNAL, "signal"},
	{SNAPSHOT_PERIODIC, "periodic"},
	{SNAPSHOT_FINAL, "final"},
	{SNAPSHOT_MERGED, "merged"},
	{SNAPSHOT_API, "api"},
	{SNAPSHOT_STATUS, "status"},
	{-1, NULL},
};

const struct result_key result_keys_gauge[] = {
	{SRV_RUNNING, "running"},
	{SRV_WAITING, "waiting"},
	{SRV_KV_USAGE, "kv_usage"},
	{SRV_KV_USAGE_MAX, "kv_usage_max"},
	{SRV_PREEMPT_RATE, "preemptions_per_s"},
	{SRV_PREFIX_HIT, "prefix_cache_hit_rate"},
	{SRV_PROMPT_TOK_S, "prompt_tokens_per_s"},
	{SRV_GEN_TOK_S, "generation_tokens_per_s"},
	{-1, NULL},
};

const struct result_key result_keys_latency[] = {
	{SRVL_TTFT, "ttft"},
	{SRVL_ITL, "itl"},
	{SRVL_E2E, "e2e"},
	{SRVL_QUEUE, "queue"},
	{-1, NULL},
};

const struct result_key result_keys_plan_kind[] = {
	{PLAN_NONE, "none"},
	{PLAN_STAGES, "stages"},
	{PLAN_SWEEP, "sweep"},
	{PLAN_MATRIX, "matrix"},
	{-1, NULL},
};

const struct result_key result_keys_load_mode[] = {
	{LOAD_CLOSED, "concurrency"},
	{LOAD_OPEN, "rate"},
	{-1, NULL},
};

const char *result_key_name(const struct result_key *t, int id, const char *dflt)
{
	for (; t->key; t++)
		if (t->id == id)
			return t->key;
	return dflt;
}

int result_key_id(const struct result_key *t, const char *key)
{
	for (; key && t->key; t++)
		if (strcmp(t->key, key) == 0)
			return t->id;
	return -1;
}
