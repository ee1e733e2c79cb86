#include "config.h"

#include "infertop/request.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "infertop/clock.h"
#include "infertop/openai.h"
#include "infertop/redact.h"

/* What a token touches (request.h): the request's fields and the first
 * (per-chunk) fields of its HTTP reader in one 128-byte block, and all of
 * it in the first page. */
#define REQUEST_HOT_END (offsetof(struct request, h1) + offsetof(struct h1_parser, body_bytes) + sizeof(uint64_t))
_Static_assert(REQUEST_HOT_END - offsetof(struct request, io) <= 128,
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

static int request_on_event(void *ud, const struct sse_event *ev)
{
	struct request *r = ud;
	if (r->t_first_event == 0)
		r->t_first_event = r->now;
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
	if (c.usage) {
		r->usage_completion = c.completion_tokens;
		r->usage_prompt = c.prompt_tokens;
	}
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

/* ---- Compressed answers ----------------------------------------------
 * The request asks for identity (a compressor would hold tokens back), but
 * a server may compress anyway: gzip and deflate are decoded, on both
 * paths by this one decoder (libcurl's own is off: it stops at a gzip
 * answer's first member and refuses what follows), so both agree: a
 * Transfer-Encoding's gzip or deflate as a Content-Encoding's, every
 * gzip member is decoded, as gunzip does; deflate with or without its zlib
 * wrapper, as libcurl takes it; any other coding fails the request by
 * name. What an answer decodes to is bounded (REQUEST_MAX_DECODED): a
 * small answer must not cost seconds of the loop inflating gigabytes. */
enum { Z_KIND_GZIP = 1, Z_KIND_DEFLATE };

/* Sets up decoding for one coding of a Content-Encoding (or, on the
 * direct path, a Transfer-Encoding) header's value: "identity" and
 * "chunked" (the HTTP reader's) are no codings. */
static void request_coding(struct request *r, const char *v, size_t len, bool transfer)
{
	const char *what = transfer ? "Transfer-Encoding" : "Content-Encoding";
	for (size_t i = 0; i < len;) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ',' || v[i] == '\r' || v[i] == '\n'))
			i++;
		size_t j = i;
		while (j < len && v[j] != ',' && v[j] != ' ' && v[j] != '\t' && v[j] != '\r' && v[j] != '\n')
			j++;
		const char *c = v + i;
		size_t n = j - i;
		i = j;
		if (!n || (n == 8 && strncasecmp(c, "identity", 8) == 0) ||
		    (transfer && n == 7 && strncasecmp(c, "chunked", 7) == 0))
			continue;
		int kind = (n == 4 && strncasecmp(c, "gzip", 4) == 0) || (n == 6 && strncasecmp(c, "x-gzip", 6) == 0)
				   ? Z_KIND_GZIP
			   : n == 7 && strncasecmp(c, "deflate", 7) == 0 ? Z_KIND_DEFLATE
									  : 0;
		char m[STATS_MSG_MAX];
		if (!kind || r->z_on) {
			int k = snprintf(m, sizeof m, "%s %s: %.*s", kind ? "a second" : "unasked", what,
					 (int)(n > 40 ? 40 : n), c);
			request_fail(r, ERR_OTHER, m, k > 0 ? (size_t)k : 0);
			return;
		}
		if (!r->z) {
			if (!(r->z = calloc(1, sizeof *r->z)) || inflateInit2(r->z, 15 + 32) != Z_OK) {
				free(r->z);
				r->z = NULL;
				request_failf(r, ERR_OTHER, "out of memory for a compressed answer");
				return;
			}
		} else {
			inflateReset2(r->z, 15 + 32); /* zlib or gzip, by its header */
		}
		r->z_kind = (uint8_t)kind;
		r->z_raw = false;
		r->z_head_n = 0;
		r->decoded = 0;
		r->z_on = true;
	}
}

/* Decodes n bytes of a compressed answer into request_body. -1: the
 * request failed (the answer does not decode, or decodes to too much)
 * and reading it further is pointless. */
static int request_inflate(struct request *r, const char *data, size_t len)
{
	z_stream *z = r->z;
	uLong before = z->total_in;
	/* A deflate stream's first bytes, kept for a second reading as raw
	 * deflate should its zlib header turn out not to be one. */
	if (!r->z_raw && before < sizeof r->z_head && before == r->z_head_n) {
		size_t take = sizeof r->z_head - r->z_head_n;
		take = take < len ? take : len;
		memcpy(r->z_head + r->z_head_n, data, take);
		r->z_head_n = (uint8_t)(r->z_head_n + take);
	}
	char out[16384];
	z->next_in = (Bytef *)(uintptr_t)data;
	z->avail_in = (uInt)len;
	while (z->avail_in) {
		z->next_out = (Bytef *)out;
		z->avail_out = sizeof out;
		int zr = inflate(z, Z_NO_FLUSH);
		size_t got = sizeof out - z->avail_out;
		if (got) {
			r->decoded += got;
			if (r->decoded > REQUEST_MAX_DECODED) {
				request_failf(r, ERR_OVERSIZE, "a compressed answer decodes to over "
							       REQUEST_MAX_DECODED_TEXT);
				r->z_on = false;
				return -1;
			}
			request_body(r, out, got);
		}
		if (zr == Z_STREAM_END) {
			/* The next member (gzip), or stream, starts afresh. */
			inflateReset(z);
			continue;
		}
		if (zr == Z_DATA_ERROR && r->z_kind == Z_KIND_DEFLATE && !r->z_raw && z->total_out == 0 &&
		    before <= r->z_head_n) {
			/* "deflate" sent without its zlib wrapper: read again, raw. */
			inflateReset2(z, -15);
			r->z_raw = true;
			if (before && request_inflate(r, (const char *)r->z_head, before) != 0)
				return -1;
			return request_inflate(r, data, len);
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			request_failf(r, ERR_OTHER, "the compressed answer does not decode");
			r->z_on = false;
			return -1;
		}
		if (zr == Z_BUF_ERROR && !got)
			break;
	}
	return 0;
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
	if (n > 5 && memcmp(line, "HTTP/", 5) == 0)
		r->z_on = false; /* an answer's status line: a 1xx's codings are its own */
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
		return !h1_started(&r->h1);
	long header_bytes = 0;
	curl_easy_getinfo(r->easy, CURLINFO_HEADER_SIZE, &header_bytes);
	return header_bytes == 0;
}

static int direct_start(struct request *r, bool fresh);
static void direct_reuse_seen(struct request *r, bool closed);

static int request_resend(struct request *r)
{
	r->retried = true;
	r->ctx->stats->connection_retries++;
	r->body_off = 0;
	r->curl_err[0] = '\0';
	sse_reset(&r->sse);
	r->t_send = clock_now_ns();
	if (r->direct) {
		direct_reuse_seen(r, true); /* a kept connection died under it */
		return direct_start(r, true);
	}
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
		request_failf(r, ERR_HTTP, m);
	}
	if (!r->failed && !r->done_seen)
		request_failf(r, ERR_TRUNCATED, "stream ended without data: [DONE]");
	if (!r->failed && r->chunks == 0)
		request_failf(r, ERR_NO_OUTPUT, "stream carried no output tokens");

	res.ok = !r->failed;
	res.err = r->err;
	res.msg = r->failed ? r->msg : NULL;
	res.queue_ns = r->t_send - r->t_intended;
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

/* ---- The direct path ------------------------------------------------
 * libcurl 7.88 spends about 3 us of user CPU per wake-up of a streaming
 * transfer (its state machine, a poll() per read to see if more is
 * pending, timer upkeep), ten times what reading the token costs. On
 * plain http:// curl makes the connection (resolving, connecting, its
 * timeouts and errors) as a CONNECT_ONLY transfer, and the request does
 * the rest on the socket curl hands over (http.h): it writes the request, reads
 * each wake-up with one recv() into a buffer shared by every request of
 * the thread, and hands the bytes through the HTTP/1.x reader (h1.h)
 * straight to the SSE parser. The connection is kept for the request
 * object's next request, under the same idle limit as curl's pool. */

/* Every request of a thread reads into this: the parsers copy only what
 * they must keep (a part event, an error body). */
static _Thread_local char direct_rbuf[1 << 16];

static void direct_close(struct request *r)
{
	ev_io_stop(http_loop(r->ctx->http), &r->io);
	if (r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
	}
}

/* keep: the connection may carry the next request. A kept one is closed
 * once idle past the reuse limit (the deadline timer, meanwhile free):
 * it would never carry another, and a load lowered from 300 streams to 2
 * kept 298 of them open to the end of the run. */
static void direct_end(struct request *r, CURLcode rc, bool keep)
{
	struct ev_loop *loop = http_loop(r->ctx->http);
	ev_timer_stop(loop, &r->deadline);
	ev_io_stop(loop, &r->io);
	if (keep && !r->ctx->new_connection && http_keep_pays(r->ctx->http)) {
		r->conn_idle_since = clock_now_ns();
		r->conn_idle = true;
		ev_timer_set(&r->deadline, (double)http_reuse_limit(r->ctx->http), 0.);
		ev_timer_start(loop, &r->deadline);
	} else {
		direct_close(r);
	}
	request_finish(r, rc);
}

static void direct_fail(struct request *r, CURLcode rc, const char *fmt, const char *what)
{
	snprintf(r->curl_err, sizeof r->curl_err, fmt, what);
	direct_end(r, rc, false);
}

/* What a kept connection turned out to be, told once per reuse (http.h). */
static void direct_reuse_seen(struct request *r, bool closed)
{
	if (!r->conn_reused)
		return;
	http_note_reuse(r->ctx->http, closed);
	r->conn_reused = false;
}

static void direct_arm(struct request *r, int events)
{
	struct ev_loop *loop = http_loop(r->ctx->http);
	ev_io_stop(loop, &r->io);
	ev_io_set(&r->io, r->fd, events);
	ev_io_start(loop, &r->io);
}

static int direct_connect(struct request *r);
static bool direct_conn_dead(int fd);

static bool direct_sent(const struct request *r)
{
	return r->out_off >= r->head_len + r->body_len;
}

static void direct_read(struct request *r);

static void direct_write(struct request *r)
{
	struct iovec iov[2];
	int n_iov = 0;
	size_t off = r->out_off;
	if (off < r->head_len) {
		iov[n_iov].iov_base = r->head + off;
		iov[n_iov++].iov_len = r->head_len - off;
		off = 0;
	} else {
		off -= r->head_len;
	}
	if (r->body_len > off) {
		iov[n_iov].iov_base = r->body + off;
		iov[n_iov++].iov_len = r->body_len - off;
	}
	if (r->out_off == 0) {
		if (r->conn_reused && direct_conn_dead(r->fd)) {
			direct_reuse_seen(r, true);
			direct_close(r);
			if (direct_connect(r) != 0)
				direct_fail(r, CURLE_COULDNT_CONNECT, "%s", "out of memory for a connection");
			return;
		}
		r->t_send = clock_now_ns();
	}
	/* sendmsg for MSG_NOSIGNAL: a peer gone must not raise SIGPIPE. */
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
	ssize_t n = n_iov ? sendmsg(r->fd, &m, MSG_NOSIGNAL) : 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		/* A server that refuses the request (413) answers and closes
		 * before it has all of it: its answer is the outcome, read
		 * before the reset, not a send failure (nor resent). */
		r->send_errno = errno;
		direct_arm(r, EV_READ);
		direct_read(r);
		return;
	}
	r->out_off += (size_t)n;
	if (direct_sent(r))
		direct_arm(r, EV_READ);
}

static int direct_on_status(void *ud, int status)
{
	struct request *r = ud;
	r->status = status;
	r->status_known = true;
	r->status_ok = status >= 200 && status <= 299;
	r->z_on = false;
	direct_reuse_seen(r, false);
	return 0;
}

static int direct_on_header(void *ud, const char *line, size_t len)
{
	request_header(ud, line, len);
	return 0;
}

static int direct_on_body(void *ud, const char *data, size_t len)
{
	struct request *r = ud;
	if (!r->z_on) {
		request_body(r, data, len);
		return 0;
	}
	return request_inflate(r, data, len);
}

static const struct h1_callbacks direct_h1 = {
	.on_header = direct_on_header,
	.on_status = direct_on_status,
	.on_body = direct_on_body,
};

/* The reader stopped (a body callback failed the request: its failure
 * is the outcome) or found the answer broken: in its head, that is
 * libcurl's "weird server reply"; in the body's framing, a transfer cut
 * short, as libcurl reports a broken chunk. A status read before the fault
 * (a 101 the request did not ask for) is the answer's. */
static void direct_h1_failed(struct request *r, int rc)
{
	if (rc == H1_STOPPED && r->failed) {
		direct_end(r, CURLE_OK, false);
		return;
	}
	if (!r->status_known && r->h1.status > 0) {
		r->status = r->h1.status;
		r->status_known = true;
	}
	direct_fail(r, r->h1.headers_done ? CURLE_RECV_ERROR : CURLE_WEIRD_SERVER_REPLY, "bad HTTP answer: %s",
		    h1_error(&r->h1));
}

static void direct_read(struct request *r)
{
	/* What the token will touch besides the block libev has just read,
	 * asked for now: the recv() below spends a microsecond in the kernel,
	 * time enough for the memory to arrive instead of being waited for. */
	__builtin_prefetch(&r->sse, 1);   /* what a token touches is in its first line */
	__builtin_prefetch(&r->itl[r->n_itl], 1);
	__builtin_prefetch(&r->memo, 0);
	__builtin_prefetch((const char *)&r->memo + 64, 0);
	__builtin_prefetch((const char *)&r->memo + 128, 0);
	/* Every chunk of a read arrived together, before the loop woke for
	 * it; a second read of the same wake-up is stamped when it is made. */
	int64_t now = http_wake_ns(r->ctx->http);
	for (;;) {
		/* With the kernel's receive time of the newest bytes read
		 * (http.h: arrival stamps), when it gives one. */
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(struct timespec))];
		} cm;
		struct iovec iov = { direct_rbuf, sizeof direct_rbuf };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
				    .msg_controllen = sizeof cm.b };
		ssize_t n = recvmsg(r->fd, &m, 0);
		if (n > 0) {
			int64_t rx = 0;
			struct cmsghdr *c = CMSG_FIRSTHDR(&m);
			if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(c), sizeof ts);
				rx = http_rx_mono_ns(r->ctx->http, (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
			}
			r->now = rx ? rx : now ? now : clock_now_ns();
			now = 0;
			size_t used = 0;
			int rc = h1_feed(&r->h1, direct_rbuf, (size_t)n, &direct_h1, r, &used);
			if (rc == H1_COMPLETE) {
				/* Bytes after the answer belong to no request, and
				 * one answered before it was all sent leaves the
				 * rest unsent: the connection is not trusted with
				 * another. */
				direct_end(r, CURLE_OK, r->h1.keep_alive && used == (size_t)n && direct_sent(r));
				return;
			}
			if (rc != H1_MORE) {
				direct_h1_failed(r, rc);
				return;
			}
			/* Read while still writing: a refusal (status 300 and
			 * up) ends the sending, as libcurl does; the answer is
			 * read to its end. */
			if (__builtin_expect(r->io.events & EV_WRITE, 0) && r->status_known && r->status >= 300)
				direct_arm(r, EV_READ);
			if ((size_t)n < sizeof direct_rbuf)
				return;
			continue;
		}
		if (n == 0) {
			if (h1_eof(&r->h1) == H1_COMPLETE)
				direct_end(r, CURLE_OK, false);
			else if (!h1_started(&r->h1) && r->send_errno)
				direct_fail(r, CURLE_SEND_ERROR, "Send failure: %s", strerror(r->send_errno));
			else if (!h1_started(&r->h1))
				direct_fail(r, CURLE_GOT_NOTHING, "%s", "Empty reply from server");
			else
				direct_fail(r, CURLE_PARTIAL_FILE, "%s", h1_error(&r->h1));
			return;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		if (!h1_started(&r->h1) && r->send_errno)
			direct_fail(r, CURLE_SEND_ERROR, "Send failure: %s", strerror(r->send_errno));
		else
			direct_fail(r, CURLE_RECV_ERROR, "Recv failure: %s", strerror(errno));
		return;
	}
}

static void direct_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	struct request *r = w->data;
	/* While it writes it reads too (an early answer): one of the two
	 * per wake-up, as the first may end the request; before the first
	 * byte, the write, which finds a kept connection closed since
	 * (direct_conn_dead) without a resend. */
	if (!(revents & EV_WRITE) || ((revents & EV_READ) && r->out_off))
		direct_read(r);
	else
		direct_write(r);
}

static void direct_on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct request *r = w->data;
	if (r->conn_idle) { /* no request: its kept connection idled out */
		r->conn_idle = false;
		direct_close(r);
		return;
	}
	if (r->connecting) {
		r->connecting = false;
		http_remove(r->ctx->http, r->easy);
	}
	snprintf(r->curl_err, sizeof r->curl_err,
		 "Operation timed out after %ld milliseconds with %llu bytes received",
		 r->ctx->timeout_ms, (unsigned long long)(r->h1.header_bytes + r->h1.body_bytes));
	direct_end(r, CURLE_OPERATION_TIMEDOUT, false);
}

static int direct_connect(struct request *r)
{
	r->connecting = true;
	r->xfer.take_socket = true;
	if (http_add(r->ctx->http, r->easy, true) != 0) {
		r->connecting = false;
		return -1;
	}
	return 0;
}

/* A kept connection the server has closed since (llama.cpp closes every
 * streamed answer's, whatever its Keep-Alive header says) shows its end,
 * or stray bytes, to a peek; one that looks alive may still be closing,
 * and a request dying on it unanswered is resent (request_resend). */
static bool direct_conn_dead(int fd)
{
	char c;
	ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return k >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Sends r on its kept connection, or on a new one (fresh: always). */
static int direct_start(struct request *r, bool fresh)
{
	struct ev_loop *loop = http_loop(r->ctx->http);
	int64_t idle_limit = (int64_t)http_reuse_limit(r->ctx->http) * CLOCK_NS_PER_S;
	if (r->fd >= 0 && (fresh || r->ctx->new_connection ||
			   clock_now_ns() - r->conn_idle_since >= idle_limit))
		direct_close(r);
	r->out_off = 0;
	r->send_errno = 0;
	r->conn_idle = false;
	h1_reset(&r->h1, false);
	r->z_on = false;
	ev_timer_stop(loop, &r->deadline);
	if (r->ctx->timeout_ms > 0) {
		ev_timer_set(&r->deadline, (double)r->ctx->timeout_ms / 1000.0, 0.);
		ev_timer_start(loop, &r->deadline);
	}
	r->conn_reused = r->fd >= 0;
	if (r->fd >= 0) {
		/* Written from the loop, not from here: a failed write ends
		 * the request, and its owner may be starting it right now. */
		direct_arm(r, EV_READ | EV_WRITE);
		return 0;
	}
	if (direct_connect(r) != 0) {
		ev_timer_stop(loop, &r->deadline);
		return -1;
	}
	return 0;
}

static void direct_connected(struct request *r, CURLcode rc)
{
	r->connecting = false;
	if (rc == CURLE_OK && r->xfer.taken_fd < 0) {
		snprintf(r->curl_err, sizeof r->curl_err, "no socket after connecting: %s",
			 strerror(r->xfer.taken_errno));
		rc = CURLE_COULDNT_CONNECT;
	}
	if (rc != CURLE_OK) {
		ev_timer_stop(http_loop(r->ctx->http), &r->deadline);
		request_finish(r, rc);
		return;
	}
	r->fd = r->xfer.taken_fd;
	r->xfer.taken_fd = -1;
	int one = 1;
	if (setsockopt(r->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0)
		http_rx_stamps_on(r->ctx->http);
	r->ctx->stats->connections++;
	direct_write(r);
	if (r->fd >= 0 && !r->send_errno && !direct_sent(r))
		direct_arm(r, EV_READ | EV_WRITE);
}

/* The request's head but its Content-Length (h1_request_head). NULL when
 * the direct path cannot carry it: --http-client curl, a proxy set in the
 * environment (libcurl's to use), or a URL h1_request_head refuses. */
static char *direct_head(const struct request_ctx *ctx, size_t *len)
{
	if (ctx->client == REQUEST_CLIENT_CURL)
		return NULL;
	const char *proxies[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
	for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++) {
		const char *v = getenv(proxies[i]);
		if (v && *v)
			return NULL;
	}
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
	if (r->direct && r->connecting)
		direct_connected(r, rc);
	else
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
	r->fd = -1;
	r->xfer.done = request_on_done;
	r->xfer.taken_fd = -1;
	ev_init(&r->io, direct_on_io);
	ev_init(&r->deadline, direct_on_deadline);
	r->io.data = r->deadline.data = r;
	r->easy = curl_easy_init();
	if (!r->easy || sse_init(&r->sse, REQUEST_MAX_EVENT) != 0) {
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
	if ((r->head = direct_head(ctx, &r->head_prefix)) != NULL) {
		r->direct = true;
		r->head_cap = r->head_prefix;
		h1_reset(&r->h1, false);
		/* curl only connects: the answer is read by the request. */
		curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
		curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 1024L);
		return r;
	}
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
	if (ctx->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (ctx->new_connection)
		curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	return r;
}

void request_free(struct request *r)
{
	if (!r)
		return;
	if (r->ctx && r->ctx->http) {
		ev_timer_stop(http_loop(r->ctx->http), &r->deadline);
		direct_close(r);
	}
	if (r->easy)
		curl_easy_cleanup(r->easy);
	sse_free(&r->sse);
	free(r->body);
	if (r->head) /* it may hold the API key */
		memset(r->head, 0, r->head_cap);
	free(r->head);
	if (r->z) {
		inflateEnd(r->z);
		free(r->z);
	}
	free(r);
}

int request_start(struct request *r, char *body, size_t len, int64_t t_intended)
{
	free(r->body);
	r->body = body;
	r->body_len = len;
	r->t_first_event = r->t_first_token = r->t_last_token = 0;
	r->chunks = 0;
	r->usage_completion = r->usage_prompt = -1;
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
	if (r->direct ? direct_start(r, false) != 0
		      : http_add(r->ctx->http, r->easy, r->ctx->new_connection) != 0)
		return -1;
	r->ctx->stats->started++;
	if (++r->ctx->stats->in_flight > r->ctx->stats->max_in_flight)
		r->ctx->stats->max_in_flight = r->ctx->stats->in_flight;
	return 0;
}

void request_abort(struct request *r, enum err_kind kind, const char *msg)
{
	if (r->direct) {
		/* Cut mid-answer: the connection cannot carry another. */
		r->connecting = false;
		ev_timer_stop(http_loop(r->ctx->http), &r->deadline);
		direct_close(r);
	}
	http_remove(r->ctx->http, r->easy);
	request_failf(r, kind, msg);
	request_finish(r, CURLE_OK);
}
