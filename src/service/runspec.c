/* Run specs (infertop serve) to argv: see runspec.h. Pure and fuzzed. */
#include "config.h"

#include "infertop/runspec.h"
#include "infertop/vllm_args.h"

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
	/* A file read before the run: a spec naming one could learn which
	 * files exist from the answer. serve's own --cacert is every run's. */
	"cacert",
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
		if (strcmp(name, "metadata") == 0 && cJSON_IsObject(it)) {
			/* Tags as an object: --metadata-json, checked by cli. */
			char *text = cJSON_PrintUnformatted(it);
			int rc = text ? push(rs, "--metadata-json=", text) : -1;
			free(text);
			if (rc != 0)
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

/* The helm chart's /start-load payload (vLLM's benchmark_serving
 * arguments): vllm_args.c's table maps it onto the same options. */
static int build_start_load(const cJSON *root, struct runspec *rs, char field[RUNSPEC_FIELD_MAX],
			    char err[RUNSPEC_ERR_MAX])
{
	struct vllm_args va;
	if (vllm_args_from_json(root, &va, field, err, RUNSPEC_ERR_MAX) != 0)
		return -1;
	int rc = 0;
	for (int i = 0; rc == 0 && i < va.argc; i++)
		rc = push(rs, va.argv[i], NULL);
	if (rc == 0)
		rc = push(rs, "--", NULL) == 0 && push(rs, va.url, NULL) == 0 ? 0 : -1;
	rs->ignored = va.ignored;
	va.ignored = NULL;
	vllm_args_free(&va);
	return rc == 0 ? 0 : refuse(field, "", err, "out of memory", NULL);
}

/* The /start-load form: a key of vLLM's that no option has (underscores,
 * host, port...). Those both have (model, seed, burstiness...) do not
 * tell. */
static bool is_start_load(const cJSON *root, runspec_kind_fn kind)
{
	for (const cJSON *it = root->child; it; it = it->next)
		if (vllm_args_known(it->string) && kind(it->string) < 0)
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
		out->start_load = is_start_load(root, kind);
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
	cJSON_Delete(rs->ignored);
	memset(rs, 0, sizeof *rs);
}
