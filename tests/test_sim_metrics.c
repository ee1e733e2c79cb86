/* The sim's /metrics: every profile parses strictly and carries its
 * server's names (METRICS.md section 2), the values agree with what the
 * clients saw, and the batching engine's gauges move as a loaded vLLM's do:
 * slots fill, the queue grows, KV usage climbs, preemption happens. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/clock.h"
#include "infertop/profile.h"
#include "infertop/prom.h"
#include "sim/sim_internal.h"
#include "simutil.h"

#define MODEL "m-\"quoted\"\\x"

/* From METRICS.md section 2, independent of the sim's own tables. NULL:
 * that server has no such metric, so the sim must not expose one. */
struct expect {
	const char *profile, *path;
	const char *running, *waiting, *kv, *ttft, *e2e, *gen, *prompt, *success;
};

static const struct expect expects[] = {
	{ "vllm", "/metrics", "vllm:num_requests_running", "vllm:num_requests_waiting",
	  "vllm:kv_cache_usage_perc", "vllm:time_to_first_token_seconds",
	  "vllm:e2e_request_latency_seconds", "vllm:generation_tokens_total", "vllm:prompt_tokens_total",
	  "vllm:request_success_total" },
	{ "sglang", "/metrics", "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage",
	  "sglang:time_to_first_token_seconds", "sglang:e2e_request_latency_seconds",
	  "sglang:generation_tokens_total", "sglang:prompt_tokens_total", NULL },
	{ "tgi", "/metrics", "tgi_batch_current_size", "tgi_queue_size", NULL, NULL,
	  "tgi_request_duration", NULL, NULL, "tgi_request_success" },
	{ "llamacpp", "/metrics", "llamacpp:requests_processing", "llamacpp:requests_deferred", NULL,
	  NULL, NULL, "llamacpp:tokens_predicted_total", "llamacpp:prompt_tokens_total", NULL },
	{ "trtllm", "/prometheus/metrics", "trtllm_num_requests_running",
	  "trtllm_num_requests_waiting", "trtllm_kv_cache_utilization",
	  "trtllm_time_to_first_token_seconds", "trtllm_e2e_request_latency_seconds", NULL,
	  "trtllm_prompt_tokens_total", NULL },
	{ "nim", "/v1/metrics", "num_requests_running", "num_requests_waiting", "gpu_cache_usage_perc",
	  "time_to_first_token_seconds", "e2e_request_latency_seconds", "generation_tokens_total",
	  "prompt_tokens_total", "request_success_total" },
	{ "lmdeploy", "/metrics", "lmdeploy:num_requests_running", "lmdeploy:num_requests_waiting",
	  "lmdeploy:gpu_cache_usage_perc", "lmdeploy:time_to_first_token_seconds",
	  "lmdeploy:e2e_request_latency_seconds", "lmdeploy:generation_tokens_total",
	  "lmdeploy:prompt_tokens_total", "lmdeploy:request_success_total" },
	/* triton: its gauges are one labelled family (request_type=...), which
	 * this table cannot say; test_every_profile_simulated covers it. */
};

static const char *const fault_kinds[] = { "500", "429", "disconnect", "malformed", "stall",
					   "slow-headers" };

static int setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int teardown(void **state)
{
	su_teardown(state);
	curl_global_cleanup();
	return 0;
}

static char *scrape(int port, const char *path, size_t *len)
{
	struct su_resp r;
	assert_int_equal(su_request(port, NULL, path, NULL, 5000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	char ct[128];
	assert_int_equal(su_header(&r, "Content-Type", ct, sizeof ct), 0);
	assert_non_null(strstr(ct, "text/plain"));
	assert_non_null(strstr(ct, "version=0.0.4"));
	char *body = r.body;
	*len = r.len;
	free(r.headers);
	return body;
}

static void strict_parse(const char *text, size_t len)
{
	struct prom_error err;
	int n = prom_parse(text, len, 0, NULL, NULL, &err);
	if (n < 0)
		fail_msg("exposition rejected at line %u: %s", err.line, err.msg);
	assert_true(n > 0);
}

static double sum_of(const char *text, size_t len, const char *name, const char *m)
{
	double v = 0;
	int n = prom_sum(text, len, name, m, &v);
	if (n <= 0)
		fail_msg("metric %s{%s} missing", name, m ? m : "");
	return v;
}

static void check_hist(const char *text, size_t len, const char *family, double want_count)
{
	struct prom_hist h;
	assert_int_equal(prom_hist_collect(text, len, family, NULL, &h), 0);
	assert_true(h.n > 1);
	for (int i = 1; i < h.n; i++) {
		assert_true(h.le[i] > h.le[i - 1]);
		assert_true(h.cum[i] >= h.cum[i - 1]);
	}
	assert_true(h.cum[h.n - 1] == h.count);
	assert_true(h.count == want_count);
	assert_true(h.sum > 0);
}

static int find_model_label(void *ud, const struct prom_sample *s)
{
	int *found = ud;
	if (s->name_len != strlen("vllm:num_requests_running") ||
	    memcmp(s->name, "vllm:num_requests_running", s->name_len) != 0)
		return 0;
	const struct prom_label *m = prom_sample_label(s, "model_name");
	const struct prom_label *e = prom_sample_label(s, "engine");
	if (m && e && prom_label_value_eq(m, MODEL) && prom_label_value_eq(e, "0"))
		(*found)++;
	return 0;
}

/* Runs one streaming and one plain request, then checks the profile's
 * exposition on its own path and on /metrics. */
static void check_profile(const struct expect *e)
{
	const char *args[] = { "--profile", e->profile, "--model", MODEL, "--timing", "fixed",
			       "--ttft", "3ms", "--itl", "1ms", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);

	size_t len;
	char *idle = scrape(c.port, e->path, &len);
	strict_parse(idle, len);
	assert_true(sum_of(idle, len, e->running, NULL) == 0);
	assert_true(sum_of(idle, len, e->waiting, NULL) == 0);
	free(idle);

	struct su_resp r;
	long prompt = 0, gen = 0;
	static const char *const bodies[] = {
		"{\"messages\":[{\"role\":\"user\",\"content\":\"one two, three\"}],\"max_tokens\":5,"
		"\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"four\"}],\"max_tokens\":3,"
		"\"ignore_eos\":true}",
	};
	for (int i = 0; i < 2; i++) {
		assert_int_equal(su_request(c.port, NULL, "/v1/chat/completions", bodies[i], 5000, &r),
				 CURLE_OK);
		assert_int_equal(r.status, 200);
		const char *u = strstr(r.body, "\"usage\":");
		assert_non_null(u);
		/* cJSON stops after the object: what follows it does not matter */
		cJSON *j = cJSON_Parse(u + 8);
		assert_non_null(j);
		prompt += cJSON_GetObjectItemCaseSensitive(j, "prompt_tokens")->valueint;
		gen += cJSON_GetObjectItemCaseSensitive(j, "completion_tokens")->valueint;
		cJSON_Delete(j);
		su_resp_free(&r);
	}
	assert_int_equal(prompt, 5);
	assert_int_equal(gen, 8);

	const char *paths[] = { e->path, "/metrics" };
	for (int p = 0; p < 2; p++) {
		char *text = scrape(c.port, paths[p], &len);
		strict_parse(text, len);
		assert_true(sum_of(text, len, e->running, NULL) == 0);
		assert_true(sum_of(text, len, e->waiting, NULL) == 0);
		if (e->kv)
			assert_true(sum_of(text, len, e->kv, NULL) == 0);
		else
			assert_null(strstr(text, "cache_u"));
		if (e->ttft)
			check_hist(text, len, e->ttft, 2);
		if (e->e2e)
			check_hist(text, len, e->e2e, 2);
		if (e->gen)
			assert_true(sum_of(text, len, e->gen, NULL) == (double)gen);
		if (e->prompt)
			assert_true(sum_of(text, len, e->prompt, NULL) == (double)prompt);
		if (e->success)
			assert_true(sum_of(text, len, e->success, NULL) == 2);
		if (strcmp(e->profile, "vllm") == 0) {
			/* labels carry the model name, escaped, and the engine */
			int found = 0;
			assert_true(prom_parse(text, len, 0, find_model_label, &found, NULL) > 0);
			assert_int_equal(found, 1);
		}
		for (size_t k = 0; k < sizeof fault_kinds / sizeof fault_kinds[0]; k++) {
			char m[64];
			snprintf(m, sizeof m, "kind=%s", fault_kinds[k]);
			assert_true(sum_of(text, len, "infertop_sim_faults_total", m) == 0);
		}
		/* no other server's names */
		for (size_t o = 0; o < sizeof expects / sizeof expects[0]; o++) {
			if (&expects[o] != e && strcmp(expects[o].running, e->running) != 0) {
				double v;
				assert_int_equal(prom_sum(text, len, expects[o].running, NULL, &v), 0);
			}
		}
		free(text);
	}
	if (strcmp(e->path, "/metrics") != 0) {
		assert_int_equal(su_request(c.port, NULL, e->path, "{}", 5000, &r), CURLE_OK);
		assert_int_equal(r.status, 405);
		su_resp_free(&r);
	}
	assert_int_equal(su_stop(&c), 0);
}

static void test_profiles(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof expects / sizeof expects[0]; i++)
		check_profile(&expects[i]);
}

struct name_set {
	char names[64][96];
	int types[64];
	int n;
};

static int collect(void *ud, const struct prom_sample *s)
{
	struct name_set *ns = ud;
	for (int i = 0; i < ns->n; i++)
		if (strlen(ns->names[i]) == s->family_len &&
		    memcmp(ns->names[i], s->family, s->family_len) == 0)
			return 0;
	if (ns->n < 64 && s->family_len < 96) {
		memcpy(ns->names[ns->n], s->family, s->family_len);
		ns->names[ns->n][s->family_len] = '\0';
		ns->types[ns->n] = (int)s->type;
		ns->n++;
	}
	return 0;
}

/* The llamacpp profile exposes what the captured llama-server exposes,
 * with the same types. */
static void test_llamacpp_matches_capture(void **state)
{
	(void)state;
	const char *dir = getenv("INFERTOP_FIXTURES");
	char path[1024];
	snprintf(path, sizeof path, "%s/llamacpp/metrics_during.txt", dir ? dir : "tests/fixtures");
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	static char cap[65536];
	size_t clen = fread(cap, 1, sizeof cap, f);
	fclose(f);
	struct name_set want = { .n = 0 }, got = { .n = 0 };
	assert_true(prom_parse(cap, clen, 0, collect, &want, NULL) > 0);

	static const char *const args[] = { "--profile", "llamacpp", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	size_t len;
	char *text = scrape(c.port, "/metrics", &len);
	assert_true(prom_parse(text, len, 0, collect, &got, NULL) > 0);
	for (int i = 0; i < want.n; i++) {
		int found = 0;
		for (int k = 0; k < got.n; k++) {
			if (strcmp(want.names[i], got.names[k]) == 0) {
				assert_int_equal(want.types[i], got.types[k]);
				found = 1;
			}
		}
		if (!found)
			fail_msg("llamacpp profile lacks %s", want.names[i]);
	}
	free(text);
	assert_int_equal(su_stop(&c), 0);
}

struct stage {
	struct su_stream *s;
	int n;
	int roles, heads;
};

/* Tokens of stream s that arrived after time t. */
static int events_after(const struct su_stream *s, int64_t t)
{
	int n = 0;
	for (size_t i = 0; i < s->nev; i++)
		n += s->ev[i].t > t;
	return n;
}

/* Settled: enough streams admitted (role chunk seen), every request taken
 * in (headers seen), and a running stream got two tokens after the last
 * headers, so an engine step ended after every arrival: admission (at step
 * boundaries) has had its chance to run. */
static int reached(void *ud)
{
	struct stage *st = ud;
	int roles = 0, heads = 0;
	int64_t last = 0;
	for (int i = 0; i < st->n; i++) {
		roles += st->s[i].nev > 0;
		heads += st->s[i].t_headers != 0;
		if (st->s[i].t_headers > last)
			last = st->s[i].t_headers;
	}
	return roles >= st->roles && heads >= st->heads && events_after(&st->s[0], last) >= 2;
}

static double gauge(int port, const char *name)
{
	double v = su_metric(port, "/metrics", name, NULL);
	assert_true(v >= 0);
	return v;
}

/* --max-running 8 and 32 concurrent streams: 8 running, 24 waiting. The
 * role chunk goes out at admission and headers at arrival, so the client
 * knows exactly when the state is settled; nothing finishes meanwhile. */
static void test_dynamics(void **state)
{
	(void)state;
	static const char *const args[] = { "--max-running", "8", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	assert_true(gauge(c.port, "vllm:num_requests_running") == 0);
	assert_true(gauge(c.port, "vllm:num_requests_waiting") == 0);
	double kv0 = gauge(c.port, "vllm:kv_cache_usage_perc");

	struct su_multi mm;
	static struct su_stream s[32];
	assert_int_equal(su_multi_init(&mm), 0);
	static const int upto[] = { 4, 8, 32 };
	double kv[3];
	int added = 0;
	for (int stage = 0; stage < 3; stage++) {
		for (; added < upto[stage]; added++) {
			assert_int_equal(su_stream_init(&s[added], c.port, "/v1/chat/completions",
							"{\"messages\":[{\"role\":\"user\",\"content\":"
							"\"a longer prompt of some words\"}],\"max_tokens\":"
							"3000,\"ignore_eos\":true,\"stream\":true}",
							60000),
					 0);
			assert_int_equal(su_multi_add(&mm, &s[added]), 0);
		}
		struct stage st = { s, added, added < 8 ? added : 8, added };
		assert_int_equal(su_multi_until(&mm, reached, &st, 10000), 1);
		double run = gauge(c.port, "vllm:num_requests_running");
		double wait = gauge(c.port, "vllm:num_requests_waiting");
		kv[stage] = gauge(c.port, "vllm:kv_cache_usage_perc");
		printf("# %d streams: running %.0f waiting %.0f kv %.6f\n", added, run, wait, kv[stage]);
		assert_true(run == (added < 8 ? added : 8));
		assert_true(wait == (added < 8 ? 0 : added - 8));
		assert_true(kv[stage] > 0 && kv[stage] <= 1);
	}
	assert_true(kv[0] > kv0);
	assert_true(kv[1] > kv[0]);
	assert_true(kv[2] >= kv[1]);
	su_multi_cleanup(&mm);
	for (int i = 0; i < 32; i++)
		su_stream_free(&s[i]);
	assert_int_equal(su_stop(&c), 0);
}

/* A KV cache too small for the batch: the newest requests are preempted
 * and recomputed, and still every stream delivers every token. */
static void test_preemption(void **state)
{
	(void)state;
	static const char *const args[] = { "--max-running", "8", "--kv-tokens", "150",
					    "--step-time", "2ms", "--step-time-per-seq", "0", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	struct su_multi mm;
	struct su_stream s[8];
	assert_int_equal(su_multi_init(&mm), 0);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(su_stream_init(&s[i], c.port, "/v1/completions",
						"{\"prompt\":\"three word prompt\",\"max_tokens\":40,"
						"\"ignore_eos\":true,\"stream\":true,"
						"\"stream_options\":{\"include_usage\":true}}",
						30000),
				 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	assert_int_equal(su_multi_until(&mm, NULL, NULL, 30000), 0);
	su_multi_cleanup(&mm);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(s[i].rc, CURLE_OK);
		assert_true(su_stream_has_done(&s[i]));
		int tokens = 0;
		for (size_t k = 0; k < s[i].nev; k++)
			tokens += su_is_token_event(s[i].ev[k].data);
		assert_int_equal(tokens, 40);
		assert_non_null(strstr(s[i].ev[s[i].nev - 2].data, "\"completion_tokens\":40"));
		su_stream_free(&s[i]);
	}
	size_t len;
	char *text = scrape(c.port, "/metrics", &len);
	double pre = sum_of(text, len, "vllm:num_preemptions_total", NULL);
	printf("# preemptions: %.0f\n", pre);
	assert_true(pre > 0);
	assert_true(sum_of(text, len, "vllm:generation_tokens_total", NULL) == 320);
	assert_true(sum_of(text, len, "vllm:prompt_tokens_total", NULL) == 24);
	assert_true(sum_of(text, len, "vllm:request_success_total", "finished_reason=length") == 8);
	assert_true(sum_of(text, len, "vllm:kv_cache_usage_perc", NULL) == 0);
	free(text);
	assert_int_equal(su_stop(&c), 0);
}

/* One request at a time on the batching engine: each step takes
 * --step-time + --step-time-per-seq, and a long prompt needs
 * ceil(prompt / (rate x step)) steps of prefill. The server-side
 * histograms hold exactly those values. */
static void test_batching_model(void **state)
{
	(void)state;
	static const char *const args[] = { "--step-time", "4ms", "--step-time-per-seq", "1ms",
					    "--prefill-rate", "20000", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	/* 2000-word prompt: 100 tokens of prefill per 5 ms step, 20 steps */
	size_t cap = 2000 * 2 + 256;
	char *body = malloc(cap);
	assert_non_null(body);
	size_t o = (size_t)snprintf(body, cap, "{\"prompt\":\"");
	for (int i = 0; i < 2000; i++) {
		body[o++] = 'w';
		body[o++] = ' ';
	}
	snprintf(body + o, cap - o, "\",\"max_tokens\":10,\"ignore_eos\":true}");
	struct su_resp r;
	assert_int_equal(su_request(c.port, NULL, "/v1/completions", body, 10000, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
	free(body);
	assert_int_equal(su_request(c.port, NULL, "/v1/completions",
				    "{\"prompt\":\"short\",\"max_tokens\":10,\"ignore_eos\":true}", 10000,
				    &r),
			 CURLE_OK);
	assert_int_equal(r.status, 200);
	su_resp_free(&r);
	size_t len;
	char *text = scrape(c.port, "/metrics", &len);
	double ttft = sum_of(text, len, "vllm:time_to_first_token_seconds_sum", NULL);
	double itl = sum_of(text, len, "vllm:inter_token_latency_seconds_sum", NULL);
	double itl_n = sum_of(text, len, "vllm:inter_token_latency_seconds_count", NULL);
	double q = sum_of(text, len, "vllm:request_queue_time_seconds_sum", NULL);
	printf("# ttft sum %.9f itl sum %.9f (n %.0f) queue sum %.9f\n", ttft, itl, itl_n, q);
	/* 20 steps + 1 step of 5 ms each */
	assert_true(ttft > 0.105 - 1e-9 && ttft < 0.105 + 1e-9);
	assert_true(itl_n == 18);
	assert_true(itl > 18 * 0.005 - 1e-9 && itl < 18 * 0.005 + 1e-9);
	assert_true(q == 0);
	free(text);
	assert_int_equal(su_stop(&c), 0);
}

/* Profiles the simulator cannot imitate, each with its reason; NULL for
 * every other. None today: every server of servers.def is simulated
 * (Triton on the API port, where a real one uses port 8002). A profile
 * that turns out impossible to simulate gets a case here, never a silent
 * skip. */
static const char *not_simulated(int id)
{
	(void)id;
	return NULL;
}

/* Every client profile has a simulator counterpart of the same name and
 * metrics path, whose /metrics the client detects as that profile and
 * reads the running and waiting counts from. Fails for a server added to
 * the client's map but not to the simulator (or the reverse). */
static void test_every_profile_simulated(void **state)
{
	(void)state;
	assert_int_equal(SIM_PROF_COUNT, PROFILE_COUNT);
	for (int id = 0; id < PROFILE_COUNT; id++) {
		const char *why = not_simulated(id);
		if (why) {
			printf("# %s: not simulated: %s\n", profile_name(id), why);
			continue;
		}
		assert_string_equal(sim_profile_name((enum sim_profile)id), profile_name(id));
		assert_string_equal(sim_profile_metrics_path((enum sim_profile)id), profile_metrics_path(id));

		struct sim_server *s = calloc(1, sizeof *s);
		assert_non_null(s);
		s->opt.profile = (enum sim_profile)id;
		s->opt.kv_tokens = 65536;
		s->opt.max_running = 32;
		strcpy(s->model_prom, "m");
		sim_stats_init(&s->st);
		s->nrunning = 3;
		s->nwaiting = 2;
		s->kv_used = 1024;
		s->st.prompt_tokens = 100;
		s->st.gen_tokens = s->st.gen_tokens_finished = 50;
		s->st.success[1] = 4;
		for (int i = 0; i < 4; i++) {
			sim_hist_observe(&s->st.ttft, 0.05);
			sim_hist_observe(&s->st.e2e, 0.5);
			sim_hist_observe(&s->st.queue, 0.01);
			sim_hist_observe(&s->st.tpot, 0.01);
			sim_hist_observe(&s->st.itl, 0.01);
		}
		size_t len;
		char *text = sim_metrics_render(s, &len);
		assert_non_null(text);
		strict_parse(text, len);

		char err[256];
		struct profile_tracker *t =
			profile_tracker_new(PROFILE_AUTO, NULL, 0, 30 * CLOCK_NS_PER_S, CLOCK_NS_PER_S, err, sizeof err);
		assert_non_null(t);
		const struct profile_raw *r = profile_extract(t, text, len, 0, err, sizeof err);
		assert_non_null(r);
		if (r->profile != id)
			fail_msg("the simulator's %s /metrics is detected as %s", profile_name(id),
				 profile_name(r->profile));
		if (!r->slot[PSLOT_RUNNING].valid || r->slot[PSLOT_RUNNING].v != 3)
			fail_msg("%s: running not read from the simulator's /metrics", profile_name(id));
		if (!r->slot[PSLOT_WAITING].valid || r->slot[PSLOT_WAITING].v != 2)
			fail_msg("%s: waiting not read from the simulator's /metrics", profile_name(id));
		profile_tracker_free(t);
		free(text);
		free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_profile_simulated),
		cmocka_unit_test_teardown(test_profiles, su_teardown),
		cmocka_unit_test_teardown(test_llamacpp_matches_capture, su_teardown),
		cmocka_unit_test_teardown(test_dynamics, su_teardown),
		cmocka_unit_test_teardown(test_preemption, su_teardown),
		cmocka_unit_test_teardown(test_batching_model, su_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
