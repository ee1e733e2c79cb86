#include "config.h"

/* The model's own: what a struct snapshot owns and how it is freed, the
 * histograms a parse or merge hands on to the next, and the figures every
 * renderer derives (failed requests, rates, a latency's statistics). The
 * reader (snapshot_read.c), merge.c, compare.c and the renderers use it;
 * it calls none of them. */

#include "infertop/snapshot.h"
#include "infertop/result.h"
#include "model.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/hist.h"

const char *snapshot_reason_name(enum snapshot_reason r)
{
	return result_key_name(result_keys_reason, (int)r, "?");
}

uint64_t snapshot_failed(const struct snapshot *s)
{
	uint64_t t = 0;
	for (int k = 0; k < ERR_NKINDS; k++)
		t += s->errors[k];
	return t;
}

const struct hist *snapshot_xhist(const struct snapshot *s, enum stats_xhist x)
{
	return s->xh[x] && hist_count(s->xh[x]) ? s->xh[x] : NULL;
}

bool snapshot_has_cache(const struct snapshot *s)
{
	return stats_cache_shown(&s->run_c, &s->win_c, snapshot_has_sessions(s));
}

bool snapshot_has_sessions(const struct snapshot *s)
{
	if (s->sessions_done)
		return true;
	for (int x = XH_TURN_TTFT; x < XH_N; x++)
		if (snapshot_xhist(s, (enum stats_xhist)x))
			return true;
	return false;
}

double snapshot_rate(uint64_t count, double seconds)
{
	return seconds > 0 ? (double)count / seconds : 0.0;
}

const char *const result_mstat_keys[RESULT_NSTAT] = {"mean_ms", "std_ms", "min_ms", "p50_ms", "p90_ms",
						      "p95_ms", "p99_ms", "p99_9_ms", "max_ms"};
const char *const result_mstat_heads[RESULT_NSTAT] = {"mean", "std", "min", "p50", "p90",
						       "p95", "p99", "p99.9", "max"};

void result_mstat_of(const struct hist *h, struct result_mstat *m)
{
	static const double ps[] = {50, 90, 95, 99, 99.9};
	m->count = hist_count(h);
	m->v[0] = hist_mean(h) / 1000.0;
	m->v[1] = hist_stddev(h) / 1000.0;
	m->v[2] = (double)hist_min(h) / 1000.0;
	for (int i = 0; i < 5; i++)
		m->v[3 + i] = (double)hist_percentile(h, ps[i]) / 1000.0;
	m->v[8] = (double)hist_max(h) / 1000.0;
}

void snapshot_release(struct snapshot *s)
{
	if (s->owns_hists) {
		for (int m = 0; m < STAT_NMETRICS; m++) {
			hist_free(s->run[m]);
			hist_free(s->win[m]);
		}
		for (int x = 0; x < XH_N; x++)
			hist_free(s->xh[x]);
	}
	cJSON_Delete(s->options);
	cJSON_Delete(s->options_differ);
	cJSON_Delete(s->metadata);
	cJSON_Delete(s->vllm_ignored);
	cJSON_Delete(s->load_changes);
	cJSON_Delete(s->server);
	cJSON_Delete(s->series);
	cJSON_Delete(s->request_log);
	cJSON_Delete(s->trace);
	cJSON_Delete(s->sources);
	cJSON_Delete(s->fleet);
	snapshot_plan_release(&s->plan);
	free(s->plan_text);
	memset(s, 0, sizeof *s);
}

void snapshot_hists_take(struct snapshot *s, struct snapshot_hists *keep)
{
	memset(keep, 0, sizeof *keep);
	if (s->owns_hists) {
		memcpy(keep->run, s->run, sizeof keep->run);
		memcpy(keep->win, s->win, sizeof keep->win);
		memcpy(keep->xh, s->xh, sizeof keep->xh);
		s->owns_hists = false;
	}
	snapshot_release(s);
}

void snapshot_hists_free(struct snapshot_hists *keep)
{
	for (int m = 0; keep && m < STAT_NMETRICS; m++) {
		hist_free(keep->run[m]);
		hist_free(keep->win[m]);
	}
	for (int x = 0; keep && x < XH_N; x++)
		hist_free(keep->xh[x]);
}

int snapshot_hists_alloc(struct snapshot *s, struct snapshot_hists *keep)
{
	s->owns_hists = true;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = keep ? keep->run[m] : NULL;
		s->win[m] = keep ? keep->win[m] : NULL;
		if (s->run[m])
			hist_reset(s->run[m]);
		if (s->win[m])
			hist_reset(s->win[m]);
	}
	/* The extra ones are kept for reuse but made only when data comes. */
	for (int x = 0; x < XH_N; x++) {
		s->xh[x] = keep ? keep->xh[x] : NULL;
		if (s->xh[x])
			hist_reset(s->xh[x]);
	}
	for (int m = 0; m < STAT_NMETRICS; m++)
		if ((!s->run[m] && !(s->run[m] = hist_new())) || (!s->win[m] && !(s->win[m] = hist_new())))
			return -1;
	return 0;
}

struct hist *snapshot_xhist_get(struct snapshot *s, enum stats_xhist x)
{
	if (!s->xh[x])
		s->xh[x] = hist_new();
	return s->xh[x];
}

void snapshot_plan_release(struct snapshot_plan *p)
{
	free(p->timeline);
	free(p->steps);
	free(p->models);
	memset(p, 0, sizeof *p);
}
