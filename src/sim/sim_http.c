#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "infertop/clock.h"
#include "infertop/sim.h"
#include "sim_internal.h"

#define RQ_OF_TMR(ptr) ((struct sim_rq *)(void *)((char *)(ptr) - offsetof(struct sim_rq, tmr)))

/* One rendered event: the longest is a chunk carrying a 256-byte model
 * name escaped to at most 6 bytes a byte. */
#define EVENT_MAX 4096

/* ---- connection bookkeeping ---- */

static void suspend(struct sim_rq *rq)
{
	MHD_suspend_connection(rq->conn);
	rq->suspended = 1;
}

void sim_http_wake(struct sim_rq *rq)
{
	if (!rq->suspended)
		return;
	/* A non-streaming request only has something to say at the end, and a
	 * stalled one never does. */
	if (rq->phase == SIM_PH_WAIT && !rq->aborted &&
	    (rq->state != SIM_ST_FINISHED || rq->fault == SIM_FAULT_STALL))
		return;
	MHD_resume_connection(rq->conn);
	rq->suspended = 0;
	rq->srv->need_run = 1;
}

static void watch_stop(struct sim_rq *rq)
{
	if (rq->watching) {
		ev_io_stop(rq->srv->loop, &rq->watch);
		rq->watching = 0;
	}
}

/* The client went away (or the server is stopping): leave the engine and
 * let MHD close the connection. */
static void rq_abort(struct sim_rq *rq)
{
	struct sim_server *s = rq->srv;
	rq->aborted = 1;
	sim_sched_cancel(s, rq);
	sim_timer_stop(&s->timers, &rq->tmr);
	watch_stop(rq);
	sim_http_wake(rq);
}

/* MHD does not watch a suspended connection, and ours are suspended
 * between tokens or for whole queueing and stall periods; a peek at the
 * socket tells a hang-up from data. */
static void on_hangup(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct sim_rq *rq = w->data;
	char c;
	ssize_t n = recv(w->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n > 0) {
		/* A pipelined request: MHD will read it; stop looking. */
		watch_stop(rq);
		return;
	}
	if (rq->srv->opt.verbose)
		fprintf(stderr, "infertop sim: request %llu: client went away\n",
			(unsigned long long)rq->id);
	rq_abort(rq);
	sim_http_pump(rq->srv);
}

static void watch_start(struct sim_rq *rq)
{
	if (rq->watching)
		return;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	ev_io_init(&rq->watch, on_hangup, ci->connect_fd, EV_READ);
	rq->watch.data = rq;
	ev_io_start(rq->srv->loop, &rq->watch);
	rq->watching = 1;
}

static struct sim_rq *rq_new(struct sim_server *s, struct MHD_Connection *conn)
{
	/* Every request may arm one timer; reserving here means arming later
	 * cannot fail. */
	if (sim_timers_reserve(&s->timers, (size_t)s->nlive + 2) != 0)
		return NULL;
	struct sim_rq *rq = calloc(1, sizeof *rq);
	if (!rq)
		return NULL;
	rq->srv = s;
	rq->conn = conn;
	rq->fault = SIM_FAULT_NONE;
	rq->fault_at = -1;
	rq->run_idx = -1;
	rq->phase = SIM_PH_BODY;
	rq->state = SIM_ST_NEW;
	sim_tmr_init(&rq->tmr, NULL);
	rq->next = s->live;
	if (s->live)
		s->live->prev = rq;
	s->live = rq;
	s->nlive++;
	return rq;
}

static void rq_free(struct sim_rq *rq)
{
	struct sim_server *s = rq->srv;
	sim_sched_cancel(s, rq);
	sim_timer_stop(&s->timers, &rq->tmr);
	watch_stop(rq);
	if (rq->prev)
		rq->prev->next = rq->next;
	else
		s->live = rq->next;
	if (rq->next)
		rq->next->prev = rq->prev;
	s->nlive--;
	free(rq->blk.hash);
	free(rq->body);
	free(rq->spill);
	free(rq);
}

/* What the simulator keeps per connection (MHD's socket context). */
struct sim_conn {
	long served;			/* requests taken on this connection */
};

static struct sim_conn *conn_state(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct sim_server *s = cls;
	struct sim_rq *rq = *con_cls;
	if (!rq)
		return;
	/* Shut down under MHD's feet: the client sees the close only after
	 * it has the whole answer, and no header warned it. */
	if (s->opt.conn_close_silently && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
	}
	if (s->opt.verbose && rq->id)
		fprintf(stderr, "infertop sim: request %llu: %s after %d of %d tokens\n",
			(unsigned long long)rq->id,
			toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "done" : "ended early", rq->sent,
			rq->target);
	rq_free(rq);
	*con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct sim_server *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		s->nconn++;
		/* Without it the connection just goes uncounted: no limit applies. */
		*socket_context = calloc(1, sizeof(struct sim_conn));
		/* Every token is a small write that must leave at once. */
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci) {
			int one = 1;
			setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		}
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		s->nconn--;
		free(*socket_context);
		*socket_context = NULL;
	}
}

/* ---- plain responses ---- */

static enum MHD_Result send_buf(struct MHD_Connection *conn, unsigned status, char *buf, size_t len,
				const char *ctype, const char *h1, const char *v1)
{
	return mhd_ev_send(conn, status, buf, len, ctype, h1, v1, NULL, NULL);
}

static enum MHD_Result send_error(struct sim_rq *rq, unsigned status, const char *type,
				  const char *msg, const char *h1, const char *v1)
{
	size_t len = 0;
	char *buf = sim_render_error(msg, type, (int)status, &len);
	rq->phase = SIM_PH_DONE;
	if (rq->srv->opt.verbose)
		fprintf(stderr, "infertop sim: %u %s\n", status, msg);
	return send_buf(rq->conn, status, buf, len, "application/json", h1, v1);
}

/* The context-length refusal, in the body vLLM sends for it. */
static enum MHD_Result send_context_error(struct sim_rq *rq, const char *msg)
{
	size_t len = 0;
	char *buf = sim_render_error_vllm(msg, "BadRequestError", MHD_HTTP_BAD_REQUEST, &len);
	rq->phase = SIM_PH_DONE;
	if (rq->srv->opt.verbose)
		fprintf(stderr, "infertop sim: 400 %s\n", msg);
	return send_buf(rq->conn, MHD_HTTP_BAD_REQUEST, buf, len, "application/json", NULL, NULL);
}

static char *dup_text(const char *t, size_t *len)
{
	*len = strlen(t);
	char *p = malloc(*len + 1);
	if (p)
		memcpy(p, t, *len + 1);
	return p;
}

static enum MHD_Result serve_models(struct sim_server *s, struct sim_rq *rq)
{
	size_t cap = strlen(s->model_json) * 2 + 256;
	char *buf = malloc(cap);
	if (!buf)
		return MHD_NO;
	int n = snprintf(buf, cap,
			 "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":%lld,"
			 "\"owned_by\":\"infertop\",\"root\":\"%s\",\"parent\":null,\"max_model_len\":%ld}]}",
			 s->model_json, (long long)s->started_wall, s->model_json, s->opt.max_model_len);
	rq->phase = SIM_PH_DONE;
	return send_buf(rq->conn, MHD_HTTP_OK, buf, (size_t)n, "application/json", NULL, NULL);
}

static enum MHD_Result serve_metrics(struct sim_server *s, struct sim_rq *rq)
{
	size_t len = 0;
	char *buf = sim_metrics_render(s, &len);
	rq->phase = SIM_PH_DONE;
	return send_buf(rq->conn, MHD_HTTP_OK, buf, len, "text/plain; version=0.0.4; charset=utf-8",
			NULL, NULL);
}

static enum MHD_Result serve_dcgm(struct sim_server *s, struct sim_rq *rq)
{
	size_t len = 0;
	char *buf = sim_dcgm_render(s, clock_now_ns(), &len);
	rq->phase = SIM_PH_DONE;
	return send_buf(rq->conn, MHD_HTTP_OK, buf, len, "text/plain; version=0.0.4; charset=utf-8", NULL, NULL);
}

static int model_ok(const struct sim_server *s, const struct sim_req *req)
{
	return req->model_len < 0 ||
	       ((size_t)req->model_len == strlen(s->opt.model) && strcmp(req->model, s->opt.model) == 0);
}

static enum MHD_Result unknown_model(struct sim_rq *rq, const struct sim_req *req)
{
	char msg[SIM_MODEL_MAX + 64];
	snprintf(msg, sizeof msg, "The model `%s%s` does not exist.", req->model,
		 req->model_len > SIM_MODEL_MAX ? "..." : "");
	return send_error(rq, MHD_HTTP_NOT_FOUND, "NotFoundError", msg, NULL, NULL);
}

static enum MHD_Result serve_tokenize(struct sim_server *s, struct sim_rq *rq)
{
	size_t cap = rq->body_len + 1;
	uint32_t *ids = malloc(cap * sizeof *ids);
	if (!ids)
		return MHD_NO;
	struct sim_req req;
	char err[256];
	size_t nids = 0;
	if (sim_req_parse(rq->body, rq->body_len, SIM_API_TOKENIZE, &req, ids, cap, &nids, err,
			  sizeof err) != 0) {
		free(ids);
		return send_error(rq, MHD_HTTP_BAD_REQUEST, "BadRequestError", err, NULL, NULL);
	}
	if (!model_ok(s, &req)) {
		free(ids);
		return unknown_model(rq, &req);
	}
	size_t ocap = nids * 11 + 128;
	char *out = malloc(ocap);
	if (!out) {
		free(ids);
		return MHD_NO;
	}
	size_t o = (size_t)snprintf(out, ocap, "{\"count\":%ld,\"max_model_len\":%ld,\"tokens\":[",
				    req.prompt_tokens, s->opt.max_model_len);
	for (size_t i = 0; i < nids; i++)
		o += (size_t)snprintf(out + o, ocap - o, "%s%u", i ? "," : "", ids[i]);
	o += (size_t)snprintf(out + o, ocap - o, "],\"token_strs\":null}");
	free(ids);
	rq->phase = SIM_PH_DONE;
	return send_buf(rq->conn, MHD_HTTP_OK, out, o, "application/json", NULL, NULL);
}

/* ---- completions ---- */

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max);

static enum MHD_Result respond_full(struct sim_rq *rq)
{
	size_t len = 0;
	char *buf = sim_render_full(rq->srv, rq, &len);
	rq->phase = SIM_PH_DONE;
	return send_buf(rq->conn, MHD_HTTP_OK, buf, len, "application/json", NULL, NULL);
}

/* The request enters the engine: headers go out now for a stream (the
 * role chunk follows at admission), or the connection waits for the end. */
static enum MHD_Result begin(struct sim_server *s, struct sim_rq *rq)
{
	int64_t now = clock_now_ns();
	if (rq->stream) {
		struct MHD_Response *r =
			MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, EVENT_MAX, read_stream, rq, NULL);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		if (s->opt.conn_idle_s) {
			/* As servers with an idle limit commonly say it. */
			char ka[40];
			snprintf(ka, sizeof ka, "timeout=%ld", s->opt.conn_idle_s);
			MHD_add_response_header(r, "Keep-Alive", ka);
		}
		enum MHD_Result ret = MHD_queue_response(rq->conn, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		if (ret != MHD_YES)
			return ret;
		rq->phase = SIM_PH_STREAM;
		watch_start(rq);
		sim_sched_submit(s, rq, now);
		return MHD_YES;
	}
	rq->phase = SIM_PH_WAIT;
	sim_sched_submit(s, rq, now);
	watch_start(rq);
	suspend(rq);
	return MHD_YES;
}

static void on_hold_done(struct sim_tmr *t, int64_t now)
{
	(void)now;
	sim_http_wake(RQ_OF_TMR(t));
}

static enum MHD_Result serve_completion(struct sim_server *s, struct sim_rq *rq, enum sim_api api)
{
	struct sim_req req;
	char err[256];
	struct sim_blocks blk = { .block_tokens = s->opt.kv_block_tokens };
	if (sim_req_parse_blocks(rq->body, rq->body_len, api, &req, &blk, err, sizeof err) != 0)
		return send_error(rq, MHD_HTTP_BAD_REQUEST, "BadRequestError", err, NULL, NULL);
	free(rq->body);
	rq->body = NULL;
	rq->body_len = rq->body_cap = 0;
	rq->blk = blk;
	if (!model_ok(s, &req))
		return unknown_model(rq, &req);

	/* vLLM's check: prompt + max_tokens against max_model_len; without
	 * max_tokens, the prompt alone must leave room for one token. */
	long ctx = s->opt.max_model_len;
	long max = req.max_tokens;
	if (max < 0 && req.prompt_tokens >= ctx) {
		snprintf(err, sizeof err,
			 "This model's maximum context length is %ld tokens. However, you requested %ld "
			 "tokens in the messages, Please reduce the length of the messages.",
			 ctx, req.prompt_tokens);
		return send_context_error(rq, err);
	}
	if (max < 0) {
		max = s->opt.max_tokens_default;
		if (max > ctx - req.prompt_tokens)
			max = ctx - req.prompt_tokens;
	}
	if (req.prompt_tokens + max > ctx) {
		snprintf(err, sizeof err,
			 "This model's maximum context length is %ld tokens. However, you requested %ld "
			 "tokens (%ld in the messages, %ld in the completion). Please reduce the length of "
			 "the messages or completion.",
			 ctx, req.prompt_tokens + max, req.prompt_tokens, max);
		return send_context_error(rq, err);
	}
	if (req.min_tokens > max) {
		snprintf(err, sizeof err, "min_tokens (%ld) must not exceed max_tokens (%ld)",
			 req.min_tokens, max);
		return send_error(rq, MHD_HTTP_BAD_REQUEST, "BadRequestError", err, NULL, NULL);
	}

	rq->api = (uint8_t)req.api;
	rq->stream = (uint8_t)req.stream;
	rq->include_usage = (uint8_t)(req.stream && req.include_usage);
	rq->prompt_tokens = (int32_t)req.prompt_tokens;
	rq->max_tokens = (int32_t)max;
	if (req.ignore_eos) {
		rq->target = (int32_t)max;
	} else {
		long lo = req.min_tokens > 1 ? req.min_tokens : 1;
		rq->target = (int32_t)(lo + (long)sim_rng_below(&s->rng, (uint64_t)(max - lo + 1)));
	}
	rq->finish_stop = (uint8_t)(rq->target < max);
	rq->fault = (int8_t)sim_fault_pick(&s->rng, s->opt.fail_rate, s->opt.fail_kinds);
	rq->fault_at = sim_fault_position(&s->rng, (enum sim_fault)rq->fault, rq->target);
	rq->stop_at = rq->fault == SIM_FAULT_DISCONNECT || rq->fault == SIM_FAULT_STALL ? rq->fault_at
											  : rq->target;
	rq->id = ++s->next_id;
	rq->created = (int64_t)time(NULL);
	s->st.requests++;
	if (rq->fault != SIM_FAULT_NONE)
		s->st.faults[rq->fault]++;
	if (s->opt.verbose)
		fprintf(stderr,
			"infertop sim: request %llu: %s prompt=%d max=%d tokens=%d stream=%d fault=%s\n",
			(unsigned long long)rq->id, api == SIM_API_CHAT ? "chat" : "completions",
			rq->prompt_tokens, rq->max_tokens, rq->target, rq->stream,
			sim_fault_name((enum sim_fault)rq->fault));

	switch (rq->fault) {
	case SIM_FAULT_500:
		return send_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalServerError",
				  "simulated internal server error (infertop sim --fail-rate)", NULL, NULL);
	case SIM_FAULT_429:
		return send_error(rq, MHD_HTTP_TOO_MANY_REQUESTS, "RateLimitError",
				  "simulated rate limit (infertop sim --fail-rate)", MHD_HTTP_HEADER_RETRY_AFTER,
				  "1");
	case SIM_FAULT_SLOW_HEADERS:
		rq->phase = SIM_PH_HOLD;
		rq->tmr.fn = on_hold_done;
		sim_timer_start(&s->timers, &rq->tmr, clock_now_ns() + SIM_SLOW_HEADERS_NS);
		watch_start(rq);
		suspend(rq);
		return MHD_YES;
	default:
		return begin(s, rq);
	}
}

/* Streams are rendered from counters when MHD asks for bytes, so a stream
 * costs a few hundred bytes whatever its length, and tokens the client has
 * not taken yet simply wait as a count. */
static void observe_lag(struct sim_server *s, int64_t due, int64_t now)
{
	sim_hist_observe(&s->st.lag, now > due ? (double)(now - due) / 1e9 : 0.0);
}

static size_t next_event(struct sim_rq *rq, char *ev, int64_t now)
{
	struct sim_server *s = rq->srv;
	size_t len;
	if (rq->api == SIM_API_CHAT && !rq->role_sent) {
		if (!rq->admitted)
			return 0;
		len = sim_render_role(s, rq, ev, EVENT_MAX);
		rq->role_sent = 1;
		observe_lag(s, rq->t_admit, now);
	} else if (rq->sent < rq->produced) {
		len = sim_render_token(s, rq, rq->sent, ev, EVENT_MAX);
		/* Fixed timing knows every token's due time; batching only the
		 * latest one's (older ones waited for the client, not the sim). */
		if (s->opt.timing == SIM_TIMING_FIXED)
			observe_lag(s, rq->t_arrive + rq->ttft_ns + (int64_t)rq->sent * s->opt.itl_ns,
				    now);
		else if (rq->sent + 1 == rq->produced)
			observe_lag(s, rq->t_last, now);
		rq->sent++;
	} else if (rq->state == SIM_ST_FINISHED && rq->sent == rq->target && !rq->tail_sent) {
		len = sim_render_tail(s, rq, ev, EVENT_MAX);
		rq->tail_sent = 1;
	} else {
		return 0;
	}
	return len < EVENT_MAX ? len : EVENT_MAX - 1;
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct sim_rq *rq = cls;
	if (rq->aborted)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	size_t n = 0;
	if (rq->spill) {
		size_t left = rq->spill_len - rq->spill_off;
		size_t take = left < max ? left : max;
		memcpy(buf, rq->spill + rq->spill_off, take);
		rq->spill_off += take;
		n = take;
		if (rq->spill_off == rq->spill_len) {
			free(rq->spill);
			rq->spill = NULL;
		}
	}
	char ev[EVENT_MAX];
	int64_t now = clock_now_ns();
	while (n < max && !rq->spill) {
		size_t len = next_event(rq, ev, now);
		if (len == 0)
			break;
		size_t room = max - n;
		if (len <= room) {
			memcpy(buf + n, ev, len);
			n += len;
			continue;
		}
		rq->spill = malloc(len - room);
		if (!rq->spill) {
			rq->aborted = 1;
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		memcpy(buf + n, ev, room);
		memcpy(rq->spill, ev + room, len - room);
		rq->spill_len = len - room;
		rq->spill_off = 0;
		n = max;
	}
	if (n > 0)
		return (ssize_t)n;
	if (rq->tail_sent)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (rq->fault == SIM_FAULT_DISCONNECT && rq->state == SIM_ST_FINISHED)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	suspend(rq);
	return 0;
}

/* ---- routing ---- */

enum route { R_NONE, R_MODELS, R_HEALTH, R_METRICS, R_DCGM, R_TOKENIZE, R_CHAT, R_COMPLETIONS };

static enum route route_of(const struct sim_server *s, const char *url, int *want_post)
{
	static const struct {
		const char *path;
		enum route r;
		int post;
	} table[] = {
		{ "/v1/models", R_MODELS, 0 },
		{ "/health", R_HEALTH, 0 },
		{ "/metrics", R_METRICS, 0 },
		{ SIM_DCGM_URL_PATH, R_DCGM, 0 },
		{ "/tokenize", R_TOKENIZE, 1 },
		{ "/v1/chat/completions", R_CHAT, 1 },
		{ "/v1/completions", R_COMPLETIONS, 1 },
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (strcmp(url, table[i].path) == 0) {
			*want_post = table[i].post;
			return table[i].r;
		}
	}
	if (strcmp(url, sim_profile_metrics_path(s->opt.profile)) == 0) {
		*want_post = 0;
		return R_METRICS;
	}
	return R_NONE;
}

static enum MHD_Result dispatch(struct sim_server *s, struct sim_rq *rq, const char *url,
				const char *method)
{
	if (s->nconn > s->opt.max_connections)
		return send_error(rq, MHD_HTTP_SERVICE_UNAVAILABLE, "ServiceUnavailableError",
				  "too many connections (infertop sim --max-connections)",
				  MHD_HTTP_HEADER_CONNECTION, "close");
	int want_post = 0;
	enum route r = route_of(s, url, &want_post);
	if (r == R_NONE) {
		char msg[160];
		snprintf(msg, sizeof msg, "Not Found: %.120s", url);
		return send_error(rq, MHD_HTTP_NOT_FOUND, "NotFoundError", msg, NULL, NULL);
	}
	int is_post = strcmp(method, "POST") == 0;
	int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	if (want_post ? !is_post : !is_get)
		return send_error(rq, MHD_HTTP_METHOD_NOT_ALLOWED, "MethodNotAllowedError",
				  "Method Not Allowed", MHD_HTTP_HEADER_ALLOW, want_post ? "POST" : "GET, HEAD");
	if (rq->body_len > SIM_BODY_MAX)
		return send_error(rq, MHD_HTTP_CONTENT_TOO_LARGE, "BadRequestError",
				  "request body too large", NULL, NULL);
	size_t len;
	switch (r) {
	case R_MODELS:
		return serve_models(s, rq);
	case R_HEALTH:
		rq->phase = SIM_PH_DONE;
		return send_buf(rq->conn, MHD_HTTP_OK, dup_text("", &len), 0, "text/plain", NULL, NULL);
	case R_METRICS:
		return serve_metrics(s, rq);
	case R_DCGM:
		return serve_dcgm(s, rq);
	case R_TOKENIZE:
		return serve_tokenize(s, rq);
	case R_CHAT:
		return serve_completion(s, rq, SIM_API_CHAT);
	case R_COMPLETIONS:
		return serve_completion(s, rq, SIM_API_COMPLETIONS);
	default:
		return MHD_NO;
	}
}

static int body_append(struct sim_rq *rq, const char *data, size_t n)
{
	size_t want = rq->body_len + n;
	if (want > SIM_BODY_MAX) {
		/* Keep counting so dispatch() answers 413, but store nothing more. */
		rq->body_len = want;
		return 0;
	}
	if (want + 1 > rq->body_cap) {
		size_t cap = rq->body_cap ? rq->body_cap : 1024;
		while (cap < want + 1)
			cap *= 2;
		char *b = realloc(rq->body, cap);
		if (!b)
			return -1;
		rq->body = b;
		rq->body_cap = cap;
	}
	memcpy(rq->body + rq->body_len, data, n);
	rq->body_len = want;
	rq->body[want] = '\0';
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	(void)version;
	struct sim_server *s = cls;
	struct sim_rq *rq = *con_cls;
	if (!rq) {
		struct sim_conn *sc = conn_state(conn);
		if (sc && s->opt.conn_max_requests && sc->served >= s->opt.conn_max_requests) {
			/* As a server that closed the connection just as this
			 * request was sent: no answer, the connection dies. */
			s->conn_drops++;
			return MHD_NO;
		}
		if (sc)
			sc->served++;
		rq = rq_new(s, conn);
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		return MHD_YES;
	}
	if (rq->aborted)
		return MHD_NO;
	switch (rq->phase) {
	case SIM_PH_BODY:
		if (*upload_data_size) {
			if (body_append(rq, upload_data, *upload_data_size) != 0)
				return MHD_NO;
			*upload_data_size = 0;
			return MHD_YES;
		}
		return dispatch(s, rq, url, method);
	case SIM_PH_HOLD:
		if (sim_tmr_armed(&rq->tmr)) {
			suspend(rq);
			return MHD_YES;
		}
		return begin(s, rq);
	case SIM_PH_WAIT:
		if (rq->state != SIM_ST_FINISHED || rq->fault == SIM_FAULT_STALL) {
			suspend(rq);
			return MHD_YES;
		}
		if (rq->fault == SIM_FAULT_DISCONNECT)
			return MHD_NO;
		return respond_full(rq);
	default:
		return MHD_YES;
	}
}

/* ---- MHD inside libev ---- */

void sim_http_pump(struct sim_server *s)
{
	if (!s->mhd)
		return;
	/* Resuming inside a callback needs another pass to take effect; a few
	 * passes cover chains (a finished request admitting the next one). */
	for (int i = 0; i < 4; i++) {
		s->need_run = 0;
		MHD_run(s->mhd);
		if (!s->need_run)
			break;
	}
	mhd_ev_arm(&s->mhd_ev, s->need_run);
}

static void pump(void *ud)
{
	sim_http_pump(ud);
}

/* libmicrohttpd's messages: the first one while it starts is kept (why it
 * would not start, e.g. GnuTLS refusing a key for another certificate);
 * the rest reach stderr with --verbose only, as before. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct sim_server *s = cls;
	if (s->mhd_starting && !s->mhd_err[0]) {
		va_list copy;
		va_copy(copy, ap);
		vsnprintf(s->mhd_err, sizeof s->mhd_err, fmt, copy);
		va_end(copy);
		s->mhd_err[strcspn(s->mhd_err, "\n")] = '\0';
	}
	if (s->opt.verbose) {
		fputs("infertop sim: libmicrohttpd: ", stderr);
		vfprintf(stderr, fmt, ap);
	}
}

int sim_http_start(struct sim_server *s)
{
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	/* https: MHD copies the PEM text into GnuTLS's credentials at start,
	 * and checks that the key is the certificate's. */
	struct MHD_OptionItem tls[] = {
		{ MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert_pem },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key_pem },
		{ MHD_OPTION_END, 0, NULL },
	};
	if (s->tls_cert_pem)
		flags |= MHD_USE_TLS;
	else
		tls[0].option = MHD_OPTION_END;
	s->started_wall = (int64_t)time(NULL);
	/* The hard limit sits above --max-connections so the excess still gets
	 * a 503 rather than a reset. */
	unsigned limit = (unsigned)s->opt.max_connections + 64;
	s->mhd_starting = 1;
	s->mhd_err[0] = '\0';
	/* The logger goes first: MHD logs with its own until it sees it. */
	s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				  MHD_OPTION_LISTEN_SOCKET, s->listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
				  s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_CONNECTION_LIMIT,
				  limit, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->opt.conn_idle_s,
				  MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
	s->mhd_starting = 0;
	if (!s->mhd && s->tls_cert_pem) {
		fprintf(stderr, "infertop sim: cannot serve https with --tls-cert %s and --tls-key %s: %s\n",
			s->opt.tls_cert, s->opt.tls_key, s->mhd_err[0] ? s->mhd_err : "libmicrohttpd refused them");
		return -1;
	}
	if (!s->mhd) {
		fprintf(stderr, "infertop sim: cannot start the HTTP server (libmicrohttpd)%s%s\n",
			s->mhd_err[0] ? ": " : "", s->mhd_err);
		return -1;
	}
	/* MHD closes the listening socket when it stops. */
	s->listen_fd = -1;
	if (mhd_ev_start(&s->mhd_ev, s->loop, s->mhd, pump, s) != 0) {
		fputs("infertop sim: libmicrohttpd has no epoll descriptor\n", stderr);
		MHD_stop_daemon(s->mhd);
		s->mhd = NULL;
		return -1;
	}
	sim_http_pump(s);
	return 0;
}

void sim_http_stop(struct sim_server *s)
{
	if (!s->mhd)
		return;
	/* MHD must not be stopped with suspended connections: resume them all
	 * as aborted so each closes on its next callback. */
	for (struct sim_rq *rq = s->live; rq; rq = rq->next)
		rq_abort(rq);
	for (int i = 0; i < 8 && s->need_run; i++) {
		s->need_run = 0;
		MHD_run(s->mhd);
	}
	mhd_ev_stop(&s->mhd_ev);
	MHD_stop_daemon(s->mhd);
	s->mhd = NULL;
	while (s->live)
		rq_free(s->live);
}
