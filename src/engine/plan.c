#include "config.h"

/* The running plan: phases, step boundaries and ramps on libev timers,
 * per-step figures, manual override, and the plan's parts of the result. */

#include "infertop/options.h"
#include "infertop/plan.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/units.h"

/* Ramps move the target this often (rates nearly continuously; a
 * concurrency changes when its rounded value does). */
#define PLAN_TICK_S 0.1
/* libev and clock_gettime may disagree by a hair about "now". */
#define PLAN_DUE_SLACK_NS CLOCK_NS_PER_MS

enum { PM_TTFT, PM_TPOT, PM_ITL, PM_E2E, PM_N };
static const enum stat_metric pm_stat[PM_N] = {STAT_TTFT, STAT_TPOT, STAT_ITL, STAT_E2E};

struct plan {
	struct plan_spec spec;
	bool drives;                 /* steps, warmup, cooldown or a timed run */
	bool have_slo;
	struct slo slo;
	struct models *models;
	int64_t window_ns;
	struct dist scen_in[PLAN_SCEN_N], scen_out[PLAN_SCEN_N];
	int cur_scenario;

	struct ev_loop *loop;
	struct load *load;
	struct stats *stats;
	plan_end_fn on_end;
	void *on_end_ud;
	ev_timer tick, due;
	bool started;

	enum plan_phase phase;
	int cur;                     /* open step, -1 before the first */
	int applied;                 /* step whose start load is set, -1 none */
	bool manual, paused;
	int64_t hold_since;          /* plan clock held since (0: running) */
	int64_t offset;              /* held time so far: plan clock = now - offset */
	int64_t t0;
	bool has_deadline;
	int64_t deadline;            /* plan clock */
	uint64_t warmup_ended;
	int64_t measure_start, measure_end;

	/* The open step. */
	int64_t step_wall0, step_p0, step_held;
	int64_t next_p0;             /* stages: the next one's planned start (plan clock) */
	struct hist *base[PM_N], *tmp;
	struct stats_counters base_c;
	uint64_t base_started;
	struct slo_counts base_slo;
	double inflight_sum;
	uint64_t inflight_n;
	uint64_t step_unsent;
	enum load_arrival step_arrival;

	double sync_rate, top_rate;
	struct plan_step_result *results;
	size_t nresults;
	/* The open step so far, for the steps view: refreshed on the tick
	 * once a second (it costs histogram copies), never while drawing. */
	struct plan_step_result live;
	bool have_live;
	int64_t live_at;
	char note[200];

	struct plan_event timeline[PLAN_TIMELINE];
	uint32_t ntimeline;
};

static void plan_on_tick(struct ev_loop *loop, ev_timer *w, int revents);
static void refresh_live(struct plan *p, int64_t now);
static void plan_on_due(struct ev_loop *loop, ev_timer *w, int revents);

/* ---- construction ---------------------------------------------------- */

int plan_new(const struct config *cfg, struct plan **out, char *err, size_t cap)
{
	*out = NULL;
	struct plan *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	p->cur = p->applied = p->cur_scenario = -1;
	if (plan_spec_parse(cfg, &p->spec, err, cap) != 0)
		goto fail;
	if (slo_parse(cfg->slo, &p->slo, err, cap) != 0)
		goto fail;
	p->have_slo = slo_active(&p->slo);
	if (models_new(cfg->models, cfg->traffic_split, cfg->seed, &p->models, err, cap) != 0)
		goto fail;
	p->window_ns = cfg->window_ns;
	for (int i = 0; i < PLAN_SCEN_N; i++) {
		const struct plan_scenario_def *d = plan_scenario_def(i);
		char a[24], b[24];
		snprintf(a, sizeof a, "%ld", d->input_tokens);
		snprintf(b, sizeof b, "%ld", d->output_tokens);
		if (dist_parse(a, 10000000, &p->scen_in[i]) != 0 || dist_parse(b, 10000000, &p->scen_out[i]) != 0) {
			snprintf(err, cap, "internal error: scenario lengths");
			goto fail;
		}
	}
	p->cur_scenario = p->spec.scenario;
	const struct plan_spec *s = &p->spec;
	p->drives = s->nsteps || s->warmup_ns || s->warmup_requests || s->cooldown_ns || s->main_ns;
	if (s->nsteps) {
		p->results = calloc(s->nsteps, sizeof *p->results);
		p->tmp = hist_new();
		bool ok = p->results && p->tmp;
		for (int m = 0; m < PM_N; m++)
			ok = (p->base[m] = hist_new()) != NULL && ok;
		if (!ok) {
			snprintf(err, cap, "out of memory");
			goto fail;
		}
	}
	ev_timer_init(&p->tick, plan_on_tick, PLAN_TICK_S, PLAN_TICK_S);
	ev_timer_init(&p->due, plan_on_due, 0., 0.);
	p->tick.data = p->due.data = p;
	*out = p;
	return 0;
fail:
	plan_free(p);
	return -1;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	if (p->started) {
		ev_timer_stop(p->loop, &p->tick);
		ev_timer_stop(p->loop, &p->due);
		if (p->load && p->load->observer_ud == p)
			load_set_observer(p->load, NULL, NULL);
	}
	for (int m = 0; m < PM_N; m++)
		hist_free(p->base[m]);
	hist_free(p->tmp);
	free(p->results);
	models_free(p->models);
	plan_spec_free(&p->spec);
	free(p);
}

/* ---- small helpers ---------------------------------------------------- */

static int64_t pclock(const struct plan *p, int64_t now)
{
	return (p->hold_since ? p->hold_since : now) - p->offset;
}

static void tl_add(struct plan *p, enum plan_event_kind k, int64_t now)
{
	struct plan_event *e = &p->timeline[p->ntimeline % PLAN_TIMELINE];
	e->t_ns = now;
	e->kind = k;
	e->step = p->cur;
	e->mode = p->load ? p->load->mode : LOAD_CLOSED;
	e->value = !p->load ? 0 : p->load->mode == LOAD_CLOSED ? (double)p->load->concurrency : p->load->rate;
	p->ntimeline++;
}

static void apply_target(struct plan *p, enum load_mode mode, double v, bool mark)
{
	if (mode == LOAD_CLOSED)
		load_plan_concurrency(p->load, lround(v), mark);
	else
		load_plan_rate(p->load, v, mark);
}

static void apply_base(struct plan *p, bool mark)
{
	apply_target(p, p->spec.base_mode, p->spec.base_value, mark);
}

static const struct plan_step *cur_step(const struct plan *p)
{
	return p->cur >= 0 && (size_t)p->cur < p->spec.nsteps ? &p->spec.steps[p->cur] : NULL;
}

/* Where a ramp stands at plan-clock pnow. */
static double step_target(const struct plan *p, const struct plan_step *st, int64_t pnow)
{
	if (st->from == st->to || st->duration_ns <= 0)
		return st->to;
	double f = (double)(pnow - p->step_p0) / (double)st->duration_ns;
	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	return st->from + (st->to - st->from) * f;
}

static void apply_step_start(struct plan *p, int i)
{
	const struct plan_step *st = &p->spec.steps[i];
	p->cur_scenario = st->scenario;
	enum load_arrival a = p->spec.arrival;
	/* GuideLLM's sweep runs constant-rate steps; --arrival overrides. */
	if ((st->role == PLAN_ROLE_AUTO_RATE || st->role == PLAN_ROLE_THROUGHPUT) && !p->spec.arrival_given)
		a = LOAD_CONSTANT;
	/* The saturating step's in-flight cap, the others' --max-concurrency. */
	long cap = st->role == PLAN_ROLE_THROUGHPUT ? p->spec.saturate_cap : p->spec.max_concurrency;
	if (p->load->max_concurrency != cap)
		load_set_max_concurrency(p->load, cap);
	load_set_arrival(p->load, a, p->spec.shape);
	p->step_arrival = a;
	apply_target(p, st->mode, st->from, true);
	p->applied = i;
}

static void arm(struct plan *p, int64_t now)
{
	ev_timer_stop(p->loop, &p->due);
	if (!p->has_deadline || p->hold_since || p->phase == PLAN_DONE)
		return;
	double delay = (double)(p->deadline + p->offset - now) / 1e9;
	/* libev counts the delay from the time it last woke, which may be a
	 * while before now: brought up to date, the step never ends early. */
	ev_now_update(p->loop);
	ev_timer_set(&p->due, delay > 0 ? delay : 0., 0.);
	ev_timer_start(p->loop, &p->due);
}

static void hold_begin(struct plan *p, int64_t now)
{
	if (p->hold_since)
		return;
	p->hold_since = now;
	ev_timer_stop(p->loop, &p->due);
}

static void hold_end(struct plan *p, int64_t now)
{
	if (p->manual || p->paused || !p->hold_since)
		return;
	int64_t d = now - p->hold_since;
	p->offset += d;
	if (p->phase == PLAN_RUN || p->phase == PLAN_DRAIN)
		p->step_held += d;
	p->hold_since = 0;
}

static void summarize(struct plan_metric *pm, const struct hist *h)
{
	pm->count = hist_count(h);
	pm->mean_ms = hist_mean(h) / 1000.0;
	pm->p50_ms = (double)hist_percentile(h, 50) / 1000.0;
	pm->p90_ms = (double)hist_percentile(h, 90) / 1000.0;
	pm->p99_ms = (double)hist_percentile(h, 99) / 1000.0;
}

/* ---- steps ------------------------------------------------------------ */

static void take_baseline(struct plan *p, int64_t now)
{
	for (int m = 0; m < PM_N; m++)
		hist_copy(p->base[m], p->stats->run[pm_stat[m]]);
	p->base_c = p->stats->run_c;
	p->base_started = p->stats->started;
	p->stats->step_max_in_flight = p->stats->in_flight;
	p->base_slo = p->slo.run;
	p->inflight_sum = 0;
	p->inflight_n = 0;
	p->step_held = 0;
	p->step_unsent = 0;
	p->step_wall0 = now;
	p->step_p0 = pclock(p, now);
}

static void compute_result(struct plan *p, int64_t now, bool partial, struct plan_step_result *r)
{
	const struct plan_step *st = cur_step(p);
	const struct stats *s = p->stats;
	memset(r, 0, sizeof *r);
	if (!st)
		return;
	r->index = p->cur;
	snprintf(r->label, sizeof r->label, "%s", st->label);
	r->scenario = st->scenario;
	r->mode = st->mode;
	r->target_from = st->from;
	r->target_to = st->to;
	r->arrival = p->step_arrival;
	r->t_start_s = (double)(p->step_wall0 - p->t0) / 1e9;
	r->t_end_s = (double)(now - p->t0) / 1e9;
	double dur = (double)(now - p->step_wall0) / 1e9;
	r->duration_s = dur;
	int64_t held = p->step_held;
	if (p->hold_since)
		held += now - (p->hold_since > p->step_wall0 ? p->hold_since : p->step_wall0);
	r->held_s = (double)held / 1e9;
	r->partial = partial;
	r->started = s->started - p->base_started;
	r->completed = s->run_c.completed - p->base_c.completed;
	r->failed = s->run_c.failed - p->base_c.failed;
	r->unsent = p->step_unsent;
	r->incomplete = s->run_c.incomplete - p->base_c.incomplete + s->in_flight;
	r->input_tokens = s->run_c.input_tokens - p->base_c.input_tokens;
	r->output_tokens = s->run_c.output_tokens - p->base_c.output_tokens;
	if (r->completed) {
		uint64_t cut = s->run_c.incomplete_tokens - p->base_c.incomplete_tokens;
		r->mean_input_tokens = (double)r->input_tokens / (double)r->completed;
		r->mean_output_tokens = (double)(r->output_tokens - cut) / (double)r->completed;
	}
	if (dur > 0) {
		r->request_throughput = (double)r->completed / dur;
		r->output_throughput = (double)r->output_tokens / dur;
		r->total_token_throughput = (double)(r->output_tokens + r->input_tokens) / dur;
	}
	r->mean_concurrency = p->inflight_n ? p->inflight_sum / (double)p->inflight_n : 0;
	r->max_concurrency = s->step_max_in_flight;
	r->slo = p->slo.run;
	slo_counts_sub(&r->slo, &p->base_slo);
	if (p->have_slo && dur > 0)
		r->request_goodput = (double)r->slo.met_all / dur;
	struct plan_metric *pm[PM_N] = {&r->ttft, &r->tpot, &r->itl, &r->e2e};
	for (int m = 0; m < PM_N; m++) {
		hist_copy(p->tmp, s->run[pm_stat[m]]);
		hist_sub(p->tmp, p->base[m]);
		summarize(pm[m], p->tmp);
	}
}

static void steps_done(struct plan *p, int64_t now);

static void step_begin(struct plan *p, int i, int64_t now)
{
	p->cur = i;
	p->phase = PLAN_RUN;
	take_baseline(p, now);
	/* Stages keep to their schedule: a late timer does not push every
	 * later stage back. */
	if (p->next_p0 && p->next_p0 <= p->step_p0)
		p->step_p0 = p->next_p0;
	p->next_p0 = 0;
	/* --stage-requests: an isolated step sends its N and ends when they
	 * have (no time limit); a stage ends at its N-th ended request or
	 * its DURATION, whichever comes first. Capped before its load is
	 * set, which may start requests at once. */
	const struct plan_step *st = &p->spec.steps[i];
	bool by_count = p->spec.stage_requests && st->drain;
	/* The warmup's requests still in flight end in the first step and
	 * count there: it sends that many fewer. */
	uint64_t n = p->spec.stage_requests, carry = p->stats->in_flight;
	load_plan_cap(p->load, !by_count ? 0 : carry < n ? n - carry : 1);
	if (p->applied != i)
		apply_step_start(p, i);
	if (p->load->held)
		load_plan_hold(p->load, false);
	p->has_deadline = !by_count;
	p->deadline = p->step_p0 + st->duration_ns;
	tl_add(p, PLAN_EV_STEP, now);
}

static void step_finish(struct plan *p, int64_t now)
{
	const struct plan_step *st = cur_step(p);
	struct plan_step_result *r = &p->results[p->nresults];
	compute_result(p, now, false, r);
	p->nresults++;
	if (st->role == PLAN_ROLE_SYNC) {
		p->sync_rate = r->request_throughput;
		plan_spec_saturate_rate(&p->spec, p->sync_rate);
	}
	if (st->role == PLAN_ROLE_THROUGHPUT) {
		p->top_rate = r->request_throughput;
		if (p->top_rate > 0) {
			plan_spec_auto_rates(&p->spec, p->sync_rate, p->top_rate);
		} else {
			snprintf(p->note, sizeof p->note,
				 "rate=auto: the throughput step completed no request, so the constant-rate "
				 "steps were skipped (try a longer --stage-duration)");
			p->spec.nsteps = (size_t)p->cur + 1;
		}
	}
	if ((size_t)p->cur + 1 < p->spec.nsteps)
		step_begin(p, p->cur + 1, now);
	else
		steps_done(p, now);
}

static void step_end(struct plan *p, int64_t now)
{
	const struct plan_step *st = cur_step(p);
	if (!st->drain) {
		p->next_p0 = p->deadline;
		step_finish(p, now);
		return;
	}
	/* Isolated steps: the next one starts on an idle server, and every
	 * request of this one is counted in it. */
	p->phase = PLAN_DRAIN;
	p->has_deadline = false;
	p->step_unsent += load_plan_hold(p->load, true);
	tl_add(p, PLAN_EV_STEP_END, now);
	if (p->stats->in_flight == 0)
		step_finish(p, now);
}

static void plan_done(struct plan *p, int64_t now)
{
	if (p->phase == PLAN_DONE)
		return;
	p->phase = PLAN_DONE;
	p->has_deadline = false;
	tl_add(p, PLAN_EV_DONE, now);
	ev_timer_stop(p->loop, &p->tick);
	ev_timer_stop(p->loop, &p->due);
	if (p->on_end)
		p->on_end(p->on_end_ud);
}

static void steps_done(struct plan *p, int64_t now)
{
	load_plan_cap(p->load, 0);
	if (!p->spec.cooldown_ns) {
		plan_done(p, now);
		return;
	}
	p->measure_end = now;
	stats_freeze_run(p->stats);
	if (p->have_slo)
		slo_freeze(&p->slo);
	models_freeze(p->models);
	p->phase = PLAN_COOLDOWN;
	p->has_deadline = true;
	p->deadline = pclock(p, now) + p->spec.cooldown_ns;
	if (p->load->held)
		load_plan_hold(p->load, false);
	tl_add(p, PLAN_EV_COOLDOWN, now);
}

static void measure_begin(struct plan *p, int64_t now, bool after_warmup)
{
	if (after_warmup) {
		stats_reset_run(p->stats, now);
		if (p->have_slo)
			slo_reset(&p->slo, now);
		models_reset(p->models);
		tl_add(p, PLAN_EV_WARMUP_END, now);
		/* Without a warmup it stays 0: measured from the run's start. */
		p->measure_start = now;
	}
	p->has_deadline = false;
	if (p->spec.nsteps) {
		step_begin(p, 0, now);
		return;
	}
	p->phase = PLAN_RUN;
	if (p->spec.main_ns) {
		p->has_deadline = true;
		p->deadline = pclock(p, now) + p->spec.main_ns;
	}
}

static void ramp(struct plan *p, int64_t pnow)
{
	const struct plan_step *st = cur_step(p);
	if (!st || st->from == st->to)
		return;
	double v = step_target(p, st, pnow);
	struct load *l = p->load;
	if (st->mode == LOAD_CLOSED) {
		long n = lround(v);
		if (l->mode != LOAD_CLOSED || l->concurrency != n)
			load_plan_concurrency(l, n, false);
	} else if (l->mode != LOAD_OPEN || l->rate != v) {
		load_plan_rate(l, v, false);
	}
}

/* Moves the plan along: whatever is due at now happens. */
static void advance(struct plan *p, int64_t now, bool tick)
{
	if (!p->started || p->phase == PLAN_IDLE || p->phase == PLAN_DONE || p->hold_since)
		return;
	/* The run is stopping (Ctrl-C, -n, -d): nothing more to start. */
	if (load_exhausted(p->load))
		return;
	int64_t pn = pclock(p, now);
	bool due = p->has_deadline && pn >= p->deadline - PLAN_DUE_SLACK_NS;
	switch (p->phase) {
	case PLAN_WARMUP:
		if (due || (p->spec.warmup_requests && p->warmup_ended >= p->spec.warmup_requests))
			measure_begin(p, now, true);
		break;
	case PLAN_RUN:
		if (!p->spec.nsteps) {
			if (due)
				steps_done(p, now);
			break;
		}
		if (tick)
			ramp(p, pn);
		if (due)
			step_end(p, now);
		break;
	case PLAN_DRAIN:
		if (p->stats->in_flight == 0)
			step_finish(p, now);
		break;
	case PLAN_COOLDOWN:
		if (due)
			plan_done(p, now);
		break;
	default:
		break;
	}
}

static void plan_on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct plan *p = w->data;
	int64_t now = clock_now_ns();
	if (p->have_slo)
		slo_tick(&p->slo, now);
	if (p->phase == PLAN_RUN || p->phase == PLAN_DRAIN) {
		p->inflight_sum += (double)p->stats->in_flight;
		p->inflight_n++;
	}
	advance(p, now, true);
	arm(p, now);
	refresh_live(p, now);
}

static void plan_on_due(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct plan *p = w->data;
	int64_t now = clock_now_ns();
	advance(p, now, true);
	arm(p, now);
	refresh_live(p, now);
}

static void plan_on_load_change(void *ud, enum load_change what, int64_t now)
{
	struct plan *p = ud;
	if (!p->drives || p->phase == PLAN_IDLE || p->phase == PLAN_DONE)
		return;
	switch (what) {
	case LOAD_CHANGE_TARGET:
		plan_manual_override(p, now);
		break;
	case LOAD_CHANGE_PAUSE:
		if (p->paused)
			break;
		p->paused = true;
		tl_add(p, PLAN_EV_PAUSE, now);
		hold_begin(p, now);
		break;
	case LOAD_CHANGE_UNPAUSE:
		if (!p->paused)
			break;
		p->paused = false;
		tl_add(p, PLAN_EV_UNPAUSE, now);
		hold_end(p, now);
		advance(p, now, false);
		arm(p, now);
		break;
	}
}

/* ---- running ------------------------------------------------------------ */

void plan_start(struct plan *p, struct ev_loop *loop, struct load *l, struct stats *s, plan_end_fn on_end,
		void *ud)
{
	if (!p) {
		/* No plan at all: just the options' load. */
		return;
	}
	int64_t now = clock_now_ns();
	p->loop = loop;
	p->load = l;
	p->stats = s;
	p->on_end = on_end;
	p->on_end_ud = ud;
	p->t0 = now;
	p->started = true;
	if (p->have_slo)
		slo_start(&p->slo, p->window_ns, now);
	load_set_arrival(l, p->spec.arrival, p->spec.shape);
	p->step_arrival = p->spec.arrival;
	bool warm = p->spec.warmup_ns || p->spec.warmup_requests;
	tl_add(p, PLAN_EV_START, now);
	struct plan_event *ev = &p->timeline[0];
	ev->mode = p->spec.nsteps ? p->spec.steps[0].mode : p->spec.base_mode;
	ev->value = p->spec.nsteps ? p->spec.steps[0].from : p->spec.base_value;
	/* Without a warmup the first step sets its load itself, after its
	 * baseline, so that it counts every request it starts. */
	if (!p->spec.nsteps) {
		if (p->spec.base_mode == LOAD_OPEN)
			load_set_rate(l, p->spec.base_value);
		else
			load_set_concurrency(l, lround(p->spec.base_value));
	} else if (warm) {
		apply_step_start(p, 0);
	}
	/* Registered after the first load, which is not a user change. */
	load_set_observer(l, plan_on_load_change, p);
	if (warm) {
		p->phase = PLAN_WARMUP;
		if (p->spec.warmup_ns) {
			p->has_deadline = true;
			p->deadline = pclock(p, now) + p->spec.warmup_ns;
		}
	} else {
		measure_begin(p, now, false);
	}
	if (p->drives || p->have_slo)
		ev_timer_start(loop, &p->tick);
	arm(p, now);
}

void plan_finish(struct plan *p, int64_t now)
{
	if (!p || !p->started)
		return;
	if ((p->phase == PLAN_RUN || p->phase == PLAN_DRAIN) && cur_step(p) && p->nresults == (size_t)p->cur) {
		compute_result(p, now, true, &p->results[p->nresults]);
		p->nresults++;
	}
	if (p->phase == PLAN_WARMUP && !p->note[0])
		snprintf(p->note, sizeof p->note, "the run ended during the warmup: nothing was left out");
	if (p->phase != PLAN_DONE && p->drives)
		tl_add(p, PLAN_EV_DONE, now);
	p->phase = PLAN_DONE;
	p->has_deadline = false;
	ev_timer_stop(p->loop, &p->tick);
	ev_timer_stop(p->loop, &p->due);
	if (p->load->observer_ud == p)
		load_set_observer(p->load, NULL, NULL);
}

void plan_request_done(struct plan *p, int model_idx, const struct req_result *res, int64_t now_ns)
{
	if (!p)
		return;
	unsigned bits = 0;
	/* A request cut by the run's end met or missed nothing. */
	if (p->have_slo && !res->incomplete)
		bits = slo_record(&p->slo, res);
	if (p->models && model_idx >= 0)
		models_record(p->models, (size_t)model_idx, res, p->have_slo ? &p->slo : NULL, bits);
	if (!p->started)
		return;
	if (p->phase == PLAN_WARMUP)
		p->warmup_ended++;
	if (p->phase == PLAN_WARMUP || p->phase == PLAN_DRAIN) {
		advance(p, now_ns, false);
		arm(p, now_ns);
	} else if (p->phase == PLAN_RUN && p->spec.stage_requests && cur_step(p) && !p->hold_since &&
		   !load_exhausted(p->load)) {
		/* Completed and failed count; an incomplete one is neither. */
		const struct stats_counters *c = &p->stats->run_c;
		if (c->completed + c->failed - p->base_c.completed - p->base_c.failed >= p->spec.stage_requests) {
			step_end(p, now_ns);
			arm(p, now_ns);
		}
	}
}

const struct dist *plan_input_dist(const struct plan *p, const struct dist *dflt)
{
	if (!p || p->cur_scenario < 0 || p->cur_scenario >= PLAN_SCEN_N)
		return dflt;
	return &p->scen_in[p->cur_scenario];
}

const struct dist *plan_output_dist(const struct plan *p, const struct dist *dflt)
{
	if (!p || p->cur_scenario < 0 || p->cur_scenario >= PLAN_SCEN_N)
		return dflt;
	return &p->scen_out[p->cur_scenario];
}

const char *plan_pick_model(struct plan *p, const char *dflt, int *idx)
{
	if (!p || !p->models) {
		*idx = -1;
		return dflt;
	}
	size_t i = models_pick(p->models);
	*idx = (int)i;
	return p->models->m[i].name;
}

bool plan_owns_duration(const struct plan *p)
{
	return p && p->spec.main_ns > 0;
}

long plan_peak_concurrency(const struct plan *p)
{
	return p ? p->spec.peak_concurrency : 0;
}

void plan_manual_override(struct plan *p, int64_t now_ns)
{
	if (!p || !p->started || !p->drives || p->manual || p->phase == PLAN_IDLE || p->phase == PLAN_DONE)
		return;
	p->manual = true;
	tl_add(p, PLAN_EV_MANUAL, now_ns);
	hold_begin(p, now_ns);
	/* Between isolated steps the load is held; the user's load runs. */
	if (p->load->held)
		load_plan_hold(p->load, false);
}

int plan_resume(struct plan *p, int64_t now_ns)
{
	if (!p || !p->manual || p->phase == PLAN_DONE)
		return -1;
	p->manual = false;
	const struct plan_step *st = cur_step(p);
	switch (p->phase) {
	case PLAN_WARMUP:
		if (p->spec.nsteps)
			apply_step_start(p, 0);
		else
			apply_base(p, true);
		break;
	case PLAN_RUN:
		if (st) {
			load_set_arrival(p->load, p->step_arrival, p->spec.shape);
			apply_target(p, st->mode, step_target(p, st, pclock(p, now_ns)), true);
		} else {
			apply_base(p, true);
		}
		break;
	case PLAN_DRAIN:
		apply_target(p, st->mode, st->to, true);
		p->step_unsent += load_plan_hold(p->load, true);
		break;
	case PLAN_COOLDOWN:
		if (p->spec.nsteps) {
			const struct plan_step *last = &p->spec.steps[p->spec.nsteps - 1];
			apply_target(p, last->mode, last->to, true);
		} else {
			apply_base(p, true);
		}
		break;
	default:
		break;
	}
	tl_add(p, PLAN_EV_RESUME, now_ns);
	hold_end(p, now_ns);
	advance(p, now_ns, false);
	arm(p, now_ns);
	return 0;
}

/* ---- read side -------------------------------------------------------- */

enum plan_phase plan_phase(const struct plan *p)
{
	return p ? p->phase : PLAN_IDLE;
}

bool plan_is_manual(const struct plan *p)
{
	return p && p->manual;
}

bool plan_has_steps(const struct plan *p)
{
	return p && p->spec.nsteps > 0;
}

const char *plan_state_name(const struct plan *p)
{
	if (!p || !p->drives)
		return "";
	if (p->manual)
		return "manual";
	if (p->paused)
		return "paused";
	switch (p->phase) {
	case PLAN_WARMUP:
		return "warming up";
	case PLAN_RUN:
		return "running";
	case PLAN_DRAIN:
		return "draining";
	case PLAN_COOLDOWN:
		return "cooling down";
	case PLAN_DONE:
		return "done";
	case PLAN_IDLE:
	default:
		return "idle";
	}
}

int plan_step_index(const struct plan *p, size_t *nsteps)
{
	if (nsteps)
		*nsteps = p ? p->spec.nsteps : 0;
	return p ? p->cur : -1;
}

const struct plan_spec *plan_get_spec(const struct plan *p)
{
	return p ? &p->spec : NULL;
}

static void left_text(const struct plan *p, int64_t now, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (!p->has_deadline && p->phase == PLAN_RUN && p->spec.stage_requests && cur_step(p)) {
		/* --stage-requests: a step without a clock counts requests. */
		const struct stats_counters *c = &p->stats->run_c;
		uint64_t ended = c->completed + c->failed - p->base_c.completed - p->base_c.failed;
		snprintf(buf, cap, ", %" PRIu64 "/%" PRIu64 " requests", ended, p->spec.stage_requests);
		return;
	}
	if (!p->has_deadline)
		return;
	int64_t left = p->deadline - pclock(p, now);
	char d[32];
	units_format_duration(left > 0 ? left : 0, d, sizeof d);
	snprintf(buf, cap, ", %s left", d);
}

void plan_status(const struct plan *p, int64_t now_ns, char *buf, size_t cap)
{
	if (!cap)
		return;
	buf[0] = '\0';
	if (!p || !p->drives)
		return;
	char left[48], what[160];
	left_text(p, now_ns, left, sizeof left);
	const struct plan_step *st = cur_step(p);
	switch (p->phase) {
	case PLAN_WARMUP:
		if (p->spec.warmup_requests) {
			uint64_t n = p->spec.warmup_requests, d = p->warmup_ended < n ? n - p->warmup_ended : 0;
			snprintf(what, sizeof what, "warming up, %" PRIu64 " requests left", d);
		} else {
			snprintf(what, sizeof what, "warming up%s", left);
		}
		break;
	case PLAN_RUN:
		if (st)
			snprintf(what, sizeof what, "step %d/%zu %s%s", p->cur + 1, p->spec.nsteps, st->label, left);
		else
			snprintf(what, sizeof what, "measuring%s", left);
		break;
	case PLAN_DRAIN:
		snprintf(what, sizeof what, "step %d/%zu %s ended, %" PRIu64 " in flight finishing", p->cur + 1,
			 p->spec.nsteps, st ? st->label : "", p->stats ? p->stats->in_flight : 0);
		break;
	case PLAN_COOLDOWN:
		snprintf(what, sizeof what, "cooling down%s", left);
		break;
	case PLAN_DONE:
		snprintf(what, sizeof what, "plan done");
		break;
	case PLAN_IDLE:
	default:
		snprintf(what, sizeof what, "plan not started");
		break;
	}
	if (p->manual)
		snprintf(buf, cap, "manual (plan held: %s)", what);
	else if (p->paused)
		snprintf(buf, cap, "paused (plan held: %s)", what);
	else
		snprintf(buf, cap, "%s", what);
}

size_t plan_steps(const struct plan *p, const struct plan_step_result **out)
{
	if (out)
		*out = p ? p->results : NULL;
	return p ? p->nresults : 0;
}

static void refresh_live(struct plan *p, int64_t now)
{
	if (!p->started || !cur_step(p) || (p->phase != PLAN_RUN && p->phase != PLAN_DRAIN) ||
	    p->nresults != (size_t)p->cur) {
		p->have_live = false;
		return;
	}
	if (p->have_live && p->live.index == p->cur && now - p->live_at < CLOCK_NS_PER_S)
		return;
	compute_result(p, now, true, &p->live);
	p->have_live = true;
	p->live_at = now;
}

const struct plan_step_result *plan_live_step(const struct plan *p)
{
	return p && p->have_live ? &p->live : NULL;
}

size_t plan_timeline(const struct plan *p, struct plan_event *out, size_t cap)
{
	if (!p)
		return 0;
	uint32_t n = p->ntimeline < PLAN_TIMELINE ? p->ntimeline : PLAN_TIMELINE;
	uint32_t first = p->ntimeline - n;
	size_t k = 0;
	for (uint32_t i = 0; i < n && k < cap; i++)
		out[k++] = p->timeline[(first + i) % PLAN_TIMELINE];
	return k;
}

const char *plan_event_name(enum plan_event_kind k)
{
	static const char *const names[] = {
		[PLAN_EV_START] = "start",
		[PLAN_EV_WARMUP_END] = "warmup_end",
		[PLAN_EV_STEP] = "step",
		[PLAN_EV_STEP_END] = "step_end",
		[PLAN_EV_MANUAL] = "manual",
		[PLAN_EV_RESUME] = "resume",
		[PLAN_EV_PAUSE] = "pause",
		[PLAN_EV_UNPAUSE] = "unpause",
		[PLAN_EV_COOLDOWN] = "cooldown",
		[PLAN_EV_DONE] = "done",
	};
	return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

const struct slo *plan_slo(const struct plan *p)
{
	return p && p->have_slo ? &p->slo : NULL;
}

const struct models *plan_models(const struct plan *p)
{
	return p ? p->models : NULL;
}

double plan_goodput(const struct plan *p, double run_s)
{
	if (!p || !p->have_slo || !(run_s > 0))
		return 0;
	return (double)p->slo.run.met_all / run_s;
}

double plan_goodput_window(const struct plan *p, int64_t now_ns)
{
	if (!p || !p->have_slo)
		return 0;
	double w = slo_window_seconds(&p->slo, now_ns);
	return w > 0 ? (double)p->slo.win.met_all / w : 0;
}

void plan_window_reset(struct plan *p, int64_t now_ns)
{
	if (p && p->have_slo && p->started)
		slo_window_reset(&p->slo, now_ns);
}

double plan_measured_seconds(const struct plan *p, int64_t run_start_ns, int64_t run_end_ns)
{
	int64_t a = p && p->measure_start ? p->measure_start : run_start_ns;
	int64_t b = p && p->measure_end ? p->measure_end : run_end_ns;
	return b > a ? (double)(b - a) / 1e9 : 0.0;
}

/* ---- read side for the result layer ------------------------------------ */

void plan_result_info(const struct plan *p, struct plan_result_info *out)
{
	memset(out, 0, sizeof *out);
	out->note = "";
	if (!p)
		return;
	out->sync_rate = p->sync_rate;
	out->top_rate = p->top_rate;
	out->note = p->note;
	out->t0 = p->t0;
	out->timeline_dropped = p->ntimeline > PLAN_TIMELINE ? p->ntimeline - PLAN_TIMELINE : 0;
}
