/* infertop serve (serve.h): the control API on a loop of its own, taking
 * runs one at a time. Specs become an argv (runspec.c) for cli_parse, so
 * a run over HTTP is configured exactly as one on the command line.
 *
 * Each run goes through the one run lifecycle (session.h): before it is
 * accepted its target is checked and the model picked (the probe, up to
 * 10 s, and the prompt calibration), on the loop, with the POST's answer
 * left for later, so the loop goes on answering everyone else (a fleet
 * polling at 4 Hz would otherwise find the generator gone). The run being
 * probed is not the current run: nothing on the loop reaches its engine
 * until the probe has answered. */
#include "config.h"

#include "infertop/serve.h"

#include <cjson/cJSON.h>
#include <ev.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/command.h"
#include "infertop/control.h"
#include "infertop/dataset.h"
#include "infertop/engine.h"
#include "infertop/loop.h"
#include "infertop/redact.h"
#include "infertop/report.h"
#include "infertop/runspec.h"
#include "infertop/session.h"
#include "infertop/snapshot.h"
#include "infertop/trace.h"
#include "infertop/upload.h"
#include "infertop/view.h"

/* Runs remembered for GET /v1/runs/ID after they end; the oldest are
 * forgotten (their files stay in --results-dir). */
#define SERVE_KEEP 256

struct serve_run {
	char id[33];
	struct config cfg;          /* the run's options; lives as long as e */
	struct session *sess;       /* the run's lifecycle; NULL once over and freed */
	struct engine *e;           /* its engine, NULL with it */
	bool done;
	bool written;               /* the result file is there */
	char path[4096];
	char error[256];            /* why the result could not be written */
	char stop_reason[128];
};

struct serve {
	const struct config *cfg;
	struct ev_loop *loop;
	struct control *ctl;
	struct serve_run *runs[SERVE_KEEP];
	size_t nruns;
	struct serve_run *cur;      /* the run going on; NULL between runs */
	struct serve_run *reap;     /* over, its engine to be freed */
	ev_idle reaper;
	bool quitting;
	char slice[32];             /* "I/N" every run gets unless its spec says; "" none */
	char *data_dir;             /* --data-dir, resolved; NULL: specs may name no file */
	/* The run whose target is being probed, and the POST waiting for
	 * the outcome; NULL when none. */
	struct serve_run *starting;
	struct control_later *starting_answer;
	/* --upload: serve's, for every run's files (a run spec may not say
	 * where results go, runspec.c); NULL: none. */
	struct uploader *up;
};

/* ---- answers ---- */

static char *answer(cJSON *j)
{
	char *t = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	return t;
}

static unsigned status_json(char **json, unsigned code, const char *status, const char *msg, const char *field)
{
	*json = control_reply_json(status, msg, field, NULL);
	return code;
}

static const char *run_state(const struct serve_run *r)
{
	if (r->done)
		return r->written ? "done" : "failed";
	struct run_view v;
	engine_view(r->e, &v);
	return v.state == ENGINE_DRAINING ? "stopping" : "running";
}

static cJSON *run_brief(const struct serve_run *r)
{
	cJSON *j = cJSON_CreateObject();
	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "id", r->id);
	cJSON_AddStringToObject(j, "state", run_state(r));
	if (r->done && r->stop_reason[0])
		cJSON_AddStringToObject(j, "stop_reason", r->stop_reason);
	if (r->written)
		cJSON_AddStringToObject(j, "result_path", r->path);
	if (r->error[0])
		cJSON_AddStringToObject(j, "error", r->error);
	return j;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n + 65536 + 1 > cap) {
			cap = cap ? cap * 2 : 131072;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* ---- the run's life ---- */

static void serve_on_signal(void *ud, int signum);

static void serve_take_signals(struct serve *s)
{
	loop_signal_set(s->loop, LOOP_SIGINT, serve_on_signal, s);
	loop_signal_set(s->loop, LOOP_SIGTERM, serve_on_signal, s);
}

static void serve_free_run(struct serve_run *r)
{
	if (!r)
		return;
	session_free(r->sess);
	cli_free(&r->cfg);
	free(r);
}

/* The run is freed on the next loop iteration, outside its own
 * callbacks (session_start's). */
static void serve_on_reap(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	struct serve *s = w->data;
	ev_idle_stop(loop, w);
	if (s->reap) {
		session_free(s->reap->sess);
		s->reap->sess = NULL;
		s->reap->e = NULL;
		cli_free(&s->reap->cfg);
		s->reap = NULL;
	}
	if (s->quitting)
		ev_break(loop, EVBREAK_ALL);
}

/* The run is over and its result written (or not: then the session says
 * where it went instead). */
static void serve_on_written(struct session *sess, void *ud)
{
	struct serve *s = ud;
	struct serve_run *r = s->cur;
	if (!r || r->sess != sess)
		return;
	struct run_view v;
	engine_view(r->e, &v);
	snprintf(r->stop_reason, sizeof r->stop_reason, "%s", v.stop_reason ? v.stop_reason : "");
	/* Ctrl-C or kill during a run went to the engine (it held the
	 * signals): it stopped the run, and serve ends once it is saved. */
	if (v.interrupts > 0)
		s->quitting = true;
	const char *where = session_result_path(sess);
	if (!session_write_failed(sess)) {
		r->written = true;
		fprintf(stderr, "infertop serve: run %s done (%s): %s\n", r->id, r->stop_reason, r->path);
	} else if (where[0]) {
		/* Saved elsewhere: GET .../result serves it from there. */
		snprintf(r->path, sizeof r->path, "%s", where);
		r->written = true;
		fprintf(stderr, "infertop serve: run %s done (%s), saved instead in %s\n", r->id, r->stop_reason,
			r->path);
	} else {
		snprintf(r->error, sizeof r->error, "the result could not be written (see serve's log)");
		fprintf(stderr, "infertop serve: run %s: the result could not be written\n", r->id);
	}
	/* The figures on stdout, as a headless run prints them: in a pod,
	 * `kubectl logs` shows each run's result, not only where it went. */
	printf("infertop serve: run %s\n", r->id);
	report_summary(stdout, &v);
	fflush(stdout);
	r->done = true;
	control_set_engine(s->ctl, NULL);
	s->cur = NULL;
	s->reap = r;
	ev_idle_start(s->loop, &s->reaper);
	/* The engine held Ctrl-C while it ran; it is serve's again. */
	serve_take_signals(s);
}

static void serve_on_signal(void *ud, int signum)
{
	(void)signum;
	struct serve *s = ud;
	s->quitting = true;
	if (s->starting) {
		/* Ends once the probe is over (within its timeout): its POST
		 * is told serve is ending. */
	} else if (s->cur) {
		struct cmd_result cr;
		engine_cmd_stop(s->cur->e, CMD_SRC_SIGNAL, &cr);
	} else {
		ev_break(s->loop, EVBREAK_ALL);
	}
}

static void serve_remember(struct serve *s, struct serve_run *r)
{
	if (s->nruns == SERVE_KEEP) {
		serve_free_run(s->runs[0]);
		memmove(s->runs, s->runs + 1, (SERVE_KEEP - 1) * sizeof s->runs[0]);
		s->nruns--;
	}
	s->runs[s->nruns++] = r;
}

/* "--dataset foo: ..." from engine_new: the option it names. */
static void field_of_message(const char *msg, char *field, size_t cap)
{
	field[0] = '\0';
	if (strncmp(msg, "--", 2) != 0)
		return;
	size_t n = strspn(msg + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
	if (n && n < cap)
		snprintf(field, cap, "%.*s", (int)n, msg + 2);
}

/* "--slice=I/N" as argv[1]. */
static int serve_argv_slice(struct runspec *rs, const char *slice)
{
	size_t n = strlen(slice) + sizeof "--slice=";
	char *opt = malloc(n);
	char **v = realloc(rs->argv, ((size_t)rs->argc + 2) * sizeof *v);
	if (v)
		rs->argv = v;
	if (!opt || !v) {
		free(opt);
		return -1;
	}
	snprintf(opt, n, "--slice=%s", slice);
	memmove(v + 2, v + 1, (size_t)rs->argc * sizeof *v);
	v[1] = opt;
	rs->argc++;
	return 0;
}

/* The slice of a pod of a Kubernetes Indexed Job: its index is in
 * JOB_COMPLETION_INDEX (set by Kubernetes), the Job's completions in
 * SERVE_SLICE_COUNT_ENV (set in the pod template: Kubernetes does not give
 * it). Neither set: no slice (0); one without the other, or a bad value:
 * -1 with the reason in err, for a pod that must not run unsliced. */
static int serve_slice_from_env(char *slice, size_t cap, char *err, size_t errcap)
{
	const char *index = getenv("JOB_COMPLETION_INDEX");
	const char *count = getenv(SERVE_SLICE_COUNT_ENV);
	if (!index && !count)
		return 0;
	if (!index || !count) {
		snprintf(err, errcap, "%s is set but %s is not: both are needed for a slice (or give --slice I/N)",
			 index ? "JOB_COMPLETION_INDEX" : SERVE_SLICE_COUNT_ENV,
			 index ? SERVE_SLICE_COUNT_ENV : "JOB_COMPLETION_INDEX");
		return -1;
	}
	long i, n;
	snprintf(slice, cap, "%.12s/%.12s", index, count);
	if (strlen(index) > 12 || strlen(count) > 12 || dataset_slice_parse(slice, &i, &n) != 0) {
		snprintf(err, errcap, "JOB_COMPLETION_INDEX=%.12s and %s=%.12s: expected an index from 0 below a count "
			 "from 1 to %ld", index, SERVE_SLICE_COUNT_ENV, count, DATASET_MAX_SLICES);
		slice[0] = '\0';
		return -1;
	}
	/* Written back plain ("007" -> "7"): it is shown and logged. */
	snprintf(slice, cap, "%ld/%ld", i, n);
	return 1;
}

/* The probe's outcome: the run starts (201), or the POST learns why not. */
static unsigned serve_accept_run(struct serve *s, struct serve_run *r, char **json)
{
	struct run_view v;
	engine_view(r->e, &v);
	snprintf(r->id, sizeof r->id, "%s", v.run_id);
	snprintf(r->path, sizeof r->path, "%s/infertop-run-%s.json", s->cfg->results_dir ? s->cfg->results_dir : ".",
		 r->id);
	serve_remember(s, r);
	s->cur = r;
	control_set_engine(s->ctl, r->e);
	/* The result goes to --results-dir under the run's id. */
	free(r->cfg.output_path);
	r->cfg.output_path = strdup(r->path);
	char shown[1024];
	redact_url(engine_endpoint(r->e), shown, sizeof shown);
	fprintf(stderr, "infertop serve: run %s started: %s, model %s\n", r->id, shown, v.model ? v.model : "?");
	session_start(r->sess, serve_on_written, s);
	cJSON *j = run_brief(r);
	char loc[64];
	snprintf(loc, sizeof loc, "/v1/runs/%s/result", r->id);
	if (j)
		cJSON_AddStringToObject(j, "result", loc);
	cJSON *ign = r->cfg.vllm_ignored ? cJSON_Parse(r->cfg.vllm_ignored) : NULL;
	if (j && ign)
		cJSON_AddItemToObject(j, "ignored", ign);
	else
		cJSON_Delete(ign);
	*json = answer(j);
	return 201;
}

/* The probe's answer: the POST waiting for it is answered. */
static void serve_on_probed(struct session *sess, int rc, const char *err, void *ud)
{
	struct serve *s = ud;
	struct serve_run *r = s->starting;
	if (!r || r->sess != sess)
		return;
	struct control_later *later = s->starting_answer;
	s->starting = NULL;
	s->starting_answer = NULL;
	char *json = NULL;
	unsigned code;
	if (s->quitting) {
		code = status_json(&json, 503, "failed", "infertop serve is ending", NULL);
		serve_free_run(r);
	} else if (rc != 0) {
		code = status_json(&json, 502, "failed", err, "url");
		serve_free_run(r);
	} else {
		code = serve_accept_run(s, r, &json);
	}
	control_answer_later(s->ctl, later, code, json);
	if (s->quitting && !s->cur)
		ev_break(s->loop, EVBREAK_ALL);
}

/* serve is ending while a probe goes on: the POST learns so now. */
static void serve_drop_starting(struct serve *s)
{
	struct serve_run *r = s->starting;
	struct control_later *later = s->starting_answer;
	s->starting = NULL;
	s->starting_answer = NULL;
	session_cancel(r->sess);
	char *json = NULL;
	unsigned code = status_json(&json, 503, "failed", "infertop serve is ending", NULL);
	serve_free_run(r);
	control_answer_later(s->ctl, later, code, json);
}

static unsigned serve_busy(struct serve *s, char **json)
{
	cJSON *j = cJSON_CreateObject();
	if (j) {
		cJSON_AddStringToObject(j, "status", "refused");
		if (s->cur) {
			cJSON_AddStringToObject(j, "message", "a run is going on: one at a time");
			cJSON_AddStringToObject(j, "id", s->cur->id);
		} else {
			cJSON_AddStringToObject(j, "message", "a run is starting (its target is being checked): one at a time");
		}
	}
	*json = answer(j);
	return 409;
}

/* A run spec reads dataset and trace files under --data-dir only: anyone
 * who may start a run could otherwise send any file the server can read,
 * line by line, to a URL of their choosing (or probe which files exist).
 * The path (relative: to the directory) is resolved, symbolic links and
 * ".." included, before it is checked, and the run opens the resolved
 * path, so what was checked is what is read. *spec is "PREFIX" (plen
 * bytes) followed by the file; kind names it in messages. 0, or -1 with
 * the refusal in err. */
static int serve_file_check(const struct serve *s, char **spec, size_t plen, const char *kind, char *err,
			    size_t errcap)
{
	const char *file = *spec + plen;
	if (!s->data_dir) {
		snprintf(err, errcap, "run specs may not name a %s file: infertop serve reads them only under "
			 "--data-dir DIR, and was started without it", kind);
		return -1;
	}
	char joined[PATH_MAX], real[PATH_MAX];
	int n = file[0] == '/' ? snprintf(joined, sizeof joined, "%s", file)
			       : snprintf(joined, sizeof joined, "%s/%s", s->data_dir, file);
	size_t dl = strlen(s->data_dir);
	bool root = strcmp(s->data_dir, "/") == 0;
	if (n < 0 || (size_t)n >= sizeof joined || !realpath(joined, real) ||
	    !(root || (strncmp(real, s->data_dir, dl) == 0 && real[dl] == '/'))) {
		/* One answer for missing and outside alike: it tells nothing
		 * about files elsewhere. */
		snprintf(err, errcap, "%.200s is not a file under --data-dir %.200s (%s files are read from there "
			 "only)", file, s->data_dir, kind);
		return -1;
	}
	char *checked = malloc(plen + strlen(real) + 1);
	if (!checked) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	memcpy(checked, *spec, plen);
	strcpy(checked + plen, real);
	free(*spec);
	*spec = checked;
	return 0;
}

static int serve_dataset_check(const struct serve *s, struct config *cfg, char *err, size_t errcap)
{
	size_t plen = 0;
	if (!dataset_spec_file(cfg->dataset, &plen))
		return 0;
	return serve_file_check(s, &cfg->dataset, plen, "dataset", err, errcap);
}

/* --trace FORMAT:FILE: the same rule. */
static int serve_trace_check(const struct serve *s, struct config *cfg, char *err, size_t errcap)
{
	enum trace_format f;
	const char *path;
	if (!cfg->trace || trace_spec_parse(cfg->trace, &f, &path) != 0)
		return 0;
	return serve_file_check(s, &cfg->trace, (size_t)(path - cfg->trace), "trace", err, errcap);
}

static unsigned serve_post_run(struct serve *s, const char *body, size_t len, char **json,
			       struct control_later *later)
{
	if (s->cur || s->starting)
		return serve_busy(s, json);
	if (s->quitting)
		return status_json(json, 503, "failed", "infertop serve is ending", NULL);
	char field[RUNSPEC_FIELD_MAX], err[RUNSPEC_ERR_MAX];
	struct runspec rs;
	if (runspec_build(body, len, cli_option_kind, &rs, field, err) != 0)
		return status_json(json, 400, "invalid", err, field);
	struct serve_run *r = calloc(1, sizeof *r);
	if (!r) {
		runspec_free(&rs);
		return status_json(json, 500, "failed", "out of memory", NULL);
	}
	char cfield[RUNSPEC_FIELD_MAX];
	/* serve's slice goes first, so a spec's own "slice" comes later in
	 * argv and wins. */
	if (s->slice[0] && serve_argv_slice(&rs, s->slice) != 0) {
		runspec_free(&rs);
		serve_free_run(r);
		return status_json(json, 500, "failed", "out of memory", NULL);
	}
	enum cli_result cr = cli_parse_capture(&r->cfg, rs.argc, rs.argv, err, sizeof err, cfield, sizeof cfield);
	bool start_load = rs.start_load;
	/* vLLM keys that do not apply: in the answer and the result's
	 * warnings (cli_free frees it with the options). */
	if (cr == CLI_RUN && rs.ignored && !(r->cfg.vllm_ignored = cJSON_PrintUnformatted(rs.ignored)))
		cr = CLI_EXIT_USAGE, snprintf(err, sizeof err, "out of memory"), cfield[0] = '\0';
	runspec_free(&rs);
	if (cr != CLI_RUN) {
		serve_free_run(r);
		return status_json(json, 400, "invalid", err, cfield);
	}
	if (serve_dataset_check(s, &r->cfg, err, sizeof err) != 0) {
		serve_free_run(r);
		return status_json(json, 400, "invalid", err, start_load ? "dataset_path" : "dataset");
	}
	if (serve_trace_check(s, &r->cfg, err, sizeof err) != 0) {
		serve_free_run(r);
		return status_json(json, 400, "invalid", err, "trace");
	}
	/* No screen, no progress lines; the key comes from serve's own
	 * --api-key-env, never from the spec. */
	r->cfg.no_tui = true;
	r->cfg.quiet = true;
	free(r->cfg.api_key_env);
	r->cfg.api_key_env = s->cfg->api_key_env ? strdup(s->cfg->api_key_env) : NULL;
	/* serve's TLS settings are its runs': its --cacert (a spec may not
	 * name a file), and its -k for every run (a spec may still ask for
	 * -k itself). */
	r->cfg.insecure = r->cfg.insecure || s->cfg->insecure;
	if (s->cfg->cacert && !(r->cfg.cacert = strdup(s->cfg->cacert))) {
		unsigned code = status_json(json, 500, "failed", "out of memory", NULL);
		serve_free_run(r);
		return code;
	}
	long want = r->cfg.rate > 0 ? r->cfg.max_concurrency : r->cfg.concurrency;
	if (want > cmd_concurrency_limit()) {
		snprintf(err, sizeof err, "%ld streams are above the file descriptor limit (%ld)", want,
			 cmd_concurrency_limit());
		unsigned code = status_json(json, 400, "invalid", err, r->cfg.rate > 0 ? "max-concurrency" : "concurrency");
		serve_free_run(r);
		return code;
	}
	r->sess = session_new(&r->cfg, s->loop, err, sizeof err);
	if (r->sess && s->up)
		session_share_uploader(r->sess, s->up);
	if (!r->sess) {
		field_of_message(err, cfield, sizeof cfield);
		unsigned code = status_json(json, 400, "invalid", err, cfield);
		serve_free_run(r);
		return code;
	}
	r->e = session_engine(r->sess);
	/* The server is checked and the model picked before the run is
	 * accepted, so a bad target is the POST's answer, not a failed run
	 * found later; on the loop, so nobody else waits. */
	if (session_probe(r->sess, serve_on_probed, s) != 0) {
		serve_free_run(r);
		return status_json(json, 500, "failed", "out of memory", NULL);
	}
	s->starting = r;
	s->starting_answer = later;
	return CONTROL_LATER;
}

static struct serve_run *serve_find(struct serve *s, const char *id, size_t n)
{
	if (n != 32)
		return NULL;
	for (size_t i = 0; i < s->nruns; i++)
		if (memcmp(s->runs[i]->id, id, 32) == 0)
			return s->runs[i];
	return NULL;
}

static unsigned serve_get_run(struct serve_run *r, char **json)
{
	cJSON *j = run_brief(r);
	if (!j)
		return status_json(json, 500, "failed", "out of memory", NULL);
	char *text = NULL;
	size_t len = 0;
	if (!r->done) {
		struct run_view v;
		engine_view(r->e, &v);
		text = snapshot_build(&v, clock_now_ns(), SNAPSHOT_KEY);
		len = text ? strlen(text) : 0;
	} else if (r->written) {
		text = read_file(r->path, &len);
	}
	cJSON *summary = text ? cJSON_ParseWithLength(text, len) : NULL;
	free(text);
	if (summary)
		cJSON_AddItemToObject(j, r->done ? "result" : "summary", summary);
	*json = answer(j);
	return 200;
}

static unsigned serve_runs(void *ud, const char *method, const char *path, const char *body, size_t len,
			   char **json, struct control_later *later)
{
	struct serve *s = ud;
	size_t plen = strcspn(path, "?");
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	bool post = strcmp(method, "POST") == 0;
	if ((plen == 8 && memcmp(path, "/v1/runs", 8) == 0) || (plen == 11 && memcmp(path, "/start-load", 11) == 0)) {
		if (post)
			return serve_post_run(s, body, len, json, later);
		if (get && plen == 8) {
			cJSON *a = cJSON_CreateArray();
			for (size_t i = 0; a && i < s->nruns; i++)
				cJSON_AddItemToArray(a, run_brief(s->runs[i]));
			cJSON *j = cJSON_CreateObject();
			if (j)
				cJSON_AddItemToObject(j, "runs", a);
			else
				cJSON_Delete(a);
			*json = answer(j);
			return 200;
		}
		return status_json(json, 405, "method_not_allowed", "method not allowed", NULL);
	}
	/* /v1/runs/ID or /v1/runs/ID/result */
	const char *id = path + 9;
	size_t idlen = strcspn(id, "/?");
	const char *rest = id + idlen;
	size_t restlen = plen - (size_t)(rest - path);
	bool result = restlen == 7 && memcmp(rest, "/result", 7) == 0;
	if (restlen && !result)
		return status_json(json, 404, "not_found", "no such endpoint", NULL);
	struct serve_run *r = serve_find(s, id, idlen);
	if (!r)
		return status_json(json, 404, "not_found", "no such run", NULL);
	if (result) {
		if (!get)
			return status_json(json, 405, "method_not_allowed", "method not allowed", NULL);
		if (!r->done)
			return status_json(json, 409, "refused", "the run is still going on", NULL);
		if (!r->written)
			return status_json(json, 500, "failed", r->error, NULL);
		size_t n;
		char *text = read_file(r->path, &n);
		if (!text)
			return status_json(json, 500, "failed", "cannot read the result file", NULL);
		*json = text;
		return 200;
	}
	if (get)
		return serve_get_run(r, json);
	if (strcmp(method, "DELETE") == 0) {
		if (r->done)
			return status_json(json, 409, "refused", "the run is over", NULL);
		struct cmd_result cr;
		session_start_now(r->sess); /* one waiting for --start-at ends at once */
		enum cmd_status st = engine_cmd_stop(r->e, CMD_SRC_API, &cr);
		return status_json(json, st == CMD_OK || st == CMD_UNCHANGED ? 202 : 409, cmd_status_name(st), cr.msg,
				   NULL);
	}
	return status_json(json, 405, "method_not_allowed", "method not allowed", NULL);
}

/* ---- main ---- */

int serve_main(int argc, char **argv)
{
	struct config cfg;
	int done = cli_parse_or_exit(&cfg, argc, argv);
	if (done >= 0)
		return done;
	int rc = 2;
	char err[512];
	struct serve s = {.cfg = &cfg};
	if (!cfg.listen) {
		fprintf(stderr, "infertop serve: give --listen ADDR:PORT\n");
		goto out;
	}
	if (snapshot_dir_check(cfg.results_dir ? "--results-dir" : "--results-dir (none given: the current directory)",
			       cfg.results_dir ? cfg.results_dir : ".", err, sizeof err) != 0) {
		fprintf(stderr, "infertop serve: %s\n", err);
		goto out;
	}
	if (cfg.slice_count) {
		snprintf(s.slice, sizeof s.slice, "%ld/%ld", cfg.slice_index, cfg.slice_count);
		fprintf(stderr, "infertop serve: every run takes slice %s of the dataset (--slice)\n", s.slice);
	} else {
		int got = serve_slice_from_env(s.slice, sizeof s.slice, err, sizeof err);
		if (got < 0) {
			fprintf(stderr, "infertop serve: %s\n", err);
			goto out;
		}
		if (got > 0)
			fprintf(stderr, "infertop serve: every run takes slice %s of the dataset "
				"(JOB_COMPLETION_INDEX, %s)\n", s.slice, SERVE_SLICE_COUNT_ENV);
	}
	if (cfg.data_dir) {
		struct stat st;
		s.data_dir = realpath(cfg.data_dir, NULL);
		if (!s.data_dir || stat(s.data_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "infertop serve: --data-dir %s: not a directory\n", cfg.data_dir);
			goto out;
		}
		fprintf(stderr, "infertop serve: run specs may read dataset files under %s (--data-dir)\n", s.data_dir);
	}
	s.loop = ev_default_loop(EVFLAG_AUTO);
	if (!s.loop) {
		fprintf(stderr, "infertop serve: cannot create the event loop\n");
		goto out;
	}
	struct control_opts co = {
		.listen = cfg.listen,
		.token_env = cfg.listen_token_env,
		.metrics_open = cfg.listen_metrics_open,
		.allow_hosts = cfg.listen_allow_hosts,
		.nallow_hosts = cfg.nlisten_allow_hosts,
		.id = cfg.id,
		.loop = s.loop,
	};
	s.ctl = control_start(NULL, &co, stderr, err, sizeof err);
	if (!s.ctl) {
		fprintf(stderr, "infertop serve: %s\n", err);
		goto out;
	}
	if (cfg.upload) {
		struct upload_opts uo = {
			.url = cfg.upload, .endpoint = cfg.upload_endpoint, .region = cfg.upload_region,
			.quiet = cfg.quiet,
		};
		if (!(s.up = uploader_new(s.loop, &uo, err, sizeof err))) {
			fprintf(stderr, "infertop serve: --upload: %s\n", err);
			control_stop(s.ctl);
			goto out;
		}
		fprintf(stderr, "infertop serve: every run's files go up to %s\n", cfg.upload);
	}
	control_set_runs(s.ctl, serve_runs, &s);
	ev_idle_init(&s.reaper, serve_on_reap);
	s.reaper.data = &s;
	serve_take_signals(&s);
	ev_run(s.loop, 0);
	rc = 0;
	if (s.cur)
		session_abort(s.cur->sess, "infertop serve is ending");
	loop_signal_release(LOOP_SIGINT, serve_on_signal, &s);
	loop_signal_release(LOOP_SIGTERM, serve_on_signal, &s);
	if (s.starting)
		serve_drop_starting(&s);
	ev_idle_stop(s.loop, &s.reaper);
	control_stop(s.ctl);
	for (size_t i = 0; i < s.nruns; i++)
		serve_free_run(s.runs[i]);
	/* The last run's files may still be going up: waited for (Ctrl-C
	 * again abandons them, named), and a failed one fails serve, as it
	 * fails a command-line run. */
	if (s.up) {
		uploader_wait(s.up, UPLOAD_WAIT_MAX_S, stderr);
		unsigned long lost = uploader_failed(s.up);
		if (lost > 0) {
			fprintf(stderr, "infertop serve: %lu upload%s to %s failed\n", lost, lost == 1 ? "" : "s",
				cfg.upload);
			rc = 1;
		}
		uploader_free(s.up);
	}
out:
	free(s.data_dir);
	cli_free(&cfg);
	return rc;
}
