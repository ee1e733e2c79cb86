#include "config.h"

#include "infertop/engine.h"
#include "engine_internal.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/trace_replay.h"
#include "infertop/dist.h"
#include "infertop/fetch.h"
#include "infertop/http.h"
#include "infertop/loop.h"
#include "infertop/redact.h"
#include "infertop/reqlog.h"
#include "infertop/reqtrack.h"
#include "infertop/sampler.h"
#include "infertop/scrape.h"
#include "infertop/sessions.h"
#include "infertop/snapshot.h"
#include "infertop/tls.h"
#include "infertop/url.h"

#define ENGINE_TICK_S 0.25

static void list_push(struct request **head, struct request *r)
{
	r->prev = NULL;
	r->next = *head;
	if (*head)
		(*head)->prev = r;
	*head = r;
}

static void list_unlink(struct request **head, struct request *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		*head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

static void engine_release_signals(struct engine *e);

static void engine_check_end(struct engine *e)
{
	if (e->state == ENGINE_DONE)
		return;
	if (e->live != NULL || sessions_live(e->sessions))
		return;
	if (e->state == ENGINE_RUNNING && !load_exhausted(&e->load))
		return;
	e->state = ENGINE_DONE;
	e->t_end = clock_now_ns();
	plan_finish(e->plan, e->t_end);
	if (!e->t_stop)
		e->t_stop = e->t_end;
	if (!e->stop_reason)
		e->stop_reason = e->trace && trace_replay_ended(e->trace) ? "trace replayed"
				 : e->sessions					 ? "session limit reached"
										 : "request limit reached";
	ev_timer_stop(e->loop, &e->grace);
	ev_timer_stop(e->loop, &e->duration);
	ev_timer_stop(e->loop, &e->tick);
	ev_timer_stop(e->loop, &e->retry);
	snapshot_writer_stop(e->snap);
	reqlog_flush(e->reqlog);
	load_stop(&e->load);
	stats_tick(e->stats, e->t_end);
	scrape_stop(e->scrape);
	scrape_update_derived(e->scrape, e->t_end, e->stats->win_c.output_tokens,
			      stats_window_seconds(e->stats, e->t_end));
	struct run_view v;
	engine_view(e, &v);
	sampler_push(&e->sampler, e->series, &v, e->t_end);
	if (e->on_tick)
		e->on_tick(e, e->on_tick_ud, e->t_end);
	engine_release_signals(e);
	/* engine_run's ev_run ends here; a loop that outlives the run
	 * (serve) is told through the done callback instead. */
	if (e->running_loop || !e->on_done)
		ev_break(e->loop, EVBREAK_ONE);
	if (e->on_done)
		e->on_done(e, e->on_done_ud);
}

/* A server that refuses connections, or answers 429 / 503, fails each
 * request at once; refilling at once would hammer it (thousands of errors a
 * second) and measure nothing. Every user (closed loop) or arrival (open
 * loop) waits: for the server's Retry-After when it sends one, else 50 ms
 * doubling to 1 s for refusals and to 10 s for 429/503, with +-25% jitter
 * so users do not come back in step, until a request gets through. */
#define ENGINE_BACKOFF_MIN_NS (50 * CLOCK_NS_PER_MS)
#define ENGINE_BACKOFF_MAX_NS CLOCK_NS_PER_S
#define ENGINE_BACKOFF_HTTP_MAX_NS (10 * CLOCK_NS_PER_S)

/* 0 for a refused connection, the status for 429/503, -1: no backoff. */
static int engine_backoff_code(const struct req_result *res)
{
	if (res->ok)
		return -1;
	if (res->err == ERR_CONNECT)
		return 0;
	if (res->err == ERR_HTTP && (res->http_code == 429 || res->http_code == 503))
		return res->http_code;
	return -1;
}

static void engine_back_off(struct engine *e, int code, int64_t retry_after_ns)
{
	/* One step per round of refusals, not per refused request. */
	if (ev_is_active(&e->retry))
		return;
	int64_t wait;
	if (retry_after_ns >= 0) {
		wait = retry_after_ns > 10 * CLOCK_NS_PER_MS ? retry_after_ns : 10 * CLOCK_NS_PER_MS;
	} else {
		int64_t cap = code ? ENGINE_BACKOFF_HTTP_MAX_NS : ENGINE_BACKOFF_MAX_NS;
		e->backoff_ns = e->backoff_ns ? e->backoff_ns * 2 : ENGINE_BACKOFF_MIN_NS;
		if (e->backoff_ns > cap)
			e->backoff_ns = cap;
		/* xorshift64: jitter only, seeded from --seed. */
		e->jitter ^= e->jitter << 13;
		e->jitter ^= e->jitter >> 7;
		e->jitter ^= e->jitter << 17;
		double f = 0.75 + 0.5 * (double)(e->jitter >> 11) / 9007199254740992.0;
		wait = (int64_t)((double)e->backoff_ns * f);
	}
	e->backoff_code = code;
	load_backoff(&e->load, true);
	ev_timer_set(&e->retry, (double)wait / 1e9, 0.);
	ev_timer_start(e->loop, &e->retry);
}

static void engine_on_request_done(void *ud, struct request *r, const struct req_result *res)
{
	struct engine *e = ud;
	/* A session's request is owned by its session, which knows the
	 * model; a lone request carries its model's index. */
	struct session *s = e->sessions ? r->owner_data : NULL;
	int model = s ? sessions_model_index(s) : (int)(intptr_t)r->owner_data;
	reqtrack_done(e->rt, r, res);
	reqlog_request(e->reqlog, r, res, e->t_start);
	list_unlink(&e->live, r);
	list_push(&e->spare, r);
	r->answer = NULL;
	r->turn = 0;
	int64_t now = clock_now_ns();
	plan_request_done(e->plan, model, res, now);
	int code = engine_backoff_code(res);
	if (code >= 0)
		engine_back_off(e, code, res->retry_after_ns);
	else if (res->ok)
		e->backoff_ns = 0;
	/* Its next turn may start here, on this very request. */
	if (s)
		sessions_turn_done(e->sessions, s, res, now);
	load_on_done(&e->load);   /* starts nothing while backing off */
	engine_check_end(e);
}

static void engine_on_retry(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct engine *e = w->data;
	load_backoff(&e->load, false);
	engine_check_end(e);
}

/* The plan's current step (a scenario, a matrix cell) may set the lengths;
 * an output length it sets beats a file's own, as --output-tokens does. */
static void engine_step_lengths(struct engine *e)
{
	const struct config *cfg = e->cfg;
	const struct dist *out = plan_output_dist(e->plan, &cfg->output_dist);
	dataset_set_lengths(e->dataset, plan_input_dist(e->plan, &cfg->input_dist), out,
			    cfg->have_output_tokens || out != &cfg->output_dist);
}

/* A request from the pool, NULL when out of memory. */
static struct request *engine_take_request(struct engine *e)
{
	struct request *r = e->spare;
	if (r) {
		list_unlink(&e->spare, r);
	} else {
		r = request_new(&e->rctx);
		if (r)
			e->pool_size++;
	}
	return r;
}

/* Keep room for every stream's connection in the cache, or a raised
 * load would close and reopen connections on every request. */
static void engine_grow_cache(struct engine *e)
{
	if ((long)e->stats->in_flight + 16 > e->cache_size) {
		e->cache_size = (long)e->stats->in_flight * 2 + 16;
		http_set_cache(e->http, e->cache_size);
	}
}

/* One turn of a session (sessions.h: sessions_ops.send). */
static int engine_send_turn(void *ud, struct session *s, const char *model, char *body, size_t len, long input_tokens,
			    uint32_t turn, struct request_answer *answer, int64_t t_intended)
{
	struct engine *e = ud;
	struct request *r = engine_take_request(e);
	if (!r) {
		free(body);
		return -1;
	}
	r->prompt_estimate = input_tokens;
	r->owner_data = s;
	r->turn = turn;
	r->answer = answer;
	reqtrack_start(e->rt, r, model);
	if (request_start(r, body, len, t_intended) != 0) {
		r->answer = NULL;
		r->turn = 0;
		list_push(&e->spare, r);
		return -1;
	}
	list_push(&e->live, r);
	engine_grow_cache(e);
	return 0;
}

/* A session ended on its own think timer: as a request's end would, it
 * makes room for another and may end the run. */
static void engine_session_ended(void *ud)
{
	struct engine *e = ud;
	load_on_done(&e->load);
	engine_check_end(e);
}

static bool engine_load_held(void *ud)
{
	struct engine *e = ud;
	return e->load.paused || e->load.held;
}

void engine_sessions_release(struct engine *e)
{
	if (e->sessions && !engine_load_held(e))
		sessions_release(e->sessions);
}

static int engine_start_request(void *ud, int64_t t_intended)
{
	struct engine *e = ud;
	if (e->sessions) {
		int model;
		const char *name = plan_pick_model(e->plan, e->ropts.model, &model);
		return sessions_start(e->sessions, name, model, t_intended);
	}
	struct request *r = e->spare;
	if (r) {
		list_unlink(&e->spare, r);
	} else {
		r = request_new(&e->rctx);
		if (!r)
			return -1;
		e->pool_size++;
	}
	engine_step_lengths(e);
	struct oai_request_opts o = e->ropts;
	int model;
	o.model = plan_pick_model(e->plan, o.model, &model);
	size_t len = 0;
	long in = 0;
	char *body;
	if (e->trace) {
		/* Arrivals start in their order: the oldest scheduled record
		 * is this one's. It is let go once its request is under way. */
		const struct trace_rec *t = trace_replay_peek(e->trace);
		struct dataset_trace_req tq = {
			.input_tokens = t ? t->input_tokens : 1, .output_tokens = t ? t->output_tokens : 1,
			.hash = t ? t->hash : NULL, .nhash = t ? t->nhash : 0,
			.block_tokens = e->cfg->trace_block_tokens,
		};
		body = t ? dataset_trace_body(e->dataset, &e->prompt_rng, &o, &tq, &len, &in) : NULL;
	} else {
		body = dataset_next_body(e->dataset, &e->prompt_rng, &o, &len, &in);
	}
	if (!body) {
		list_push(&e->spare, r);
		return -1;
	}
	r->prompt_estimate = in;
	r->owner_data = (void *)(intptr_t)model;
	reqtrack_start(e->rt, r, o.model);
	if (request_start(r, body, len, t_intended) != 0) {
		list_push(&e->spare, r);
		return -1;
	}
	if (e->trace)
		trace_replay_pop(e->trace);
	list_push(&e->live, r);
	/* Keep room for every stream's connection in the cache, or a raised
	 * load would close and reopen connections on every request. */
	if ((long)e->stats->in_flight + 16 > e->cache_size) {
		e->cache_size = (long)e->stats->in_flight * 2 + 16;
		http_set_cache(e->http, e->cache_size);
	}
	return 0;
}

static bool engine_trace_next(void *ud, int64_t *at_ns)
{
	struct engine *e = ud;
	return trace_replay_next(e->trace, at_ns);
}

const char *engine_trace_describe(const struct engine *e)
{
	return e->trace ? trace_replay_describe(e->trace) : NULL;
}

/* What the load counts: sessions (thinking ones too) with --sessions. */
static uint64_t engine_in_flight(void *ud)
{
	struct engine *e = ud;
	return e->sessions ? sessions_live(e->sessions) : e->stats->in_flight;
}

const char *engine_sessions_describe(const struct engine *e)
{
	return e->sessions ? sessions_describe(e->sessions) : NULL;
}

void engine_abort(struct engine *e, const char *reason)
{
	if (!e->stop_reason)
		e->stop_reason = reason;
	load_stop(&e->load);
	if (!e->t_stop)
		e->t_stop = clock_now_ns();
	if (e->state == ENGINE_RUNNING)
		e->state = ENGINE_DRAINING;
	if (e->sessions)
		sessions_stop(e->sessions);
	while (e->live)
		request_abort(e->live, ERR_ABORTED, "still running when the run ended");
	engine_check_end(e);
}

static void engine_on_grace(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	engine_abort(w->data, NULL);
}

void engine_stop(struct engine *e, const char *reason)
{
	if (e->state != ENGINE_RUNNING)
		return;
	e->state = ENGINE_DRAINING;
	e->stop_reason = reason;
	e->t_stop = clock_now_ns();
	load_stop(&e->load);
	/* Thinking sessions end now; the others with their turn in flight. */
	if (e->sessions)
		sessions_stop(e->sessions);
	ev_timer_stop(e->loop, &e->duration);
	ev_timer_set(&e->grace, (double)e->cfg->grace_ns / 1e9, 0.);
	ev_timer_start(e->loop, &e->grace);
	engine_check_end(e);
}

static void engine_on_signal(void *ud, int signum)
{
	struct engine *e = ud;
	/* A closed terminal or a dropped SSH session (SIGHUP) must not cost
	 * the run: it stops as SIGTERM does and finishes without the screen. */
	if (signum == SIGHUP)
		e->hung_up = true;
	if (++e->interrupts == 1) {
		if (!e->cfg->quiet && !e->hung_up)
			fprintf(stderr, "infertop: stopping: in-flight requests get %.0fs to finish "
					"(press Ctrl-C again to abort them)\n",
				(double)e->cfg->grace_ns / 1e9);
		engine_stop(e, signum == SIGINT    ? "interrupted (SIGINT)"
			       : signum == SIGHUP ? "hangup (SIGHUP): the terminal closed"
						  : "terminated (SIGTERM)");
	} else {
		engine_abort(e, "interrupted twice");
	}
}

static void engine_release_signals(struct engine *e)
{
	loop_signal_release(LOOP_SIGINT, engine_on_signal, e);
	loop_signal_release(LOOP_SIGTERM, engine_on_signal, e);
	loop_signal_release(LOOP_SIGHUP, engine_on_signal, e);
}

static void engine_on_duration(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct engine *e = w->data;
	/* Said in the reason: a replay that did not get to its end. */
	if (e->trace && trace_replay_sent(e->trace) < trace_replay_total(e->trace))
		engine_stop(e, trace_replay_cut_note(e->trace));
	else
		engine_stop(e, "duration reached");
}

static void engine_on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct engine *e = w->data;
	int64_t now = clock_now_ns();
	stats_tick(e->stats, now);
	scrape_update_derived(e->scrape, now, e->stats->win_c.output_tokens, stats_window_seconds(e->stats, now));
	struct run_view v;
	engine_view(e, &v);
	sampler_push(&e->sampler, e->series, &v, now);
	reqlog_tick(e->reqlog, now);
	if (e->on_tick)
		e->on_tick(e, e->on_tick_ud, now);
}

static void engine_on_plan_end(void *ud)
{
	engine_stop(ud, "plan finished");
}

static void engine_view_for_writer(void *ud, struct run_view *v)
{
	engine_view(ud, v);
}

static char *str_printf(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s", a, b);
	return s;
}

/* 128 random bits: snapshots and the result of one run carry the same id,
 * so merging a run with itself (or with its own snapshot) is caught. */
static void engine_new_run_id(char out[33])
{
	unsigned char b[16];
	if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
		/* No entropy yet (early boot): time and pid still tell runs apart. */
		uint64_t x = (uint64_t)clock_now_ns() ^ ((uint64_t)getpid() << 32);
		for (size_t i = 0; i < sizeof b; i++, x = x * 6364136223846793005ULL + 1442695040888963407ULL)
			b[i] = (unsigned char)(x >> 56);
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* An endpoint on the target, its query kept (url.h). */
static char *engine_url(const char *base, const char *path)
{
	size_t cap = strlen(base) + strlen(path) + 64;
	char *u = malloc(cap);
	if (u && url_join(base, path, u, cap) != 0) {
		free(u);
		u = NULL;
	}
	return u;
}

static int engine_build_headers(struct engine *e)
{
	struct curl_slist *h = NULL, *t;
	const char *fixed[] = {"Content-Type: application/json", "Accept: text/event-stream", "Expect:"};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		if (!(t = curl_slist_append(h, fixed[i])))
			goto fail;
		h = t;
	}
	const char *key = e->cfg->api_key_env ? getenv(e->cfg->api_key_env) : NULL;
	if (key && *key) {
		char *line = str_printf("Authorization: Bearer ", key);
		if (!line)
			goto fail;
		t = curl_slist_append(h, line);
		memset(line, 0, strlen(line));
		free(line);
		if (!t)
			goto fail;
		h = t;
		/* Kept only to scrub it from what a server echoes back. */
		size_t n = 0;
		while (e->secrets[n])
			n++;
		char **more = realloc(e->secrets, (n + 2) * sizeof *more);
		if (!more)
			goto fail;
		e->secrets = more;
		if (!(more[n] = strdup(key)))
			goto fail;
		more[n + 1] = NULL;
	}
	for (size_t i = 0; i < e->cfg->nheaders; i++) {
		if (!(t = curl_slist_append(h, e->cfg->headers[i])))
			goto fail;
		h = t;
	}
	e->headers = h;
	return 0;
fail:
	curl_slist_free_all(h);
	return -1;
}

struct engine *engine_new(const struct config *cfg, struct ev_loop *loop, char *err, size_t errcap)
{
	struct engine *e = calloc(1, sizeof *e);
	if (!e) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	e->cfg = cfg;
	e->loop = loop;
	engine_new_run_id(e->run_id);
	e->endpoint = engine_url(cfg->url, cfg->api == OAI_CHAT ? "/v1/chat/completions" : "/v1/completions");
	e->http = http_new(loop);
	e->stats = stats_new(cfg->window_ns, clock_now_ns());
	e->series = series_new();
	e->snap = snapshot_writer_new(loop, cfg, engine_view_for_writer, e);
	e->secrets = url_secrets(cfg->url);
	e->rt = reqtrack_new(&e->live);
	if (!e->endpoint || !e->http || !e->stats || !e->series || !e->snap || !e->secrets || !e->rt ||
	    engine_build_headers(e) != 0) {
		snprintf(err, errcap, "out of memory while setting up");
		engine_free(e);
		return NULL;
	}
	if (cfg->extra_body) {
		e->extra_body = cJSON_Parse(cfg->extra_body);
		if (!e->extra_body) {
			snprintf(err, errcap, "--extra-body is not valid JSON");
			engine_free(e);
			return NULL;
		}
	}
	if (cfg->model && !(e->model = strdup(cfg->model))) {
		snprintf(err, errcap, "out of memory");
		engine_free(e);
		return NULL;
	}
	if ((cfg->request_log || cfg->save_detailed) && !(e->reqlog = reqlog_open_config(cfg, err, errcap))) {
		engine_free(e);
		return NULL;
	}
	/* Found out now, not at the first snapshot an hour into the run. */
	if (cfg->snapshot_dir && snapshot_dir_check("--snapshot-dir", cfg->snapshot_dir, err, errcap) != 0) {
		engine_free(e);
		return NULL;
	}
	rng_seed(&e->prompt_rng, cfg->seed ^ 0x5eedULL);
	/* A bad dataset file stops here, before anything is sent. */
	if (!(e->dataset = dataset_open(cfg, err, errcap))) {
		engine_free(e);
		return NULL;
	}
	/* So does a bad trace line: the whole file is read once now. */
	if (cfg->trace && !(e->trace = trace_replay_open(cfg, err, errcap))) {
		engine_free(e);
		return NULL;
	}
	if (cfg->sessions) {
		struct sessions_ops ops = {
			.send = engine_send_turn, .ended = engine_session_ended, .held = engine_load_held, .ud = e,
		};
		if (!(e->sessions = sessions_new(cfg, e->dataset, &e->ropts, loop, e->stats, &ops, err, errcap))) {
			engine_free(e);
			return NULL;
		}
	}
	if (!(cfg->metrics_url && strcmp(cfg->metrics_url, "none") == 0) || cfg->gpu_metrics_url) {
		e->server = calloc(1, sizeof *e->server);
		if (!e->server) {
			snprintf(err, errcap, "out of memory");
			engine_free(e);
			return NULL;
		}
		e->scrape = scrape_new(loop, e->http, cfg, e->server, err, errcap);
		if (!e->scrape) {
			engine_free(e);
			return NULL;
		}
	}

	e->rctx.http = e->http;
	e->rctx.stats = e->stats;
	e->rctx.endpoint = e->endpoint;
	e->rctx.headers = e->headers;
	e->rctx.secrets = (const char *const *)e->secrets;
	e->rctx.timeout_ms = (long)(cfg->timeout_ns / CLOCK_NS_PER_MS);
	e->rctx.insecure = cfg->insecure;
	e->rctx.cacert = cfg->cacert;
	e->rctx.new_connection = cfg->new_connection;
	/* Checked when parsed: an unknown name cannot get here. */
	if (cfg->http_client)
		request_client_parse(cfg->http_client, &e->rctx.client);
	e->rctx.on_done = engine_on_request_done;
	reqlog_hook(e->reqlog, &e->rctx);
	e->rctx.ud = e;

	load_init(&e->load, loop, cfg->seed, engine_start_request, engine_in_flight, e);
	if (cfg->requests > 0)
		load_set_limit(&e->load, (uint64_t)cfg->requests);
	if (plan_new(cfg, &e->plan, err, errcap) != 0) {
		engine_free(e);
		return NULL;
	}
	engine_step_lengths(e);

	ev_timer_init(&e->tick, engine_on_tick, ENGINE_TICK_S, ENGINE_TICK_S);
	ev_timer_init(&e->grace, engine_on_grace, 0., 0.);
	ev_timer_init(&e->duration, engine_on_duration, 0., 0.);
	ev_timer_init(&e->retry, engine_on_retry, 0., 0.);
	e->jitter = cfg->seed * 0x9E3779B97F4A7C15ULL + 1;
	e->tick.data = e->grace.data = e->duration.data = e->retry.data = e;
	return e;
}

void engine_free(struct engine *e)
{
	if (!e)
		return;
	/* A snapshot still being written is waited for (its outcome is
	 * reported) while everything it was forked from still exists. */
	snapshot_writer_free(e->snap);
	reqlog_close(e->reqlog);
	if (e->loop) {
		engine_release_signals(e);
		ev_timer_stop(e->loop, &e->tick);
		ev_timer_stop(e->loop, &e->grace);
		ev_timer_stop(e->loop, &e->duration);
		ev_timer_stop(e->loop, &e->retry);
	}
	while (e->live) {
		struct request *r = e->live;
		list_unlink(&e->live, r);
		http_remove(e->http, r->easy);
		request_free(r);
	}
	while (e->spare) {
		struct request *r = e->spare;
		list_unlink(&e->spare, r);
		request_free(r);
	}
	reqtrack_free(e->rt);
	scrape_free(e->scrape);
	free(e->server);
	plan_free(e->plan);
	load_free(&e->load);
	engine_probe_cancel(e);
	sessions_free(e->sessions);
	dataset_free(e->dataset);
	trace_replay_free(e->trace);
	http_free(e->http);
	stats_free(e->stats);
	series_free(e->series);
	curl_slist_free_all(e->headers);
	cJSON_Delete(e->extra_body);
	free(e->endpoint);
	url_secrets_free(e->secrets);
	free(e->model);
	free(e);
}

#define PROBE_TIMEOUT_MS 10000L
#define PROBE_BODY_MAX ((size_t)4 << 20)   /* a gateway lists hundreds of models */

/* The probe on the loop: GET /v1/models (the server answers, and which
 * model it serves), then the prompt calibration; each answer takes the
 * next step. */
struct probe {
	struct engine *e;
	struct fetch *f;
	struct calib *calib;    /* the calibration under way, after the GET */
	char *url;
	engine_probed_fn fn;
	void *ud;
};

static void probe_end(struct probe *p, int rc, const char *err)
{
	struct engine *e = p->e;
	engine_probed_fn fn = p->fn;
	void *ud = p->ud;
	fetch_free(p->f);
	free(p->url);
	free(p);
	e->probe = NULL;
	char msg[512];
	snprintf(msg, sizeof msg, "%s", err ? err : "");
	if (rc != 0)
		redact_secrets(msg, (const char *const *)e->secrets);
	fn(ud, rc, msg);
}

static void probe_calibrated(void *ud, int rc, const char *note)
{
	(void)note; /* a fallback is told in the dataset's description */
	struct probe *p = ud;
	p->calib = NULL;
	probe_end(p, rc == 0 ? 0 : -1, rc == 0 ? NULL : "out of memory while calibrating prompt lengths");
}

static void probe_on_models(void *ud, long status, const char *body, size_t len, const char *cerr)
{
	struct probe *p = ud;
	struct engine *e = p->e;
	char err[2600];
	/* Messages name the URL without credentials or query values. */
	char shown[1024], base[1024];
	redact_url(p->url, shown, sizeof shown);
	redact_url(e->cfg->url, base, sizeof base);
	if (cerr) {
		snprintf(err, sizeof err, "cannot reach %s: %s", base, cerr);
		probe_end(p, -1, err);
		return;
	}
	if (status == 401 || status == 403) {
		char m[160];
		oai_error_body_message(body, len, m, sizeof m);
		snprintf(err, sizeof err,
			 "%s refused the request (HTTP %ld: %s); set the key with $%s or --api-key-env", shown, status, m,
			 e->cfg->api_key_env ? e->cfg->api_key_env : "OPENAI_API_KEY");
		probe_end(p, -1, err);
		return;
	}
	/* The server answers; a missing /v1/models is fine when -m is given. */
	if (!e->model) {
		char id[256];
		if (status != 200) {
			snprintf(err, sizeof err, "GET %s answered HTTP %ld; give the model with -m/--model", shown,
				 status);
			probe_end(p, -1, err);
			return;
		}
		if (oai_models_first_id(body, len, id, sizeof id) != 0) {
			snprintf(err, sizeof err, "GET %s listed no model; give the model with -m/--model", shown);
			probe_end(p, -1, err);
			return;
		}
		if (!(e->model = strdup(id))) {
			probe_end(p, -1, "out of memory");
			return;
		}
	}
	/* Prompt lengths in the server's own tokens; a server without
	 * /tokenize leaves the estimate (noted in the description). */
	struct calib *c = dataset_calibrate_start(e->dataset, e->http, e->cfg->url, e->headers,
						  (const char *const *)e->secrets, e->model,
						  &(struct tls_opts){.insecure = e->cfg->insecure, .cafile = e->cfg->cacert},
						  probe_calibrated, p);
	if (!c)
		probe_end(p, -1, "out of memory while calibrating prompt lengths");
	else if (c != CALIBRATE_ENDED)
		p->calib = c; /* (when it ended already, p is gone with it) */
}

int engine_probe_start(struct engine *e, engine_probed_fn fn, void *ud)
{
	if (e->probe)
		return -1;
	struct probe *p = calloc(1, sizeof *p);
	if (!p)
		return -1;
	p->e = e;
	p->fn = fn;
	p->ud = ud;
	p->url = engine_url(e->cfg->url, "/v1/models");
	p->f = fetch_new(e->http, PROBE_BODY_MAX, probe_on_models, p);
	if (!p->url || !p->f) {
		fetch_free(p->f);
		free(p->url);
		free(p);
		return -1;
	}
	CURL *c = fetch_easy(p->f);
	curl_easy_setopt(c, CURLOPT_URL, p->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, PROBE_TIMEOUT_MS);
	http_easy_tls(c, &(struct tls_opts){.insecure = e->cfg->insecure, .cafile = e->cfg->cacert});
	if (fetch_send(p->f) != 0) {
		fetch_free(p->f);
		free(p->url);
		free(p);
		return -1;
	}
	e->probe = p;
	return 0;
}

void engine_probe_cancel(struct engine *e)
{
	/* Dropped with its callback unsaid: the caller is going away. */
	struct probe *p = e->probe;
	if (!p)
		return;
	dataset_calibrate_cancel(p->calib);
	fetch_free(p->f);
	free(p->url);
	free(p);
	e->probe = NULL;
}

struct probe_wait {
	struct ev_loop *loop;
	bool done;
	int rc;
	char *err;
	size_t errcap;
};

static void probe_waited(void *ud, int rc, const char *err)
{
	struct probe_wait *w = ud;
	w->done = true;
	w->rc = rc;
	if (w->errcap)
		snprintf(w->err, w->errcap, "%s", err);
	ev_break(w->loop, EVBREAK_ONE);
}

int engine_probe(struct engine *e, char *err, size_t errcap)
{
	struct probe_wait w = {.loop = e->loop, .err = err, .errcap = errcap};
	if (errcap)
		err[0] = '\0';
	if (engine_probe_start(e, probe_waited, &w) != 0) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	while (!w.done)
		ev_run(e->loop, 0);
	return w.rc;
}

void engine_start(struct engine *e)
{
	const struct config *cfg = e->cfg;
	e->ropts.api = cfg->api;
	e->ropts.model = e->model;
	e->ropts.max_tokens = (int)cfg->output_tokens;
	e->ropts.ignore_eos = cfg->ignore_eos;
	e->ropts.have_temperature = cfg->have_temperature;
	e->ropts.temperature = cfg->temperature;
	e->ropts.extra_body = e->extra_body;

	long cache = cfg->rate > 0 ? (cfg->max_concurrency ? cfg->max_concurrency : 64) : cfg->concurrency;
	e->cache_size = cache + 16;
	http_set_cache(e->http, e->cache_size);

	/* Ctrl-C, kill and a closed terminal stop the run (a second time:
	 * abort it) for as long as it goes on. */
	loop_signal_set(e->loop, LOOP_SIGINT, engine_on_signal, e);
	loop_signal_set(e->loop, LOOP_SIGTERM, engine_on_signal, e);
	loop_signal_set(e->loop, LOOP_SIGHUP, engine_on_signal, e);
	ev_timer_start(e->loop, &e->tick);
	snapshot_writer_start(e->snap);
	if (cfg->duration_ns > 0 && !plan_owns_duration(e->plan)) {
		ev_timer_set(&e->duration, (double)cfg->duration_ns / 1e9, 0.);
		ev_timer_start(e->loop, &e->duration);
	}
	e->state = ENGINE_RUNNING;
	e->t_start = clock_now_ns();
	e->stats->start_ns = e->t_start;
	e->stats->slice_start_ns = e->t_start;
	scrape_start(e->scrape);
	if (cfg->max_concurrency)
		load_set_max_concurrency(&e->load, cfg->max_concurrency);
	e->load.max_change = cfg->max_change;
	/* A trace's schedule is the load; the plan's -c / -r are then
	 * ignored by the load. */
	if (e->trace)
		load_set_schedule(&e->load, engine_trace_next, e);
	/* The plan sets the first load: its first step's, or -c / -r. */
	plan_start(e->plan, e->loop, &e->load, e->stats, engine_on_plan_end, e);
	if (e->load.mode == LOAD_CLOSED && e->live == NULL && e->stats->started == 0) {
		/* Not a single request could be started: fail loudly, not hang.
		 * (Open loop starts from its arrival timer, inside the loop.) */
		e->stop_reason = "no request could be started";
		load_stop(&e->load);
	}
	engine_check_end(e);
}

void engine_run(struct engine *e)
{
	engine_start(e);
	if (e->state != ENGINE_DONE) {
		e->running_loop = true;
		ev_run(e->loop, 0);
		e->running_loop = false;
	}
	engine_release_signals(e);
}

void engine_set_on_done(struct engine *e, engine_done_fn fn, void *ud)
{
	e->on_done = fn;
	e->on_done_ud = ud;
}

int64_t engine_elapsed(const struct engine *e, int64_t now_ns)
{
	struct run_view v;
	engine_view(e, &v);
	return run_view_elapsed(&v, now_ns);
}

void engine_view(const struct engine *e, struct run_view *v)
{
	*v = (struct run_view){
		.cfg = e->cfg,
		.state = e->state,
		.stop_reason = e->stop_reason,
		.interrupts = e->interrupts,
		.hung_up = e->hung_up,
		.run_id = e->run_id,
		.model = e->model,
		.t_start = e->t_start,
		.t_end = e->t_end,
		.stats = e->stats,
		.load = &e->load,
		.backoff_code = e->backoff_code,
		.plan = e->plan,
		.live_step = plan_live_step(e->plan),
		.server = e->server,
		.series = e->series,
		.dataset = e->dataset,
		.reqlog = e->reqlog,
		.trace = e->trace,
		.last_cmd = &e->last_cmd,
		.requests = e->rt,
	};
}

void engine_set_on_tick(struct engine *e, engine_tick_fn fn, void *ud)
{
	e->on_tick = fn;
	e->on_tick_ud = ud;
}

struct ev_loop *engine_loop(const struct engine *e)
{
	return e->loop;
}

struct snapshot_writer *engine_snapshot_writer(const struct engine *e)
{
	return e->snap;
}

struct reqlog *engine_reqlog(const struct engine *e)
{
	return e->reqlog;
}

const char *engine_endpoint(const struct engine *e)
{
	return e->endpoint;
}
