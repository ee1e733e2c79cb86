#include "config.h"

/* `infertop compare`: two runs side by side, one row per figure (A, B,
 * which way is better, vLLM's key for --fail-if), and the options that
 * differ. The renderers (text.c, json_write.c, csv.c, markdown.c) only
 * read the rows. */

#include "infertop/result.h"
#include "infertop/snapshot.h"
#include "infertop/hist.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void crow_add(struct result_compare *c, const char *name, const char *key, const char *unit, int better,
		     double a, double b)
{
	struct result_crow *r = &c->rows[c->n++];
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->key, sizeof r->key, "%s", key);
	snprintf(r->unit, sizeof r->unit, "%s", unit);
	r->prec = strcmp(unit, "count") == 0 ? 0 : strcmp(unit, "share") == 0 ? 4 : 3;
	r->better = better;
	r->a = a;
	r->b = b;
}

/* The options of the two runs that differ. "output" is left out: where
 * the file went says nothing of how the run ran. */
static cJSON *options_diff(const cJSON *a, const cJSON *b)
{
	cJSON *d = cJSON_CreateObject();
	const cJSON *sides[2] = { a, b };
	for (int s = 0; d && s < 2; s++) {
		const cJSON *it;
		cJSON_ArrayForEach(it, sides[s])
		{
			if (!it->string || strcmp(it->string, "output") == 0 ||
			    cJSON_GetObjectItemCaseSensitive(d, it->string))
				continue;
			const cJSON *va = cJSON_GetObjectItemCaseSensitive(a, it->string);
			const cJSON *vb = cJSON_GetObjectItemCaseSensitive(b, it->string);
			if (va && vb && cJSON_Compare(va, vb, true))
				continue;
			cJSON *e = cJSON_AddObjectToObject(d, it->string);
			if (!e)
				break;
			cJSON_AddItemToObject(e, "a", va ? cJSON_Duplicate(va, true) : cJSON_CreateNull());
			cJSON_AddItemToObject(e, "b", vb ? cJSON_Duplicate(vb, true) : cJSON_CreateNull());
		}
	}
	if (d && !d->child) {
		cJSON_Delete(d);
		d = NULL;
	}
	return d;
}

/* The tags of the two runs that differ (absent on one side: null). */
static cJSON *metadata_diff(const cJSON *a, const cJSON *b)
{
	cJSON *d = cJSON_CreateObject();
	const cJSON *sides[2] = { a, b };
	for (int s = 0; d && s < 2; s++) {
		for (const cJSON *it = sides[s] ? sides[s]->child : NULL; it; it = it->next) {
			const cJSON *va = cJSON_GetObjectItemCaseSensitive(a, it->string);
			const cJSON *vb = cJSON_GetObjectItemCaseSensitive(b, it->string);
			if ((va && vb && cJSON_Compare(va, vb, true)) || cJSON_GetObjectItemCaseSensitive(d, it->string))
				continue;
			cJSON *e = cJSON_AddObjectToObject(d, it->string);
			if (!e)
				break;
			cJSON_AddItemToObject(e, "a", va ? cJSON_Duplicate(va, true) : cJSON_CreateNull());
			cJSON_AddItemToObject(e, "b", vb ? cJSON_Duplicate(vb, true) : cJSON_CreateNull());
		}
	}
	if (d && !d->child) {
		cJSON_Delete(d);
		d = NULL;
	}
	return d;
}

void result_compare_release(struct result_compare *c)
{
	cJSON_Delete(c->metadata_diff);
	c->metadata_diff = NULL;
	cJSON_Delete(c->options_diff);
	c->options_diff = NULL;
}

const char *result_crow_verdict(const struct result_crow *r)
{
	if (!r->better || isnan(r->a) || isnan(r->b))
		return "";
	if (r->b == r->a)
		return "same";
	return (r->b > r->a) == (r->better > 0) ? "better" : "worse";
}

const struct result_crow *result_compare_find(const struct result_compare *c, const char *key)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->rows[i].key, key) == 0)
			return &c->rows[i];
	return NULL;
}

static double error_share(const struct snapshot *s)
{
	uint64_t f = snapshot_failed(s), t = f + s->run_c.completed;
	return t ? (double)f / (double)t : 0.0;
}

static double p50_ms(const struct snapshot *s, enum stats_xhist x)
{
	const struct hist *h = snapshot_xhist(s, x);
	return h ? (double)hist_percentile(h, 50) / 1000.0 : NAN;
}

static double fail_share(const struct snapshot *s)
{
	return s->sessions_done ? (double)s->sessions_failed / (double)s->sessions_done : NAN;
}

/* The prefix cache's and the sessions' rows, when either run has them
 * (NaN on a side without: no verdict). */
static void compare_cache_sessions(struct result_compare *c, const struct snapshot *a, const struct snapshot *b)
{
	if (snapshot_has_cache(a) || snapshot_has_cache(b)) {
		crow_add(c, "cache hit rate", "cache_hit_rate", "share", +1, stats_cache_hit_rate(&a->run_c),
			 stats_cache_hit_rate(&b->run_c));
		crow_add(c, "ttft mostly cached p50", "median_ttft_mostly_cached_ms", "ms", -1, p50_ms(a, XH_TTFT_WARM),
			 p50_ms(b, XH_TTFT_WARM));
		crow_add(c, "ttft cold p50", "median_ttft_cold_ms", "ms", -1, p50_ms(a, XH_TTFT_COLD),
			 p50_ms(b, XH_TTFT_COLD));
	}
	if (!snapshot_has_sessions(a) && !snapshot_has_sessions(b))
		return;
	for (int t = 0; t < STATS_TURNS; t++) {
		char name[48], key[48];
		snprintf(name, sizeof name, "ttft turn %s p50", stats_turn_label(t));
		snprintf(key, sizeof key, "median_ttft_turn_%s_ms", stats_turn_label(t));
		enum stats_xhist x = (enum stats_xhist)(XH_TURN_TTFT + t);
		crow_add(c, name, key, "ms", -1, p50_ms(a, x), p50_ms(b, x));
	}
	crow_add(c, "sessions failed", "session_fail_share", "share", -1, fail_share(a), fail_share(b));
}

/* A fleet's figure ("generators_planned"...), NaN when the run is no
 * fleet's merge; the lost ones counted. */
static double fleet_figure(const struct snapshot *s, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->fleet, key);
	if (cJSON_IsArray(v))
		return cJSON_GetArraySize(v);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Rows for fleet merges (either side): a lost generator is load missing. */
static void fleet_rows(struct result_compare *c, const struct snapshot *a, const struct snapshot *b)
{
	if (!a->fleet && !b->fleet)
		return;
	static const char *const keys[] = {"generators_planned", "generators_merged", "generators_lost"};
	static const int better[] = {0, +1, -1};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		crow_add(c, keys[i], keys[i], "count", better[i], fleet_figure(a, keys[i]), fleet_figure(b, keys[i]));
}

void result_compare_build(struct result_compare *c, const struct snapshot *a, const struct snapshot *b,
			  const char *file_a, const char *file_b)
{
	c->file_a = file_a;
	c->a = a;
	c->b = b;
	c->file_b = file_b;
	c->n = 0;
	c->options_diff = options_diff(a->options, b->options);
	c->metadata_diff = metadata_diff(a->metadata, b->metadata);
	crow_add(c, "duration", "duration", "s", 0, a->duration, b->duration);
	crow_add(c, "completed", "completed", "count", 0, (double)a->run_c.completed, (double)b->run_c.completed);
	crow_add(c, "failed", "failed", "count", -1, (double)snapshot_failed(a), (double)snapshot_failed(b));
	crow_add(c, "error_share", "error_share", "share", -1, error_share(a), error_share(b));
	fleet_rows(c, a, b);
	crow_add(c, "output_tokens", "total_output_tokens", "count", 0, (double)a->run_c.output_tokens,
		 (double)b->run_c.output_tokens);
	crow_add(c, "request_throughput", "request_throughput", "req/s", +1,
		 snapshot_rate(a->run_c.completed, a->duration), snapshot_rate(b->run_c.completed, b->duration));
	crow_add(c, "output_throughput", "output_throughput", "tok/s", +1,
		 snapshot_rate(a->run_c.output_tokens, a->duration), snapshot_rate(b->run_c.output_tokens, b->duration));
	crow_add(c, "total_token_throughput", "total_token_throughput", "tok/s", +1,
		 snapshot_rate(a->run_c.output_tokens + a->run_c.input_tokens, a->duration),
		 snapshot_rate(b->run_c.output_tokens + b->run_c.input_tokens, b->duration));
	static const int which[] = {0, 3, 4, 6, 7}; /* mean p50 p90 p99 p99.9 */
	static const char *const vllm[] = {"mean", "median", "p90", "p99", "p99.9"};
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct result_mstat sa, sb;
		result_mstat_of(a->run[m], &sa);
		result_mstat_of(b->run[m], &sb);
		for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
			char name[48], key[48];
			const char *mn = stats_metric_name((enum stat_metric)m);
			snprintf(name, sizeof name, "%s %s", mn, result_mstat_heads[which[i]]);
			snprintf(key, sizeof key, "%s_%s_ms", vllm[i], mn);
			crow_add(c, name, key, "ms", -1, sa.v[which[i]], sb.v[which[i]]);
		}
	}
	compare_cache_sessions(c, a, b);
}

double result_crow_delta_pct(const struct result_crow *r)
{
	return r->a != 0 ? 100.0 * (r->b - r->a) / fabs(r->a) : NAN;
}
