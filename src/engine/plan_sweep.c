#include "config.h"

/* Building a plan's step list from the options: --stages, --sweep (value
 * lists and GuideLLM's rate=auto), --matrix and --scenario, plus the
 * warmup, cooldown and arrival settings that frame them. */

#include "infertop/options.h"
#include "infertop/plan.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/command.h"
#include "infertop/help.h"
#include "infertop/units.h"

#define CONC_MAX 1000000L
#define RATE_MAX 1e7

static const struct plan_scenario_def scenarios[PLAN_SCEN_N] = {
	[PLAN_SCEN_CHATBOT] = {"chatbot", 128, 128},
	[PLAN_SCEN_GENERATION] = {"generation", 128, 2048},
	[PLAN_SCEN_SUMMARIZATION] = {"summarization", 2048, 128},
	[PLAN_SCEN_LONG] = {"long", 2048, 2048},
};

/* OCI's concurrency list. */
static const double matrix_conc[] = {1, 5, 10, 25, 50};

const struct plan_scenario_def *plan_scenario_def(int i)
{
	return i >= 0 && i < PLAN_SCEN_N ? &scenarios[i] : NULL;
}

int plan_scenario_find(const char *name)
{
	for (int i = 0; name && i < PLAN_SCEN_N; i++)
		if (strcmp(name, scenarios[i].name) == 0)
			return i;
	return -1;
}

void plan_spec_free(struct plan_spec *s)
{
	free(s->steps);
	s->steps = NULL;
	s->nsteps = 0;
}

static struct plan_step *push_step(struct plan_spec *s, char *err, size_t cap, const char *opt)
{
	if (s->nsteps >= PLAN_STEPS_MAX) {
		snprintf(err, cap, "%s: more than %d steps", opt, PLAN_STEPS_MAX);
		return NULL;
	}
	if (!s->steps) {
		s->steps = calloc(PLAN_STEPS_MAX, sizeof *s->steps);
		if (!s->steps) {
			snprintf(err, cap, "out of memory");
			return NULL;
		}
	}
	struct plan_step *st = &s->steps[s->nsteps++];
	memset(st, 0, sizeof *st);
	st->scenario = s->scenario;
	return st;
}

/* "c" / "concurrency" -> closed, "r" / "rate" -> open; -1 otherwise. */
static int target_key(const char *k, size_t n)
{
	if ((n == 1 && k[0] == 'c') || (n == 11 && strncmp(k, "concurrency", 11) == 0))
		return LOAD_CLOSED;
	if ((n == 1 && k[0] == 'r') || (n == 4 && strncmp(k, "rate", 4) == 0))
		return LOAD_OPEN;
	return -1;
}

static int parse_value(enum load_mode mode, const char *s, double *out)
{
	if (mode == LOAD_CLOSED) {
		long l;
		if (units_parse_long(s, 0, CONC_MAX, &l) != 0)
			return -1;
		*out = (double)l;
		return 0;
	}
	double d;
	if (units_parse_double(s, &d) != 0 || d < 0 || d > RATE_MAX)
		return -1;
	*out = d;
	return 0;
}

static void step_label(struct plan_step *st)
{
	const char *k = st->mode == LOAD_CLOSED ? "c" : "r";
	char v[32];
	if (st->from == st->to)
		snprintf(v, sizeof v, "%s=%g", k, st->from);
	else
		snprintf(v, sizeof v, "%s=%g..%g", k, st->from, st->to);
	const struct plan_scenario_def *sc = plan_scenario_def(st->scenario);
	if (sc)
		snprintf(st->label, sizeof st->label, "%.13s %.31s", sc->name, v);
	else
		snprintf(st->label, sizeof st->label, "%s", v);
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* "2m@c=8", "3m@c=1..64", "5m@r=20", "1m@r=0..20". */
static int parse_stage(struct plan_spec *s, char *item, int idx, char *err, size_t cap)
{
	char shown[96];
	snprintf(shown, sizeof shown, "%s", item);
	char *at = strchr(item, '@');
	if (!at) {
		snprintf(err, cap, "--stages: stage %d \"%s\": expected DURATION@TARGET, e.g. 2m@c=8", idx, shown);
		return -1;
	}
	*at = '\0';
	char *dur = trim(item), *tgt = trim(at + 1);
	int64_t ns;
	if (units_parse_duration(dur, CLOCK_NS_PER_S, &ns) != 0 || ns <= 0) {
		snprintf(err, cap, "--stages: stage %d \"%s\": \"%s\" is not a duration > 0 (e.g. 90s, 2m)", idx,
			 shown, dur);
		return -1;
	}
	char *eq = strchr(tgt, '=');
	int mode = eq ? target_key(tgt, (size_t)(eq - tgt)) : -1;
	if (mode < 0) {
		snprintf(err, cap, "--stages: stage %d \"%s\": expected c=N, c=N..M, r=R or r=R..S after '@'", idx,
			 shown);
		return -1;
	}
	char *val = eq + 1, *dots = strstr(val, "..");
	double from, to;
	if (dots)
		*dots = '\0';
	if (parse_value((enum load_mode)mode, val, &from) != 0 ||
	    (dots && parse_value((enum load_mode)mode, dots + 2, &to) != 0)) {
		snprintf(err, cap, "--stages: stage %d \"%s\": %s", idx, shown,
			 mode == LOAD_CLOSED ? "a concurrency is a whole number from 0 to 1000000"
					     : "a rate is a number of requests/s from 0 to 1e7");
		return -1;
	}
	if (!dots)
		to = from;
	if (idx == 1 && !(from > 0)) {
		snprintf(err, cap, "--stages: stage 1 \"%s\": the first stage must start with some load "
			 "(c >= 1 or r > 0)", shown);
		return -1;
	}
	struct plan_step *st = push_step(s, err, cap, "--stages");
	if (!st)
		return -1;
	st->mode = (enum load_mode)mode;
	st->from = from;
	st->to = to;
	st->duration_ns = ns;
	st->role = PLAN_ROLE_FIXED;
	step_label(st);
	return 0;
}

static int parse_stages(struct plan_spec *s, const char *spec, char *err, size_t cap)
{
	char *buf = strdup(spec);
	if (!buf) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	int rc = 0, idx = 0;
	char *p = buf;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		char *item = trim(p);
		idx++;
		if (!*item) {
			snprintf(err, cap, "--stages: stage %d is empty (stages are separated by commas: "
				 "'2m@c=8, 5m@r=20')", idx);
			rc = -1;
			break;
		}
		if (parse_stage(s, item, idx, err, cap) != 0) {
			rc = -1;
			break;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	free(buf);
	return rc;
}

struct sweep_spec {
	enum load_mode mode;
	bool auto_rate;
	int auto_n;
	double v[PLAN_STEPS_MAX];
	size_t n;
};

/* "c=1,5,10", "r=0.5,1,2", "rate=auto", "rate=auto:5". */
static int parse_sweep(const char *spec, struct sweep_spec *w, char *err, size_t cap)
{
	memset(w, 0, sizeof *w);
	const char *eq = strchr(spec, '=');
	int mode = eq ? target_key(spec, (size_t)(eq - spec)) : -1;
	if (mode < 0) {
		snprintf(err, cap, "--sweep \"%s\": expected c=N,N,... or r=R,R,... or rate=auto", spec);
		return -1;
	}
	w->mode = (enum load_mode)mode;
	const char *list = eq + 1;
	if (strncmp(list, "auto", 4) == 0) {
		if (mode != LOAD_OPEN) {
			snprintf(err, cap, "--sweep \"%s\": auto is for rates (rate=auto)", spec);
			return -1;
		}
		long n = PLAN_AUTO_RATES;
		if (list[4] == ':' ? units_parse_long(list + 5, 1, 100, &n) != 0 : list[4] != '\0') {
			snprintf(err, cap, "--sweep \"%s\": expected rate=auto or rate=auto:N (N from 1 to 100 "
				 "constant-rate steps)", spec);
			return -1;
		}
		w->auto_rate = true;
		w->auto_n = (int)n;
		return 0;
	}
	char *buf = strdup(list);
	if (!buf) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	int rc = 0;
	char *p = buf;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		char *item = trim(p);
		double v;
		if (w->n >= PLAN_STEPS_MAX) {
			snprintf(err, cap, "--sweep: more than %d values", PLAN_STEPS_MAX);
			rc = -1;
			break;
		}
		if (parse_value(w->mode, item, &v) != 0 || !(v > 0)) {
			snprintf(err, cap, "--sweep \"%s\": \"%s\" is not %s", spec, item,
				 w->mode == LOAD_CLOSED ? "a concurrency from 1 to 1000000"
							: "a rate > 0 (requests/s, at most 1e7)");
			rc = -1;
			break;
		}
		w->v[w->n++] = v;
		if (!comma)
			break;
		p = comma + 1;
	}
	free(buf);
	return rc;
}

static int add_value_steps(struct plan_spec *s, const struct sweep_spec *w, int scenario, int64_t dur, char *err,
			   size_t cap, const char *opt)
{
	for (size_t i = 0; i < w->n; i++) {
		struct plan_step *st = push_step(s, err, cap, opt);
		if (!st)
			return -1;
		st->mode = w->mode;
		st->from = st->to = w->v[i];
		st->duration_ns = dur;
		st->scenario = scenario;
		st->role = PLAN_ROLE_FIXED;
		st->drain = true;
		step_label(st);
	}
	return 0;
}

static int add_auto_steps(struct plan_spec *s, const struct sweep_spec *w, int64_t dur, char *err, size_t cap)
{
	struct plan_step *st = push_step(s, err, cap, "--sweep");
	if (!st)
		return -1;
	st->mode = LOAD_CLOSED;
	st->from = st->to = 1;
	st->duration_ns = dur;
	st->role = PLAN_ROLE_SYNC;
	st->drain = true;
	snprintf(st->label, sizeof st->label, "synchronous");
	if (!(st = push_step(s, err, cap, "--sweep")))
		return -1;
	/* Open loop; its rate is set from the synchronous step's. */
	st->mode = LOAD_OPEN;
	st->from = st->to = 0;
	st->duration_ns = dur;
	st->role = PLAN_ROLE_THROUGHPUT;
	st->drain = true;
	snprintf(st->label, sizeof st->label, "throughput");
	for (int k = 1; k <= w->auto_n; k++) {
		if (!(st = push_step(s, err, cap, "--sweep")))
			return -1;
		st->mode = LOAD_OPEN;
		st->from = st->to = 0; /* set from the measured rates */
		st->duration_ns = dur;
		st->role = PLAN_ROLE_AUTO_RATE;
		st->auto_k = k;
		st->auto_n = w->auto_n;
		st->drain = true;
		snprintf(st->label, sizeof st->label, "rate %d/%d", k, w->auto_n);
	}
	return 0;
}

static int parse_warmup(const char *w, struct plan_spec *s, char *err, size_t cap)
{
	bool digits = *w != '\0';
	for (const char *p = w; *p; p++)
		if (!isdigit((unsigned char)*p))
			digits = false;
	if (digits) {
		long n;
		if (units_parse_long(w, 1, 0x7fffffffL, &n) != 0) {
			snprintf(err, cap, "--warmup \"%s\": expected a number of requests >= 1 or a duration", w);
			return -1;
		}
		s->warmup_requests = (uint64_t)n;
		return 0;
	}
	int64_t ns;
	if (units_parse_duration(w, CLOCK_NS_PER_S, &ns) != 0 || ns <= 0) {
		snprintf(err, cap, "--warmup \"%s\": expected a duration such as 30s (or a number of requests, "
			 "e.g. 100)", w);
		return -1;
	}
	s->warmup_ns = ns;
	return 0;
}

static int parse_arrival(const struct config *cfg, struct plan_spec *s, char *err, size_t cap)
{
	if (load_arrival_parse(cfg->arrival, &s->arrival) != 0) {
		const char *names[LOAD_ARRIVAL_N];
		char list[128];
		for (int i = 0; i < LOAD_ARRIVAL_N; i++)
			names[i] = load_arrival_name((enum load_arrival)i);
		snprintf(err, cap, "--arrival \"%s\": expected %s", cfg->arrival,
			 help_join(list, sizeof list, names, LOAD_ARRIVAL_N, " or "));
		return -1;
	}
	/* Below this nearly every gap is 0 and the mean lives in rare huge
	 * gaps: a burst without end, not a load. */
	if (!(cfg->burstiness >= 0.01) || cfg->burstiness > 1e6) {
		snprintf(err, cap, "--burstiness %g: expected a number from 0.01 to 1e6", cfg->burstiness);
		return -1;
	}
	s->shape = cfg->burstiness;
	bool bursty = cfg->burstiness != 1.0;
	if (bursty && cfg->arrival && s->arrival != LOAD_GAMMA) {
		snprintf(err, cap, "--burstiness applies to gamma arrivals, not --arrival %s", cfg->arrival);
		return -1;
	}
	/* As in vLLM's bench serve: a burstiness other than 1 means gamma. */
	if (bursty)
		s->arrival = LOAD_GAMMA;
	s->arrival_given = cfg->arrival != NULL || bursty;
	return 0;
}

static long peak_users(const struct plan_spec *s, long base)
{
	double peak = (double)base;
	for (size_t i = 0; i < s->nsteps; i++) {
		const struct plan_step *st = &s->steps[i];
		if (st->mode != LOAD_CLOSED)
			continue;
		if (st->from > peak)
			peak = st->from;
		if (st->to > peak)
			peak = st->to;
	}
	return (long)peak;
}

int plan_spec_parse(const struct config *cfg, struct plan_spec *s, char *err, size_t cap)
{
	memset(s, 0, sizeof *s);
	s->scenario = -1;
	s->base_mode = cfg->rate > 0 ? LOAD_OPEN : LOAD_CLOSED;
	s->base_value = cfg->rate > 0 ? cfg->rate : (double)cfg->concurrency;
	if (parse_arrival(cfg, s, err, cap) != 0)
		return -1;
	if (cfg->scenario && (s->scenario = plan_scenario_find(cfg->scenario)) < 0) {
		const char *names[PLAN_SCEN_N];
		char list[128];
		for (int i = 0; i < PLAN_SCEN_N; i++)
			names[i] = plan_scenario_def(i)->name;
		snprintf(err, cap, "--scenario \"%s\": expected %s", cfg->scenario,
			 help_join(list, sizeof list, names, PLAN_SCEN_N, " or "));
		return -1;
	}
	if (cfg->stages && (cfg->sweep || cfg->matrix)) {
		snprintf(err, cap, "--stages cannot be combined with %s: give one kind of plan",
			 cfg->sweep ? "--sweep" : "--matrix");
		return -1;
	}
	if (cfg->warmup && parse_warmup(cfg->warmup, s, err, cap) != 0)
		goto fail;
	s->cooldown_ns = cfg->cooldown_ns;

	if (cfg->stages) {
		s->kind = PLAN_STAGES;
		if (parse_stages(s, cfg->stages, err, cap) != 0)
			goto fail;
	} else if (cfg->sweep || cfg->matrix) {
		struct sweep_spec *w = calloc(1, sizeof *w);
		if (!w) {
			snprintf(err, cap, "out of memory");
			goto fail;
		}
		int rc = 0;
		if (cfg->sweep)
			rc = parse_sweep(cfg->sweep, w, err, cap);
		else {
			w->mode = LOAD_CLOSED;
			w->n = sizeof matrix_conc / sizeof matrix_conc[0];
			memcpy(w->v, matrix_conc, sizeof matrix_conc);
		}
		if (rc == 0 && cfg->matrix && w->auto_rate) {
			snprintf(err, cap, "--matrix takes a list of values in --sweep (c=... or r=...), "
				 "not rate=auto");
			rc = -1;
		}
		if (rc == 0 && cfg->matrix) {
			s->kind = PLAN_MATRIX;
			/* --scenario narrows the matrix to one row of scenarios. */
			for (int sc = 0; rc == 0 && sc < PLAN_SCEN_N; sc++)
				if (s->scenario < 0 || s->scenario == sc)
					rc = add_value_steps(s, w, sc, cfg->stage_duration_ns, err, cap, "--matrix");
		} else if (rc == 0) {
			s->kind = PLAN_SWEEP;
			if (w->auto_rate) {
				long fd_cap = cmd_concurrency_limit();
				s->saturate_cap = cfg->max_concurrency > 0 ? cfg->max_concurrency
						  : fd_cap < PLAN_SATURATE_CAP ? fd_cap
										: PLAN_SATURATE_CAP;
				rc = add_auto_steps(s, w, cfg->stage_duration_ns, err, cap);
			}
			else
				rc = add_value_steps(s, w, s->scenario, cfg->stage_duration_ns, err, cap, "--sweep");
		}
		free(w);
		if (rc != 0)
			goto fail;
	}

	if (cfg->stage_requests > 0 && s->nsteps == 0) {
		snprintf(err, cap, "--stage-requests applies to the steps of --stages, --sweep or --matrix");
		goto fail;
	}
	s->stage_requests = cfg->stage_requests > 0 ? (uint64_t)cfg->stage_requests : 0;
	s->max_concurrency = cfg->max_concurrency;
	if (s->nsteps == 0 && (s->warmup_ns || s->warmup_requests || s->cooldown_ns))
		s->main_ns = cfg->duration_ns;
	if (s->nsteps == 0 && s->cooldown_ns && !s->main_ns) {
		snprintf(err, cap, "--cooldown comes after the measured part, which has no end here: "
			 "give -d, --stages, --sweep or --matrix");
		goto fail;
	}
	s->peak_concurrency = peak_users(s, cfg->concurrency);
	return 0;
fail:
	plan_spec_free(s);
	return -1;
}

void plan_spec_saturate_rate(struct plan_spec *s, double sync_rate)
{
	/* A synchronous step that completed nothing: its request outlasted
	 * the step, so a second per in-flight slot is already above. */
	double r = (double)PLAN_SATURATE_FACTOR * (double)s->saturate_cap * (sync_rate > 0 ? sync_rate : 1.0);
	if (r > RATE_MAX)
		r = RATE_MAX;
	for (size_t i = 0; i < s->nsteps; i++)
		if (s->steps[i].role == PLAN_ROLE_THROUGHPUT)
			s->steps[i].from = s->steps[i].to = r;
}

size_t plan_spec_auto_rates(struct plan_spec *s, double sync_rate, double top_rate)
{
	size_t set = 0;
	const char *name = s->arrival_given ? load_arrival_name(s->arrival) : "constant";
	for (size_t i = 0; i < s->nsteps; i++) {
		struct plan_step *st = &s->steps[i];
		if (st->role != PLAN_ROLE_AUTO_RATE || st->auto_n <= 0)
			continue;
		double r = sync_rate + (top_rate - sync_rate) * st->auto_k / st->auto_n;
		if (!(r >= LOAD_RATE_MIN))
			r = LOAD_RATE_MIN;
		st->from = st->to = r;
		snprintf(st->label, sizeof st->label, "%s@%.2f", name, r);
		set++;
	}
	return set;
}
