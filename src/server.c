#include "config.h"

#include "infertop/server.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

static const char *const gauge_keys[SRV_NGAUGES] = {
	[SRV_RUNNING] = "running",
	[SRV_WAITING] = "waiting",
	[SRV_KV_USAGE] = "kv_usage",
	[SRV_KV_USAGE_MAX] = "kv_usage_max",
	[SRV_PREEMPT_RATE] = "preemptions_per_s",
	[SRV_PREFIX_HIT] = "prefix_cache_hit_rate",
	[SRV_PROMPT_TOK_S] = "prompt_tokens_per_s",
	[SRV_GEN_TOK_S] = "generation_tokens_per_s",
};

static const char *const latency_keys[SRVL_N] = {
	[SRVL_TTFT] = "ttft", [SRVL_ITL] = "itl", [SRVL_E2E] = "e2e", [SRVL_QUEUE] = "queue",
};

const char *server_status_name(enum server_status s)
{
	switch (s) {
	case SERVER_OFF:
		return "off";
	case SERVER_PENDING:
		return "pending";
	case SERVER_UP:
		return "up";
	case SERVER_STALE:
		return "stale";
	case SERVER_DOWN:
		return "down";
	}
	return "?";
}

void server_state_init(struct server_state *st)
{
	memset(st, 0, sizeof *st);
	st->status = SERVER_OFF;
	st->gpu_status = SERVER_OFF;
}

void server_agg_add(struct server_agg *a, double v)
{
	if (!isfinite(v))
		return;
	if (a->n == 0 || v < a->min)
		a->min = v;
	if (a->n == 0 || v > a->max)
		a->max = v;
	a->sum += v;
	a->n++;
}

double server_agg_mean(const struct server_agg *a)
{
	return a->n ? a->sum / (double)a->n : NAN;
}

/* ---- JSON ---- */

static void add_value(cJSON *o, const char *k, const struct server_value *v, double scale)
{
	if (v->valid)
		cJSON_AddNumberToObject(o, k, v->v * scale);
	else
		cJSON_AddNullToObject(o, k);
}

static cJSON *agg_object(const struct server_agg *a)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	if (a->n) {
		cJSON_AddNumberToObject(o, "min", a->min);
		cJSON_AddNumberToObject(o, "mean", server_agg_mean(a));
		cJSON_AddNumberToObject(o, "max", a->max);
	} else {
		cJSON_AddNullToObject(o, "min");
		cJSON_AddNullToObject(o, "mean");
		cJSON_AddNullToObject(o, "max");
	}
	cJSON_AddNumberToObject(o, "samples", (double)a->n);
	return o;
}

/* "p50_bucket_ms": [lo, hi] beside "p50_ms": the value is only known to
 * lie there (null for +Inf, absent when exact). */
static void add_bucket(cJSON *o, const char *k, const struct server_value *v)
{
	if (!v->valid || !(v->hi > v->lo))
		return;
	cJSON *a = cJSON_AddArrayToObject(o, k);
	if (!a)
		return;
	cJSON_AddItemToArray(a, cJSON_CreateNumber(v->lo * 1e3));
	cJSON_AddItemToArray(a, isinf(v->hi) ? cJSON_CreateNull() : cJSON_CreateNumber(v->hi * 1e3));
}

static cJSON *latency_object(const struct server_value *p50, const struct server_value *p90,
			     const struct server_value *p99, const struct server_value *mean)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_value(o, "p50_ms", p50, 1e3);
	add_value(o, "p90_ms", p90, 1e3);
	add_value(o, "p99_ms", p99, 1e3);
	add_value(o, "mean_ms", mean, 1e3);
	add_bucket(o, "p50_bucket_ms", p50);
	add_bucket(o, "p90_bucket_ms", p90);
	add_bucket(o, "p99_bucket_ms", p99);
	return o;
}

static void add_str_or_null(cJSON *o, const char *k, const char *s)
{
	if (s && *s)
		cJSON_AddStringToObject(o, k, s);
	else
		cJSON_AddNullToObject(o, k);
}

static bool live(enum server_status s)
{
	return s == SERVER_UP || s == SERVER_STALE;
}

static cJSON *gpu_object(const struct server_state *st)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", server_status_name(st->gpu_status));
	cJSON_AddBoolToObject(o, "available", st->gpu_scrapes > 0);
	add_str_or_null(o, "url", st->gpu_url);
	add_str_or_null(o, "error", st->gpu_status == SERVER_UP ? NULL : st->gpu_error);
	cJSON_AddNumberToObject(o, "scrapes", (double)st->gpu_scrapes);
	cJSON_AddNumberToObject(o, "failures", (double)st->gpu_failures);
	add_value(o, "power_total_w", &st->power_total_w, 1);
	add_value(o, "joules_per_token", &st->joules_per_token, 1);
	cJSON_AddItemToObject(o, "run_power_total_w", agg_object(&st->power_agg));
	cJSON_AddItemToObject(o, "run_joules_per_token", agg_object(&st->jpt_agg));
	cJSON *arr = cJSON_AddArrayToObject(o, "gpus");
	for (int i = 0; arr && i < st->ngpus && live(st->gpu_status); i++) {
		const struct server_gpu *g = &st->gpu[i];
		cJSON *go = cJSON_CreateObject();
		if (!go)
			break;
		cJSON_AddStringToObject(go, "name", g->name);
		if (g->index >= 0)
			cJSON_AddNumberToObject(go, "index", g->index);
		else
			cJSON_AddNullToObject(go, "index");
		add_value(go, "util_pct", &g->util_pct, 1);
		add_value(go, "mem_used_mib", &g->mem_used_mib, 1);
		add_value(go, "mem_total_mib", &g->mem_total_mib, 1);
		add_value(go, "power_w", &g->power_w, 1);
		add_value(go, "temp_c", &g->temp_c, 1);
		add_value(go, "sm_clock_mhz", &g->sm_clock_mhz, 1);
		add_value(go, "gr_engine_active", &g->gr_active, 1);
		add_value(go, "dram_active", &g->dram_active, 1);
		add_value(go, "tensor_active", &g->tensor_active, 1);
		cJSON_AddItemToArray(arr, go);
	}
	return o;
}

cJSON *server_to_json(const struct server_state *st)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "status", server_status_name(st->status));
	/* Available = the endpoint answered with metrics at least once. */
	cJSON_AddBoolToObject(o, "available", st->scrapes > 0);
	add_str_or_null(o, "url", st->url);
	add_str_or_null(o, "profile", st->detected);
	add_str_or_null(o, "error", st->status == SERVER_UP ? NULL : st->last_error);
	add_str_or_null(o, "note", st->note);
	cJSON_AddNumberToObject(o, "scrapes", (double)st->scrapes);
	cJSON_AddNumberToObject(o, "failures", (double)st->failures);
	cJSON_AddNumberToObject(o, "skipped", (double)st->skipped);

	cJSON *latest = cJSON_AddObjectToObject(o, "latest");
	cJSON *run = cJSON_AddObjectToObject(o, "run");
	for (int g = 0; g < SRV_NGAUGES; g++) {
		if (latest)
			add_value(latest, gauge_keys[g], &st->gauge[g], 1);
		if (run)
			cJSON_AddItemToObject(run, gauge_keys[g], agg_object(&st->agg[g]));
	}
	cJSON *win = cJSON_AddObjectToObject(o, "latency_window");
	cJSON *rl = cJSON_AddObjectToObject(o, "latency_run");
	for (int l = 0; l < SRVL_N; l++) {
		if (win)
			cJSON_AddItemToObject(win, latency_keys[l],
					      latency_object(&st->p50[l], &st->p90[l], &st->p99[l], &st->mean[l]));
		if (rl)
			cJSON_AddItemToObject(rl, latency_keys[l],
					      latency_object(&st->run_p50[l], &st->run_p90[l], &st->run_p99[l],
							     &st->run_mean[l]));
	}
	cJSON *tot = cJSON_AddObjectToObject(o, "run_totals");
	if (tot) {
		add_value(tot, "prompt_tokens", &st->run_prompt_tokens, 1);
		add_value(tot, "generation_tokens", &st->run_gen_tokens, 1);
		add_value(tot, "preemptions", &st->run_preemptions, 1);
	}
	cJSON *wa = cJSON_AddArrayToObject(o, "watch");
	for (int w = 0; wa && w < st->nwatch; w++) {
		cJSON *wo = cJSON_CreateObject();
		if (!wo)
			break;
		cJSON_AddStringToObject(wo, "expr", st->watch[w].expr);
		add_value(wo, "value", &st->watch[w].value, 1);
		add_value(wo, "rate_per_s", &st->watch[w].rate, 1);
		cJSON_AddItemToArray(wa, wo);
	}
	if (st->gpu_status != SERVER_OFF)
		cJSON_AddItemToObject(o, "gpu", gpu_object(st));
	return o;
}

/* ---- text ---- */

static void fmt_num(char *b, size_t cap, const struct server_value *v, const char *f, double scale)
{
	if (v->valid)
		snprintf(b, cap, f, v->v * scale);
	else
		snprintf(b, cap, "-");
}

void server_format_brief(const struct server_state *st, char *buf, size_t cap)
{
	if (!cap)
		return;
	buf[0] = '\0';
	switch (st->status) {
	case SERVER_OFF:
		if (st->gpu_status == SERVER_OFF)
			snprintf(buf, cap, "server metrics: off");
		break;
	case SERVER_PENDING:
		snprintf(buf, cap, "server metrics: pending");
		return;
	case SERVER_DOWN:
		snprintf(buf, cap, "server metrics: down (%.*s)", 80, st->last_error[0] ? st->last_error : "no answer");
		return;
	case SERVER_UP:
	case SERVER_STALE: {
		char r[24], w[24], k[24];
		fmt_num(r, sizeof r, &st->gauge[SRV_RUNNING], "%.0f", 1);
		fmt_num(w, sizeof w, &st->gauge[SRV_WAITING], "%.0f", 1);
		fmt_num(k, sizeof k, &st->gauge[SRV_KV_USAGE], "%.0f%%", 100);
		snprintf(buf, cap, "run %s wait %s kv %s%s", r, w, k, st->status == SERVER_STALE ? " (stale)" : "");
		break;
	}
	}
	if (live(st->gpu_status) && st->power_total_w.valid) {
		size_t n = strlen(buf);
		char j[32] = "";
		if (st->joules_per_token.valid)
			snprintf(j, sizeof j, " %.2f J/tok", st->joules_per_token.v);
		snprintf(buf + n, cap - n, "%s%.0f W%s", n ? " " : "", st->power_total_w.v, j);
	}
}

static void print_lat(FILE *out, const char *name, const struct server_state *st, int l)
{
	char a[48], b[48], c[24];
	if (!st->run_p50[l].valid && !st->run_mean[l].valid)
		return;
	server_format_ms(&st->run_p50[l], a, sizeof a);
	server_format_ms(&st->run_p99[l], b, sizeof b);
	fmt_num(c, sizeof c, &st->run_mean[l], "%.1f", 1e3);
	fprintf(out, "%-40s p50 %s  p99 %s  mean %s\n", name, a, b, c);
}

static void print_agg(FILE *out, const char *name, const struct server_agg *a, double scale, const char *unit)
{
	if (!a->n)
		return;
	fprintf(out, "%-40s mean %.2f%s  max %.2f%s\n", name, server_agg_mean(a) * scale, unit, a->max * scale, unit);
}

/* A title centred in a 50-column dashed rule, like the client sections. */
static void rule(FILE *out, const char *title)
{
	int n = (int)strlen(title), left = n < 50 ? (50 - n) / 2 : 0, right = n < 50 ? 50 - n - left : 0;
	fprintf(out, "%.*s%s%.*s\n", left, "--------------------------------------------------", title, right,
		"--------------------------------------------------");
}

void server_print_summary(FILE *out, const struct server_state *st)
{
	if (st->status == SERVER_OFF && st->gpu_status == SERVER_OFF)
		return;
	if (st->status != SERVER_OFF) {
		char title[64];
		snprintf(title, sizeof title, " Server metrics (%s) ", st->detected[0] ? st->detected : "unknown");
		rule(out, title);
		if (st->scrapes == 0) {
			fprintf(out, "%-40s %s\n", "Unavailable:", st->last_error[0] ? st->last_error : "no answer");
		} else {
			if (st->status != SERVER_UP)
				fprintf(out, "%-40s %s (%s)\n", "Status at the end:", server_status_name(st->status),
					st->last_error);
			if (st->note[0])
				fprintf(out, "%-40s %s\n", "Note:", st->note);
			print_agg(out, "Running requests:", &st->agg[SRV_RUNNING], 1, "");
			print_agg(out, "Waiting requests:", &st->agg[SRV_WAITING], 1, "");
			print_agg(out, "KV-cache usage:", &st->agg[SRV_KV_USAGE], 100, "%");
			if (st->run_gen_tokens.valid)
				fprintf(out, "%-40s %.0f\n", "Server generated tokens:", st->run_gen_tokens.v);
			print_lat(out, "Server TTFT (ms):", st, SRVL_TTFT);
			print_lat(out, "Server ITL (ms):", st, SRVL_ITL);
			print_lat(out, "Server E2E (ms):", st, SRVL_E2E);
			print_lat(out, "Server queue time (ms):", st, SRVL_QUEUE);
		}
	}
	if (st->gpu_status != SERVER_OFF) {
		if (st->status == SERVER_OFF)
			rule(out, " GPU metrics ");
		if (st->gpu_scrapes == 0)
			fprintf(out, "%-40s %s\n", "GPU metrics unavailable:", st->gpu_error);
		print_agg(out, "GPU power (W):", &st->power_agg, 1, "");
		print_agg(out, "Energy per output token (J):", &st->jpt_agg, 1, "");
	}
}

void server_format_ms(const struct server_value *v, char *buf, size_t cap)
{
	if (!v || !v->valid || !isfinite(v->v)) {
		snprintf(buf, cap, "-");
		return;
	}
	double ms = v->v * 1e3, lo = v->lo * 1e3, hi = v->hi * 1e3;
	/* Exact, or a bucket narrow enough that the interpolation misleads
	 * nobody: within 1 ms or a quarter of the value. */
	if (!(hi > lo) || (isfinite(hi) && (hi - lo <= 1.0 || hi - lo <= 0.25 * hi))) {
		snprintf(buf, cap, ms < 10 ? "%.2f" : ms < 100 ? "%.1f" : "%.0f", ms);
		return;
	}
	if (isinf(hi))
		snprintf(buf, cap, ">%.0f", lo);
	else if (lo <= 0)
		snprintf(buf, cap, "<=%.*f", hi < 10 ? 1 : 0, hi);
	else
		snprintf(buf, cap, "%.0f (%.0f-%.0f)", ms, lo, hi);
}
