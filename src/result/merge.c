#include "config.h"

/* `infertop merge`, the fleet and --workers: runs made side by side added
 * into one struct snapshot, exactly for every count and histogram. Each
 * input's summary ("merged_from") is written by json_write.c. */

#include "infertop/snapshot.h"
#include "infertop/result.h"
#include "model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "infertop/hist.h"

/* Whether run id `id` is input s's own or one of the runs s merged. */
static bool snapshot_has_run(const struct snapshot *s, const char *id)
{
	if (!id[0])
		return false;
	if (strcmp(s->run_id, id) == 0)
		return true;
	const cJSON *src;
	cJSON_ArrayForEach(src, s->sources)
	{
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(src, "run_id");
		if (cJSON_IsString(r) && strcmp(r->valuestring, id) == 0)
			return true;
	}
	return false;
}

/* The same run twice (a file given twice, a run with its own snapshot, a
 * merge with one of its parts) would count its requests twice. */
static int merge_check_distinct(const struct snapshot *const *src, size_t n, char *err, size_t errcap)
{
	for (size_t i = 0; i < n; i++) {
		const char *ids[1 + 64];
		size_t k = 0;
		if (src[i]->run_id[0])
			ids[k++] = src[i]->run_id;
		const cJSON *so;
		cJSON_ArrayForEach(so, src[i]->sources)
		{
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(so, "run_id");
			if (k < sizeof ids / sizeof ids[0] && cJSON_IsString(r) && r->valuestring[0])
				ids[k++] = r->valuestring;
		}
		for (size_t j = i + 1; j < n; j++)
			for (size_t m = 0; m < k; m++)
				if (snapshot_has_run(src[j], ids[m])) {
					snprintf(err, errcap,
						 "inputs %zu and %zu hold the same run (run_id %s): merging would "
						 "count its requests twice",
						 i + 1, j + 1, ids[m]);
					return -1;
				}
	}
	return 0;
}

static double num_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void num_set(cJSON *o, const char *k, double v)
{
	cJSON *n = cJSON_CreateNumber(v);
	if (n && !cJSON_ReplaceItemInObjectCaseSensitive(o, k, n))
		cJSON_Delete(n);
}

/* A trace replayed in slices (--slice, a fleet): one replay of the whole
 * trace. What each slice sent adds up; what each read of the same file
 * (records in the window, lines reordered or skipped) is the file's; the
 * lateness is the merged queue time's. NULL when no input replayed one;
 * -1 on OOM. */
static int merge_trace(struct snapshot *dst, const struct snapshot *const *src, size_t n)
{
	const cJSON *first = NULL;
	double records = 0, sent = 0;
	bool replayed = true, cut = false;
	size_t slices = 0;
	for (size_t i = 0; i < n; i++) {
		const cJSON *t = src[i]->trace;
		if (!cJSON_IsObject(t))
			continue;
		first = first ? first : t;
		slices++;
		records += num_of(t, "records");
		sent += num_of(t, "sent");
		replayed = replayed && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "replayed"));
		cut = cut || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "cut_at_duration"));
	}
	if (!first)
		return 0;
	cJSON *o = cJSON_Duplicate(first, 1);
	if (!o)
		return -1;
	num_set(o, "records", records);
	num_set(o, "sent", sent);
	cJSON_ReplaceItemInObjectCaseSensitive(o, "replayed", cJSON_CreateBool(replayed));
	cJSON_ReplaceItemInObjectCaseSensitive(o, "cut_at_duration", cJSON_CreateBool(cut));
	cJSON_ReplaceItemInObjectCaseSensitive(o, "slice", cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "slices_merged", (double)slices);
	cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "lateness");
	const struct hist *q = dst->run[STAT_QUEUE];
	uint64_t c = q ? hist_count(q) : 0;
	if (cJSON_IsObject(l)) {
		num_set(l, "count", (double)c);
		num_set(l, "p50_ms", c ? (double)hist_percentile(q, 50) / 1e3 : NAN);
		num_set(l, "p99_ms", c ? (double)hist_percentile(q, 99) / 1e3 : NAN);
		num_set(l, "max_ms", c ? (double)hist_max(q) / 1e3 : NAN);
	}
	dst->trace = o;
	return 0;
}

/* --metadata tags: a key with the same value in every input is the
 * merged result's; the others stay with their input, under its entry in
 * merged_from ("metadata"), so nothing is lost and nothing is claimed
 * for runs that did not say it. */
static int merge_metadata(struct snapshot *dst, const struct snapshot *const *src, size_t n)
{
	bool any = false;
	for (size_t i = 0; i < n; i++)
		any |= src[i]->metadata && src[i]->metadata->child;
	if (!any)
		return 0;
	cJSON *common = cJSON_CreateObject();
	if (!common)
		return -1;
	for (const cJSON *it = src[0]->metadata ? src[0]->metadata->child : NULL; it; it = it->next) {
		bool same = true;
		for (size_t i = 1; same && i < n; i++) {
			const cJSON *v = src[i]->metadata ? cJSON_GetObjectItemCaseSensitive(src[i]->metadata, it->string)
							  : NULL;
			same = v && cJSON_Compare(v, it, true);
		}
		if (same && !cJSON_AddItemToObject(common, it->string, cJSON_Duplicate(it, true)))
			goto oom;
	}
	cJSON *entry = dst->sources ? dst->sources->child : NULL;
	for (size_t i = 0; i < n && entry; i++, entry = entry->next) {
		cJSON *own = NULL;
		for (const cJSON *it = src[i]->metadata ? src[i]->metadata->child : NULL; it; it = it->next) {
			if (cJSON_GetObjectItemCaseSensitive(common, it->string))
				continue;
			if ((!own && !(own = cJSON_AddObjectToObject(entry, "metadata"))) ||
			    !cJSON_AddItemToObject(own, it->string, cJSON_Duplicate(it, true)))
				goto oom;
		}
	}
	dst->metadata = common;
	return 0;
oom:
	cJSON_Delete(common);
	return -1;
}

/* Input s's values of option `key`, one per run it holds, appended to
 * vals: for an input that is itself a merge, each of its runs' where the
 * option differed (its options_differ), else its one value once per run;
 * null when it had no such option. */
static bool option_values(const struct snapshot *s, const char *key, cJSON *vals)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->options, key);
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(s->options_differ, key);
	if (!v && cJSON_IsArray(d)) {
		const cJSON *it;
		cJSON_ArrayForEach(it, d)
			if (!cJSON_AddItemToArray(vals, cJSON_Duplicate(it, true)))
				return false;
		return true;
	}
	for (unsigned r = 0; r < (s->nruns ? s->nruns : 1); r++)
		if (!cJSON_AddItemToArray(vals, v ? cJSON_Duplicate(v, true) : cJSON_CreateNull()))
			return false;
	return true;
}

/* Options whose value is an input's share of the load (how --workers and
 * a fleet split it): equal shares are not the merged run's load, which is
 * their sum (state's concurrency and rate). */
static bool load_share(const char *key)
{
	static const char *const keys[] = { "concurrency", "rate", "max_concurrency", "requests" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

/* The options: one the inputs all had with one value is the merged
 * result's (dataset, prefix tokens, output tokens...); one they did not
 * (each generator's seed, slice), and the load's shares whatever their
 * values, go to options_differ, name to the inputs' values in merged_from
 * order, so nothing is claimed for runs that did not share it and nothing
 * is lost. No input with options (an older file): none either. */
static int merge_options(struct snapshot *dst, const struct snapshot *const *src, size_t n)
{
	bool any = false;
	for (size_t i = 0; i < n; i++)
		any |= cJSON_IsObject(src[i]->options);
	if (!any)
		return 0;
	cJSON *common = cJSON_CreateObject(), *differ = cJSON_CreateObject();
	if (!common || !differ)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		/* Every key of any input, in the order first seen; an input's
		 * differing keys are keys too. */
		const cJSON *blocks[2] = { src[i]->options, src[i]->options_differ };
		for (int b = 0; b < 2; b++) {
			for (const cJSON *it = cJSON_IsObject(blocks[b]) ? blocks[b]->child : NULL; it; it = it->next) {
				if (!it->string || cJSON_GetObjectItemCaseSensitive(common, it->string) ||
				    cJSON_GetObjectItemCaseSensitive(differ, it->string))
					continue;
				const cJSON *first = cJSON_GetObjectItemCaseSensitive(src[0]->options, it->string);
				bool same = first != NULL && !load_share(it->string);
				for (size_t j = 0; same && j < n; j++) {
					const cJSON *v = cJSON_GetObjectItemCaseSensitive(src[j]->options, it->string);
					same = v && cJSON_Compare(v, first, true);
				}
				if (same) {
					if (!cJSON_AddItemToObject(common, it->string, cJSON_Duplicate(first, true)))
						goto oom;
					continue;
				}
				cJSON *vals = cJSON_AddArrayToObject(differ, it->string);
				for (size_t j = 0; vals && j < n; j++)
					if (!option_values(src[j], it->string, vals))
						goto oom;
				if (!vals)
					goto oom;
			}
		}
	}
	dst->options = common;
	dst->options_differ = differ;
	return 0;
oom:
	cJSON_Delete(common);
	cJSON_Delete(differ);
	return -1;
}

static int merge_into(struct snapshot *dst, struct snapshot_hists *keep, const struct snapshot *const *src,
		      size_t n, char *err, size_t errcap)
{
	memset(dst, 0, sizeof *dst);
	if (n == 0 || merge_check_distinct(src, n, err, errcap) != 0) {
		if (n == 0)
			snprintf(err, errcap, "nothing to merge");
		snapshot_hists_free(keep);
		return -1;
	}
	if (snapshot_hists_alloc(dst, keep) != 0 || !(dst->sources = cJSON_CreateArray()))
		goto oom;
	const struct snapshot *first = src[0];
	dst->schema = SNAPSHOT_SCHEMA;
	dst->reason = SNAPSHOT_MERGED;
	snprintf(dst->version, sizeof dst->version, "%s", PACKAGE_VERSION);
	snprintf(dst->status, sizeof dst->status, "merged");
	snprintf(dst->stop_reason, sizeof dst->stop_reason, "merged");
	snprintf(dst->target_url, sizeof dst->target_url, "%s", first->target_url);
	snprintf(dst->model, sizeof dst->model, "%s", first->model);
	snprintf(dst->server_detected, sizeof dst->server_detected, "%s", first->server_detected);
	dst->open_loop = first->open_loop;
	dst->max_output_tok_s = NAN;
	dst->vllm_request_rate = 0;
	dst->vllm_max_concurrency = 0;
	dst->burstiness = first->burstiness;
	/* Goodput adds up only when every run counted the same SLOs. */
	dst->have_slo = first->have_slo;
	snprintf(dst->slo_desc, sizeof dst->slo_desc, "%s", first->slo_desc);
	double start = INFINITY, end = -INFINITY, taken = -INFINITY;
	bool same_host = true;
	for (size_t i = 0; i < n; i++) {
		const struct snapshot *s = src[i];
		/* Fields shared by every input are kept; ones that differ are
		 * listed per input in merged_from. */
		if (strcmp(s->host, first->host) != 0)
			same_host = false;
		if (strcmp(s->target_url, first->target_url) != 0)
			dst->target_url[0] = '\0';
		if (strcmp(s->model, first->model) != 0)
			dst->model[0] = '\0';
		if (strcmp(s->server_detected, first->server_detected) != 0)
			dst->server_detected[0] = '\0';
		if (s->open_loop != first->open_loop)
			dst->open_loop = false;
		if (!(s->burstiness == first->burstiness))
			dst->burstiness = NAN;
		if (!s->have_slo || strcmp(s->slo_desc, first->slo_desc) != 0)
			dst->have_slo = false;
		dst->slo_run.ended += s->slo_run.ended;
		dst->slo_run.met_all += s->slo_run.met_all;
		for (int k = 0; k < SLO_N; k++)
			dst->slo_run.met[k] += s->slo_run.met[k];
		/* The measured span ends where the run did; warmup comes first,
		 * so it starts `duration` before (a cooldown shifts it later by
		 * its length, the same for runs made alike). */
		double s_end = s->start_unix + s->elapsed, s_start = s_end - s->duration;
		if (s_start < start)
			start = s_start;
		if (s_end > end)
			end = s_end;
		if (s->taken_unix > taken)
			taken = s->taken_unix;
		if (s->win_seconds > dst->win_seconds)
			dst->win_seconds = s->win_seconds;
		dst->concurrency += s->concurrency;
		dst->rate += s->rate;
		dst->max_concurrency += s->max_concurrency;
		dst->paused = dst->paused || s->paused;
		dst->in_flight += s->in_flight;
		dst->pending += s->pending;
		dst->vllm_request_rate += s->vllm_request_rate;
		dst->vllm_max_concurrency += s->vllm_max_concurrency;
		stats_counters_add(&dst->run_c, &s->run_c);
		stats_counters_add(&dst->win_c, &s->win_c);
		dst->started += s->started;
		/* Peaks need not coincide: the sum is an upper bound. */
		dst->max_in_flight += s->max_in_flight;
		dst->connections += s->connections;
		dst->connection_retries += s->connection_retries;
		dst->tokens_from_usage += s->tokens_from_usage;
		dst->tokens_from_chunks += s->tokens_from_chunks;
		dst->usage_mismatch += s->usage_mismatch;
		if (s->usage_mismatch)
			snprintf(dst->usage_mismatch_msg, sizeof dst->usage_mismatch_msg, "%s", s->usage_mismatch_msg);
		for (int k = 0; k < ERR_NKINDS; k++) {
			dst->errors[k] += s->errors[k];
			if (s->errors[k] && s->last_msg[k][0])
				snprintf(dst->last_msg[k], sizeof dst->last_msg[k], "%s", s->last_msg[k]);
		}
		for (int c = 0; c < STATS_HTTP_CODES; c++)
			dst->http_codes[c] += s->http_codes[c];
		for (int m = 0; m < STAT_NMETRICS; m++) {
			hist_add(dst->run[m], s->run[m]);
			hist_add(dst->win[m], s->win[m]);
		}
		for (int x = 0; x < XH_N; x++) {
			const struct hist *h = snapshot_xhist(s, (enum stats_xhist)x);
			if (!h)
				continue;
			struct hist *d = snapshot_xhist_get(dst, (enum stats_xhist)x);
			if (!d)
				goto oom;
			hist_add(d, h);
		}
		dst->sessions_done += s->sessions_done;
		dst->sessions_failed += s->sessions_failed;
		dst->sessions_context += s->sessions_context;
		dst->sessions_incomplete += s->sessions_incomplete;
		dst->session_turns += s->session_turns;
		dst->nruns += s->nruns ? s->nruns : 1;
		cJSON *sum = result_json_source(s);
		if (!sum)
			goto oom;
		cJSON_AddItemToArray(dst->sources, sum);
	}
	snprintf(dst->host, sizeof dst->host, "%s", same_host ? first->host : "");
	snprintf(dst->token_source, sizeof dst->token_source, "%s",
		 dst->tokens_from_usage && dst->tokens_from_chunks ? "mixed"
		 : dst->tokens_from_chunks			   ? "chunks"
								   : "usage");
	dst->start_unix = start;
	dst->duration = end > start ? end - start : 0;
	dst->elapsed = dst->duration;
	if (!dst->have_slo)
		memset(&dst->slo_run, 0, sizeof dst->slo_run);
	dst->taken_unix = taken;
	if (merge_trace(dst, src, n) != 0 || merge_metadata(dst, src, n) != 0 || merge_options(dst, src, n) != 0 ||
	    result_merge_series(&dst->series, src, n, dst->start_unix, dst->target_url[0] != '\0') != 0)
		goto oom;
	return 0;
oom:
	snapshot_release(dst);
	snprintf(err, errcap, "out of memory");
	return -1;
}

int snapshot_merge(struct snapshot *dst, const struct snapshot *const *src, size_t n, char *err, size_t errcap)
{
	return merge_into(dst, NULL, src, n, err, errcap);
}

int snapshot_remerge(struct snapshot *dst, const struct snapshot *const *src, size_t n, char *err, size_t errcap)
{
	struct snapshot_hists keep;
	snapshot_hists_take(dst, &keep);
	return merge_into(dst, &keep, src, n, err, errcap);
}

/* Kept apart from merge_into: a check on the inputs' summaries, so the
 * CLI (stderr, --strict) and the result's warnings read the same words. */
int snapshot_merge_targets_differ(const cJSON *sources, char *msg, size_t cap)
{
	static const char *const keys[] = {"target_url", "model"};
	int differ = 0;
	size_t len = 0;
	if (cap)
		msg[0] = '\0';
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		const char *first = NULL, *other = NULL;
		const cJSON *it;
		cJSON_ArrayForEach(it, sources)
		{
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, keys[k]);
			const char *s = cJSON_IsString(v) ? v->valuestring : "";
			if (!first)
				first = s;
			else if (strcmp(s, first) != 0 && !other)
				other = s;
		}
		if (!other)
			continue;
		differ++;
		int w = snprintf(msg + len, cap - len, "%s%s differs: %.100s vs %.100s", len ? "; " : "", keys[k],
				 *first ? first : "-", *other ? other : "-");
		if (w > 0 && (size_t)w < cap - len)
			len += (size_t)w;
	}
	return differ;
}
