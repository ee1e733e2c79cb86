#include "config.h"

/* A snapshot of a live run (its view): everything it knows, gathered into
 * struct snapshot (histograms borrowed, not copied), the model every
 * renderer of the result layer reads. Runs in the writer's forked child
 * too, on the child's copy of the memory. Formats nothing itself: the
 * parts carried as JSON come from the JSON writer (json_write.c). */

#include "infertop/options.h"
#include "infertop/snapshot.h"
#include "infertop/redact.h"
#include "infertop/result.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/view.h"
#include "infertop/hist.h"
#include "infertop/plan.h"
#include "infertop/reqlog.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/trace_replay.h"

static void copy_str(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* The scraper's block names the URLs it read, and its errors may quote
 * them: no credentials may reach a file. */
static void scrub_server(cJSON *j)
{
	for (cJSON *c = j ? j->child : NULL; c; c = c->next) {
		if (cJSON_IsString(c) && c->valuestring) {
			if (c->string && strcmp(c->string, "url") == 0) {
				char *clean = malloc(strlen(c->valuestring) + 1);
				if (clean) {
					redact_url(c->valuestring, clean, strlen(c->valuestring) + 1);
					strcpy(c->valuestring, clean);
					free(clean);
				}
			} else {
				redact_userinfo(c->valuestring);
			}
		} else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
			scrub_server(c);
		}
	}
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *token_source(uint64_t from_usage, uint64_t from_chunks)
{
	if (from_usage && from_chunks)
		return "mixed";
	if (from_chunks)
		return "chunks";
	return "usage";
}

/* ---- from a live run ---- */

static cJSON *options_object(const struct run_view *v)
{
	return result_json_options(v->cfg, v->model);
}

static cJSON *load_changes(const struct run_view *v)
{
	return result_json_load_changes(v->load, v->t_start);
}

static cJSON *series_object(const struct series *ser, int64_t t_start, int64_t elapsed_ns)
{
	return result_json_series(ser, t_start, elapsed_ns);
}

/* vLLM's max_output_tokens_per_s: the busiest second. Known only while the
 * 1 s level still covers the whole run. */
static double max_out_tok_s(const struct series *ser, int64_t elapsed_ns)
{
	int64_t el = (elapsed_ns + CLOCK_NS_PER_S - 1) / CLOCK_NS_PER_S;
	if (!ser || el <= 0 || el > RESULT_SERIES_FINE_S)
		return NAN;
	double *buf = malloc((size_t)el * sizeof *buf);
	if (!buf)
		return NAN;
	size_t got = series_read(ser, SER_OUT_TOK_S, 0, buf, (size_t)el, NULL);
	double mx = NAN;
	for (size_t i = 0; i < got; i++)
		if (!isnan(buf[i]) && (isnan(mx) || buf[i] > mx))
			mx = buf[i];
	free(buf);
	return mx;
}

static void step_of(struct snapshot_step *d, const struct plan_step_result *r, const struct slo *slo)
{
	const struct plan_scenario_def *sc = plan_scenario_def(r->scenario);
	d->index = r->index;
	copy_str(d->label, sizeof d->label, r->label);
	if (sc) {
		copy_str(d->scenario, sizeof d->scenario, sc->name);
		d->scenario_input_tokens = (double)sc->input_tokens;
		d->scenario_output_tokens = (double)sc->output_tokens;
	}
	d->open_loop = r->mode == LOAD_OPEN;
	d->target = r->target_from;
	d->target_end = r->target_to;
	copy_str(d->arrival, sizeof d->arrival, load_arrival_name(r->arrival));
	d->start_s = r->t_start_s;
	d->end_s = r->t_end_s;
	d->duration_s = r->duration_s;
	d->held_s = r->held_s;
	d->partial = r->partial;
	d->started = r->started;
	d->completed = r->completed;
	d->failed = r->failed;
	d->incomplete = r->incomplete;
	d->max_concurrency = r->max_concurrency;
	d->mean_input_tokens = r->mean_input_tokens;
	d->mean_output_tokens = r->mean_output_tokens;
	d->unsent = r->unsent;
	d->input_tokens = r->input_tokens;
	d->output_tokens = r->output_tokens;
	d->request_throughput = r->request_throughput;
	d->output_throughput = r->output_throughput;
	d->total_token_throughput = r->total_token_throughput;
	d->mean_concurrency = r->mean_concurrency;
	d->request_goodput = r->request_goodput;
	for (int k = 0; slo && k <= SLO_N; k++)
		d->slo_share[k] = slo_share(&r->slo, k);
	const struct plan_metric *src[] = {&r->ttft, &r->tpot, &r->itl, &r->e2e};
	struct snapshot_metric *dst[] = {&d->ttft, &d->tpot, &d->itl, &d->e2e};
	for (size_t i = 0; i < sizeof src / sizeof src[0]; i++)
		*dst[i] = (struct snapshot_metric){src[i]->count, src[i]->mean_ms, src[i]->p50_ms, src[i]->p90_ms,
						   src[i]->p99_ms};
}

static void metric_of(struct snapshot_metric *m, const struct hist *h)
{
	m->count = hist_count(h);
	m->mean_ms = hist_mean(h) / 1000.0;
	m->p50_ms = (double)hist_percentile(h, 50) / 1000.0;
	m->p90_ms = (double)hist_percentile(h, 90) / 1000.0;
	m->p99_ms = (double)hist_percentile(h, 99) / 1000.0;
}

static void model_of(struct snapshot_model *d, const struct model_stats *ms, const struct slo *slo, double run_s)
{
	copy_str(d->name, sizeof d->name, ms->name);
	d->share = ms->share;
	d->sent = ms->picked;
	d->completed = ms->completed;
	d->failed = ms->failed;
	d->input_tokens = ms->input_tokens;
	d->output_tokens = ms->output_tokens;
	d->request_throughput = run_s > 0 ? (double)ms->completed / run_s : 0;
	d->output_throughput = run_s > 0 ? (double)ms->output_tokens / run_s : 0;
	d->request_goodput = run_s > 0 ? (double)ms->slo.met_all / run_s : 0;
	for (int k = 0; slo && k <= SLO_N; k++)
		d->slo_share[k] = slo_share(&ms->slo, k);
	metric_of(&d->ttft, ms->ttft);
	metric_of(&d->tpot, ms->tpot);
	metric_of(&d->e2e, ms->e2e);
}

/* The plan's results as data: its settings, timeline, finished steps,
 * SLOs and per-model figures (the summary's plan sections and the plan's
 * JSON keys are rendered from these by the result layer). */
static int plan_parts(struct snapshot *s, const struct plan *p)
{
	struct snapshot_plan *d = &s->plan;
	const struct plan_spec *sp = plan_get_spec(p);
	struct plan_result_info info;
	plan_result_info(p, &info);
	d->present = true;
	d->kind = sp->kind;
	copy_str(d->arrival, sizeof d->arrival, load_arrival_name(sp->arrival));
	d->burstiness = sp->shape;
	const struct plan_scenario_def *sc = plan_scenario_def(sp->scenario);
	if (sc)
		copy_str(d->scenario, sizeof d->scenario, sc->name);
	d->warmup_s = (double)sp->warmup_ns / 1e9;
	d->warmup_requests = sp->warmup_requests;
	d->cooldown_s = (double)sp->cooldown_ns / 1e9;
	d->measured_duration_s = (double)sp->main_ns / 1e9;
	d->planned_steps = sp->nsteps;
	copy_str(d->state, sizeof d->state, plan_state_name(p));
	d->have_auto_rates = info.sync_rate > 0 || info.top_rate > 0;
	d->sync_rate = info.sync_rate;
	d->top_rate = info.top_rate;
	copy_str(d->note, sizeof d->note, info.note);
	d->timeline_dropped = info.timeline_dropped;

	struct plan_event *ev = malloc(PLAN_TIMELINE * sizeof *ev);
	size_t nev = ev ? plan_timeline(p, ev, PLAN_TIMELINE) : 0;
	d->timeline = nev ? calloc(nev, sizeof *d->timeline) : NULL;
	if (!ev || (nev && !d->timeline)) {
		free(ev);
		return -1;
	}
	for (size_t i = 0; i < nev; i++) {
		struct snapshot_event *e = &d->timeline[d->ntimeline++];
		e->t_s = (double)(ev[i].t_ns - info.t0) / 1e9;
		copy_str(e->event, sizeof e->event, plan_event_name(ev[i].kind));
		e->step = ev[i].step;
		e->open_loop = ev[i].mode == LOAD_OPEN;
		e->target = ev[i].value;
	}
	free(ev);

	const struct slo *slo = plan_slo(p);
	const struct plan_step_result *res;
	size_t n = plan_steps(p, &res);
	if (n && !(d->steps = calloc(n, sizeof *d->steps)))
		return -1;
	for (size_t i = 0; i < n; i++)
		step_of(&d->steps[d->nsteps++], &res[i], slo);
	for (int i = 0; sp->kind == PLAN_MATRIX && i < PLAN_SCEN_N && d->nmatrix < SNAPSHOT_MATRIX_MAX; i++)
		if (sp->scenario < 0 || sp->scenario == i)
			copy_str(d->matrix[d->nmatrix++], sizeof d->matrix[0], plan_scenario_def(i)->name);
	if (slo) {
		d->have_slo = true;
		for (int k = 0; k < SLO_N; k++) {
			d->slo_set[k] = slo->set[k];
			d->slo_limit_ms[k] = slo->set[k] ? (double)slo->limit_ns[k] / 1e6 : 0;
		}
	}
	const struct models *m = plan_models(p);
	if (m) {
		d->have_models = true;
		if (m->n && !(d->models = calloc(m->n, sizeof *d->models)))
			return -1;
		for (size_t i = 0; i < m->n; i++)
			model_of(&d->models[d->nmodels++], &m->m[i], slo, s->duration);
	}
	return 0;
}

static const char *state_name(enum engine_state st)
{
	switch (st) {
	case ENGINE_IDLE:
		return "idle";
	case ENGINE_RUNNING:
		return "running";
	case ENGINE_DRAINING:
		return "draining";
	case ENGINE_DONE:
		return "done";
	}
	return "?";
}

int snapshot_from_view(struct snapshot *s, const struct run_view *v, int64_t now_ns, enum snapshot_reason why)
{
	const struct stats *st = v->stats;
	const struct config *c = v->cfg;
	memset(s, 0, sizeof *s);
	s->schema = SNAPSHOT_SCHEMA;
	s->reason = why;
	s->nruns = 1;
	copy_str(s->version, sizeof s->version, PACKAGE_VERSION);
	copy_str(s->run_id, sizeof s->run_id, v->run_id);
	if (gethostname(s->host, sizeof s->host) != 0)
		s->host[0] = '\0';
	s->host[sizeof s->host - 1] = '\0';
	redact_url(c->url, s->target_url, sizeof s->target_url);
	copy_str(s->model, sizeof s->model, v->model ? v->model : c->model);
	if (v->server)
		copy_str(s->server_detected, sizeof s->server_detected, v->server->detected);
	copy_str(s->status, sizeof s->status, state_name(v->state));
	copy_str(s->stop_reason, sizeof s->stop_reason, v->stop_reason);
	copy_str(s->token_source, sizeof s->token_source, token_source(st->tokens_from_usage, st->tokens_from_chunks));

	/* After the end the stats stand still: figures are as of t_end. */
	int64_t at = v->state == ENGINE_DONE && v->t_end ? v->t_end : now_ns;
	int64_t elapsed = run_view_elapsed(v, now_ns);
	s->taken_unix = wall_now();
	s->start_unix = v->t_start ? s->taken_unix - (double)(now_ns - v->t_start) / 1e9 : s->taken_unix;
	s->elapsed = elapsed > 0 ? (double)elapsed / 1e9 : 0.0;
	/* Warmup and cooldown are not part of the measured run. */
	s->duration = v->t_start ? plan_measured_seconds(v->plan, v->t_start, at) : 0.0;
	copy_str(s->input_length_source, sizeof s->input_length_source,
		 v->dataset ? dataset_length_source(v->dataset) : "");

	s->open_loop = v->load->mode == LOAD_OPEN;
	s->concurrency = (double)v->load->concurrency;
	s->rate = v->load->rate;
	s->max_concurrency = (double)v->load->max_concurrency;
	s->paused = v->load->paused;
	s->in_flight = st->in_flight;
	s->pending = load_pending(v->load);
	if (c->rate > 0) {
		s->vllm_request_rate = c->rate;
		s->vllm_max_concurrency = c->max_concurrency ? (double)c->max_concurrency : NAN;
	} else {
		s->vllm_request_rate = INFINITY;
		s->vllm_max_concurrency = (double)c->concurrency;
	}
	s->burstiness = c->burstiness > 0 ? c->burstiness : 1.0;

	s->run_c = st->run_c;
	s->win_c = st->win_c;
	s->win_seconds = stats_window_seconds(st, at);
	s->started = st->started;
	s->max_in_flight = st->max_in_flight;
	s->connections = st->connections;
	s->connection_retries = st->connection_retries;
	s->tokens_from_usage = st->tokens_from_usage;
	s->tokens_from_chunks = st->tokens_from_chunks;
	s->usage_mismatch = st->usage_mismatch;
	copy_str(s->usage_mismatch_msg, sizeof s->usage_mismatch_msg, st->usage_mismatch_msg);
	memcpy(s->errors, st->errors, sizeof s->errors);
	memcpy(s->last_msg, st->last_msg, sizeof s->last_msg);
	for (int k = 0; k < ERR_NKINDS; k++)
		redact_userinfo(s->last_msg[k]);
	memcpy(s->http_codes, st->http_codes, sizeof s->http_codes);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = st->run[m];
		s->win[m] = st->win[m];
	}
	memcpy(s->xh, st->xh, sizeof s->xh);
	s->sessions_done = st->sessions_done;
	s->sessions_failed = st->sessions_failed;
	s->sessions_context = st->sessions_context;
	s->sessions_incomplete = st->sessions_incomplete;
	s->session_turns = st->session_turns;
	s->max_output_tok_s = max_out_tok_s(v->series, elapsed);

	const struct slo *slo = plan_slo(v->plan);
	if (slo) {
		s->have_slo = true;
		s->slo_run = slo->run;
		slo_describe(slo, s->slo_desc, sizeof s->slo_desc);
	}

	s->options = options_object(v);
	/* Text the options parser checked (and scrubbed, for the tags). */
	if (v->cfg->metadata && !(s->metadata = cJSON_Parse(v->cfg->metadata)))
		goto oom;
	if (v->cfg->vllm_ignored && !(s->vllm_ignored = cJSON_Parse(v->cfg->vllm_ignored)))
		goto oom;
	s->load_changes = load_changes(v);
	if (!s->options || !s->load_changes)
		goto oom;
	if (v->plan && plan_parts(s, v->plan) != 0)
		goto oom;
	if (v->server && !(s->server = server_to_json(v->server)))
		goto oom;
	scrub_server(s->server);
	/* A status document (GET /v1/status, polled at 4 Hz by fleets and
	 * dashboards) leaves the charts' history out: it is the bulk of the
	 * document, grows with the run, and no poller merges it. */
	if (why != SNAPSHOT_STATUS && v->series && v->t_start &&
	    !(s->series = series_object(v->series, v->t_start, elapsed)))
		goto oom;
	if (why != SNAPSHOT_STATUS && v->series && v->t_start && s->server &&
	    result_json_replica_series(s->server, v->series, v->t_start, elapsed) != 0)
		goto oom;
	if (v->reqlog && reqlog_path(v->reqlog) && !(s->request_log = reqlog_to_json(v->reqlog)))
		goto oom;
	struct trace_replay_info ti;
	if (v->trace)
		trace_replay_info(v->trace, &ti);
	if (v->trace && !(s->trace = trace_replay_to_json(&ti, st->run[STAT_QUEUE])))
		goto oom;
	return 0;
oom:
	snapshot_release(s);
	return -1;
}

char *snapshot_text_sized(const struct snapshot *s, size_t *size)
{
	cJSON *j = snapshot_to_json(s);
	if (!j)
		return NULL;
	/* Files are read by people too; a status document by programs. */
	bool fmt = s->reason != SNAPSHOT_STATUS;
	/* cJSON grows its buffer by doubling from 256 bytes: for a document
	 * of encoded histograms (hundreds of KB on a wide run) that is half
	 * the cost, in copies and fresh pages. A caller that builds the same
	 * document again and again says how big the last one was. */
	size_t want = size && *size ? *size + *size / 8 + 256 : 0;
	char *txt = want && want < INT_MAX ? cJSON_PrintBuffered(j, (int)want, fmt)
					   : fmt ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (txt && size)
		*size = strlen(txt);
	return txt;
}

static char *build(const struct run_view *v, int64_t now_ns, enum snapshot_reason why, size_t *size, bool lean)
{
	struct snapshot s;
	if (snapshot_from_view(&s, v, now_ns, why) != 0)
		return NULL;
	s.lean = lean;
	char *txt = snapshot_text_sized(&s, size);
	snapshot_release(&s);
	return txt;
}

char *snapshot_build_sized(const struct run_view *v, int64_t now_ns, enum snapshot_reason why, size_t *size)
{
	return build(v, now_ns, why, size, false);
}

char *snapshot_build_lean(const struct run_view *v, int64_t now_ns, enum snapshot_reason why, size_t *size)
{
	return build(v, now_ns, why, size, true);
}

char *snapshot_build(const struct run_view *v, int64_t now_ns, enum snapshot_reason why)
{
	return snapshot_build_sized(v, now_ns, why, NULL);
}

