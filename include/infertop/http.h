#ifndef INFERTOP_HTTP_H
#define INFERTOP_HTTP_H

#include <curl/curl.h>
#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* libcurl's multi interface driven by libev: one ev_io per socket curl
 * asks for, one ev_timer for curl's timeout. Every transfer stores a
 * struct http_xfer* as CURLOPT_PRIVATE; its done() runs once the transfer
 * ends, after the handle has been removed from the multi. */
struct http_shard;

struct http_xfer {
	void (*done)(struct http_xfer *x, CURLcode rc);
	/* http's own (zeroed before the first http_add): the multi handle
	 * the transfer lives in, and whether it was sent to a new connection
	 * it has not opened yet. */
	struct http_shard *shard;
	bool awaiting_socket;
	/* A CONNECT_ONLY transfer whose owner reads and writes the socket
	 * itself: set take_socket, and done() finds the connected socket in
	 * taken_fd (-1 if none, taken_errno says why), the owner's to close.
	 * Removing the handle makes curl close the connection; its close
	 * leaves this socket open. */
	bool take_socket;
	int taken_fd;
	int taken_errno;               /* why taken_fd is -1 after a connect */
};

struct http;

struct http *http_new(struct ev_loop *loop);
void http_free(struct http *h);
/* The thread's TLS settings and sessions for the direct path's https
 * (tls.h), made from o on first use: one per http, as the loop is one
 * thread's. NULL with why in err when they cannot be made. */
struct tls_opts;
struct tls_ctx *http_tls(struct http *h, const struct tls_opts *o, char *err, size_t cap);
/* The same settings on a libcurl handle (the curl path, the probe,
 * calibration, scrapes, fleet polls): -k turns the peer and name checks
 * off, --cacert replaces the system's CAs. One place, so no fetch of the
 * run's forgets one. */
void http_easy_tls(CURL *e, const struct tls_opts *o);
/* fresh: on a new connection whatever the cache holds. Otherwise a cached
 * idle connection is reused when one is free, and a new one asked for
 * straight away when none is: libcurl 7.x otherwise scans every
 * connection to the host for a free one, per start, which is quadratic
 * over a ramp of thousands of streams (seconds of a blocked loop at
 * 15,000). */
int http_add(struct http *h, CURL *easy, bool fresh);
void http_remove(struct http *h, CURL *easy);
/* x, removed, is freed for good: its shard may take another transfer.
 * A client that makes a transfer per request must call it, or the
 * transfers' shards (curl multis) would grow with the requests. */
void http_release(struct http *h, struct http_xfer *x);
/* curl multi handles in use (for tests). */
long http_shards(const struct http *h);
/* Connection cache size: keep-alive connections kept for reuse. Sized to
 * the load so steady-state requests never reconnect. */
void http_set_cache(struct http *h, long connections);
long http_sockets(const struct http *h);
struct ev_loop *http_loop(const struct http *h);
/* CLOCK_MONOTONIC ns when the loop last came back from waiting for events
 * (0 before it first did). Bytes read in that turn's callbacks arrived
 * before it: one clock read for the whole turn, and a truer stamp for the
 * last callbacks of the turn than a read after the earlier ones' work. */
int64_t http_wake_ns(const struct http *h);

/* Arrival stamps from the kernel: a direct connection asks for each
 * packet's receive time (SO_TIMESTAMPNS, CLOCK_REALTIME) and
 * http_rx_mono_ns() turns one into CLOCK_MONOTONIC ns (0 when it cannot:
 * no wake-up yet, or a realtime clock stepped). Exact however late the
 * loop gets to the bytes, which is what lets the loop batch its wake-ups:
 * above HTTP_BATCH_ON_RATE reads a second (down to HTTP_BATCH_OFF_RATE;
 * the rate of each HTTP_BATCH_WINDOW_NS; never while curl is connecting)
 * libev waits HTTP_BATCH_S before each poll and takes every socket ready
 * by then in one turn, one wake-up for many tokens instead of one each.
 * Timers still fire on time (libev shortens the wait for them). */
#define HTTP_BATCH_S 0.0003
#define HTTP_BATCH_ON_RATE 20000.0
#define HTTP_BATCH_OFF_RATE 10000.0
#define HTTP_BATCH_WINDOW_NS (100 * 1000 * 1000LL)
void http_rx_stamps_on(struct http *h);
int64_t http_rx_mono_ns(struct http *h, int64_t rt_ns);

/* Keep-alive: servers close idle connections on their own schedule
 * (uvicorn and llama.cpp after 5 s) and a request sent on one just closed
 * dies unanswered. Connections idle longer than the server's limit are not
 * reused: the limit comes from a `Keep-Alive: timeout=N` response header
 * when a server sends one, else this default (uvicorn's and llama.cpp's),
 * less a second of margin. */
#define HTTP_KEEPALIVE_DEFAULT_S 5
/* Servers that close every connection after its answer (llama.cpp does
 * after a streamed one, whatever its Keep-Alive header says): the close
 * races the next request sent on the connection, which then dies
 * unanswered and is resent. Once HTTP_REUSE_CLOSED_RUN kept connections
 * in a row were found closed, the direct path keeps none after an answer
 * but every HTTP_REUSE_PROBE_EVERYth, whose reuse tells whether the
 * server still closes (one that carries a request ends the rule). */
#define HTTP_REUSE_CLOSED_RUN 4
#define HTTP_REUSE_PROBE_EVERY 64
/* A kept connection was found closed (or died unanswered), or carried a
 * request (closed false). */
void http_note_reuse(struct http *h, bool closed);
/* Whether to keep a connection after its answer. */
bool http_keep_pays(struct http *h);
/* The seconds of "timeout=N" in a Keep-Alive header's value, or -1. */
long http_keepalive_parse(const char *value, size_t len);
/* A Retry-After header's value ("120" seconds, or an HTTP date, read
 * against now_unix): the wait in ns, capped at HTTP_RETRY_AFTER_MAX_S;
 * -1 when unreadable. */
#define HTTP_RETRY_AFTER_MAX_S 300
int64_t http_retry_after_parse(const char *value, size_t len, time_t now_unix);
/* Records a server's idle limit (from its Keep-Alive header). */
void http_note_keepalive(struct http *h, long timeout_s);
/* How long a connection may sit idle and still be reused, in seconds. */
long http_reuse_limit(const struct http *h);

#endif
