#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/prom.h"
#include "infertop/server.h"

/* ---- helpers ---- */

static void check_dbl_at(double got, double want, double rel, const char *what, int line)
{
	bool ok;

	if (isnan(want))
		ok = isnan(got);
	else if (isinf(want))
		ok = got == want;
	else
		ok = fabs(got - want) <= rel * fmax(1.0, fabs(want));
	if (!ok) {
		print_error("line %d: %s = %.17g, want %.17g\n", line, what, got, want);
		fail();
	}
}
#define check_dbl(got, want) check_dbl_at((got), (want), 1e-12, #got, __LINE__)

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0) {
		fclose(f);
		return NULL;
	}
	rewind(f);
	buf = malloc((size_t)size + 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[size] = '\0';
	*len = (size_t)size;
	return buf;
}

/* rel is relative to tests/fixtures. */
static char *load(const char *rel, size_t *len)
{
	char path[4096];
	const char *dir = getenv("INFERTOP_FIXTURES");
	const char *src = getenv("INFERTOP_SRCDIR");
	char *buf = NULL;

	if (dir) {
		snprintf(path, sizeof path, "%s/%s", dir, rel);
		buf = read_file(path, len);
	}
	if (!buf && src) {
		snprintf(path, sizeof path, "%s/tests/fixtures/%s", src, rel);
		buf = read_file(path, len);
	}
	if (!buf) {
		snprintf(path, sizeof path, "tests/fixtures/%s", rel);
		buf = read_file(path, len);
	}
	if (!buf) {
		print_error("cannot read fixture %s (set INFERTOP_FIXTURES)\n", rel);
		fail();
	}
	return buf;
}

/* Counts sample lines the dumb way, as an independent check on the parser:
 * a line is a sample when its first non-blank byte is not '#'. */
static int count_sample_lines(const char *t, size_t len)
{
	int n = 0;
	size_t i = 0;

	while (i < len) {
		size_t j = i;
		while (j < len && (t[j] == ' ' || t[j] == '\t'))
			j++;
		if (j + 5 <= len && memcmp(t + j, "# EOF", 5) == 0)
			break;
		if (j < len && t[j] != '#' && t[j] != '\n' && t[j] != '\r')
			n++;
		while (i < len && t[i] != '\n')
			i++;
		i++;
	}
	return n;
}

/* Every sample of a parse, copied out of the callback. */
struct got {
	struct prom_sample s;
	struct prom_label labels[PROM_MAX_LABELS];
};

struct all {
	struct got *v;
	size_t n, cap;
};

static int collect_cb(void *ud, const struct prom_sample *s)
{
	struct all *a = ud;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct got *nv = realloc(a->v, cap * sizeof *nv);
		assert_non_null(nv);
		a->v = nv;
		a->cap = cap;
	}
	a->v[a->n].s = *s;
	memcpy(a->v[a->n].labels, s->labels, s->nlabels * sizeof s->labels[0]);
	a->n++;
	return 0;
}

static int parse_all(const char *t, size_t len, unsigned flags, struct all *a, struct prom_error *err)
{
	int rc;

	memset(a, 0, sizeof *a);
	rc = prom_parse(t, len, flags, collect_cb, a, err);
	/* realloc moved the copies: point each at its own labels again. */
	for (size_t i = 0; i < a->n; i++)
		a->v[i].s.labels = a->v[i].labels;
	return rc;
}

static const struct prom_sample *find(const struct all *a, const char *name, int nth)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].s.name_len == nl && memcmp(a->v[i].s.name, name, nl) == 0 && nth-- == 0)
			return &a->v[i].s;
	print_error("sample %s not found\n", name);
	fail();
	return NULL;
}

static bool name_is(const char *p, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(p, want, n) == 0;
}

static void check_label(const struct prom_sample *s, const char *name, const char *want)
{
	const struct prom_label *l = prom_sample_label(s, name);
	char buf[256];

	assert_non_null(l);
	prom_label_unescape(l->value, l->value_len, buf, sizeof buf);
	assert_string_equal(buf, want);
	assert_true(prom_label_value_eq(l, want));
}

/* prom_sum that also checks how many series matched. */
static double sum_n(const char *t, size_t len, const char *name, const char *m, int want_n)
{
	double v = -12345;
	int n = prom_sum(t, len, name, m, &v);

	if (n != want_n) {
		print_error("prom_sum(%s, %s) matched %d series, want %d\n", name, m ? m : "NULL", n, want_n);
		fail();
	}
	return v;
}

static int strict(const char *t, size_t len, unsigned flags)
{
	struct prom_error err;
	int n = prom_parse(t, len, flags, NULL, NULL, &err);

	if (n < 0) {
		print_error("strict parse failed at line %u: %s\n", err.line, err.msg);
		fail();
	}
	assert_int_equal(err.nbad, 0);
	return n;
}

/* ---- every fixture parses strictly ---- */

static void test_fixtures_parse(void **state)
{
	/* Sample counts as `grep -cvE '^\s*(#|$)'` gives them. */
	static const struct {
		const char *file;
		int samples;
	} files[] = {
		{ "prom/vllm.txt", 571 },	{ "prom/vllm_old.txt", 141 },	  { "prom/sglang.txt", 166 },
		{ "prom/sglang_underscore.txt", 70 }, { "prom/tgi.txt", 485 },	  { "prom/trtllm.txt", 125 },
		{ "prom/triton.txt", 94 },	{ "prom/nim.txt", 119 },	  { "prom/lmdeploy.txt", 189 },
		{ "prom/dcgm.txt", 42 },	{ "prom/openmetrics.txt", 32 },	  { "prom/edge.txt", 49 },
		{ "llamacpp/metrics_idle.txt", 15 }, { "llamacpp/metrics_during.txt", 15 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		size_t len;
		char *t = load(files[i].file, &len);
		unsigned flags = strstr(files[i].file, "openmetrics") ? PROM_OPENMETRICS : 0;
		int n = strict(t, len, flags);
		struct prom_error err;

		if (n != files[i].samples || n != count_sample_lines(t, len)) {
			print_error("%s: %d samples, want %d (%d sample lines)\n", files[i].file, n, files[i].samples,
				    count_sample_lines(t, len));
			fail();
		}
		/* Lenient mode agrees on clean input. */
		assert_int_equal(prom_parse(t, len, flags | PROM_LENIENT, NULL, NULL, &err), n);
		assert_int_equal(err.nbad, 0);
		free(t);
	}
}

static void test_llamacpp(void **state)
{
	size_t li, ld;
	char *idle = load("llamacpp/metrics_idle.txt", &li);
	char *during = load("llamacpp/metrics_during.txt", &ld);
	struct all a;

	(void)state;
	assert_int_equal(strict(idle, li, 0), 15);
	assert_int_equal(strict(during, ld, 0), 15);
	check_dbl(sum_n(during, ld, "llamacpp:requests_processing", NULL, 1), 8);
	/* Present with value 0 is not absent. */
	check_dbl(sum_n(idle, li, "llamacpp:requests_processing", NULL, 1), 0);
	check_dbl(sum_n(during, ld, "llamacpp:requests_deferred", NULL, 1), 0);
	check_dbl(sum_n(during, ld, "llamacpp:n_busy_slots_per_decode", NULL, 1), 5.0712);
	check_dbl(sum_n(during, ld, "llamacpp:prompt_seconds_total", NULL, 1), 0.032441);
	check_dbl(sum_n(idle, li, "llamacpp:prompt_tokens_total", NULL, 1), 56);
	sum_n(idle, li, "llamacpp:kv_cache_usage_ratio", NULL, 0);

	assert_int_equal(parse_all(during, ld, 0, &a, NULL), 15);
	{
		const struct prom_sample *s = find(&a, "llamacpp:prompt_tokens_total", 0);
		assert_int_equal(s->type, PROM_COUNTER);
		assert_true(name_is(s->family, s->family_len, "llamacpp:prompt_tokens_total"));
		assert_int_equal(s->nlabels, 0);
		assert_int_equal(s->line, 3);
		s = find(&a, "llamacpp:requests_processing", 0);
		assert_int_equal(s->type, PROM_GAUGE);
		assert_false(s->has_timestamp);
	}
	free(a.v);
	free(idle);
	free(during);
}

/* ---- per-server fixtures ---- */

static void test_vllm(void **state)
{
	size_t len;
	char *t = load("prom/vllm.txt", &len);
	struct all a;
	const struct prom_sample *s;

	(void)state;
	check_dbl(sum_n(t, len, "vllm:num_requests_running", NULL, 2), 5);
	/* Exact names: waiting_by_reason must not leak into waiting. */
	check_dbl(sum_n(t, len, "vllm:num_requests_waiting", NULL, 2), 5);
	check_dbl(sum_n(t, len, "vllm:num_requests_waiting_by_reason", NULL, 4), 5);
	check_dbl(sum_n(t, len, "vllm:num_requests_waiting_by_reason", "reason=capacity", 2), 4);
	check_dbl(sum_n(t, len, "vllm:num_requests_waiting_by_reason", "engine=0, reason=deferred", 1), 1);
	sum_n(t, len, "vllm:num_requests", NULL, 0);
	sum_n(t, len, "vllm:num_requests_waitin", NULL, 0);
	check_dbl(sum_n(t, len, "vllm:kv_cache_usage_perc", "engine=1", 1), 0.1234);
	check_dbl(sum_n(t, len, "vllm:kv_cache_usage_perc", "engine=0,model_name=\"meta-llama/Llama-3.1-8B-Instruct\"", 1), 0.4321);
	sum_n(t, len, "vllm:kv_cache_usage_perc", "model_name=other", 0);
	sum_n(t, len, "vllm:gpu_cache_usage_perc", NULL, 0);
	check_dbl(sum_n(t, len, "vllm:prompt_tokens_total", "engine=0", 1), 152340);
	check_dbl(sum_n(t, len, "vllm:generation_tokens_total", NULL, 2), 88012 + 85990);
	check_dbl(sum_n(t, len, "vllm:num_preemptions_total", NULL, 2), 9);
	check_dbl(sum_n(t, len, "vllm:prefix_cache_hits_total", NULL, 2), 242456);
	check_dbl(sum_n(t, len, "vllm:request_success_total", "finished_reason=stop", 2), 130);
	/* An empty label value matches "k=", and so does an absent label. */
	check_dbl(sum_n(t, len, "vllm:lora_requests_info", "running_lora_adapters=,max_lora=0", 1), 1753011187.4401);
	sum_n(t, len, "vllm:lora_requests_info", "running_lora_adapters=x", 0);
	check_dbl(sum_n(t, len, "vllm:num_requests_running", "no_such_label=", 2), 5);
	check_dbl(sum_n(t, len, "process_virtual_memory_bytes", NULL, 1), 43128438784.0);
	check_dbl(sum_n(t, len, "process_max_fds", NULL, 1), 1048576);

	assert_int_equal(parse_all(t, len, 0, &a, NULL), 571);
	/* The type comes from # TYPE, not from the _total in the name. */
	s = find(&a, "vllm:iteration_tokens_total_bucket", 0);
	assert_int_equal(s->type, PROM_HISTOGRAM);
	assert_true(name_is(s->family, s->family_len, "vllm:iteration_tokens_total"));
	s = find(&a, "vllm:iteration_tokens_total_sum", 1);
	assert_int_equal(s->type, PROM_HISTOGRAM);
	check_label(s, "engine", "1");
	s = find(&a, "vllm:prompt_tokens_total", 0);
	assert_int_equal(s->type, PROM_COUNTER);
	assert_true(name_is(s->family, s->family_len, "vllm:prompt_tokens_total"));
	s = find(&a, "http_request_size_bytes_count", 0);
	assert_int_equal(s->type, PROM_SUMMARY);
	assert_true(name_is(s->family, s->family_len, "http_request_size_bytes"));
	s = find(&a, "vllm:cache_config_info", 1);
	assert_int_equal(s->type, PROM_GAUGE);
	assert_int_equal(s->nlabels, 15);
	check_label(s, "num_gpu_blocks", "27042");
	check_label(s, "engine", "1");
	check_label(s, "sliding_window", "None");
	assert_null(prom_sample_label(s, "model_name"));
	s = find(&a, "vllm:time_to_first_token_seconds_bucket", 7);
	check_label(s, "le", "0.1");
	check_dbl(s->value, 52);
	free(a.v);
	free(t);
}

static void test_vllm_histogram(void **state)
{
	size_t len;
	char *t = load("prom/vllm.txt", &len);
	struct prom_hist h;

	(void)state;
	assert_int_equal(prom_hist_collect(t, len, "vllm:time_to_first_token_seconds", NULL, &h), 0);
	assert_int_equal(h.n, 23);
	check_dbl(h.le[0], 0.001);
	check_dbl(h.le[7], 0.1);
	check_dbl(h.cum[7], 52 + 40);
	check_dbl(h.cum[6], 40 + 30);
	assert_true(isinf(h.le[22]) && h.le[22] > 0);
	check_dbl(h.cum[22], 160);
	check_dbl(h.count, 160);
	check_dbl(h.sum, 14.52 + 12.75);
	/* rank 80 falls in (0.08, 0.1] holding 70..92 */
	check_dbl(prom_hist_quantile(&h, 0.5), 0.08 + 0.02 * 10.0 / 22.0);
	/* rank 158.4 falls in (1, 2.5] holding 156..160 */
	check_dbl(prom_hist_quantile(&h, 0.99), 1.0 + 1.5 * 2.4 / 4.0);
	check_dbl(prom_hist_quantile(&h, 1.0), 2.5);

	assert_int_equal(prom_hist_collect(t, len, "vllm:time_to_first_token_seconds", "engine=1", &h), 0);
	check_dbl(h.count, 70);
	check_dbl(h.cum[7], 40);
	/* rank 35 in (0.08, 0.1] holding 30..40 */
	check_dbl(prom_hist_quantile(&h, 0.5), 0.08 + 0.02 * 5.0 / 10.0);

	assert_int_equal(prom_hist_collect(t, len, "vllm:iteration_tokens_total", NULL, &h), 0);
	assert_int_equal(h.n, 14);
	check_dbl(h.le[12], 16384);
	assert_int_equal(prom_hist_collect(t, len, "vllm:time_to_first_token", NULL, &h), -1);
	assert_int_equal(h.n, 0);
	assert_int_equal(prom_hist_collect(t, len, "vllm:num_requests_running", NULL, &h), -1);
	free(t);
}

static void test_vllm_old(void **state)
{
	size_t len;
	char *t = load("prom/vllm_old.txt", &len);
	struct prom_hist h;
	struct all a;
	const struct prom_sample *s;

	(void)state;
	check_dbl(sum_n(t, len, "vllm:num_requests_running", NULL, 1), 7);
	check_dbl(sum_n(t, len, "vllm:num_requests_waiting", NULL, 1), 12);
	check_dbl(sum_n(t, len, "vllm:gpu_cache_usage_perc", NULL, 1), 0.9731);
	check_dbl(sum_n(t, len, "vllm:gpu_prefix_cache_hit_rate", NULL, 1), -1);
	sum_n(t, len, "vllm:kv_cache_usage_perc", NULL, 0);
	check_dbl(sum_n(t, len, "vllm:prompt_tokens_total", NULL, 1), 982133);
	assert_int_equal(prom_hist_collect(t, len, "vllm:time_per_output_token_seconds", NULL, &h), 0);
	assert_int_equal(h.n, 14);
	check_dbl(h.count, 5900);
	check_dbl(h.sum, 203.4567);
	/* rank 2950 in (0.025, 0.05] holding 120..3400 */
	check_dbl(prom_hist_quantile(&h, 0.5), 0.025 + 0.025 * (2950.0 - 120) / (3400 - 120));

	assert_int_equal(parse_all(t, len, 0, &a, NULL), 141);
	/* prometheus_client's separate _created gauge family. */
	s = find(&a, "vllm:prompt_tokens_created", 0);
	assert_int_equal(s->type, PROM_GAUGE);
	assert_true(name_is(s->family, s->family_len, "vllm:prompt_tokens_created"));
	assert_true(s->value > 1.7e9);
	s = find(&a, "vllm:time_per_output_token_seconds_created", 0);
	assert_int_equal(s->type, PROM_GAUGE);
	free(a.v);
	free(t);
}

static void test_sglang(void **state)
{
	size_t len;
	char *t = load("prom/sglang.txt", &len);
	struct prom_hist h;

	(void)state;
	/* Gauges repeat on every tp rank: naive sum double counts. */
	check_dbl(sum_n(t, len, "sglang:num_running_reqs", NULL, 4), 42);
	check_dbl(sum_n(t, len, "sglang:num_running_reqs", "tp_rank=0", 2), 21);
	check_dbl(sum_n(t, len, "sglang:num_running_reqs", "dp_rank=1,tp_rank=0", 1), 9);
	check_dbl(sum_n(t, len, "sglang:num_queue_reqs", "tp_rank=0", 2), 8);
	check_dbl(sum_n(t, len, "sglang:token_usage", "dp_rank=0,tp_rank=0", 1), 0.61);
	check_dbl(sum_n(t, len, "sglang:cache_hit_rate", "dp_rank=1,tp_rank=1", 1), 0.35);
	check_dbl(sum_n(t, len, "sglang:num_retracted_requests_total", "tp_rank=0", 2), 5);
	check_dbl(sum_n(t, len, "sglang:prompt_tokens_total", NULL, 1), 3012448);
	sum_n(t, len, "sglang_num_running_reqs", NULL, 0);

	assert_int_equal(prom_hist_collect(t, len, "sglang:time_to_first_token_seconds", NULL, &h), 0);
	assert_int_equal(h.n, 19);
	check_dbl(h.count, 4410);
	check_dbl(h.le[5], 1);
	/* A first bound of 0: a quantile landing there is 0, as in PromQL. */
	assert_int_equal(prom_hist_collect(t, len, "sglang:queue_time_seconds", "tp_rank=0", &h), 0);
	check_dbl(h.le[0], 0);
	check_dbl(h.count, 4400);
	assert_true(prom_hist_quantile(&h, 0.5) > 0 && prom_hist_quantile(&h, 0.5) < 20);
	free(t);
}

static void test_sglang_underscore(void **state)
{
	size_t len;
	char *t = load("prom/sglang_underscore.txt", &len);
	struct prom_hist h;

	(void)state;
	check_dbl(sum_n(t, len, "sglang_num_running_reqs", NULL, 1), 4);
	check_dbl(sum_n(t, len, "sglang_num_queue_reqs", NULL, 1), 2);
	check_dbl(sum_n(t, len, "sglang_token_usage", "name=meta-llama/Meta-Llama-3.1-8B-Instruct", 1), 0.18);
	sum_n(t, len, "sglang:num_running_reqs", NULL, 0);
	assert_int_equal(prom_hist_collect(t, len, "sglang_e2e_request_latency_seconds", NULL, &h), 0);
	check_dbl(h.count, 300);
	free(t);
}

static void test_tgi(void **state)
{
	size_t len;
	char *t = load("prom/tgi.txt", &len);
	struct prom_hist h;
	struct all a;
	const struct prom_sample *s;

	(void)state;
	check_dbl(sum_n(t, len, "tgi_batch_current_size", NULL, 1), 6);
	check_dbl(sum_n(t, len, "tgi_queue_size", NULL, 1), 2);
	check_dbl(sum_n(t, len, "tgi_request_failure", NULL, 2), 34);
	check_dbl(sum_n(t, len, "tgi_request_failure", "err=validation", 1), 30);
	check_dbl(sum_n(t, len, "tgi_batch_forward_duration_count", "method=decode", 1), 58012);
	assert_int_equal(prom_hist_collect(t, len, "tgi_request_duration", NULL, &h), 0);
	assert_int_equal(h.n, 36);
	/* 0.0001 * 1.5 as Rust prints it: more than 19 digits, the slow path. */
	check_dbl_at(h.le[0], strtod("0.00015000000000000001", NULL), 0, "le[0]", __LINE__);
	assert_true(h.le[0] != 0.00015);
	check_dbl(h.count, 1200);
	assert_int_equal(prom_hist_collect(t, len, "tgi_batch_forward_duration", "method=prefill", &h), 0);
	check_dbl(h.count, 1190);
	/* 100 bounds do not fit in a struct prom_hist. */
	assert_int_equal(prom_hist_collect(t, len, "tgi_request_input_length", NULL, &h), -1);

	assert_int_equal(parse_all(t, len, 0, &a, NULL), 485);
	s = find(&a, "tgi_request_duration_bucket", 0);
	assert_int_equal(s->type, PROM_HISTOGRAM);
	assert_true(name_is(s->family, s->family_len, "tgi_request_duration"));
	s = find(&a, "tgi_request_count", 0);
	assert_int_equal(s->type, PROM_COUNTER);
	free(a.v);
	free(t);
}

static void test_trtllm(void **state)
{
	size_t len;
	char *t = load("prom/trtllm.txt", &len);
	struct prom_hist h;

	(void)state;
	check_dbl(sum_n(t, len, "trtllm_num_requests_running", NULL, 1), 16);
	check_dbl(sum_n(t, len, "trtllm_num_requests_waiting", NULL, 1), 4);
	check_dbl(sum_n(t, len, "trtllm_kv_cache_utilization", "engine_type=trtllm", 1), 0.57);
	check_dbl(sum_n(t, len, "trtllm_request_success_total", NULL, 2), 609);
	assert_int_equal(prom_hist_collect(t, len, "trtllm_time_to_first_token_seconds", NULL, &h), 0);
	check_dbl(h.count, 609);
	check_dbl(h.cum[h.n - 1], 609);
	free(t);
}

static void test_triton(void **state)
{
	size_t len;
	char *t = load("prom/triton.txt", &len);
	struct prom_hist h;
	double used, max;

	(void)state;
	check_dbl(sum_n(t, len, "nv_trt_llm_request_metrics", "request_type=active", 1), 6);
	check_dbl(sum_n(t, len, "nv_trt_llm_request_metrics", "request_type=waiting", 1), 3);
	check_dbl(sum_n(t, len, "nv_inference_pending_request_count", "model=ensemble", 1), 3);
	check_dbl(sum_n(t, len, "nv_inference_pending_request_count", NULL, 4), 6);
	check_dbl(sum_n(t, len, "nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type=fraction", 1), 0.4375);
	used = sum_n(t, len, "nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type=used", 1);
	max = sum_n(t, len, "nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type=max", 1);
	check_dbl(used / max, 0.4375);
	check_dbl(sum_n(t, len, "nv_trt_llm_general_metrics", "general_type=timestamp", 1), 1760000123456789.0);
	assert_int_equal(prom_hist_collect(t, len, "nv_inference_first_response_histogram_ms", "model=ensemble", &h), 0);
	assert_int_equal(h.n, 5);
	/* rank 320 in (100, 500] ms holding 40..520 */
	check_dbl(prom_hist_quantile(&h, 0.5), 100 + 400 * (320.0 - 40) / 480);
	assert_int_equal(prom_hist_collect(t, len, "nv_inference_first_response_histogram_ms", NULL, &h), 0);
	check_dbl(h.cum[0], 84);
	check_dbl(h.count, 1280);
	free(t);
}

static void test_nim_lmdeploy_dcgm(void **state)
{
	size_t len;
	char *t = load("prom/nim.txt", &len);
	struct prom_hist h;

	(void)state;
	check_dbl(sum_n(t, len, "num_requests_running", NULL, 1), 4);
	check_dbl(sum_n(t, len, "num_requests_waiting", NULL, 1), 2);
	check_dbl(sum_n(t, len, "gpu_cache_usage_perc", "model_name=meta/llama-3.1-8b-instruct", 1), 0.27);
	sum_n(t, len, "vllm:num_requests_running", NULL, 0);
	assert_int_equal(prom_hist_collect(t, len, "time_to_first_token_seconds", NULL, &h), 0);
	check_dbl(h.count, 1880);
	free(t);

	t = load("prom/lmdeploy.txt", &len);
	check_dbl(sum_n(t, len, "lmdeploy:num_requests_running", NULL, 1), 8);
	check_dbl(sum_n(t, len, "lmdeploy:num_requests_waiting", NULL, 1), 3);
	check_dbl(sum_n(t, len, "lmdeploy:gpu_cache_usage_perc", NULL, 1), 0.66);
	assert_int_equal(prom_hist_collect(t, len, "lmdeploy:iter_token_latency", NULL, &h), 0);
	check_dbl(h.count, 640);
	free(t);

	t = load("prom/dcgm.txt", &len);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_GPU_UTIL", "gpu=1", 1), 91);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_GPU_UTIL", NULL, 2), 178);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_FB_USED", NULL, 2), 71234 + 70922);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_POWER_USAGE", "gpu=0", 1), 512.345);
	check_dbl(sum_n(t, len, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "UUID=GPU-9e8d7c6b-5a4f-3e2d-1c0b-a9f8e7d6c5b4", 1), 0.934567);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_XID_ERRORS", "err_msg=No Error", 2), 0);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_GPU_TEMP", "modelName=\"NVIDIA H100 80GB HBM3\",gpu=1", 1), 64);
	check_dbl(sum_n(t, len, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gpu=0", 1), 912345678901.0);
	free(t);
}

/* ---- OpenMetrics ---- */

static void test_openmetrics(void **state)
{
	size_t len;
	char *t = load("prom/openmetrics.txt", &len);
	struct all a;
	const struct prom_sample *s;
	struct prom_hist h;

	(void)state;
	assert_int_equal(parse_all(t, len, PROM_OPENMETRICS, &a, NULL), count_sample_lines(t, len));
	s = find(&a, "vllm:prompt_tokens_total", 0);
	assert_int_equal(s->type, PROM_COUNTER);
	assert_true(name_is(s->family, s->family_len, "vllm:prompt_tokens"));
	check_dbl(s->value, 152340);
	s = find(&a, "vllm:prompt_tokens_created", 0);
	assert_int_equal(s->type, PROM_COUNTER);
	assert_true(name_is(s->family, s->family_len, "vllm:prompt_tokens"));
	check_dbl(s->value, 1753011123.8);
	/* The exemplar is skipped: its labels and value are not the sample's. */
	s = find(&a, "vllm:e2e_request_latency_seconds_bucket", 2);
	check_dbl(s->value, 9);
	assert_int_equal(s->nlabels, 3);
	check_label(s, "le", "0.8");
	assert_null(prom_sample_label(s, "trace_id"));
	assert_false(s->has_timestamp);
	s = find(&a, "vllm:e2e_request_latency_seconds_bucket", 8);
	check_dbl(s->value, 41);
	s = find(&a, "vllm:e2e_request_latency_seconds_created", 0);
	assert_int_equal(s->type, PROM_HISTOGRAM);
	s = find(&a, "process_cpu_seconds_total", 0);
	assert_int_equal(s->type, PROM_COUNTER);
	assert_true(name_is(s->family, s->family_len, "process_cpu_seconds"));
	s = find(&a, "vllm_build_info", 0);
	assert_int_equal(s->type, PROM_INFO);
	assert_true(name_is(s->family, s->family_len, "vllm_build"));
	check_label(s, "version", "0.11.0");
	s = find(&a, "vllm_engine_state", 1);
	assert_int_equal(s->type, PROM_STATESET);
	check_label(s, "vllm_engine_state", "sleeping");
	s = find(&a, "vllm_queue_depth_gcount", 0);
	assert_int_equal(s->type, PROM_GAUGEHISTOGRAM);
	assert_true(name_is(s->family, s->family_len, "vllm_queue_depth"));
	s = find(&a, "vllm_queue_depth_bucket", 2);
	assert_int_equal(s->type, PROM_GAUGEHISTOGRAM);
	s = find(&a, "request_duration_seconds", 1);
	assert_int_equal(s->type, PROM_SUMMARY);
	check_label(s, "quantile", "0.99");
	s = find(&a, "request_duration_seconds_created", 0);
	assert_int_equal(s->type, PROM_SUMMARY);
	s = find(&a, "legacy_series", 0);
	assert_int_equal(s->type, PROM_UNKNOWN);
	/* OpenMetrics timestamps are seconds. */
	s = find(&a, "scrape_time", 0);
	assert_true(s->has_timestamp);
	assert_true(s->timestamp_ms == INT64_C(1700000000500));
	s = find(&a, "scrape_time_int", 0);
	assert_int_equal(s->type, PROM_UNTYPED);
	assert_true(s->timestamp_ms == INT64_C(1700000000000));
	free(a.v);

	/* Without the flag an integer timestamp is milliseconds (0.0.4). */
	parse_all(t, len, 0, &a, NULL);
	s = find(&a, "scrape_time_int", 0);
	assert_true(s->timestamp_ms == INT64_C(1700000000));
	s = find(&a, "scrape_time", 0);
	assert_true(s->timestamp_ms == INT64_C(1700000000500));
	free(a.v);

	assert_int_equal(prom_hist_collect(t, len, "vllm:e2e_request_latency_seconds", NULL, &h), 0);
	assert_int_equal(h.n, 9);
	check_dbl(h.count, 41);
	check_dbl(h.sum, 52.75);
	free(t);
}

static void test_openmetrics_eof(void **state)
{
	struct prom_error err;
	const char *t;

	(void)state;
	t = "a 1\n# EOF\n";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS, NULL, NULL, &err), 1);
	t = "a 1\n# EOF";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS, NULL, NULL, &err), 1);
	t = "a 1\r\n# EOF\r\n";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS, NULL, NULL, &err), 1);
	t = "a 1\n# EOF\n\n \n";
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), 1);
	t = "# EOF\n";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS, NULL, NULL, &err), 0);

	/* Text after # EOF is an error, reported on its own line. */
	t = "a 1\n# EOF\nb 2\n";
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), -1);
	assert_int_equal(err.line, 3);
	assert_non_null(strstr(err.msg, "EOF"));
	t = "a 1\n# EOF\n\n\nb 2";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS, NULL, NULL, &err), -1);
	assert_int_equal(err.line, 5);
	/* Lenient: stop at # EOF, count the tail as one bad line. */
	assert_int_equal(prom_parse(t, strlen(t), PROM_LENIENT, NULL, NULL, &err), 1);
	assert_int_equal(err.nbad, 1);
	assert_int_equal(err.line, 5);

	/* OpenMetrics requires # EOF. */
	t = "a 1\nb 2\n";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS, NULL, NULL, &err), -1);
	assert_int_equal(err.line, 3);
	assert_non_null(strstr(err.msg, "EOF"));
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), 2);
	assert_int_equal(prom_parse("", 0, PROM_OPENMETRICS, NULL, NULL, &err), -1);
	assert_int_equal(prom_parse(NULL, 0, 0, NULL, NULL, &err), 0);

	/* "# EOF" followed by more words is just a comment. */
	t = "# EOF and more\nb 2\n";
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), 1);
}

/* ---- edge cases ---- */

static void test_edge(void **state)
{
	size_t len;
	char *t = load("prom/edge.txt", &len);
	struct all a;
	const struct prom_sample *s;
	char buf[128];
	struct prom_hist h;
	unsigned lines = 1;

	(void)state;
	for (size_t i = 0; i < len; i++)
		lines += t[i] == '\n';
	assert_int_equal(parse_all(t, len, 0, &a, NULL), count_sample_lines(t, len));

	s = find(&a, "edge_escapes", 0);
	assert_int_equal(s->type, PROM_GAUGE);
	assert_int_equal(s->line, 7);
	check_label(s, "path", "C:\\Program Files\\vllm");
	check_label(s, "quote", "say \"hi\"");
	check_label(s, "nl", "line1\nline2");
	assert_false(prom_label_value_eq(prom_sample_label(s, "quote"), "say \\\"hi\\\""));
	assert_false(prom_label_value_eq(prom_sample_label(s, "nl"), "line1"));
	s = find(&a, "edge_special", 0);
	check_label(s, "v", "a} b, c=d {e} # not an exemplar");
	check_dbl(s->value, 2);
	s = find(&a, "edge_trailing_comma", 0);
	assert_int_equal(s->nlabels, 2);
	check_label(s, "b", "2");
	s = find(&a, "edge_empty_set", 0);
	assert_int_equal(s->nlabels, 0);
	check_dbl(s->value, 4);
	s = find(&a, "edge_spaces", 0);
	assert_int_equal(s->nlabels, 2);
	check_label(s, "a", "1");
	check_dbl(s->value, 5);
	s = find(&a, "edge_empty_value", 0);
	check_label(s, "a", "");
	s = find(&a, "edge_utf8", 0);
	check_label(s, "model", "Qwen/Qwen2.5-7B-Instruct \xe4\xb8\xad\xe6\x96\x87 \xe2\x9c\x93");
	check_dbl(find(&a, "edge:colon:metric", 0)->value, 8);
	check_dbl(find(&a, "_edge_underscore", 0)->value, 9);
	s = find(&a, "edge_tabs", 0);
	check_dbl(s->value, 10);
	assert_true(s->has_timestamp && s->timestamp_ms == INT64_C(1700000000000));
	check_dbl(find(&a, "edge_leading_space", 0)->value, 11);
	check_dbl(find(&a, "edge_trailing_ws", 0)->value, 12);
	assert_true(isnan(find(&a, "edge_nan", 0)->value));
	assert_true(isnan(find(&a, "edge_nan_lower", 0)->value));
	check_dbl(find(&a, "edge_pinf", 0)->value, HUGE_VAL);
	check_dbl(find(&a, "edge_ninf", 0)->value, -HUGE_VAL);
	check_dbl(find(&a, "edge_inf", 0)->value, HUGE_VAL);
	check_dbl(find(&a, "edge_infinity", 0)->value, -HUGE_VAL);
	check_dbl_at(find(&a, "edge_exp", 0)->value, 1.5e-3, 0, "1.5e-3", __LINE__);
	check_dbl_at(find(&a, "edge_exp_upper", 0)->value, 200, 0, "2E+2", __LINE__);
	check_dbl_at(find(&a, "edge_neg", 0)->value, -0.25, 0, "-0.25", __LINE__);
	check_dbl_at(find(&a, "edge_plus", 0)->value, 7, 0, "+7", __LINE__);
	check_dbl_at(find(&a, "edge_dot_lead", 0)->value, 0.5, 0, ".5", __LINE__);
	check_dbl_at(find(&a, "edge_dot_trail", 0)->value, 5, 0, "5.", __LINE__);
	s = find(&a, "edge_neg_zero", 0);
	assert_true(s->value == 0 && signbit(s->value));
	s = find(&a, "edge_timestamp", 0);
	assert_true(s->has_timestamp && s->timestamp_ms == INT64_C(1712345678901));
	s = find(&a, "edge_neg_timestamp", 0);
	assert_true(s->has_timestamp && s->timestamp_ms == -1000);
	check_dbl_at(find(&a, "edge_big", 0)->value, DBL_MAX, 0, "DBL_MAX", __LINE__);
	check_dbl_at(find(&a, "edge_denormal", 0)->value, 5e-324, 0, "denormal", __LINE__);
	check_dbl_at(find(&a, "edge_many_digits", 0)->value, 0.1, 0, "0.1000...", __LINE__);
	check_dbl_at(find(&a, "edge_long_int", 0)->value, 1.2345678901234568e29, 0, "long int", __LINE__);
	s = find(&a, "edge_max_labels", 0);
	assert_int_equal(s->nlabels, PROM_MAX_LABELS);
	check_label(s, "l31", "31");

	s = find(&a, "edge_hist_bucket", 4);
	assert_int_equal(s->type, PROM_HISTOGRAM);
	check_label(s, "le", "2.5E0");
	assert_int_equal(prom_hist_collect(t, len, "edge_hist", NULL, &h), 0);
	assert_int_equal(h.n, 7);
	{
		static const double want[] = { 0.001, 0.01, 0.1, 1, 2.5, 10 };
		for (int i = 0; i < 6; i++) {
			check_dbl_at(h.le[i], want[i], 0, "le", __LINE__);
			check_dbl(h.cum[i], i + 1);
		}
	}
	check_dbl(h.sum, 12.5);
	check_dbl(h.count, 7);
	s = find(&a, "edge_summary", 1);
	assert_int_equal(s->type, PROM_SUMMARY);
	check_label(s, "quantile", "0.99");
	s = find(&a, "edge_summary_count", 0);
	assert_int_equal(s->type, PROM_SUMMARY);
	s = find(&a, "edge_counter_total", 0);
	assert_int_equal(s->type, PROM_COUNTER);
	s = find(&a, "edge_crlf", 0);
	assert_int_equal(s->type, PROM_UNTYPED);
	check_dbl(s->value, 13);
	s = find(&a, "edge_crlf_labels", 0);
	check_label(s, "a", "x\\");
	assert_int_equal(prom_label_unescape(s->labels[0].value, s->labels[0].value_len, buf, sizeof buf), 2);
	s = find(&a, "edge_last", 0);
	check_dbl(s->value, 15);
	assert_int_equal(s->line, lines);
	free(a.v);
	free(t);
}

static void test_types_from_type_lines(void **state)
{
	const char *t =
		"# TYPE vllm:iteration_tokens_total histogram\n"
		"vllm:iteration_tokens_total_bucket{le=\"1\"} 1\n"
		"vllm:iteration_tokens_total_bucket{le=\"+Inf\"} 2\n"
		"vllm:iteration_tokens_total_count 2\n"
		"vllm:iteration_tokens_total_total 2\n"
		"vllm:iteration_tokens_total 7\n"
		"untyped_total 1\n"
		"# TYPE g gauge\n"
		"g_total 1\n"
		"g 2\n"
		"# TYPE c counter\n"
		"c_total 1\n"
		"c_created 2\n"
		"c_bucket 3\n"
		"g 4\n"
		"# TYPE h_seconds histogram\n"
		"h_seconds_bucket{le=\"1\"} 1\n"
		"h_seconds_sum 1\n"
		"h_seconds_count 1\n"
		"h_seconds_created 1\n"
		"h_seconds_gsum 1\n";
	static const struct {
		const char *family;
		enum prom_type type;
	} want[] = {
		{ "vllm:iteration_tokens_total", PROM_HISTOGRAM },
		{ "vllm:iteration_tokens_total", PROM_HISTOGRAM },
		{ "vllm:iteration_tokens_total", PROM_HISTOGRAM },
		{ "vllm:iteration_tokens_total_total", PROM_UNTYPED },
		{ "vllm:iteration_tokens_total", PROM_HISTOGRAM },
		{ "untyped_total", PROM_UNTYPED },
		{ "g_total", PROM_UNTYPED },
		{ "g", PROM_GAUGE },
		{ "c", PROM_COUNTER },
		{ "c", PROM_COUNTER },
		{ "c_bucket", PROM_UNTYPED },
		{ "g", PROM_UNTYPED }, /* a later TYPE ended g's group */
		{ "h_seconds", PROM_HISTOGRAM },
		{ "h_seconds", PROM_HISTOGRAM },
		{ "h_seconds", PROM_HISTOGRAM },
		{ "h_seconds", PROM_HISTOGRAM },
		{ "h_seconds_gsum", PROM_UNTYPED },
	};
	struct all a;

	(void)state;
	assert_int_equal(parse_all(t, strlen(t), 0, &a, NULL), 17);
	for (size_t i = 0; i < a.n; i++) {
		const struct prom_sample *s = &a.v[i].s;
		if (!name_is(s->family, s->family_len, want[i].family) || s->type != want[i].type) {
			print_error("sample %zu (%.*s): family %.*s type %s, want %s %s\n", i, (int)s->name_len, s->name,
				    (int)s->family_len, s->family, prom_type_name(s->type), want[i].family,
				    prom_type_name(want[i].type));
			fail();
		}
	}
	free(a.v);
	assert_string_equal(prom_type_name(PROM_GAUGEHISTOGRAM), "gaugehistogram");
	assert_string_equal(prom_type_name(PROM_UNTYPED), "untyped");
	assert_string_equal(prom_type_name(PROM_STATESET), "stateset");
}

static void test_label_unescape(void **state)
{
	char buf[16];
	const char *raw = "a\\\\b\\\"c\\nd";	/* a\\b\"c\nd */

	(void)state;
	assert_int_equal(prom_label_unescape(raw, strlen(raw), buf, sizeof buf), 7);
	assert_string_equal(buf, "a\\b\"c\nd");
	/* Truncates like snprintf, always terminated. */
	memset(buf, 'x', sizeof buf);
	assert_int_equal(prom_label_unescape(raw, strlen(raw), buf, 4), 7);
	assert_string_equal(buf, "a\\b");
	assert_int_equal(buf[4], 'x');
	assert_int_equal(prom_label_unescape(raw, strlen(raw), NULL, 0), 7);
	assert_int_equal(prom_label_unescape(raw, strlen(raw), buf, 1), 7);
	assert_string_equal(buf, "");
	assert_int_equal(prom_label_unescape("", 0, buf, sizeof buf), 0);
	assert_string_equal(buf, "");
	/* Only reachable from hand-built labels: unknown escapes stay as written. */
	assert_int_equal(prom_label_unescape("\\t\\", 3, buf, sizeof buf), 3);
	assert_string_equal(buf, "\\t\\");

	{
		struct prom_label l = { "k", 1, raw, strlen(raw) };
		assert_true(prom_label_value_eq(&l, "a\\b\"c\nd"));
		assert_false(prom_label_value_eq(&l, "a\\b\"c\nd "));
		assert_false(prom_label_value_eq(&l, "a\\b\"c\n"));
		assert_false(prom_label_value_eq(&l, ""));
		assert_false(prom_label_value_eq(NULL, ""));
		assert_false(prom_label_value_eq(&l, NULL));
	}
}

static void test_matchers(void **state)
{
	const char *t =
		"m{model=\"a,b\",k=\"v\"} 1\n"
		"m{model=\"c\",k=\"v w\"} 2\n"
		"m{model=\"c\"} 4\n"
		"m{model=\"q\\\"uote\"} 8\n"
		"m_other{model=\"c\"} 16\n";
	double v = -1;
	char many[512];
	size_t o = 0;

	(void)state;
	check_dbl(sum_n(t, strlen(t), "m", NULL, 4), 15);
	check_dbl(sum_n(t, strlen(t), "m", "", 4), 15);
	check_dbl(sum_n(t, strlen(t), "m", "model=\"a,b\"", 1), 1);
	check_dbl(sum_n(t, strlen(t), "m", "model=c", 2), 6);
	check_dbl(sum_n(t, strlen(t), "m", " model = c , k = v w ", 1), 2);
	check_dbl(sum_n(t, strlen(t), "m", "model=c,k=", 1), 4);
	check_dbl(sum_n(t, strlen(t), "m", "model=q\"uote", 1), 8);
	check_dbl(sum_n(t, strlen(t), "m", "model=c,", 2), 6);
	sum_n(t, strlen(t), "m", "model=C", 0);
	assert_int_equal(prom_sum(t, strlen(t), "m", "=x", &v), -1);
	assert_int_equal(prom_sum(t, strlen(t), "m", "model", &v), -1);
	assert_int_equal(prom_sum(t, strlen(t), "m", "model=c,,k=v", &v), -1);
	assert_int_equal(prom_sum(t, strlen(t), "m", "model=\"open", &v), -1);
	assert_int_equal(prom_sum(t, strlen(t), "m", "model=\"a\"x", &v), -1);
	assert_int_equal(prom_sum(t, strlen(t), NULL, NULL, &v), -1);
	for (int i = 0; i <= PROM_MAX_LABELS; i++)
		o += (size_t)snprintf(many + o, sizeof many - o, "k%d=v,", i);
	assert_int_equal(prom_sum(t, strlen(t), "m", many, &v), -1);
	assert_int_equal(prom_sum(t, strlen(t), "m", NULL, NULL), 4);
}

static void test_le_parsing(void **state)
{
	/* Two engines writing the same bounds differently, out of order. */
	const char *t =
		"# TYPE x histogram\n"
		"x_bucket{engine=\"0\",le=\"+Inf\"} 10\n"
		"x_bucket{engine=\"0\",le=\"1\"} 6\n"
		"x_bucket{engine=\"0\",le=\"1e-3\"} 1\n"
		"x_bucket{engine=\"0\",le=\"0.5\"} 3\n"
		"x_bucket{engine=\"1\",le=\"0.001\"} 2\n"
		"x_bucket{engine=\"1\",le=\"5.0e-1\"} 4\n"
		"x_bucket{engine=\"1\",le=\"1.0\"} 8\n"
		"x_bucket{engine=\"1\",le=\"+inf\"} 10\n"
		"x_bucket{engine=\"2\",le=\"abc\"} 100\n"
		"x_sum{engine=\"0\"} 5\n"
		"x_sum{engine=\"1\"} 6\n"
		"x_count{engine=\"0\"} 10\n"
		"x_count{engine=\"1\"} 10\n"
		"xx_bucket{le=\"1\"} 1000\n";
	const char *no_inf =
		"y_bucket{le=\"1\"} 3\n"
		"y_bucket{le=\"2\"} 5\n"
		"y_count 6\n"
		"z_bucket{le=\"1\"} 3\n";
	struct prom_hist h;
	struct prom_error err;

	(void)state;
	/* le="abc" in a declared histogram is malformed... */
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), -1);
	assert_int_equal(err.line, 10);
	assert_non_null(strstr(err.msg, "abc"));
	/* ...and skipped by the collector. */
	assert_int_equal(prom_hist_collect(t, strlen(t), "x", NULL, &h), 0);
	assert_int_equal(h.n, 4);
	check_dbl(h.le[0], 0.001);
	check_dbl(h.le[1], 0.5);
	check_dbl(h.le[2], 1);
	check_dbl(h.le[3], HUGE_VAL);
	check_dbl(h.cum[0], 3);
	check_dbl(h.cum[1], 7);
	check_dbl(h.cum[2], 14);
	check_dbl(h.cum[3], 20);
	check_dbl(h.sum, 11);
	check_dbl(h.count, 20);
	assert_int_equal(prom_hist_collect(t, strlen(t), "x", "engine=1", &h), 0);
	check_dbl(h.cum[2], 8);

	/* A missing +Inf bucket comes from _count; without either it is unusable. */
	assert_int_equal(prom_hist_collect(no_inf, strlen(no_inf), "y", NULL, &h), 0);
	assert_int_equal(h.n, 3);
	check_dbl(h.cum[2], 6);
	assert_true(isinf(h.le[2]));
	assert_int_equal(prom_hist_collect(no_inf, strlen(no_inf), "z", NULL, &h), -1);
	assert_int_equal(h.n, 0);
	assert_int_equal(prom_hist_collect(no_inf, strlen(no_inf), "nope", NULL, &h), -1);
	/* More bounds than fit, +Inf first so it would survive truncation. */
	{
		char big[8192];
		size_t o = (size_t)snprintf(big, sizeof big, "w_bucket{le=\"+Inf\"} 100\n");
		for (int i = 1; i <= PROM_HIST_MAX + 5; i++)
			o += (size_t)snprintf(big + o, sizeof big - o, "w_bucket{le=\"%d\"} %d\n", i, i);
		assert_int_equal(prom_hist_collect(big, o, "w", NULL, &h), -1);
		assert_int_equal(h.n, 0);
		/* Exactly PROM_HIST_MAX bounds, +Inf included, fit. */
		o = (size_t)snprintf(big, sizeof big, "w_bucket{le=\"+Inf\"} 100\n");
		for (int i = 1; i < PROM_HIST_MAX; i++)
			o += (size_t)snprintf(big + o, sizeof big - o, "w_bucket{le=\"%d\"} %d\n", i, i);
		assert_int_equal(prom_hist_collect(big, o, "w", NULL, &h), 0);
		assert_int_equal(h.n, PROM_HIST_MAX);
		check_dbl(h.le[PROM_HIST_MAX - 2], PROM_HIST_MAX - 1);
		check_dbl(h.count, 100);
	}
	assert_int_equal(prom_hist_collect(no_inf, strlen(no_inf), "y", "=bad", &h), -1);
	assert_int_equal(prom_hist_collect(no_inf, strlen(no_inf), NULL, NULL, &h), -1);
}

static void test_timestamps(void **state)
{
	struct all a;
	struct prom_error err;
	const char *t = "a 1 0\nb 1 -5\nc 1 9223372036854775807\nd 1 1.5\ne 1 2e3\n";

	(void)state;
	assert_int_equal(parse_all(t, strlen(t), 0, &a, NULL), 5);
	assert_true(a.v[0].s.has_timestamp && a.v[0].s.timestamp_ms == 0);
	assert_true(a.v[1].s.timestamp_ms == -5);
	assert_true(a.v[2].s.timestamp_ms == INT64_MAX);
	assert_true(a.v[3].s.timestamp_ms == 1500);
	assert_true(a.v[4].s.timestamp_ms == 2000000);
	free(a.v);
	t = "c 1 9223372036854775808\n";
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), -1);
	t = "c 1 9223372036854776\n";
	assert_int_equal(prom_parse(t, strlen(t), PROM_OPENMETRICS | PROM_LENIENT, NULL, NULL, &err), 0);
	assert_int_equal(err.nbad, 2); /* the overflow and the missing # EOF */
	t = "c 1 NaN\nd 1 Inf\ne 1 1e300\n";
	assert_int_equal(prom_parse(t, strlen(t), PROM_LENIENT, NULL, NULL, &err), 0);
	assert_int_equal(err.nbad, 3);
}

/* ---- malformed input ---- */

static void test_malformed(void **state)
{
	static const struct {
		const char *bad;
		unsigned line;
		const char *msg;
	} cases[] = {
		{ "foo{a=\"b} 1", 3, "unterminated quoted value" },
		{ "foo{a=\"b\\", 3, "unterminated quoted value" },
		{ "foo{a=\"\\q\"} 1", 3, "invalid escape" },
		{ "foo{a=\"\\t\"} 1", 3, "invalid escape" },
		{ "1abc 1", 3, "invalid metric name" },
		{ "foo-bar 1", 3, "invalid character '-' in metric name" },
		{ "foo.bar 1", 3, "invalid character '.' in metric name" },
		{ "fo\"o 1", 3, "in metric name" },
		{ "foo", 3, "missing value" },
		{ "foo{a=\"b\"}", 3, "missing value" },
		{ "foo   \t", 3, "missing value" },
		{ "foo # {a=\"b\"} 1", 3, "missing value" },
		{ "foo abc", 3, "invalid value \"abc\"" },
		{ "foo 1.2.3", 3, "invalid value" },
		{ "foo 0x10", 3, "invalid value" },
		{ "foo 0x1p3", 3, "invalid value" },
		{ "foo 1_000", 3, "invalid value" },
		{ "foo 1e", 3, "invalid value" },
		{ "foo .", 3, "invalid value" },
		{ "foo --1", 3, "invalid value" },
		{ "foo +NaN", 3, "invalid value" },
		{ "foo Infinit", 3, "invalid value" },
		{ "foo 1,5", 3, "invalid value" },
		{ "foo 1e400", 3, "out of range" },
		{ "foo -1e400", 3, "out of range" },
		{ "foo 1 abc", 3, "invalid timestamp" },
		{ "foo 1 99999999999999999999", 3, "invalid timestamp" },
		{ "foo 1 -", 3, "invalid timestamp" },
		{ "foo 1 2 3", 3, "unexpected text after the timestamp" },
		{ "foo{1a=\"b\"} 1", 3, "invalid label name" },
		{ "foo{a-b=\"c\"} 1", 3, "invalid character '-' in label name" },
		{ "foo{a:b=\"c\"} 1", 3, "invalid character ':' in label name" },
		{ "foo{\"a\"=\"b\"} 1", 3, "invalid label name" },
		{ "foo{a \"b\"} 1", 3, "expected '='" },
		{ "foo{a=b} 1", 3, "not a quoted string" },
		{ "foo{a=} 1", 3, "not a quoted string" },
		{ "foo{a=\"b\" 1", 3, "expected ',' or '}'" },
		{ "foo{a=\"b\"c=\"d\"} 1", 3, "expected ',' or '}'" },
		{ "foo{a=\"b\",", 3, "unterminated label set" },
		{ "foo{", 3, "unterminated label set" },
		{ "foo{a=\"1\",,b=\"2\"} 1", 3, "unexpected ','" },
		{ "foo{,} 1", 3, "unexpected ','" },
		{ "foo{a=\"1\",a=\"2\"} 1", 3, "duplicate label name \"a\"" },
		{ "foo{a=\"b\"}} 1", 3, "invalid value" },
		{ "{__name__=\"foo\"} 1", 3, "invalid metric name" },
		{ "# TYPE foo histgram", 3, "unknown metric type \"histgram\"" },
		{ "# TYPE foo", 3, "missing type" },
		{ "# TYPE 1foo gauge", 3, "invalid metric name" },
		{ "# TYPE foo gauge extra", 3, "unexpected text after the type" },
		{ "# TYPE foo Gauge", 3, "unknown metric type" },
		{ "# HELP", 3, "missing metric name" },
		{ "# HELP   ", 3, "missing metric name" },
		{ "# HELP 9x text", 3, "invalid metric name" },
		{ "# HELP fo-o text", 3, "invalid character '-'" },
		{ "# UNIT {x} seconds", 3, "invalid metric name" },
		{ "# TYPE h histogram\nh_bucket 1", 4, "without an le label" },
		{ "# TYPE h histogram\nh_bucket{le=\"abc\"} 1", 4, "le=\"abc\" is not a number" },
		{ "# TYPE h histogram\nh_bucket{le=\"NaN\"} 1", 4, "not a number" },
		{ "# TYPE h gaugehistogram\nh_bucket{le=\"\"} 1", 4, "not a number" },
		{ "# TYPE s summary\ns{quantile=\"x\"} 1", 4, "quantile=\"x\" is not a number" },
		{ "foo 1 # oops", 3, "exemplar" },
		{ "foo 1 #{a=\"b\"} 1", 3, "exemplar" },
		{ "foo 1 # {a=\"b\"}", 3, "exemplar: missing or invalid value" },
		{ "foo 1 # {a=\"b\"} x", 3, "exemplar: missing or invalid value" },
		{ "foo 1 # {a=\"b} 1", 3, "unterminated" },
		{ "foo 1 # {a=\"b\"} 1 2 3", 3, "exemplar: unexpected text" },
		{ "foo 1 # {a=\"b\"} 1 zz", 3, "exemplar: invalid timestamp" },
		{ "foo 1 2 # {a=\"b\"} 1 2 3", 3, "exemplar" },
	};
	char text[256];
	struct prom_error err;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int n = snprintf(text, sizeof text, "ok_a 1\n# HELP ok_b some help\n%s\nok_c 2\n", cases[i].bad);
		int rc;

		rc = prom_parse(text, (size_t)n, 0, NULL, NULL, &err);
		if (rc != -1 || err.line != cases[i].line || !strstr(err.msg, cases[i].msg) || err.nbad != 1) {
			print_error("case %zu [%s]: rc %d line %u msg \"%s\"; want line %u msg ~ \"%s\"\n", i,
				    cases[i].bad, rc, err.line, err.msg, cases[i].line, cases[i].msg);
			fail();
		}
		/* Lenient: the same line is skipped, the good ones survive. */
		rc = prom_parse(text, (size_t)n, PROM_LENIENT, NULL, NULL, &err);
		if (rc != 2 || err.nbad != 1 || err.line != cases[i].line) {
			print_error("lenient case %zu [%s]: rc %d nbad %u line %u\n", i, cases[i].bad, rc, err.nbad,
				    err.line);
			fail();
		}
	}
}

static void test_too_many_labels_and_nul(void **state)
{
	char text[2048];
	size_t o = 0;
	struct prom_error err;
	struct all a;

	(void)state;
	o += (size_t)snprintf(text + o, sizeof text - o, "ok 1\nfoo{");
	for (int i = 0; i <= PROM_MAX_LABELS; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "l%d=\"%d\",", i, i);
	o += (size_t)snprintf(text + o, sizeof text - o, "} 1\n");
	assert_int_equal(prom_parse(text, o, 0, NULL, NULL, &err), -1);
	assert_int_equal(err.line, 2);
	assert_non_null(strstr(err.msg, "too many labels"));

	/* NUL bytes are ordinary bytes: fine in comments and label values,
	 * an error in a name, and never a terminator. */
	{
		static const char t1[] = "# comment \0 with a NUL\na{b=\"x\0y\"} 1\nc 2";
		static const char t2[] = "a 1\nb\0c 2\nd 3\n";
		static const char t3[] = "a 1\n\0\nd 3\n";
		assert_int_equal(parse_all(t1, sizeof t1 - 1, 0, &a, NULL), 2);
		assert_int_equal(a.v[0].s.labels[0].value_len, 3);
		assert_false(prom_label_value_eq(&a.v[0].s.labels[0], "x"));
		check_dbl(a.v[1].s.value, 2);
		free(a.v);
		assert_int_equal(prom_parse(t2, sizeof t2 - 1, 0, NULL, NULL, &err), -1);
		assert_int_equal(err.line, 2);
		assert_non_null(strstr(err.msg, "\\x00"));
		assert_int_equal(prom_parse(t3, sizeof t3 - 1, 0, NULL, NULL, &err), -1);
		assert_int_equal(err.line, 2);
		assert_int_equal(prom_parse(t3, sizeof t3 - 1, PROM_LENIENT, NULL, NULL, &err), 2);
	}
}

static void test_huge_lines(void **state)
{
	const size_t big = 10u << 20;
	char *t = malloc(big + 64);
	size_t n;
	struct all a;
	struct prom_error err;

	(void)state;
	assert_non_null(t);
	/* A 10 MB label value, no trailing newline. */
	n = (size_t)sprintf(t, "m{v=\"");
	memset(t + n, 'x', big);
	n += big;
	n += (size_t)sprintf(t + n, "\"} 42");
	assert_int_equal(parse_all(t, n, 0, &a, NULL), 1);
	assert_int_equal(a.v[0].s.labels[0].value_len, big);
	check_dbl(a.v[0].s.value, 42);
	free(a.v);
	/* Unterminated: the error must not read past the end. */
	assert_int_equal(prom_parse(t, n - 5, 0, NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "unterminated"));
	/* A 10 MB metric name is just a long name. */
	memset(t, 'a', big);
	memcpy(t + big, " 1", 2);
	assert_int_equal(prom_parse(t, big + 2, 0, NULL, NULL, &err), 1);
	assert_int_equal(prom_parse(t, big, 0, NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "missing value"));
	/* 10 MB of braces and of a number. */
	memset(t, '{', big);
	assert_int_equal(prom_parse(t, big, 0, NULL, NULL, &err), -1);
	t[0] = 'a';
	t[1] = ' ';
	memset(t + 2, '9', big - 2);
	assert_int_equal(prom_parse(t, big, 0, NULL, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "invalid value"));
	/* 10 MB of newlines. */
	memset(t, '\n', big);
	assert_int_equal(prom_parse(t, big, 0, NULL, NULL, &err), 0);
	free(t);
}

static void test_lenient(void **state)
{
	const char *t =
		"# HELP good A good metric\n"
		"# TYPE good gauge\n"
		"good 1\n"
		"good{x=\"unterminated} 2\n"
		"# TYPE good histgram\n"
		"good 4\n"
		"bad value\n"
		"good{a=\"1\"} 8 1000\n";
	struct all a;
	struct prom_error err;

	(void)state;
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), -1);
	assert_int_equal(err.line, 4);
	assert_int_equal(parse_all(t, strlen(t), PROM_LENIENT, &a, &err), 3);
	assert_int_equal(err.nbad, 3);
	assert_int_equal(err.line, 4);
	assert_non_null(strstr(err.msg, "unterminated"));
	assert_int_equal(a.v[0].s.line, 3);
	assert_int_equal(a.v[1].s.line, 6);
	/* The misspelt TYPE was skipped, so the earlier one still holds. */
	assert_int_equal(a.v[1].s.type, PROM_GAUGE);
	assert_int_equal(a.v[2].s.line, 8);
	assert_true(a.v[2].s.timestamp_ms == 1000);
	free(a.v);
	/* prom_sum is lenient: a broken neighbour does not hide a metric. */
	check_dbl(sum_n(t, strlen(t), "good", NULL, 3), 13);
	/* err may be NULL. */
	assert_int_equal(prom_parse(t, strlen(t), PROM_LENIENT, NULL, NULL, NULL), 3);
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, NULL), -1);
}

static int stop_at_third(void *ud, const struct prom_sample *s)
{
	int *seen = ud;

	(void)s;
	return ++*seen == 3 ? 7 : 0;
}

static void test_callback_stop(void **state)
{
	const char *t = "a 1\nb 2\n# c\nc 3\nd 4\n";
	struct prom_error err;
	int seen = 0;

	(void)state;
	assert_int_equal(prom_parse(t, strlen(t), 0, stop_at_third, &seen, &err), 7);
	assert_int_equal(seen, 3);
	assert_int_equal(err.line, 4);
	assert_int_equal(prom_parse(t, strlen(t), 0, NULL, NULL, &err), 4);
}

/* ---- histogram math ---- */

static struct prom_hist mkhist(int n, const double *le, const double *cum, double sum, double count)
{
	struct prom_hist h;

	memset(&h, 0, sizeof h);
	h.n = n;
	for (int i = 0; i < n; i++) {
		h.le[i] = le[i];
		h.cum[i] = cum[i];
	}
	h.sum = sum;
	h.count = count;
	return h;
}

static void test_hist_delta_quantile(void **state)
{
	const double le[] = { 0.1, 0.5, 1, HUGE_VAL };
	struct prom_hist before = mkhist(4, le, (const double[]){ 10, 30, 40, 40 }, 12, 40);
	struct prom_hist now = mkhist(4, le, (const double[]){ 15, 55, 75, 80 }, 40, 80);
	struct prom_hist d, r;

	(void)state;
	prom_hist_delta(&now, &before, &d);
	assert_int_equal(d.n, 4);
	check_dbl(d.cum[0], 5);
	check_dbl(d.cum[1], 25);
	check_dbl(d.cum[2], 35);
	check_dbl(d.cum[3], 40);
	check_dbl(d.sum, 28);
	check_dbl(d.count, 40);
	/* rank 20 in (0.1, 0.5] holding 5..25 */
	check_dbl(prom_hist_quantile(&d, 0.5), 0.1 + 0.4 * 15.0 / 20.0);
	/* rank 4 in the first bucket, which starts at 0 */
	check_dbl(prom_hist_quantile(&d, 0.1), 0.1 * 4.0 / 5.0);
	/* rank 36 is past the last finite bucket: its le */
	check_dbl(prom_hist_quantile(&d, 0.9), 1);
	check_dbl(prom_hist_quantile(&d, 1), 1);
	check_dbl(prom_hist_quantile(&d, 0), 0);
	check_dbl(prom_hist_quantile(&d, -0.1), -HUGE_VAL);
	check_dbl(prom_hist_quantile(&d, 1.1), HUGE_VAL);
	check_dbl(prom_hist_quantile(&d, NAN), NAN);

	/* Counter reset (server restart): the delta is the new state. */
	r = mkhist(4, le, (const double[]){ 3, 4, 4, 4 }, 1.2, 4);
	prom_hist_delta(&r, &now, &d);
	check_dbl(d.cum[0], 3);
	check_dbl(d.count, 4);
	check_dbl(d.sum, 1.2);
	check_dbl(prom_hist_quantile(&d, 0.5), 0.1 * 2.0 / 3.0);
	/* One bucket going down is a reset too, even when the count did not. */
	r = mkhist(4, le, (const double[]){ 9, 60, 80, 90 }, 50, 90);
	prom_hist_delta(&r, &now, &d);
	check_dbl(d.cum[0], 9);
	/* A _count going down alone is a reset too. */
	r = now;
	r.count = 30;
	prom_hist_delta(&r, &before, &d);
	check_dbl(d.cum[0], 15);
	check_dbl(d.count, 30);
	/* Different bounds or an empty "before": the delta is the new state. */
	{
		const double le2[] = { 0.2, 0.5, 1, HUGE_VAL };
		struct prom_hist other = mkhist(4, le2, (const double[]){ 1, 2, 3, 4 }, 1, 4);
		struct prom_hist empty;
		memset(&empty, 0, sizeof empty);
		prom_hist_delta(&now, &other, &d);
		check_dbl(d.cum[3], 80);
		prom_hist_delta(&now, &empty, &d);
		check_dbl(d.cum[1], 55);
		check_dbl(d.sum, 40);
		prom_hist_delta(&now, NULL, &d);
		check_dbl(d.count, 80);
	}
	/* Output may alias an input. */
	d = now;
	prom_hist_delta(&d, &before, &d);
	check_dbl(d.cum[1], 25);
	d = before;
	prom_hist_delta(&now, &d, &d);
	check_dbl(d.cum[1], 25);
	/* No change between scrapes: nothing observed, so no quantile. */
	prom_hist_delta(&now, &now, &d);
	check_dbl(d.count, 0);
	check_dbl(prom_hist_quantile(&d, 0.5), NAN);
}

static void test_hist_quantile_edges(void **state)
{
	struct prom_hist h;

	(void)state;
	check_dbl(prom_hist_quantile(NULL, 0.5), NAN);
	memset(&h, 0, sizeof h);
	check_dbl(prom_hist_quantile(&h, 0.5), NAN);
	/* Only +Inf: fewer than two buckets. */
	h = mkhist(1, (const double[]){ HUGE_VAL }, (const double[]){ 5 }, 1, 5);
	check_dbl(prom_hist_quantile(&h, 0.5), NAN);
	/* Highest bucket not +Inf. */
	h = mkhist(2, (const double[]){ 1, 2 }, (const double[]){ 5, 6 }, 1, 6);
	check_dbl(prom_hist_quantile(&h, 0.5), NAN);
	/* Unsorted bounds. */
	h = mkhist(3, (const double[]){ 2, 1, HUGE_VAL }, (const double[]){ 5, 6, 6 }, 1, 6);
	check_dbl(prom_hist_quantile(&h, 0.5), NAN);
	h.n = PROM_HIST_MAX + 1;
	check_dbl(prom_hist_quantile(&h, 0.5), NAN);
	/* A first bound at or below 0 is returned as is. */
	h = mkhist(3, (const double[]){ 0, 1, HUGE_VAL }, (const double[]){ 5, 10, 10 }, 1, 10);
	check_dbl(prom_hist_quantile(&h, 0.25), 0);
	check_dbl(prom_hist_quantile(&h, 0.75), 0.5);
	h = mkhist(3, (const double[]){ -1, 1, HUGE_VAL }, (const double[]){ 5, 10, 10 }, 1, 10);
	check_dbl(prom_hist_quantile(&h, 0.25), -1);
	/* Non-monotonic counts are flattened: cum 5, (4 -> 5), 10. */
	h = mkhist(3, (const double[]){ 1, 2, HUGE_VAL }, (const double[]){ 5, 4, 10 }, 1, 10);
	check_dbl(prom_hist_quantile(&h, 0.5), 1);
	check_dbl(prom_hist_quantile(&h, 0.4), 0.8);
	/* Everything in +Inf. */
	h = mkhist(3, (const double[]){ 1, 2, HUGE_VAL }, (const double[]){ 0, 0, 10 }, 1, 10);
	check_dbl(prom_hist_quantile(&h, 0.5), 2);
	/* NaN counts. */
	h = mkhist(3, (const double[]){ 1, 2, HUGE_VAL }, (const double[]){ 0, NAN, 10 }, 1, 10);
	check_dbl(prom_hist_quantile(&h, 0.5), NAN);
}

/* ---- numbers ---- */

static void test_parse_float(void **state)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "0x10", "0x1p3", "1p3", "1_000", "1e", "1e+", "e1", ".", "-", "+", "--1",
		"+-1", "1.2.3", "+nan", "-NaN", "nan1", "inf1", "infinit", "infinityy", "1,5", "1e5.5",
		"\xff", "1\0",
	};
	static const struct {
		const char *s;
		double v;
	} good[] = {
		{ "0", 0 }, { "1", 1 }, { "-1", -1 }, { "+1", 1 }, { "1.", 1 }, { ".5", 0.5 }, { "+.5e-3", 0.5e-3 },
		{ "1E5", 1e5 }, { "1e+05", 1e5 }, { "00012", 12 }, { "0.000", 0 }, { "Infinity", HUGE_VAL },
		{ "+inf", HUGE_VAL }, { "-INF", -HUGE_VAL }, { "-Infinity", -HUGE_VAL }, { "1e-400", 0 },
		{ "0e999999999", 0 }, { "9007199254740993", 9007199254740992.0 },
		{ "1.7976931348623157e308", DBL_MAX }, { "4.9406564584124654e-324", 5e-324 },
		{ "123456789012345678901234567890e-20", 1234567890.1234567890123456789 },
	};
	double v;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t n = strlen(bad[i]) + (i == sizeof bad / sizeof bad[0] - 1);
		if (prom_parse_float(bad[i], n, &v) != -1) {
			print_error("accepted \"%s\"\n", bad[i]);
			fail();
		}
	}
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		v = -999;
		if (prom_parse_float(good[i].s, strlen(good[i].s), &v) != 0) {
			print_error("rejected \"%s\"\n", good[i].s);
			fail();
		}
		check_dbl_at(v, good[i].v, 0, good[i].s, __LINE__);
	}
	assert_int_equal(prom_parse_float("NaN", 3, &v), 0);
	assert_true(isnan(v));
	assert_int_equal(prom_parse_float("nAn", 3, &v), 0);
	assert_int_equal(prom_parse_float("1e309", 5, &v), -1);
	assert_int_equal(prom_parse_float(NULL, 0, &v), -1);
	assert_int_equal(prom_parse_float("1", 1, NULL), 0);
	{
		char longnum[PROM_MAX_VALUE_LEN + 2];
		memset(longnum, '1', sizeof longnum);
		longnum[0] = '0';
		longnum[1] = '.';
		assert_int_equal(prom_parse_float(longnum, PROM_MAX_VALUE_LEN, &v), 0);
		assert_int_equal(prom_parse_float(longnum, PROM_MAX_VALUE_LEN + 1, &v), -1);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The fast path must give strtod's correctly rounded result, bit for bit. */
static void test_float_matches_strtod(void **state)
{
	char s[64];

	(void)state;
	for (int it = 0; it < 200000; it++) {
		int ndig = 1 + (int)(next_rand() % 22);
		int dot = (int)(next_rand() % (unsigned)(ndig + 1));
		size_t o = 0;
		double got, want;

		if (next_rand() % 4 == 0)
			s[o++] = '-';
		for (int d = 0; d < ndig; d++) {
			if (d == dot && next_rand() % 2)
				s[o++] = '.';
			s[o++] = (char)('0' + next_rand() % 10);
		}
		if (next_rand() % 3 == 0)
			o += (size_t)snprintf(s + o, sizeof s - o, "e%d", (int)(next_rand() % 70) - 35);
		s[o] = '\0';
		want = strtod(s, NULL);
		if (prom_parse_float(s, o, &got) != 0 || memcmp(&got, &want, sizeof got) != 0) {
			print_error("\"%s\": got %.17g want %.17g\n", s, got, want);
			fail();
		}
	}
	/* Every decimal exponent around the edges of the exact powers of ten
	 * (1e22 is the last one), with mantissas up to 2^53 and beyond. */
	for (int e = -40; e <= 40; e++) {
		for (int it = 0; it < 3000; it++) {
			uint64_t m = next_rand() >> (next_rand() % 64);
			int o = snprintf(s, sizeof s, "%llue%d", (unsigned long long)m, e);
			double got, want = strtod(s, NULL);
			if (prom_parse_float(s, (size_t)o, &got) != 0 || memcmp(&got, &want, sizeof got) != 0) {
				print_error("\"%s\": got %.17g want %.17g\n", s, got, want);
				fail();
			}
		}
	}
}

/* ---- robustness ---- */

struct bounds {
	const char *lo, *hi;
	unsigned max_line;
	int n;
};

static int bounds_cb(void *ud, const struct prom_sample *s)
{
	struct bounds *b = ud;

	assert_true(s->name >= b->lo && s->name + s->name_len <= b->hi && s->name_len > 0);
	assert_true(s->family >= b->lo && s->family + s->family_len <= b->hi);
	assert_true(s->family_len <= s->name_len);
	assert_true(s->nlabels <= PROM_MAX_LABELS);
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct prom_label *l = &s->labels[i];
		char tmp[8];
		assert_true(l->name >= b->lo && l->name + l->name_len <= b->hi && l->name_len > 0);
		assert_true(l->value >= b->lo && l->value + l->value_len <= b->hi);
		prom_label_unescape(l->value, l->value_len, tmp, sizeof tmp);
	}
	assert_true(s->line >= 1 && s->line <= b->max_line);
	b->n++;
	return 0;
}

static void test_random_garbage(void **state)
{
	static const char alphabet[] = "abc_:{}=\",\\ #\n\r\t0123456789.eE+-InfNa";
	static const char *const pieces[] = {
		"# TYPE x histogram\n", "x_bucket{le=\"1\"} 1\n", "x_count 3\n", "# EOF\n", "# HELP x y\n",
		"m{a=\"b\",} 1 2\n", "\\\"", "{le=\"+Inf\"}", " # {t=\"1\"} 1 2\n", "NaN", "\r\n", "\n\n",
	};
	size_t len_fix;
	char *fix = load("prom/vllm.txt", &len_fix);

	(void)state;
	for (int it = 0; it < 20000; it++) {
		size_t cap = 1 + next_rand() % 2048;
		char *t = malloc(cap);
		size_t n = 0;
		unsigned lines = 1;
		struct prom_error es, el;
		struct bounds b;
		int rs, rl;
		struct prom_hist h;
		double v;

		assert_non_null(t);
		while (n < cap) {
			uint64_t r = next_rand();
			if (r % 8 == 0) {
				const char *p = pieces[(r >> 8) % (sizeof pieces / sizeof pieces[0])];
				size_t k = strlen(p);
				if (k > cap - n)
					k = cap - n;
				memcpy(t + n, p, k);
				n += k;
			} else if (r % 8 == 1) {
				size_t off = (size_t)(r >> 8) % len_fix;
				size_t k = 1 + (r >> 40) % 200;
				if (k > len_fix - off)
					k = len_fix - off;
				if (k > cap - n)
					k = cap - n;
				memcpy(t + n, fix + off, k);
				n += k;
			} else if (r % 64 == 2) {
				t[n++] = (char)(r >> 16);
			} else {
				t[n++] = alphabet[(r >> 8) % (sizeof alphabet - 1)];
			}
		}
		for (size_t i = 0; i < n; i++)
			lines += t[i] == '\n';
		b.lo = t;
		b.hi = t + n;
		b.max_line = lines;
		b.n = 0;
		rs = prom_parse(t, n, 0, bounds_cb, &b, &es);
		b.n = 0;
		rl = prom_parse(t, n, PROM_LENIENT, bounds_cb, &b, &el);
		assert_true(rs >= -1);
		assert_true(rl >= 0 && rl == b.n && (unsigned)rl <= lines);
		if (rs >= 0) {
			assert_int_equal(rl, rs);
			assert_int_equal(el.nbad, 0);
		} else {
			assert_true(el.nbad >= 1);
			assert_true(es.line >= 1 && es.line <= lines + 1);
			assert_int_equal(es.line, el.line);
			assert_true(strlen(es.msg) > 0);
		}
		assert_true(prom_sum(t, n, "x_count", NULL, &v) >= 0);
		assert_true(prom_sum(t, n, "m", "a=b", &v) >= 0);
		if (prom_hist_collect(t, n, "x", NULL, &h) == 0) {
			assert_true(h.n >= 1 && h.n <= PROM_HIST_MAX && isinf(h.le[h.n - 1]));
			(void)prom_hist_quantile(&h, 0.5);
		}
		free(t);
	}
	free(fix);
}

/* A server quantile read off buckets is shown as what the buckets say: a
 * queue with no queueing (every request under 300 ms, mean 8.9 ms) must not
 * read "p50 150 ms"; a p99 in the overflow bucket is "> last bound". */
static void test_server_quantile_display(void **state)
{
	(void)state;
	struct prom_hist h = {
		.le = {0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, INFINITY},
		.n = 16, .sum = 0.0089 * 1000, .count = 1000,
	};
	for (int i = 0; i < h.n; i++)
		h.cum[i] = 1000;
	double lo, hi;
	double v = prom_hist_quantile_bucket(&h, 0.5, &lo, &hi);
	check_dbl(v, 0.15);
	check_dbl(lo, 0);
	check_dbl(hi, 0.3);
	struct server_value sv = {.v = v, .valid = true, .lo = lo, .hi = hi};
	char buf[48];
	server_format_ms(&sv, buf, sizeof buf);
	assert_string_equal(buf, "<=300");

	/* A wide bucket away from 0: its bounds, from 1 s on in seconds. */
	for (int i = 0; i < h.n; i++)
		h.cum[i] = i < 8 ? 0 : 1000;   /* all between 5 and 10 s */
	v = prom_hist_quantile_bucket(&h, 0.99, &lo, &hi);
	sv = (struct server_value){.v = v, .valid = true, .lo = lo, .hi = hi};
	assert_true(server_format_ms(&sv, buf, sizeof buf));
	assert_string_equal(buf, "5-10 s");

	/* In the overflow bucket: only a lower bound is known. */
	for (int i = 0; i < h.n; i++)
		h.cum[i] = i < 15 ? 0 : 1000;
	v = prom_hist_quantile_bucket(&h, 0.99, &lo, &hi);
	assert_true(isinf(hi));
	sv = (struct server_value){.v = v, .valid = true, .lo = lo, .hi = hi};
	server_format_ms(&sv, buf, sizeof buf);
	assert_string_equal(buf, ">60 s");

	/* Even a narrow bucket is a bucket: no number inside it. */
	struct prom_hist f = {.le = {0.010, 0.011, 0.012, INFINITY}, .cum = {0, 500, 1000, 1000}, .n = 4};
	v = prom_hist_quantile_bucket(&f, 0.5, &lo, &hi);
	sv = (struct server_value){.v = v, .valid = true, .lo = lo, .hi = hi};
	assert_false(server_format_ms(&sv, buf, sizeof buf));
	assert_string_equal(buf, "10-11");
	/* An exact value (a gauge, a mean) prints as is; unknown is "-". */
	sv = (struct server_value){.v = 0.0089, .valid = true};
	server_format_ms(&sv, buf, sizeof buf);
	assert_string_equal(buf, "8.90");
	sv.valid = false;
	server_format_ms(&sv, buf, sizeof buf);
	assert_string_equal(buf, "-");
}

static char *summary_of(const struct server_state *st)
{
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	assert_non_null(f);
	server_print_summary(f, st);
	fclose(f);
	return txt;
}

/* Where interpolation misleads: every TTFT took 10.26 s, in vLLM's
 * (10, 20] bucket, so PromQL's p99 reads 19.9 s, twice the longest
 * request; and E2E with one 500 s outlier has a mean (21.8 s) above its
 * interpolated p99 (20 s). The summary says only what the buckets say. */
static void test_server_quantile_misleads(void **state)
{
	(void)state;
	struct prom_hist t = {.le = {1, 5, 10, 20, 40, INFINITY}, .cum = {0, 0, 0, 100, 100, 100}, .n = 6,
			      .sum = 100 * 10.26, .count = 100};
	struct prom_hist e = {.le = {5, 10, 15, 20, 40, INFINITY}, .cum = {0, 0, 0, 99, 99, 100}, .n = 6,
			      .sum = 99 * 17.0 + 500, .count = 100};
	struct server_state *st = calloc(1, sizeof *st);
	assert_non_null(st);
	server_state_init(st);
	st->status = SERVER_UP;
	st->scrapes = 10;
	snprintf(st->detected, sizeof st->detected, "vllm");
	const struct prom_hist *hs[] = {&t, &e};
	const enum server_latency ls[] = {SRVL_TTFT, SRVL_E2E};
	for (int i = 0; i < 2; i++) {
		struct server_value *p[] = {&st->run_p50[ls[i]], &st->run_p99[ls[i]]};
		const double q[] = {0.5, 0.99};
		for (int k = 0; k < 2; k++) {
			double lo, hi;
			p[k]->v = prom_hist_quantile_bucket(hs[i], q[k], &lo, &hi);
			*p[k] = (struct server_value){.v = p[k]->v, .valid = true, .lo = lo, .hi = hi};
		}
		st->run_mean[ls[i]] = (struct server_value){.v = hs[i]->sum / hs[i]->count, .valid = true};
	}
	/* The premise: interpolated, p99 is above the max and below the mean. */
	assert_true(st->run_p99[SRVL_TTFT].v > 19);
	assert_true(st->run_p99[SRVL_E2E].v < st->run_mean[SRVL_E2E].v);
	char *txt = summary_of(st);
	assert_non_null(strstr(txt, "Server TTFT (ms):                        p50 10-20 s  p99 10-20 s  mean 10260.0\n"));
	assert_non_null(strstr(txt, "Server E2E (ms):                         p50 15-20 s  p99 15-20 s  mean 21830.0\n"));
	assert_null(strstr(txt, "19900"));
	assert_null(strstr(txt, "(10000-20000)"));
	free(txt);
	free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_quantile_misleads),
		cmocka_unit_test(test_fixtures_parse),
		cmocka_unit_test(test_llamacpp),
		cmocka_unit_test(test_vllm),
		cmocka_unit_test(test_vllm_histogram),
		cmocka_unit_test(test_vllm_old),
		cmocka_unit_test(test_sglang),
		cmocka_unit_test(test_sglang_underscore),
		cmocka_unit_test(test_tgi),
		cmocka_unit_test(test_trtllm),
		cmocka_unit_test(test_triton),
		cmocka_unit_test(test_nim_lmdeploy_dcgm),
		cmocka_unit_test(test_openmetrics),
		cmocka_unit_test(test_openmetrics_eof),
		cmocka_unit_test(test_edge),
		cmocka_unit_test(test_types_from_type_lines),
		cmocka_unit_test(test_label_unescape),
		cmocka_unit_test(test_matchers),
		cmocka_unit_test(test_le_parsing),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_too_many_labels_and_nul),
		cmocka_unit_test(test_huge_lines),
		cmocka_unit_test(test_lenient),
		cmocka_unit_test(test_callback_stop),
		cmocka_unit_test(test_hist_delta_quantile),
		cmocka_unit_test(test_hist_quantile_edges),
		cmocka_unit_test(test_parse_float),
		cmocka_unit_test(test_float_matches_strtod),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_server_quantile_display),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
