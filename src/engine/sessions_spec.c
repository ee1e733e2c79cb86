#include "config.h"

/* --sessions' SPEC, its think times, --session-answers, and what goes
 * with sessions (sessions.h). Pure: the option table and the fuzz
 * target use it without a loop. */
#include "infertop/sessions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/errbuf.h"
#include "infertop/options.h"
#include "infertop/units.h"

#define DIST_MAX 10000000L

int sessions_think_parse(const char *s, struct sessions_think *out)
{
	char buf[64];
	if (!s || !*s || strlen(s) >= sizeof buf)
		return -1;
	snprintf(buf, sizeof buf, "%s", s);
	struct sessions_think t = {0};
	char *a = buf, *b = NULL;
	if (strncmp(buf, "exp:", 4) == 0) {
		t.kind = THINK_EXP;
		a = buf + 4;
	} else if (strncmp(buf, "normal:", 7) == 0) {
		t.kind = THINK_NORMAL;
		a = buf + 7;
		b = strchr(a, ',');
		if (!b)
			return -1;
		*b++ = '\0';
	} else if ((b = strchr(buf, ':')) != NULL) {
		t.kind = THINK_UNIFORM;
		*b++ = '\0';
	} else {
		t.kind = THINK_FIXED;
	}
	if (units_parse_duration(a, CLOCK_NS_PER_S, &t.a_ns) != 0 || t.a_ns > SESSIONS_MAX_THINK_NS)
		return -1;
	if (b && (units_parse_duration(b, CLOCK_NS_PER_S, &t.b_ns) != 0 || t.b_ns > SESSIONS_MAX_THINK_NS))
		return -1;
	if (t.kind == THINK_UNIFORM && t.b_ns < t.a_ns)
		return -1;
	if (t.kind == THINK_EXP && t.a_ns <= 0)
		return -1;
	*out = t;
	return 0;
}

int64_t sessions_think_sample(const struct sessions_think *t, struct rng *r)
{
	double v;
	switch (t->kind) {
	case THINK_UNIFORM:
		v = (double)t->a_ns + rng_unit(r) * (double)(t->b_ns - t->a_ns);
		break;
	case THINK_EXP:
		v = rng_exp(r, (double)t->a_ns);
		break;
	case THINK_NORMAL: {
		double u1 = rng_unit(r), u2 = rng_unit(r);
		v = (double)t->a_ns + (double)t->b_ns * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
		break;
	}
	case THINK_FIXED:
	default:
		v = (double)t->a_ns;
		break;
	}
	if (!(v > 0))
		return 0;
	return v > (double)SESSIONS_MAX_THINK_NS ? SESSIONS_MAX_THINK_NS : (int64_t)v;
}

static const char *dur_text(int64_t ns, char *buf, size_t cap)
{
	if (ns % CLOCK_NS_PER_S == 0)
		snprintf(buf, cap, "%llds", (long long)(ns / CLOCK_NS_PER_S));
	else if (ns % CLOCK_NS_PER_MS == 0)
		snprintf(buf, cap, "%lldms", (long long)(ns / CLOCK_NS_PER_MS));
	else
		snprintf(buf, cap, "%.6gs", (double)ns / 1e9);
	return buf;
}

const char *sessions_think_text(const struct sessions_think *t, char *buf, size_t cap)
{
	char a[32], b[32];
	dur_text(t->a_ns, a, sizeof a);
	dur_text(t->b_ns, b, sizeof b);
	switch (t->kind) {
	case THINK_UNIFORM:
		snprintf(buf, cap, "%s:%s", a, b);
		break;
	case THINK_EXP:
		snprintf(buf, cap, "exp:%s", a);
		break;
	case THINK_NORMAL:
		snprintf(buf, cap, "normal:%s,%s", a, b);
		break;
	case THINK_FIXED:
	default:
		snprintf(buf, cap, "%s", a);
		break;
	}
	return buf;
}

int sessions_answers_parse(const char *s, bool *recorded)
{
	if (!s || strcmp(s, "actual") == 0) {
		*recorded = false;
		return 0;
	}
	if (strcmp(s, "recorded") == 0) {
		*recorded = true;
		return 0;
	}
	return -1;
}

static const char *const spec_keys[] = {"turns", "think", "system", "user", "file"};
#define NKEYS (sizeof spec_keys / sizeof spec_keys[0])

/* The key a piece starts with ("turns=..." or the bare "file"), or -1.
 * A piece without '=' continues the value before it, since values have
 * commas of their own ("normal:128,32"). */
static int key_of(const char *p, size_t n)
{
	for (size_t k = 0; k < NKEYS; k++) {
		size_t kl = strlen(spec_keys[k]);
		if (n >= kl && memcmp(p, spec_keys[k], kl) == 0 && (n == kl || p[kl] == '='))
			return (int)k;
	}
	return -1;
}

static int spec_value(struct sessions_spec *o, int key, const char *v, char *err, size_t errcap)
{
	switch (key) {
	case 0:
		if (units_parse_long(v, 1, SESSIONS_MAX_TURNS, &o->turns) != 0)
			return errbuf_set(err, errcap, "turns=%s: expected a whole number from 1 to %ld", v,
					  SESSIONS_MAX_TURNS);
		return 0;
	case 1:
		if (sessions_think_parse(v, &o->think) != 0)
			return errbuf_set(err, errcap,
					  "think=%s: expected a duration (2s, 500ms; bare numbers are seconds), "
					  "MIN:MAX, exp:MEAN or normal:MEAN,SD, at most a day",
					  v);
		return 0;
	case 2:
	case 3: {
		struct dist *d = key == 2 ? &o->system : &o->user;
		if (dist_parse(v, DIST_MAX, d) != 0)
			return errbuf_set(err, errcap, "%s=%s: expected N, MIN:MAX or normal:MEAN,SD (1 to %ld)",
					  spec_keys[key], v, DIST_MAX);
		if (key == 2)
			o->have_system = true;
		else
			o->have_user = true;
		return 0;
	}
	default:
		return errbuf_set(err, errcap, "unknown key");
	}
}

int sessions_spec_parse(const char *spec, struct sessions_spec *out, char *err, size_t errcap)
{
	struct sessions_spec o = {0};
	if (!spec || !*spec)
		return errbuf_set(err, errcap, "empty; expected turns=N[,think=DUR][,system=TOK][,user=LEN] or "
				  "file[,think=DUR]");
	bool seen[NKEYS] = {false};
	const char *p = spec;
	while (*p) {
		size_t n = strcspn(p, ",");
		int key = key_of(p, n);
		if (key < 0)
			return errbuf_set(err, errcap, "'%.*s': expected turns=, think=, system=, user= or file", (int)n,
					  p);
		if (seen[key])
			return errbuf_set(err, errcap, "%s given twice", spec_keys[key]);
		seen[key] = true;
		/* The value runs on over pieces that start no key. */
		const char *end = p + n;
		for (;;) {
			size_t m = *end == ',' ? strcspn(end + 1, ",") : 0;
			if (!m || memchr(end + 1, '=', m) || key_of(end + 1, m) >= 0)
				break;
			end += 1 + m;
		}
		size_t kl = strlen(spec_keys[key]);
		if ((size_t)(end - p) == kl) {
			if (key != 4)
				return errbuf_set(err, errcap, "%s needs a value (%s=...)", spec_keys[key], spec_keys[key]);
			o.file = true;
		} else {
			if (key == 4)
				return errbuf_set(err, errcap, "file takes no value: the file is --dataset's");
			char v[128];
			size_t vl = (size_t)(end - p) - kl - 1;
			if (vl == 0 || vl >= sizeof v)
				return errbuf_set(err, errcap, "%s: %s", spec_keys[key], vl ? "value too long" : "empty value");
			memcpy(v, p + kl + 1, vl);
			v[vl] = '\0';
			if (spec_value(&o, key, v, err, errcap) != 0)
				return -1;
		}
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return errbuf_set(err, errcap, "ends with ','");
	}
	if (o.file && (seen[0] || seen[2] || seen[3]))
		return errbuf_set(err, errcap, "file sessions take their turns from the file: only think= goes with file");
	if (!o.file && !seen[0])
		return errbuf_set(err, errcap, "needs turns=N (synthetic sessions) or file (the --dataset file's "
				  "conversations)");
	*out = o;
	return 0;
}

static bool dataset_is(const char *spec, const char *prefix)
{
	return spec && strncmp(spec, prefix, strlen(prefix)) == 0;
}

int sessions_config_check(const struct config *cfg, char *err, size_t errcap)
{
	char what[256];
	struct sessions_spec sp;
	bool recorded;
	if (!cfg->sessions) {
		if (cfg->session_answers)
			return errbuf_set(err, errcap, "--session-answers needs --sessions");
		return 0;
	}
	if (sessions_spec_parse(cfg->sessions, &sp, what, sizeof what) != 0)
		return errbuf_set(err, errcap, "--sessions %s: %s", cfg->sessions, what);
	if (sessions_answers_parse(cfg->session_answers, &recorded) != 0)
		return errbuf_set(err, errcap, "--session-answers %s: expected actual or recorded", cfg->session_answers);
	bool file = dataset_is(cfg->dataset, "sharegpt:") || dataset_is(cfg->dataset, "jsonl:");
	if (cfg->dataset && !file && strcmp(cfg->dataset, "synthetic") != 0)
		return errbuf_set(err, errcap, "--sessions takes conversations from --dataset sharegpt:FILE or "
				  "jsonl:FILE, or makes them up (synthetic): not from %s",
				  cfg->dataset);
	if (sp.file && !file)
		return errbuf_set(err, errcap, "--sessions file needs --dataset sharegpt:FILE or jsonl:FILE");
	if (!sp.file && file)
		return errbuf_set(err, errcap, "--sessions with --dataset %s runs the file's conversations: give "
				  "--sessions file[,think=DUR]",
				  cfg->dataset);
	if (cfg->trace || cfg->scenario || cfg->matrix || cfg->prefix_tokens)
		return errbuf_set(err, errcap, "--sessions sets the prompts: it does not go with --trace, --scenario, "
				  "--matrix or --prefix-tokens (system=TOK is a session's shared prefix)");
	/* A sweep's steps are isolated (each drains before the next), and
	 * a session thinking across the boundary would belong to both. */
	if (cfg->sweep)
		return errbuf_set(err, errcap, "--sessions does not go with --sweep: sessions outlive its isolated "
				  "steps (--stages changes the load without a break)");
	return 0;
}
