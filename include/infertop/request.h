#ifndef INFERTOP_REQUEST_H
#define INFERTOP_REQUEST_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "infertop/h1.h"
#include "infertop/http.h"
#include "infertop/sse.h"
#include "infertop/stats.h"

/* ITL gaps are held per request and recorded only if it succeeds (failed
 * requests stay out of latency stats, as in vLLM). A request with more gaps
 * than this flushes early; see the man page for the consequence. */
#define REQUEST_ITL_BUF 256
#define REQUEST_ERRBODY_MAX 512
/* Gaps kept across a flush of the ITL buffer, for the requests view's
 * strip chart (reqtrack.h). */
#define REQUEST_ITL_KEEP 64

struct request;

/* Shared by every request of a run. */
struct request_ctx {
	struct http *http;
	struct stats *stats;
	const char *endpoint;          /* full URL of the completions endpoint */
	struct curl_slist *headers;
	const char *const *secrets;    /* scrubbed from recorded errors (redact.h) */
	long timeout_ms;
	bool insecure;
	bool new_connection;
	/* Called once per request, after stats were updated. */
	void (*on_done)(void *ud, struct request *r, const struct req_result *res);
	void *ud;
	/* --save-detailed (reqlog.h), NULL when off: each batch of ITL gaps
	 * (us) as it leaves the request's buffer (a success's last batch
	 * before on_done), and each output chunk's data. */
	void (*on_itl)(void *ud, const struct request *r, const uint32_t *gaps_us, size_t n);
	void (*on_output)(void *ud, const struct request *r, const char *data, size_t len);
	void *detail_ud;
};

struct request {
	struct http_xfer xfer;
	const struct request_ctx *ctx;
	CURL *easy;
	struct sse_parser sse;
	char *body;
	size_t body_len;
	size_t body_off;               /* how much curl has read for sending */

	int64_t t_intended;
	int64_t t_send;                /* when curl read the body to write it */
	int64_t t_first_event;
	int64_t t_first_token;
	int64_t t_last_token;
	int64_t now;                   /* arrival time of the bytes being parsed */
	uint64_t chunks;
	int64_t usage_completion;
	int64_t usage_prompt;
	int64_t prompt_estimate;       /* input tokens if usage does not say */
	long status;
	bool status_known;
	bool done_seen;
	bool failed;
	bool retried;                  /* resent once on a fresh connection */
	int64_t retry_after_ns;        /* Retry-After of the answer, -1 if none */
	enum err_kind err;
	char msg[STATS_MSG_MAX];
	size_t n_itl;
	uint32_t itl[REQUEST_ITL_BUF];
	/* Set at each flush of itl (not per chunk): the worst gap flushed and
	 * the last gaps flushed, so the requests view shows a long stream's
	 * worst gap and last REQUEST_ITL_KEEP gaps (reqtrack.h). */
	uint32_t itl_worst;
	uint32_t n_keep;
	uint32_t itl_keep[REQUEST_ITL_KEEP];
	uint64_t seq;                  /* start order, for the requests view */
	const char *model;             /* the model asked for (owned by the run) */
	size_t errbody_len;
	char errbody[REQUEST_ERRBODY_MAX];
	char curl_err[CURL_ERROR_SIZE];

	/* The direct path, on plain http:// (request.c says when): curl only
	 * makes the connection (CONNECT_ONLY); the request writes its
	 * HTTP/1.1 request and reads the answer on its own copy of the
	 * socket, one recv() per wake-up and nothing between it and the SSE
	 * parser, and keeps the connection for its next request. */
	bool direct;
	bool connecting;               /* curl is connecting for it */
	int fd;                        /* its connection, -1 none */
	ev_io io;
	ev_timer deadline;             /* --timeout, from the start */
	int64_t conn_idle_since;       /* when its connection's last answer ended */
	char *head;                    /* request line and headers */
	size_t head_prefix;            /* of which the same for every request */
	size_t head_len, head_cap;
	size_t out_off;                /* bytes of head + body written */
	struct h1_parser *h1;
	/* An answer compressed though identity was asked for, decoded as
	 * curl would (gzip, deflate). */
	struct z_stream_s *z;
	bool z_on;                     /* this answer is compressed */

	struct request *prev, *next;   /* owner's list (live or free) */
	void *owner_data;
};

struct request *request_new(const struct request_ctx *ctx);
void request_free(struct request *r);
/* Takes ownership of the malloc'd body. t_intended is when the load
 * controller meant to send it (for queue time). 0 or -1 on failure. */
int request_start(struct request *r, char *body, size_t len, int64_t t_intended);
/* Ends a running request now, recorded as `kind` (ERR_ABORTED). */
void request_abort(struct request *r, enum err_kind kind, const char *msg);

#endif
