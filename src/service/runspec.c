/* Run specs (infertop serve) to argv: see runspec.h. Pure and fuzzed. */
#include "config.h"

#include "infertop/runspec.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options a spec may not set: serve owns where it listens and where the
 * result goes, and a client must not make the server write files of its
 * choosing, read another environment variable as a key, start a
 * simulator, or send results signed with the server's keys where it
 * says (--upload). */
static const char *const serve_owned[] = {
	"listen", "listen-token-env", "listen-metrics-open", "results-dir", "output", "request-log",
	"snapshot-dir", "api-key-env", "demo", "sim-arg", "listen-allow-host", "data-dir",
	"linger", "expect", "expect-timeout",
	"upload", "upload-endpoint", "upload-region",
};

/* The /start-load keys: one of them marks the form. */
static const char *const sl_keys[] = {
	"host", "port", "num_prompts", "request_rate", "backend", "endpoint", "dataset_name", "dataset_path",
	"sonnet_input_len", "sonnet_prefix_len", "sonnet_output_len", "random_input_len", "random_output_len",
	"random_prefix_len", "sharegpt_output_len", "seed", "model",
};

static int refuse(char field[RUNSPEC_FIELD_MAX], const char *name, char err[RUNSPEC_ERR_MAX], const char *fmt,
		  const char *arg)
{
	/* A field name comes from the client: cut, printable ASCII only, so
	 * it cannot break the JSON answer or a terminal. */
	size_t n = 0;
	for (const char *p = name; *p && n < RUNSPEC_FIELD_MAX - 1; p++)
		field[n++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	field[n] = '\0';
	snprintf(err, RUNSPEC_ERR_MAX, fmt, arg ? arg : "");
	return -1;
}

static int push(struct runspec *rs, const char *a, const char *b)
{
	size_t n = strlen(a) + (b ? strlen(b) : 0) + 1;
	char *s = malloc(n);
	char **v = realloc(rs->argv, ((size_t)rs->argc + 2) * sizeof *v);
	if (!s || !v) {
		free(s);
		if (v)
			rs->argv = v;
		return -1;
	}
	snprintf(s, n, "%s%s", a, b ? b : "");
	rs->argv = v;
	v[rs->argc++] = s;
	v[rs->argc] = NULL;
	return 0;
}

/* A number as an option value: whole numbers without a fraction. */
static void number_text(double d, char *buf, size_t cap)
{
	if (d == floor(d) && fabs(d) < 1e15)
		snprintf(buf, cap, "%lld", (long long)d);
	else
		snprintf(buf, cap, "%.17g", d);
}

/* "--name=value" for one scalar. */
static int push_value(struct runspec *rs, const char *name, const cJSON *v, char field[RUNSPEC_FIELD_MAX],
		      char err[RUNSPEC_ERR_MAX])
{
	char num[64], opt[RUNSPEC_FIELD_MAX + 4];
	const char *text;
	if (cJSON_IsString(v)) {
		text = v->valuestring;
	} else if (cJSON_IsNumber(v)) {
		if (!isfinite(v->valuedouble))
			return refuse(field, name, err, "expected a finite number", NULL);
		number_text(v->valuedouble, num, sizeof num);
		text = num;
	} else {
		return refuse(field, name, err, "expected a string or a number", NULL);
	}
	snprintf(opt, sizeof opt, "--%s=", name);
	return push(rs, opt, text) == 0 ? 0 : refuse(field, "", err, "out of memory", NULL);
}

static bool is_serve_owned(const char *name)
{
	for (size_t i = 0; i < sizeof serve_owned / sizeof serve_owned[0]; i++)
		if (strcmp(name, serve_owned[i]) == 0)
			return true;
	return false;
}

/* infertop's own form. Workload options need nothing of their own here:
 * --prefix-groups, --trace and every --trace-* (and --sessions once it is
 * an option) pass by their long names to cli_parse, which checks them as
 * on the command line. What an option reads from disk is serve.c's: a
 * file it names is held to --data-dir there (serve_file_check, called by
 * serve_trace_check for --trace; a sessions file gets its call beside
 * it). infertop fleet --start gives each generator its --slice, which
 * splits a trace (and a dataset) between them. tests/fleet_trace.sh. */
static int build_native(const cJSON *root, runspec_kind_fn kind, struct runspec *rs, char field[RUNSPEC_FIELD_MAX],
			char err[RUNSPEC_ERR_MAX])
{
	const char *url = NULL;
	for (const cJSON *it = root->child; it; it = it->next) {
		const char *name = it->string;
		if (strlen(name) >= RUNSPEC_FIELD_MAX)
			return refuse(field, name, err, "unknown option", NULL);
		if (strcmp(name, "url") == 0) {
			if (!cJSON_IsString(it) || !*it->valuestring)
				return refuse(field, name, err, "expected the target's URL as a string", NULL);
			url = it->valuestring;
			continue;
		}
		int k = kind(name);
		if (k < 0)
			return refuse(field, name, err, "unknown option (run specs use the long option names)", NULL);
		if (is_serve_owned(name))
			return refuse(field, name, err, "not accepted in a run spec: infertop serve sets it", NULL);
		if (k == 0) {
			if (!cJSON_IsBool(it))
				return refuse(field, name, err, "expected true or false", NULL);
			char opt[RUNSPEC_FIELD_MAX + 4];
			snprintf(opt, sizeof opt, "--%s", name);
			if (cJSON_IsTrue(it) && push(rs, opt, NULL) != 0)
				return refuse(field, "", err, "out of memory", NULL);
			continue;
		}
		if (cJSON_IsArray(it)) {
			for (const cJSON *e = it->child; e; e = e->next)
				if (push_value(rs, name, e, field, err) != 0)
					return -1;
			continue;
		}
		if (push_value(rs, name, it, field, err) != 0)
			return -1;
	}
	if (url && (push(rs, "--", NULL) != 0 || push(rs, url, NULL) != 0))
		return refuse(field, "", err, "out of memory", NULL);
	return 0;
}

/* A whole number in [lo, hi] from a number or a numeric string (the
 * chart's values come from YAML and may arrive as either). */
static int sl_long(const cJSON *v, long lo, long hi, long *out)
{
	double d;
	if (cJSON_IsNumber(v)) {
		d = v->valuedouble;
	} else if (cJSON_IsString(v) && *v->valuestring) {
		char *end;
		d = strtod(v->valuestring, &end);
		if (*end)
			return -1;
	} else {
		return -1;
	}
	if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi)
		return -1;
	*out = (long)d;
	return 0;
}

static int push_long(struct runspec *rs, const char *opt, long v)
{
	char num[32];
	snprintf(num, sizeof num, "%ld", v);
	return push(rs, opt, num);
}

static const char *sl_string(const cJSON *root, const char *key, bool *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v)) {
		*bad = true;
		return NULL;
	}
	return v->valuestring;
}

/* The helm chart's /start-load payload (vLLM's benchmark_serving
 * arguments), mapped onto the same options. */
static int build_start_load(const cJSON *root, struct runspec *rs, char field[RUNSPEC_FIELD_MAX],
			    char err[RUNSPEC_ERR_MAX])
{
	for (const cJSON *it = root->child; it; it = it->next) {
		bool known = false;
		for (size_t i = 0; i < sizeof sl_keys / sizeof sl_keys[0]; i++)
			known |= strcmp(it->string, sl_keys[i]) == 0;
		if (!known)
			return refuse(field, it->string, err, "unknown field of the /start-load payload", NULL);
	}
	bool bad = false;
	const char *host = sl_string(root, "host", &bad);
	if (bad)
		return refuse(field, "host", err, "expected a string", NULL);
	if (!host)
		host = "localhost";
	if (!*host || strlen(host) > 253 || strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
							"0123456789.-_:[]") != strlen(host))
		return refuse(field, "host", err, "expected a host name or address", NULL);
	long port = 8000;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "port");
	if (v && sl_long(v, 1, 65535, &port) != 0)
		return refuse(field, "port", err, "expected a port from 1 to 65535", NULL);
	char url[300];
	bool v6 = strchr(host, ':') && host[0] != '[';
	snprintf(url, sizeof url, "http://%s%s%s:%ld", v6 ? "[" : "", host, v6 ? "]" : "", port);

	/* backend and endpoint both pick the API; when both are given they
	 * must agree. */
	int api = -1; /* 0 completions, 1 chat */
	const char *backend = sl_string(root, "backend", &bad);
	if (bad)
		return refuse(field, "backend", err, "expected a string", NULL);
	if (backend) {
		if (strcmp(backend, "openai") == 0 || strcmp(backend, "vllm") == 0)
			api = 0;
		else if (strcmp(backend, "openai-chat") == 0)
			api = 1;
		else
			return refuse(field, "backend", err, "expected openai or openai-chat", NULL);
	}
	const char *endpoint = sl_string(root, "endpoint", &bad);
	if (bad)
		return refuse(field, "endpoint", err, "expected a string", NULL);
	if (endpoint) {
		int e = strcmp(endpoint, "/v1/completions") == 0        ? 0
			: strcmp(endpoint, "/v1/chat/completions") == 0 ? 1
									: -1;
		if (e < 0)
			return refuse(field, "endpoint", err, "expected /v1/completions or /v1/chat/completions", NULL);
		if (api >= 0 && e != api)
			return refuse(field, "endpoint", err, "does not match the backend", NULL);
		api = e;
	}
	if (api >= 0 && push(rs, "--api=", api ? "chat" : "completions") != 0)
		goto oom;

	const char *model = sl_string(root, "model", &bad);
	if (bad)
		return refuse(field, "model", err, "expected a string", NULL);
	if (model && push(rs, "--model=", model) != 0)
		goto oom;

	long n = 0;
	v = cJSON_GetObjectItemCaseSensitive(root, "num_prompts");
	if (v && sl_long(v, 1, 1000000000L, &n) != 0)
		return refuse(field, "num_prompts", err, "expected a whole number >= 1", NULL);
	if (n && push_long(rs, "--requests=", n) != 0)
		goto oom;

	/* vLLM: a finite rate is Poisson arrivals; "inf" (the default) sends
	 * every prompt at once, which a closed loop of num_prompts users is. */
	v = cJSON_GetObjectItemCaseSensitive(root, "request_rate");
	bool inf = !v || cJSON_IsNull(v) ||
		   (cJSON_IsString(v) && (strcmp(v->valuestring, "inf") == 0 || strcmp(v->valuestring, "Infinity") == 0));
	if (!inf) {
		double r;
		char *end = NULL;
		if (cJSON_IsNumber(v))
			r = v->valuedouble;
		else if (cJSON_IsString(v) && *v->valuestring)
			r = strtod(v->valuestring, &end);
		else
			return refuse(field, "request_rate", err, "expected a number of requests/s or \"inf\"", NULL);
		if ((end && *end) || !isfinite(r) || r <= 0)
			return refuse(field, "request_rate", err, "expected a number of requests/s > 0 or \"inf\"", NULL);
		char num[64];
		number_text(r, num, sizeof num);
		if (push(rs, "--rate=", num) != 0)
			goto oom;
	} else if (n) {
		if (push_long(rs, "--concurrency=", n < 1000000 ? n : 1000000) != 0)
			goto oom;
	}

	const char *dname = sl_string(root, "dataset_name", &bad);
	if (bad)
		return refuse(field, "dataset_name", err, "expected a string", NULL);
	const char *dpath = sl_string(root, "dataset_path", &bad);
	if (bad)
		return refuse(field, "dataset_path", err, "expected a string", NULL);
	const char *in_key = "random_input_len", *out_key = "random_output_len", *pre_key = "random_prefix_len";
	if (!dname || strcmp(dname, "random") == 0) {
		/* synthetic, the default */
	} else if (strcmp(dname, "sharegpt") == 0 || strcmp(dname, "sonnet") == 0) {
		if (!dpath || !*dpath)
			return refuse(field, "dataset_path", err, "the %s dataset needs a file", dname);
		if (push(rs, strcmp(dname, "sonnet") == 0 ? "--dataset=sonnet:" : "--dataset=sharegpt:", dpath) != 0)
			goto oom;
		in_key = strcmp(dname, "sonnet") == 0 ? "sonnet_input_len" : NULL;
		pre_key = strcmp(dname, "sonnet") == 0 ? "sonnet_prefix_len" : NULL;
		out_key = strcmp(dname, "sonnet") == 0 ? "sonnet_output_len" : "sharegpt_output_len";
	} else {
		return refuse(field, "dataset_name", err, "expected random, sharegpt or sonnet", NULL);
	}
	const char *keys[3] = {in_key, out_key, pre_key};
	const char *opts[3] = {"--input-tokens=", "--output-tokens=", "--prefix-tokens="};
	for (int i = 0; i < 3; i++) {
		long l;
		if (!keys[i] || !(v = cJSON_GetObjectItemCaseSensitive(root, keys[i])))
			continue;
		if (sl_long(v, i == 2 ? 0 : 1, 10000000, &l) != 0)
			return refuse(field, keys[i], err, "expected a whole number of tokens", NULL);
		if (push_long(rs, opts[i], l) != 0)
			goto oom;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "seed"))) {
		long l;
		if (sl_long(v, 0, 0x7fffffffL, &l) != 0)
			return refuse(field, "seed", err, "expected a whole number >= 0", NULL);
		if (push_long(rs, "--seed=", l) != 0)
			goto oom;
	}
	if (push(rs, "--", NULL) != 0 || push(rs, url, NULL) != 0)
		goto oom;
	return 0;
oom:
	return refuse(field, "", err, "out of memory", NULL);
}

/* The /start-load form has keys with underscores that no option has. */
static bool is_start_load(const cJSON *root)
{
	for (const cJSON *it = root->child; it; it = it->next)
		for (size_t i = 0; i < sizeof sl_keys / sizeof sl_keys[0]; i++)
			if (strcmp(it->string, sl_keys[i]) == 0 && strcmp(it->string, "model") != 0 &&
			    strcmp(it->string, "seed") != 0)
				return true;
	return false;
}

int runspec_build(const char *body, size_t len, runspec_kind_fn kind, struct runspec *out,
		  char field[RUNSPEC_FIELD_MAX], char err[RUNSPEC_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	field[0] = '\0';
	err[0] = '\0';
	if (len > RUNSPEC_BODY_MAX)
		return refuse(field, "", err, "run spec too large", NULL);
	/* cJSON wants a NUL; a NUL inside the body ends it early, which the
	 * trailing-bytes check below then refuses. */
	char buf[RUNSPEC_BODY_MAX + 1];
	memcpy(buf, body, len);
	buf[len] = '\0';
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, false);
	if (!root)
		return refuse(field, "", err, "the body is not valid JSON", NULL);
	while (end && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	int rc;
	if (!cJSON_IsObject(root)) {
		rc = refuse(field, "", err, "expected a JSON object", NULL);
	} else if (!end || (size_t)(end - buf) != len) {
		rc = refuse(field, "", err, "bytes after the JSON object", NULL);
	} else if (push(out, "infertop", NULL) != 0) {
		rc = refuse(field, "", err, "out of memory", NULL);
	} else {
		out->start_load = is_start_load(root);
		rc = out->start_load ? build_start_load(root, out, field, err) : build_native(root, kind, out, field, err);
	}
	cJSON_Delete(root);
	if (rc != 0)
		runspec_free(out);
	return rc;
}

void runspec_free(struct runspec *rs)
{
	for (int i = 0; rs->argv && i < rs->argc; i++)
		free(rs->argv[i]);
	free(rs->argv);
	memset(rs, 0, sizeof *rs);
}
