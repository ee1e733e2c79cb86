#include "config.h"

#include "infertop/sampler.h"

#include <math.h>
#include <stdio.h>

#include "infertop/clock.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/server.h"
#include "infertop/stats.h"
#include "infertop/view.h"

void sampler_event_label(int mode, double value, char *buf, size_t cap)
{
	if (mode == LOAD_OPEN)
		snprintf(buf, cap, "r=%.3g/s", value);
	else
		snprintf(buf, cap, "c=%.0f", value);
}

static double window_pct_ms(const struct hist *h, double pct)
{
	if (hist_count(h) == 0)
		return NAN;
	return (double)hist_percentile(h, pct) / 1000.0;
}

/* All GPUs' power, while the GPU exporter answers. */
static double gpu_power(const struct server_state *srv)
{
	if (!srv || (srv->gpu_status != SERVER_UP && srv->gpu_status != SERVER_STALE) || !srv->power_total_w.valid)
		return NAN;
	return srv->power_total_w.v;
}

static double gauge(const struct server_state *srv, enum server_gauge g)
{
	/* A server that stopped answering has no current value: a gap, not
	 * the last figure repeated. */
	if (!srv || (srv->status != SERVER_UP && srv->status != SERVER_STALE) || !srv->gauge[g].valid)
		return NAN;
	return srv->gauge[g].v;
}

static double rep_gauge(const struct server_replica *r, const struct server_value *v)
{
	return (r->status == SERVER_UP || r->status == SERVER_STALE) && v->valid ? v->v : NAN;
}

/* Each replica's point, pushed at the run's time so every series shares
 * its grid. The generated tokens per second are the counter's increase
 * between the replica's own last two scrapes (a scrape slower than the
 * sampler would otherwise read as 0 then twice the rate), held until the
 * next scrape; NaN while the replica is down. */
static void push_replicas(struct sampler *p, struct series *s, const struct server_state *srv, int64_t now_ns)
{
	if (!srv || srv->nreplicas < 2)
		return;
	for (int i = 0; i < srv->nreplicas && i < SERVER_MAX_REPLICAS && i < SERIES_SUBS_MAX; i++) {
		const struct server_replica *r = &srv->replica[i];
		struct sampler_replica *pr = &p->rep[i];
		/* Out of memory: that replica's chart has a gap, the run goes on. */
		struct series *sub = series_sub(s, i, SER_REP_N);
		if (!sub)
			continue;
		bool up = r->status == SERVER_UP || r->status == SERVER_STALE;
		/* A replica read from a document (a fleet's view) has no scrape
		 * time: no rate either. */
		if (!up || !r->run_gen_tokens.valid || !r->last_ok_ns) {
			pr->ok_ns = 0;
			pr->rate = NAN;
		} else if (r->last_ok_ns != pr->ok_ns) {
			double dt = (double)(r->last_ok_ns - pr->ok_ns) / 1e9;
			pr->rate = pr->ok_ns && dt > 0 && r->run_gen_tokens.v >= pr->gen
					   ? (r->run_gen_tokens.v - pr->gen) / dt
					   : NAN;
			pr->ok_ns = r->last_ok_ns;
			pr->gen = r->run_gen_tokens.v;
		}
		double pt[SER_REP_N];
		pt[SER_REP_RUNNING] = rep_gauge(r, &r->running);
		pt[SER_REP_WAITING] = rep_gauge(r, &r->waiting);
		pt[SER_REP_KV] = rep_gauge(r, &r->kv);
		pt[SER_REP_GEN_TOK_S] = up ? pr->rate : NAN;
		series_push_cols(sub, now_ns, pt);
	}
}

static void mark_events(struct series *s, struct sampler *p, const struct run_view *v, int64_t now_ns)
{
	const struct load *l = v->load;
	/* The events ring keeps the last LOAD_EVENTS: older unseen ones are gone. */
	if (l->nevents - p->seen_events > LOAD_EVENTS)
		p->seen_events = l->nevents - LOAD_EVENTS;
	for (; p->seen_events != l->nevents; p->seen_events++) {
		const struct load_event *ev = &l->events[p->seen_events % LOAD_EVENTS];
		char label[SERIES_LABEL_MAX];
		sampler_event_label(ev->mode, ev->value, label, sizeof label);
		series_mark(s, ev->t_ns, label);
	}
	/* Pauses and the drain are not load events, but change the load all
	 * the same; they are marked when first seen (within one tick). */
	if (l->paused != p->prev_paused) {
		p->prev_paused = l->paused;
		series_mark(s, now_ns, l->paused ? "pause" : "resume");
	}
	if ((int)v->state != p->prev_state) {
		if (v->state == ENGINE_DRAINING)
			series_mark(s, now_ns, "drain");
		p->prev_state = (int)v->state;
	}
}

void sampler_push(struct sampler *p, struct series *s, const struct run_view *v, int64_t now_ns)
{
	if (!s)
		return;
	const struct stats *st = v->stats;
	if (!p->started) {
		p->started = true;
		p->next_ns = now_ns;
		p->prev_ns = now_ns;
		p->prev_completed = st->all_c.completed;
		p->prev_failed = st->all_c.failed;
		p->prev_streamed = st->all_c.streamed;
		p->prev_state = (int)ENGINE_RUNNING;
	}
	mark_events(s, p, v, now_ns);
	if (now_ns < p->next_ns)
		return;

	double pt[SER_N];
	double dt = (double)(now_ns - p->prev_ns) / 1e9;
	if (dt > 0) {
		pt[SER_OUT_TOK_S] = (double)(st->all_c.streamed - p->prev_streamed) * stats_tokens_per_chunk(st) / dt;
		pt[SER_REQ_S] = (double)(st->all_c.completed - p->prev_completed) / dt;
		pt[SER_ERRORS] = (double)(st->all_c.failed - p->prev_failed) / dt;
	} else {
		pt[SER_OUT_TOK_S] = pt[SER_REQ_S] = pt[SER_ERRORS] = NAN;
	}
	pt[SER_TTFT_P99] = window_pct_ms(st->win[STAT_TTFT], 99);
	pt[SER_ITL_P99] = window_pct_ms(st->win[STAT_ITL], 99);
	pt[SER_TTFT_P50] = window_pct_ms(st->win[STAT_TTFT], 50);
	pt[SER_ITL_P50] = window_pct_ms(st->win[STAT_ITL], 50);
	/* Over the sliding window, as the dashboard's live figure: NaN when
	 * no request of the window said how much of its prompt was cached. */
	pt[SER_CACHE_HIT] = stats_cache_hit_rate(&st->win_c);
	pt[SER_IN_FLIGHT] = (double)st->in_flight;
	pt[SER_TARGET] = v->load->mode == LOAD_OPEN ? v->load->rate : (double)v->load->concurrency;
	pt[SER_WAITING] = gauge(v->server, SRV_WAITING);
	pt[SER_RUNNING] = gauge(v->server, SRV_RUNNING);
	pt[SER_KV] = gauge(v->server, SRV_KV_USAGE);
	pt[SER_GPU_POWER] = gpu_power(v->server);
	series_push(s, now_ns, pt);
	push_replicas(p, s, v->server, now_ns);

	p->prev_ns = now_ns;
	p->prev_completed = st->all_c.completed;
	p->prev_failed = st->all_c.failed;
	p->prev_streamed = st->all_c.streamed;
	/* Stay on the one-second grid of the first point; after a stall, skip
	 * the missed seconds (they read as a gap). */
	int64_t late = now_ns - p->next_ns;
	p->next_ns += (late / CLOCK_NS_PER_S + 1) * CLOCK_NS_PER_S;
}
