#ifndef INFERTOP_CONTROL_H
#define INFERTOP_CONTROL_H

/*
 * The control API (--listen): a small HTTP server, libmicrohttpd driven by
 * the run's own libev loop, that reads the run through a struct run_view
 * and changes it only through the engine's commands (CMD_SRC_API), so a
 * request never races the token path and acts exactly as a key does.
 *
 *   GET  /healthz      "ok"
 *   GET  /v1/status    the live run in the snapshot schema
 *   GET  /metrics      Prometheus text (exporter.h)
 *   POST /v1/load      {"concurrency":N} or {"rate":R}
 *   POST /v1/pause, /v1/resume, /v1/snapshot, /v1/stop
 *
 * Requests are parsed by control_req.c.
 *
 * Pages in a browser can reach a loopback port too, so before anything
 * else every request must name this server in its Host (a DNS-rebinding
 * page names its own), an Origin, when there is one, must be this server,
 * and a change (any method but GET and HEAD) must come as
 * application/json, which no page can send to another origin unasked.
 * Refusals: 403 and 415, logged (rate-limited).
 *
 * Connections are held per address (per_ip_limit) and those that have not
 * yet shown a whole request that passed the checks and the token are held
 * apart (unauth_limit): past either, the oldest such connection is closed
 * for the new one, so slow or unauthenticated clients cannot keep the
 * others out.
 *
 * The server may outlive a run (infertop serve): control_set_engine
 * changes the run it acts on, and with none the run endpoints answer 409
 * {"status":"refused","message":"no run"}. serve's own routes
 * (/v1/runs..., /start-load) go to a handler it sets.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct engine;
struct ev_loop;

struct control_opts {
	const char *listen;         /* ADDR:PORT; port 0: any */
	const char *token_env;      /* variable holding the bearer token; NULL: none */
	bool metrics_open;          /* GETs need no token */
	/* Host names clients may use besides the listener's own addresses
	 * (--listen-allow-host NAME[:PORT]); NULL: the engine's options'. */
	char *const *allow_hosts;
	size_t nallow_hosts;
	const char *id;             /* generator id; NULL: hostname:pid */
	struct ev_loop *loop;       /* the loop to serve on; NULL: the engine's */
	/* Limits; 0 takes the default (in brackets). */
	unsigned conn_limit;        /* connections at once [64] */
	unsigned per_ip_limit;      /* from one address [16] */
	unsigned unauth_limit;      /* not yet through the checks and the token [16] */
	unsigned idle_s;            /* an idle connection closes after [10 s] */
	double deadline_s;          /* a request must arrive whole within [10 s] */
	double status_max_age_s;    /* pollers share a status (and /metrics) document this old [0.2 s] */
};

struct control;

/* Binds, starts serving on the engine's loop (o->loop when e is NULL:
 * serve, with no run yet) and prints the address on log
 * ("infertop: control API on http://ADDR:PORT"). A non-loopback address
 * needs a token. NULL with a message in err (the token never in it). */
struct control *control_start(struct engine *e, const struct control_opts *o, FILE *log, char *err,
			      size_t errcap);
/* The run the endpoints act on from now on; NULL: none (409). */
void control_set_engine(struct control *c, struct engine *e);

/* A request answered later: the handler returned CONTROL_LATER and keeps
 * the handle until it calls control_answer_later (serve's POST that
 * starts a run waits for the target to be checked, and the loop goes on
 * serving everything else meanwhile). */
struct control_later;
#define CONTROL_LATER 0u

/* serve's routes: method and path as received, the body (len bytes, no
 * NUL). Returns the HTTP status and sets *json to a malloc'd JSON answer
 * (NULL: out of memory, answered 500), or returns CONTROL_LATER and
 * answers through later. Called on the loop. */
typedef unsigned (*control_runs_fn)(void *ud, const char *method, const char *path, const char *body, size_t len,
				   char **json, struct control_later *later);
/* The answer to a request left for later: code and json (malloc'd, taken;
 * NULL: out of memory, answered 500). Called on the loop, once per
 * handle; the handle is gone after. */
void control_answer_later(struct control *c, struct control_later *later, unsigned code, char *json);
/* Without one, those routes are 404. */
void control_set_runs(struct control *c, control_runs_fn fn, void *ud);

/* The time between the last two GET /metrics (a scraper's interval);
 * 0 before two. */
int64_t control_scrape_interval_ns(const struct control *c);
/* The port bound (useful with port 0). */
int control_port(const struct control *c);
/* Answers what is already queued, closes everything, frees. NULL is fine. */
void control_stop(struct control *c);

/* The API's one reply envelope, shared by serve:
 * {"status":..., ["field":...,] "message":...[, "path":...]}, malloc'd;
 * field and path may be NULL. NULL when out of memory. */
char *control_reply_json(const char *status, const char *msg, const char *field, const char *path);

#endif
