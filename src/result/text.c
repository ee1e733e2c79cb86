#include "config.h"

/* The text renderer of the result layer: the end-of-run summary (the same
 * for a live run and `infertop report`), the plan's sections (goodput, per
 * model, steps, scenario matrix), the server lines and the progress-line
 * fragment, `infertop report` and `infertop compare` as text. Reads the
 * model only (struct snapshot, struct server_state). */

#include "infertop/result.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/hist.h"
#include "infertop/plan.h"
#include "infertop/server.h"
#include "infertop/snapshot.h"
#include "infertop/units.h"

static double us_to_ms(int64_t us)
{
	return (double)us / 1000.0;
}

/* ---- the plan's sections ---- */

static void section(FILE *out, const char *title);

static void print_slo(FILE *out, const struct snapshot *s)
{
	const struct snapshot_plan *p = &s->plan;
	section(out, "Goodput");
	fprintf(out, "%-40s %s\n", "SLOs:", s->slo_desc);
	fprintf(out, "%-40s %-10.2f\n", "Request goodput (req/s):", snapshot_rate(s->slo_run.met_all, s->duration));
	fprintf(out, "%-40s %-10.2f\n", "Requests meeting every SLO (%):", 100.0 * slo_share(&s->slo_run, SLO_N));
	for (int k = 0; k < SLO_N; k++) {
		if (!p->slo_set[k])
			continue;
		char label[64];
		snprintf(label, sizeof label, "Requests meeting the %s SLO (%%):", slo_name((enum slo_kind)k));
		fprintf(out, "%-40s %-10.2f\n", label, 100.0 * slo_share(&s->slo_run, k));
	}
}

static void print_models(FILE *out, const struct snapshot_plan *p)
{
	section(out, "Models");
	fprintf(out, "| model | share | sent | done | failed | req/s | out tok/s | TTFT p50 ms | TPOT p50 ms | "
		     "E2E p50 ms |%s\n", p->have_slo ? " goodput req/s |" : "");
	fprintf(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", p->have_slo ? "---:|" : "");
	for (size_t i = 0; i < p->nmodels; i++) {
		const struct snapshot_model *ms = &p->models[i];
		fprintf(out, "| %s | %.3f | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.2f | %.1f | %.1f | %.2f | %.1f |",
			ms->name, ms->share, ms->sent, ms->completed, ms->failed, ms->request_throughput,
			ms->output_throughput, ms->ttft.p50_ms, ms->tpot.p50_ms, ms->e2e.p50_ms);
		if (p->have_slo)
			fprintf(out, " %.2f |", ms->request_goodput);
		fputc('\n', out);
	}
}

static void print_steps(FILE *out, const struct snapshot_plan *p)
{
	fprintf(out, "| # | step | time s | done | failed | incomplete | in/out tok/req | req/s | out tok/s | "
		     "in flight | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms | ITL p50 ms | E2E p50 ms |%s\n",
		p->have_slo ? " goodput req/s |" : "");
	fprintf(out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n",
		p->have_slo ? "---:|" : "");
	for (size_t i = 0; i < p->nsteps; i++) {
		const struct snapshot_step *r = &p->steps[i];
		fprintf(out, "| %d | %s%s | %.1f | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %.0f/%.0f | %.2f | %.1f | "
			     "%.1f | %.1f | %.1f | %.2f | %.2f | %.1f |",
			r->index + 1, r->label, r->partial ? " (partial)" : r->held_s > 0 ? " (held)" : "",
			r->duration_s, r->completed, r->failed, r->incomplete, r->mean_input_tokens,
			r->mean_output_tokens, r->request_throughput, r->output_throughput,
			r->mean_concurrency, r->ttft.p50_ms, r->ttft.p99_ms, r->tpot.p50_ms, r->itl.p50_ms,
			r->e2e.p50_ms);
		if (p->have_slo)
			fprintf(out, " %.2f |", r->request_goodput);
		fputc('\n', out);
	}
}

static void print_matrix(FILE *out, const struct snapshot_plan *p)
{
	const char *tn = p->nsteps && p->steps[0].open_loop ? "rate" : "concurrency";
	fprintf(out, "| scenario | in/out tokens | %s | done | req/s | out tok/s | TTFT p50 ms | TTFT p99 ms | "
		     "TPOT p50 ms | ITL p50 ms | E2E p50 ms | E2E p99 ms |%s\n",
		tn, p->have_slo ? " goodput req/s |" : "");
	fprintf(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", p->have_slo ? "---:|" : "");
	for (size_t i = 0; i < p->nsteps; i++) {
		const struct snapshot_step *r = &p->steps[i];
		bool sc = r->scenario[0] != '\0';
		fprintf(out, "| %s%s | %ld/%ld | %g | %" PRIu64 " | %.2f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f |",
			sc ? r->scenario : "-", r->partial ? " (partial)" : "", sc ? (long)r->scenario_input_tokens : 0,
			sc ? (long)r->scenario_output_tokens : 0, r->target, r->completed, r->request_throughput,
			r->output_throughput, r->ttft.p50_ms, r->ttft.p99_ms, r->tpot.p50_ms, r->itl.p50_ms,
			r->e2e.p50_ms, r->e2e.p99_ms);
		if (p->have_slo)
			fprintf(out, " %.2f |", r->request_goodput);
		fputc('\n', out);
	}
}

void result_text_plan(FILE *out, const struct snapshot *s)
{
	const struct snapshot_plan *p = &s->plan;
	if (!p->present) {
		/* An older file without the plan's data: the text it saved. */
		if (s->plan_text)
			fputs(s->plan_text, out);
		return;
	}
	if (p->have_slo)
		print_slo(out, s);
	if (p->have_models)
		print_models(out, p);
	if (p->nsteps) {
		section(out, p->kind == PLAN_MATRIX ? "Scenario matrix" : "Steps");
		if (p->kind == PLAN_MATRIX)
			print_matrix(out, p);
		else
			print_steps(out, p);
	}
	if (p->note[0])
		fprintf(out, "Plan: %s\n", p->note);
}

/* ---- the end-of-run summary ---- */

#define LINE "=================================================="

static void section(FILE *out, const char *title)
{
	size_t n = strlen(title), w = sizeof LINE - 1;
	size_t left = n + 2 < w ? (w - n - 2) / 2 : 0;
	size_t right = n + 2 < w ? w - n - 2 - left : 0;
	for (size_t i = 0; i < left; i++)
		fputc('-', out);
	fprintf(out, " %s ", title);
	for (size_t i = 0; i < right; i++)
		fputc('-', out);
	fputc('\n', out);
}

static void row_f(FILE *out, const char *label, double v)
{
	fprintf(out, "%-40s %-10.2f\n", label, v);
}

static void row_u(FILE *out, const char *label, uint64_t v)
{
	fprintf(out, "%-40s %-10" PRIu64 "\n", label, v);
}

static void latency_block(FILE *out, const struct hist *h, const char *title, const char *abbr)
{
	char label[64];
	section(out, title);
	snprintf(label, sizeof label, "Mean %s (ms):", abbr);
	row_f(out, label, hist_mean(h) / 1000.0);
	snprintf(label, sizeof label, "Median %s (ms):", abbr);
	row_f(out, label, us_to_ms(hist_percentile(h, 50)));
	static const double ps[] = {90, 99, 99.9};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		snprintf(label, sizeof label, "P%g %s (ms):", ps[i], abbr);
		row_f(out, label, us_to_ms(hist_percentile(h, ps[i])));
	}
}

/* The client metrics' blocks, from client_metrics.def: their place, title,
 * row label, and whether they need a request rate (RATE: counted from the
 * intended send, which a closed loop does not have). */
#define TEXT_ALL false
#define TEXT_RATE true
static const unsigned char text_pos[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, ...) [STAT_##id] = text_pos,
#include "infertop/client_metrics.def"
};
static const struct {
	const char *title, *abbr;
	bool need_rate;
} text_blocks[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, ...) \
	[STAT_##id] = { text_title, text_abbr, TEXT_##text_when },
#include "infertop/client_metrics.def"
};

/* Mean, median and p99 of a latency that may have no sample. */
static void ttft_rows(FILE *out, const struct hist *h, const char *what)
{
	char label[64];
	snprintf(label, sizeof label, "Requests, %s:", what);
	row_u(out, label, h ? hist_count(h) : 0);
	if (!h)
		return;
	snprintf(label, sizeof label, "Mean TTFT, %s (ms):", what);
	row_f(out, label, hist_mean(h) / 1000.0);
	snprintf(label, sizeof label, "Median TTFT, %s (ms):", what);
	row_f(out, label, us_to_ms(hist_percentile(h, 50)));
	snprintf(label, sizeof label, "P99 TTFT, %s (ms):", what);
	row_f(out, label, us_to_ms(hist_percentile(h, 99)));
}

/* What the server said of its prefix cache, request by request. */
static void print_cache(FILE *out, const struct snapshot *s)
{
	const struct stats_counters *c = &s->run_c;
	section(out, "Prefix cache");
	row_u(out, "Requests reporting cached tokens:", c->cache_known);
	row_u(out, "Requests not reporting them:", c->cache_unknown);
	row_u(out, "Prompt tokens (reporting requests):", c->prompt_known);
	row_u(out, "Cached prompt tokens:", c->prompt_cached);
	double hr = stats_cache_hit_rate(c);
	if (isnan(hr))
		fprintf(out, "%-40s %-10s\n", "Cache hit rate (%):", "-");
	else
		row_f(out, "Cache hit rate (%):", 100.0 * hr);
	ttft_rows(out, snapshot_xhist(s, XH_TTFT_WARM), "mostly cached");
	ttft_rows(out, snapshot_xhist(s, XH_TTFT_COLD), "cold");
}

static double ms_p(const struct hist *h, double p)
{
	return h ? us_to_ms(hist_percentile(h, p)) : NAN;
}

/* --sessions: how sessions ended, and TTFT/E2E turn by turn. */
static void print_sessions(FILE *out, const struct snapshot *s)
{
	section(out, "Sessions");
	row_u(out, "Sessions ended:", s->sessions_done);
	row_u(out, "Sessions with a failed turn:", s->sessions_failed);
	row_u(out, "Sessions ended at the context limit:", s->sessions_context);
	row_u(out, "Sessions cut by the run's end:", s->sessions_incomplete);
	row_u(out, "Turns completed:", s->session_turns);
	const struct hist *t = snapshot_xhist(s, XH_SESSION_TURNS);
	if (t) {
		row_f(out, "Mean turns per session:", hist_mean(t));
		row_u(out, "Max turns per session:", (uint64_t)hist_max(t));
	}
	const struct hist *d = snapshot_xhist(s, XH_SESSION_DURATION);
	if (d) {
		row_f(out, "Mean session duration (s):", hist_mean(d) / 1e6);
		row_f(out, "Median session duration (s):", (double)hist_percentile(d, 50) / 1e6);
		row_f(out, "P99 session duration (s):", (double)hist_percentile(d, 99) / 1e6);
	}
	const struct hist *k = snapshot_xhist(s, XH_SESSION_CONTEXT);
	if (k) {
		row_f(out, "Mean context tokens at the last turn:", hist_mean(k));
		row_u(out, "Max context tokens at the last turn:", (uint64_t)hist_max(k));
	}
	bool any = false;
	for (int i = 0; i < STATS_TURNS; i++) {
		const struct hist *tt = snapshot_xhist(s, (enum stats_xhist)(XH_TURN_TTFT + i));
		const struct hist *te = snapshot_xhist(s, (enum stats_xhist)(XH_TURN_E2E + i));
		if (!tt && !te)
			continue;
		if (!any)
			fprintf(out, "%-5s %8s %9s %9s %9s %9s\n", "turn", "requests", "TTFT p50", "TTFT p99", "E2E p50",
				"E2E p99");
		any = true;
		fprintf(out, "%-5s %8" PRIu64 " %9.2f %9.2f %9.2f %9.2f\n", stats_turn_label(i),
			tt ? hist_count(tt) : 0, ms_p(tt, 50), ms_p(tt, 99), ms_p(te, 50), ms_p(te, 99));
	}
	if (any)
		fprintf(out, "%s\n", "(by turn: ms, successful requests; 8+ = turn 8 and later)");
}

/* A fleet --start's merge: the generators it was planned on, and every
 * one lost (its share of the load is missing from the figures above). */
static void fleet_text(FILE *out, const cJSON *fleet)
{
	if (!cJSON_IsObject(fleet))
		return;
	const cJSON *lost = cJSON_GetObjectItemCaseSensitive(fleet, "generators_lost");
	const cJSON *load = cJSON_GetObjectItemCaseSensitive(fleet, "load");
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(load, "mode");
	const cJSON *pl = cJSON_GetObjectItemCaseSensitive(fleet, "generators_planned");
	const cJSON *mg = cJSON_GetObjectItemCaseSensitive(fleet, "generators_merged");
	fprintf(out, "Fleet: %.0f of %.0f generators merged, %d lost",
		cJSON_IsNumber(mg) ? mg->valuedouble : 0, cJSON_IsNumber(pl) ? pl->valuedouble : 0,
		cJSON_GetArraySize(lost));
	if (cJSON_IsString(mode)) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(load, "planned");
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(load, "achieved");
		fprintf(out, "; %s planned %.4g, achieved %.4g", mode->valuestring,
			cJSON_IsNumber(p) ? p->valuedouble : NAN, cJSON_IsNumber(a) ? a->valuedouble : NAN);
	}
	fputc('\n', out);
	const cJSON *g;
	cJSON_ArrayForEach(g, lost)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(g, "generator");
		const cJSON *run = cJSON_GetObjectItemCaseSensitive(g, "run_id");
		const cJSON *after = cJSON_GetObjectItemCaseSensitive(g, "lost_after_s");
		const cJSON *why = cJSON_GetObjectItemCaseSensitive(g, "why");
		fprintf(out, "  LOST %s (run %.8s): last answer %.1f s into the run; %s\n",
			cJSON_IsString(id) ? id->valuestring : "?", cJSON_IsString(run) ? run->valuestring : "-",
			cJSON_IsNumber(after) ? after->valuedouble : NAN, cJSON_IsString(why) ? why->valuestring : "-");
	}
}

const char *result_text_meta_value(const cJSON *v, char *buf, size_t cap)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	char *t = cJSON_PrintUnformatted(v);
	snprintf(buf, cap, "%s", t ? t : "?");
	free(t);
	return buf;
}

void result_text_metadata(FILE *out, const struct snapshot *s)
{
	char buf[1100];
	for (const cJSON *it = s->metadata ? s->metadata->child : NULL; it; it = it->next)
		fprintf(out, "%s%s=%s", it == s->metadata->child ? "Metadata: " : ", ", it->string,
			result_text_meta_value(it, buf, sizeof buf));
	if (s->metadata && s->metadata->child)
		fputc('\n', out);
	for (const cJSON *it = s->vllm_ignored ? s->vllm_ignored->child : NULL; it; it = it->next)
		fprintf(out, "Ignored vLLM argument %s: %s\n", it->string, result_text_meta_value(it, buf, sizeof buf));
}

void snapshot_print_summary(FILE *out, const struct snapshot *s)
{
	double dur = s->duration;
	fprintf(out, "%s\n", "============ Serving Benchmark Result ============");
	row_u(out, "Successful requests:", s->run_c.completed);
	row_u(out, "Failed requests:", snapshot_failed(s));
	if (s->run_c.incomplete)
		row_u(out, "Incomplete requests:", s->run_c.incomplete);
	row_f(out, "Benchmark duration (s):", dur);
	row_u(out, "Total input tokens:", s->run_c.input_tokens);
	row_u(out, "Total generated tokens:", s->run_c.output_tokens);
	row_f(out, "Request throughput (req/s):", snapshot_rate(s->run_c.completed, dur));
	if (s->have_slo)
		row_f(out, "Request goodput (req/s):", snapshot_rate(s->slo_run.met_all, dur));
	row_f(out, "Output token throughput (tok/s):", snapshot_rate(s->run_c.output_tokens, dur));
	row_f(out, "Total Token throughput (tok/s):",
	      snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, dur));
	enum stat_metric order[STAT_NMETRICS];
	int n = stats_metric_order(text_pos, order);
	bool rate = isfinite(s->vllm_request_rate);
	for (int i = 0; i < n; i++)
		if (!text_blocks[order[i]].need_rate || rate)
			latency_block(out, s->run[order[i]], text_blocks[order[i]].title, text_blocks[order[i]].abbr);
	if (snapshot_has_cache(s))
		print_cache(out, s);
	if (snapshot_has_sessions(s))
		print_sessions(out, s);
	if (s->server) {
		struct server_state *st = malloc(sizeof *st);
		if (st) {
			snapshot_server_state(s->server, st);
			server_print_summary(out, st);
			free(st);
		}
	}
	fprintf(out, "%s\n", LINE);
	if (snapshot_failed(s)) {
		fprintf(out, "Errors by kind:\n");
		for (int k = 0; k < ERR_NKINDS; k++) {
			if (!s->errors[k])
				continue;
			fprintf(out, "  %-12s %8" PRIu64 "  last: %s\n", stats_err_name((enum err_kind)k), s->errors[k],
				s->last_msg[k]);
		}
		for (int c = 0; c < STATS_HTTP_CODES; c++)
			if (s->http_codes[c])
				fprintf(out, "  HTTP %d     %8" PRIu64 "\n", c, s->http_codes[c]);
	}
	fprintf(out, "Output tokens counted from: %s; stopped: %s\n", s->token_source,
		s->stop_reason[0] ? s->stop_reason : "-");
	if (s->usage_mismatch)
		fprintf(out, "Warning: %" PRIu64 " requests' usage and chunk counts differ over 2x (last: %s)\n",
			s->usage_mismatch, s->usage_mismatch_msg);
	if (s->connection_retries)
		fprintf(out, "Connection retries: %" PRIu64 " (the server closed a kept-alive connection as they "
			"went out; resent once, not failures)\n", s->connection_retries);
	fleet_text(out, s->fleet);
	result_text_metadata(out, s);
	const cJSON *dropped = s->request_log ? cJSON_GetObjectItemCaseSensitive(s->request_log, "dropped") : NULL;
	if (cJSON_IsNumber(dropped) && dropped->valuedouble > 0) {
		const cJSON *why = cJSON_GetObjectItemCaseSensitive(s->request_log, "last_error");
		fprintf(out, "Request log: %.0f lines dropped (%s)\n", dropped->valuedouble,
			cJSON_IsString(why) ? why->valuestring : "write errors");
	}
	result_text_plan(out, s);
	fflush(out);
}


/* ---- the server ---- */

static bool live(enum server_status s)
{
	return s == SERVER_UP || s == SERVER_STALE;
}

static void fmt_num(char *b, size_t cap, const struct server_value *v, const char *f, double scale)
{
	if (v->valid)
		snprintf(b, cap, f, v->v * scale);
	else
		snprintf(b, cap, "-");
}

void server_format_brief(const struct server_state *st, char *buf, size_t cap)
{
	if (!cap)
		return;
	buf[0] = '\0';
	switch (st->status) {
	case SERVER_OFF:
		if (st->gpu_status == SERVER_OFF)
			snprintf(buf, cap, "server metrics: off");
		break;
	case SERVER_PENDING:
		snprintf(buf, cap, "server metrics: pending");
		return;
	case SERVER_DOWN:
		snprintf(buf, cap, "server metrics: down (%.*s)", 80, st->last_error[0] ? st->last_error : "no answer");
		return;
	case SERVER_UP:
	case SERVER_STALE: {
		char r[24], w[24], k[24];
		fmt_num(r, sizeof r, &st->gauge[SRV_RUNNING], "%.0f", 1);
		fmt_num(w, sizeof w, &st->gauge[SRV_WAITING], "%.0f", 1);
		fmt_num(k, sizeof k, &st->gauge[SRV_KV_USAGE], "%.0f%%", 100);
		char n[40] = "";
		if (st->nreplicas >= 2)
			snprintf(n, sizeof n, " (%d of %d replicas)", st->replicas_read, st->nreplicas);
		snprintf(buf, cap, "run %s wait %s kv %s%s%s", r, w, k, n, st->status == SERVER_STALE ? " (stale)" : "");
		break;
	}
	}
	if (live(st->gpu_status) && st->power_total_w.valid) {
		size_t n = strlen(buf);
		char j[32] = "";
		if (st->joules_per_token.valid)
			snprintf(j, sizeof j, " %.2f J/tok", st->joules_per_token.v);
		snprintf(buf + n, cap - n, "%s%.0f W%s", n ? " " : "", st->power_total_w.v, j);
	}
}

static void print_lat(FILE *out, const char *name, const struct server_state *st, int l)
{
	char a[48], b[48], c[24];
	if (!st->run_p50[l].valid && !st->run_mean[l].valid)
		return;
	server_format_ms(&st->run_p50[l], a, sizeof a);
	server_format_ms(&st->run_p99[l], b, sizeof b);
	fmt_num(c, sizeof c, &st->run_mean[l], "%.1f", 1e3);
	fprintf(out, "%-40s p50 %s  p99 %s  mean %s\n", name, a, b, c);
}

static void print_agg(FILE *out, const char *name, const struct server_agg *a, double scale, const char *unit)
{
	if (!a->n)
		return;
	fprintf(out, "%-40s mean %.2f%s  max %.2f%s\n", name, server_agg_mean(a) * scale, unit, a->max * scale, unit);
}

/* One line a replica (2+ --metrics-url): its own latest gauges, what it
 * generated over the run and its share of what they all generated. */
static void print_replicas(FILE *out, const struct server_state *st)
{
	double total = 0;
	for (int i = 0; i < st->nreplicas; i++)
		if (st->replica[i].run_gen_tokens.valid)
			total += st->replica[i].run_gen_tokens.v;
	for (int i = 0; i < st->nreplicas && i < SERVER_MAX_REPLICAS; i++) {
		const struct server_replica *r = &st->replica[i];
		char name[48], run[24], wait[24], kv[24], gen[24], share[24];
		snprintf(name, sizeof name, "Replica %d (%s):", i + 1, server_status_name(r->status));
		fmt_num(run, sizeof run, &r->running, "%.0f", 1);
		fmt_num(wait, sizeof wait, &r->waiting, "%.0f", 1);
		fmt_num(kv, sizeof kv, &r->kv, "%.1f%%", 100);
		fmt_num(gen, sizeof gen, &r->run_gen_tokens, "%.0f", 1);
		if (r->run_gen_tokens.valid && total > 0)
			snprintf(share, sizeof share, "%.1f%%", 100.0 * r->run_gen_tokens.v / total);
		else
			snprintf(share, sizeof share, "-");
		fprintf(out, "%-40s run %s  wait %s  kv %s  generated %s (%s)  %s\n", name, run, wait, kv, gen, share,
			r->url);
	}
}

void server_print_summary(FILE *out, const struct server_state *st)
{
	if (st->status == SERVER_OFF && st->gpu_status == SERVER_OFF)
		return;
	if (st->status != SERVER_OFF) {
		char title[64];
		snprintf(title, sizeof title, "Server metrics (%s)", st->detected[0] ? st->detected : "unknown");
		section(out, title);
		if (st->scrapes == 0) {
			fprintf(out, "%-40s %s\n", "Unavailable:", st->last_error[0] ? st->last_error : "no answer");
		} else {
			if (st->status != SERVER_UP)
				fprintf(out, "%-40s %s (%s)\n", "Status at the end:", server_status_name(st->status),
					st->last_error);
			if (st->note[0])
				fprintf(out, "%-40s %s\n", "Note:", st->note);
			if (st->nreplicas >= 2)
				fprintf(out, "%-40s %d of %d replicas\n", "Read at the end:", st->replicas_read,
					st->nreplicas);
			print_agg(out, "Running requests:", &st->agg[SRV_RUNNING], 1, "");
			print_agg(out, "Waiting requests:", &st->agg[SRV_WAITING], 1, "");
			print_agg(out, "KV-cache usage:", &st->agg[SRV_KV_USAGE], 100, "%");
			if (st->run_gen_tokens.valid)
				fprintf(out, "%-40s %.0f\n", "Server generated tokens:", st->run_gen_tokens.v);
			print_lat(out, "Server TTFT (ms):", st, SRVL_TTFT);
			print_lat(out, "Server ITL (ms):", st, SRVL_ITL);
			print_lat(out, "Server E2E (ms):", st, SRVL_E2E);
			print_lat(out, "Server queue time (ms):", st, SRVL_QUEUE);
			if (st->nreplicas >= 2)
				print_replicas(out, st);
		}
	}
	if (st->gpu_status != SERVER_OFF) {
		if (st->status == SERVER_OFF)
			section(out, "GPU metrics");
		if (st->gpu_scrapes == 0)
			fprintf(out, "%-40s %s\n", "GPU metrics unavailable:", st->gpu_error);
		print_agg(out, "GPU power (W):", &st->power_agg, 1, "");
		print_agg(out, "Energy per output token (J):", &st->jpt_agg, 1, "");
	}
}

/* A bound for people: "%.4g" keeps 0.5, 2.5, 300, 7500 as written in the
 * server's le labels. */
static void bound_text(char *buf, size_t cap, double x)
{
	snprintf(buf, cap, "%.4g", x);
}

bool server_format_ms(const struct server_value *v, char *buf, size_t cap)
{
	if (!v || !v->valid || !isfinite(v->v)) {
		snprintf(buf, cap, "-");
		return false;
	}
	double ms = v->v * 1e3, lo = v->lo * 1e3, hi = v->hi * 1e3;
	if (!(hi > lo)) {
		/* Exact: a mean, a summary's quantile. */
		snprintf(buf, cap, ms < 10 ? "%.2f" : ms < 100 ? "%.1f" : "%.0f", ms);
		return false;
	}
	/* From buckets: only the bucket is known. Any number inside it
	 * (PromQL's linear interpolation) would look measured and can lie
	 * below the mean or above the longest request, so the bounds are
	 * shown, in seconds from 1 s on to stay short ("10-20 s"). */
	bool secs = (isinf(hi) ? lo : hi) >= 1000;
	double k = secs ? 1e-3 : 1;
	char a[24], b[24];
	bound_text(a, sizeof a, lo * k);
	bound_text(b, sizeof b, hi * k);
	if (isinf(hi))
		snprintf(buf, cap, ">%s%s", a, secs ? " s" : "");
	else if (lo <= 0)
		snprintf(buf, cap, "<=%s%s", b, secs ? " s" : "");
	else
		snprintf(buf, cap, "%s-%s%s", a, b, secs ? " s" : "");
	return secs;
}


/* ---- infertop report ---- */

void result_text_utc(char *buf, size_t cap, double unix_s)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	if (unix_s <= 0 || !gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, cap, "-");
}

const char *result_text_or_dash(const char *s)
{
	return s && *s ? s : "-";
}

void result_text_load(char *buf, size_t cap, const struct snapshot *s)
{
	if (s->open_loop && s->max_concurrency > 0)
		snprintf(buf, cap, "rate %.4g req/s, cap %.0f in flight", s->rate, s->max_concurrency);
	else if (s->open_loop)
		snprintf(buf, cap, "rate %.4g req/s", s->rate);
	else
		snprintf(buf, cap, "concurrency %.0f", s->concurrency);
}

static void latency_text(FILE *out, struct hist *const *h, const char *title)
{
	fprintf(out, "%s\n%-20s %10s", title, "metric (ms)", "count");
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, " %9s", result_mstat_heads[i]);
	fputc('\n', out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct result_mstat st;
		result_mstat_of(h[m], &st);
		fprintf(out, "%-20s %10" PRIu64, stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < RESULT_NSTAT; i++)
			fprintf(out, " %9.2f", st.v[i]);
		fputc('\n', out);
	}
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The server gauges the summary's "Server metrics" block leaves out (it
 * has running, waiting and KV usage): each figure is printed once. */
static void server_text(FILE *out, const struct cJSON *srv)
{
	struct server_state *st = srv ? malloc(sizeof *st) : NULL;
	if (!st)
		return;
	snapshot_server_state(srv, st);
	fprintf(out, "\nMore server gauges (scraping %s):\n", server_status_name(st->status));
	fprintf(out, "  %-22s %12s %12s %12s %12s\n", "gauge", "latest", "run mean", "run min", "run max");
	for (int g = 0; g < SRV_NGAUGES; g++) {
		if (g == SRV_RUNNING || g == SRV_WAITING || g == SRV_KV_USAGE)
			continue;
		const struct server_agg *a = &st->agg[g];
		double v[4] = {st->gauge[g].valid ? st->gauge[g].v : NAN, server_agg_mean(a), a->n ? a->min : NAN,
			       a->n ? a->max : NAN};
		fprintf(out, "  %-22s", result_key_name(result_keys_gauge, g, "?"));
		for (int i = 0; i < 4; i++) {
			if (isnan(v[i]))
				fprintf(out, " %12s", "-");
			else
				fprintf(out, " %12.4g", v[i]);
		}
		fputc('\n', out);
	}
	free(st);
}

int result_text_report(FILE *out, const char *file, const struct snapshot *s)
{
	char start[40], taken[40], dur[32], load[96];
	result_text_utc(start, sizeof start, s->start_unix);
	result_text_utc(taken, sizeof taken, s->taken_unix);
	units_format_duration((int64_t)(s->duration * 1e9), dur, sizeof dur);
	result_text_load(load, sizeof load, s);
	fprintf(out, "infertop report: %s\n", file);
	fprintf(out, "Run:       started %s on %s, lasted %s, %s (stopped: %s)\n", start, result_text_or_dash(s->host), dur,
		result_text_or_dash(s->status), result_text_or_dash(s->stop_reason));
	fprintf(out, "Target:    %s, model %s, server %s\n", result_text_or_dash(s->target_url), result_text_or_dash(s->model),
		result_text_or_dash(s->server_detected));
	fprintf(out, "Load:      %s%s\n", load, s->paused ? " (paused)" : "");
	fprintf(out, "Snapshot:  %s, taken %s, infertop %s", snapshot_reason_name(s->reason), taken,
		result_text_or_dash(s->version));
	if (s->nruns > 1)
		fprintf(out, ", %u runs merged", s->nruns);
	fprintf(out, "\n\n");
	snapshot_print_summary(out, s);
	fputc('\n', out);
	latency_text(out, s->run, "Latency, whole run:");
	char title[96];
	snprintf(title, sizeof title, "Latency, sliding window (last %.1f s):", s->win_seconds);
	fputc('\n', out);
	latency_text(out, s->win, title);
	fprintf(out, "\n%-28s %14s %14s\n", "Throughput", "whole run", "window");
	fprintf(out, "%-28s %14.2f %14.2f\n", "requests/s", snapshot_rate(s->run_c.completed, s->duration),
		snapshot_rate(s->win_c.completed, s->win_seconds));
	fprintf(out, "%-28s %14.2f %14.2f\n", "output tokens/s", snapshot_rate(s->run_c.output_tokens, s->duration),
		snapshot_rate(s->win_c.output_tokens, s->win_seconds));
	fprintf(out, "%-28s %14.2f %14.2f\n", "total tokens/s",
		snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, s->duration),
		snapshot_rate(s->win_c.output_tokens + s->win_c.input_tokens, s->win_seconds));
	if (!isnan(s->max_output_tok_s))
		fprintf(out, "%-28s %14.2f\n", "busiest second, output tok/s", s->max_output_tok_s);
	if (s->have_slo)
		fprintf(out, "%-28s %14.2f (%s: %" PRIu64 " of %" PRIu64 " requests met all)\n", "goodput, req/s",
			snapshot_rate(s->slo_run.met_all, s->duration), s->slo_desc, s->slo_run.met_all,
			s->slo_run.ended);
	else
		fprintf(out, "%-28s %14s\n", "goodput", "- (no SLOs given)");
	fprintf(out, "%-28s %14" PRIu64 " (peak %" PRIu64 ", connections opened %" PRIu64 ")\n", "requests started",
		s->started, s->max_in_flight, s->connections);
	if (s->connection_retries)
		fprintf(out, "%-28s %14" PRIu64 " (the server closed a kept-alive connection under them;\n"
			"%-28s %14s  resent once on a fresh one, not failures)\n",
			"connection retries", s->connection_retries, "", "");
	int nchanges = cJSON_GetArraySize(s->load_changes);
	if (nchanges > 0) {
		fprintf(out, "\nLoad changes:\n");
		const cJSON *c;
		cJSON_ArrayForEach(c, s->load_changes)
		{
			const cJSON *mode = cJSON_GetObjectItemCaseSensitive(c, "mode");
			fprintf(out, "  %10.3f s  %s %.4g\n", jnum(c, "t_s"),
				cJSON_IsString(mode) ? mode->valuestring : "?", jnum(c, "value"));
		}
	}
	server_text(out, s->server);
	if (s->request_log) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(s->request_log, "path");
		fprintf(out, "\nRequest log: %s, %.0f records, %.0f dropped\n", cJSON_IsString(p) ? p->valuestring : "-",
			jnum(s->request_log, "records"), jnum(s->request_log, "dropped"));
	}
	return 0;
}

/* ---- infertop compare ---- */

void result_text_pct(char *buf, size_t cap, double p)
{
	if (isnan(p))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%+.1f%%", p);
}

/* One line per option that differs, "PREFIXname: A -> B"; values as
 * compact JSON, long ones cut. The count of lines (0: none differ). */
static int diff_lines(char *buf, size_t cap, const cJSON *diff, const char *prefix);

int result_text_options_diff(char *buf, size_t cap, const struct result_compare *c, const char *prefix)
{
	return diff_lines(buf, cap, c->options_diff, prefix);
}

int result_text_metadata_diff(char *buf, size_t cap, const struct result_compare *c, const char *prefix)
{
	return diff_lines(buf, cap, c->metadata_diff, prefix);
}

static int diff_lines(char *buf, size_t cap, const cJSON *diff, const char *prefix)
{
	size_t n = 0;
	int lines = 0;
	buf[0] = '\0';
	const cJSON *e;
	cJSON_ArrayForEach(e, diff)
	{
		char *va = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "a"));
		char *vb = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "b"));
		int w = snprintf(buf + n, cap - n, "%s%s: %.60s -> %.60s\n", prefix, e->string, va ? va : "?",
				 vb ? vb : "?");
		free(va);
		free(vb);
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
		lines++;
	}
	return lines;
}

int result_text_compare(FILE *out, const struct result_compare *c)
{
	char pct[32], opts[4096];
	fprintf(out, "A: %s\nB: %s\n\n", c->file_a, c->file_b);
	if (result_text_options_diff(opts, sizeof opts, c, "  "))
		fprintf(out, "Options that differ (A -> B):\n%s\n", opts);
	else
		fprintf(out, "Options: the same\n\n");
	if (result_text_metadata_diff(opts, sizeof opts, c, "  "))
		fprintf(out, "Metadata that differ (A -> B):\n%s\n", opts);
	fprintf(out, "%-26s %-6s %14s %14s %14s %9s %-6s  %s\n", "", "unit", "A", "B", "B - A", "change", "", "key");
	for (int i = 0; i < c->n; i++) {
		const struct result_crow *r = &c->rows[i];
		result_text_pct(pct, sizeof pct, result_crow_delta_pct(r));
		int p = r->prec;
		fprintf(out, "%-26s %-6s %14.*f %14.*f %+14.*f %9s %-6s  %s\n", r->name, r->unit, p, r->a, p, r->b, p,
			r->b - r->a, pct, result_crow_verdict(r), r->key);
	}
	char verdict[1200];
	result_compare_verdict(c, verdict, sizeof verdict);
	fprintf(out, "\nVerdict: %s\n", verdict);
	return 0;
}
