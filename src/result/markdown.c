#include "config.h"

/* The Markdown renderer of the result layer: `infertop report --format
 * markdown` and `infertop compare --format markdown`. */

#include "infertop/result.h"
#include "infertop/snapshot.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>

#include "infertop/hist.h"

static void md_latency(FILE *out, struct hist *const *h)
{
	fprintf(out, "| metric (ms) | count |");
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, " %s |", result_mstat_heads[i]);
	fprintf(out, "\n|---|---:|");
	for (int i = 0; i < RESULT_NSTAT; i++)
		fprintf(out, "---:|");
	fputc('\n', out);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		struct result_mstat st;
		result_mstat_of(h[m], &st);
		fprintf(out, "| %s | %" PRIu64 " |", stats_metric_name((enum stat_metric)m), st.count);
		for (int i = 0; i < RESULT_NSTAT; i++)
			fprintf(out, " %.2f |", st.v[i]);
		fputc('\n', out);
	}
}

/* Markdown cells: a | would end the cell, a newline the table. */
static void md_cell(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
}

static void md_ms(FILE *out, const struct hist *h, double p)
{
	if (h)
		fprintf(out, " %.2f |", (double)hist_percentile(h, p) / 1000.0);
	else
		fprintf(out, " - |");
}

/* What the prefix cache and the sessions did, when the run has them. */
static void md_cache_sessions(FILE *out, const struct snapshot *s)
{
	if (snapshot_has_cache(s)) {
		const struct stats_counters *c = &s->run_c;
		double hr = stats_cache_hit_rate(c);
		fprintf(out, "\n## Prefix cache\n\n| | |\n|---|---:|\n");
		fprintf(out, "| Requests reporting cached tokens | %" PRIu64 " |\n", c->cache_known);
		fprintf(out, "| Requests not reporting them | %" PRIu64 " |\n", c->cache_unknown);
		fprintf(out, "| Prompt tokens (reporting requests) | %" PRIu64 " |\n", c->prompt_known);
		fprintf(out, "| Cached prompt tokens | %" PRIu64 " |\n", c->prompt_cached);
		if (isnan(hr))
			fprintf(out, "| Cache hit rate (%%) | - |\n");
		else
			fprintf(out, "| Cache hit rate (%%) | %.2f |\n", 100.0 * hr);
		const struct hist *w = snapshot_xhist(s, XH_TTFT_WARM), *k = snapshot_xhist(s, XH_TTFT_COLD);
		fprintf(out, "\n| TTFT (ms) | requests | p50 | p99 |\n|---|---:|---:|---:|\n");
		fprintf(out, "| mostly cached | %" PRIu64 " |", w ? hist_count(w) : 0);
		md_ms(out, w, 50);
		md_ms(out, w, 99);
		fprintf(out, "\n| cold | %" PRIu64 " |", k ? hist_count(k) : 0);
		md_ms(out, k, 50);
		md_ms(out, k, 99);
		fputc('\n', out);
	}
	if (!snapshot_has_sessions(s))
		return;
	fprintf(out, "\n## Sessions\n\n| | |\n|---|---:|\n");
	fprintf(out, "| Sessions ended | %" PRIu64 " |\n", s->sessions_done);
	fprintf(out, "| Sessions with a failed turn | %" PRIu64 " |\n", s->sessions_failed);
	fprintf(out, "| Sessions ended at the context limit | %" PRIu64 " |\n", s->sessions_context);
	fprintf(out, "| Sessions cut by the run's end | %" PRIu64 " |\n", s->sessions_incomplete);
	fprintf(out, "| Turns completed | %" PRIu64 " |\n", s->session_turns);
	const struct hist *t = snapshot_xhist(s, XH_SESSION_TURNS), *d = snapshot_xhist(s, XH_SESSION_DURATION),
			  *ctx = snapshot_xhist(s, XH_SESSION_CONTEXT);
	if (t)
		fprintf(out, "| Turns per session, mean / max | %.2f / %" PRId64 " |\n", hist_mean(t), hist_max(t));
	if (d)
		fprintf(out, "| Session duration (s), p50 / p99 | %.2f / %.2f |\n",
			(double)hist_percentile(d, 50) / 1e6, (double)hist_percentile(d, 99) / 1e6);
	if (ctx)
		fprintf(out, "| Context tokens at the last turn, mean / max | %.1f / %" PRId64 " |\n", hist_mean(ctx),
			hist_max(ctx));
	fprintf(out, "\n| turn | requests | TTFT p50 ms | TTFT p99 ms | E2E p50 ms | E2E p99 ms |\n"
		     "|---|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < STATS_TURNS; i++) {
		const struct hist *tt = snapshot_xhist(s, (enum stats_xhist)(XH_TURN_TTFT + i));
		const struct hist *te = snapshot_xhist(s, (enum stats_xhist)(XH_TURN_E2E + i));
		if (!tt && !te)
			continue;
		fprintf(out, "| %s | %" PRIu64 " |", stats_turn_label(i), tt ? hist_count(tt) : 0);
		md_ms(out, tt, 50);
		md_ms(out, tt, 99);
		md_ms(out, te, 50);
		md_ms(out, te, 99);
		fputc('\n', out);
	}
}

/* --metadata's tags, and the vLLM arguments the run ignored. */
static void md_metadata(FILE *out, const struct snapshot *s)
{
	char buf[1100];
	if (s->metadata && s->metadata->child) {
		fprintf(out, "## Metadata\n\n| key | value |\n|---|---|\n");
		for (const cJSON *it = s->metadata->child; it; it = it->next) {
			fprintf(out, "| ");
			md_cell(out, it->string);
			fprintf(out, " | ");
			md_cell(out, result_text_meta_value(it, buf, sizeof buf));
			fprintf(out, " |\n");
		}
		fputc('\n', out);
	}
	if (s->vllm_ignored && s->vllm_ignored->child) {
		fprintf(out, "## vLLM arguments ignored\n\n| argument | why |\n|---|---|\n");
		for (const cJSON *it = s->vllm_ignored->child; it; it = it->next) {
			fprintf(out, "| ");
			md_cell(out, it->string);
			fprintf(out, " | ");
			md_cell(out, result_text_meta_value(it, buf, sizeof buf));
			fprintf(out, " |\n");
		}
		fputc('\n', out);
	}
}

int result_md_report(FILE *out, const char *file, const struct snapshot *s)
{
	char start[40], load[96];
	result_text_utc(start, sizeof start, s->start_unix);
	result_text_load(load, sizeof load, s);
	fprintf(out, "# infertop report: ");
	md_cell(out, file);
	fprintf(out, "\n\n| | |\n|---|---|\n| started | %s |\n| host | ", start);
	md_cell(out, result_text_or_dash(s->host));
	fprintf(out, " |\n| target | ");
	md_cell(out, result_text_or_dash(s->target_url));
	fprintf(out, " |\n| model | ");
	md_cell(out, result_text_or_dash(s->model));
	fprintf(out, " |\n| server | ");
	md_cell(out, result_text_or_dash(s->server_detected));
	fprintf(out, " |\n| load | %s |\n| stopped | ", load);
	md_cell(out, result_text_or_dash(s->stop_reason));
	fprintf(out, " |\n| runs merged | %u |\n\n", s->nruns);
	md_metadata(out, s);
	fprintf(out, "## Summary\n\n| | |\n|---|---:|\n");
	fprintf(out, "| Successful requests | %" PRIu64 " |\n", s->run_c.completed);
	fprintf(out, "| Failed requests | %" PRIu64 " |\n", snapshot_failed(s));
	if (s->run_c.incomplete)
		fprintf(out, "| Incomplete requests | %" PRIu64 " |\n", s->run_c.incomplete);
	fprintf(out, "| Benchmark duration (s) | %.2f |\n", s->duration);
	fprintf(out, "| Total input tokens | %" PRIu64 " |\n", s->run_c.input_tokens);
	fprintf(out, "| Total generated tokens | %" PRIu64 " |\n", s->run_c.output_tokens);
	fprintf(out, "| Request throughput (req/s) | %.2f |\n", snapshot_rate(s->run_c.completed, s->duration));
	fprintf(out, "| Output token throughput (tok/s) | %.2f |\n",
		snapshot_rate(s->run_c.output_tokens, s->duration));
	fprintf(out, "| Total Token throughput (tok/s) | %.2f |\n",
		snapshot_rate(s->run_c.output_tokens + s->run_c.input_tokens, s->duration));
	fprintf(out, "\n## Latency, whole run\n\n");
	md_latency(out, s->run);
	fprintf(out, "\n## Latency, sliding window (last %.1f s)\n\n", s->win_seconds);
	md_latency(out, s->win);
	md_cache_sessions(out, s);
	if (snapshot_failed(s)) {
		fprintf(out, "\n## Errors\n\n| kind | count | last message |\n|---|---:|---|\n");
		for (int k = 0; k < ERR_NKINDS; k++) {
			if (!s->errors[k])
				continue;
			fprintf(out, "| %s | %" PRIu64 " | ", stats_err_name((enum err_kind)k), s->errors[k]);
			md_cell(out, s->last_msg[k]);
			fprintf(out, " |\n");
		}
	}
	return 0;
}

int result_md_compare(FILE *out, const struct result_compare *c)
{
	char pct[32];
	char opts[4096];
	if (result_text_options_diff(opts, sizeof opts, c, "- ")) {
		fprintf(out, "Options that differ (A -> B):\n\n%s\n", opts);
	}
	if (result_text_metadata_diff(opts, sizeof opts, c, "- "))
		fprintf(out, "Metadata that differ (A -> B):\n\n%s\n", opts);
	fprintf(out, "| | unit | A | B | B - A | change | | key |\n|---|---|---:|---:|---:|---:|---|---|\n");
	for (int i = 0; i < c->n; i++) {
		const struct result_crow *r = &c->rows[i];
		result_text_pct(pct, sizeof pct, result_crow_delta_pct(r));
		int p = r->prec;
		fprintf(out, "| %s | %s | %.*f | %.*f | %+.*f | %s | %s | `%s` |\n", r->name, r->unit, p, r->a, p, r->b,
			p, r->b - r->a, pct, result_crow_verdict(r), r->key);
	}
	char verdict[1200];
	result_compare_verdict(c, verdict, sizeof verdict);
	fprintf(out, "\n**Verdict:** %s\n", verdict);
	fprintf(out, "\nA: `%s`, B: `%s`\n", c->file_a, c->file_b);
	return 0;
}
