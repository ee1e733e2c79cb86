/* infertop fleet --start (fleet.h): one run spec posted to every serve-mode
 * generator with a common start time, the fleet totals split, then every
 * result collected and merged exactly into -o. */
#include "config.h"

#include "infertop/fleet.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/options.h"
#include "infertop/redact.h"
#include "infertop/session.h"
#include "infertop/snapshot.h"

#define COLLECT_NS CLOCK_NS_PER_S        /* results asked for once a second */
#define POST_TIMEOUT_MS 30000L           /* serve checks the server before it answers */
#define GIVE_UP_NS (30 * CLOCK_NS_PER_S) /* a generator silent this long: its result is missing */

enum gen_phase { PH_POSTING, PH_RUNNING, PH_COLLECTED, PH_FAILED };

struct gen {
	struct fleet_start *s;
	size_t i;
	enum gen_phase phase;
	char run_id[33];
	bool asking;
	int64_t last_answer_ns;
	double last_answer_unix;     /* the same on the wall clock (for the record) */
	struct snapshot result;
	char msg[256];
};

struct fleet_start {
	struct fleet *f;
	cJSON *spec;                 /* the options after --start */
	bool open_loop;
	long concurrency;
	double rate;
	double start_unix;           /* the common start the specs name */
	long max_concurrency;        /* the open loop's cap, 0: none */
	long requests;               /* 0: none */
	uint64_t seed;
	bool slice_ok;               /* this build knows --slice */
	struct gen *gens;
	size_t n;
	size_t posts_left;
	bool aborted;
	bool checked_posts;          /* every POST answered and looked at */
	struct snapshot merged;      /* the results' merge, at the end */
	bool have_merged;
	int64_t next_collect;
	int status;
	fleet_tick_fn chained;       /* the caller's tick */
	void *chained_ud;
};

/* argv -> {"name": value}: long names as the run spec takes them. */
static int spec_add(cJSON *spec, const char *name, const char *value, char *err, size_t errcap)
{
	/* cli_argv_next checked the name and the value. */
	cJSON *v = value ? cJSON_CreateString(value) : cJSON_CreateTrue();
	if (!v)
		goto oom;
	cJSON *old = cJSON_GetObjectItemCaseSensitive(spec, name);
	if (!old) {
		cJSON_AddItemToObject(spec, name, v);
		return 0;
	}
	/* Given twice: a repeatable option (--header) becomes an array; for
	 * the others the CLI keeps the last, and so does serve. */
	if (cJSON_IsArray(old)) {
		cJSON_AddItemToArray(old, v);
		return 0;
	}
	cJSON *a = cJSON_CreateArray();
	if (!a) {
		cJSON_Delete(v);
		goto oom;
	}
	cJSON_AddItemToArray(a, cJSON_Duplicate(old, true));
	cJSON_AddItemToArray(a, v);
	cJSON_ReplaceItemInObjectCaseSensitive(spec, name, a);
	return 0;
oom:
	snprintf(err, errcap, "out of memory");
	return -1;
}

static int spec_from_argv(cJSON *spec, int argc, char **argv, char *err, size_t errcap)
{
	for (int i = 0; i < argc; i++) {
		char name[64], why[200];
		const char *value;
		int got = cli_argv_next(argc, argv, &i, name, sizeof name, &value, why, sizeof why);
		if (got < 0) {
			snprintf(err, errcap, "--start: %s", why);
			return -1;
		}
		if (got == 0) {
			if (cJSON_GetObjectItemCaseSensitive(spec, "url")) {
				snprintf(err, errcap, "--start: one target URL at most");
				return -1;
			}
			if (!cJSON_AddStringToObject(spec, "url", value)) {
				snprintf(err, errcap, "out of memory");
				return -1;
			}
			continue;
		}
		static const char *const fleet_own[] = {"start-at", "listen", "targets", "targets-file", "discover",
							"token-env", "output", "expect", "expect-timeout"};
		for (size_t k = 0; k < sizeof fleet_own / sizeof fleet_own[0]; k++)
			if (strcmp(name, fleet_own[k]) == 0) {
				snprintf(err, errcap, "--start: --%s is the fleet's to set, not a run option (give it "
					 "before --start)", name);
				return -1;
			}
		if (spec_add(spec, name, value, err, errcap) != 0)
			return -1;
	}
	return 0;
}

struct fleet_start *fleet_start_new(struct fleet *f, int argc, char **argv, char *err, size_t errcap)
{
	struct fleet_start *s = calloc(1, sizeof *s);
	if (!s || !(s->spec = cJSON_CreateObject())) {
		free(s);
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	s->f = f;
	if (spec_from_argv(s->spec, argc, argv, err, errcap) != 0) {
		fleet_start_free(s);
		return NULL;
	}
	/* The options are checked here with the CLI's own parser, so a typo
	 * is the fleet's error, before any generator starts anything. */
	char **av = calloc((size_t)argc + 2, sizeof *av);
	if (!av) {
		fleet_start_free(s);
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	av[0] = "infertop";
	for (int i = 0; i < argc; i++)
		av[i + 1] = argv[i];
	struct config c;
	char field[64], msg[512];
	enum cli_result r = cli_parse_capture(&c, argc + 1, av, msg, sizeof msg, field, sizeof field);
	free(av);
	if (r != CLI_RUN) {
		snprintf(err, errcap, "--start: %s", r == CLI_EXIT_OK ? "--help and --version are not run options" : msg);
		cli_free(&c);
		fleet_start_free(s);
		return NULL;
	}
	/* The fleet's reference is its own spec's target (and model when
	 * given): a generator loading anything else is refused, however many
	 * of them answer first. */
	char url[1024];
	redact_url(c.url, url, sizeof url);
	fleet_set_reference(f, url, c.model);
	s->open_loop = c.rate > 0;
	s->concurrency = c.concurrency;
	s->rate = c.rate;
	s->max_concurrency = c.max_concurrency;
	s->requests = c.requests;
	s->seed = c.seed;
	cli_free(&c);
	s->slice_ok = cli_option_kind("slice") == 1;
	s->status = 1;
	return s;
}

static void set_value(cJSON *o, const char *name, cJSON *v)
{
	if (!v)
		return;
	if (cJSON_GetObjectItemCaseSensitive(o, name))
		cJSON_ReplaceItemInObjectCaseSensitive(o, name, v);
	else
		cJSON_AddItemToObject(o, name, v);
}

char *fleet_start_spec(const struct fleet_start *s, size_t i, size_t k, double start_unix)
{
	cJSON *o = cJSON_Duplicate(s->spec, true);
	if (!o)
		return NULL;
	char buf[64];
	if (s->open_loop) {
		snprintf(buf, sizeof buf, "%.17g", s->rate / (double)k);
		set_value(o, "rate", cJSON_CreateString(buf));
		/* The cap is the fleet's too; a generator's share is at least
		 * one (0 would mean no cap at all). */
		if (s->max_concurrency > 0) {
			long m = fleet_split_long(s->max_concurrency, k, i);
			set_value(o, "max-concurrency", cJSON_CreateNumber((double)(m > 0 ? m : 1)));
		}
	} else {
		set_value(o, "concurrency", cJSON_CreateNumber((double)fleet_split_long(s->concurrency, k, i)));
	}
	if (s->requests > 0)
		set_value(o, "requests", cJSON_CreateNumber((double)fleet_split_long(s->requests, k, i)));
	/* Its own seed and share of the dataset: no two generators send the
	 * same prompt sequence. */
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)(s->seed + i));
	set_value(o, "seed", cJSON_CreateString(buf));
	if (s->slice_ok) {
		snprintf(buf, sizeof buf, "%zu/%zu", i, k);
		set_value(o, "slice", cJSON_CreateString(buf));
	}
	snprintf(buf, sizeof buf, "%.3f", start_unix);
	set_value(o, "start-at", cJSON_CreateString(buf));
	set_value(o, "no-tui", cJSON_CreateTrue());
	char *t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return t;
}

/* ---- the runs' lives ---- */

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_posted(void *ud, long code, const char *body, size_t len, const char *err)
{
	struct gen *g = ud;
	struct fleet_start *s = g->s;
	s->posts_left--;
	const char *url = fleet_endpoint_url(s->f, g->i);
	cJSON *j = code ? cJSON_ParseWithLength(body, len) : NULL;
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
	if (code == 201 && cJSON_IsString(id) && strlen(id->valuestring) == 32 &&
	    strspn(id->valuestring, "0123456789abcdef") == 32) {
		snprintf(g->run_id, sizeof g->run_id, "%s", id->valuestring);
		g->phase = PH_RUNNING;
		g->last_answer_ns = clock_now_ns();
		g->last_answer_unix = wall_now();
		fprintf(stderr, "infertop fleet: %s: run %s\n", url, g->run_id);
	} else {
		g->phase = PH_FAILED;
		/* Its words scrubbed (a token it echoed, escapes) before shown. */
		char said[200] = "";
		const char *t = err ? err : cJSON_IsString(m) ? m->valuestring : "";
		fleet_text_scrub_into(said, sizeof said, t, strlen(t), fleet_secrets(s->f));
		if (err)
			snprintf(g->msg, sizeof g->msg, "%s", said);
		else
			snprintf(g->msg, sizeof g->msg, "HTTP %ld%s%s", code, cJSON_IsString(m) ? ": " : "", said);
		fprintf(stderr, "infertop fleet: %s: the run was not started: %s\n", url, g->msg);
	}
	cJSON_Delete(j);
}

static void on_result(void *ud, long code, const char *body, size_t len, const char *err)
{
	struct gen *g = ud;
	g->asking = false;
	if (err)
		return; /* silent: retried, and given up after GIVE_UP_NS */
	g->last_answer_ns = clock_now_ns();
	g->last_answer_unix = wall_now();
	if (code == 409)
		return; /* still going on */
	const char *url = fleet_endpoint_url(g->s->f, g->i);
	if (code != 200) {
		g->phase = PH_FAILED;
		snprintf(g->msg, sizeof g->msg, "GET its result: HTTP %ld", code);
		fprintf(stderr, "infertop fleet: %s: %s\n", url, g->msg);
		return;
	}
	char why[256];
	if (snapshot_parse(&g->result, body, len, why, sizeof why) != 0) {
		g->phase = PH_FAILED;
		fleet_text_scrub(why, fleet_secrets(g->s->f));
		snprintf(g->msg, sizeof g->msg, "its result does not read: %.200s", why);
		fprintf(stderr, "infertop fleet: %s: %s\n", url, g->msg);
		return;
	}
	/* Merged and saved only when believable, and scrubbed as a status. */
	fleet_status_scrub(&g->result, fleet_secrets(g->s->f));
	if (fleet_status_check(&g->result, why, sizeof why) != 0) {
		snapshot_release(&g->result);
		g->phase = PH_FAILED;
		snprintf(g->msg, sizeof g->msg, "its result is refused: %.200s", why);
		fprintf(stderr, "infertop fleet: %s: %s\n", url, g->msg);
		return;
	}
	g->phase = PH_COLLECTED;
}

static void cancel_started(struct fleet_start *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct gen *g = &s->gens[i];
		if (g->phase != PH_RUNNING)
			continue;
		char url[FLEET_URL_MAX + 64];
		snprintf(url, sizeof url, "%s/v1/runs/%s", fleet_endpoint_url(s->f, i), g->run_id);
		g->phase = PH_FAILED;
		snprintf(g->msg, sizeof g->msg, "cancelled");
		fleet_http(s->f, "DELETE", url, NULL, 0, NULL, NULL);
	}
}

/* The merge's "fleet" object: what was planned, what was merged, and
 * every generator whose result is missing (its address, run, the last
 * time it answered and why it is counted lost), so the file never passes
 * for the whole planned load. */
static cJSON *fleet_record(const struct fleet_start *s, size_t merged, const struct snapshot *m)
{
	/* Plain numbers: the writer makes them exact text (and readers of the
	 * live merge, the summary, read them as numbers). */
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddItemToObject(o, "generators_planned", cJSON_CreateNumber((double)s->n));
	cJSON_AddItemToObject(o, "generators_merged", cJSON_CreateNumber((double)merged));
	cJSON *lost = cJSON_AddArrayToObject(o, "generators_lost");
	for (size_t i = 0; lost && i < s->n; i++) {
		const struct gen *g = &s->gens[i];
		if (g->phase == PH_COLLECTED)
			continue;
		cJSON *e = cJSON_CreateObject();
		if (!e)
			break;
		cJSON_AddItemToArray(lost, e);
		cJSON_AddStringToObject(e, "generator", fleet_endpoint_url(s->f, i));
		cJSON_AddStringToObject(e, "run_id", g->run_id);
		cJSON_AddItemToObject(e, "last_seen_unix", cJSON_CreateNumber(g->last_answer_unix));
		cJSON_AddItemToObject(e, "lost_after_s", cJSON_CreateNumber(g->last_answer_unix - s->start_unix));
		cJSON_AddStringToObject(e, "why", g->msg);
	}
	cJSON *ld = cJSON_AddObjectToObject(o, "load");
	if (ld) {
		cJSON_AddStringToObject(ld, "mode", s->open_loop ? "rate" : "concurrency");
		cJSON_AddItemToObject(ld, "planned",
				      cJSON_CreateNumber(s->open_loop ? s->rate : (double)s->concurrency));
		cJSON_AddItemToObject(ld, "achieved", cJSON_CreateNumber(s->open_loop ? m->rate : m->concurrency));
	}
	return o;
}

static void finish(struct fleet_start *s)
{
	const struct snapshot **src = calloc(s->n ? s->n : 1, sizeof *src);
	size_t k = 0, missing = 0;
	for (size_t i = 0; src && i < s->n; i++) {
		if (s->gens[i].phase == PH_COLLECTED)
			src[k++] = &s->gens[i].result;
		else
			missing++;
	}
	char err[512] = "";
	s->status = !k ? SESSION_EXIT_NOT_SAVED : missing ? SESSION_EXIT_GEN_LOST : SESSION_EXIT_OK;
	if (k && snapshot_merge(&s->merged, src, k, err, sizeof err) == 0) {
		s->have_merged = true;
		s->merged.fleet = fleet_record(s, k, &s->merged);
	} else if (k) {
		fprintf(stderr, "infertop fleet: cannot merge the results: %s\n", err);
		s->status = SESSION_EXIT_NOT_SAVED;
	}
	const char *out = fleet_output(s->f);
	if (s->have_merged && out) {
		if (fleet_write_snapshot(&s->merged, out, err, sizeof err) == 0) {
			fprintf(stderr, "infertop fleet: %zu results merged into %s%s\n", k, out,
				missing ? " (some are missing)" : "");
		} else {
			fprintf(stderr, "infertop fleet: %s: %s\n", out, err);
			s->status = SESSION_EXIT_NOT_SAVED;
		}
	}
	if (missing)
		fprintf(stderr, "infertop fleet: %zu of %zu generators lost: the merge lacks their share of the load "
			"(exit %d)\n", missing, s->n, SESSION_EXIT_GEN_LOST);
	free(src);
	fleet_finish(s->f, missing ? "runs over, some results missing" : "every run is over");
}

static void on_tick(struct fleet *f, void *ud, int64_t now)
{
	struct fleet_start *s = ud;
	if (s->chained)
		s->chained(f, s->chained_ud, now);
	if (fleet_finished(f) || s->posts_left)
		return;
	if (!s->checked_posts) {
		/* A generator refused the run: the others are cancelled (a
		 * fleet run is all of them or none), and the fleet ends. */
		s->checked_posts = true;
		size_t failed = 0;
		for (size_t i = 0; i < s->n; i++)
			failed += s->gens[i].phase == PH_FAILED;
		if (failed) {
			s->aborted = true;
			cancel_started(s);
			fleet_finish(f, "a generator refused the run");
			return;
		}
	}
	size_t running = 0;
	for (size_t i = 0; i < s->n; i++)
		running += s->gens[i].phase == PH_RUNNING;
	if (!running) {
		finish(s);
		return;
	}
	if (now < s->next_collect)
		return;
	s->next_collect = now + COLLECT_NS;
	for (size_t i = 0; i < s->n; i++) {
		struct gen *g = &s->gens[i];
		if (g->phase != PH_RUNNING || g->asking)
			continue;
		if (now - g->last_answer_ns > GIVE_UP_NS) {
			g->phase = PH_FAILED;
			snprintf(g->msg, sizeof g->msg, "lost: no answer for %llds", (long long)(GIVE_UP_NS / CLOCK_NS_PER_S));
			fprintf(stderr, "infertop fleet: %s: %s\n", fleet_endpoint_url(f, i), g->msg);
			continue;
		}
		char url[FLEET_URL_MAX + 64];
		snprintf(url, sizeof url, "%s/v1/runs/%s/result", fleet_endpoint_url(f, i), g->run_id);
		if (fleet_http(f, "GET", url, NULL, 0, on_result, g) == 0)
			g->asking = true;
	}
}

int fleet_start_go(struct fleet_start *s, double lead_s, char *err, size_t errcap)
{
	size_t k = fleet_nendpoints(s->f);
	if (k == 0) {
		snprintf(err, errcap, "--start: no generator to start");
		return -1;
	}
	if (!s->open_loop && s->concurrency < (long)k) {
		snprintf(err, errcap, "--start: concurrency %ld is below one per generator (%zu)", s->concurrency, k);
		return -1;
	}
	if (s->requests > 0 && s->requests < (long)k) {
		snprintf(err, errcap, "--start: %ld requests are fewer than the generators (%zu)", s->requests, k);
		return -1;
	}
	s->gens = calloc(k, sizeof *s->gens);
	if (!s->gens) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	s->n = k;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + lead_s;
	s->start_unix = start;
	fleet_set_planned(s->f, k, s->open_loop, s->open_loop ? s->rate : (double)s->concurrency);
	for (size_t i = 0; i < k; i++) {
		struct gen *g = &s->gens[i];
		g->s = s;
		g->i = i;
		char *body = fleet_start_spec(s, i, k, start);
		char url[FLEET_URL_MAX + 16];
		snprintf(url, sizeof url, "%s/v1/runs", fleet_endpoint_url(s->f, i));
		if (!body || fleet_http(s->f, "POST", url, body, POST_TIMEOUT_MS, on_posted, g) != 0) {
			free(body);
			g->phase = PH_FAILED;
			snprintf(g->msg, sizeof g->msg, "out of memory");
			continue;
		}
		free(body);
		s->posts_left++;
	}
	/* The fleet ends when the results are in, not when the statuses say
	 * the runs are done. */
	fleet_set_auto_finish(s->f, false);
	fleet_get_on_tick(s->f, &s->chained, &s->chained_ud);
	fleet_set_on_tick(s->f, on_tick, s);
	return 0;
}

const struct snapshot *fleet_start_result(const struct fleet_start *s)
{
	return s->have_merged ? &s->merged : NULL;
}

int fleet_start_status(const struct fleet_start *s)
{
	return s->status;
}

void fleet_start_free(struct fleet_start *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->gens[i].phase == PH_COLLECTED)
			snapshot_release(&s->gens[i].result);
	free(s->gens);
	if (s->have_merged)
		snapshot_release(&s->merged);
	cJSON_Delete(s->spec);
	free(s);
}
