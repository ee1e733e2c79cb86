#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "sim_internal.h"

#define RQ_OF(ptr) ((struct sim_rq *)(void *)((char *)(ptr) - offsetof(struct sim_rq, tmr)))
#define SRV_OF_STEP(ptr) \
	((struct sim_server *)(void *)((char *)(ptr) - offsetof(struct sim_server, step)))

static double secs(int64_t ns)
{
	return (double)ns / (double)CLOCK_NS_PER_S;
}

/* The prefix cache, at a request's first admission (vLLM V1 looks up and
 * caches a request's blocks when it schedules it): its leading cached
 * blocks need no prefill. As in vLLM, the last prompt token is always
 * computed, so a prompt that is all cached blocks still recomputes its
 * last block. The blocks enter the cache at once, so the next request
 * admitted finds them even while this one's prefill runs. */
static void prefix_lookup(struct sim_server *s, struct sim_rq *rq)
{
	long bt = s->opt.kv_block_tokens;
	long max_hit = rq->prompt_tokens > 0 ? (rq->prompt_tokens - 1) / bt : 0;
	long hit = s->opt.no_prefix_caching
			   ? 0
			   : sim_cache_lookup(&s->cache, rq->blk.hash, rq->blk.n, max_hit);
	rq->cached_tokens = (int32_t)(hit * bt);
	s->st.prefix_queries += (uint64_t)rq->prompt_tokens;
	s->st.prefix_hits += (uint64_t)rq->cached_tokens;
}

/* A finished answer's whole blocks are cached too (vLLM V1 caches blocks
 * as decoding fills them): a chat answer continues its prompt as the
 * assistant message the next turn sends back, so that turn finds the
 * previous answer cached as well. */
static void cache_answer(struct sim_server *s, struct sim_rq *rq)
{
	if (s->opt.no_prefix_caching || !rq->admitted)
		return;
	const char *role = rq->api == SIM_API_CHAT ? "assistant" : NULL;
	for (int32_t k = 0; k < rq->produced; k++) {
		const char *w = sim_render_word(rq, k);
		if (sim_blocks_append(&rq->blk, k == 0 ? role : NULL, w, strlen(w)) != 0)
			break;
	}
	sim_cache_lookup(&s->cache, rq->blk.hash, rq->blk.n, 0);
}

/* One token comes out of the engine at time t (the scheduled time, so the
 * server-side histograms hold the model's exact values). */
static void emit(struct sim_server *s, struct sim_rq *rq, int64_t t)
{
	struct sim_stats *st = &s->st;
	if (rq->produced == 0) {
		sim_hist_observe(&st->ttft, secs(t - rq->t_arrive));
		st->prompt_tokens += (uint64_t)rq->prompt_tokens;
		st->prompt_cached += (uint64_t)rq->cached_tokens;
		st->prompt_seconds += secs(t - rq->t_admit);
		rq->t_first = t;
	} else {
		sim_hist_observe(&st->itl, secs(t - rq->t_last));
	}
	rq->t_last = t;
	rq->produced++;
	rq->kv_held++;
	s->kv_used++;
	st->gen_tokens++;
	long seq = (long)rq->prompt_tokens + rq->produced;
	if (seq > st->n_tokens_max)
		st->n_tokens_max = seq;
}

/* Leaves the running set to the caller; releases KV and records the
 * request's end. A fault's early stop is not a success. */
static void finish(struct sim_server *s, struct sim_rq *rq, int64_t t)
{
	struct sim_stats *st = &s->st;
	rq->state = SIM_ST_FINISHED;
	s->kv_used -= rq->kv_held;
	rq->kv_held = 0;
	if (rq->produced == rq->target) {
		cache_answer(s, rq);
		st->success[rq->finish_stop ? 1 : 0]++;
		sim_hist_observe(&st->e2e, secs(t - rq->t_arrive));
		st->gen_tokens_finished += (uint64_t)rq->produced;
		st->predicted_seconds += secs(rq->t_last - rq->t_first);
		sim_hist_observe(&st->prefill, secs(rq->t_first - rq->t_admit));
		sim_hist_observe(&st->decode, secs(rq->t_last - rq->t_first));
		if (rq->produced > 1)
			sim_hist_observe(&st->tpot,
					 secs(rq->t_last - rq->t_first) / (double)(rq->produced - 1));
	}
}

static void admit_common(struct sim_server *s, struct sim_rq *rq, int64_t t)
{
	rq->state = SIM_ST_RUNNING;
	if (!rq->admitted) {
		rq->admitted = 1;
		rq->t_admit = t;
		sim_hist_observe(&s->st.queue, secs(t - rq->t_arrive));
		prefix_lookup(s, rq);
	}
}

/* ---- fixed timing: every request on its own clock ---- */

static void fixed_tick(struct sim_tmr *tm, int64_t now)
{
	(void)now;
	struct sim_rq *rq = RQ_OF(tm);
	struct sim_server *s = rq->srv;
	int64_t t = tm->at;
	s->st.sched_events++;
	emit(s, rq, t);
	s->st.decode_steps++;
	s->st.busy_slot_sum += (uint64_t)s->nrunning;
	if (rq->produced >= rq->stop_at) {
		s->nrunning--;
		finish(s, rq, t);
	} else if (sim_timer_start(&s->timers, &rq->tmr, t + s->opt.itl_ns) != 0) {
		/* Out of memory for the timer heap: end the request rather than
		 * leave it silent. */
		s->nrunning--;
		finish(s, rq, t);
		rq->aborted = 1;
	}
	s->wake(rq);
}

/* Fixed timing's whole --ttft is prefill: cached tokens take their share
 * off it (a prompt with 3/4 of its tokens cached waits ttft / 4). */
static int64_t fixed_ttft(const struct sim_server *s, const struct sim_rq *rq)
{
	if (rq->prompt_tokens <= 0 || rq->cached_tokens <= 0)
		return s->opt.ttft_ns;
	return llround((double)s->opt.ttft_ns * (double)(rq->prompt_tokens - rq->cached_tokens) /
		       (double)rq->prompt_tokens);
}

static void fixed_submit(struct sim_server *s, struct sim_rq *rq, int64_t now)
{
	admit_common(s, rq, now);
	rq->ttft_ns = fixed_ttft(s, rq);
	s->nrunning++;
	rq->kv_held = rq->prompt_tokens;
	s->kv_used += rq->kv_held;
	rq->tmr.fn = fixed_tick;
	if (rq->stop_at <= 0) {
		s->nrunning--;
		finish(s, rq, now);
	} else if (sim_timer_start(&s->timers, &rq->tmr, now + rq->ttft_ns) != 0) {
		s->nrunning--;
		finish(s, rq, now);
		rq->aborted = 1;
	}
	s->wake(rq);
}

/* ---- continuous batching ---- */

static void wait_unlink(struct sim_server *s, struct sim_rq *rq)
{
	if (rq->qprev)
		rq->qprev->qnext = rq->qnext;
	else
		s->wait_head = rq->qnext;
	if (rq->qnext)
		rq->qnext->qprev = rq->qprev;
	else
		s->wait_tail = rq->qprev;
	rq->qprev = rq->qnext = NULL;
	s->nwaiting--;
}

static void wait_push_tail(struct sim_server *s, struct sim_rq *rq)
{
	rq->state = SIM_ST_WAITING;
	rq->qnext = NULL;
	rq->qprev = s->wait_tail;
	if (s->wait_tail)
		s->wait_tail->qnext = rq;
	else
		s->wait_head = rq;
	s->wait_tail = rq;
	s->nwaiting++;
}

static void wait_push_head(struct sim_server *s, struct sim_rq *rq)
{
	rq->state = SIM_ST_WAITING;
	rq->qprev = NULL;
	rq->qnext = s->wait_head;
	if (s->wait_head)
		s->wait_head->qprev = rq;
	else
		s->wait_tail = rq;
	s->wait_head = rq;
	s->nwaiting++;
}

static void running_remove(struct sim_server *s, struct sim_rq *rq)
{
	for (long i = rq->run_idx; i + 1 < s->nrunning; i++) {
		s->running[i] = s->running[i + 1];
		s->running[i]->run_idx = (int32_t)i;
	}
	s->nrunning--;
	rq->run_idx = -1;
}

/* vLLM's recompute preemption: the newest running request gives back its
 * KV and returns to the head of the queue; when admitted again it
 * prefills prompt + generated tokens and then continues its stream. */
static void preempt(struct sim_server *s, struct sim_rq *rq)
{
	running_remove(s, rq);
	s->kv_used -= rq->kv_held;
	rq->kv_held = 0;
	wait_push_head(s, rq);
	s->st.preemptions++;
}

static void step_begin(struct sim_server *s, int64_t t)
{
	/* FIFO admission: the head blocks the queue when it does not fit, and
	 * every running request must keep room for this step's token. */
	while (s->wait_head && s->nrunning < s->opt.max_running) {
		struct sim_rq *rq = s->wait_head;
		long need = (long)rq->prompt_tokens + rq->produced;
		if (s->kv_used + need + s->nrunning + 1 > s->opt.kv_tokens)
			break;
		wait_unlink(s, rq);
		int first = !rq->admitted;
		admit_common(s, rq, t);
		rq->kv_held = (int32_t)need;
		s->kv_used += need;
		/* Cached blocks are not prefilled again, after a preemption
		 * either: vLLM keeps a freed block's contents until reused. */
		rq->prefill_left = (double)(need - rq->cached_tokens);
		if (rq->produced >= rq->stop_at) {
			finish(s, rq, t);
		} else {
			rq->run_idx = (int32_t)s->nrunning;
			s->running[s->nrunning++] = rq;
		}
		if (first)
			s->wake(rq);
	}
	if (s->nrunning == 0)
		return;
	while (s->nrunning > 1 && s->kv_used + s->nrunning > s->opt.kv_tokens)
		preempt(s, s->running[s->nrunning - 1]);
	int64_t d = s->opt.step_ns + s->opt.step_per_seq_ns * s->nrunning;
	s->step_budget = s->opt.prefill_rate * secs(d);
	s->st.decode_steps++;
	s->st.busy_slot_sum += (uint64_t)s->nrunning;
	sim_timer_start(&s->timers, &s->step, t + d);
}

static void step_end(struct sim_tmr *tm, int64_t now)
{
	(void)now;
	struct sim_server *s = SRV_OF_STEP(tm);
	int64_t t = tm->at;
	double budget = s->step_budget;
	s->st.sched_events++;
	for (long i = 0; i < s->nrunning; i++) {
		struct sim_rq *rq = s->running[i];
		if (rq->prefill_left > 0) {
			double take = budget < rq->prefill_left ? budget : rq->prefill_left;
			rq->prefill_left -= take;
			budget -= take;
			/* A millionth of a token left is rounding, not work. */
			if (rq->prefill_left > 1e-6)
				continue;
			rq->prefill_left = 0;
		}
		emit(s, rq, t);
		s->wake(rq);
	}
	long j = 0;
	for (long i = 0; i < s->nrunning; i++) {
		struct sim_rq *rq = s->running[i];
		if (rq->produced >= rq->stop_at) {
			rq->run_idx = -1;
			finish(s, rq, t);
			s->wake(rq);
		} else {
			rq->run_idx = (int32_t)j;
			s->running[j++] = rq;
		}
	}
	s->nrunning = j;
	step_begin(s, t);
}

int sim_sched_init(struct sim_server *s, void (*wake)(struct sim_rq *rq))
{
	s->wake = wake;
	s->nrunning = s->nwaiting = 0;
	s->kv_used = 0;
	s->wait_head = s->wait_tail = NULL;
	sim_tmr_init(&s->step, step_end);
	s->running = NULL;
	sim_cache_init(&s->cache, s->opt.kv_tokens / s->opt.kv_block_tokens);
	if (s->opt.timing == SIM_TIMING_BATCHING) {
		s->running = calloc((size_t)s->opt.max_running, sizeof *s->running);
		if (!s->running)
			return -1;
	}
	return 0;
}

void sim_sched_fini(struct sim_server *s)
{
	sim_timer_stop(&s->timers, &s->step);
	free(s->running);
	s->running = NULL;
	sim_cache_fini(&s->cache);
}

void sim_sched_submit(struct sim_server *s, struct sim_rq *rq, int64_t now)
{
	rq->t_arrive = now;
	rq->run_idx = -1;
	s->st.sched_events++;
	if (s->opt.timing == SIM_TIMING_FIXED) {
		fixed_submit(s, rq, now);
		return;
	}
	wait_push_tail(s, rq);
	/* An idle engine starts a step at once; a busy one admits at the next
	 * step boundary, as vLLM's scheduler does. */
	if (!sim_tmr_armed(&s->step))
		step_begin(s, now);
}

void sim_sched_cancel(struct sim_server *s, struct sim_rq *rq)
{
	switch (rq->state) {
	case SIM_ST_WAITING:
		wait_unlink(s, rq);
		break;
	case SIM_ST_RUNNING:
		if (s->opt.timing == SIM_TIMING_FIXED) {
			sim_timer_stop(&s->timers, &rq->tmr);
			s->nrunning--;
		} else {
			running_remove(s, rq);
		}
		s->kv_used -= rq->kv_held;
		rq->kv_held = 0;
		break;
	default:
		return;
	}
	s->st.sched_events++;
	rq->state = SIM_ST_FINISHED;
}
