#ifndef INFERTOP_CONTROL_REQ_H
#define INFERTOP_CONTROL_REQ_H

/*
 * The control API's requests as data, apart from the server (control.c):
 * routes, bodies, the --listen address and the bearer token. Pure
 * functions of their input, so they are unit-tested and fuzzed without a
 * socket. Nothing here prints: a refusal comes back as a message naming
 * the field, which the server sends as the 400's JSON.
 */

#include <stdbool.h>
#include <stddef.h>

/* The largest body a POST may have; more is refused (413) unread. */
#define CONTROL_BODY_MAX 4096

enum control_route {
	CONTROL_R_NONE,     /* unknown path: 404 */
	CONTROL_R_HEALTH,   /* GET /healthz */
	CONTROL_R_STATUS,   /* GET /v1/status */
	CONTROL_R_METRICS,  /* GET /metrics */
	CONTROL_R_LOAD,     /* POST /v1/load */
	CONTROL_R_PAUSE,    /* POST /v1/pause */
	CONTROL_R_RESUME,   /* POST /v1/resume */
	CONTROL_R_SNAPSHOT, /* POST /v1/snapshot */
	CONTROL_R_STOP,     /* POST /v1/stop */
	CONTROL_R_RUNS,     /* infertop serve: /v1/runs[/ID[/result]], POST /start-load */
	CONTROL_R_N
};

/* The route of a path (the query, if any, is ignored) and whether it takes
 * POST (else GET or HEAD). */
enum control_route control_req_route(const char *path, bool *post);

/* What POST /v1/load asks for: exactly one of the two. */
struct control_load {
	bool is_rate;
	long concurrency;   /* 1 .. CMD_CONCURRENCY_MAX */
	double rate;        /* CMD_RATE_MIN .. CMD_RATE_MAX requests/s */
	bool force;         /* "force": true: apply a change over --max-change */
};

#define CONTROL_ERR_MAX 160

/* Parses a /v1/load body of len bytes (no NUL needed): a JSON object
 * with one field, "concurrency" (a whole number) or "rate" (a number), in
 * range. 0, or -1 with the offending field's name in field ("" when the
 * body as a whole is wrong) and a message in err. */
int control_req_parse_load(const char *body, size_t len, struct control_load *out, char field[64],
			   char err[CONTROL_ERR_MAX]);
/* The bodies of pause, resume, snapshot and stop: empty or an empty JSON
 * object. 0, or -1 as above. */
int control_req_parse_empty(const char *body, size_t len, char field[64], char err[CONTROL_ERR_MAX]);

/* Who may talk to the API from a browser's point of view. A name with a
 * port, "name:port" (IPv6 in brackets, letters in lower case), is what
 * the three below produce, so an allowed Host and a request's Host or
 * Origin compare as strings. */
#define CONTROL_HOSTPORT_MAX 300

/* --listen-allow-host NAME[:PORT]: a host name, an IPv4 address or an
 * [IPv6] one, and the port the clients use (default: port, the one the
 * listener is bound to). out gets "name:port". 0, or -1 with a message in
 * err. */
int control_req_allow_host(const char *spec, int port, char out[CONTROL_HOSTPORT_MAX], char *err, size_t errcap);
/* A Host header value (NAME[:PORT], 80 when no port): 0 with out set, or
 * -1 when it is not a host name or address with a valid port. */
int control_req_host_header(const char *value, char out[CONTROL_HOSTPORT_MAX]);
/* An Origin header value: "http://NAME[:PORT]" only (the API speaks plain
 * HTTP, so a page of another scheme is another origin); 0 with out set,
 * or -1: "null" (file://, sandboxed frames), https://..., a path, junk. */
int control_req_origin(const char *value, char out[CONTROL_HOSTPORT_MAX]);
/* True when a Content-Type value is application/json, with parameters or
 * not (any case): the one type a page cannot send to another origin
 * without the browser asking first (CORS preflight), so requiring it on
 * every change shuts out form posts and no-cors fetches. NULL: false. */
bool control_req_json_type(const char *value);

/* True when an Authorization header value is "Bearer " followed by
 * exactly token. Takes the same time whatever the header holds, up to the
 * lengths, so the comparison tells an attacker nothing. */
bool control_req_token_ok(const char *header, const char *token);

#endif
