/* vLLM's benchmark arguments as infertop options (vllm_args.h): the
 * payload's keys and a command line's words, mapped, ignored with a
 * reason, or refused; and every row through the real option parser. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/cli.h"
#include "infertop/vllm_args.h"

/* The options joined by spaces, then " URL". */
static const char *joined(const struct vllm_args *a)
{
	static char buf[4096];
	buf[0] = '\0';
	for (int i = 0; i < a->argc; i++) {
		strcat(buf, a->argv[i]);
		strcat(buf, " ");
	}
	strcat(buf, a->url);
	return buf;
}

static const char *from_json(const char *text, char *ignored, size_t cap)
{
	cJSON *o = cJSON_Parse(text);
	assert_non_null(o);
	struct vllm_args a;
	char field[VLLM_FIELD_MAX], err[1024];
	int rc = vllm_args_from_json(o, &a, field, err, sizeof err);
	cJSON_Delete(o);
	if (rc != 0)
		print_error("refused %s: %s: %s\n", text, field, err);
	assert_int_equal(rc, 0);
	if (ignored) {
		char *t = a.ignored ? cJSON_PrintUnformatted(a.ignored) : NULL;
		snprintf(ignored, cap, "%s", t ? t : "");
		free(t);
	}
	const char *j = joined(&a);
	vllm_args_free(&a);
	return j;
}

static const char *from_line(const char *line)
{
	struct vllm_args a;
	char field[VLLM_FIELD_MAX], err[1024];
	int rc = vllm_args_from_line(line, &a, field, err, sizeof err);
	if (rc != 0)
		print_error("refused %s: %s: %s\n", line, field, err);
	assert_int_equal(rc, 0);
	const char *j = joined(&a);
	vllm_args_free(&a);
	return j;
}

/* The refusal: the field, and the message in err. */
static const char *refused_json(const char *text, char *err, size_t cap)
{
	static char field[VLLM_FIELD_MAX];
	cJSON *o = cJSON_Parse(text);
	struct vllm_args a;
	assert_int_equal(vllm_args_from_json(o, &a, field, err, cap), -1);
	cJSON_Delete(o);
	assert_null(a.argv);
	return field;
}

static void test_mapped(void **state)
{
	(void)state;
	char ign[1024];
	/* The chart's keys and the ones beyond them, each to its option. */
	assert_string_equal(
		from_json("{\"host\":\"h\",\"port\":9000,\"backend\":\"vllm\",\"model\":\"m\",\"num_prompts\":200,"
			  "\"request_rate\":4,\"max_concurrency\":16,\"burstiness\":0.5,\"seed\":7,"
			  "\"ignore_eos\":false,\"goodput\":[\"ttft:500\",\"e2el:2000\"],\"temperature\":0.2,"
			  "\"top_p\":0.9,\"logprobs\":2,\"random_input_len\":100,\"random_output_len\":20,"
			  "\"random_range_ratio\":0.5,\"random_prefix_len\":10,\"metadata\":[\"tp=2\"],\"label\":\"x\"}",
			  ign, sizeof ign),
		"--api=completions --model=m --requests=200 --rate=4 --max-concurrency=16 --burstiness=0.5 "
		"--input-tokens=50:150 --output-tokens=10:30 --prefix-tokens=10 --seed=7 --no-ignore-eos "
		"--temperature=0.2 --extra-body={\"logprobs\":2,\"top_p\":0.9} --slo=ttft=500ms,e2e=2000ms "
		"--metadata=tp=2 --metadata=label=x http://h:9000");
	assert_string_equal(ign, "");
	/* base_url names the server; served_model_name is the name sent. */
	assert_string_equal(from_json("{\"base_url\":\"http://g:1/v1\",\"host\":\"x\",\"model\":\"path/m\","
				      "\"served_model_name\":\"m\",\"lora_modules\":[\"a\",\"b\"]}",
				      ign, sizeof ign),
			    "--model=m --models=a,b http://g:1/v1");
	assert_string_equal(ign, "{\"host\":\"base_url names the server\"}");
	/* inf: a closed loop of num_prompts users, max_concurrency of them
	 * when fewer; burstiness does nothing there. */
	assert_string_equal(from_json("{\"num_prompts\":100,\"max_concurrency\":8,\"burstiness\":2}", ign, sizeof ign),
			    "--requests=100 --concurrency=8 http://localhost:8000");
	assert_string_equal(ign, "{\"burstiness\":\"applies to a finite request_rate only\"}");
	/* vllm bench serve's keys: general lengths, extra_body under the
	 * sampling keys, chat_template_kwargs, headers, insecure. */
	assert_string_equal(from_json("{\"input_len\":30,\"output_len\":5,\"random_input_len\":99,"
				      "\"extra_body\":{\"top_k\":1,\"a\":true},\"top_k\":3,"
				      "\"chat_template_kwargs\":{\"thinking\":false},\"header\":[\"X-A=b=c\"],"
				      "\"insecure\":true,\"ramp_up_strategy\":\"linear\"}",
				      ign, sizeof ign),
			    "--input-tokens=30 --output-tokens=5 --extra-body={\"a\":true,"
			    "\"chat_template_kwargs\":{\"thinking\":false},\"top_k\":3} --insecure --header=X-A: b=c "
			    "http://localhost:8000");
	assert_non_null(strstr(ign, "ramp_up_strategy"));
	assert_string_equal(from_json("{\"dataset_name\":\"sharegpt\",\"dataset_path\":\"f\",\"input_len\":3,"
				      "\"output_len\":4}",
				      ign, sizeof ign),
			    "--dataset=sharegpt:f --output-tokens=4 http://localhost:8000");
	assert_string_equal(ign, "{\"input_len\":\"applies to dataset_name random\"}");
	/* metadata as an object. */
	assert_string_equal(from_json("{\"metadata\":{\"a\":\"1\"}}", NULL, 0),
			    "--metadata-json={\"a\":\"1\"} http://localhost:8000");
}

static void test_ignored(void **state)
{
	(void)state;
	char ign[2048];
	from_json("{\"host\":\"h\",\"tokenizer\":\"t\",\"save_result\":true,\"result_dir\":\"/tmp\","
		  "\"percentile_metrics\":\"ttft\",\"metric_percentiles\":\"99\",\"sonnet_input_len\":5,"
		  "\"disable_tqdm\":true}",
		  ign, sizeof ign);
	cJSON *o = cJSON_Parse(ign);
	assert_non_null(o);
	const char *want[] = {"tokenizer", "save_result", "result_dir", "percentile_metrics", "metric_percentiles",
			      "sonnet_input_len", "disable_tqdm"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, want[i]);
		if (!cJSON_IsString(w) || !*w->valuestring)
			print_error("%s not reported as ignored in %s\n", want[i], ign);
		assert_true(cJSON_IsString(w));
	}
	assert_null(cJSON_GetObjectItemCaseSensitive(o, "host"));
	cJSON_Delete(o);
}

static void test_refused(void **state)
{
	(void)state;
	char err[1024];
	/* Unknown keys: every one named, and the accepted list. */
	assert_string_equal(refused_json("{\"host\":\"h\",\"concurency\":3,\"bogus\":1}", err, sizeof err),
			    "concurency");
	assert_non_null(strstr(err, "unknown fields concurency, bogus"));
	assert_non_null(strstr(err, "accepted: backend, base_url"));
	assert_non_null(strstr(err, "max_concurrency"));
	assert_string_equal(refused_json("{\"goodput\":[\"ttft=5\"]}", err, sizeof err), "goodput");
	assert_string_equal(refused_json("{\"goodput\":\"itl:5\"}", err, sizeof err), "goodput");
	assert_string_equal(refused_json("{\"max_concurrency\":0}", err, sizeof err), "max_concurrency");
	assert_string_equal(refused_json("{\"request_rate\":2,\"burstiness\":-1}", err, sizeof err), "burstiness");
	assert_string_equal(refused_json("{\"random_range_ratio\":1}", err, sizeof err), "random_range_ratio");
	assert_string_equal(refused_json("{\"ignore_eos\":\"maybe\"}", err, sizeof err), "ignore_eos");
	assert_string_equal(refused_json("{\"top_k\":\"many\"}", err, sizeof err), "top_k");
	assert_string_equal(refused_json("{\"lora_modules\":[1]}", err, sizeof err), "lora_modules");
	assert_string_equal(refused_json("{\"dataset_name\":\"hf\"}", err, sizeof err), "dataset_name");
}

static void test_line(void **state)
{
	(void)state;
	/* Both spellings, = or a word, flags, nargs lists, quotes. */
	assert_string_equal(from_line("--backend vllm --model 'my model' --request-rate 4 --num_prompts=200 "
				      "--ignore-eos --goodput ttft:500 tpot:50 --max-concurrency 3 --seed 1 "
				      "--metadata a=1 b=\"two words\" --tokenizer t --save-result --port 9"),
			    "--api=completions --model=my model --requests=200 --rate=4 --max-concurrency=3 --seed=1 "
			    "--slo=ttft=500ms,tpot=50ms --metadata=a=1 --metadata=b=two words http://localhost:9");
	struct vllm_args a;
	char field[VLLM_FIELD_MAX], err[1024];
	assert_int_equal(vllm_args_from_line("--model m --frobnicate 3 --request-rate 2 --bogus-flag", &a, field, err,
					     sizeof err),
			 -1);
	assert_string_equal(field, "frobnicate");
	assert_non_null(strstr(err, "unknown fields frobnicate, bogus_flag"));
	assert_int_equal(vllm_args_from_line("--model", &a, field, err, sizeof err), -1);
	assert_string_equal(field, "model");
	assert_int_equal(vllm_args_from_line("model m", &a, field, err, sizeof err), -1);
	assert_int_equal(vllm_args_from_line("--model 'm", &a, field, err, sizeof err), -1);
	assert_non_null(strstr(err, "quote"));
}

/* Every mapped row lands in a real option: a payload with all of them
 * goes through cli_parse as it is. */
static void test_through_cli(void **state)
{
	(void)state;
	struct vllm_args a;
	char field[VLLM_FIELD_MAX], err[1024];
	assert_int_equal(vllm_args_from_line("--backend openai-chat --endpoint /v1/chat/completions --host 127.0.0.1 "
					     "--port 8001 --model m --num-prompts 50 --request-rate 3 "
					     "--max-concurrency 4 --burstiness 0.7 --seed 3 --temperature 0 "
					     "--top-k 5 --goodput ttft:100 --random-input-len 64 --random-output-len 8 "
					     "--lora-modules l1 l2 --header X-A=1 --insecure --output-len 3 "
					     "--extra-body '{\"a\":1}' --frequency-penalty 0.5",
					     &a, field, err, sizeof err),
			 0);
	char *argv[64];
	int argc = 0;
	argv[argc++] = "infertop";
	for (int i = 0; i < a.argc; i++)
		argv[argc++] = a.argv[i];
	argv[argc++] = a.url;
	argv[argc] = NULL;
	struct config cfg;
	char cerr[512], cfield[64];
	enum cli_result r = cli_parse_capture(&cfg, argc, argv, cerr, sizeof cerr, cfield, sizeof cfield);
	if (r != CLI_RUN)
		print_error("%s: %s\n", cfield, cerr);
	assert_int_equal(r, CLI_RUN);
	assert_int_equal(cfg.requests, 50);
	assert_true(cfg.rate == 3.0);
	assert_int_equal(cfg.max_concurrency, 4);
	assert_true(cfg.burstiness == 0.7);
	assert_int_equal(cfg.input_tokens, 64);
	assert_string_equal(cfg.models, "l1,l2");
	assert_string_equal(cfg.slo, "ttft=100ms");
	assert_string_equal(cfg.url, "http://127.0.0.1:8001");
	assert_int_equal(cfg.nheaders, 1);
	assert_string_equal(cfg.headers[0], "X-A: 1");
	assert_true(cfg.insecure);
	assert_int_equal(cfg.output_tokens, 3);
	assert_string_equal(cfg.extra_body, "{\"a\":1,\"top_k\":5,\"frequency_penalty\":0.5}");
	cli_free(&cfg);
	vllm_args_free(&a);
}

/* The table: each key once, known; an ignored key has its reason and no
 * option, a mapped one its option and no reason; every ignored key given
 * alone is reported, with that reason. */
static void test_table(void **state)
{
	(void)state;
	const char *key, *option, *why;
	int n = 0;
	for (int i = 0; vllm_args_row(i, &key, &option, &why) == 0; i++, n++) {
		assert_true(vllm_args_known(key));
		const char *k2, *o2, *w2;
		for (int j = 0; j < i; j++) {
			assert_int_equal(vllm_args_row(j, &k2, &o2, &w2), 0);
			assert_string_not_equal(key, k2);
		}
		assert_true(why ? !*option && *why : *option != '\0');
		if (!why)
			continue;
		char body[128], ign[512], want[400];
		snprintf(body, sizeof body, "{\"%s\":\"x\"}", key);
		from_json(body, ign, sizeof ign);
		snprintf(want, sizeof want, "{\"%s\":\"%s\"}", key, why);
		assert_string_equal(ign, want);
	}
	assert_true(n > 40);
	assert_int_equal(vllm_args_row(n, &key, &option, &why), -1);
	assert_false(vllm_args_known("concurrency"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mapped),      cmocka_unit_test(test_ignored),
		cmocka_unit_test(test_refused),     cmocka_unit_test(test_line),
		cmocka_unit_test(test_through_cli), cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
