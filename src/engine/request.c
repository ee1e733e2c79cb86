#include "config.h"

#include "infertop/request.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/bodybuf.h"
#include "infertop/clock.h"
#include "infertop/coding.h"
#include "infertop/http.h"
#include "infertop/openai.h"
#include "infertop/redact.h"
#include "infertop/tls.h"
#include "infertop/transport.h"

/* What a token touches (request.h): the request's fields and the first
 * (per-chunk) fields of its HTTP reader in one 128-byte block, and all of
 * it in the first page. */
#define REQUEST_HOT_END (offsetof(struct request, conn) + DIRECT_HOT_END)
_Static_assert(REQUEST_HOT_END - offsetof(struct request, n_itl) <= 128,
	       "a token's fields spill out of the 128-byte block of struct request");
_Static_assert(REQUEST_HOT_END <= 4096, "a token's fields spill out of the first page of struct request");
/* And the SSE parser's, in the one line of it asked for before a read. */
_Static_assert(offsetof(struct sse_parser, cr_pending) + sizeof(bool) <= 64,
	       "the SSE parser's per-token fields spill out of its first cache line");

static const char *const client_names[REQUEST_CLIENT_N] = {"direct", "curl"};

int request_client_parse(const char *name, enum request_client *out)
{
	for (int i = 0; name && i < REQUEST_CLIENT_N; i++) {
		if (strcmp(name, client_names[i]) == 0) {
			*out = (enum request_client)i;
			return 0;
		}
	}
	return -1;
}

const char *request_client_name(int i)
{
	return i >= 0 && i < REQUEST_CLIENT_N ? client_names[i] : NULL;
}

/* Events larger than this are dropped and counted (a sane chunk is < 4 KiB). */
#define REQUEST_MAX_EVENT (1u << 20)

static void request_fail(struct request *r, enum err_kind kind, const char *msg, size_t len)
{
	if (r->failed)
		return; /* the first failure is the cause; the rest are fallout */
	r->failed = true;
	r->err = kind;
	if (len >= sizeof r->msg)
		len = sizeof r->msg - 1;
	memcpy(r->msg, msg, len);
	r->msg[len] = '\0';
	/* The one place a request's error text is recorded: the summary, the
	 * result file, snapshots and the request log all take it from here. */
	redact_secrets(r->msg, r->ctx->secrets);
}

static void request_failf(struct request *r, enum err_kind kind, const char *msg)
{
	request_fail(r, kind, msg, strlen(msg));
}

/* Once per full ITL buffer, never per chunk: what the requests view needs
 * of the gaps about to be dropped (their worst, the last few). */
static void request_keep_gaps(struct request *r)
{
	for (size_t i = 0; i < r->n_itl; i++)
		if (r->itl[i] > r->itl_worst)
			r->itl_worst = r->itl[i];
	memcpy(r->itl_keep, r->itl + REQUEST_ITL_BUF - REQUEST_ITL_KEEP, sizeof r->itl_keep);
	r->n_keep = REQUEST_ITL_KEEP;
}

static void request_on_output(struct request *r)
{
	int64_t now = r->now;
	if (r->chunks == 0) { /* not t_first_token: its cache line is cold */
		r->t_first_token = now;
	} else {
		int64_t gap_us = (now - r->t_last_token + 500) / 1000;
		if (r->n_itl == REQUEST_ITL_BUF) {
			if (r->ctx->on_itl)
				r->ctx->on_itl(r->ctx->detail_ud, r, r->itl, r->n_itl);
			stats_record_itl_us(r->ctx->stats, r->itl, r->n_itl);
			request_keep_gaps(r);
			r->n_itl = 0;
		}
		r->itl[r->n_itl++] = gap_us > UINT32_MAX ? UINT32_MAX : (uint32_t)gap_us;
	}
	r->t_last_token = now;
	r->chunks++;
	stats_chunk_arrived(r->ctx->stats);
}

/* A session's answer, kept whole for its next turn; past the bound the
 * rest is dropped (the next turn then resends what was kept) rather than
 * letting one runaway answer hold the loop's memory. */
static void request_keep_answer(struct request_answer *a, const char *text, size_t len)
{
	if (a->too_long)
		return;
	if (bodybuf_append(&a->buf, &a->len, &a->cap, text, len, REQUEST_ANSWER_MAX, 1024) != BODYBUF_OK)
		a->too_long = true;
}

static int request_on_event(void *ud, const struct sse_event *ev)
{
	struct request *r = ud;
	if (!r->event_seen) { /* a flag in the token's block; the time is not */
		r->event_seen = true;
		r->t_first_event = r->now;
	}
	if (r->failed)
		return 0; /* keep reading so the connection stays reusable */
	switch (ev->kind) {
	case SSE_DONE:
		r->done_seen = true;
		return 0;
	case SSE_ERROR_FIELD:
		request_fail(r, ERR_EVENT, ev->data, ev->len);
		return 0;
	case SSE_OVERSIZE:
		request_failf(r, ERR_OVERSIZE, "SSE event larger than 1 MiB");
		return 0;
	case SSE_DATA:
		break;
	}
	if (ev->name_len == 5 && memcmp(ev->name, "error", 5) == 0) {
		request_fail(r, ERR_EVENT, ev->data, ev->len);
		return 0;
	}
	struct oai_chunk c;
	if (oai_chunk_parse_memo(&r->memo, ev->data, ev->len, &c) != 0) {
		char m[STATS_MSG_MAX];
		int n = snprintf(m, sizeof m, "chunk is not a JSON object: %.*s",
				 (int)(ev->len > 80 ? 80 : ev->len), ev->data);
		request_fail(r, ERR_BAD_JSON, m, n > 0 ? (size_t)n : 0);
		return 0;
	}
	if (c.error) {
		request_failf(r, ERR_EVENT, c.error_msg[0] ? c.error_msg : "error object in stream");
		return 0;
	}
	if (c.output) {
		request_on_output(r);
		if (r->ctx->on_output)
			r->ctx->on_output(r->ctx->detail_ud, r, ev->data, ev->len);
	}
	if (r->answer && c.has_text)
		request_keep_answer(r->answer, ev->data + c.text_off, c.text_len);
	if (c.usage) {
		r->usage_completion = c.completion_tokens;
		r->usage_prompt = c.prompt_tokens;
	}
	if (c.cached_tokens >= 0)
		r->usage_cached = c.cached_tokens;
	return 0;
}

/* Body bytes of the answer, however they were read. */
static void request_body(struct request *r, const char *ptr, size_t n)
{
	if (!r->status_ok) {
		size_t room = sizeof r->errbody - 1 - r->errbody_len;
		size_t take = n < room ? n : room;
		memcpy(r->errbody + r->errbody_len, ptr, take);
		r->errbody_len += take;
		r->errbody[r->errbody_len] = '\0';
		return;
	}
	if (sse_feed(&r->sse, ptr, n, request_on_event, r) < 0)
		request_failf(r, ERR_OTHER, "out of memory in the SSE parser");
}

/* ---- Compressed answers (coding.h) ----------------------------------
 * Decoded on both paths by the one decoder (libcurl's own is off: it
 * stops at a gzip answer's first member and refuses what follows), so
 * both agree. */

static void request_coding(struct request *r, const char *v, size_t len, bool transfer)
{
	char m[STATS_MSG_MAX];
	int rc = coding_header(&r->coding, v, len, transfer, m, sizeof m);
	if (rc != CODING_OK)
		request_failf(r, ERR_OTHER, m);
	r->z_on = r->coding.on;
}

static int request_decoded(void *ud, const char *data, size_t len)
{
	request_body(ud, data, len);
	return 0;
}

/* -1: the request failed (the answer does not decode, or decodes to too
 * much) and reading it further is pointless. */
static int request_inflate(struct request *r, const char *data, size_t len)
{
	int rc = coding_feed(&r->coding, data, len, request_decoded, r);
	if (rc == CODING_OK)
		return 0;
	if (rc == CODING_OVERSIZE)
		request_failf(r, ERR_OVERSIZE, "a compressed answer decodes to over " REQUEST_MAX_DECODED_TEXT);
	else
		request_failf(r, ERR_OTHER, "the compressed answer does not decode");
	r->z_on = false;
	return -1;
}

static size_t request_on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct request *r = ud;
	size_t n = size * nmemb;
	/* One clock read per read(): every chunk in it arrived together. */
	r->now = clock_now_ns();
	if (!r->status_known) {
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
		r->status_known = true;
		r->status_ok = r->status >= 200 && r->status <= 299;
	}
	if (r->z_on) /* 0 ends the transfer: the request has failed */
		return request_inflate(r, ptr, n) == 0 ? n : 0;
	request_body(r, ptr, n);
	return n;
}

/* Keep-Alive tells how long the server keeps an idle connection open;
 * Retry-After how long it wants the client to wait (429, 503); the
 * codings, what to decode ("Compressed answers"). */
static void request_header(struct request *r, const char *line, size_t n)
{
	if (n > 17 && strncasecmp(line, "content-encoding:", 17) == 0)
		request_coding(r, line + 17, n - 17, false);
	else if (n > 18 && strncasecmp(line, "transfer-encoding:", 18) == 0)
		request_coding(r, line + 18, n - 18, true); /* chunked is the reader's */
	else if (n > 11 && strncasecmp(line, "keep-alive:", 11) == 0)
		http_note_keepalive(r->ctx->http, http_keepalive_parse(line + 11, n - 11));
	else if (n > 12 && strncasecmp(line, "retry-after:", 12) == 0)
		r->retry_after_ns = http_retry_after_parse(line + 12, n - 12, time(NULL));
}

static size_t request_on_header(char *line, size_t size, size_t nitems, void *ud)
{
	size_t n = size * nitems;
	struct request *r = ud;
	if (n > 5 && memcmp(line, "HTTP/", 5) == 0) { /* a status line: a 1xx's codings are its own */
		r->z_on = false;
		coding_reset(&r->coding);
	}
	request_header(ud, line, n);
	return n;
}

/* curl pulls the body when it writes the request to the socket: the exact
 * send time, after any connect and after any wait inside the client. */
static size_t request_on_read(char *buf, size_t size, size_t nitems, void *ud)
{
	struct request *r = ud;
	if (r->body_off == 0)
		r->t_send = clock_now_ns();
	size_t n = size * nitems, left = r->body_len - r->body_off;
	if (n > left)
		n = left;
	memcpy(buf, r->body + r->body_off, n);
	r->body_off += n;
	return n;
}

/* curl rewinds when it resends on a fresh connection (a reused one that
 * the server had closed); the send is then stamped again. */
static int request_on_seek(void *ud, curl_off_t offset, int origin)
{
	struct request *r = ud;
	if (origin != SEEK_SET || offset < 0 || (size_t)offset > r->body_len)
		return CURL_SEEKFUNC_CANTSEEK;
	r->body_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static enum err_kind classify_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
		return ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return ERR_TIMEOUT;
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return ERR_TRUNCATED;
	default:
		return ERR_OTHER;
	}
}

/* The connection died before a single byte of answer: the server closed a
 * kept-alive connection as the request went out (every real server closes
 * idle ones on its own schedule), so the request never reached its model.
 * curl's own resend may land on another such connection from the pool;
 * this one goes out once more on a connection of its own. */
static bool request_died_unanswered(struct request *r, CURLcode rc)
{
	if (r->retried || r->t_first_event != 0 || r->status_known || r->errbody_len)
		return false;
	if (rc != CURLE_GOT_NOTHING && rc != CURLE_SEND_ERROR && rc != CURLE_RECV_ERROR)
		return false;
	if (r->direct)
		return !h1_started(&r->conn.h1);
	long header_bytes = 0;
	curl_easy_getinfo(r->easy, CURLINFO_HEADER_SIZE, &header_bytes);
	return header_bytes == 0;
}

static int request_resend(struct request *r)
{
	r->retried = true;
	r->ctx->stats->connection_retries++;
	r->body_off = 0;
	r->curl_err[0] = '\0';
	sse_reset(&r->sse);
	r->t_send = clock_now_ns();
	if (r->direct)
		return direct_resend(&r->conn);
	return http_add(r->ctx->http, r->easy, true);
}

static void request_finish(struct request *r, CURLcode rc)
{
	const struct request_ctx *ctx = r->ctx;
	long connects = 0;
	/* The direct path counts its own (the connector's figure is of its
	 * last connect, not of this request). */
	if (!r->direct && curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK &&
	    connects > 0)
		ctx->stats->connections += (uint64_t)connects;
	if (rc != CURLE_OK && request_died_unanswered(r, rc) && request_resend(r) == 0)
		return;
	if (!r->status_known && !r->direct)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	struct req_result res = {0};
	res.usage_tokens = -1;
	res.cached_tokens = r->usage_cached;
	res.turn = r->turn;
	res.http_code = (int)r->status;
	res.retry_after_ns = r->retry_after_ns;
	if (rc != CURLE_OK && !r->failed) {
		const char *m = r->curl_err[0] ? r->curl_err : curl_easy_strerror(rc);
		enum err_kind k = classify_curl(rc);
		/* A transfer error after a non-2xx status is still that status. */
		if (r->status > 0 && (r->status < 200 || r->status >= 300))
			k = ERR_HTTP;
		request_failf(r, k, m);
	}
	if (!r->failed && (r->status < 200 || r->status > 299)) {
		char m[STATS_MSG_MAX];
		char detail[160];
		oai_error_body_message(r->errbody, r->errbody_len, detail, sizeof detail);
		snprintf(m, sizeof m, "HTTP %ld: %s", r->status, detail);
		request_failf(r, r->status == 400 && oai_error_is_context(r->errbody, r->errbody_len) ? ERR_CONTEXT
												   : ERR_HTTP,
			      m);
	}
	if (!r->failed && !r->done_seen)
		request_failf(r, ERR_TRUNCATED, "stream ended without data: [DONE]");
	if (!r->failed && r->chunks == 0)
		request_failf(r, ERR_NO_OUTPUT, "stream carried no output tokens");

	res.ok = !r->failed;
	res.err = r->err;
	res.msg = r->failed ? r->msg : NULL;
	res.queue_ns = r->t_send - r->t_intended;
	/* request_abort at the run's end (engine_abort): what it streamed
	 * counts; usage comes last, so its chunks are its tokens. */
	res.incomplete = r->failed && r->err == ERR_ABORTED;
	if (res.incomplete) {
		res.output_tokens = (int64_t)r->chunks;
		res.chunks = r->chunks;
	}
	if (res.ok) {
		res.ttfb_ns = r->t_first_event - r->t_send;
		res.ttft_ns = r->t_first_token - r->t_send;
		res.e2e_ns = r->t_last_token - r->t_send;
		res.tokens_from_usage = r->usage_completion >= 0;
		res.usage_tokens = r->usage_completion;
		res.output_tokens = res.tokens_from_usage ? r->usage_completion : (int64_t)r->chunks;
		res.prompt_tokens = r->usage_prompt >= 0 ? r->usage_prompt : r->prompt_estimate;
		res.chunks = r->chunks;
		if (ctx->on_itl)
			ctx->on_itl(ctx->detail_ud, r, r->itl, r->n_itl);
		stats_record_itl_us(ctx->stats, r->itl, r->n_itl);
	}
	/* The gaps stay in itl until the next start: the owner's on_done
	 * keeps the last of them for the requests view (reqtrack.h). */
	free(r->body);
	r->body = NULL;
	stats_request_done(ctx->stats, &res);
	if (ctx->on_done)
		ctx->on_done(ctx->ud, r, &res);
}

/* ---- The direct path (direct.h) -------------------------------------
 * The transport writes the request and reads the answer; the request
 * takes the answer's parts as the curl path's callbacks do. */

static struct request *request_of(struct direct *d)
{
	return (struct request *)((char *)d - offsetof(struct request, conn));
}

static void direct_prefetch(struct direct *d)
{
	struct request *r = request_of(d);
	/* What the token will touch besides the block libev has just read,
	 * asked for while the recv() spends a microsecond in the kernel. */
	__builtin_prefetch(&r->sse, 1);   /* what a token touches is in its first line */
	__builtin_prefetch(&r->itl[r->n_itl], 1);
	__builtin_prefetch(&r->memo, 0);
	__builtin_prefetch((const char *)&r->memo + 64, 0);
	__builtin_prefetch((const char *)&r->memo + 128, 0);
}

static void direct_on_read(struct direct *d, int64_t now)
{
	request_of(d)->now = now;
}

static void direct_on_send(struct direct *d, int64_t now)
{
	request_of(d)->t_send = now;
}

static void direct_on_connect(struct direct *d)
{
	request_of(d)->ctx->stats->connections++;
}

static int direct_on_status(struct direct *d, int status)
{
	struct request *r = request_of(d);
	r->status = status;
	r->status_known = true;
	r->status_ok = status >= 200 && status <= 299;
	r->z_on = false;
	coding_reset(&r->coding);
	return 0;
}

static int direct_on_header(struct direct *d, const char *line, size_t len)
{
	request_header(request_of(d), line, len);
	return 0;
}

static int direct_on_body(struct direct *d, const char *data, size_t len)
{
	struct request *r = request_of(d);
	if (!r->z_on) {
		request_body(r, data, len);
		return 0;
	}
	return request_inflate(r, data, len);
}

static void direct_on_done(struct direct *d, CURLcode rc, const char *msg)
{
	struct request *r = request_of(d);
	if (msg)
		snprintf(r->curl_err, sizeof r->curl_err, "%s", msg);
	/* A status read before the fault (a 101 the request did not ask
	 * for) is the answer's. */
	if (!r->status_known && d->h1.status > 0) {
		r->status = d->h1.status;
		r->status_known = true;
	}
	request_finish(r, rc);
}

static const struct direct_callbacks request_direct = {
	.prefetch = direct_prefetch,
	.on_read = direct_on_read,
	.on_send = direct_on_send,
	.on_connect = direct_on_connect,
	.on_status = direct_on_status,
	.on_header = direct_on_header,
	.on_body = direct_on_body,
	.on_done = direct_on_done,
};


/* The request's head but its Content-Length (h1_request_head). NULL when
 * the direct path cannot carry it: --http-client curl, a proxy set in the
 * environment, or a URL h1_request_head refuses. */
static char *direct_head(const struct request_ctx *ctx, size_t *len)
{
	if (ctx->client == REQUEST_CLIENT_CURL || transport_proxied(ctx->endpoint))
		return NULL;
	return h1_request_head(ctx->endpoint, ctx->headers, len);
}


/* The per-request tail of the head; the body follows it. */
static int direct_head_finish(struct request *r)
{
	char cl[48];
	int n = snprintf(cl, sizeof cl, "Content-Length: %zu\r\n\r\n", r->body_len);
	size_t need = r->head_prefix + (size_t)n;
	if (need > r->head_cap) {
		char *more = realloc(r->head, need);
		if (!more)
			return -1;
		r->head = more;
		r->head_cap = need;
	}
	memcpy(r->head + r->head_prefix, cl, (size_t)n);
	r->head_len = need;
	return 0;
}

static void request_on_done(struct http_xfer *x, CURLcode rc)
{
	struct request *r = (struct request *)((char *)x - offsetof(struct request, xfer));
	request_finish(r, rc);
}

struct request *request_new(const struct request_ctx *ctx)
{
	/* Page-aligned: what a token touches is in the first page (request.h). */
	size_t size = (sizeof(struct request) + 4095) & ~(size_t)4095;
	struct request *r = aligned_alloc(4096, size);
	if (!r)
		return NULL;
	memset(r, 0, size);
	r->ctx = ctx;
	coding_init(&r->coding, REQUEST_MAX_DECODED);
	if (sse_init(&r->sse, REQUEST_MAX_EVENT) != 0) {
		request_free(r);
		return NULL;
	}
	if ((r->head = direct_head(ctx, &r->head_prefix)) != NULL) {
		r->direct = true;
		r->head_cap = r->head_prefix;
		struct tls_opts tls = {.insecure = ctx->insecure, .cafile = ctx->cacert};
		if (direct_init(&r->conn, ctx->http, ctx->endpoint, ctx->timeout_ms, ctx->new_connection, &tls,
				&request_direct) != 0) {
			request_free(r);
			return NULL;
		}
		return r;
	}
	r->xfer.done = request_on_done;
	r->xfer.taken_fd = -1;
	r->easy = curl_easy_init();
	if (!r->easy) {
		request_free(r);
		return NULL;
	}
	CURL *e = r->easy;
	curl_easy_setopt(e, CURLOPT_URL, ctx->endpoint);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)&r->xfer);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->curl_err);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ctx->timeout_ms < 30000 ? ctx->timeout_ms : 30000L);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, ctx->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, request_on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_READFUNCTION, request_on_read);
	curl_easy_setopt(e, CURLOPT_READDATA, r);
	curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, request_on_seek);
	curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, request_on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	/* Asks for an uncompressed stream (a compressor would hold tokens
	 * back) and decodes one sent anyway, rather than report it as a
	 * broken stream. */
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "identity");
	curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L); /* ours: "Compressed answers" */
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ctx->timeout_ms);
	http_easy_tls(e, &(struct tls_opts){.insecure = ctx->insecure, .cafile = ctx->cacert});
	if (ctx->new_connection)
		curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	return r;
}

void request_free(struct request *r)
{
	if (!r)
		return;
	if (r->direct)
		direct_cleanup(&r->conn);
	if (r->easy)
		curl_easy_cleanup(r->easy);
	sse_free(&r->sse);
	free(r->body);
	if (r->head) /* it may hold the API key */
		memset(r->head, 0, r->head_cap);
	free(r->head);
	coding_free(&r->coding);
	free(r);
}

int request_start(struct request *r, char *body, size_t len, int64_t t_intended)
{
	free(r->body);
	r->body = body;
	r->body_len = len;
	r->t_first_event = r->t_first_token = r->t_last_token = 0;
	r->event_seen = false;
	r->chunks = 0;
	r->usage_completion = r->usage_prompt = r->usage_cached = -1;
	r->status = 0;
	r->status_ok = false;
	r->status_known = r->done_seen = r->failed = false;
	r->retry_after_ns = -1;
	r->retried = false;
	/* Not reused past the server's idle limit (see http.h). */
	if (!r->direct)
		curl_easy_setopt(r->easy, CURLOPT_MAXAGE_CONN, http_reuse_limit(r->ctx->http));
	r->msg[0] = '\0';
	r->curl_err[0] = '\0';
	r->n_itl = 0;
	r->n_keep = 0;
	r->itl_worst = 0;
	r->errbody_len = 0;
	r->z_on = false;
	coding_reset(&r->coding);
	sse_reset(&r->sse);
	r->body_off = 0;
	if (r->direct ? direct_head_finish(r) != 0
		      : curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) != CURLE_OK)
		return -1;
	/* Until the request is written (curl reads the body, or the direct
	 * path writes it), "now" stands in for the send time (a
	 * request that never gets a connection still has one). Closed loop
	 * means to send now: what elapses before the real send (connecting,
	 * a busy client) is client queue time, not server latency. */
	r->t_send = clock_now_ns();
	r->t_intended = t_intended > 0 ? t_intended : r->t_send;
	if (r->direct ? direct_start(&r->conn, r->head, r->head_len, r->body, r->body_len, false) != 0
		      : http_add(r->ctx->http, r->easy, r->ctx->new_connection) != 0)
		return -1;
	r->ctx->stats->started++;
	struct stats *st = r->ctx->stats;
	if (++st->in_flight > st->max_in_flight)
		st->max_in_flight = st->in_flight;
	if (st->in_flight > st->step_max_in_flight)
		st->step_max_in_flight = st->in_flight;
	return 0;
}

void request_abort(struct request *r, enum err_kind kind, const char *msg)
{
	if (r->direct)
		direct_abort(&r->conn);
	else
		http_remove(r->ctx->http, r->easy);
	request_failf(r, kind, msg);
	request_finish(r, CURLE_OK);
}
