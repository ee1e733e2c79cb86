/* The Prometheus HTTP API side of server replicas (promql.h): a label
 * selector checked before the run, the instant query built from it, and
 * the answer turned back into per-replica Prometheus text. */
#include "config.h"

#include "infertop/promql.h"
#include "infertop/prom.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPECTED "expected a label selector such as '{namespace=\"x\",job=\"vllm\"}'"

static const char *skip_sp(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static bool name_start(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static bool name_char(char c, bool colon)
{
	return name_start(c, colon) || (c >= '0' && c <= '9');
}

static int fail(char *err, size_t errcap, const char *fmt, ...)
{
	va_list ap;
	char why[160];
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	snprintf(err, errcap, "%s: %s", why, EXPECTED);
	return -1;
}

int promql_selector_parse(const char *text, struct promql_selector *out, char *err, size_t errcap)
{
	memset(out, 0, sizeof *out);
	if (!text || !*skip_sp(text ? text : ""))
		return 0;
	const char *p = skip_sp(text);
	if (*p != '{')
		return fail(err, errcap, "the selector does not start with '{'");
	p = skip_sp(p + 1);
	while (*p != '}') {
		if (out->n == PROMQL_MAX_MATCHERS)
			return fail(err, errcap, "more than %d matchers", PROMQL_MAX_MATCHERS);
		struct promql_matcher *m = &out->m[out->n];
		if (!name_start(*p, false))
			return fail(err, errcap, *p ? "a label name expected at '%.20s'" : "no closing '}'", p);
		size_t n = 0;
		while (name_char(p[n], false))
			n++;
		if (n >= sizeof m->name)
			return fail(err, errcap, "a label name longer than %d characters", PROMQL_NAME_MAX - 1);
		memcpy(m->name, p, n);
		if (strcmp(m->name, "__name__") == 0)
			return fail(err, errcap, "__name__ is set by infertop (the server profile's metric names)");
		p = skip_sp(p + n);
		if (p[0] == '=' && p[1] == '~')
			memcpy(m->op, "=~", 3);
		else if (p[0] == '!' && p[1] == '~')
			memcpy(m->op, "!~", 3);
		else if (p[0] == '!' && p[1] == '=')
			memcpy(m->op, "!=", 3);
		else if (p[0] == '=')
			memcpy(m->op, "=", 2);
		else
			return fail(err, errcap, "=, !=, =~ or !~ expected after label %s", m->name);
		p = skip_sp(p + strlen(m->op));
		char q = *p;
		if (q != '"' && q != '\'')
			return fail(err, errcap, "the value of label %s must be quoted", m->name);
		p++;
		size_t o = 0;
		for (;;) {
			char c = *p++;
			if (c == '\0')
				return fail(err, errcap, "an unterminated value for label %s", m->name);
			if (c == q)
				break;
			if (c == '\\') {
				c = *p++;
				if (c == 'n')
					c = '\n';
				else if (c == 't')
					c = '\t';
				else if (c != '\\' && c != '"' && c != '\'')
					return fail(err, errcap, "a bad escape in the value of label %s", m->name);
			}
			if (o + 1 >= sizeof m->value)
				return fail(err, errcap, "a value longer than %d bytes", PROMQL_VALUE_MAX - 1);
			m->value[o++] = c;
		}
		out->n++;
		p = skip_sp(p);
		if (*p == ',')
			p = skip_sp(p + 1);
		else if (*p != '}')
			return fail(err, errcap, "',' or '}' expected after the value of label %s", m->name);
	}
	if (*skip_sp(p + 1))
		return fail(err, errcap, "text after the closing '}'");
	return 0;
}

/* Appends fmt to out at *at; false once it does not fit. */
static bool put(char *out, size_t cap, size_t *at, const char *s, size_t n)
{
	if (*at + n + 1 > cap)
		return false;
	memcpy(out + *at, s, n);
	*at += n;
	out[*at] = '\0';
	return true;
}

/* A double-quoted PromQL / Prometheus-text string. */
static bool put_quoted(char *out, size_t cap, size_t *at, const char *v)
{
	bool ok = put(out, cap, at, "\"", 1);
	for (; ok && *v; v++) {
		if (*v == '\\' || *v == '"')
			ok = put(out, cap, at, "\\", 1) && put(out, cap, at, v, 1);
		else if (*v == '\n')
			ok = put(out, cap, at, "\\n", 2);
		else
			ok = put(out, cap, at, v, 1);
	}
	return ok && put(out, cap, at, "\"", 1);
}

int promql_query_build(const struct promql_selector *sel, const char *const *names, size_t nnames, char *out,
		       size_t cap)
{
	size_t at = 0;
	if (cap == 0)
		return -1;
	out[0] = '\0';
	bool ok = put(out, cap, &at, "{__name__=~\"", 12);
	for (size_t i = 0; ok && i < nnames; i++)
		ok = (i == 0 || put(out, cap, &at, "|", 1)) && put(out, cap, &at, names[i], strlen(names[i]));
	ok = ok && put(out, cap, &at, "\"", 1);
	for (int i = 0; ok && i < sel->n; i++) {
		const struct promql_matcher *m = &sel->m[i];
		ok = put(out, cap, &at, ",", 1) && put(out, cap, &at, m->name, strlen(m->name)) &&
		     put(out, cap, &at, m->op, strlen(m->op)) && put_quoted(out, cap, &at, m->value);
	}
	ok = ok && put(out, cap, &at, "}", 1);
	return ok ? 0 : -1;
}

static bool valid_name(const char *s, bool colon)
{
	if (!s || !name_start(*s, colon))
		return false;
	for (; *s; s++)
		if (!name_char(*s, colon))
			return false;
	return true;
}

/* A sample value as Prometheus sends it ("12", "1e+06", "NaN", "+Inf"),
 * as the text parser reads it back. */
static bool valid_value(const char *s)
{
	double v;
	return s && *s && strlen(s) <= 40 && prom_parse_float(s, strlen(s), &v) == 0;
}

static int group_put(struct promql_group *g, const char *s, size_t n)
{
	if (g->len + n + 1 > g->cap) {
		size_t c = g->cap ? g->cap : 4096;
		while (c < g->len + n + 1)
			c *= 2;
		char *t = realloc(g->text, c);
		if (!t)
			return -1;
		g->text = t;
		g->cap = c;
	}
	memcpy(g->text + g->len, s, n);
	g->len += n;
	g->text[g->len] = '\0';
	return 0;
}

/* One series as a line of Prometheus text: 0, 1 when skipped, -1 no memory. */
static int put_series(struct promql_group *g, const cJSON *metric, const char *name, const char *value)
{
	char line[4096];
	size_t at = 0;
	bool ok = put(line, sizeof line, &at, name, strlen(name)) && put(line, sizeof line, &at, "{", 1);
	int nl = 0;
	const cJSON *l;
	cJSON_ArrayForEach(l, metric)
	{
		if (!cJSON_IsString(l) || !l->string || !valid_name(l->string, false))
			return 1;
		/* JSON may repeat a key; Prometheus text may not. */
		for (const cJSON *e = metric->child; e != l; e = e->next)
			if (strcmp(e->string, l->string) == 0)
				return 1;
		if (strcmp(l->string, "__name__") == 0)
			continue;
		ok = ok && (nl++ == 0 || put(line, sizeof line, &at, ",", 1)) &&
		     put(line, sizeof line, &at, l->string, strlen(l->string)) && put(line, sizeof line, &at, "=", 1) &&
		     put_quoted(line, sizeof line, &at, l->valuestring);
	}
	ok = ok && put(line, sizeof line, &at, "} ", 2) && put(line, sizeof line, &at, value, strlen(value)) &&
	     put(line, sizeof line, &at, "\n", 1);
	if (!ok)
		return 1;
	if (group_put(g, line, at) != 0)
		return -1;
	g->nseries++;
	return 0;
}

void promql_split_free(struct promql_split *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		free(s->g[i].text);
	free(s->g);
	memset(s, 0, sizeof *s);
}

static const char *str_item(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int promql_vector_split(const char *body, size_t len, int maxgroups, struct promql_split *out, char *err,
			size_t errcap)
{
	memset(out, 0, sizeof *out);
	cJSON *root = cJSON_ParseWithLength(body, len);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		snprintf(err, errcap, "not a Prometheus API answer (not a JSON object): check the URL is Prometheus's base URL");
		return -1;
	}
	const char *status = str_item(root, "status");
	if (!status || strcmp(status, "success") != 0) {
		const char *et = str_item(root, "errorType"), *e = str_item(root, "error");
		if (e)
			snprintf(err, errcap, "Prometheus: %s%s%.200s", et ? et : "", et ? ": " : "", e);
		else
			snprintf(err, errcap, "not a Prometheus API answer (no \"status\": \"success\")");
		cJSON_Delete(root);
		return -1;
	}
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
	const char *rt = str_item(data, "resultType");
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(data, "result");
	if (!rt || strcmp(rt, "vector") != 0 || !cJSON_IsArray(res)) {
		snprintf(err, errcap, "Prometheus answered a %.20s, not an instant vector", rt ? rt : "non-vector");
		cJSON_Delete(root);
		return -1;
	}
	int n = cJSON_GetArraySize(res);
	if (maxgroups < 1)
		maxgroups = 1;
	out->g = calloc((size_t)maxgroups, sizeof *out->g);
	if (!out->g) {
		cJSON_Delete(root);
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	int rc = 0;
	const cJSON *sr;
	cJSON_ArrayForEach(sr, res)
	{
		const cJSON *metric = cJSON_GetObjectItemCaseSensitive(sr, "metric");
		const cJSON *value = cJSON_GetObjectItemCaseSensitive(sr, "value");
		const char *name = str_item(metric, "__name__");
		const cJSON *vs = cJSON_IsArray(value) && cJSON_GetArraySize(value) == 2 ? cJSON_GetArrayItem(value, 1)
										     : NULL;
		if (!cJSON_IsObject(metric) || !valid_name(name, true) || !cJSON_IsString(vs) ||
		    !valid_value(vs->valuestring)) {
			out->skipped++;
			continue;
		}
		const char *inst = str_item(metric, "instance");
		if (!inst)
			inst = "";
		int k;
		for (k = 0; k < out->n && strncmp(out->g[k].instance, inst, PROMQL_VALUE_MAX - 1) != 0; k++)
			;
		if (k == out->n) {
			if (out->n == maxgroups) {
				out->dropped++;
				continue;
			}
			snprintf(out->g[k].instance, sizeof out->g[k].instance, "%s", inst);
			out->n++;
		}
		int r = put_series(&out->g[k], metric, name, vs->valuestring);
		if (r < 0) {
			rc = -1;
			break;
		}
		out->skipped += r;
	}
	cJSON_Delete(root);
	if (rc != 0) {
		promql_split_free(out);
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	if (out->n == 0) {
		promql_split_free(out);
		snprintf(err, errcap, n ? "no usable series in Prometheus's answer (%d skipped)"
					: "no series match the selector in Prometheus (no server metrics there yet?)",
			 n);
		return -1;
	}
	return 0;
}
