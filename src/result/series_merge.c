#include "config.h"

/* The time series of a result file ("series": levels at 1 s, 10 s, 1 min)
 * read back as points, and the series of runs made side by side (a merge,
 * a fleet) put on one time axis. The series keeps no histograms, so a
 * merged latency percentile per window cannot be computed: the merge says
 * per key how it combined the inputs ("merge": {"how": {...}}), and the
 * page labels what it draws (e.g. the max of the generators' p99, an upper
 * bound of the merged p99), never a figure that pretends. */

#include "infertop/result.h"
#include "infertop/snapshot.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A number of the file (read back) or raw number text (a live merge). */
static double num(const cJSON *j)
{
	if (cJSON_IsNumber(j))
		return j->valuedouble;
	if (cJSON_IsRaw(j) && j->valuestring) {
		char *end;
		double d = strtod(j->valuestring, &end);
		return end != j->valuestring ? d : NAN;
	}
	return NAN;
}

#define MAX_LEVELS 8

size_t result_series_points(const cJSON *ser, const char *key, double **xo, double **vo)
{
	const cJSON *levels = cJSON_GetObjectItemCaseSensitive(ser, "levels");
	int nl = cJSON_GetArraySize(levels);
	*xo = *vo = NULL;
	if (nl <= 0 || nl > MAX_LEVELS)
		return 0;
	const cJSON *lv[MAX_LEVELS];
	double res[MAX_LEVELS], start[MAX_LEVELS];
	size_t total = 0;
	for (int i = 0; i < nl; i++) {
		lv[i] = cJSON_GetArrayItem(levels, i);
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(lv[i], "resolution_s");
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(lv[i], "start_s");
		res[i] = num(r) > 0 ? num(r) : 1;
		start[i] = isfinite(num(st)) ? num(st) : 0;
		total += (size_t)cJSON_GetArraySize(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(lv[i], "values"), key));
	}
	if (!total)
		return 0;
	double *x = malloc(total * sizeof *x), *v = malloc(total * sizeof *v);
	if (!x || !v) {
		free(x);
		free(v);
		return 0;
	}
	/* Coarsest first; each level up to where a finer one starts. */
	int order[MAX_LEVELS];
	for (int i = 0; i < nl; i++)
		order[i] = i;
	for (int i = 1; i < nl; i++)
		for (int j = i; j > 0 && res[order[j]] > res[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	size_t n = 0;
	for (int oi = 0; oi < nl; oi++) {
		int i = order[oi];
		double until = INFINITY;
		for (int j = 0; j < nl; j++)
			if (res[j] < res[i] && start[j] < until)
				until = start[j];
		const cJSON *a =
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(lv[i], "values"), key);
		int k = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, a)
		{
			double t = start[i] + res[i] * (double)k++;
			if (t >= until || n >= total)
				break;
			x[n] = t;
			v[n++] = num(it);
		}
	}
	*xo = x;
	*vo = v;
	return n;
}

/* How a key's values of runs side by side add up in one window. */
enum combine { COMB_SUM, COMB_MAX, COMB_MEAN };

static const char *const combine_names[] = { "sum", "max", "mean" };

/* Counts and rates add up, and so do the in-flight requests and the
 * targets. A percentile does not: the max of the inputs' percentiles is
 * an upper bound of the merged one (each input has at most 1% of its
 * requests above its p99, so the union has at most 1% above their max).
 * The server's figures are the same server's when every input loaded one
 * target (their mean), else distinct servers' (counts add up, shares and
 * rates are averaged). */
static enum combine combine_of(const char *key, bool same_target)
{
	static const char *const sum[] = { "output_tok_s", "requests_s", "errors_s", "in_flight", "target" };
	for (size_t i = 0; i < sizeof sum / sizeof sum[0]; i++)
		if (strcmp(key, sum[i]) == 0)
			return COMB_SUM;
	size_t n = strlen(key);
	if (n > 7 && (strcmp(key + n - 7, "_p99_ms") == 0 || strcmp(key + n - 7, "_p50_ms") == 0))
		return COMB_MAX;
	if (!same_target && (strcmp(key, "server_running") == 0 || strcmp(key, "server_waiting") == 0 ||
			     strcmp(key, "gpu_power_w") == 0))
		return COMB_SUM;
	return COMB_MEAN;
}

/* The keys of every input's levels, in the order first seen. */
static int collect_keys(cJSON *keys, const struct snapshot *const *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const cJSON *lv;
		cJSON_ArrayForEach(lv, cJSON_GetObjectItemCaseSensitive(src[i]->series, "levels"))
		{
			const cJSON *k;
			cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(lv, "values"))
			{
				if (!k->string || cJSON_GetObjectItemCaseSensitive(keys, k->string))
					continue;
				if (!cJSON_AddTrueToObject(keys, k->string))
					return -1;
			}
		}
	}
	return 0;
}

/* Wall-clock times of the input's first and last point (their starts). */
static bool extent_of(const struct snapshot *s, double *first, double *last)
{
	bool any = false;
	const cJSON *lv;
	cJSON_ArrayForEach(lv, cJSON_GetObjectItemCaseSensitive(s->series, "levels"))
	{
		double res = num(cJSON_GetObjectItemCaseSensitive(lv, "resolution_s"));
		double st = num(cJSON_GetObjectItemCaseSensitive(lv, "start_s"));
		double pts = num(cJSON_GetObjectItemCaseSensitive(lv, "points"));
		if (!(res > 0) || !isfinite(st) || !(pts > 0))
			continue;
		double a = s->start_unix + st, b = a + res * (pts - 1);
		if (!any || a < *first)
			*first = a;
		if (!any || b > *last)
			*last = b;
		any = true;
	}
	return any;
}

/* One merged level: `slots` windows of res_s from t0 (wall clock), each
 * key combined over the inputs. Per input, the mean of its points in the
 * window (one point when the resolutions match). */
static cJSON *merged_level(const struct snapshot *const *src, size_t n, const cJSON *keys, bool same_target,
			   double start_unix, double t0, double res, size_t slots)
{
	cJSON *lv = cJSON_CreateObject();
	cJSON *vals = lv ? cJSON_AddObjectToObject(lv, "values") : NULL;
	double *acc = calloc(slots, sizeof *acc), *sum = calloc(slots, sizeof *sum);
	unsigned *cnt = calloc(slots, sizeof *cnt), *inputs = calloc(slots, sizeof *inputs);
	if (!vals || !acc || !sum || !cnt || !inputs)
		goto oom;
	cJSON_AddItemToObject(lv, "resolution_s", snapshot_json_number(res));
	cJSON_AddItemToObject(lv, "start_s", snapshot_json_number(t0 - start_unix));
	cJSON_AddItemToObject(lv, "points", snapshot_json_number((double)slots));
	const cJSON *k;
	cJSON_ArrayForEach(k, keys)
	{
		enum combine how = combine_of(k->string, same_target);
		for (size_t j = 0; j < slots; j++) {
			acc[j] = how == COMB_MAX ? -INFINITY : 0;
			inputs[j] = 0;
		}
		for (size_t i = 0; i < n; i++) {
			double *x, *v;
			size_t np = result_series_points(src[i]->series, k->string, &x, &v);
			memset(sum, 0, slots * sizeof *sum);
			memset(cnt, 0, slots * sizeof *cnt);
			for (size_t p = 0; p < np; p++) {
				double at = floor((src[i]->start_unix + x[p] - t0) / res + 1e-6);
				if (at < 0 || at >= (double)slots || !isfinite(v[p]))
					continue;
				sum[(size_t)at] += v[p];
				cnt[(size_t)at]++;
			}
			free(x);
			free(v);
			for (size_t j = 0; j < slots; j++) {
				if (!cnt[j])
					continue;
				double m = sum[j] / cnt[j];
				acc[j] = how == COMB_MAX ? fmax(acc[j], m) : acc[j] + m;
				inputs[j]++;
			}
		}
		cJSON *a = cJSON_AddArrayToObject(vals, k->string);
		if (!a)
			goto oom;
		for (size_t j = 0; j < slots; j++) {
			double v = !inputs[j] ? NAN : how == COMB_MEAN ? acc[j] / inputs[j] : acc[j];
			cJSON_AddItemToArray(a, snapshot_json_float((float)v));
		}
	}
	free(acc);
	free(sum);
	free(cnt);
	free(inputs);
	return lv;
oom:
	free(acc);
	free(sum);
	free(cnt);
	free(inputs);
	cJSON_Delete(lv);
	return NULL;
}

/* Inputs whose server replicas kept their own series. */
static size_t with_replica_series(const struct snapshot *const *src, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const cJSON *r;
		bool has = false;
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(src[i]->server, "replicas"))
			has |= cJSON_GetObjectItemCaseSensitive(r, "series") != NULL;
		k += has;
	}
	return k;
}

int result_merge_series(cJSON **out, const struct snapshot *const *src, size_t n, double start_unix,
			bool same_target)
{
	*out = NULL;
	double first = 0, last = 0;
	bool any = false;
	size_t with = 0;
	for (size_t i = 0; i < n; i++) {
		double a = 0, b = 0;
		if (!extent_of(src[i], &a, &b))
			continue;
		first = any ? fmin(first, a) : a;
		last = any ? fmax(last, b) : b;
		any = true;
		with++;
	}
	if (!any)
		return 0;
	cJSON *o = cJSON_CreateObject();
	cJSON *levels = o ? cJSON_AddArrayToObject(o, "levels") : NULL;
	cJSON *keys = cJSON_CreateObject();
	if (!levels || !keys || collect_keys(keys, src, n) != 0)
		goto oom;
	/* The writer's plan (json_write.c): 1 s for the last hour, 10 s for
	 * the last day, 1 min for the whole, on windows of the wall clock. */
	static const struct {
		double res, span, after;
	} plan[] = {
		{ 1, RESULT_SERIES_FINE_S, 0 },
		{ 10, RESULT_SERIES_MID_S, RESULT_SERIES_FINE_S },
		{ 60, INFINITY, RESULT_SERIES_MID_S },
	};
	double el = last - first;
	for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
		if (i > 0 && el <= plan[i].after)
			continue;
		double res = plan[i].res, span = fmin(el, plan[i].span);
		double t0 = floor((last - span) / res) * res;
		size_t slots = (size_t)floor((last - t0) / res + 1e-6) + 1;
		cJSON *lv = merged_level(src, n, keys, same_target, start_unix, t0, res, slots);
		if (!lv)
			goto oom;
		cJSON_AddItemToArray(levels, lv);
	}
	cJSON *labels = cJSON_AddObjectToObject(o, "labels");
	cJSON *merge = cJSON_AddObjectToObject(o, "merge");
	cJSON *how = merge ? cJSON_AddObjectToObject(merge, "how") : NULL;
	if (!labels || !how)
		goto oom;
	cJSON_AddItemToObject(merge, "inputs", snapshot_json_number((double)with));
	/* A merge keeps no server block (each input scraped on its own
	 * clock, maybe other replicas): the replicas' series are not put
	 * side by side as if they were one scrape's. Said, not hidden. */
	size_t reps = with_replica_series(src, n);
	if (reps) {
		char why[200];
		snprintf(why, sizeof why,
			 "dropped: %zu input%s kept each server replica's series; a merge keeps no server block, "
			 "the inputs' files have them",
			 reps, reps == 1 ? "" : "s");
		if (!cJSON_AddStringToObject(merge, "replica_series", why))
			goto oom;
	}
	const cJSON *k;
	cJSON_ArrayForEach(k, keys)
	{
		const cJSON *lab = NULL;
		for (size_t i = 0; i < n && !cJSON_IsString(lab); i++)
			lab = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(src[i]->series, "labels"), k->string);
		if (!cJSON_AddStringToObject(labels, k->string, cJSON_IsString(lab) ? lab->valuestring : k->string) ||
		    !cJSON_AddStringToObject(how, k->string, combine_names[combine_of(k->string, same_target)]))
			goto oom;
	}
	cJSON_Delete(keys);
	*out = o;
	return 0;
oom:
	cJSON_Delete(keys);
	cJSON_Delete(o);
	return -1;
}
