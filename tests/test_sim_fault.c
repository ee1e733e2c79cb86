/* Fault injection: each kind happens at the requested rate, the client
 * sees it for what it is, and /metrics counts exactly what was injected. */
#include "config.h"

#include <math.h>
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
#include "simutil.h"

#define N 200
#define RATE 0.5
#define TOKENS 8
#define CLIENT_TIMEOUT_MS 2500
#define SLOW_MS 1500

enum outcome { NORMAL, FAULTED, UNEXPECTED };

static int count_tokens(const struct su_stream *s)
{
	int t = 0;
	for (size_t i = 0; i < s->nev; i++)
		t += su_is_token_event(s->ev[i].data);
	return t;
}

static int all_json(const struct su_stream *s)
{
	for (size_t i = 0; i < s->nev; i++) {
		if (strcmp(s->ev[i].data, "[DONE]") == 0)
			continue;
		cJSON *j = cJSON_Parse(s->ev[i].data);
		if (!j)
			return 0;
		cJSON_Delete(j);
	}
	return 1;
}

/* A complete, well-formed stream of TOKENS tokens with headers on time. */
static int is_normal(const struct su_stream *s)
{
	return s->rc == CURLE_OK && s->status == 200 && su_stream_has_done(s) && all_json(s) &&
	       count_tokens(s) == TOKENS && !s->framing_error &&
	       (s->t_headers - s->t_sent) < (int64_t)SLOW_MS * CLOCK_NS_PER_MS;
}

static int error_body(const struct su_stream *s, long code)
{
	cJSON *j = cJSON_Parse(s->raw ? s->raw : "");
	const cJSON *e = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
	const cJSON *c = e ? cJSON_GetObjectItemCaseSensitive(e, "code") : NULL;
	const cJSON *m = e ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
	int ok = cJSON_IsNumber(c) && (long)c->valuedouble == code && cJSON_IsString(m);
	cJSON_Delete(j);
	return ok;
}

static enum outcome classify(const char *kind, const struct su_stream *s)
{
	if (is_normal(s))
		return NORMAL;
	if (strcmp(kind, "500") == 0)
		return s->status == 500 && error_body(s, 500) ? FAULTED : UNEXPECTED;
	if (strcmp(kind, "429") == 0)
		return s->status == 429 && error_body(s, 429) && strcmp(s->retry_after, "1") == 0
			       ? FAULTED
			       : UNEXPECTED;
	if (strcmp(kind, "disconnect") == 0)
		/* started (role chunk at least), then cut: no [DONE], transfer error */
		return s->status == 200 && s->rc != CURLE_OK && s->rc != CURLE_OPERATION_TIMEDOUT &&
				       s->nev >= 1 && !su_stream_has_done(s) && count_tokens(s) < TOKENS
			       ? FAULTED
			       : UNEXPECTED;
	if (strcmp(kind, "malformed") == 0) {
		if (s->rc != CURLE_OK || s->status != 200 || !su_stream_has_done(s) || s->framing_error)
			return UNEXPECTED;
		int bad = 0;
		for (size_t i = 0; i < s->nev; i++) {
			cJSON *j = cJSON_Parse(s->ev[i].data);
			bad += !j && strcmp(s->ev[i].data, "[DONE]") != 0;
			cJSON_Delete(j);
		}
		/* one broken chunk; it still stood for a token */
		return bad == 1 && count_tokens(s) == TOKENS - 1 ? FAULTED : UNEXPECTED;
	}
	if (strcmp(kind, "stall") == 0)
		return s->status == 200 && s->rc == CURLE_OPERATION_TIMEDOUT && s->nev >= 2 &&
				       !su_stream_has_done(s) && count_tokens(s) < TOKENS
			       ? FAULTED
			       : UNEXPECTED;
	if (strcmp(kind, "slow-headers") == 0)
		return s->rc == CURLE_OK && s->status == 200 && su_stream_has_done(s) &&
				       count_tokens(s) == TOKENS &&
				       s->t_headers - s->t_sent >= (int64_t)SLOW_MS * CLOCK_NS_PER_MS
			       ? FAULTED
			       : UNEXPECTED;
	return UNEXPECTED;
}

static void check_kind(const char *kind)
{
	char rate[16];
	snprintf(rate, sizeof rate, "%g", RATE);
	const char *args[] = { "--timing", "fixed", "--ttft", "1ms", "--itl", "1ms", "--fail-rate", rate,
			       "--fail-kinds", kind, "--seed", "12345", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	struct su_multi mm;
	static struct su_stream s[N];
	assert_int_equal(su_multi_init(&mm), 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(su_stream_init(&s[i], c.port, "/v1/chat/completions",
						"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
						"\"max_tokens\":8,\"ignore_eos\":true,\"stream\":true,"
						"\"stream_options\":{\"include_usage\":true}}",
						strcmp(kind, "stall") == 0 ? CLIENT_TIMEOUT_MS : 20000),
				 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	assert_int_equal(su_multi_until(&mm, NULL, NULL, 30000), 0);
	su_multi_cleanup(&mm);
	int faulted = 0;
	for (int i = 0; i < N; i++) {
		enum outcome o = classify(kind, &s[i]);
		if (o == UNEXPECTED)
			fail_msg("%s: request %d: status %ld, curl %d, %zu events, done %d, headers after %.0f ms",
				 kind, i, s[i].status, (int)s[i].rc, s[i].nev, su_stream_has_done(&s[i]),
				 (double)(s[i].t_headers - s[i].t_sent) / 1e6);
		faulted += o == FAULTED;
		su_stream_free(&s[i]);
	}
	double sigma = sqrt(N * RATE * (1 - RATE));
	printf("# %-12s %d of %d faulted (expected %.0f +- %.1f at 4 sigma)\n", kind, faulted, N, N * RATE,
	       4 * sigma);
	assert_true(fabs(faulted - N * RATE) <= 4 * sigma);
	char m[64];
	snprintf(m, sizeof m, "kind=%s", kind);
	assert_true(su_metric(c.port, "/metrics", "infertop_sim_faults_total", m) == faulted);
	assert_true(su_metric(c.port, "/metrics", "infertop_sim_faults_total", NULL) == faulted);
	assert_int_equal(su_stop(&c), 0);
}

static void test_fault_500(void **state)
{
	(void)state;
	check_kind("500");
}

static void test_fault_429(void **state)
{
	(void)state;
	check_kind("429");
}

static void test_fault_disconnect(void **state)
{
	(void)state;
	check_kind("disconnect");
}

static void test_fault_malformed(void **state)
{
	(void)state;
	check_kind("malformed");
}

static void test_fault_stall(void **state)
{
	(void)state;
	check_kind("stall");
}

static void test_fault_slow_headers(void **state)
{
	(void)state;
	check_kind("slow-headers");
}

/* Every request faulted, kinds drawn from the whole list, answers not
 * streamed: each kind still shows, and the counts add up. */
static void test_faults_non_streaming(void **state)
{
	(void)state;
	static const char *const args[] = { "--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
					    "--fail-rate", "1", "--seed", "3", NULL };
	struct sim_child c;
	assert_int_equal(su_spawn(args, &c), 0);
	enum { M = 36 };
	struct su_multi mm;
	static struct su_stream s[M];
	assert_int_equal(su_multi_init(&mm), 0);
	for (int i = 0; i < M; i++) {
		assert_int_equal(su_stream_init(&s[i], c.port, "/v1/completions",
						"{\"prompt\":\"x\",\"max_tokens\":8,\"ignore_eos\":true}",
						3000),
				 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	assert_int_equal(su_multi_until(&mm, NULL, NULL, 30000), 0);
	su_multi_cleanup(&mm);
	int seen[6] = { 0 };
	for (int i = 0; i < M; i++) {
		struct su_stream *x = &s[i];
		cJSON *j = x->raw ? cJSON_Parse(x->raw) : NULL;
		int64_t hdr_ms = x->t_headers ? (x->t_headers - x->t_sent) / CLOCK_NS_PER_MS : -1;
		if (x->status == 500 && j)
			seen[0]++;
		else if (x->status == 429 && strcmp(x->retry_after, "1") == 0 && j)
			seen[1]++;
		else if (x->rc == CURLE_GOT_NOTHING)
			seen[2]++;
		else if (x->rc == CURLE_OK && x->status == 200 && !j)
			seen[3]++;
		else if (x->rc == CURLE_OPERATION_TIMEDOUT && x->status == 0)
			seen[4]++;
		else if (x->rc == CURLE_OK && x->status == 200 && j && hdr_ms >= SLOW_MS)
			seen[5]++;
		else
			fail_msg("request %d: status %ld curl %d body %.80s", i, x->status, (int)x->rc,
				 x->raw ? x->raw : "");
		cJSON_Delete(j);
		su_stream_free(x);
	}
	static const char *const kinds[] = { "500", "429", "disconnect", "malformed", "stall",
					     "slow-headers" };
	for (int k = 0; k < 6; k++) {
		char m[64];
		snprintf(m, sizeof m, "kind=%s", kinds[k]);
		printf("# non-streaming %-12s %d\n", kinds[k], seen[k]);
		assert_true(seen[k] > 0);
		assert_true(su_metric(c.port, "/metrics", "infertop_sim_faults_total", m) == seen[k]);
	}
	assert_int_equal(su_stop(&c), 0);
}

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_fault_500, su_teardown),
		cmocka_unit_test_teardown(test_fault_429, su_teardown),
		cmocka_unit_test_teardown(test_fault_disconnect, su_teardown),
		cmocka_unit_test_teardown(test_fault_malformed, su_teardown),
		cmocka_unit_test_teardown(test_fault_stall, su_teardown),
		cmocka_unit_test_teardown(test_fault_slow_headers, su_teardown),
		cmocka_unit_test_teardown(test_faults_non_streaming, su_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
