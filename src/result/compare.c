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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
	r->lo_a = r->hi_a = r->lo_b = r->hi_b = NAN;
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

/* The practical floor: a change smaller than this is "same" whatever the
 * intervals say. The intervals hold each run's own noise only; the drift
 * between two runs (the machine's load, the network, a warmer cache) is
 * in neither, and against a fixed-timing simulator two runs of one
 * command differed by up to 1 % in throughput and a few ms in the tails
 * (a stall of a loaded machine), which the intervals alone called worse.
 * compare --min-change, else INFERTOP_COMPARE_MIN_CHANGE, sets it:
 * "5%,1ms" (the default), "10%", "2ms", "0" (none). The milliseconds
 * apply to the latency rows. */
#define MIN_CHANGE_ENV "INFERTOP_COMPARE_MIN_CHANGE"
static double min_pct = 5, min_ms = 1;
static bool min_read;

/* "5%,1ms", "10%", "2ms", "0" into *pct and *ms (0 where not given).
 * 0, or -1 when v is none of those. */
static int min_change_parse(const char *v, double *pct_out, double *ms_out)
{
	double pct = 0, ms = 0;
	bool ok = true;
	const char *p = v;
	if (strcmp(v, "0") != 0)
		while (ok && *p) {
			char *end;
			double x = strtod(p, &end);
			if (end == p || !(x >= 0) || !isfinite(x)) {
				ok = false;
			} else if (*end == '%') {
				pct = x;
				end++;
			} else if (end[0] == 'm' && end[1] == 's') {
				ms = x;
				end += 2;
			} else {
				ok = false;
			}
			if (ok && *end == ',' && end[1])
				end++;
			else if (ok && *end)
				ok = false;
			p = end;
		}
	if (!ok)
		return -1;
	*pct_out = pct;
	*ms_out = ms;
	return 0;
}

/* Reads the variable once, unless the option has set the floor; a bad
 * value is said on stderr and the defaults stay. */
static void min_change_read(void)
{
	if (min_read)
		return;
	min_read = true;
	const char *v = getenv(MIN_CHANGE_ENV);
	if (v && *v && min_change_parse(v, &min_pct, &min_ms) != 0)
		fprintf(stderr,
			"infertop compare: %s=%s: expected a percentage and/or milliseconds (\"5%%,1ms\", \"10%%\", "
			"\"0\"); using %g%%,%gms\n",
			MIN_CHANGE_ENV, v, min_pct, min_ms);
}

int result_compare_set_min_change(const char *v)
{
	double pct, ms;
	if (!v || min_change_parse(v, &pct, &ms) != 0)
		return -1;
	min_pct = pct;
	min_ms = ms;
	min_read = true; /* the option wins over the variable */
	return 0;
}

/* A change is only a change when it is outside the noise: when each
 * side's interval is known and they overlap, the runs cannot tell apart;
 * nor when it is under the practical floor; without intervals, a change
 * that prints as 0.0% is none either. */
const char *result_crow_verdict(const struct result_crow *r)
{
	if (!r->better || isnan(r->a) || isnan(r->b))
		return "";
	if (r->b == r->a)
		return "same";
	bool known = !isnan(r->lo_a) && !isnan(r->hi_a) && !isnan(r->lo_b) && !isnan(r->hi_b);
	if (known && r->lo_b <= r->hi_a && r->lo_a <= r->hi_b)
		return "same";
	min_change_read();
	double p = result_crow_delta_pct(r);
	if (!isnan(p) && fabs(p) < min_pct)
		return "same";
	if (strcmp(r->unit, "ms") == 0 && fabs(r->b - r->a) < min_ms)
		return "same";
	if (!isnan(p) && fabs(p) < 0.05)
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

/* ---- the run-to-run noise ----
 *
 * Each figure gets an interval of about 95 % from what the run itself
 * holds, with no resampling:
 * - a percentile p of n samples: the order statistics at ranks
 *   n*p -/+ 1.96*sqrt(n*p*(1-p)) (the binomial confidence interval of a
 *   quantile), read off the histogram and widened to the bounds of their
 *   buckets (the histogram's own resolution); when the upper rank is past
 *   the last sample (p99 of 16 requests: the maximum, as noisy as one
 *   sample), the interval is mirrored around that largest sample;
 * - a mean: mean -/+ 1.96 * stddev / sqrt(n);
 * - a throughput over n requests: -/+ 1.96 / sqrt(n) relative in open
 *   loop (Poisson arrivals), times the coefficient of variation of E2E in
 *   closed loop (the users' count is fixed; the time each took varies);
 * - an error share of f in n: -/+ 1.96 * sqrt(p*(1-p)/n), at least 3/n
 *   (the rule of three when none failed).
 * Requests that ran at the same time are not independent samples: a
 * stall of the server or of the machine delays every one in flight (with
 * a fixed-timing simulator such stalls are the only spread there is). So
 * the latencies and throughputs count n / k samples, k the requests in
 * flight (the users in closed loop, the most in flight in open loop), and
 * a percentile's ranks are those of n / k groups of k.
 * Two figures whose intervals overlap are reported as the same. */
#define NOISE_Z 1.96

/* The requests that shared each stall: at least 1, at most n. */
static double group_size(const struct snapshot *s, uint64_t n)
{
	double k = s->open_loop ? (double)s->max_in_flight : s->concurrency;
	if (!(k >= 1))
		k = 1;
	return n > 0 && k > (double)n ? (double)n : k;
}

static void set_interval(double *lo, double *hi, double l, double h)
{
	*lo = l;
	*hi = h;
}

/* p in percent; < 0: the mean. Milliseconds. k: group_size. */
static void hist_interval(const struct hist *h, double p, double k, double *lo, double *hi)
{
	uint64_t n = h ? hist_count(h) : 0;
	if (n == 0)
		return;
	double nd = (double)n, ng = nd / k;
	if (p < 0) {
		double half = NOISE_Z * hist_stddev(h) / sqrt(ng);
		set_interval(lo, hi, (hist_mean(h) - half) / 1e3, (hist_mean(h) + half) / 1e3);
		return;
	}
	/* The ranks of the groups, then of the requests. */
	double q = p / 100, half = NOISE_Z * sqrt(ng * q * (1 - q));
	double rlo = floor(ng * q - half) * k, rhi = (ceil(ng * q + half) + 1) * k;
	int64_t vlo = hist_percentile(h, 100 * fmax(rlo, 0) / nd);
	int64_t vhi = hist_percentile(h, 100 * fmin(rhi, nd) / nd);
	int64_t blo, bhi, dummy;
	hist_bucket_bounds(vlo, &blo, &dummy);
	hist_bucket_bounds(vhi, &dummy, &bhi);
	/* Past the last sample (p99 of 16 requests) nothing bounds it from
	 * above: the interval is mirrored around the largest sample, as wide
	 * above it as the ranks make it below. */
	double top = (double)bhi;
	if (rhi > nd)
		top += (double)bhi - (double)blo;
	set_interval(lo, hi, (double)blo / 1e3, top / 1e3);
}

/* A throughput: in open loop the arrivals' own noise, sqrt(n) of n;
 * in closed loop the count is the users' and the noise is the time each
 * took: the relative standard error of the mean E2E, over n / k. */
static void rate_interval(const struct snapshot *s, double v, uint64_t n, double *lo, double *hi)
{
	if (isnan(v) || n == 0)
		return;
	double rel = NOISE_Z / sqrt((double)n);
	const struct hist *e2e = s->run[STAT_E2E];
	if (!s->open_loop) {
		if (!e2e || hist_count(e2e) == 0 || !(hist_mean(e2e) > 0))
			return;
		rel = NOISE_Z / sqrt((double)n / group_size(s, n)) * hist_stddev(e2e) / hist_mean(e2e);
	}
	set_interval(lo, hi, v * (1 - rel), v * (1 + rel));
}

static void share_interval(double p, uint64_t n, double *lo, double *hi)
{
	if (isnan(p) || n == 0)
		return;
	double half = fmax(NOISE_Z * sqrt(p * (1 - p) / (double)n), 3.0 / (double)n);
	set_interval(lo, hi, fmax(p - half, 0), fmin(p + half, 1));
}

static struct result_crow *row_of(struct result_compare *c, const char *key)
{
	return (struct result_crow *)result_compare_find(c, key);
}

/* Fills the intervals of the rows it knows how to (the others keep NaN). */
static void compare_noise(struct result_compare *c, const struct snapshot *a, const struct snapshot *b)
{
	const struct snapshot *s[2] = {a, b};
	for (int k = 0; k < 2; k++) {
		uint64_t done = s[k]->run_c.completed, tot = done + snapshot_failed(s[k]);
		static const char *const rates[] = {"request_throughput", "output_throughput", "total_token_throughput"};
		for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
			struct result_crow *r = row_of(c, rates[i]);
			if (r)
				rate_interval(s[k], k ? r->b : r->a, done, k ? &r->lo_b : &r->lo_a,
					      k ? &r->hi_b : &r->hi_a);
		}
		struct result_crow *r = row_of(c, "error_share");
		if (r)
			share_interval(k ? r->b : r->a, tot, k ? &r->lo_b : &r->lo_a, k ? &r->hi_b : &r->hi_a);
		static const char *const vllm[] = {"mean", "median", "p90", "p99", "p99.9"};
		static const double pct[] = {-1, 50, 90, 99, 99.9};
		for (int m = 0; m < STAT_NMETRICS; m++) {
			for (size_t i = 0; i < sizeof vllm / sizeof vllm[0]; i++) {
				char key[48];
				snprintf(key, sizeof key, "%s_%s_ms", vllm[i], stats_metric_name((enum stat_metric)m));
				r = row_of(c, key);
				if (r)
					hist_interval(s[k]->run[m], pct[i], group_size(s[k], done), k ? &r->lo_b : &r->lo_a,
						      k ? &r->hi_b : &r->hi_a);
			}
		}
	}
}

/* The figures a verdict is about: what a user compares runs for. The
 * other rows (TTFB, queue, the tails past p99, ...) are named only when
 * none of these moved. */
static bool headline(const char *key)
{
	static const char *const keys[] = {"request_throughput", "output_throughput", "error_share",
					   "median_ttft_ms",	 "p99_ttft_ms",	      "median_itl_ms",
					   "p99_itl_ms",	 "median_e2el_ms",    "p99_e2el_ms"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(key, keys[i]) == 0)
			return true;
	return false;
}

/* The rows marked `which` among the headline ones (or the others),
 * largest changes first, at most 4 named. */
static void verdict_list(const struct result_compare *c, const char *which, bool head, char *buf, size_t cap)
{
	bool used[RESULT_MAX_CROWS] = {false};
	size_t n = 0;
	buf[0] = '\0';
	for (int k = 0; k < 4; k++) {
		int best = -1;
		for (int i = 0; i < c->n; i++) {
			const struct result_crow *r = &c->rows[i];
			if (used[i] || headline(r->key) != head || strcmp(result_crow_verdict(r), which) != 0 ||
			    isnan(result_crow_delta_pct(r)))
				continue;
			if (best < 0 || fabs(result_crow_delta_pct(r)) > fabs(result_crow_delta_pct(&c->rows[best])))
				best = i;
		}
		if (best < 0)
			break;
		used[best] = true;
		int w = snprintf(buf + n, cap - n, "%s%s %+.1f%%", n ? ", " : "", c->rows[best].name,
				 result_crow_delta_pct(&c->rows[best]));
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
}

void result_compare_verdict(const struct result_compare *c, char *buf, size_t cap)
{
	char better[400], worse[400], ob[400], ow[400];
	verdict_list(c, "better", true, better, sizeof better);
	verdict_list(c, "worse", true, worse, sizeof worse);
	if (better[0] && worse[0])
		snprintf(buf, cap, "mixed: B is better on %s; worse on %s", better, worse);
	else if (better[0])
		snprintf(buf, cap, "B is better: %s", better);
	else if (worse[0])
		snprintf(buf, cap, "B is worse: %s", worse);
	else {
		verdict_list(c, "better", false, ob, sizeof ob);
		verdict_list(c, "worse", false, ow, sizeof ow);
		/* The floor is said: "same" then covers it too. */
		char fl[64] = "", pc[24] = "", ms[24] = "";
		if (min_pct > 0)
			snprintf(pc, sizeof pc, "%g%%", min_pct);
		if (min_ms > 0)
			snprintf(ms, sizeof ms, "%g ms", min_ms);
		if (pc[0] || ms[0])
			snprintf(fl, sizeof fl, " or under %s%s%s", pc, pc[0] && ms[0] ? " / " : "", ms);
		if (!ob[0] && !ow[0])
			snprintf(buf, cap, "no significant difference (every change within the run-to-run noise%s)", fl);
		else
			snprintf(buf, cap,
				 "no significant difference in throughput, errors, TTFT, ITL or E2E (other figures: "
				 "%s%s%s%s%s)",
				 ob[0] ? "better on " : "", ob, ob[0] && ow[0] ? "; " : "", ow[0] ? "worse on " : "", ow);
	}
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
	compare_noise(c, a, b);
	min_change_read();
}

double result_crow_delta_pct(const struct result_crow *r)
{
	return r->a != 0 ? 100.0 * (r->b - r->a) / fabs(r->a) : NAN;
}
