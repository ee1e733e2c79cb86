/* Run specs (infertop serve) to argv: both JSON forms, against literal
 * cases, with a fixed option table standing in for cli's. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/cli.h"
#include "infertop/runspec.h"

static int kind(const char *name)
{
	static const char *const vals[] = {"concurrency", "duration", "output-tokens", "header", "rate",
					   "model", "dataset", "output", "api-key-env", "listen", "cacert"};
	static const char *const flags[] = {"no-tui", "insecure", "demo"};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
		if (strcmp(name, vals[i]) == 0)
			return 1;
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
		if (strcmp(name, flags[i]) == 0)
			return 0;
	return -1;
}

/* The argv after argv[0], joined by spaces. */
static const char *joined(const struct runspec *rs)
{
	static char buf[2048];
	buf[0] = '\0';
	for (int i = 1; i < rs->argc; i++) {
		strcat(buf, i > 1 ? " " : "");
		strcat(buf, rs->argv[i]);
	}
	return buf;
}

static const char *ok(const char *body, bool *start_load)
{
	struct runspec rs;
	char field[RUNSPEC_FIELD_MAX], err[RUNSPEC_ERR_MAX];
	int rc = runspec_build(body, strlen(body), kind, &rs, field, err);
	if (rc != 0)
		print_error("refused %s: %s: %s\n", body, field, err);
	assert_int_equal(rc, 0);
	assert_string_equal(rs.argv[0], "infertop");
	assert_null(rs.argv[rs.argc]);
	if (start_load)
		*start_load = rs.start_load;
	const char *j = joined(&rs);
	runspec_free(&rs);
	return j;
}

static const char *bad(const char *body)
{
	static char field[RUNSPEC_FIELD_MAX];
	char err[RUNSPEC_ERR_MAX];
	struct runspec rs;
	assert_int_equal(runspec_build(body, strlen(body), kind, &rs, field, err), -1);
	assert_true(err[0] != '\0');
	assert_null(rs.argv);
	return field;
}

static void test_native(void **state)
{
	(void)state;
	bool sl = true;
	assert_string_equal(ok("{\"url\":\"http://h:8000\",\"concurrency\":64,\"duration\":\"10m\","
			       "\"output-tokens\":256,\"no-tui\":true,\"insecure\":false}",
			       &sl),
			    "--concurrency=64 --duration=10m --output-tokens=256 --no-tui -- http://h:8000");
	assert_false(sl);
	assert_string_equal(ok("{\"rate\":2.5}", NULL), "--rate=2.5");
	assert_string_equal(ok("{\"header\":[\"A: 1\",\"B: 2\"]}", NULL), "--header=A: 1 --header=B: 2");
	/* A value that looks like an option stays a value. */
	assert_string_equal(ok("{\"model\":\"--demo\"}", NULL), "--model=--demo");
	assert_string_equal(ok(" {} \n", NULL), "");
}

static void test_native_refused(void **state)
{
	(void)state;
	assert_string_equal(bad("{\"concurency\":8}"), "concurency");
	assert_string_equal(bad("{\"concurrency\":true}"), "concurrency");
	assert_string_equal(bad("{\"concurrency\":null}"), "concurrency");
	assert_string_equal(bad("{\"concurrency\":{}}"), "concurrency");
	assert_string_equal(bad("{\"no-tui\":1}"), "no-tui");
	assert_string_equal(bad("{\"url\":5}"), "url");
	assert_string_equal(bad("{\"output\":\"/etc/passwd\"}"), "output");
	assert_string_equal(bad("{\"api-key-env\":\"HOME\"}"), "api-key-env");
	assert_string_equal(bad("{\"listen\":\"0.0.0.0:1\"}"), "listen");
	assert_string_equal(bad("{\"demo\":true}"), "demo");
	/* A file read before the run: which files exist must not be
	 * learnt from the answer. serve's own --cacert is every run's. */
	assert_string_equal(bad("{\"cacert\":\"/etc/passwd\"}"), "cacert");
	{
		char f[RUNSPEC_FIELD_MAX], e[RUNSPEC_ERR_MAX];
		struct runspec rs;
		const char *b = "{\"cacert\":\"/nonexistent\"}";
		assert_int_equal(runspec_build(b, strlen(b), kind, &rs, f, e), -1);
		assert_non_null(strstr(e, "infertop serve sets it"));
	}
	assert_string_equal(bad("{\"help\":true}"), "help");
	assert_string_equal(bad("{\"a\\\"b\":1}"), "a?b");
	assert_string_equal(bad("[1]"), "");
	assert_string_equal(bad("{"), "");
	assert_string_equal(bad("{} x"), "");
	assert_string_equal(bad(""), "");
}

static void test_start_load(void **state)
{
	(void)state;
	bool sl = false;
	/* The chart's README payload, as-is. */
	assert_string_equal(ok("{\"host\":\"localhost\",\"port\":8000,\"num_prompts\":1000,\"request_rate\":12,"
			       "\"model\":\"meta-llama/Llama-3.1-405B-Instruct-FP8\",\"backend\":\"openai-chat\","
			       "\"endpoint\":\"/v1/chat/completions\",\"dataset_path\":\"app/sonnet.txt\","
			       "\"dataset_name\":\"sonnet\",\"sonnet_input_len\":512,\"sonnet_prefix_len\":128,"
			       "\"sonnet_output_len\":2}",
			       &sl),
			    "--api=chat --model=meta-llama/Llama-3.1-405B-Instruct-FP8 --requests=1000 --rate=12 "
			    "--dataset=sonnet:app/sonnet.txt --input-tokens=512 --output-tokens=2 --prefix-tokens=128 "
			    "-- http://localhost:8000");
	assert_true(sl);
	/* inf: every prompt at once, a closed loop of num_prompts users. */
	assert_string_equal(ok("{\"host\":\"10.0.0.2\",\"num_prompts\":\"50\",\"request_rate\":\"inf\","
			       "\"backend\":\"openai\",\"dataset_name\":\"random\",\"random_input_len\":64}",
			       NULL),
			    "--api=completions --requests=50 --concurrency=50 --input-tokens=64 -- http://10.0.0.2:8000");
	assert_string_equal(ok("{\"port\":9,\"dataset_name\":\"sharegpt\",\"dataset_path\":\"s.json\"}", NULL),
			    "--dataset=sharegpt:s.json -- http://localhost:9");
	assert_string_equal(ok("{\"host\":\"::1\",\"port\":1}", NULL), "-- http://[::1]:1");
}

static enum cli_result parse(const char *body, struct config *cfg, char *err, char *field);

/* Tags in infertop's own form: an object, or KEY=VALUE strings. */
static void test_native_metadata(void **state)
{
	(void)state;
	struct config cfg;
	char err[256], field[RUNSPEC_FIELD_MAX];
	assert_int_equal(parse("{\"url\":\"http://h:9\",\"metadata\":{\"team\":\"infra\",\"tp\":2}}", &cfg, err, field),
			 CLI_RUN);
	assert_string_equal(cfg.metadata, "{\"team\":\"infra\",\"tp\":2}");
	cli_free(&cfg);
	assert_int_equal(parse("{\"metadata\":[\"a=1\",\"b=2\"]}", &cfg, err, field), CLI_RUN);
	assert_string_equal(cfg.metadata, "{\"a\":\"1\",\"b\":\"2\"}");
	cli_free(&cfg);
	assert_int_equal(parse("{\"metadata\":\"noequals\"}", &cfg, err, field), CLI_EXIT_USAGE);
	assert_string_equal(field, "metadata");
	cli_free(&cfg);
	/* In the /start-load payload too. */
	assert_int_equal(parse("{\"host\":\"h\",\"metadata\":{\"x\":\"y\"},\"label\":\"l\"}", &cfg, err, field),
			 CLI_RUN);
	assert_string_equal(cfg.metadata, "{\"x\":\"y\",\"label\":\"l\"}");
	cli_free(&cfg);
}

static void test_start_load_refused(void **state)
{
	(void)state;
	assert_string_equal(bad("{\"host\":\"h\",\"port\":0}"), "port");
	assert_string_equal(bad("{\"host\":\"h\",\"port\":\"x\"}"), "port");
	assert_string_equal(bad("{\"host\":\"a/b\"}"), "host");
	assert_string_equal(bad("{\"host\":\"h@evil\"}"), "host");
	assert_string_equal(bad("{\"host\":1}"), "host");
	assert_string_equal(bad("{\"backend\":\"tgi\"}"), "backend");
	assert_string_equal(bad("{\"backend\":\"openai\",\"endpoint\":\"/v1/chat/completions\"}"), "endpoint");
	assert_string_equal(bad("{\"endpoint\":\"/x\"}"), "endpoint");
	assert_string_equal(bad("{\"num_prompts\":0}"), "num_prompts");
	assert_string_equal(bad("{\"num_prompts\":1.5}"), "num_prompts");
	assert_string_equal(bad("{\"request_rate\":-1}"), "request_rate");
	assert_string_equal(bad("{\"request_rate\":\"fast\"}"), "request_rate");
	assert_string_equal(bad("{\"dataset_name\":\"sonnet\"}"), "dataset_path");
	assert_string_equal(bad("{\"dataset_name\":\"hf\"}"), "dataset_name");
	assert_string_equal(bad("{\"host\":\"h\",\"sonnet_input_len\":-3,\"dataset_name\":\"sonnet\","
				"\"dataset_path\":\"f\"}"),
			    "sonnet_input_len");
	assert_string_equal(bad("{\"host\":\"h\",\"concurrency\":3}"), "concurrency");
}

/* Through the real option table and parser, as serve does: a bad value
 * comes back as a message naming the option, nothing printed. */
static enum cli_result parse(const char *body, struct config *cfg, char *err, char *field)
{
	struct runspec rs;
	char f[RUNSPEC_FIELD_MAX], e[RUNSPEC_ERR_MAX];
	assert_int_equal(runspec_build(body, strlen(body), cli_option_kind, &rs, f, e), 0);
	enum cli_result r = cli_parse_capture(cfg, rs.argc, rs.argv, err, 256, field, RUNSPEC_FIELD_MAX);
	runspec_free(&rs);
	return r;
}

static void test_with_cli(void **state)
{
	(void)state;
	struct config cfg;
	char err[256], field[RUNSPEC_FIELD_MAX];
	assert_int_equal(parse("{\"url\":\"http://h:9/v1\",\"concurrency\":64,\"duration\":\"10m\","
			       "\"output-tokens\":256,\"no-ignore-eos\":true}",
			       &cfg, err, field),
			 CLI_RUN);
	assert_int_equal(cfg.concurrency, 64);
	assert_int_equal(cfg.duration_ns, 600000000000LL);
	assert_false(cfg.ignore_eos);
	assert_string_equal(cfg.url, "http://h:9");
	cli_free(&cfg);
	assert_int_equal(parse("{\"concurrency\":0}", &cfg, err, field), CLI_EXIT_USAGE);
	assert_string_equal(field, "concurrency");
	assert_non_null(strstr(err, "--concurrency"));
	cli_free(&cfg);
	assert_int_equal(parse("{\"duration\":\"soon\"}", &cfg, err, field), CLI_EXIT_USAGE);
	assert_string_equal(field, "duration");
	cli_free(&cfg);
	assert_int_equal(parse("{\"url\":\"ftp://x\"}", &cfg, err, field), CLI_EXIT_USAGE);
	assert_string_equal(field, "url");
	cli_free(&cfg);
	assert_int_equal(parse("{\"host\":\"h\",\"dataset_name\":\"sonnet\",\"dataset_path\":\"f.txt\","
			       "\"sonnet_input_len\":512,\"sonnet_prefix_len\":128,\"sonnet_output_len\":2,"
			       "\"request_rate\":12,\"num_prompts\":100}",
			       &cfg, err, field),
			 CLI_RUN);
	assert_string_equal(cfg.dataset, "sonnet:f.txt");
	assert_int_equal(cfg.prefix_tokens, 128);
	assert_int_equal(cfg.requests, 100);
	assert_true(cfg.rate == 12.0);
	cli_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native),
		cmocka_unit_test(test_native_refused),
		cmocka_unit_test(test_start_load),
		cmocka_unit_test(test_start_load_refused),
		cmocka_unit_test(test_native_metadata),
		cmocka_unit_test(test_with_cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
