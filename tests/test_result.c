/* The result layer without a live run: the key tables name every enum
 * value once and read it back; the plan's results, held as data, go
 * through the JSON writer and the reader unchanged and print the same
 * sections; an older file's pre-rendered plan text is shown only when it
 * has no plan data; every option of the option table is echoed in the
 * result's options block, but those left out on purpose; the client
 * metrics' table (client_metrics.def) matches the text and the file. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/cli.h"
#include "infertop/failif.h"
#include "infertop/hist.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/result.h"
#include "infertop/server.h"
#include "infertop/snapshot.h"

static void table_ok(const struct result_key *t, int n)
{
	int count = 0;
	for (const struct result_key *a = t; a->key; a++, count++) {
		assert_true(a->id >= 0 && a->id < n);
		assert_int_equal(result_key_id(t, a->key), a->id);
		assert_string_equal(result_key_name(t, a->id, NULL), a->key);
		for (const struct result_key *b = a + 1; b->key; b++) {
			assert_int_not_equal(a->id, b->id);
			assert_string_not_equal(a->key, b->key);
		}
	}
	assert_int_equal(count, n);
	assert_int_equal(result_key_id(t, "no such key"), -1);
	assert_null(result_key_name(t, n, NULL));
}

static void test_key_tables(void **state)
{
	(void)state;
	table_ok(result_keys_reason, SNAPSHOT_NREASONS);
	table_ok(result_keys_gauge, SRV_NGAUGES);
	table_ok(result_keys_latency, SRVL_N);
	table_ok(result_keys_plan_kind, PLAN_MATRIX + 1);
	table_ok(result_keys_load_mode, LOAD_OPEN + 1);
	assert_string_equal(snapshot_reason_name(SNAPSHOT_PERIODIC), "periodic");
}

/* A snapshot with empty histograms and the given plan data. */
static void make(struct snapshot *s)
{
	memset(s, 0, sizeof *s);
	s->schema = SNAPSHOT_SCHEMA;
	s->reason = SNAPSHOT_FINAL;
	s->nruns = 1;
	s->owns_hists = true;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = hist_new();
		s->win[m] = hist_new();
		assert_non_null(s->run[m]);
		assert_non_null(s->win[m]);
	}
	snprintf(s->status, sizeof s->status, "done");
	snprintf(s->token_source, sizeof s->token_source, "usage");
	s->duration = s->elapsed = 10;
	s->run_c.completed = 40;
	s->vllm_request_rate = INFINITY;
	s->vllm_max_concurrency = 8;
	s->burstiness = 1;
	s->max_output_tok_s = NAN;
}

static void metric(struct snapshot_metric *m, double base)
{
	*m = (struct snapshot_metric){40, base * 1.25, base, base * 2, base * 3.5};
}

static void stages_plan(struct snapshot *s)
{
	struct snapshot_plan *p = &s->plan;
	s->have_slo = true;
	snprintf(s->slo_desc, sizeof s->slo_desc, "ttft<=500ms e2e<=10.0s");
	s->slo_run = (struct slo_counts){.ended = 40, .met_all = 30, .met = {35, 0, 31}};
	p->present = true;
	p->kind = PLAN_STAGES;
	snprintf(p->arrival, sizeof p->arrival, "poisson");
	p->burstiness = 1;
	p->warmup_requests = 5;
	p->planned_steps = 2;
	snprintf(p->state, sizeof p->state, "done");
	snprintf(p->note, sizeof p->note, "a note");
	p->have_slo = true;
	p->slo_set[SLO_TTFT] = p->slo_set[SLO_E2E] = true;
	p->slo_limit_ms[SLO_TTFT] = 500;
	p->slo_limit_ms[SLO_E2E] = 10000;
	p->ntimeline = 3;
	p->timeline = calloc(p->ntimeline, sizeof *p->timeline);
	assert_non_null(p->timeline);
	p->timeline[0] = (struct snapshot_event){0, "start", -1, false, 2};
	p->timeline[1] = (struct snapshot_event){0.25, "step", 0, false, 2};
	p->timeline[2] = (struct snapshot_event){5.125, "step", 1, true, 20};
	p->nsteps = 2;
	p->steps = calloc(p->nsteps, sizeof *p->steps);
	assert_non_null(p->steps);
	struct snapshot_step *a = &p->steps[0], *b = &p->steps[1];
	*a = (struct snapshot_step){.index = 0, .target = 2, .target_end = 8, .duration_s = 5, .held_s = 1.5,
				    .completed = 20, .failed = 1, .incomplete = 3, .mean_input_tokens = 128,
				    .mean_output_tokens = 25.6, .max_concurrency = 8, .request_throughput = 4,
				    .output_throughput = 512, .mean_concurrency = 4.75, .request_goodput = 3.5};
	snprintf(a->label, sizeof a->label, "c=2..8");
	*b = (struct snapshot_step){.index = 1, .open_loop = true, .target = 20, .target_end = 20,
				    .duration_s = 4.875, .partial = true, .completed = 19, .unsent = 3,
				    .request_throughput = 3.9, .request_goodput = 2.25};
	snprintf(b->label, sizeof b->label, "r=20");
	snprintf(b->arrival, sizeof b->arrival, "gamma");
	for (int k = 0; k <= SLO_N; k++) {
		a->slo_share[k] = p->slo_set[k % SLO_N] || k == SLO_N ? 0.75 : 0;
		b->slo_share[k] = p->slo_set[k % SLO_N] || k == SLO_N ? 0.5 : 0;
	}
	metric(&a->ttft, 120);
	metric(&a->tpot, 12.5);
	metric(&a->itl, 12);
	metric(&a->e2e, 900);
	metric(&b->ttft, 130);
	metric(&b->e2e, 950);
	p->have_models = true;
	p->nmodels = 2;
	p->models = calloc(p->nmodels, sizeof *p->models);
	assert_non_null(p->models);
	for (size_t i = 0; i < p->nmodels; i++) {
		struct snapshot_model *m = &p->models[i];
		snprintf(m->name, sizeof m->name, "model-%zu", i);
		m->share = i ? 0.25 : 0.75;
		m->sent = m->completed = i ? 10 : 30;
		m->request_throughput = (double)m->completed / 10;
		m->request_goodput = m->request_throughput / 2;
		m->slo_share[SLO_N] = 0.5;
		metric(&m->ttft, 100 + 10 * (double)i);
	}
}

static char *to_text(const struct snapshot *s)
{
	char *t = snapshot_to_text(s);
	assert_non_null(t);
	return t;
}

static char *summary(const struct snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	snapshot_print_summary(f, s);
	fclose(f);
	return buf;
}

/* Written, read back, written again: the same document and the same
 * summary; the plan's sections come from the data. */
static void test_plan_round_trip(void **state)
{
	(void)state;
	struct snapshot a, b;
	make(&a);
	stages_plan(&a);
	char *t1 = to_text(&a);
	char err[256];
	if (snapshot_parse(&b, t1, strlen(t1), err, sizeof err) != 0)
		fail_msg("parse: %s", err);
	char *t2 = to_text(&b);
	assert_string_equal(t1, t2);
	assert_null(strstr(t1, "plan_summary_text"));
	assert_int_equal(b.plan.nsteps, 2);
	assert_int_equal(b.plan.ntimeline, 3);
	assert_int_equal(b.plan.nmodels, 2);
	assert_true(b.plan.steps[1].open_loop && b.plan.steps[1].partial);
	assert_string_equal(b.plan.steps[1].arrival, "gamma");
	assert_true(b.plan.steps[0].target_end == 8);
	assert_int_equal(b.plan.timeline[0].step, -1);

	char *s1 = summary(&a), *s2 = summary(&b);
	assert_string_equal(s1, s2);
	assert_non_null(strstr(s1, "- Goodput -"));
	assert_non_null(strstr(s1, "Requests meeting the ttft SLO (%):       87.50"));
	assert_null(strstr(s1, "Requests meeting the tpot SLO"));
	assert_non_null(strstr(s1, "| model-1 | 0.250 | 10 | 10 | 0 | 1.00 |"));
	assert_non_null(strstr(s1, "| 1 | c=2..8 (held) | 5.0 | 20 | 1 | 3 | 128/26 | 4.00 | 512.0 | 4.8 | 120.0 |"));
	assert_int_equal(b.plan.steps[0].incomplete, 3);
	assert_int_equal(b.plan.steps[0].max_concurrency, 8);
	assert_true(b.plan.steps[0].mean_output_tokens == 25.6);
	assert_non_null(strstr(s1, "| 2 | r=20 (partial) |"));
	assert_non_null(strstr(s1, "Plan: a note\n"));
	free(s1);
	free(s2);
	free(t1);
	free(t2);
	snapshot_release(&a);
	snapshot_release(&b);
}

static void test_matrix(void **state)
{
	(void)state;
	struct snapshot a, b;
	make(&a);
	struct snapshot_plan *p = &a.plan;
	p->present = true;
	p->kind = PLAN_MATRIX;
	snprintf(p->arrival, sizeof p->arrival, "poisson");
	p->nmatrix = 1;
	snprintf(p->matrix[0], sizeof p->matrix[0], "chatbot");
	p->nsteps = 1;
	p->steps = calloc(1, sizeof *p->steps);
	assert_non_null(p->steps);
	p->steps[0] = (struct snapshot_step){.target = 5, .target_end = 5, .completed = 7,
					     .scenario_input_tokens = 128, .scenario_output_tokens = 128};
	snprintf(p->steps[0].scenario, sizeof p->steps[0].scenario, "chatbot");
	char *t1 = to_text(&a);
	char err[256];
	if (snapshot_parse(&b, t1, strlen(t1), err, sizeof err) != 0)
		fail_msg("parse: %s", err);
	char *t2 = to_text(&b);
	assert_string_equal(t1, t2);
	assert_int_equal(b.plan.nmatrix, 1);
	char *s = summary(&b);
	assert_non_null(strstr(s, "- Scenario matrix -"));
	assert_non_null(strstr(s, "| chatbot | 128/128 | 5 | 7 |"));
	assert_null(strstr(s, "- Goodput -"));
	free(s);
	free(t1);
	free(t2);
	snapshot_release(&a);
	snapshot_release(&b);
}

/* A file of the previous version: its saved text is shown when it has no
 * plan data, never beside the data. */
static void test_old_plan_text(void **state)
{
	(void)state;
	struct snapshot a, b;
	make(&a);
	stages_plan(&a);
	cJSON *j = snapshot_to_json(&a);
	assert_non_null(j);
	cJSON *it = cJSON_GetObjectItemCaseSensitive(j, "infertop");
	cJSON_AddStringToObject(it, "plan_summary_text", "SAVED PLAN TEXT\n");
	char *t = cJSON_Print(j);
	char err[256];
	assert_int_equal(snapshot_parse(&b, t, strlen(t), err, sizeof err), 0);
	char *s = summary(&b);
	assert_null(strstr(s, "SAVED PLAN TEXT"));
	assert_non_null(strstr(s, "- Steps -"));
	free(s);
	snapshot_release(&b);
	free(t);

	static const char *const keys[] = {"plan", "steps", "matrix", "slo", "models"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		cJSON_DeleteItemFromObjectCaseSensitive(it, keys[i]);
	t = cJSON_Print(j);
	assert_int_equal(snapshot_parse(&b, t, strlen(t), err, sizeof err), 0);
	assert_false(b.plan.present);
	s = summary(&b);
	assert_non_null(strstr(s, "SAVED PLAN TEXT\n"));
	assert_null(strstr(s, "- Steps -"));
	free(s);
	snapshot_release(&b);
	free(t);
	cJSON_Delete(j);
	snapshot_release(&a);
}

/* client_metrics.def as the result's outputs need it. */
#define TEXT_ALL false
#define TEXT_RATE true
static const struct {
	const char *key, *abbr, *title, *definition;
	int text_pos;
	bool need_rate;
} cm[STAT_NMETRICS] = {
#define CLIENT_METRIC(id, key, dash, dash_when, text_pos, text_abbr, text_title, text_when, prom_pos, prom, \
		      buckets, prom_help, definition, ...)                                                  \
	[STAT_##id] = { key, text_abbr, text_title, definition, text_pos, TEXT_##text_when },
#include "infertop/client_metrics.def"
};

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* The end-of-run text with a request rate (rate) or without: the blocks
 * the table declares, in text_pos order, each under its title with its
 * label, and no other latency block. */
static void check_text_blocks(struct snapshot *s, bool rate)
{
	s->vllm_request_rate = rate ? 5 : INFINITY;
	char *t = summary(s);
	const char *prev = t;
	int want = 0;
	for (int pos = 1; pos <= STAT_NMETRICS; pos++) {
		int m = -1;
		for (int k = 0; k < STAT_NMETRICS; k++)
			if (cm[k].text_pos == pos)
				m = k;
		if (m < 0)
			break;
		char title[128], label[64];
		snprintf(title, sizeof title, " %s -", cm[m].title);
		snprintf(label, sizeof label, "\nMean %s (ms):", cm[m].abbr);
		const char *at = strstr(prev, title);
		if (cm[m].need_rate && !rate) {
			if (strstr(t, title))
				fail_msg("%s: its block is in the text of a run without a rate", cm[m].key);
			continue;
		}
		if (!at)
			fail_msg("%s: no block \"%s\" after the one at text_pos %d", cm[m].key, cm[m].title, pos - 1);
		const char *l = strstr(at, label);
		if (!l || l != strstr(at, "\nMean "))
			fail_msg("%s: its block's rows are not \"%s\"", cm[m].key, label + 1);
		prev = l;
		want++;
	}
	if (count_of(t, "\nMean ") != want)
		fail_msg("%d latency blocks in the text, the table declares %d", count_of(t, "\nMean "), want);
	free(t);
}

/* client_metrics.def is the one list of client metrics: each output has
 * every metric declared for it, in the order declared, and no other; the
 * positions of an output are 1..n, each once. */
static void test_client_metric_table(void **state)
{
	(void)state;
	int ntext = 0;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		assert_string_equal(stats_metric_name((enum stat_metric)m), cm[m].key);
		assert_true(cm[m].text_pos >= 0 && cm[m].text_pos <= STAT_NMETRICS);
		ntext += cm[m].text_pos > 0;
		for (int k = 0; k < m; k++) {
			assert_string_not_equal(cm[k].key, cm[m].key);
			if (cm[m].text_pos)
				assert_int_not_equal(cm[k].text_pos, cm[m].text_pos);
		}
	}
	for (int m = 0; m < STAT_NMETRICS; m++)
		assert_true(cm[m].text_pos <= ntext);

	struct snapshot a;
	make(&a);
	check_text_blocks(&a, true);
	check_text_blocks(&a, false);

	/* The result file: every metric, in the order of the enum, in the run
	 * and the window; each one's definition in "definitions". */
	cJSON *j = snapshot_to_json(&a);
	assert_non_null(j);
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, "infertop");
	const cJSON *objs[] = {cJSON_GetObjectItemCaseSensitive(it, "metrics"),
			       cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "window"),
								"metrics")};
	for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
		assert_non_null(objs[i]);
		int m = 0;
		for (const cJSON *c = objs[i]->child; c; c = c->next, m++) {
			assert_true(m < STAT_NMETRICS);
			assert_string_equal(c->string, cm[m].key);
		}
		assert_int_equal(m, STAT_NMETRICS);
	}
	const cJSON *defs = cJSON_GetObjectItemCaseSensitive(it, "definitions");
	assert_true(cJSON_IsString(defs));
	for (int m = 0; m < STAT_NMETRICS; m++)
		if (!strstr(defs->valuestring, cm[m].definition))
			fail_msg("%s: \"%s\" is not in the definitions", cm[m].key, cm[m].definition);
	cJSON_Delete(j);
	snapshot_release(&a);
}

/* --fail-if: the forms it takes, the messages it refuses with. */
static void test_failif(void **state)
{
	(void)state;
	struct failif f;
	char err[256];
	assert_int_equal(failif_parse("p99_ttft_ms>+10%,output_throughput<-5%", &f, err, sizeof err), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.c[0].key, "p99_ttft_ms");
	assert_int_equal(f.c[0].op, FAILIF_GT);
	assert_true(f.c[0].value == 10.0 && f.c[0].pct);
	assert_string_equal(f.c[1].key, "output_throughput");
	assert_int_equal(f.c[1].op, FAILIF_LT);
	assert_true(f.c[1].value == -5.0 && f.c[1].pct);
	assert_true(failif_holds(&f.c[0], 10.5));
	assert_false(failif_holds(&f.c[0], 10.0));
	assert_false(failif_holds(&f.c[0], NAN));
	assert_true(failif_holds(&f.c[1], -6));
	assert_false(failif_holds(&f.c[1], -4));

	assert_int_equal(failif_parse(" p99.9_e2el_ms >= 2.5 , failed<=0 ", &f, err, sizeof err), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.c[0].key, "p99.9_e2el_ms");
	assert_int_equal(f.c[0].op, FAILIF_GE);
	assert_false(f.c[0].pct);
	assert_true(failif_holds(&f.c[0], 2.5));
	assert_int_equal(f.c[1].op, FAILIF_LE);
	assert_string_equal(f.c[0].text, "p99.9_e2el_ms >= 2.5");

	static const struct {
		const char *in, *says;
	} bad[] = {
		{ "", "empty" },
		{ "p99_ttft_ms", "expected >, <" },
		{ "p99_ttft_ms>", "expected a number" },
		{ "p99_ttft_ms>x", "expected a number" },
		{ "p99_ttft_ms>10%%", "unexpected" },
		{ "p99_ttft_ms=10", "expected >, <" },
		{ ">10%", "metric name" },
		{ "a>1,,b>2", "empty" },
		{ "a>1,", "empty" },
		{ "a>inf", "expected a number" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_int_equal(failif_parse(bad[i].in, &f, err, sizeof err), -1);
		if (!strstr(err, bad[i].says))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].in, err, bad[i].says);
	}
	char many[512] = "";
	for (int i = 0; i <= FAILIF_MAX; i++)
		strcat(many, i ? ",a>1" : "a>1");
	assert_int_equal(failif_parse(many, &f, err, sizeof err), -1);
	assert_non_null(strstr(err, "more than"));
}

/* Options a result does not echo, each on purpose: the options block
 * (json_write.c's opt_rows) says how the run ran; these say how it was
 * started, watched or shown. An option added to cli.c's opts[] goes either
 * into the block or here, with its reason; test_options_block fails
 * otherwise. */
static const char *const options_not_in_results[] = {
	"help", "version",      /* actions: print and exit */
	"no-config",            /* where options came from; the block has their values */
	"listen", "listen-token-env", "listen-metrics-open", "listen-allow-host", /* the control API watching the run */
	"linger",               /* how long /metrics outlives the run */
	"id",                   /* the generator's name in /metrics and the fleet */
	"start-at",             /* when a fleet started the load: start_unix has it */
	"results-dir", "data-dir", /* infertop serve's */
	"targets", "targets-file", "discover", "token-env", "expect", "expect-timeout", /* infertop fleet's */
	"workers",              /* how the load was made: the merged result is one run */
	"upload", "upload-endpoint", "upload-region", /* where the files go afterwards */
	"from-vllm-args",       /* expanded into the options it maps to, which are written */
	"metadata", "metadata-json", /* the result's "metadata" object has them */
	"html",                 /* where a page of the result went: nothing of how the run ran */
	"max-change",           /* a guard on live changes; the changes themselves are in the timeline */
	/* Likewise the trace's (a key for them in every result would change
	 * every result's bytes); a traced run's result has a "trace" object
	 * of its own (infertop-snapshot(5)). */
	"trace", "trace-speed", "trace-window", "trace-block-tokens", "trace-skip-bad",
};

static bool left_out(const char *name)
{
	for (size_t i = 0; i < sizeof options_not_in_results / sizeof options_not_in_results[0]; i++)
		if (strcmp(options_not_in_results[i], name) == 0)
			return true;
	return false;
}

/* Written only when given (json_write.c's put_string_given): the block
 * of a run that gave them has them. */
static const char *const options_given_only[] = { "sessions", "session-answers", "dataset", "prefix-tokens",
						  "prefix-groups", "cacert", "metrics-discover",
						  "metrics-prometheus", "metrics-selector" };

static bool given_only(const char *name)
{
	for (size_t i = 0; i < sizeof options_given_only / sizeof options_given_only[0]; i++)
		if (strcmp(options_given_only[i], name) == 0)
			return true;
	return false;
}

static void test_options_given_only(void **state)
{
	(void)state;
	struct config cfg;
	char *argv[] = { "infertop", "--no-config", "--sessions", "turns=2,think=1s,user=8", "--session-answers",
			 "recorded", NULL };
	assert_int_equal(cli_parse(&cfg, 6, argv), CLI_RUN);
	cJSON *b2;
	{
		struct config c2;
		char *argv2[] = { "infertop", "--no-config", "--prefix-tokens", "64", NULL };
		assert_int_equal(cli_parse(&c2, 4, argv2), CLI_RUN);
		b2 = result_json_options(&c2, NULL);
		/* Numbers are written as raw text (json_write.c): read the text. */
		char *txt = cJSON_PrintUnformatted(b2);
		assert_non_null(strstr(txt, "\"prefix_tokens\":64"));
		free(txt);
		cJSON_Delete(b2);
		cli_free(&c2);
		char *argv3[] = { "infertop", "--no-config", "--prefix-groups", "2,2,20,5", NULL };
		assert_int_equal(cli_parse(&c2, 4, argv3), CLI_RUN);
		b2 = result_json_options(&c2, NULL);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b2, "prefix_groups")), "2,2,20,5");
		cJSON_Delete(b2);
		cli_free(&c2);
		/* The replicas' source, its credentials left out. */
		char *argv4[] = { "infertop", "--no-config", "--metrics-prometheus", "http://u:s3cret@prom:9090",
				  "--metrics-selector", "{job=\"vllm\"}", NULL };
		assert_int_equal(cli_parse(&c2, 6, argv4), CLI_RUN);
		b2 = result_json_options(&c2, NULL);
		txt = cJSON_PrintUnformatted(b2);
		assert_null(strstr(txt, "s3cret"));
		free(txt);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b2, "metrics_prometheus")),
				    "http://prom:9090");
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b2, "metrics_selector")),
				    "{job=\"vllm\"}");
		assert_null(cJSON_GetObjectItemCaseSensitive(b2, "metrics_discover"));
		cJSON_Delete(b2);
		cli_free(&c2);
	}
	cJSON *block = result_json_options(&cfg, NULL);
	assert_non_null(block);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "sessions")),
			    "turns=2,think=1s,user=8");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(block, "session_answers")),
			    "recorded");
	for (size_t i = 0; i < sizeof options_given_only / sizeof options_given_only[0]; i++)
		assert_non_null(result_option_key(options_given_only[i]));
	cJSON_Delete(block);
	cli_free(&cfg);
}

static void test_options_block(void **state)
{
	(void)state;
	struct config cfg;
	char *argv[] = { "infertop", "--no-config", NULL };
	assert_int_equal(cli_parse(&cfg, 2, argv), CLI_RUN);
	cJSON *block = result_json_options(&cfg, NULL);
	assert_non_null(block);
	struct cli_option_info o;
	int n = 0, echoed = 0;
	for (int i = 0; cli_option_info(i, &o) == 0; i++, n++) {
		const char *key = result_option_key(o.name);
		if (left_out(o.name)) {
			/* Written after all: it leaves the list. */
			if (key)
				fail_msg("--%s is in the options block as \"%s\" and in options_not_in_results", o.name,
					 key);
			continue;
		}
		if (!key)
			fail_msg("--%s is not in the result's options block (src/result/json_write.c, opt_rows) nor "
				 "in options_not_in_results",
				 o.name);
		if (!cJSON_GetObjectItemCaseSensitive(block, key) && !given_only(o.name))
			fail_msg("--%s: the options block has no \"%s\"", o.name, key);
		echoed++;
	}
	/* Every name of the list is an option: a renamed one fails here. */
	for (size_t i = 0; i < sizeof options_not_in_results / sizeof options_not_in_results[0]; i++) {
		const char *name = options_not_in_results[i];
		bool found = false;
		for (int j = 0; cli_option_info(j, &o) == 0; j++)
			found = found || strcmp(o.name, name) == 0;
		if (!found)
			fail_msg("options_not_in_results names --%s, which is no option", name);
	}
	assert_true(n > 50);
	assert_true(echoed > 40);
	assert_null(result_option_key("no-such-option"));
	cJSON_Delete(block);
	cli_free(&cfg);
}

/* `compare` calls noise noise: two runs of 4000 TTFTs drawn from the same
 * distribution (50 ms + an exponential of mean 30 ms; fixed seeds, so the
 * test is deterministic) differ on every row, yet each row is "same" and
 * the verdict says no significant difference; 50 % slower, they are
 * "worse" and the verdict names the change. A change that prints as
 * +0.0% is never "worse", whatever the row. */
static void fill_ttft(struct snapshot *s, uint64_t seed, double scale)
{
	uint64_t x = seed;
	for (int i = 0; i < 4000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
		hist_record(s->run[STAT_TTFT], (int64_t)llround((50000 - 30000 * log(u)) * scale));
	}
	s->run_c.completed = 4000;
}

static char *compare_text(const struct result_compare *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	result_text_compare(f, c);
	fclose(f);
	return buf;
}

static void test_compare_noise(void **state)
{
	(void)state;
	struct snapshot a, b, w;
	make(&a);
	make(&b);
	make(&w);
	fill_ttft(&a, 0x9e3779b97f4a7c15ULL, 1.0);
	fill_ttft(&b, 0x2545f4914f6cdd1dULL, 1.0);
	fill_ttft(&w, 0x2545f4914f6cdd1dULL, 1.5);
	struct result_compare c;
	result_compare_build(&c, &a, &b, "a.json", "b.json");
	const struct result_crow *r = result_compare_find(&c, "median_ttft_ms");
	assert_non_null(r);
	assert_true(r->b != r->a);   /* the samples differ... */
	assert_true(r->lo_a < r->a && r->a < r->hi_a && r->lo_b < r->b && r->b < r->hi_b);
	assert_string_equal(result_crow_verdict(r), "same");   /* ...inside the noise */
	for (int i = 0; i < c.n; i++)
		if (*result_crow_verdict(&c.rows[i]) && strcmp(result_crow_verdict(&c.rows[i]), "same") != 0)
			fail_msg("%s: %s (A %g [%g, %g], B %g [%g, %g])", c.rows[i].key, result_crow_verdict(&c.rows[i]),
				 c.rows[i].a, c.rows[i].lo_a, c.rows[i].hi_a, c.rows[i].b, c.rows[i].lo_b, c.rows[i].hi_b);
	char *t = compare_text(&c);
	assert_non_null(strstr(t, "\nVerdict: no significant difference"));
	free(t);
	result_compare_release(&c);

	result_compare_build(&c, &a, &w, "a.json", "w.json");
	r = result_compare_find(&c, "median_ttft_ms");
	assert_string_equal(result_crow_verdict(r), "worse");
	t = compare_text(&c);
	if (!strstr(t, "\nVerdict: B is worse: ttft "))
		fail_msg("no verdict naming TTFT:\n%s", t);
	assert_null(strstr(t, "+0.0%  worse"));
	assert_null(strstr(t, "-0.0%  better"));
	free(t);
	result_compare_release(&c);

	/* No interval known (NaN): a change under the practical floor (5 %,
	 * and 1 ms on a latency) is no change. */
	struct result_crow tiny = {.better = -1, .a = 1000, .b = 1000.1, .lo_a = NAN, .hi_a = NAN, .lo_b = NAN,
				   .hi_b = NAN};
	assert_string_equal(result_crow_verdict(&tiny), "same");
	tiny.b = 1040;
	assert_string_equal(result_crow_verdict(&tiny), "same");
	tiny.b = 1100;
	assert_string_equal(result_crow_verdict(&tiny), "worse");
	snprintf(tiny.unit, sizeof tiny.unit, "ms");
	tiny.a = 10;
	tiny.b = 10.9; /* +9 %, but 0.9 ms */
	assert_string_equal(result_crow_verdict(&tiny), "same");
	tiny.b = 11.5;
	assert_string_equal(result_crow_verdict(&tiny), "worse");
	/* compare --min-change: none, then 20 %, then back to the default. */
	assert_int_equal(result_compare_set_min_change("x"), -1);
	assert_int_equal(result_compare_set_min_change("5%,"), -1);
	assert_int_equal(result_compare_set_min_change("0"), 0);
	tiny.b = 10.1; /* +1 %, 0.1 ms */
	assert_string_equal(result_crow_verdict(&tiny), "worse");
	assert_int_equal(result_compare_set_min_change("20%"), 0);
	tiny.b = 11.5;
	assert_string_equal(result_crow_verdict(&tiny), "same");
	assert_int_equal(result_compare_set_min_change("5%,1ms"), 0);
	assert_string_equal(result_crow_verdict(&tiny), "worse");
	snapshot_release(&a);
	snapshot_release(&b);
	snapshot_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_tables),
		cmocka_unit_test(test_plan_round_trip),
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_old_plan_text),
		cmocka_unit_test(test_failif),
		cmocka_unit_test(test_options_block),
		cmocka_unit_test(test_options_given_only),
		cmocka_unit_test(test_client_metric_table),
		cmocka_unit_test(test_compare_noise),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
