#ifndef INFERTOP_H1_H
#define INFERTOP_H1_H

/* HTTP/1.x on the wire, for the requests' direct path (request.c): the
 * head of a request as libcurl would send it (h1_request_head), and an
 * incremental answer reader: bytes in, the status, header lines and body
 * bytes out. The reader is pure: no I/O, no clock, no allocation. Feed whatever
 * recv() returned; anything may be split anywhere.
 *
 * The body is framed as RFC 9112 says: "Transfer-Encoding: chunked" (chunk
 * extensions and trailers read and dropped), else Content-Length, else
 * until the connection closes (h1_eof). 1xx answers other than 101 are
 * read and skipped; a 101 is an answer without a body that ends the
 * connection's HTTP (H1_COMPLETE, keep_alive false: its status is the
 * outcome, as libcurl reports it); 204 and 304 have no body. Body bytes
 * are handed over by pointing into the fed buffer (a token's chunk is one
 * call, no copy).
 *
 * Where framing is ambiguous (two readers could disagree on where the
 * answer ends) it is refused: Content-Length together with
 * Transfer-Encoding, a blank before a header's colon or any other byte of
 * a name that is not a token, a bare CR (RFC 9112 2.2) or a NUL in the
 * status line, a header or trailer line, or a chunk-size line, and a
 * chunk-size line whose extensions are not token[=token|quoted-string].
 * Accepted: one empty line before each status line, a Content-Length
 * list of one value ("5, 5"), zero-padded chunk sizes. Transfer-Encoding
 * in an HTTP/1.0 answer never keeps the connection (RFC 9112 6.1).
 *
 * Bounds: a status or header line of H1_LINE_MAX bytes or more, a
 * chunk-size line over H1_LINE_MAX bytes, headers over H1_HEADERS_MAX
 * bytes in all, a chunk size over 2^40, conflicting Content-Length
 * values, or bytes that are not HTTP are errors: h1_feed returns H1_ERROR
 * and h1_error() says why (h1_curl_code how libcurl would count it); the
 * parser then stays in error until h1_reset. */

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H1_LINE_MAX 8192
#define H1_HEADERS_MAX 65536

enum h1_result {
	H1_ERROR = -1,
	H1_MORE = 0,     /* every byte taken, the answer goes on */
	H1_COMPLETE = 1, /* the answer ended; *used says where */
	H1_STOPPED = 2,  /* a callback returned nonzero; *used says where */
};

struct h1_callbacks {
	/* A header line without its line end ("Name: value"). */
	int (*on_header)(void *ud, const char *line, size_t len);
	/* The final answer's status line was read (p->status is set), before
	 * its headers: 2xx-5xx or 101, not an interim 1xx (nor its headers). */
	int (*on_status)(void *ud, int status);
	/* Body bytes, de-chunked. */
	int (*on_body)(void *ud, const char *data, size_t len);
};

struct h1_parser {
	/* The parser's own: what a body chunk touches, first and small (24
	 * bytes), so an owner can keep it in the cache line of its own
	 * per-token fields. */
	uint8_t state;
	uint8_t chunk_digits;
	uint8_t chunk_line;       /* where in a chunk-size line (h1.c) */
	uint64_t chunk_left;      /* body bytes left in this chunk (or of the length) */
	uint64_t body_bytes;      /* body bytes handed over */

	int status;               /* of the final answer, 0 until read */
	int minor;                /* HTTP/1.<minor> */
	bool keep_alive;          /* the connection may carry another request */
	bool chunked;
	bool headers_done;        /* the final answer's headers were read */
	int64_t content_length;   /* -1: not sent */
	uint64_t header_bytes;    /* status and header bytes read, 1xx included */

	/* The parser's own. */
	size_t llen;              /* bytes of the line being read */
	const char *err;
	bool head_only;           /* the request was HEAD: no body */
	bool saw_close, saw_keep_alive, saw_te;
	bool skipped_eol;         /* the stray line end before a status line */
	char line[H1_LINE_MAX];
};

/* Before each answer (a new request on the same connection too). head:
 * the request was HEAD, so no body follows whatever the headers say. */
void h1_reset(struct h1_parser *p, bool head);

/* Feeds n bytes. Returns H1_MORE when all were taken and more are
 * expected, H1_COMPLETE when the answer ended at *used bytes (bytes after
 * it belong to no request: a server that sends them is broken),
 * H1_STOPPED when a callback returned nonzero after *used bytes, or
 * H1_ERROR. After H1_STOPPED feed the rest, even none: a stop on the last
 * body byte leaves the H1_COMPLETE to that next feed. */
int h1_feed(struct h1_parser *p, const char *buf, size_t n, const struct h1_callbacks *cb,
	    void *ud, size_t *used);

/* The connection closed. Returns H1_COMPLETE if that ends the answer (a
 * body read until close), else H1_ERROR (the answer was cut short; see
 * h1_started to tell "nothing came" from "cut"). */
int h1_eof(struct h1_parser *p);

/* Any byte of an answer read yet. */
bool h1_started(const struct h1_parser *p);

/* Why the last H1_ERROR. */
const char *h1_error(const struct h1_parser *p);

/* After H1_ERROR, what libcurl ends a transfer of the same bytes with, so
 * that both paths count it alike: CURLE_RECV_ERROR when the body's
 * framing broke after the headers (libcurl: "... in chunked-encoding", an
 * answer cut short), CURLE_WEIRD_SERVER_REPLY when the head is not HTTP
 * this reader takes. CURLE_OK when there was no error. */
CURLcode h1_curl_code(const struct h1_parser *p);

/* The head of a POST to url as libcurl sends it, but its Content-Length
 * line and the blank line after it (the caller's, per body): the request
 * line, Host, then headers in order ("Name: value"; "Name:" with no value
 * is not sent; "Name;" is sent empty; a Host or Accept-Encoding of the
 * user's in any of these forms replaces the head's own), then
 * "Accept-Encoding: identity". A malloc'd string, its length in *len; NULL
 * when url is not http:// or https://, has a user name (libcurl would send
 * credentials), a header names Content-Length or Transfer-Encoding
 * (libcurl frames the body by the user's), or out of memory. */
char *h1_request_head(const char *url, const struct curl_slist *headers, size_t *len);

#endif
