#include "config.h"

#include "infertop/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, ...) [STAT_##id] = key,
#include "infertop/client_metrics.def"
};

static const char *const err_names[ERR_NKINDS] = {
	[ERR_CONNECT] = "connect",
	[ERR_TIMEOUT] = "timeout",
	[ERR_HTTP] = "http",
	[ERR_TRUNCATED] = "truncated",
	[ERR_EVENT] = "error_event",
	[ERR_BAD_JSON] = "bad_json",
	[ERR_OVERSIZE] = "oversize",
	[ERR_NO_OUTPUT] = "no_output",
	[ERR_ABORTED] = "aborted",
	[ERR_OTHER] = "other",
	[ERR_CONTEXT] = "context_length",
};

const char *stats_metric_name(enum stat_metric m)
{
	return (unsigned)m < STAT_NMETRICS ? metric_names[m] : "?";
}

int stats_metric_order(const unsigned char pos[STAT_NMETRICS], enum stat_metric order[STAT_NMETRICS])
{
	int n = 0;
	for (int p = 1; p <= STAT_NMETRICS; p++)
		for (int m = 0; m < STAT_NMETRICS; m++)
			if (pos[m] == p)
				order[n++] = (enum stat_metric)m;
	return n;
}

const char *stats_err_name(enum err_kind k)
{
	return (unsigned)k < ERR_NKINDS ? err_names[k] : "?";
}

/* Touches every page of h now (a reset clears the whole bucket range
 * between the extremes): RSS is flat from the first request instead of
 * creeping up while the first window fills and whenever a tail value
 * first lands in a new octave (bench_soak: 1.125x from 100k to 10M
 * requests without, 1.002x with). Costs 96 x 184 KiB up front. */
static struct hist *hist_new_touched(void)
{
	struct hist *h = hist_new();
	if (h) {
		hist_record(h, 0);
		hist_record(h, HIST_TOP_US);
		hist_reset(h);
	}
	return h;
}

struct stats *stats_new(int64_t window_ns, int64_t now_ns)
{
	struct stats *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->start_ns = now_ns;
	s->slice_ns = window_ns / STATS_SLICES;
	if (s->slice_ns <= 0)
		s->slice_ns = 1;
	s->slice_start_ns = now_ns;
	s->slices_used = 1;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = hist_new_touched();
		s->win[m] = hist_new_touched();
		if (!s->run[m] || !s->win[m])
			goto fail;
		for (int k = 0; k < STATS_SLICES; k++) {
			s->slice[m][k] = hist_new_touched();
			if (!s->slice[m][k])
				goto fail;
		}
	}
	return s;
fail:
	stats_free(s);
	return NULL;
}

void stats_free(struct stats *s)
{
	if (!s)
		return;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		hist_free(s->run[m]);
		hist_free(s->win[m]);
		for (int k = 0; k < STATS_SLICES; k++)
			hist_free(s->slice[m][k]);
	}
	for (int x = 0; x < XH_N; x++)
		hist_free(s->xh[x]);
	free(s);
}

static void counters_sub(struct stats_counters *a, const struct stats_counters *b)
{
	a->completed -= b->completed;
	a->failed -= b->failed;
	a->incomplete -= b->incomplete;
	a->incomplete_tokens -= b->incomplete_tokens;
	a->output_tokens -= b->output_tokens;
	a->input_tokens -= b->input_tokens;
	a->chunks -= b->chunks;
	a->streamed -= b->streamed;
	a->cache_known -= b->cache_known;
	a->cache_unknown -= b->cache_unknown;
	a->prompt_known -= b->prompt_known;
	a->prompt_cached -= b->prompt_cached;
}

void stats_counters_add(struct stats_counters *a, const struct stats_counters *b)
{
	a->completed += b->completed;
	a->failed += b->failed;
	a->incomplete += b->incomplete;
	a->incomplete_tokens += b->incomplete_tokens;
	a->output_tokens += b->output_tokens;
	a->input_tokens += b->input_tokens;
	a->chunks += b->chunks;
	a->streamed += b->streamed;
	a->cache_known += b->cache_known;
	a->cache_unknown += b->cache_unknown;
	a->prompt_known += b->prompt_known;
	a->prompt_cached += b->prompt_cached;
}

double stats_cache_hit_rate(const struct stats_counters *c)
{
	return c->prompt_known ? (double)c->prompt_cached / (double)c->prompt_known : NAN;
}

bool stats_cache_shown(const struct stats_counters *run, const struct stats_counters *win, bool sessions)
{
	return run->prompt_cached || win->prompt_cached || (sessions && (run->cache_known || win->cache_known));
}

bool stats_cache_warm(int64_t cached_tokens, int64_t prompt_tokens)
{
	return cached_tokens >= 0 && prompt_tokens >= 0 && 2 * cached_tokens >= prompt_tokens;
}

int stats_turn_index(uint32_t turn)
{
	if (turn == 0)
		return -1;
	return turn >= STATS_TURNS ? STATS_TURNS - 1 : (int)turn - 1;
}

const char *stats_turn_label(int index)
{
	static const char *const labels[STATS_TURNS] = {"1", "2", "3", "4", "5", "6", "7", "8+"};
	return index >= 0 && index < STATS_TURNS ? labels[index] : "?";
}

/* A whole-run extra histogram takes v (made at its first sample; on out
 * of memory the sample is lost rather than the run). Not in cooldown. */
static void stats_xrecord(struct stats *s, enum stats_xhist x, int64_t v)
{
	if (s->run_frozen)
		return;
	if (!s->xh[x] && !(s->xh[x] = hist_new()))
		return;
	hist_record(s->xh[x], v);
}

double stats_tokens_per_chunk(const struct stats *s)
{
	const struct stats_counters *c = &s->all_c;
	return c->chunks ? (double)c->output_tokens / (double)c->chunks : 1.0;
}

double stats_live_tokens(const struct stats *s, const struct stats_counters *c)
{
	return (double)c->streamed * stats_tokens_per_chunk(s);
}

static void stats_rotate(struct stats *s)
{
	s->cur = (s->cur + 1) % STATS_SLICES;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		if (hist_count(s->slice[m][s->cur]) == 0)
			continue;
		hist_sub(s->win[m], s->slice[m][s->cur]);
		hist_reset(s->slice[m][s->cur]);
	}
	counters_sub(&s->win_c, &s->slice_c[s->cur]);
	memset(&s->slice_c[s->cur], 0, sizeof s->slice_c[s->cur]);
	if (s->slices_used < STATS_SLICES)
		s->slices_used++;
	s->slice_start_ns += s->slice_ns;
}

void stats_tick(struct stats *s, int64_t now_ns)
{
	/* After a long stall (laptop suspend) skip whole windows at once
	 * instead of rotating thousands of times. */
	if (now_ns - s->slice_start_ns > (int64_t)STATS_SLICES * 2 * s->slice_ns) {
		int64_t behind = (now_ns - s->slice_start_ns) / s->slice_ns;
		s->slice_start_ns += (behind - STATS_SLICES) * s->slice_ns;
	}
	while (now_ns - s->slice_start_ns >= s->slice_ns)
		stats_rotate(s);
}

void stats_window_reset(struct stats *s, int64_t now_ns)
{
	for (int m = 0; m < STAT_NMETRICS; m++) {
		if (hist_count(s->win[m]) == 0)
			continue;
		hist_reset(s->win[m]);
		for (int k = 0; k < STATS_SLICES; k++)
			if (hist_count(s->slice[m][k]))
				hist_reset(s->slice[m][k]);
	}
	memset(&s->win_c, 0, sizeof s->win_c);
	memset(s->slice_c, 0, sizeof s->slice_c);
	s->cur = 0;
	s->slices_used = 1;
	s->slice_start_ns = now_ns;
}

static inline int64_t ns_to_us(int64_t ns)
{
	return ns < 0 ? 0 : (ns + 500) / 1000;
}

void stats_record(struct stats *s, enum stat_metric m, int64_t ns)
{
	int64_t us = ns_to_us(ns);
	if (!s->run_frozen)
		hist_record(s->run[m], us);
	hist_record(s->win[m], us);
	hist_record(s->slice[m][s->cur], us);
}

void stats_record_itl_us(struct stats *s, const uint32_t *gaps, size_t n)
{
	struct hist *hs[3] = { s->win[STAT_ITL], s->slice[STAT_ITL][s->cur], s->run[STAT_ITL] };
	hist_record_many(hs, s->run_frozen ? 2 : 3, gaps, n);
}

void stats_request_done(struct stats *s, const struct req_result *r)
{
	struct stats_counters add = {0};
	if (s->in_flight > 0)
		s->in_flight--;
	if (r->incomplete) {
		/* Not the server's fault: out of the errors and the error
		 * rate, but what it streamed was served. */
		add.incomplete = 1;
		add.output_tokens = r->output_tokens > 0 ? (uint64_t)r->output_tokens : 0;
		add.incomplete_tokens = add.output_tokens;
		add.chunks = r->chunks;
	} else if (!r->ok) {
		add.failed = 1;
		enum err_kind k = (unsigned)r->err < ERR_NKINDS ? r->err : ERR_OTHER;
		if (!s->run_frozen)
			s->errors[k]++;
		if (!s->run_frozen && (k == ERR_HTTP || k == ERR_CONTEXT) && r->http_code > 0 && r->http_code < STATS_HTTP_CODES)
			s->http_codes[r->http_code]++;
		if (r->msg)
			snprintf(s->last_msg[k], sizeof s->last_msg[k], "%s", r->msg);
		s->last_err = k;
		s->last_http = r->http_code;
	} else {
		add.completed = 1;
		add.output_tokens = r->output_tokens > 0 ? (uint64_t)r->output_tokens : 0;
		add.input_tokens = r->prompt_tokens > 0 ? (uint64_t)r->prompt_tokens : 0;
		add.chunks = r->chunks;
		if (!s->run_frozen) {
			if (r->tokens_from_usage)
				s->tokens_from_usage++;
			else
				s->tokens_from_chunks++;
		}
		/* One chunk may carry a few tokens (merged byte pieces,
		 * speculative decoding), but not twice as many, and not half. */
		if (!s->run_frozen && r->usage_tokens >= 0 &&
		    ((uint64_t)r->usage_tokens > 2 * r->chunks + 1 || r->chunks > 2 * (uint64_t)r->usage_tokens + 1)) {
			s->usage_mismatch++;
			snprintf(s->usage_mismatch_msg, sizeof s->usage_mismatch_msg,
				 "usage says %lld output tokens, the stream carried %llu chunks",
				 (long long)r->usage_tokens, (unsigned long long)r->chunks);
		}
		/* The prefix cache, where the server said (a prompt has a
		 * token at least: 0 means its count is not known). */
		if (r->cached_tokens >= 0 && r->prompt_tokens > 0) {
			add.cache_known = 1;
			add.prompt_known = (uint64_t)r->prompt_tokens;
			add.prompt_cached = (uint64_t)r->cached_tokens;
			bool warm = stats_cache_warm(r->cached_tokens, r->prompt_tokens);
			stats_xrecord(s, warm ? XH_TTFT_WARM : XH_TTFT_COLD, ns_to_us(r->ttft_ns));
		} else {
			add.cache_unknown = 1;
		}
		int ti = stats_turn_index(r->turn);
		if (ti >= 0) {
			stats_xrecord(s, (enum stats_xhist)(XH_TURN_TTFT + ti), ns_to_us(r->ttft_ns));
			stats_xrecord(s, (enum stats_xhist)(XH_TURN_E2E + ti), ns_to_us(r->e2e_ns));
		}
		/* Each metric's guard and value, client_metrics.def. */
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, prom_pos, prom, \
		      buckets, prom_help, definition, guard, value)                                           \
	if (guard)                                                                                            \
		stats_record(s, STAT_##id, value);
#include "infertop/client_metrics.def"
	}
	if (!s->run_frozen)
		stats_counters_add(&s->run_c, &add);
	stats_counters_add(&s->all_c, &add);
	stats_counters_add(&s->win_c, &add);
	stats_counters_add(&s->slice_c[s->cur], &add);
}

double stats_window_seconds(const struct stats *s, int64_t now_ns)
{
	int64_t span = (int64_t)(s->slices_used - 1) * s->slice_ns + (now_ns - s->slice_start_ns);
	int64_t since_start = now_ns - s->start_ns;
	if (span > since_start)
		span = since_start;
	return span > 0 ? (double)span / 1e9 : 0.0;
}

void stats_reset_run(struct stats *s, int64_t now_ns)
{
	stats_window_reset(s, now_ns);
	for (int m = 0; m < STAT_NMETRICS; m++)
		hist_reset(s->run[m]);
	memset(&s->run_c, 0, sizeof s->run_c);
	memset(s->errors, 0, sizeof s->errors);
	memset(s->http_codes, 0, sizeof s->http_codes);
	memset(s->last_msg, 0, sizeof s->last_msg);
	s->tokens_from_usage = s->tokens_from_chunks = 0;
	s->sessions_done = s->sessions_failed = s->sessions_context = s->session_turns = 0;
	s->sessions_incomplete = 0;
	for (int x = 0; x < XH_N; x++)
		if (s->xh[x])
			hist_reset(s->xh[x]);
	s->max_in_flight = s->in_flight;
	s->start_ns = now_ns;
	s->run_frozen = false;
	s->resets++;
}

void stats_session_done(struct stats *s, const struct session_result *r)
{
	if (s->run_frozen)
		return;
	s->sessions_done++;
	s->session_turns += r->turns;
	if (!r->ok)
		s->sessions_failed++;
	if (r->context_limit)
		s->sessions_context++;
	if (r->incomplete)
		s->sessions_incomplete++;
	stats_xrecord(s, XH_SESSION_DURATION, ns_to_us(r->duration_ns));
	stats_xrecord(s, XH_SESSION_TURNS, r->turns);
	if (r->context_tokens >= 0)
		stats_xrecord(s, XH_SESSION_CONTEXT, r->context_tokens);
}

void stats_freeze_run(struct stats *s)
{
	s->run_frozen = true;
}

uint64_t stats_errors_total(const struct stats *s)
{
	uint64_t t = 0;
	for (int k = 0; k < ERR_NKINDS; k++)
		t += s->errors[k];
	return t;
}
