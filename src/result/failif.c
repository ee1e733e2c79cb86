#include "config.h"

/* --fail-if: the condition list's parser (see failif.h). */

#include "infertop/failif.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char)*p))
		p++;
	return p;
}

/* One condition in [p, end). */
static int parse_one(const char *p, const char *end, struct failif_cond *c, char *err, size_t errcap)
{
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	p = skip_ws(p, end);
	int len = (int)(end - p);
	snprintf(c->text, sizeof c->text, "%.*s", len, p);
	if (p == end) {
		snprintf(err, errcap, "an empty condition (two commas, or one at an end)");
		return -1;
	}
	const char *k = p;
	while (p < end && (isalnum((unsigned char)*p) || *p == '_' || *p == '.'))
		p++;
	size_t klen = (size_t)(p - k);
	if (klen == 0 || klen >= sizeof c->key) {
		snprintf(err, errcap, "'%.*s': expected a metric name first, e.g. p99_ttft_ms>+10%%", len, c->text);
		return -1;
	}
	memcpy(c->key, k, klen);
	c->key[klen] = '\0';
	p = skip_ws(p, end);
	if (p < end && (*p == '>' || *p == '<')) {
		bool eq = p + 1 < end && p[1] == '=';
		c->op = *p == '>' ? (eq ? FAILIF_GE : FAILIF_GT) : (eq ? FAILIF_LE : FAILIF_LT);
		p += eq ? 2 : 1;
	} else {
		snprintf(err, errcap, "'%.*s': expected >, <, >= or <= after %s", len, c->text, c->key);
		return -1;
	}
	p = skip_ws(p, end);
	/* strtod on a bounded copy: the input is not terminated at end. */
	char num[64];
	size_t nlen = (size_t)(end - p);
	if (nlen == 0 || nlen >= sizeof num) {
		snprintf(err, errcap, "'%.*s': expected a number after the operator", len, c->text);
		return -1;
	}
	memcpy(num, p, nlen);
	num[nlen] = '\0';
	char *q;
	c->value = strtod(num, &q);
	if (q == num || !isfinite(c->value) || isspace((unsigned char)num[0])) {
		snprintf(err, errcap, "'%.*s': expected a number after the operator", len, c->text);
		return -1;
	}
	while (isspace((unsigned char)*q))
		q++;
	c->pct = *q == '%';
	if (c->pct)
		q++;
	while (isspace((unsigned char)*q))
		q++;
	if (*q) {
		snprintf(err, errcap, "'%.*s': unexpected '%s' after the number", len, c->text, q);
		return -1;
	}
	return 0;
}

int failif_parse(const char *expr, struct failif *f, char *err, size_t errcap)
{
	f->n = 0;
	if (!expr) {
		snprintf(err, errcap, "no condition given");
		return -1;
	}
	const char *p = expr, *end = expr + strlen(expr);
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		if (f->n == FAILIF_MAX) {
			snprintf(err, errcap, "more than %d conditions", FAILIF_MAX);
			return -1;
		}
		if (parse_one(p, stop, &f->c[f->n], err, errcap) != 0)
			return -1;
		f->n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

bool failif_holds(const struct failif_cond *c, double change)
{
	if (isnan(change))
		return false;
	switch (c->op) {
	case FAILIF_GT:
		return change > c->value;
	case FAILIF_LT:
		return change < c->value;
	case FAILIF_GE:
		return change >= c->value;
	case FAILIF_LE:
		return change <= c->value;
	}
	return false;
}

const char *failif_op_name(enum failif_op op)
{
	static const char *const names[] = { ">", "<", ">=", "<=" };
	return (unsigned)op < 4 ? names[op] : "?";
}
