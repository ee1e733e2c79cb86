/* HTTP/1.x answer reader under arbitrary bytes and read boundaries. The
 * first byte says whether the request was HEAD (bit 0) and where the rest
 * is cut in two (the other bits, scaled to its length). The rest is read
 * as a connection would be: answers back to back (h1_reset after each
 * H1_COMPLETE), then the close (h1_eof). Fed whole, in two pieces, in two
 * pieces with callbacks that stop every third call (resumed where *used
 * says), and byte by byte, the answers must be the same: results, status,
 * framing, header lines and body bytes. Aborts on any difference or
 * broken invariant. */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/h1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct answer {
	int rc; /* H1_COMPLETE, or the last answer's h1_eof / H1_ERROR */
	int status, minor;
	bool keep_alive, chunked, headers_done, started;
	int64_t content_length;
	uint64_t header_bytes, body_bytes;
	size_t end;          /* where it ended in the input (H1_COMPLETE) */
	size_t body_off, body_len;
	size_t hdr_off, hdr_len;
	int status_calls;
};

struct log {
	struct answer *v;
	size_t n, cap;
	char *body; /* every answer's body bytes, one after the other */
	size_t blen, bcap;
	char *hdrs; /* every header line, each followed by "\n" */
	size_t hlen, hcap;
	/* The answer being read. */
	size_t body_start, hdr_start;
	int status_calls;
	uint64_t handed; /* body bytes handed over for it */
	/* The piece being fed: body bytes must point into it. */
	const char *lo, *hi;
	unsigned calls, stop_every;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

static void put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n > *cap) {
		while (*len + n > *cap)
			*cap = *cap ? 2 * *cap : 4096;
		*buf = xrealloc(*buf, *cap);
	}
	if (n)
		memcpy(*buf + *len, s, n);
	*len += n;
}

/* An answer of its own (h1.h): not an interim 1xx. */
static bool final(int status)
{
	return status >= 200 || status == 101;
}

static int stop_now(struct log *l)
{
	return l->stop_every && ++l->calls % l->stop_every == 0;
}

static int on_status(void *ud, int status)
{
	struct log *l = ud;
	if (!final(status) || status > 999)
		abort();
	l->status_calls++;
	return stop_now(l);
}

static int on_header(void *ud, const char *line, size_t len)
{
	struct log *l = ud;
	/* Validated lines only: a name, a colon, no line end, not folded,
	 * no bare CR nor NUL, and the name a token (no blank before the
	 * colon). */
	const char *colon = memchr(line, ':', len);
	if (!len || !colon || colon == line || line[0] == ' ' || line[0] == '\t' ||
	    memchr(line, '\n', len) || memchr(line, '\r', len) || memchr(line, '\0', len) ||
	    len >= H1_LINE_MAX)
		abort();
	for (const char *c = line; c < colon; c++)
		if (*c <= ' ' || *c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", *c))
			abort();
	put(&l->hdrs, &l->hlen, &l->hcap, line, len);
	put(&l->hdrs, &l->hlen, &l->hcap, "\n", 1);
	return stop_now(l);
}

static int on_body(void *ud, const char *data, size_t len)
{
	struct log *l = ud;
	if (len && (data < l->lo || data + len > l->hi))
		abort(); /* not pointing into the fed bytes */
	put(&l->body, &l->blen, &l->bcap, data, len);
	l->handed += len;
	return stop_now(l);
}

static const struct h1_callbacks cbs = { on_header, on_status, on_body };

static void answer_done(struct log *l, const struct h1_parser *p, int rc, size_t end)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->v = xrealloc(l->v, l->cap * sizeof *l->v);
	}
	struct answer *a = &l->v[l->n++];
	memset(a, 0, sizeof *a);
	a->rc = rc;
	a->status = p->status;
	a->minor = p->minor;
	a->keep_alive = p->keep_alive;
	a->chunked = p->chunked;
	a->headers_done = p->headers_done;
	a->started = h1_started(p);
	a->content_length = p->content_length;
	a->header_bytes = p->header_bytes;
	a->body_bytes = p->body_bytes;
	a->end = end;
	a->body_off = l->body_start;
	a->body_len = l->blen - l->body_start;
	a->hdr_off = l->hdr_start;
	a->hdr_len = l->hlen - l->hdr_start;
	a->status_calls = l->status_calls;

	if (p->body_bytes != l->handed || p->llen > H1_LINE_MAX)
		abort();
	if (a->status_calls != final(p->status))
		abort();
	if (rc == H1_ERROR && h1_curl_code(p) != (p->headers_done ? CURLE_RECV_ERROR
								  : CURLE_WEIRD_SERVER_REPLY))
		abort();
	if (rc == H1_COMPLETE) {
		if (!p->headers_done || !final(p->status) || p->header_bytes > H1_HEADERS_MAX ||
		    h1_curl_code(p) != CURLE_OK)
			abort();
		/* Nothing HTTP after a 101; a close-delimited body or one
		 * framed by HTTP/1.0 Transfer-Encoding ends the connection. */
		if ((p->status == 101 || (!p->chunked && p->content_length < 0 &&
					   !p->head_only && p->status != 204 && p->status != 304)) &&
		    p->keep_alive)
			abort();
		/* No body where none may be (a 101's bytes are another
		 * protocol's); a length-framed one is exactly its length. */
		bool none = p->head_only || p->status == 204 || p->status == 304 || p->status == 101;
		if (none && p->body_bytes)
			abort();
		if (!none && !p->chunked && p->content_length >= 0 &&
		    p->body_bytes != (uint64_t)p->content_length)
			abort();
	}
	l->body_start = l->blen;
	l->hdr_start = l->hlen;
	l->status_calls = 0;
	l->handed = 0;
}

/* Reads buf as one connection: the first `at` bytes, then the rest in
 * pieces of `step` bytes (0: at once), each an exact-size heap copy so
 * ASan sees reads past its end. */
static void converse(struct h1_parser *p, const char *buf, size_t len, bool head, size_t at,
		     size_t step, unsigned stop_every, struct log *l)
{
	memset(l, 0, sizeof *l);
	l->stop_every = stop_every;
	h1_reset(p, head);
	size_t pos = 0;
	int rc = H1_MORE;
	/* A stop on the very last byte: one more (empty) feed tells whether
	 * the answer ended there. */
	while (pos < len || rc == H1_STOPPED) {
		size_t n = len - pos;
		if (pos < at)
			n = at - pos;
		else if (step && step < n)
			n = step;
		char *piece = xrealloc(NULL, n);
		if (n)
			memcpy(piece, buf + pos, n);
		l->lo = piece;
		l->hi = piece + n;
		size_t used = n + 1;
		rc = h1_feed(p, piece, n, &cbs, l, &used);
		free(piece);
		if (used > n || (rc == H1_MORE && used != n))
			abort();
		if (rc == H1_STOPPED && !stop_every)
			abort();
		pos += used;
		if (rc == H1_COMPLETE) {
			answer_done(l, p, rc, pos);
			h1_reset(p, head);
			rc = H1_MORE;
		} else if (rc == H1_ERROR) {
			break;
		} else if (rc == H1_MORE && n == 0) {
			break;
		}
	}
	if (rc != H1_ERROR) {
		rc = h1_eof(p);
		if (rc == H1_COMPLETE && !p->headers_done)
			abort();
	} else {
		/* An error stays until h1_reset. */
		char c = 'H';
		size_t used;
		if (h1_feed(p, &c, 1, &cbs, l, &used) != H1_ERROR || h1_eof(p) != H1_ERROR)
			abort();
	}
	if (rc == H1_ERROR && h1_error(p) == NULL)
		abort();
	answer_done(l, p, rc, pos);
	if (l->blen > len)
		abort(); /* more body bytes than bytes fed */
}

static void log_free(struct log *l)
{
	free(l->v);
	free(l->body);
	free(l->hdrs);
	memset(l, 0, sizeof *l);
}

/* memcmp, but a log with nothing in it has no buffer to point into. */
static bool eq(const char *a, size_t a_off, const char *b, size_t b_off, size_t n)
{
	return n == 0 || memcmp(a + a_off, b + b_off, n) == 0;
}

static void same(const struct log *a, const struct log *b, const char *how)
{
	bool ok = a->n == b->n;
	for (size_t i = 0; ok && i < a->n; i++) {
		const struct answer *x = &a->v[i], *y = &b->v[i];
		ok = x->rc == y->rc && x->status == y->status && x->minor == y->minor &&
		     x->started == y->started && x->headers_done == y->headers_done &&
		     x->body_len == y->body_len &&
		     eq(a->body, x->body_off, b->body, y->body_off, x->body_len) &&
		     x->hdr_len == y->hdr_len &&
		     eq(a->hdrs, x->hdr_off, b->hdrs, y->hdr_off, x->hdr_len);
		/* How much of a too-long line was taken before the error
		 * depends on the cuts; nothing else does. */
		if (ok && x->rc != H1_ERROR)
			ok = x->keep_alive == y->keep_alive && x->chunked == y->chunked &&
			     x->content_length == y->content_length &&
			     x->header_bytes == y->header_bytes && x->body_bytes == y->body_bytes &&
			     x->end == y->end;
	}
	if (!ok) {
		fprintf(stderr, "fuzz_h1: %s feeding differs from whole feeding\n", how);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool head = data[0] & 1;
	const char *buf = (const char *)data + 1;
	size_t len = size - 1;
	size_t at = len * (data[0] >> 1) / 127;

	static struct h1_parser p;
	struct log whole, cut;
	converse(&p, buf, len, head, 0, 0, 0, &whole);

	converse(&p, buf, len, head, at, 0, 0, &cut);
	same(&whole, &cut, "two-piece");
	log_free(&cut);

	converse(&p, buf, len, head, at, 0, 3, &cut);
	same(&whole, &cut, "stopping two-piece");
	log_free(&cut);

	if (len <= 4096) {
		converse(&p, buf, len, head, 0, 1, 0, &cut);
		same(&whole, &cut, "byte-by-byte");
		log_free(&cut);
	}
	log_free(&whole);
	return 0;
}
