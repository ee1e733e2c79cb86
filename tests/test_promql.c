#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/prom.h"
#include "infertop/promql.h"

/* --metrics-selector: what is accepted, unescaped, and refused with the
 * expected form in the message. */
static void test_selector_parse(void **state)
{
	(void)state;
	struct promql_selector s;
	char err[300];
	assert_int_equal(promql_selector_parse("{namespace=\"x\",job=\"vllm\"}", &s, err, sizeof err), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.m[0].name, "namespace");
	assert_string_equal(s.m[0].op, "=");
	assert_string_equal(s.m[1].value, "vllm");
	assert_int_equal(promql_selector_parse(" { a != 'x\\'y' , b=~\"v.*\", c!~\"q\\\\\\n\", } ", &s, err, sizeof err),
			 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.m[0].op, "!=");
	assert_string_equal(s.m[0].value, "x'y");
	assert_string_equal(s.m[1].op, "=~");
	assert_string_equal(s.m[2].op, "!~");
	assert_string_equal(s.m[2].value, "q\\\n");
	assert_int_equal(promql_selector_parse("{}", &s, err, sizeof err), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(promql_selector_parse(NULL, &s, err, sizeof err), 0);
	assert_int_equal(promql_selector_parse("  ", &s, err, sizeof err), 0);
	static const char *const bad[] = {
		"job=\"x\"", "{job=\"x\"", "{job=x}", "{job==\"x\"}", "{1a=\"x\"}", "{job=\"x\"} extra",
		"{job=\"x\\q\"}", "{__name__=\"up\"}", "{job=\"x\" a=\"b\"}", "{job}", "{job=\"x}", "{,}", "up{job=\"x\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_int_equal(promql_selector_parse(bad[i], &s, err, sizeof err), -1);
		if (!strstr(err, "expected a label selector such as '{namespace=\"x\",job=\"vllm\"}'"))
			fail_msg("%s: %s", bad[i], err);
	}
	char big[2000] = "{";
	for (int i = 0; i < PROMQL_MAX_MATCHERS + 1; i++)
		snprintf(big + strlen(big), sizeof big - strlen(big), "l%d=\"v\",", i);
	strcat(big, "}");
	assert_int_equal(promql_selector_parse(big, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "more than"));
}

static void test_query_build(void **state)
{
	(void)state;
	struct promql_selector s;
	char err[300], q[512];
	const char *names[] = { "vllm:num_requests_running", "vllm:e2e_request_latency_seconds_bucket" };
	assert_int_equal(promql_selector_parse("{ns=\"a\\\"b\", job=~'v.*'}", &s, err, sizeof err), 0);
	assert_int_equal(promql_query_build(&s, names, 2, q, sizeof q), 0);
	assert_string_equal(q, "{__name__=~\"vllm:num_requests_running|vllm:e2e_request_latency_seconds_bucket\","
			       "ns=\"a\\\"b\",job=~\"v.*\"}");
	assert_int_equal(promql_selector_parse(NULL, &s, err, sizeof err), 0);
	assert_int_equal(promql_query_build(&s, names, 1, q, sizeof q), 0);
	assert_string_equal(q, "{__name__=~\"vllm:num_requests_running\"}");
	assert_int_equal(promql_query_build(&s, names, 2, q, 30), -1);
}

struct count {
	int n;
	double sum;
};

static int on_sample(void *ud, const struct prom_sample *s)
{
	struct count *c = ud;
	c->n++;
	c->sum += s->value;
	return 0;
}

/* An answer as Prometheus sends it: one text per instance, by first
 * appearance; the text parses strictly; labels other than __name__ kept. */
static void test_split(void **state)
{
	(void)state;
	static const char body[] =
		"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
		"{\"metric\":{\"__name__\":\"vllm:generation_tokens_total\",\"instance\":\"10.0.0.2:8000\","
		"\"job\":\"vllm\",\"model_name\":\"m \\\"q\\\"\"},\"value\":[1700000000.1,\"120\"]},"
		"{\"metric\":{\"__name__\":\"vllm:generation_tokens_total\",\"instance\":\"10.0.0.1:8000\","
		"\"job\":\"vllm\"},\"value\":[1700000000.1,\"7\"]},"
		"{\"metric\":{\"__name__\":\"vllm:e2e_request_latency_seconds_bucket\",\"instance\":\"10.0.0.2:8000\","
		"\"le\":\"+Inf\"},\"value\":[1700000000.1,\"3\"]},"
		"{\"metric\":{\"__name__\":\"bad name\",\"instance\":\"10.0.0.2:8000\"},\"value\":[1,\"1\"]},"
		"{\"metric\":{\"__name__\":\"x\",\"instance\":\"10.0.0.2:8000\"},\"value\":[1,\"1\\n2\"]},"
		"{\"metric\":{\"__name__\":\"x\",\"instance\":\"10.0.0.3:8000\"},\"value\":[1,\"NaN\"]}"
		"]}}";
	struct promql_split sp;
	char err[300];
	assert_int_equal(promql_vector_split(body, strlen(body), 16, &sp, err, sizeof err), 0);
	assert_int_equal(sp.n, 3);
	assert_int_equal(sp.skipped, 2);
	assert_string_equal(sp.g[0].instance, "10.0.0.2:8000");
	assert_string_equal(sp.g[1].instance, "10.0.0.1:8000");
	assert_int_equal(sp.g[0].nseries, 2);
	assert_string_equal(sp.g[0].text,
			    "vllm:generation_tokens_total{instance=\"10.0.0.2:8000\",job=\"vllm\",model_name=\"m "
			    "\\\"q\\\"\"} 120\n"
			    "vllm:e2e_request_latency_seconds_bucket{instance=\"10.0.0.2:8000\",le=\"+Inf\"} 3\n");
	for (int i = 0; i < sp.n; i++) {
		struct count c = { 0, 0 };
		struct prom_error pe;
		assert_int_equal(prom_parse(sp.g[i].text, sp.g[i].len, 0, on_sample, &c, &pe), sp.g[i].nseries);
	}
	promql_split_free(&sp);
	/* One group only: the rest counted, not kept. */
	assert_int_equal(promql_vector_split(body, strlen(body), 1, &sp, err, sizeof err), 0);
	assert_int_equal(sp.n, 1);
	assert_int_equal(sp.dropped, 2);
	promql_split_free(&sp);
}

static void expect_error(const char *body, const char *msg)
{
	struct promql_split sp;
	char err[300] = "";
	assert_int_equal(promql_vector_split(body, strlen(body), 16, &sp, err, sizeof err), -1);
	if (!strstr(err, msg))
		fail_msg("%s -> %s (wanted %s)", body, err, msg);
	assert_int_equal(sp.n, 0);
	assert_null(sp.g);
}

static void test_split_errors(void **state)
{
	(void)state;
	expect_error("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"invalid parameter \\\"query\\\"\"}",
		     "Prometheus: bad_data: invalid parameter \"query\"");
	expect_error("<html>Grafana</html>", "not a JSON object");
	expect_error("", "not a JSON object");
	expect_error("[1,2]", "not a JSON object");
	expect_error("{\"status\":\"success\"}", "not an instant vector");
	expect_error("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}", "matrix");
	expect_error("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
		     "no series match the selector");
	expect_error("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{}}]}}",
		     "no usable series");
	expect_error("{\"data\":{}}", "no \"status\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selector_parse),
		cmocka_unit_test(test_query_build),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
