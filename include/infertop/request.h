#ifndef INFERTOP_REQUEST_H
#define INFERTOP_REQUEST_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "infertop/coding.h"
#include "infertop/direct.h"
#include "infertop/h1.h"
#include "infertop/http.h"
#include "infertop/openai.h"
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
/* A compressed answer (sent though identity was asked for) that decodes
 * to more than this fails as oversize: inflating is the loop's time. */
#define REQUEST_MAX_DECODED (64u << 20)
#define REQUEST_MAX_DECODED_TEXT "64 MiB"

struct request;

/* The text of an answer as it streams, JSON-escaped (sessions). */
struct request_answer {
	char *buf;
	size_t len, cap;
	bool too_long;                 /* past REQUEST_ANSWER_MAX: the rest dropped */
};
#define REQUEST_ANSWER_MAX (16u << 20)

/* How requests go out (--http-client). direct: on http:// and https://
 * without a proxy, libcurl makes the connection and the direct transport
 * speaks HTTP/1.1 on it (direct.h; https through its own TLS session);
 * elsewhere, and with curl, libcurl carries the whole transfer. */
enum request_client { REQUEST_CLIENT_DIRECT, REQUEST_CLIENT_CURL, REQUEST_CLIENT_N };
int request_client_parse(const char *name, enum request_client *out);
/* NULL past the last. */
const char *request_client_name(int i);

/* Shared by every request of a run. */
struct request_ctx {
	struct http *http;
	struct stats *stats;
	const char *endpoint;          /* full URL of the completions endpoint */
	struct curl_slist *headers;
	const char *const *secrets;    /* scrubbed from recorded errors (redact.h) */
	long timeout_ms;
	bool insecure;
	const char *cacert;            /* --cacert FILE, or NULL: the system's CAs */
	bool new_connection;
	enum request_client client;
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
	/* What a token touches, in the request's first page (requests are
	 * page-aligned): the SSE parser's first line, the chunk memo, the
	 * slot of its gap, and the 128-byte block below. Between two tokens
	 * of a stream the kernel's work for a thousand others evicts all of
	 * it, so each line is a cache miss and each page a TLB miss (a page
	 * walk a prefetch waits for): the lines are asked for before the read
	 * (request.c), and one page is walked, not two. Line-aligned, so the
	 * lines a token reads are the ones asked for. */
	_Alignas(64) struct sse_parser sse;
	_Alignas(64) struct oai_memo memo; /* its chunks' shape (openai.h) */
	uint32_t itl[REQUEST_ITL_BUF];
	/* The block every token touches first (two cache lines, fetched as a
	 * pair): the request's per-token fields, then the direct transport's
	 * (direct.h: the watcher libev reads before any of our code runs,
	 * and the HTTP reader's per-chunk fields). */
	_Alignas(128) uint16_t n_itl;
	bool failed;
	bool z_on;                     /* this answer is compressed */
	bool status_ok;                /* the status is known and 2xx */
	bool event_seen;               /* t_first_event is set */
	uint64_t chunks;
	const struct request_ctx *ctx;
	int64_t now;                   /* arrival time of the bytes being parsed */
	int64_t t_last_token;
	struct direct conn;            /* the direct path's (direct.h) */

	bool direct;                   /* on the direct path (request.c says when) */
	int64_t t_first_event;
	int64_t t_first_token;
	long status;
	bool status_known;

	struct http_xfer xfer;
	CURL *easy;
	char *body;
	size_t body_len;
	size_t body_off;               /* how much curl has read for sending */

	int64_t t_intended;
	int64_t t_send;                /* when the request's first byte was sent */
	int64_t usage_completion;
	int64_t usage_prompt;
	int64_t usage_cached;          /* oai_chunk.cached_tokens of the usage chunk, -1: none */
	uint32_t turn;                 /* its session's turn (req_result.turn), 0: none */
	/* A session's request keeps its answer's text here, JSON-escaped
	 * (oai_chunk.text_off), for the next turn; NULL: not kept. Owned by
	 * the session. */
	struct request_answer *answer;
	int64_t prompt_estimate;       /* input tokens if usage does not say */
	bool done_seen;
	bool retried;                  /* resent once on a fresh connection */
	int64_t retry_after_ns;        /* Retry-After of the answer, -1 if none */
	enum err_kind err;
	char msg[STATS_MSG_MAX];
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

	/* The direct path's request: the head, its Content-Length line each
	 * time (the body follows it). */
	char *head;                    /* request line and headers */
	size_t head_prefix;            /* of which the same for every request */
	size_t head_len, head_cap;
	/* An answer compressed though identity was asked for, decoded on
	 * both paths (coding.h); z_on says so in the token's block. */
	struct coding coding;

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
