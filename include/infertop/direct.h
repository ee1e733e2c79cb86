#ifndef INFERTOP_DIRECT_H
#define INFERTOP_DIRECT_H

/* The direct transport: HTTP/1.1 on a socket of its own, for http:// and
 * https:// (request.c says when). libcurl 7.88 spends about 3 us of user
 * CPU per wake-up of a streaming transfer (its state machine, a poll()
 * per read to see if more is pending, timer upkeep), ten times what
 * reading the token costs. So curl only makes the connection (resolving,
 * connecting, its timeouts and errors) as a CONNECT_ONLY transfer (http.h),
 * and the transport does the rest on the socket curl hands over: it
 * writes the request while reading (an answer may come before the request
 * is all sent), reads each wake-up with one recv() into a buffer shared
 * by every transport of the thread, and hands the bytes through the
 * HTTP/1.x reader (h1.h) to its owner's callbacks, with no copy. The
 * connection is kept for the owner's next request, under the same idle
 * limit as curl's pool, and closed once idle past it.
 *
 * The owner embeds a struct direct and finds itself from it (its
 * offset): the callbacks get the struct direct. What a token touches of it
 * is its first 88 bytes (the watcher libev reads, the loop's clock, the
 * callbacks, the reader's per-chunk fields), for the owner to place in
 * one block with its own per-token fields (request.h).
 *
 * https: curl still only connects (TCP: it is told the http:// URL of the
 * same host and port, see direct_init), and the TLS session is the
 * transport's (tls.h): each recvmsg() of ciphertext keeps its receive
 * stamp, goes into the session, and the plaintext it gives goes through
 * the same reader, stamped with that read's time; the request goes out
 * through the session and a sendmsg(). Its own watcher callback, so plain
 * http runs no TLS code and tests no flag per read. */

#include <curl/curl.h>
#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/h1.h"
#include "infertop/http.h"
#include "infertop/tls.h"

struct direct;

struct direct_callbacks {
	/* Before each recv(): ask for the memory the bytes will touch. */
	void (*prefetch)(struct direct *d);
	/* Bytes read, arrived at `now` (CLOCK_MONOTONIC ns), before the
	 * reader hands them over. */
	void (*on_read)(struct direct *d, int64_t now);
	/* The request's first byte is being written, at now. */
	void (*on_send)(struct direct *d, int64_t now);
	/* A new connection was made for the request. */
	void (*on_connect)(struct direct *d);
	/* The answer's, as h1.h hands them over; nonzero from on_body stops
	 * the transfer (the owner has failed the request). */
	int (*on_status)(struct direct *d, int status);
	int (*on_header)(struct direct *d, const char *line, size_t len);
	int (*on_body)(struct direct *d, const char *data, size_t len);
	/* Once per direct_start (never after direct_abort): CURLE_OK when
	 * the answer ended, else curl's code for the failure and why (curl's
	 * wording where curl has one). The owner may start the next request
	 * from here. */
	void (*on_done)(struct direct *d, CURLcode rc, const char *msg);
};

struct direct {
	/* What a token touches, first (see above). */
	ev_io io;                      /* io.fd: the connection, -1 none */
	struct http *http;
	const struct direct_callbacks *cb;
	struct h1_parser h1;           /* its first 24 bytes end the hot part */

	/* The transport's own. */
	CURL *easy;                    /* connects */
	struct http_xfer xfer;
	ev_timer deadline;             /* the timeout; while idle, the idle limit */
	long timeout_ms;
	bool new_connection;           /* a connection per request */
	bool connecting;               /* curl is connecting for it */
	bool conn_reused;              /* this request went out on a kept connection */
	bool conn_idle;                /* kept, no request on it */
	int send_errno;                /* a write failed so; 0 none */
	int64_t conn_idle_since;       /* when its connection's last answer ended */
	const char *head, *body;       /* the request being written (the owner's) */
	size_t head_len, body_len;
	size_t out_off;                /* bytes of head + body written */
	/* https (NULL for http): whom to verify and resume, the session of
	 * the connection (NULL none yet), whether its handshake is done. */
	struct tls_target *tls_target;
	struct tls_conn *tls;
	bool tls_ready;
	CURLcode init_rc;              /* not CURLE_OK: every request fails so (err0) */
	char err0[CURL_ERROR_SIZE];
	char err[CURL_ERROR_SIZE];
};

/* The hot part's end (see above). */
#define DIRECT_HOT_END (offsetof(struct direct, h1) + offsetof(struct h1_parser, body_bytes) + sizeof(uint64_t))

/* Sets d up to carry requests to url's host (https with the settings of
 * tls; an https URL whose TLS settings cannot be made fails each request,
 * as curl would). -1: out of memory. */
int direct_init(struct direct *d, struct http *http, const char *url, long timeout_ms, bool new_connection,
		const struct tls_opts *tls, const struct direct_callbacks *cb);
/* Closes its connection; d may then be freed. */
void direct_cleanup(struct direct *d);
/* Sends head then body (both the owner's, kept until on_done) on the kept
 * connection, or a new one (fresh: always), and reads the answer. 0, or
 * -1 when it cannot start (no on_done then). */
int direct_start(struct direct *d, const char *head, size_t head_len, const char *body, size_t body_len,
		 bool fresh);
/* The request died unanswered on a kept connection: it goes out once more
 * on a new one (as direct_start). */
int direct_resend(struct direct *d);
/* Ends the request now, its connection closed; no on_done. */
void direct_abort(struct direct *d);

#endif
