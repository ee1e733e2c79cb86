/* vLLM's benchmark arguments as infertop options: see vllm_args.h. */
#include "config.h"

#include "infertop/vllm_args.h"
#include "infertop/redact.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum vllm_shape { VS_VALUE, VS_FLAG, VS_LIST };

struct vllm_row {
	const char *key;        /* vLLM's dest name: --request-rate is request_rate */
	enum vllm_shape shape;  /* a value, a store_true flag, or nargs (a list) */
	const char *option;     /* the infertop option it becomes ("" when ignored) */
	const char *why;        /* NULL: applies; else why it is accepted and ignored */
};

#define NO_TOKENIZER "infertop counts tokens from the server's usage and needs no tokenizer"
#define OWN_RESULT "infertop writes its own result (-o FILE, or infertop serve's --results-dir)"
#define HF_ONLY "applies to dataset_name hf, which infertop does not read"

/* Every argument of benchmarks/benchmark_serving.py (and of its successor
 * vllm bench serve where they agree), read from the vLLM sources. The
 * mapping itself is vllm_args_from_json's; this is the list it checks
 * keys against, that the errors and the man page list. */
static const struct vllm_row rows[] = {
	{ "backend", VS_VALUE, "--api", NULL },
	{ "base_url", VS_VALUE, "URL", NULL },
	{ "host", VS_VALUE, "URL", NULL },
	{ "port", VS_VALUE, "URL", NULL },
	{ "endpoint", VS_VALUE, "--api", NULL },
	{ "dataset_name", VS_VALUE, "--dataset", NULL },
	{ "dataset_path", VS_VALUE, "--dataset", NULL },
	{ "max_concurrency", VS_VALUE, "--max-concurrency (--concurrency when request_rate is inf)", NULL },
	{ "model", VS_VALUE, "--model", NULL },
	{ "served_model_name", VS_VALUE, "--model", NULL },
	{ "lora_modules", VS_LIST, "--models", NULL },
	{ "num_prompts", VS_VALUE, "--requests", NULL },
	{ "request_rate", VS_VALUE, "--rate (inf: --concurrency)", NULL },
	{ "burstiness", VS_VALUE, "--burstiness", NULL },
	{ "seed", VS_VALUE, "--seed", NULL },
	{ "ignore_eos", VS_FLAG, "--no-ignore-eos when false (infertop ignores EOS by default)", NULL },
	{ "goodput", VS_LIST, "--slo", NULL },
	{ "metadata", VS_LIST, "--metadata", NULL },
	{ "label", VS_VALUE, "--metadata label=", NULL },
	{ "temperature", VS_VALUE, "--temperature", NULL },
	{ "logprobs", VS_VALUE, "--extra-body", NULL },
	{ "top_p", VS_VALUE, "--extra-body", NULL },
	{ "top_k", VS_VALUE, "--extra-body", NULL },
	{ "min_p", VS_VALUE, "--extra-body", NULL },
	{ "frequency_penalty", VS_VALUE, "--extra-body", NULL },
	{ "presence_penalty", VS_VALUE, "--extra-body", NULL },
	{ "repetition_penalty", VS_VALUE, "--extra-body", NULL },
	{ "extra_body", VS_VALUE, "--extra-body", NULL },
	{ "chat_template_kwargs", VS_VALUE, "--extra-body", NULL },
	{ "header", VS_LIST, "--header", NULL },
	{ "insecure", VS_FLAG, "--insecure", NULL },
	{ "input_len", VS_VALUE, "--input-tokens (dataset_name random)", NULL },
	{ "output_len", VS_VALUE, "--output-tokens (random, sharegpt)", NULL },
	{ "sonnet_input_len", VS_VALUE, "--input-tokens", NULL },
	{ "sonnet_output_len", VS_VALUE, "--output-tokens", NULL },
	{ "sonnet_prefix_len", VS_VALUE, "--prefix-tokens", NULL },
	{ "sharegpt_output_len", VS_VALUE, "--output-tokens", NULL },
	{ "random_input_len", VS_VALUE, "--input-tokens", NULL },
	{ "random_output_len", VS_VALUE, "--output-tokens", NULL },
	{ "random_prefix_len", VS_VALUE, "--prefix-tokens", NULL },
	{ "random_range_ratio", VS_VALUE, "--input-tokens/--output-tokens MIN:MAX", NULL },
	{ "tokenizer", VS_VALUE, "", NO_TOKENIZER },
	{ "tokenizer_mode", VS_VALUE, "", NO_TOKENIZER },
	{ "trust_remote_code", VS_FLAG, "", NO_TOKENIZER },
	{ "use_beam_search", VS_FLAG, "", "beam search is not requested" },
	{ "disable_tqdm", VS_FLAG, "", "there is no progress bar to turn off (--quiet, --no-tui)" },
	{ "profile", VS_FLAG, "", "infertop does not drive the server's torch profiler" },
	{ "save_result", VS_FLAG, "", OWN_RESULT },
	{ "save_detailed", VS_FLAG, "", "per-request arrays come with infertop's --save-detailed and -o" },
	{ "append_result", VS_FLAG, "", OWN_RESULT },
	{ "result_dir", VS_VALUE, "", OWN_RESULT },
	{ "result_filename", VS_VALUE, "", OWN_RESULT },
	{ "percentile_metrics", VS_VALUE, "", "the result carries every metric with its fixed percentiles" },
	{ "metric_percentiles", VS_VALUE, "", "the result carries every metric with its fixed percentiles" },
	{ "hf_subset", VS_VALUE, "", HF_ONLY },
	{ "hf_split", VS_VALUE, "", HF_ONLY },
	{ "hf_output_len", VS_VALUE, "", HF_ONLY },
	{ "skip_tokenizer_init", VS_FLAG, "", NO_TOKENIZER },
	{ "request_id_prefix", VS_VALUE, "", "infertop sends no request ids of its own" },
	{ "ready_check_timeout_sec", VS_VALUE, "", "infertop checks GET /v1/models before every run" },
	{ "lora_assignment", VS_VALUE, "", "infertop spreads requests over --models evenly (--traffic-split)" },
	{ "ramp_up_strategy", VS_VALUE, "", "no rate ramp from vLLM's arguments: use infertop's --stages" },
	{ "ramp_up_start_rps", VS_VALUE, "", "no rate ramp from vLLM's arguments: use infertop's --stages" },
	{ "ramp_up_end_rps", VS_VALUE, "", "no rate ramp from vLLM's arguments: use infertop's --stages" },
	{ "self_timed", VS_FLAG, "", "applies to dataset_name timed_trace (infertop's --trace replays traces)" },
	{ "plot_timeline", VS_FLAG, "", "infertop report and the dashboard draw the run" },
	{ "timeline_itl_thresholds", VS_VALUE, "", "infertop report and the dashboard draw the run" },
	{ "plot_dataset_stats", VS_FLAG, "", "infertop report and the dashboard draw the run" },
};
#define NROWS (sizeof rows / sizeof rows[0])

static const struct vllm_row *row_of(const char *key)
{
	for (size_t i = 0; i < NROWS; i++)
		if (strcmp(rows[i].key, key) == 0)
			return &rows[i];
	return NULL;
}

bool vllm_args_known(const char *key)
{
	return row_of(key) != NULL;
}

int vllm_args_row(int i, const char **key, const char **option, const char **ignored_why)
{
	if (i < 0 || (size_t)i >= NROWS)
		return -1;
	*key = rows[i].key;
	*option = rows[i].option;
	*ignored_why = rows[i].why;
	return 0;
}

static int refuse(char field[VLLM_FIELD_MAX], const char *name, char *err, size_t errcap, const char *fmt,
		  const char *arg)
{
	/* A field name comes from the client: cut, printable ASCII only, so
	 * it cannot break the JSON answer or a terminal. */
	size_t n = 0;
	for (const char *p = name; *p && n < VLLM_FIELD_MAX - 1; p++)
		field[n++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	field[n] = '\0';
	snprintf(err, errcap, fmt, arg ? arg : "");
	return -1;
}

static int push(struct vllm_args *a, const char *opt, const char *val)
{
	size_t n = strlen(opt) + (val ? strlen(val) : 0) + 1;
	char *s = malloc(n);
	char **v = realloc(a->argv, ((size_t)a->argc + 2) * sizeof *v);
	if (v)
		a->argv = v;
	if (!s || !v) {
		free(s);
		return -1;
	}
	snprintf(s, n, "%s%s", opt, val ? val : "");
	v[a->argc++] = s;
	v[a->argc] = NULL;
	return 0;
}

/* A number as an option value: whole numbers without a fraction. */
static void number_text(double d, char *buf, size_t cap)
{
	if (d == floor(d) && fabs(d) < 1e15) {
		snprintf(buf, cap, "%lld", (long long)d);
		return;
	}
	/* The shortest of 15 and 17 digits that reads back the same: 0.2,
	 * not 0.20000000000000001. */
	snprintf(buf, cap, "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, cap, "%.17g", d);
}

/* A number from a number or a numeric string (the chart's values come
 * from YAML, a command line's are words). */
static int get_double(const cJSON *v, double *out)
{
	if (cJSON_IsNumber(v)) {
		*out = v->valuedouble;
	} else if (cJSON_IsString(v) && *v->valuestring) {
		char *end;
		*out = strtod(v->valuestring, &end);
		if (*end)
			return -1;
	} else {
		return -1;
	}
	return isfinite(*out) ? 0 : -1;
}

static int get_long(const cJSON *v, long lo, long hi, long *out)
{
	double d;
	if (get_double(v, &d) != 0 || d != floor(d) || d < (double)lo || d > (double)hi)
		return -1;
	*out = (long)d;
	return 0;
}

static int push_long(struct vllm_args *a, const char *opt, long v)
{
	char num[32];
	snprintf(num, sizeof num, "%ld", v);
	return push(a, opt, num);
}

static const cJSON *item(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* A string key: NULL when absent, *bad when not a string. */
static const char *get_string(const cJSON *o, const char *key, bool *bad)
{
	const cJSON *v = item(o, key);
	if (v && !cJSON_IsString(v))
		*bad = true;
	return v && cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A flag: true, false, or their strings. */
static int get_flag(const cJSON *v, bool *out)
{
	if (cJSON_IsBool(v)) {
		*out = cJSON_IsTrue(v);
		return 0;
	}
	if (cJSON_IsString(v) && (strcmp(v->valuestring, "true") == 0 || strcmp(v->valuestring, "false") == 0)) {
		*out = v->valuestring[0] == 't';
		return 0;
	}
	return -1;
}

static int ignore(struct vllm_args *a, const char *key, const char *why)
{
	if (!a->ignored && !(a->ignored = cJSON_CreateObject()))
		return -1;
	cJSON_DeleteItemFromObjectCaseSensitive(a->ignored, key);
	return cJSON_AddStringToObject(a->ignored, key, why) ? 0 : -1;
}

/* "unknown field(s) a, b; accepted: ..." */
static int refuse_unknown(const cJSON *obj, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	size_t n = 0;
	const char *first = NULL;
	int w = snprintf(err, errcap, "unknown field");
	n = w > 0 ? (size_t)w : 0;
	int count = 0;
	for (const cJSON *it = obj->child; it; it = it->next)
		count += !row_of(it->string);
	if (count > 1 && n + 1 < errcap)
		err[n++] = 's', err[n] = '\0';
	for (const cJSON *it = obj->child; it && n < errcap; it = it->next) {
		if (row_of(it->string))
			continue;
		/* Printable, short: the name comes from the client. */
		char shown[VLLM_FIELD_MAX];
		size_t k = 0;
		for (const char *p = it->string; *p && k < sizeof shown - 1; p++)
			shown[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
		shown[k] = '\0';
		w = snprintf(err + n, errcap - n, "%s%s", first ? ", " : " ", shown);
		n += w > 0 ? (size_t)w : 0;
		if (!first)
			first = it->string;
	}
	for (size_t i = 0; i < NROWS && n < errcap; i++) {
		w = snprintf(err + n, errcap - n, "%s%s", i ? ", " : " of vLLM's benchmark arguments; accepted: ",
			     rows[i].key);
		n += w > 0 ? (size_t)w : 0;
	}
	/* The field: the first unknown key. */
	size_t k = 0;
	for (const char *p = first ? first : ""; *p && k < VLLM_FIELD_MAX - 1; p++)
		field[k++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	field[k] = '\0';
	return -1;
}

/* goodput: "ttft:500" words (milliseconds), as a list or one string. */
static int goodput_slo(const cJSON *v, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	const cJSON *one = cJSON_IsArray(v) ? v->child : v;
	for (; one; one = cJSON_IsArray(v) ? one->next : NULL) {
		if (!cJSON_IsString(one))
			return -1;
		const char *p = one->valuestring;
		while (*p) {
			p += strspn(p, " \t,");
			size_t len = strcspn(p, " \t,");
			if (!len)
				break;
			char word[64];
			if (len >= sizeof word)
				return -1;
			memcpy(word, p, len);
			word[len] = '\0';
			p += len;
			char *colon = strchr(word, ':');
			if (!colon)
				return -1;
			*colon = '\0';
			char *end;
			double ms = strtod(colon + 1, &end);
			if (*end || !colon[1] || !isfinite(ms) || ms <= 0)
				return -1;
			const char *name = strcmp(word, "e2el") == 0 ? "e2e" : word;
			if (strcmp(name, "ttft") != 0 && strcmp(name, "tpot") != 0 && strcmp(name, "e2e") != 0)
				return -1;
			char num[40];
			number_text(ms, num, sizeof num);
			int w = snprintf(out + n, cap - n, "%s%s=%sms", n ? "," : "", name, num);
			if (w < 0 || (size_t)w >= cap - n)
				return -1;
			n += (size_t)w;
		}
		if (!cJSON_IsArray(v))
			break;
	}
	return n ? 0 : -1;
}

/* metadata: an object, or "KEY=VALUE" strings (a list, or one). */
static int push_metadata(struct vllm_args *a, const cJSON *v, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	if (cJSON_IsObject(v)) {
		char *text = cJSON_PrintUnformatted(v);
		int rc = text ? push(a, "--metadata-json=", text) : -1;
		free(text);
		return rc == 0 ? 0 : refuse(field, "", err, errcap, "out of memory", NULL);
	}
	const cJSON *one = cJSON_IsArray(v) ? v->child : v;
	for (; one; one = cJSON_IsArray(v) ? one->next : NULL) {
		if (!cJSON_IsString(one))
			return refuse(field, "metadata", err, errcap, "expected an object or KEY=VALUE strings", NULL);
		if (push(a, "--metadata=", one->valuestring) != 0)
			return refuse(field, "", err, errcap, "out of memory", NULL);
		if (!cJSON_IsArray(v))
			break;
	}
	return 0;
}

/* The target: base_url, else http://host:port (vLLM's defaults: the
 * chart's localhost, port 8000). */
static int target(const cJSON *o, struct vllm_args *a, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	bool bad = false;
	const char *base = get_string(o, "base_url", &bad);
	if (bad || (base && !*base))
		return refuse(field, "base_url", err, errcap, "expected the server's URL as a string", NULL);
	const char *host = get_string(o, "host", &bad);
	if (bad)
		return refuse(field, "host", err, errcap, "expected a string", NULL);
	long port = 8000;
	const cJSON *v = item(o, "port");
	if (v && get_long(v, 1, 65535, &port) != 0)
		return refuse(field, "port", err, errcap, "expected a port from 1 to 65535", NULL);
	if (base) {
		/* vLLM: base_url wins over host and port. */
		if (host && ignore(a, "host", "base_url names the server") != 0)
			return refuse(field, "", err, errcap, "out of memory", NULL);
		if (v && ignore(a, "port", "base_url names the server") != 0)
			return refuse(field, "", err, errcap, "out of memory", NULL);
		a->url = strdup(base);
		return a->url ? 0 : refuse(field, "", err, errcap, "out of memory", NULL);
	}
	if (!host)
		host = "localhost";
	if (!*host || strlen(host) > 253 ||
	    strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]") != strlen(host))
		return refuse(field, "host", err, errcap, "expected a host name or address", NULL);
	char url[300];
	bool v6 = strchr(host, ':') && host[0] != '[';
	snprintf(url, sizeof url, "http://%s%s%s:%ld", v6 ? "[" : "", host, v6 ? "]" : "", port);
	a->url = strdup(url);
	return a->url ? 0 : refuse(field, "", err, errcap, "out of memory", NULL);
}

/* backend and endpoint both pick the API; when both are given they must
 * agree. */
static int api(const cJSON *o, struct vllm_args *a, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	bool bad = false;
	int which = -1; /* 0 completions, 1 chat */
	const char *backend = get_string(o, "backend", &bad);
	if (bad)
		return refuse(field, "backend", err, errcap, "expected a string", NULL);
	if (backend) {
		if (strcmp(backend, "openai") == 0 || strcmp(backend, "vllm") == 0)
			which = 0;
		else if (strcmp(backend, "openai-chat") == 0)
			which = 1;
		else
			return refuse(field, "backend", err, errcap, "expected vllm, openai or openai-chat", NULL);
	}
	const char *endpoint = get_string(o, "endpoint", &bad);
	if (bad)
		return refuse(field, "endpoint", err, errcap, "expected a string", NULL);
	if (endpoint) {
		int e = strcmp(endpoint, "/v1/completions") == 0        ? 0
			: strcmp(endpoint, "/v1/chat/completions") == 0 ? 1
									: -1;
		if (e < 0)
			return refuse(field, "endpoint", err, errcap, "expected /v1/completions or /v1/chat/completions",
				      NULL);
		if (which >= 0 && e != which)
			return refuse(field, "endpoint", err, errcap, "does not match the backend", NULL);
		which = e;
	}
	if (which >= 0 && push(a, "--api=", which ? "chat" : "completions") != 0)
		return refuse(field, "", err, errcap, "out of memory", NULL);
	return 0;
}

/* num_prompts, request_rate, max_concurrency, burstiness: vLLM's finite
 * rate is open-loop arrivals (gamma of shape burstiness), capped by
 * max_concurrency; "inf" (the default) sends every prompt at once, which
 * is a closed loop of num_prompts users, or max_concurrency of them. */
static int load(const cJSON *o, struct vllm_args *a, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	long n = 0, maxc = 0;
	const cJSON *v = item(o, "num_prompts");
	if (v && get_long(v, 1, 1000000000L, &n) != 0)
		return refuse(field, "num_prompts", err, errcap, "expected a whole number >= 1", NULL);
	if (n && push_long(a, "--requests=", n) != 0)
		goto oom;
	v = item(o, "max_concurrency");
	if (v && get_long(v, 1, 1000000, &maxc) != 0)
		return refuse(field, "max_concurrency", err, errcap, "expected a whole number from 1 to 1000000", NULL);
	v = item(o, "request_rate");
	bool inf = !v || (cJSON_IsString(v) && (strcmp(v->valuestring, "inf") == 0 ||
						 strcmp(v->valuestring, "Infinity") == 0));
	double burst = 1.0;
	const cJSON *b = item(o, "burstiness");
	if (b && (get_double(b, &burst) != 0 || burst <= 0))
		return refuse(field, "burstiness", err, errcap, "expected a number > 0", NULL);
	if (!inf) {
		double r;
		if (get_double(v, &r) != 0 || r <= 0)
			return refuse(field, "request_rate", err, errcap, "expected a number of requests/s > 0 or \"inf\"",
				      NULL);
		char num[64];
		number_text(r, num, sizeof num);
		if (push(a, "--rate=", num) != 0 || (maxc && push_long(a, "--max-concurrency=", maxc) != 0))
			goto oom;
		if (b) {
			number_text(burst, num, sizeof num);
			if (push(a, "--burstiness=", num) != 0)
				goto oom;
		}
		return 0;
	}
	long c = n && maxc ? (n < maxc ? n : maxc) : n ? n : maxc;
	if (c && push_long(a, "--concurrency=", c < 1000000 ? c : 1000000) != 0)
		goto oom;
	if (b && ignore(a, "burstiness", "applies to a finite request_rate only") != 0)
		goto oom;
	return 0;
oom:
	return refuse(field, "", err, errcap, "out of memory", NULL);
}

static bool sonnet_keys(const char *const keys[3])
{
	return keys[1] && strcmp(keys[1], "sonnet_output_len") == 0;
}

static const char *const len_keys[] = {
	"random_input_len", "random_output_len", "random_prefix_len", "random_range_ratio", "sonnet_input_len",
	"sonnet_output_len", "sonnet_prefix_len", "sharegpt_output_len",
};

/* dataset_name and its lengths; a length of another dataset than the
 * one used is reported as ignored, as vLLM ignores it. */
static int dataset(const cJSON *o, struct vllm_args *a, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	bool bad = false;
	const char *dname = get_string(o, "dataset_name", &bad);
	if (bad)
		return refuse(field, "dataset_name", err, errcap, "expected a string", NULL);
	const char *dpath = get_string(o, "dataset_path", &bad);
	if (bad)
		return refuse(field, "dataset_path", err, errcap, "expected a string", NULL);
	const char *keys[3] = {"random_input_len", "random_output_len", "random_prefix_len"};
	bool random = !dname || strcmp(dname, "random") == 0;
	if (random) {
		/* synthetic prompts, the default */
		if (dpath && ignore(a, "dataset_path", "the random dataset reads no file") != 0)
			goto oom;
	} else if (strcmp(dname, "sharegpt") == 0 || strcmp(dname, "sonnet") == 0) {
		bool sonnet = strcmp(dname, "sonnet") == 0;
		if (!dpath || !*dpath)
			return refuse(field, "dataset_path", err, errcap, "the %s dataset needs a file", dname);
		if (push(a, sonnet ? "--dataset=sonnet:" : "--dataset=sharegpt:", dpath) != 0)
			goto oom;
		keys[0] = sonnet ? "sonnet_input_len" : NULL;
		keys[1] = sonnet ? "sonnet_output_len" : "sharegpt_output_len";
		keys[2] = sonnet ? "sonnet_prefix_len" : NULL;
	} else {
		return refuse(field, "dataset_name", err, errcap, "expected random, sharegpt or sonnet", NULL);
	}
	double ratio = 0;
	const cJSON *rr = random ? item(o, "random_range_ratio") : NULL;
	if (rr && (get_double(rr, &ratio) != 0 || ratio < 0 || ratio >= 1))
		return refuse(field, "random_range_ratio", err, errcap, "expected a number from 0 to below 1", NULL);
	/* vLLM's general input_len and output_len stand for the random
	 * dataset's lengths (output_len for sharegpt's too). */
	const char *general[3] = {random ? "input_len" : NULL, keys[1] && !sonnet_keys(keys) ? "output_len" : NULL,
				  NULL};
	const char *opts[3] = {"--input-tokens=", "--output-tokens=", "--prefix-tokens="};
	for (int i = 0; i < 3; i++) {
		long l;
		const cJSON *v = general[i] ? item(o, general[i]) : NULL;
		const char *k = v ? general[i] : keys[i];
		if (!v && (!keys[i] || !(v = item(o, keys[i]))))
			continue;
		if (get_long(v, i == 2 ? 0 : 1, 10000000, &l) != 0)
			return refuse(field, k, err, errcap, "expected a whole number of tokens", NULL);
		char text[64];
		long lo = lround((double)l * (1 - ratio)), hi = lround((double)l * (1 + ratio));
		if (i < 2 && ratio > 0 && hi > lo)
			snprintf(text, sizeof text, "%ld:%ld", lo < 1 ? 1 : lo, hi);
		else
			snprintf(text, sizeof text, "%ld", l);
		if (push(a, opts[i], text) != 0)
			goto oom;
	}
	for (size_t i = 0; i < sizeof len_keys / sizeof len_keys[0]; i++) {
		bool used = (random && strcmp(len_keys[i], "random_range_ratio") == 0) ||
			    (keys[0] && strcmp(len_keys[i], keys[0]) == 0) ||
			    (keys[1] && strcmp(len_keys[i], keys[1]) == 0) ||
			    (keys[2] && strcmp(len_keys[i], keys[2]) == 0);
		if (!used && item(o, len_keys[i]) &&
		    ignore(a, len_keys[i], "applies to another dataset_name than this run's") != 0)
			goto oom;
	}
	for (int i = 0; i < 2; i++) {
		const char *g = i ? "output_len" : "input_len";
		if (!general[i] && item(o, g) &&
		    ignore(a, g, i ? "applies to the random and sharegpt datasets" : "applies to dataset_name random") != 0)
			goto oom;
	}
	return 0;
oom:
	return refuse(field, "", err, errcap, "out of memory", NULL);
}

/* model, served_model_name (the name sent: it wins), lora_modules. */
static int models(const cJSON *o, struct vllm_args *a, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	bool bad = false;
	const char *model = get_string(o, "model", &bad);
	if (bad)
		return refuse(field, "model", err, errcap, "expected a string", NULL);
	const char *served = get_string(o, "served_model_name", &bad);
	if (bad)
		return refuse(field, "served_model_name", err, errcap, "expected a string", NULL);
	if ((served || model) && push(a, "--model=", served ? served : model) != 0)
		goto oom;
	const cJSON *l = item(o, "lora_modules");
	if (l) {
		char list[1024];
		size_t n = 0;
		const cJSON *one = cJSON_IsArray(l) ? l->child : l;
		for (; one; one = cJSON_IsArray(l) ? one->next : NULL) {
			if (!cJSON_IsString(one) || !*one->valuestring || strchr(one->valuestring, ','))
				return refuse(field, "lora_modules", err, errcap, "expected module names", NULL);
			int w = snprintf(list + n, sizeof list - n, "%s%s", n ? "," : "", one->valuestring);
			if (w < 0 || (size_t)w >= sizeof list - n)
				return refuse(field, "lora_modules", err, errcap, "too many module names", NULL);
			n += (size_t)w;
			if (!cJSON_IsArray(l))
				break;
		}
		if (!n)
			return refuse(field, "lora_modules", err, errcap, "expected module names", NULL);
		if (push(a, "--models=", list) != 0)
			goto oom;
	}
	return 0;
oom:
	return refuse(field, "", err, errcap, "out of memory", NULL);
}

/* The request's own knobs: ignore_eos, temperature, sampling keys sent
 * in the body, goodput SLOs, metadata and label. */
static int request_keys(const cJSON *o, struct vllm_args *a, char field[VLLM_FIELD_MAX], char *err, size_t errcap)
{
	const cJSON *v = item(o, "ignore_eos");
	bool flag;
	if (v && get_flag(v, &flag) != 0)
		return refuse(field, "ignore_eos", err, errcap, "expected true or false", NULL);
	if (v && !flag && push(a, "--no-ignore-eos", NULL) != 0)
		goto oom;
	double d;
	if ((v = item(o, "temperature"))) {
		char num[64];
		if (get_double(v, &d) != 0 || d < 0)
			return refuse(field, "temperature", err, errcap, "expected a number >= 0", NULL);
		number_text(d, num, sizeof num);
		if (push(a, "--temperature=", num) != 0)
			goto oom;
	}
	static const char *const body_keys[] = {"logprobs",          "top_p",           "top_k",
						"min_p",             "frequency_penalty", "presence_penalty",
						"repetition_penalty"};
	cJSON *body = NULL;
	/* extra_body: an object (a JSON string on a command line); the
	 * sampling keys go over it, as vLLM merges them. */
	if ((v = item(o, "extra_body"))) {
		body = cJSON_IsObject(v)   ? cJSON_Duplicate(v, true)
		       : cJSON_IsString(v) ? cJSON_Parse(v->valuestring)
					   : NULL;
		if (!cJSON_IsObject(body)) {
			cJSON_Delete(body);
			return refuse(field, "extra_body", err, errcap, "expected a JSON object", NULL);
		}
	}
	if ((v = item(o, "chat_template_kwargs"))) {
		cJSON *k = cJSON_IsObject(v)   ? cJSON_Duplicate(v, true)
			   : cJSON_IsString(v) ? cJSON_Parse(v->valuestring)
					       : NULL;
		if (!cJSON_IsObject(k) || (!body && !(body = cJSON_CreateObject()))) {
			cJSON_Delete(k);
			cJSON_Delete(body);
			return refuse(field, "chat_template_kwargs", err, errcap, "expected a JSON object", NULL);
		}
		cJSON_DeleteItemFromObjectCaseSensitive(body, "chat_template_kwargs");
		cJSON_AddItemToObject(body, "chat_template_kwargs", k);
	}
	for (size_t i = 0; i < sizeof body_keys / sizeof body_keys[0]; i++) {
		if (!(v = item(o, body_keys[i])))
			continue;
		if (get_double(v, &d) != 0) {
			cJSON_Delete(body);
			return refuse(field, body_keys[i], err, errcap, "expected a number", NULL);
		}
		if (!body && !(body = cJSON_CreateObject()))
			goto oom;
		cJSON_DeleteItemFromObjectCaseSensitive(body, body_keys[i]);
		cJSON_AddNumberToObject(body, body_keys[i], d);
	}
	if (body) {
		char *text = cJSON_PrintUnformatted(body);
		cJSON_Delete(body);
		int rc = text ? push(a, "--extra-body=", text) : -1;
		free(text);
		if (rc != 0)
			goto oom;
	}
	if ((v = item(o, "insecure"))) {
		if (get_flag(v, &flag) != 0)
			return refuse(field, "insecure", err, errcap, "expected true or false", NULL);
		if (flag && push(a, "--insecure", NULL) != 0)
			goto oom;
	}
	/* header: KEY=VALUE strings, as infertop's "Name: value". */
	if ((v = item(o, "header"))) {
		const cJSON *one = cJSON_IsArray(v) ? v->child : v;
		for (; one; one = cJSON_IsArray(v) ? one->next : NULL) {
			const char *eq = cJSON_IsString(one) ? strchr(one->valuestring, '=') : NULL;
			if (!eq || eq == one->valuestring)
				return refuse(field, "header", err, errcap, "expected KEY=VALUE strings", NULL);
			size_t n = strlen(one->valuestring) + 2;
			char *h = malloc(n);
			if (!h)
				goto oom;
			snprintf(h, n, "%.*s: %s", (int)(eq - one->valuestring), one->valuestring, eq + 1);
			int rc = push(a, "--header=", h);
			free(h);
			if (rc != 0)
				goto oom;
			if (!cJSON_IsArray(v))
				break;
		}
	}
	if ((v = item(o, "goodput"))) {
		char slo[256];
		if (goodput_slo(v, slo, sizeof slo) != 0)
			return refuse(field, "goodput", err, errcap, "expected ttft:MS, tpot:MS or e2el:MS", NULL);
		if (push(a, "--slo=", slo) != 0)
			goto oom;
	}
	if ((v = item(o, "metadata")) && push_metadata(a, v, field, err, errcap) != 0)
		return -1;
	bool bad = false;
	const char *label = get_string(o, "label", &bad);
	if (bad)
		return refuse(field, "label", err, errcap, "expected a string", NULL);
	if (label && push(a, "--metadata=label=", label) != 0)
		goto oom;
	return 0;
oom:
	return refuse(field, "", err, errcap, "out of memory", NULL);
}

int vllm_args_from_json(const cJSON *obj, struct vllm_args *out, char field[VLLM_FIELD_MAX], char *err,
			size_t errcap)
{
	memset(out, 0, sizeof *out);
	field[0] = '\0';
	err[0] = '\0';
	if (!cJSON_IsObject(obj))
		return refuse(field, "", err, errcap, "expected a JSON object", NULL);
	for (const cJSON *it = obj->child; it; it = it->next)
		if (!row_of(it->string)) {
			refuse_unknown(obj, field, err, errcap);
			return -1;
		}
	int rc = target(obj, out, field, err, errcap);
	if (rc == 0)
		rc = api(obj, out, field, err, errcap);
	if (rc == 0)
		rc = models(obj, out, field, err, errcap);
	if (rc == 0)
		rc = load(obj, out, field, err, errcap);
	if (rc == 0)
		rc = dataset(obj, out, field, err, errcap);
	if (rc == 0 && item(obj, "seed")) {
		long l;
		if (get_long(item(obj, "seed"), 0, 0x7fffffffL, &l) != 0)
			rc = refuse(field, "seed", err, errcap, "expected a whole number >= 0", NULL);
		else if (push_long(out, "--seed=", l) != 0)
			rc = refuse(field, "", err, errcap, "out of memory", NULL);
	}
	if (rc == 0)
		rc = request_keys(obj, out, field, err, errcap);
	for (const cJSON *it = obj->child; rc == 0 && it; it = it->next) {
		const struct vllm_row *r = row_of(it->string);
		if (r->why && ignore(out, r->key, r->why) != 0)
			rc = refuse(field, "", err, errcap, "out of memory", NULL);
	}
	if (rc != 0)
		vllm_args_free(out);
	return rc;
}

/* The next word of a command line: blanks split, quotes group. NULL at
 * the end; *bad on an unclosed quote. */
static char *next_word(const char **p, bool *bad)
{
	const char *s = *p + strspn(*p, " \t\r\n");
	if (!*s) {
		*p = s;
		return NULL;
	}
	char *w = malloc(strlen(s) + 1);
	if (!w) {
		*bad = true;
		return NULL;
	}
	size_t n = 0;
	char q = 0;
	for (; *s && (q || !strchr(" \t\r\n", *s)); s++) {
		if (q && *s == q)
			q = 0;
		else if (!q && (*s == '\'' || *s == '"'))
			q = *s;
		else if (*s == '\\' && q != '\'' && s[1])
			w[n++] = *++s;
		else
			w[n++] = *s;
	}
	w[n] = '\0';
	if (q) {
		free(w);
		*bad = true;
		return NULL;
	}
	*p = s;
	return w;
}

int vllm_args_from_line(const char *line, struct vllm_args *out, char field[VLLM_FIELD_MAX], char *err,
			size_t errcap)
{
	memset(out, 0, sizeof *out);
	field[0] = '\0';
	cJSON *o = cJSON_CreateObject();
	cJSON *unknown = cJSON_CreateObject();
	char *w = NULL, *pending = NULL;
	int rc = -1;
	if (!o || !unknown) {
		refuse(field, "", err, errcap, "out of memory", NULL);
		goto done;
	}
	const char *p = line;
	bool bad = false;
	w = next_word(&p, &bad);
	while (w) {
		if (strncmp(w, "--", 2) != 0 || !w[2]) {
			/* A key pasted in the wrong place is not repeated. */
			refuse(field, "", err, errcap, "unexpected word '%s' (vLLM's arguments start with --)",
			       redact_looks_secret(w) ? "(not shown: it looks like a secret)" : w);
			goto done;
		}
		char *eq = strchr(w, '=');
		if (eq)
			*eq = '\0';
		for (char *c = w + 2; *c; c++)
			if (*c == '-')
				*c = '_';
		const char *key = w + 2;
		const struct vllm_row *r = row_of(key);
		char *value = eq ? eq + 1 : NULL;
		if (!r) {
			/* Collected, so the error names every unknown one. */
			cJSON_DeleteItemFromObjectCaseSensitive(unknown, key);
			cJSON_AddNullToObject(unknown, key);
			free(w);
			w = next_word(&p, &bad);
			while (w && strncmp(w, "--", 2) != 0) {
				free(w);
				w = next_word(&p, &bad);
			}
			continue;
		}
		cJSON *v = NULL;
		char *nextw = NULL;
		if (r->shape == VS_FLAG) {
			v = value ? cJSON_CreateString(value) : cJSON_CreateTrue();
			nextw = next_word(&p, &bad);
		} else if (r->shape == VS_VALUE) {
			if (!value) {
				pending = next_word(&p, &bad);
				if (bad) {
					refuse(field, "", err, errcap, "an unclosed quote in the vLLM arguments", NULL);
					goto done;
				}
				if (!pending || strncmp(pending, "--", 2) == 0) {
					refuse(field, key, err, errcap, "--%s needs a value", w + 2);
					goto done;
				}
				value = pending;
			}
			v = cJSON_CreateString(value);
			nextw = next_word(&p, &bad);
		} else {
			v = cJSON_CreateArray();
			if (value)
				cJSON_AddItemToArray(v, cJSON_CreateString(value));
			nextw = next_word(&p, &bad);
			while (v && nextw && strncmp(nextw, "--", 2) != 0) {
				cJSON_AddItemToArray(v, cJSON_CreateString(nextw));
				free(nextw);
				nextw = next_word(&p, &bad);
			}
		}
		free(pending);
		pending = NULL;
		if (!v) {
			free(nextw);
			refuse(field, "", err, errcap, "out of memory", NULL);
			goto done;
		}
		/* A repeated argument: the last wins, as with argparse. */
		cJSON_DeleteItemFromObjectCaseSensitive(o, key);
		cJSON_AddItemToObject(o, key, v);
		free(w);
		w = nextw;
	}
	if (bad) {
		refuse(field, "", err, errcap, "an unclosed quote in the vLLM arguments", NULL);
		goto done;
	}
	if (unknown->child) {
		/* The unknown ones with the known ones: refuse_unknown lists them. */
		for (cJSON *u = unknown->child; u; u = u->next)
			cJSON_AddNullToObject(o, u->string);
		refuse_unknown(o, field, err, errcap);
		goto done;
	}
	rc = vllm_args_from_json(o, out, field, err, errcap);
done:
	free(w);
	free(pending);
	cJSON_Delete(o);
	cJSON_Delete(unknown);
	return rc;
}

void vllm_args_free(struct vllm_args *a)
{
	for (int i = 0; a->argv && i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	free(a->url);
	cJSON_Delete(a->ignored);
	memset(a, 0, sizeof *a);
}
