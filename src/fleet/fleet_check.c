/* What the fleet believes of a generator's status (fleet.h): every figure
 * it merges range-checked, so one lying or broken generator is refused
 * instead of overflowing the merge, and every text scrubbed before it can
 * reach a terminal, a log or a file. */
#include "config.h"

#include "infertop/fleet.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/hist.h"
#include "infertop/redact.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"

/* A seconds figure: finite, 0..max. */
static bool secs_ok(double v, double max)
{
	return isfinite(v) && v >= 0 && v <= max;
}

static bool count_ok(uint64_t v)
{
	return v <= FLEET_COUNT_MAX;
}

static bool counters_ok(const struct stats_counters *c)
{
	return count_ok(c->completed) && count_ok(c->failed) && count_ok(c->output_tokens) &&
	       count_ok(c->input_tokens) && count_ok(c->chunks) && count_ok(c->streamed);
}

static bool hist_ok(const struct hist *h)
{
	if (!h)
		return true;
	uint64_t n = hist_count(h);
	return n <= FLEET_COUNT_MAX && hist_sum(h) <= FLEET_HIST_SUM_MAX;
}

/* Every number of a carried JSON block (the server's scrape, the load
 * changes) finite and within an exact double: the views read them as
 * integers. */
static bool json_numbers_ok(const cJSON *j)
{
	for (const cJSON *c = j; c; c = c->next) {
		if (cJSON_IsNumber(c) && !(isfinite(c->valuedouble) && fabs(c->valuedouble) <= 9007199254740992.0))
			return false;
		if (c->child && !json_numbers_ok(c->child))
			return false;
	}
	return true;
}

int fleet_status_check(const struct snapshot *s, char *why, size_t cap)
{
	why[0] = '\0';
	size_t idl = strlen(s->run_id);
	if (idl != 32 || strspn(s->run_id, "0123456789abcdef") != idl)
		snprintf(why, cap, "impossible status: run_id is not 32 hex digits");
	else if (!secs_ok(s->start_unix, FLEET_UNIX_MAX) || !secs_ok(s->taken_unix, FLEET_UNIX_MAX))
		snprintf(why, cap, "impossible status: a wall-clock time out of range");
	else if (s->start_unix > s->taken_unix + FLEET_SKEW_MAX_S)
		snprintf(why, cap, "impossible status: its run starts over a day after the status was taken");
	else if (!secs_ok(s->elapsed, FLEET_SECONDS_MAX) || !secs_ok(s->duration, FLEET_SECONDS_MAX) ||
		 !secs_ok(s->win_seconds, FLEET_SECONDS_MAX))
		snprintf(why, cap, "impossible status: elapsed, measured or window seconds out of 0..%.0f",
			 FLEET_SECONDS_MAX);
	else if (!secs_ok(s->concurrency, FLEET_LOAD_MAX) || !secs_ok(s->max_concurrency, FLEET_LOAD_MAX) ||
		 !secs_ok(s->rate, FLEET_LOAD_MAX))
		snprintf(why, cap, "impossible status: concurrency or rate out of 0..%.0f", FLEET_LOAD_MAX);
	else if (!(isnan(s->max_output_tok_s) || secs_ok(s->max_output_tok_s, 1e12)))
		snprintf(why, cap, "impossible status: max output tokens/s out of range");
	if (why[0])
		return -1;
	bool ok = counters_ok(&s->run_c) && counters_ok(&s->win_c) && count_ok(s->in_flight) &&
		  count_ok(s->pending) && count_ok(s->started) && count_ok(s->max_in_flight) &&
		  count_ok(s->connections) && count_ok(s->connection_retries) && count_ok(s->tokens_from_usage) &&
		  count_ok(s->tokens_from_chunks) && count_ok(s->usage_mismatch) && count_ok(s->slo_run.ended) &&
		  count_ok(s->slo_run.met_all);
	for (int k = 0; ok && k < SLO_N; k++)
		ok = count_ok(s->slo_run.met[k]);
	for (int k = 0; ok && k < ERR_NKINDS; k++)
		ok = count_ok(s->errors[k]);
	for (int k = 0; ok && k < STATS_HTTP_CODES; k++)
		ok = count_ok(s->http_codes[k]);
	if (!ok) {
		snprintf(why, cap, "impossible status: a counter above %.0f", (double)FLEET_COUNT_MAX);
		return -1;
	}
	for (int k = 0; k < STAT_NMETRICS; k++)
		if (!hist_ok(s->run[k]) || !hist_ok(s->win[k])) {
			snprintf(why, cap, "impossible status: a histogram above %.0f samples or its sum above %.0f",
				 (double)FLEET_COUNT_MAX, (double)FLEET_HIST_SUM_MAX);
			return -1;
		}
	if (!json_numbers_ok(s->server) || !json_numbers_ok(s->load_changes)) {
		snprintf(why, cap, "impossible status: a number out of range in its server or load-change block");
		return -1;
	}
	return 0;
}

void fleet_text_scrub(char *text, const char *const *secrets)
{
	redact_secrets(text, secrets);
	redact_controls(text);
}

void fleet_text_scrub_into(char *dst, size_t cap, const char *src, size_t len, const char *const *secrets)
{
	if (!cap)
		return;
	char *t = malloc(len + 1);
	if (!t) {
		snprintf(dst, cap, "(out of memory)");
		return;
	}
	memcpy(t, src, len);
	t[len] = '\0';
	fleet_text_scrub(t, secrets);
	snprintf(dst, cap, "%s", t);
	free(t);
}

/* Every string (and key) of a carried JSON block: scrubbing only shrinks
 * or keeps a string, so it is done in place. */
static void json_scrub(cJSON *j, const char *const *secrets)
{
	for (cJSON *c = j; c; c = c->next) {
		if (c->string)
			fleet_text_scrub(c->string, secrets);
		if (cJSON_IsString(c) && c->valuestring)
			fleet_text_scrub(c->valuestring, secrets);
		if (c->child)
			json_scrub(c->child, secrets);
	}
}

void fleet_status_scrub(struct snapshot *s, const char *const *secrets)
{
	char *texts[] = {s->version, s->host, s->target_url, s->model, s->server_detected, s->status,
			 s->stop_reason, s->token_source, s->input_length_source, s->usage_mismatch_msg, s->slo_desc,
			 s->plan_text};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		fleet_text_scrub(texts[i], secrets);
	for (int k = 0; k < ERR_NKINDS; k++)
		fleet_text_scrub(s->last_msg[k], secrets);
	fleet_text_scrub(s->plan.note, secrets);
	for (size_t i = 0; i < s->plan.nsteps; i++)
		fleet_text_scrub(s->plan.steps[i].label, secrets);
	for (size_t i = 0; i < s->plan.nmodels; i++)
		fleet_text_scrub(s->plan.models[i].name, secrets);
	cJSON *blocks[] = {s->options, s->load_changes, s->server, s->series, s->request_log, s->sources};
	for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
		json_scrub(blocks[i], secrets);
}
