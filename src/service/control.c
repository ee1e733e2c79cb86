/* The control API's server: libmicrohttpd in epoll mode, its descriptor
 * and timeout watched by the engine's libev loop (as src/sim/sim_http.c),
 * so every request runs on the loop between two events and reads or
 * changes the run with nobody else touching it. Requests are parsed by
 * control_req.c; changes go through the engine's commands as CMD_SRC_API. */
#include "config.h"

#include "infertop/control.h"
#include "infertop/url.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/command.h"
#include "infertop/control_req.h"
#include "infertop/engine.h"
#include "infertop/exporter.h"
#include "infertop/hist.h"
#include "infertop/mhd_ev.h"
#include "infertop/options.h"
#include "infertop/snapshot.h"
#include "infertop/view.h"

/* A status document is built at most this often while nothing was
 * commanded: pollers (a fleet at 4 Hz, a dashboard, a script) share it
 * instead of each costing the loop a build. */
#define STATUS_MAX_AGE_S 0.2

/* Refusals are logged at most this often, with the count since. */
#define REFUSAL_LOG_EVERY_NS (10 * CLOCK_NS_PER_S)

/* Where a connection is: no request under way (new, or between two),
 * a request's head read and its body coming, or a whole request being
 * answered (never closed for a newcomer: the server owes it an answer). */
enum conn_phase { PHASE_IDLE, PHASE_PARTIAL, PHASE_BUSY };

/* One open connection, for the request deadline (MHD's own timeout only
 * counts idle time, so a client sending a byte now and then, slow loris,
 * would hold a slot forever without it) and the limits per address and
 * before authentication. */
struct ctl_conn {
	struct ctl_conn *prev, *next;
	int fd;
	int64_t t_begin;    /* connection opened or last request answered */
	bool cut;
	bool waiting;       /* its request is answered later: no deadline */
	enum conn_phase phase;
	bool proven;        /* a request of it passed the checks and the token */
	struct sockaddr_storage peer;   /* the client's address (port ignored) */
	bool have_peer;
	/* "addr:port" the connection came in on (a Host naming it is this
	 * server); "" unknown. */
	char local[CONTROL_HOSTPORT_MAX];
	bool local_loopback;
};

/* What is refused, for the log: each kind counted and reported at most
 * every 10 s. */
enum refusal { REF_AUTH, REF_SITE, REF_CONN, REF_N };
static const char *const refusal_what[REF_N] = {
	[REF_AUTH] = "request(s) refused for a missing or wrong bearer token",
	[REF_SITE] = "request(s) refused as cross-site (a Host or Origin that is not this server's, or a change "
		     "without Content-Type: application/json)",
	[REF_CONN] = "connection(s) closed to keep the limits per address and before authentication",
};

/* One request in progress: its route and body, at most CONTROL_BODY_MAX. */
struct ctl_rq {
	enum control_route route;
	size_t len;
	bool answered;      /* a response is queued: the rest is dropped */
	bool too_big;       /* more than CONTROL_BODY_MAX came: dropped, 413 */
	/* Answered later (CONTROL_LATER): the connection is suspended until
	 * control_answer_later fills the answer in. */
	struct MHD_Connection *conn;
	struct ctl_rq *next_later;   /* the requests waiting, for control_stop */
	bool later, later_ready;
	int status_kind;             /* waits for a status build: 1 full, 2 lean */
	unsigned later_code;
	char *later_json;
	char body[CONTROL_BODY_MAX];
};

struct control {
	struct engine *e;   /* NULL: no run (serve between runs) */
	/* The finished runs' counts: /metrics grows across serve's runs, and
	 * between runs it still answers, with the last run's final counts. */
	struct exporter_totals *totals;
	/* When /metrics was asked for, the last two times: the scrape
	 * interval the CLI's --linger defaults to twice of. */
	int64_t scraped_ns[2];
	struct ev_loop *loop;
	control_runs_fn runs;
	void *runs_ud;
	struct MHD_Daemon *mhd;
	struct mhd_ev ev;   /* MHD on the loop */
	ev_timer sweep;     /* the request deadline */
	int port;
	char *token;        /* NULL: none asked for */
	bool metrics_open;
	/* The Host names (and Origins, as http://NAME) that are this server:
	 * "name:port", besides each connection's own local address. */
	char (*allow)[CONTROL_HOSTPORT_MAX];
	size_t nallow;
	unsigned conn_limit, per_ip_limit, unauth_limit;
	char id[300];
	FILE *log;
	int64_t deadline_ns;
	int64_t status_max_age_ns;
	struct ctl_conn *conns;
	struct ctl_rq *laters;      /* requests waiting for their answer */
	/* The last status document of each kind (full, lean: ?lean=1), and
	 * what it was built from. */
	struct status_doc {
		char *text;
		size_t len;
		int64_t at;
		uint64_t cmd_seq;
		enum engine_state state;
	} status[2], metrics;   /* /metrics: the same rule as the status */
	/* A status document is encoded on a thread of its own, off the loop
	 * (on a wide run it is tens of KB of encoded histograms: a millisecond
	 * or two that every token arriving meanwhile would wait): the loop
	 * takes the snapshot, with the histograms copied into `copies`, and
	 * the builder turns it into text; the pollers wait, suspended. One
	 * build at a time; `building` says which kind (0: none, 1 full,
	 * 2 lean). */
	int building;
	pthread_t builder;
	ev_async built;
	struct hist *copies[2 * STAT_NMETRICS];
	/* The same for the cache's and sessions' histograms (stats.h
	 * XH_*), made the first time the run has one. */
	struct hist *xcopies[XH_N];
	struct status_job {
		struct snapshot snap;
		size_t want;            /* the last document's length */
		char *text;             /* the builder's result; NULL: no memory */
		size_t len;
		int64_t at;
		uint64_t cmd_seq;
		enum engine_state state;
		uint64_t run_gen;       /* a build for another run is dropped */
	} job;
	uint64_t run_gen;
	/* What serving costs the run: CPU in the API's turns on the loop, the
	 * longest turn, requests answered (said at the end). */
	int64_t cost_cpu_ns, cost_max_turn_ns;
	uint64_t answered;
	/* Refusals of each kind: all of them, those not yet in a log line. */
	struct {
		uint64_t all, unlogged;
		int64_t logged_at;
	} refused[REF_N];
};

/* ---- answers ---- */

/* Answers are never cached: they describe the run at this moment. */
static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned code, char *buf, size_t len,
				 const char *ctype, const char *h1, const char *v1)
{
	return mhd_ev_send(conn, code, buf, len, ctype, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store", h1, v1);
}

char *control_reply_json(const char *status, const char *msg, const char *field, const char *path)
{
	cJSON *j = cJSON_CreateObject();
	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "status", status);
	if (field)
		cJSON_AddStringToObject(j, "field", field);
	cJSON_AddStringToObject(j, "message", msg);
	if (path)
		cJSON_AddStringToObject(j, "path", path);
	char *text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return text;
}

static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned code, const char *status,
				 const char *msg, const char *field, const char *path, const char *h1,
				 const char *v1)
{
	char *text = control_reply_json(status, msg, field, path);
	if (!text)
		return MHD_NO;
	return send_text(conn, code, text, strlen(text), "application/json", h1, v1);
}

/* A refusal, and the connection closes after it: a client refused has no
 * business keeping a slot. */
static enum MHD_Result send_refusal(struct MHD_Connection *conn, unsigned code, const char *status, const char *msg,
				    const char *h1, const char *v1)
{
	char *text = control_reply_json(status, msg, NULL, NULL);
	if (!text)
		return MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (h1)
		MHD_add_response_header(r, h1, v1);
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static unsigned code_of(enum cmd_status s)
{
	switch (s) {
	case CMD_OK:
	case CMD_UNCHANGED:
		return MHD_HTTP_OK;
	case CMD_REFUSED:
		return MHD_HTTP_CONFLICT;
	case CMD_INVALID:
		return MHD_HTTP_BAD_REQUEST;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static enum MHD_Result send_cmd(struct MHD_Connection *conn, const struct cmd_result *r, bool with_path)
{
	return send_json(conn, code_of(r->status), cmd_status_name(r->status), r->msg, NULL,
			 with_path && r->status == CMD_OK ? r->path : NULL, NULL, NULL);
}

/* ---- the endpoints ---- */

static enum MHD_Result no_run(struct MHD_Connection *conn)
{
	return send_json(conn, MHD_HTTP_CONFLICT, "refused", "no run", NULL, NULL, NULL, NULL);
}

static struct ctl_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}


/* rq is answered later (control_answer_later): its connection waits,
 * suspended, with no deadline. */
static enum MHD_Result suspend_later(struct control *c, struct MHD_Connection *conn, struct ctl_rq *rq)
{
	rq->conn = conn;
	rq->later = true;
	rq->next_later = c->laters;
	c->laters = rq;
	struct ctl_conn *cc = conn_of(conn);
	if (cc)
		cc->waiting = true;
	MHD_suspend_connection(conn);
	return MHD_YES;
}
static enum MHD_Result serve_runs(struct control *c, struct MHD_Connection *conn, const char *method,
				  const char *url, struct ctl_rq *rq)
{
	char *json = NULL;
	unsigned code = c->runs(c->runs_ud, method, url, rq->body, rq->len, &json, (struct control_later *)rq);
	if (code == CONTROL_LATER)
		return suspend_later(c, conn, rq);
	if (!json)
		return send_json(conn, 500, "failed", "out of memory", NULL, NULL, NULL, NULL);
	return send_text(conn, code, json, strlen(json), "application/json", NULL, NULL);
}

/* The last document still says what a new one would: young enough, and
 * no command or change of state since (a client that sets the load and
 * reads the status back sees its change). */
static bool status_fresh(const struct control *c, const struct status_doc *d, const struct run_view *v,
			 int64_t now)
{
	uint64_t seq = v->last_cmd ? v->last_cmd->seq : 0;
	return d->text && now - d->at < c->status_max_age_ns && seq == d->cmd_seq && v->state == d->state;
}

static void status_forget(struct control *c)
{
	for (size_t i = 0; i < sizeof c->status / sizeof c->status[0]; i++) {
		free(c->status[i].text);
		c->status[i].text = NULL;
	}
	free(c->metrics.text);
	c->metrics.text = NULL;
}

static int status_rebuild(struct status_doc *d, bool lean, const struct run_view *v, int64_t now)
{
	size_t len = d->len;
	char *text = lean ? snapshot_build_lean(v, now, SNAPSHOT_STATUS, &len)
			  : snapshot_build_sized(v, now, SNAPSHOT_STATUS, &len);
	if (!text)
		return -1;
	free(d->text);
	d->text = text;
	d->len = len;
	d->at = now;
	d->cmd_seq = v->last_cmd ? v->last_cmd->seq : 0;
	d->state = v->state;
	return 0;
}

static enum MHD_Result status_wait(struct control *c, struct MHD_Connection *conn, struct ctl_rq *rq,
				   const struct run_view *v, int64_t now, bool lean);

/* A copy of a document (status or metrics), the answer. */
static enum MHD_Result send_doc(struct MHD_Connection *conn, const struct status_doc *d, const char *ctype)
{
	char *text = malloc(d->len);
	if (!text)
		return send_json(conn, 500, "failed", "out of memory", NULL, NULL, NULL, NULL);
	memcpy(text, d->text, d->len);
	return send_text(conn, MHD_HTTP_OK, text, d->len, ctype, NULL, NULL);
}

#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The Prometheus text, rendered at most once per status age while nothing
 * was commanded (as the status document): a scraper polling hard, or many
 * of them, costs the run's loop one rendering per period, not one each. */
static enum MHD_Result send_metrics(struct control *c, struct MHD_Connection *conn, const struct run_view *v,
				    int64_t now)
{
	struct status_doc *d = &c->metrics;
	c->scraped_ns[0] = c->scraped_ns[1];
	c->scraped_ns[1] = now;
	if (!v || !status_fresh(c, d, v, now)) {
		size_t len = 0;
		char *text = exporter_text_totals(v, c->totals, c->id, now, &len);
		if (!text)
			return send_json(conn, 500, "failed", "out of memory", NULL, NULL, NULL, NULL);
		free(d->text);
		d->text = text;
		d->len = len;
		d->at = now;
		d->cmd_seq = v && v->last_cmd ? v->last_cmd->seq : 0;
		d->state = v ? v->state : ENGINE_DONE;
	}
	return send_doc(conn, d, METRICS_TYPE);
}

static enum MHD_Result serve_get(struct control *c, struct MHD_Connection *conn, struct ctl_rq *rq)
{
	enum control_route route = rq->route;
	struct run_view v;
	int64_t now = clock_now_ns();
	/* Between runs /metrics still answers: the finished runs' counts. */
	if (route == CONTROL_R_METRICS && !c->e)
		return send_metrics(c, conn, NULL, now);
	if (route != CONTROL_R_HEALTH) {
		if (!c->e)
			return no_run(conn);
		engine_view(c->e, &v);
	}
	char *text;
	switch (route) {
	case CONTROL_R_HEALTH:
		text = strdup("ok\n");
		return send_text(conn, MHD_HTTP_OK, text, 3, "text/plain; charset=utf-8", NULL, NULL);
	case CONTROL_R_STATUS: {
		/* ?lean=1: for readers that merge (infertop fleet). */
		const char *lv = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "lean");
		bool lean = lv && strcmp(lv, "1") == 0;
		struct status_doc *d = &c->status[lean];
		if (!status_fresh(c, d, &v, now))
			return status_wait(c, conn, rq, &v, now, lean);
		return send_doc(conn, d, "application/json");
	}
	case CONTROL_R_METRICS:
		return send_metrics(c, conn, &v, now);
	default:
		return MHD_NO;
	}
}

static enum MHD_Result serve_post(struct control *c, struct MHD_Connection *conn, struct ctl_rq *rq)
{
	char field[64], err[CONTROL_ERR_MAX];
	struct cmd_result r;
	memset(&r, 0, sizeof r);
	if (!c->e)
		return no_run(conn);
	if (rq->route == CONTROL_R_LOAD) {
		struct control_load l;
		if (control_req_parse_load(rq->body, rq->len, &l, field, err) != 0)
			return send_json(conn, MHD_HTTP_BAD_REQUEST, "invalid", err, field, NULL, NULL, NULL);
		/* A typo must not flood the target: a jump over --max-change
		 * is refused unless the caller says it means it. */
		struct run_view v;
		char why[160], say[240];
		engine_view(c->e, &v);
		if (!l.force && v.state == ENGINE_RUNNING &&
		    cmd_change_too_big(v.load, l.is_rate, l.is_rate ? l.rate : (double)l.concurrency, why, sizeof why)) {
			snprintf(say, sizeof say, "%s; add \"force\": true to apply it", why);
			return send_json(conn, MHD_HTTP_CONFLICT, "refused", say, l.is_rate ? "rate" : "concurrency", NULL,
					 NULL, NULL);
		}
		if (l.is_rate)
			engine_cmd_set_rate(c->e, l.rate, CMD_SRC_API, &r);
		else
			engine_cmd_set_concurrency(c->e, l.concurrency, CMD_SRC_API, &r);
		return send_cmd(conn, &r, false);
	}
	if (control_req_parse_empty(rq->body, rq->len, field, err) != 0)
		return send_json(conn, MHD_HTTP_BAD_REQUEST, "invalid", err, field, NULL, NULL, NULL);
	switch (rq->route) {
	case CONTROL_R_PAUSE:
		engine_cmd_pause(c->e, CMD_SRC_API, &r);
		break;
	case CONTROL_R_RESUME:
		engine_cmd_resume(c->e, CMD_SRC_API, &r);
		break;
	case CONTROL_R_SNAPSHOT:
		engine_cmd_snapshot(c->e, CMD_SRC_API, &r);
		return send_cmd(conn, &r, true);
	case CONTROL_R_STOP:
		engine_cmd_stop(c->e, CMD_SRC_API, &r);
		break;
	default:
		return MHD_NO;
	}
	return send_cmd(conn, &r, false);
}

/* ---- the gate: host, origin, route, method, token, type, size ---- */

static void peer_text(const struct sockaddr *sa, char *buf, size_t cap)
{
	snprintf(buf, cap, "?");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf, (socklen_t)cap);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf, (socklen_t)cap);
}

/* Counts a refusal and logs the count since the last line, at most every
 * 10 s whatever the flood. sa: the client, when known. */
static void refused(struct control *c, enum refusal kind, const struct sockaddr *sa)
{
	c->refused[kind].all++;
	c->refused[kind].unlogged++;
	int64_t now = clock_now_ns();
	int64_t last = c->refused[kind].logged_at;
	if (last && now - last < REFUSAL_LOG_EVERY_NS)
		return;
	char addr[INET6_ADDRSTRLEN] = "?";
	peer_text(sa, addr, sizeof addr);
	char since[48] = "the start";
	if (last)
		snprintf(since, sizeof since, "%.0f s", (double)(now - last) / 1e9);
	fprintf(c->log, "infertop: control API: %llu %s in %s (latest from %s; %llu in all; reported at most every 10 s)\n",
		(unsigned long long)c->refused[kind].unlogged, refusal_what[kind], since, addr,
		(unsigned long long)c->refused[kind].all);
	fflush(c->log);
	c->refused[kind].unlogged = 0;
	c->refused[kind].logged_at = now;
}

static void refused_request(struct control *c, enum refusal kind, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	refused(c, kind, ci ? ci->client_addr : NULL);
}

/* "name:port" names this server: an allowed name, or the address the
 * connection came in on (and, when that is loopback, the loopback names),
 * so a listener on 0.0.0.0 answers to each of its addresses. */
static bool host_allowed(const struct control *c, const struct ctl_conn *cc, const char *hp)
{
	for (size_t i = 0; i < c->nallow; i++)
		if (strcmp(c->allow[i], hp) == 0)
			return true;
	if (!cc || !cc->local[0])
		return false;
	if (strcmp(cc->local, hp) == 0)
		return true;
	if (cc->local_loopback) {
		static const char *const names[] = { "localhost", "127.0.0.1", "[::1]" };
		const char *colon = strrchr(hp, ':');
		size_t n = colon ? (size_t)(colon - hp) : 0;
		if (!colon || atoi(colon + 1) != c->port)
			return false;
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			if (strlen(names[i]) == n && memcmp(names[i], hp, n) == 0)
				return true;
	}
	return false;
}

/* A header's value in a message: printable ASCII, cut. */
static const char *shown_value(const char *v, char *buf, size_t cap)
{
	size_t n = 0;
	for (; v && *v && n + 4 < cap; v++)
		buf[n++] = (*v >= 0x20 && *v < 0x7f) ? *v : '?';
	if (v && *v)
		buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
	buf[n] = '\0';
	return buf;
}

/* Host, Origin, route, method, token, content type and announced size.
 * 1: go on; 0: an answer is queued; -1: the connection is to close. */
static int gate(struct control *c, struct MHD_Connection *conn, const char *url, const char *method,
		enum control_route *route)
{
	enum MHD_Result ret;
	bool want_post = false;
	*route = control_req_route(url, &want_post);
	bool is_post = strcmp(method, "POST") == 0;
	bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
	const char *ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	struct ctl_conn *cc = conn_of(conn);
	char hp[CONTROL_HOSTPORT_MAX], shown[96], msg[320];
	if (*route == CONTROL_R_RUNS) {
		/* serve's routes take several methods: the handler checks. */
		want_post = !is_get;
		is_post = true;
	}
	if (!host || control_req_host_header(host, hp) != 0 || !host_allowed(c, cc, hp)) {
		/* A page whose name was made to point here (DNS rebinding)
		 * sends its own name; so does a client that merely uses a
		 * name of this machine the server was not told about. */
		refused_request(c, REF_SITE, conn);
		snprintf(msg, sizeof msg,
			 "Host '%s' is not a name of this server: give --listen-allow-host NAME to answer to it",
			 shown_value(host ? host : "", shown, sizeof shown));
		ret = send_refusal(conn, MHD_HTTP_FORBIDDEN, "forbidden", msg, NULL, NULL);
	} else if (origin && (control_req_origin(origin, hp) != 0 || !host_allowed(c, cc, hp))) {
		/* A page of another site (or a file:// one: "null"). */
		refused_request(c, REF_SITE, conn);
		snprintf(msg, sizeof msg, "cross-origin request refused (Origin '%s'): web pages may not use the API",
			 shown_value(origin, shown, sizeof shown));
		ret = send_refusal(conn, MHD_HTTP_FORBIDDEN, "forbidden", msg, NULL, NULL);
	} else if (*route == CONTROL_R_NONE || (*route == CONTROL_R_RUNS && !c->runs)) {
		ret = send_json(conn, MHD_HTTP_NOT_FOUND, "not_found", "no such endpoint", NULL, NULL, NULL, NULL);
	} else if (want_post ? !is_post : !is_get) {
		ret = send_json(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", "method not allowed", NULL,
				NULL, MHD_HTTP_HEADER_ALLOW, want_post ? "POST" : "GET, HEAD");
	} else if (c->token && (want_post || !c->metrics_open) &&
		   !control_req_token_ok(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
								     MHD_HTTP_HEADER_AUTHORIZATION),
					 c->token)) {
		refused_request(c, REF_AUTH, conn);
		ret = send_refusal(conn, MHD_HTTP_UNAUTHORIZED, "unauthorized", "missing or wrong bearer token",
				   MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	} else {
		/* Through the checks and the token: an authenticated client. */
		if (cc)
			cc->proven = true;
		if (!is_get && !control_req_json_type(ctype)) {
			/* A form or a no-cors fetch can send text/plain
			 * anywhere without asking; application/json it cannot. */
			refused_request(c, REF_SITE, conn);
			snprintf(msg, sizeof msg, "a %s needs Content-Type: application/json (got '%s')", method,
				 shown_value(ctype ? ctype : "", shown, sizeof shown));
			ret = send_refusal(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", msg, NULL,
					   NULL);
		} else if (cl && (strspn(cl, "0123456789") != strlen(cl) || strlen(cl) > 9 ||
				  strtoul(cl, NULL, 10) > CONTROL_BODY_MAX)) {
			/* Announced too large: refused before a byte of it is read. */
			ret = send_json(conn, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", "request body over 4096 bytes",
					NULL, NULL, NULL, NULL);
		} else {
			return 1;
		}
	}
	return ret == MHD_YES ? 0 : -1;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	(void)version;
	struct control *c = cls;
	struct ctl_rq *rq = *con_cls;
	if (!rq) {
		rq = malloc(sizeof *rq);
		if (!rq)
			return MHD_NO;
		/* Not calloc: the 4 KiB body is written before it is read. */
		rq->len = 0;
		rq->answered = false;
		rq->too_big = false;
		rq->conn = NULL;
		rq->next_later = NULL;
		rq->later = rq->later_ready = false;
		rq->later_code = 0;
		rq->later_json = NULL;
		*con_cls = rq;
		struct ctl_conn *cc = conn_of(conn);
		if (cc)
			cc->phase = PHASE_PARTIAL;
		int g = gate(c, conn, url, method, &rq->route);
		if (g < 0)
			return MHD_NO;
		rq->answered = g == 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (rq->answered || rq->too_big)
			return MHD_YES; /* the rest of a refused body: dropped */
		if (n > CONTROL_BODY_MAX - rq->len) {
			/* A chunked body that grows too large: MHD cannot answer
			 * mid-upload, so the rest is read and dropped (never
			 * kept) and the answer is 413; the request deadline
			 * ends a body that never ends. */
			rq->too_big = true;
			return MHD_YES;
		}
		memcpy(rq->body + rq->len, upload_data, n);
		rq->len += n;
		return MHD_YES;
	}
	/* The whole request is in: it is answered now or later. */
	struct ctl_conn *cc = conn_of(conn);
	if (cc)
		cc->phase = PHASE_BUSY;
	if (rq->later) {
		/* Resumed with its answer, or (MHD asking again) not yet. */
		if (!rq->later_ready)
			return MHD_YES;
		rq->later = false;
		char *json = rq->later_json;
		rq->later_json = NULL;
		if (!json)
			return send_json(conn, 500, "failed", "out of memory", NULL, NULL, NULL, NULL);
		return send_text(conn, rq->later_code, json, strlen(json), "application/json", NULL, NULL);
	}
	if (rq->answered)
		return MHD_YES;
	rq->answered = true;
	if (rq->too_big)
		return send_json(conn, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", "request body over 4096 bytes", NULL,
				 NULL, MHD_HTTP_HEADER_CONNECTION, "close");
	if (rq->route == CONTROL_R_RUNS)
		return serve_runs(c, conn, method, url, rq);
	bool post;
	control_req_route(url, &post);
	return post ? serve_post(c, conn, rq) : serve_get(c, conn, rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct control *c = cls;
	struct ctl_rq *rq = *con_cls;
	if (rq && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		c->answered++;
	if (rq)
		free(rq->later_json);
	free(rq);
	*con_cls = NULL;
	struct ctl_conn *cc = conn_of(conn);
	if (cc) {
		cc->t_begin = clock_now_ns();
		cc->phase = PHASE_IDLE;
	}
}

/* ---- connections: per address, and before authentication ---- */

static bool same_peer(const struct ctl_conn *a, const struct ctl_conn *b)
{
	if (!a->have_peer || !b->have_peer || a->peer.ss_family != b->peer.ss_family)
		return false;
	if (a->peer.ss_family == AF_INET)
		return ((const struct sockaddr_in *)&a->peer)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)&b->peer)->sin_addr.s_addr;
	if (a->peer.ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)&a->peer)->sin6_addr,
			      &((const struct sockaddr_in6 *)&b->peer)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return false;
}

/* Which connections a limit counts. */
enum conn_set { SET_PEER, SET_UNPROVEN, SET_ALL };

static bool in_set(const struct ctl_conn *cc, enum conn_set set, const struct ctl_conn *ref)
{
	if (cc->cut)
		return false;
	switch (set) {
	case SET_PEER:
		return same_peer(cc, ref);
	case SET_UNPROVEN:
		return !cc->proven && cc->phase != PHASE_BUSY;
	default:
		return true;
	}
}

/* The connection of a set to close for a newcomer: never one being
 * answered; first those that never passed the checks and the token, then
 * idle kept-alive ones, then those sending a body; the oldest first (the
 * list runs newest first, so a tie goes to the later one). NULL: none may
 * go. */
static struct ctl_conn *victim(struct control *c, enum conn_set set, const struct ctl_conn *ref)
{
	struct ctl_conn *best = NULL;
	int best_rank = 0;
	for (struct ctl_conn *cc = c->conns; cc; cc = cc->next) {
		if (cc == ref || !in_set(cc, set, ref) || cc->waiting || cc->phase == PHASE_BUSY)
			continue;
		int rank = !cc->proven ? 0 : cc->phase == PHASE_IDLE ? 1 : 2;
		if (!best || rank < best_rank || (rank == best_rank && cc->t_begin <= best->t_begin)) {
			best = cc;
			best_rank = rank;
		}
	}
	return best;
}

static void cut(struct control *c, struct ctl_conn *cc)
{
	shutdown(cc->fd, SHUT_RDWR);
	cc->cut = true;
	refused(c, REF_CONN, cc->have_peer ? (const struct sockaddr *)&cc->peer : NULL);
}

/* A newcomer past a limit closes the oldest connection it may replace,
 * or is closed itself when there is none (all are being answered). MHD
 * would refuse it outright, and with it every client of that address
 * while 16 slow ones hold the slots. */
static void enforce_limits(struct control *c, struct ctl_conn *nc)
{
	static const enum conn_set sets[] = { SET_PEER, SET_UNPROVEN, SET_ALL };
	for (size_t i = 0; i < sizeof sets / sizeof sets[0] && !nc->cut; i++) {
		unsigned limit = sets[i] == SET_PEER ? c->per_ip_limit
				 : sets[i] == SET_UNPROVEN ? c->unauth_limit : c->conn_limit;
		unsigned n = 0;
		for (const struct ctl_conn *cc = c->conns; cc; cc = cc->next)
			n += in_set(cc, sets[i], nc);
		while (n > limit && !nc->cut) {
			struct ctl_conn *v = victim(c, sets[i], nc);
			cut(c, v ? v : nc);
			n--;
		}
	}
}

/* "addr:port" of the connection's own end: a Host naming it is this
 * server (a listener on 0.0.0.0 has an address per interface). */
static void local_name(struct ctl_conn *cc)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char a[INET6_ADDRSTRLEN] = "";
	cc->local[0] = '\0';
	if (getsockname(cc->fd, (struct sockaddr *)&ss, &sl) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
		cc->local_loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		snprintf(cc->local, sizeof cc->local, "%s:%d", a, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
		const unsigned char *b = in6->sin6_addr.s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			/* An IPv4 client of an [::] listener. */
			inet_ntop(AF_INET, b + 12, a, sizeof a);
			cc->local_loopback = b[12] == 127;
			snprintf(cc->local, sizeof cc->local, "%s:%d", a, ntohs(in6->sin6_port));
		} else {
			inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
			cc->local_loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
			snprintf(cc->local, sizeof cc->local, "[%s]:%d", a, ntohs(in6->sin6_port));
		}
	}
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct control *c = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		struct ctl_conn *cc = calloc(1, sizeof *cc);
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = cc;
		if (!cc || !ci) {
			/* Untracked, it still has MHD's idle timeout. */
			return;
		}
		cc->fd = ci->connect_fd;
		cc->t_begin = clock_now_ns();
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ai && ai->client_addr && (ai->client_addr->sa_family == AF_INET || ai->client_addr->sa_family == AF_INET6)) {
			memcpy(&cc->peer, ai->client_addr,
			       ai->client_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
			cc->have_peer = true;
		}
		local_name(cc);
		cc->next = c->conns;
		if (c->conns)
			c->conns->prev = cc;
		c->conns = cc;
		enforce_limits(c, cc);
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		struct ctl_conn *cc = *socket_context;
		if (cc) {
			if (cc->prev)
				cc->prev->next = cc->next;
			else if (c->conns == cc)
				c->conns = cc->next;
			if (cc->next)
				cc->next->prev = cc->prev;
			free(cc);
		}
		*socket_context = NULL;
	}
}

/* ---- MHD inside libev ---- */

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * CLOCK_NS_PER_S + ts.tv_nsec;
}

/* Everything the API does runs in here, on the engine's loop: its CPU and
 * its longest turn are what it costs the run (the token path waits at most
 * that long), measured where they happen rather than guessed from two
 * runs whose noise is larger than the cost. */
static void pump(void *ud)
{
	struct control *c = ud;
	int64_t cpu0 = thread_cpu_ns();
	MHD_run(c->mhd);
	mhd_ev_arm(&c->ev, false);
	/* CPU, not wall: a turn the scheduler interrupted did not cost more. */
	int64_t turn = thread_cpu_ns() - cpu0;
	c->cost_cpu_ns += turn;
	if (turn > c->cost_max_turn_ns)
		c->cost_max_turn_ns = turn;
}

/* Connections that have not delivered a whole request in time are shut
 * down; MHD then sees the end and frees them. */
static void on_sweep(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct control *c = w->data;
	int64_t now = clock_now_ns();
	bool any = false;
	for (struct ctl_conn *cc = c->conns; cc; cc = cc->next) {
		if (!cc->cut && !cc->waiting && now - cc->t_begin > c->deadline_ns) {
			shutdown(cc->fd, SHUT_RDWR);
			cc->cut = true;
			any = true;
		}
	}
	if (any)
		pump(c);
}

void control_answer_later(struct control *c, struct control_later *later, unsigned code, char *json)
{
	struct ctl_rq *rq = (struct ctl_rq *)later;
	for (struct ctl_rq **p = &c->laters; *p; p = &(*p)->next_later)
		if (*p == rq) {
			*p = rq->next_later;
			break;
		}
	rq->later_code = code;
	rq->later_json = json;
	rq->later_ready = true;
	struct ctl_conn *cc = conn_of(rq->conn);
	if (cc) {
		cc->waiting = false;
		cc->t_begin = clock_now_ns();   /* the deadline is for the answer's delivery now */
	}
	MHD_resume_connection(rq->conn);
	mhd_ev_arm(&c->ev, true);
}

/* ---- status documents, built off the loop ---- */

static void *status_builder(void *arg)
{
	struct control *c = arg;
	struct status_job *j = &c->job;
	/* The run's loop comes first where the two share a core: an idle-
	 * policy thread runs only when nothing else wants the CPU, and a
	 * waking loop takes the CPU from it at once (a lower nice value alone
	 * can leave the loop waiting a scheduler slice). */
	struct sched_param sp = {.sched_priority = 0};
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
		setpriority(PRIO_PROCESS, 0, 19);
	j->len = j->want;
	j->text = snapshot_text_sized(&j->snap, &j->len);
	snapshot_release(&j->snap);   /* its histograms are the copies: kept */
	ev_async_send(c->loop, &c->built);
	return NULL;
}

/* Takes the run's snapshot now, on the loop (counters, and the histograms
 * copied: the bucket ranges they use, not the 188 KB each), and starts
 * the builder on it. 0, or -1 (no memory, no thread): build it here. */
static int status_start(struct control *c, const struct run_view *v, int64_t now, bool lean)
{
	for (int i = 0; i < 2 * STAT_NMETRICS; i++)
		if (!c->copies[i] && !(c->copies[i] = hist_new()))
			return -1;
	struct status_job *j = &c->job;
	memset(j, 0, sizeof *j);
	if (snapshot_from_view(&j->snap, v, now, SNAPSHOT_STATUS) != 0)
		return -1;
	for (int m = 0; m < STAT_NMETRICS; m++) {
		hist_copy(c->copies[m], j->snap.run[m]);
		hist_copy(c->copies[STAT_NMETRICS + m], j->snap.win[m]);
		j->snap.run[m] = c->copies[m];
		j->snap.win[m] = c->copies[STAT_NMETRICS + m];
	}
	for (int x = 0; x < XH_N; x++) {
		const struct hist *h = j->snap.xh[x];
		j->snap.xh[x] = NULL;   /* never the live one: the builder runs beside the loop */
		if (h && hist_count(h) && (c->xcopies[x] || (c->xcopies[x] = hist_new()))) {
			hist_copy(c->xcopies[x], h);
			j->snap.xh[x] = c->xcopies[x];
		}
	}
	j->snap.owns_hists = false;
	j->snap.lean = lean;
	j->want = c->status[lean].len;
	j->at = now;
	j->cmd_seq = v->last_cmd ? v->last_cmd->seq : 0;
	j->state = v->state;
	j->run_gen = c->run_gen;
	if (pthread_create(&c->builder, NULL, status_builder, c) != 0) {
		snapshot_release(&j->snap);
		return -1;
	}
	c->building = lean ? 2 : 1;
	return 0;
}

/* A poller whose document is not built yet waits for the build of its
 * kind, suspended; pollers meanwhile join it. */
static enum MHD_Result status_wait(struct control *c, struct MHD_Connection *conn, struct ctl_rq *rq,
				   const struct run_view *v, int64_t now, bool lean)
{
	struct status_doc *d = &c->status[lean];
	if (!c->building && status_start(c, v, now, lean) != 0) {
		/* No thread: the document is built here, on the loop. */
		if (status_rebuild(d, lean, v, now) != 0)
			return send_json(conn, 500, "failed", "out of memory", NULL, NULL, NULL, NULL);
		return send_doc(conn, d, "application/json");
	}
	rq->status_kind = lean ? 2 : 1;
	return suspend_later(c, conn, rq);
}

/* Every poller waiting for documents of `kind`: the text (a copy each),
 * or 500 when there is none. */
static void status_answer(struct control *c, int kind, const char *text, size_t len)
{
	for (;;) {
		struct ctl_rq *rq = c->laters;
		while (rq && rq->status_kind != kind)
			rq = rq->next_later;
		if (!rq)
			return;
		rq->status_kind = 0;
		char *copy = text ? malloc(len + 1) : NULL;
		if (copy) {
			memcpy(copy, text, len);
			copy[len] = '\0';
			control_answer_later(c, (struct control_later *)rq, 200, copy);
		} else {
			control_answer_later(c, (struct control_later *)rq, 500,
					     strdup("{\"status\":\"failed\",\"message\":\"out of memory\"}"));
		}
	}
}

static bool status_waiting(const struct control *c, int kind)
{
	for (const struct ctl_rq *rq = c->laters; rq; rq = rq->next_later)
		if (rq->status_kind == kind)
			return true;
	return false;
}

static void on_built(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)loop;
	(void)revents;
	struct control *c = w->data;
	if (!c->building)
		return;
	pthread_join(c->builder, NULL);
	int kind = c->building;
	c->building = 0;
	struct status_job *j = &c->job;
	status_answer(c, kind, j->text, j->text ? strlen(j->text) : 0);
	if (j->text && j->run_gen == c->run_gen) {
		struct status_doc *d = &c->status[kind - 1];
		free(d->text);
		d->text = j->text;
		d->len = j->len;
		d->at = j->at;
		d->cmd_seq = j->cmd_seq;
		d->state = j->state;
	} else {
		free(j->text);   /* another run's, or none */
	}
	j->text = NULL;
	/* Pollers of the other kind came meanwhile: their build now. */
	int other = kind == 1 ? 2 : 1;
	if (!status_waiting(c, other))
		return;
	struct run_view v;
	if (c->e) {
		engine_view(c->e, &v);
		if (status_start(c, &v, clock_now_ns(), other == 2) == 0)
			return;
	}
	status_answer(c, other, NULL, 0);
}

/* ---- start and stop ---- */

static int open_listener(const char *host, int port, char *shown, size_t shown_cap, int *bound, char *err,
			 size_t errcap)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	int gai = getaddrinfo(host, ps, &hints, &res);
	if (gai != 0) {
		snprintf(err, errcap, "--listen: cannot resolve %s: %s", host, gai_strerror(gai));
		return -1;
	}
	int fd = -1, e = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errcap, "--listen: cannot listen on %s:%d: %s", host, port, strerror(e));
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char a[INET6_ADDRSTRLEN] = "?";
	*bound = port;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
			*bound = ntohs(in->sin_port);
			snprintf(shown, shown_cap, "%s:%d", a, *bound);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
			*bound = ntohs(in6->sin6_port);
			snprintf(shown, shown_cap, "[%s]:%d", a, *bound);
		}
	}
	return fd;
}

static void token_free(struct control *c)
{
	if (c->token) {
		/* The token leaves no copy in freed memory. */
		volatile char *p = c->token;
		while (*p)
			*p++ = 0;
		free(c->token);
		c->token = NULL;
	}
}

static void control_free(struct control *c)
{
	exporter_totals_free(c->totals);
	token_free(c);
	free(c->allow);
	free(c);
}

/* The Host names that are this server, as "name:port": the --listen
 * address as written (not a wildcard: no page is served from 0.0.0.0),
 * the loopback names on loopback (a page of the machine's own web server
 * on another port still sends its Origin), and --listen-allow-host. Each
 * connection's own local address is allowed besides (host_allowed). */
static int allow_hosts(struct control *c, struct engine *e, const struct control_opts *o, const char *host,
		       bool loopback, char *err, size_t errcap)
{
	char *const *extra = o->allow_hosts;
	size_t nextra = o->nallow_hosts;
	if (!extra && e) {
		struct run_view v;
		engine_view(e, &v);
		extra = v.cfg ? v.cfg->listen_allow_hosts : NULL;
		nextra = v.cfg ? v.cfg->nlisten_allow_hosts : 0;
	}
	static const char *const lo[] = { "localhost", "127.0.0.1", "[::1]" };
	size_t cap = nextra + 1 + (loopback ? sizeof lo / sizeof lo[0] : 0);
	c->allow = calloc(cap, sizeof *c->allow);
	if (!c->allow) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	char name[INET6_ADDRSTRLEN + 3];
	bool v6 = strchr(host, ':') != NULL;
	snprintf(name, sizeof name, "%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "");
	struct in6_addr any6 = IN6ADDR_ANY_INIT;
	unsigned char a[sizeof(struct in6_addr)];
	bool wildcard = strcmp(host, "0.0.0.0") == 0 ||
			(v6 && inet_pton(AF_INET6, host, a) == 1 && memcmp(a, &any6, sizeof a) == 0);
	char perr[160];
	if (!wildcard && control_req_allow_host(name, c->port, c->allow[c->nallow], perr, sizeof perr) == 0)
		c->nallow++;
	for (size_t i = 0; loopback && i < sizeof lo / sizeof lo[0]; i++)
		snprintf(c->allow[c->nallow++], CONTROL_HOSTPORT_MAX, "%s:%d", lo[i], c->port);
	for (size_t i = 0; i < nextra; i++) {
		if (control_req_allow_host(extra[i], c->port, c->allow[c->nallow], perr, sizeof perr) != 0) {
			snprintf(err, errcap, "--listen-allow-host %.100s: %s", extra[i], perr);
			return -1;
		}
		c->nallow++;
	}
	return 0;
}

struct control *control_start(struct engine *e, const struct control_opts *o, FILE *log, char *err,
			      size_t errcap)
{
	char host[INET6_ADDRSTRLEN + 1];
	int port;
	bool loopback;
	char perr[128];
	if (url_parse_listen(o->listen, host, sizeof host, &port, &loopback, perr, sizeof perr) != 0) {
		snprintf(err, errcap, "--listen: %s", perr);
		return NULL;
	}
	if (!loopback && !o->token_env) {
		snprintf(err, errcap,
			 "--listen %s is reachable from other hosts: give --listen-token-env VAR (a bearer token "
			 "in the environment) or listen on 127.0.0.1",
			 o->listen);
		return NULL;
	}
	struct control *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	c->e = e;
	c->loop = o->loop ? o->loop : engine_loop(e);
	c->log = log;
	c->metrics_open = o->metrics_open;
	c->deadline_ns = (int64_t)((o->deadline_s > 0 ? o->deadline_s : 10.0) * 1e9);
	c->status_max_age_ns = (int64_t)((o->status_max_age_s > 0 ? o->status_max_age_s : STATUS_MAX_AGE_S) * 1e9);
	if (o->token_env) {
		const char *t = getenv(o->token_env);
		if (!t || !*t) {
			snprintf(err, errcap, "--listen-token-env: $%s is not set or empty", o->token_env);
			free(c);
			return NULL;
		}
		c->token = strdup(t);
		if (!c->token) {
			snprintf(err, errcap, "out of memory");
			free(c);
			return NULL;
		}
	}
	if (o->id && *o->id) {
		snprintf(c->id, sizeof c->id, "%s", o->id);
	} else {
		char hn[256] = "localhost";
		gethostname(hn, sizeof hn - 1);
		hn[sizeof hn - 1] = '\0';
		snprintf(c->id, sizeof c->id, "%s:%ld", hn, (long)getpid());
	}
	char shown[INET6_ADDRSTRLEN + 16] = "?";
	int fd = open_listener(host, port, shown, sizeof shown, &c->port, err, errcap);
	if (fd < 0) {
		token_free(c);
		free(c);
		return NULL;
	}
	if (allow_hosts(c, e, o, host, loopback, err, errcap) != 0) {
		close(fd);
		control_free(c);
		return NULL;
	}
	c->conn_limit = o->conn_limit ? o->conn_limit : 64;
	c->per_ip_limit = o->per_ip_limit ? o->per_ip_limit : 16;
	c->unauth_limit = o->unauth_limit ? o->unauth_limit : 16;
	unsigned idle = o->idle_s ? o->idle_s : 10;
	/* The limits are enforce_limits's; MHD's own is only a backstop
	 * (twice ours: connections closed for newcomers stay counted until
	 * MHD has seen them end), without one per address, which would
	 * refuse the newcomer rather than an old slow connection. */
	c->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, c, MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, c, MHD_OPTION_NOTIFY_CONNECTION,
				  on_connection, c, MHD_OPTION_CONNECTION_LIMIT, 2 * c->conn_limit,
				  MHD_OPTION_CONNECTION_TIMEOUT, idle, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
				  MHD_OPTION_END);
	if (mhd_ev_start(&c->ev, c->loop, c->mhd, pump, c) != 0) {
		snprintf(err, errcap, "--listen: cannot start the HTTP server (libmicrohttpd)");
		if (c->mhd)
			MHD_stop_daemon(c->mhd);
		else
			close(fd);
		control_free(c);
		return NULL;
	}
	/* The copies a status build takes, made and paged in now rather than
	 * in the middle of the run (the first build faulted 3 MB in: 3 ms of
	 * the loop). A failure here only means builds on the loop. */
	for (int i = 0; i < 2 * STAT_NMETRICS; i++)
		if ((c->copies[i] = hist_new()))
			hist_touch(c->copies[i]);
	ev_async_init(&c->built, on_built);
	c->built.data = c;
	ev_async_start(c->loop, &c->built);
	double every = (double)c->deadline_ns / 4e9;
	ev_timer_init(&c->sweep, on_sweep, every, every);
	c->sweep.data = c;
	ev_timer_start(c->loop, &c->sweep);
	pump(c);
	fprintf(log, "infertop: control API on http://%s%s\n", shown,
		c->token ? " (bearer token required)" : "");
	fflush(log);
	return c;
}

void control_set_engine(struct control *c, struct engine *e)
{
	/* The run that ends leaves its final counts in the totals. */
	if (c->e && c->e != e) {
		if (!c->totals)
			c->totals = exporter_totals_new();
		struct run_view v;
		engine_view(c->e, &v);
		exporter_totals_add(c->totals, &v);
	}
	c->e = e;
	c->run_gen++;       /* a build under way is another run's */
	status_forget(c);   /* another run's document */
}

void control_set_runs(struct control *c, control_runs_fn fn, void *ud)
{
	c->runs = fn;
	c->runs_ud = ud;
}

int64_t control_scrape_interval_ns(const struct control *c)
{
	return c && c->scraped_ns[0] ? c->scraped_ns[1] - c->scraped_ns[0] : 0;
}

int control_port(const struct control *c)
{
	return c ? c->port : -1;
}

void control_stop(struct control *c)
{
	if (!c)
		return;
	/* Answers already queued (the stop that ended the run) go out first. */
	for (int i = 0; i < 4; i++)
		MHD_run(c->mhd);
	for (int k = 0; k < REF_N; k++)
		if (c->refused[k].unlogged)
			fprintf(c->log, "infertop: control API: %llu more %s (%llu in all)\n",
				(unsigned long long)c->refused[k].unlogged, refusal_what[k],
				(unsigned long long)c->refused[k].all);
	if (c->answered)
		fprintf(c->log,
			"infertop: control API: %llu requests answered, %.1f ms of CPU on the run's loop, "
			"longest turn %.2f ms of CPU\n",
			(unsigned long long)c->answered, (double)c->cost_cpu_ns / 1e6,
			(double)c->cost_max_turn_ns / 1e6);
	/* A build under way ends first (it uses the copies). */
	if (c->building) {
		pthread_join(c->builder, NULL);
		c->building = 0;
		free(c->job.text);
		c->job.text = NULL;
	}
	ev_async_stop(c->loop, &c->built);
	/* MHD must not be stopped with suspended connections: whatever still
	 * waits is told the server is going away. */
	while (c->laters) {
		char *json = strdup("{\"status\":\"failed\",\"message\":\"the server is stopping\"}");
		control_answer_later(c, (struct control_later *)c->laters, 503, json);
		MHD_run(c->mhd);
	}
	mhd_ev_stop(&c->ev);
	ev_timer_stop(c->loop, &c->sweep);
	MHD_stop_daemon(c->mhd);
	status_forget(c);
	for (int i = 0; i < 2 * STAT_NMETRICS; i++)
		hist_free(c->copies[i]);
	for (int x = 0; x < XH_N; x++)
		hist_free(c->xcopies[x]);
	control_free(c);
}
