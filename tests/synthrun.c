#include "config.h"

#include "synthrun.h"

#include <stdio.h>
#include <string.h>

#include "infertop/clock.h"

/* Chosen so that none lies in the bucket of a vLLM bound above 2.048 ms
 * (where the exposition may miss samples just below a bound, hist.h),
 * and 1000 us sits exactly on le="0.001": `le` counts samples <= it. */
const int64_t synth_ttft_us[SYNTH_OK] = { 500, 1000, 1500, 3000, 12000, 45000, 45000, 90000, 300000, 1200000 };

int64_t synth_ttfb_us(int i)
{
	return synth_ttft_us[i] / 2;
}

int64_t synth_e2e_us(int i)
{
	return synth_ttft_us[i] + (i + 1) * 111000;
}

int64_t synth_queue_us(int i)
{
	return i * 10;
}

/* (e2e - ttft) / (output tokens - 1), as stats_request_done computes it. */
int64_t synth_tpot_us(int i)
{
	return (synth_e2e_us(i) - synth_ttft_us[i]) / (SYNTH_OUT_TOKENS - 1);
}

uint32_t synth_gap_us(int i, int j)
{
	return (uint32_t)(8000 + 3000 * j + 100 * i);
}

int synth_init(struct synth *s, const char *model)
{
	memset(s, 0, sizeof *s);
	snprintf(s->model, sizeof s->model, "%s", model);
	s->cfg.url = "http://user:secret@127.0.0.1:1/v1";
	s->cfg.window_ns = 30 * CLOCK_NS_PER_S;
	s->t0 = 1000 * CLOCK_NS_PER_S;
	s->e.cfg = &s->cfg;
	s->e.state = ENGINE_RUNNING;
	s->e.t_start = s->t0;
	s->e.model = s->model;
	s->e.stats = stats_new(s->cfg.window_ns, s->t0);
	if (!s->e.stats)
		return -1;
	struct stats *st = s->e.stats;
	for (int i = 0; i < SYNTH_OK; i++) {
		uint32_t gaps[SYNTH_GAPS];
		for (int j = 0; j < SYNTH_GAPS; j++)
			gaps[j] = synth_gap_us(i, j);
		stats_record_itl_us(st, gaps, SYNTH_GAPS);
		struct req_result r = {
			.ok = true,
			.http_code = 200,
			.queue_ns = synth_queue_us(i) * 1000,
			.ttfb_ns = synth_ttfb_us(i) * 1000,
			.ttft_ns = synth_ttft_us[i] * 1000,
			.e2e_ns = synth_e2e_us(i) * 1000,
			.output_tokens = SYNTH_OUT_TOKENS,
			.tokens_from_usage = true,
			.prompt_tokens = SYNTH_IN_TOKENS,
			.chunks = SYNTH_OUT_TOKENS,
			.retry_after_ns = -1,
			.usage_tokens = SYNTH_OUT_TOKENS,
			.cached_tokens = -1,
		};
		st->in_flight++;
		stats_request_done(st, &r);
	}
	static const struct {
		enum err_kind k;
		int code;
	} fails[SYNTH_FAILED] = { { ERR_CONNECT, 0 }, { ERR_CONNECT, 0 }, { ERR_HTTP, 503 }, { ERR_TIMEOUT, 0 } };
	for (int i = 0; i < SYNTH_FAILED; i++) {
		struct req_result r = {
			.ok = false,
			.err = fails[i].k,
			.http_code = fails[i].code,
			.msg = "synthetic failure",
			.queue_ns = -1,
			.ttfb_ns = -1,
			.ttft_ns = -1,
			.e2e_ns = -1,
			.prompt_tokens = -1,
			.retry_after_ns = -1,
			.usage_tokens = -1,
			.cached_tokens = -1,
		};
		st->in_flight++;
		stats_request_done(st, &r);
	}
	st->in_flight = SYNTH_IN_FLIGHT;
	st->connections = SYNTH_CONNECTIONS;
	s->e.load.mode = LOAD_CLOSED;
	s->e.load.concurrency = SYNTH_CONCURRENCY;
	s->e.load.paused = true;
	return 0;
}

void synth_free(struct synth *s)
{
	stats_free(s->e.stats);
	s->e.stats = NULL;
}
