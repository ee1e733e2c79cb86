#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <curl/curl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "infertop/h1.h"
#include "testutil.h"

/* ---- what the callbacks saw ---- */

struct seen {
	char *body;
	size_t blen, bcap;
	char *hdrs; /* each header line followed by "\n" */
	size_t hlen, hcap;
	int status_calls, header_calls, body_calls;
	int cb_status;
	/* The piece being fed: body bytes must point into it (no copy). */
	const char *lo, *hi;
	int foreign;
	/* Return nonzero from the nth call of that kind (0: never). */
	int stop_status, stop_header, stop_body;
};

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		while (*len + n + 1 > *cap)
			*cap = *cap ? *cap * 2 : 256;
		*buf = realloc(*buf, *cap);
		assert_non_null(*buf);
	}
	if (n)
		memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static int on_status(void *ud, int status)
{
	struct seen *s = ud;
	s->cb_status = status;
	return ++s->status_calls == s->stop_status;
}

static int on_header(void *ud, const char *line, size_t len)
{
	struct seen *s = ud;
	append(&s->hdrs, &s->hlen, &s->hcap, line, len);
	append(&s->hdrs, &s->hlen, &s->hcap, "\n", 1);
	return ++s->header_calls == s->stop_header;
}

static int on_body(void *ud, const char *data, size_t len)
{
	struct seen *s = ud;
	if (len && (data < s->lo || data + len > s->hi))
		s->foreign++;
	append(&s->body, &s->blen, &s->bcap, data, len);
	return ++s->body_calls == s->stop_body;
}

static const struct h1_callbacks cbs = { on_header, on_status, on_body };

static void seen_free(struct seen *s)
{
	free(s->body);
	free(s->hdrs);
	memset(s, 0, sizeof *s);
}

static const char *seen_body(const struct seen *s)
{
	return s->body ? s->body : "";
}

static const char *seen_hdrs(const struct seen *s)
{
	return s->hdrs ? s->hdrs : "";
}

/* ---- table-driven answers ---- */

struct h1_case {
	const char *name;
	const char *in;
	size_t len;       /* 0: strlen(in) */
	bool head;        /* the request was HEAD */
	bool eof;         /* the connection closes after the input */
	int rc;           /* the last h1_feed's result, or h1_eof's with .eof */
	int status;
	bool http10;      /* HTTP/1.0 */
	bool keep_alive;
	bool chunked;
	int64_t cl;       /* content_length, checked unless the answer failed */
	bool headers_done;
	const char *body; /* NULL: none */
	const char *hdrs; /* NULL: not checked */
	size_t used;      /* H1_COMPLETE: where the answer ended; 0: at the end */
	const char *err;  /* H1_ERROR: a part of h1_error() */
	bool started;     /* checked with H1_ERROR */
	CURLcode curl;    /* H1_ERROR, not .eof: h1_curl_code(); 0: CURLE_WEIRD_SERVER_REPLY */
	const char *libcurl; /* NULL: libcurl counts the same bytes alike; else why not */
};

/* Where libcurl counts a case otherwise than the reader (the kind, the
 * status, a success's body: test_libcurl_agrees): why. Most are framing
 * the reader refuses as ambiguous and libcurl reads one way (issue 23). */
#define LC_READS .libcurl = "libcurl 7.88 reads it one way; the reader refuses the ambiguity"
#define LC_EMPTY_LINE .libcurl = "libcurl 7.88 takes an empty line before a status line for HTTP/0.9"
#define LC_LENGTH .libcurl = "libcurl 7.88 reads a bad length's leading digits, then waits for the body"

/* A literal that may hold a NUL. */
#define LIT(s) .in = (s), .len = sizeof(s) - 1
/* The body's framing broke: libcurl counts it as cut short. */
#define CURL_BODY .curl = CURLE_RECV_ERROR

#define OK_HEAD "HTTP/1.1 200 OK\r\n"
#define CHUNKED_HEAD OK_HEAD "Transfer-Encoding: chunked\r\n\r\n"

static const struct h1_case cases[] = {
	{ .name = "content-length",
	  .in = OK_HEAD "Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 11, .headers_done = true,
	  .body = "{\"ok\":true}", .hdrs = "Content-Type: application/json\nContent-Length: 11\n" },
	{ .name = "content-length zero", .in = OK_HEAD "Content-Length: 0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 0, .headers_done = true,
	  .hdrs = "Content-Length: 0\n" },
	{ .name = "content-length, blanks around the value",
	  .in = OK_HEAD "content-LENGTH: \t 4 \t\r\n\r\nabcd",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 4, .headers_done = true,
	  .body = "abcd", .hdrs = "content-LENGTH: \t 4 \t\n" },
	{ .name = "the same content-length twice",
	  .in = OK_HEAD "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 3, .headers_done = true,
	  .body = "abc" },
	{ .name = "bytes after a content-length body",
	  .in = OK_HEAD "Content-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 3, .headers_done = true,
	  .body = "abc", .used = sizeof(OK_HEAD "Content-Length: 3\r\n\r\nabc") - 1 },
	{ .name = "until close", .in = OK_HEAD "Content-Type: text/plain\r\n\r\nall of it\r\n0\r\n\r\n",
	  .eof = true, .rc = H1_COMPLETE, .status = 200, .keep_alive = false, .cl = -1,
	  .headers_done = true, .body = "all of it\r\n0\r\n\r\n" },
	{ .name = "until close, not yet closed", .in = OK_HEAD "\r\nsome",
	  .rc = H1_MORE, .status = 200, .keep_alive = false, .cl = -1, .headers_done = true,
	  .body = "some" },
	{ .name = "until close, empty body", .in = OK_HEAD "\r\n",
	  .eof = true, .rc = H1_COMPLETE, .status = 200, .cl = -1, .headers_done = true },
	{ .name = "HTTP/1.0 closes", .in = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi",
	  .rc = H1_COMPLETE, .status = 200, .http10 = true, .keep_alive = false, .cl = 2,
	  .headers_done = true, .body = "hi" },
	{ .name = "HTTP/1.0 keep-alive",
	  .in = "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi",
	  .rc = H1_COMPLETE, .status = 200, .http10 = true, .keep_alive = true, .cl = 2,
	  .headers_done = true, .body = "hi" },
	{ .name = "HTTP/1.0 keep-alive but no length",
	  .in = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nto the end", .eof = true,
	  .rc = H1_COMPLETE, .status = 200, .http10 = true, .keep_alive = false, .cl = -1,
	  .headers_done = true, .body = "to the end" },
	{ .name = "HTTP/1.0 keep-alive and close",
	  .in = "HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .http10 = true, .keep_alive = false, .cl = 0,
	  .headers_done = true },
	{ .name = "HTTP/1.1 close", .in = OK_HEAD "Connection: close\r\nContent-Length: 2\r\n\r\nhi",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = false, .cl = 2, .headers_done = true,
	  .body = "hi" },
	{ .name = "HTTP/1.1 close in a list",
	  .in = OK_HEAD "Connection: Upgrade ,\tCLOSE \r\nContent-Length: 2\r\n\r\nhi",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = false, .cl = 2, .headers_done = true,
	  .body = "hi" },
	{ .name = "HTTP/1.1 a token that only contains close",
	  .in = OK_HEAD "Connection: closed, x-close\r\nContent-Length: 2\r\n\r\nhi",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 2, .headers_done = true,
	  .body = "hi" },
	{ .name = "100 Continue then 200",
	  .in = "HTTP/1.1 100 Continue\r\n\r\n" OK_HEAD "Content-Length: 3\r\n\r\nabc",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 3, .headers_done = true,
	  .body = "abc", .hdrs = "Content-Length: 3\n" },
	{ .name = "103 with headers of its own, then 200",
	  .in = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\nContent-Length: 99\r\n"
		"Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
		"HTTP/1.1 100 Continue\r\n\r\n" OK_HEAD "Content-Length: 3\r\n\r\nabc",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 3, .headers_done = true,
	  .body = "abc", .hdrs = "Content-Length: 3\n" },
	{ .name = "204 with a content-length",
	  .in = "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n",
	  .rc = H1_COMPLETE, .status = 204, .keep_alive = true, .cl = 5, .headers_done = true,
	  .used = sizeof("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n") - 1 },
	{ .name = "304 chunked", .in = "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 304, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true },
	{ .name = "HEAD with a content-length", .in = OK_HEAD "Content-Length: 1234\r\n\r\n",
	  .head = true, .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 1234,
	  .headers_done = true },
	{ .name = "HEAD chunked, then more bytes",
	  .in = CHUNKED_HEAD "5\r\nhello\r\n", .head = true, .rc = H1_COMPLETE, .status = 200,
	  .keep_alive = true, .chunked = true, .cl = -1, .headers_done = true,
	  .used = sizeof(CHUNKED_HEAD) - 1 },
	{ .name = "HEAD without any length", .in = OK_HEAD "\r\n", .head = true,
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = -1, .headers_done = true },
	{ .name = "chunked", .in = CHUNKED_HEAD "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "hello world", .hdrs = "Transfer-Encoding: chunked\n" },
	{ .name = "chunk extensions and trailers",
	  .in = CHUNKED_HEAD "5;name=value\r\nhello\r\n6 ; a = \"b;c\\\"\t\x80\" ;flag\t;t=x \r\n world\r\n"
		"0;last\r\nExpires: never\r\nX-Trailer: 1\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "hello world", .hdrs = "Transfer-Encoding: chunked\n" },
	{ .name = "uppercase and padded hex sizes",
	  .in = CHUNKED_HEAD "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n000000000B\r\n0123456789A\r\n"
		"aF\r\n" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		"0123456789abcdef0123456789abcdef0123456789abcde\r\n0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true,
	  .body = "abcdefghijklmnopqrstuvwxyz0123456789A"
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		  "0123456789abcdef0123456789abcdef0123456789abcde" },
	{ .name = "bare LF line ends",
	  .in = "HTTP/1.1 200 OK\nX-A: 1\nTransfer-Encoding: chunked\n\n5\nhello\n1;x\n!\n0\nT: 1\n\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "hello!", .hdrs = "X-A: 1\nTransfer-Encoding: chunked\n" },
	{ .name = "bare LF, content-length", .in = "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 2, .headers_done = true,
	  .body = "hi" },
	{ .name = "a stray line end before the answer", .in = "\r\n" OK_HEAD "Content-Length: 1\r\n\r\nx",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 1, .headers_done = true,
	  .body = "x", LC_EMPTY_LINE },
	{ .name = "status line without a reason", .in = "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 1, .headers_done = true,
	  .body = "x" },
	{ .name = "an empty header value", .in = OK_HEAD "Access-Control-Allow-Origin: \r\n"
		"Content-Length: 1\r\n\r\nx",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 1, .headers_done = true,
	  .body = "x", .hdrs = "Access-Control-Allow-Origin: \nContent-Length: 1\n" },
	{ .name = "chunked last of the codings",
	  .in = OK_HEAD "Transfer-Encoding: gzip, Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "abc" },
	{ .name = "chunked not last: until close",
	  .in = OK_HEAD "Transfer-Encoding: chunked, gzip\r\n\r\n3\r\nabc\r\n0\r\n\r\n", .eof = true,
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = false, .chunked = false, .cl = -1,
	  .headers_done = true, .body = "3\r\nabc\r\n0\r\n\r\n", .libcurl = "libcurl 7.88 de-chunks a body whose last coding is not chunked" },
	{ .name = "ten hex digits are allowed", .in = CHUNKED_HEAD "FFFFFFFFFF\r\nabc",
	  .rc = H1_MORE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "abc" },
	/* Issue 23: valid input the reader refused. RFC 9112 2.2: one empty
	 * line before a status line, an interim answer's final one too. */
	{ .name = "an empty line between 100 Continue and the answer",
	  .in = "HTTP/1.1 100 Continue\r\n\r\n\r\n" OK_HEAD "Content-Length: 3\r\n\r\nabc",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 3, .headers_done = true,
	  .body = "abc", .hdrs = "Content-Length: 3\n", LC_EMPTY_LINE },
	{ .name = "a bare LF between 103 and the answer",
	  .in = "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\n" OK_HEAD "Content-Length: 0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 0, .headers_done = true,
	  .hdrs = "Content-Length: 0\n", LC_EMPTY_LINE },
	{ .name = "an empty line before and after 100 Continue",
	  .in = "\r\nHTTP/1.1 100 Continue\r\n\r\n\r\n" OK_HEAD "Content-Length: 0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 0, .headers_done = true, LC_EMPTY_LINE },
	/* Leading zeros are not digits of the size's. */
	{ .name = "a zero-padded chunk size",
	  .in = CHUNKED_HEAD "0000000000000005\r\nhello\r\n00000000000000000000000000000000001\r\n!\r\n"
		"0000000000000000\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "hello!", .libcurl = "libcurl 7.88 counts leading zeros against its 16 digits" },
	{ .name = "eleven hex digits, leading zeros", .in = CHUNKED_HEAD "00000000001\r\nx\r\n0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "x" },
	{ .name = "zero-padded ten digits", .in = CHUNKED_HEAD "000000FFFFFFFFFF\r\nabc",
	  .rc = H1_MORE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "abc" },
	/* RFC 9110 8.6: a list of one value, repeated. */
	{ .name = "content-length 5, 5", .in = OK_HEAD "Content-Length: 5, 5\r\n\r\nhello",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 5, .headers_done = true,
	  .body = "hello", .hdrs = "Content-Length: 5, 5\n" },
	{ .name = "content-length 5,5 ,\t5 and 5 again",
	  .in = OK_HEAD "Content-Length: 5,5 ,\t5\r\nContent-Length: 5\r\n\r\nhello",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 5, .headers_done = true,
	  .body = "hello" },
	/* Chunk extensions after RFC 9112 7.1.1, blanks before the line end. */
	{ .name = "chunk-size blanks and extensions",
	  .in = CHUNKED_HEAD "2 \t\r\nhi\r\n2 ;a\r\nhi\r\n2;a=\"\"\n!!\r\n2\t;\ta\t=\t\"\\\\\"\t\r\nhi\r\n"
		"0 ; end = \"x\\\";y\"\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .chunked = true, .cl = -1,
	  .headers_done = true, .body = "hihi!!hi" },
	/* A 101 is the answer: its status is what libcurl reports too. The
	 * bytes after it are not HTTP. */
	{ .name = "101 unasked",
	  .in = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n\x00\x01PRI * HTTP/2.0",
	  .len = sizeof("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n\x00\x01PRI * HTTP/2.0") - 1,
	  .rc = H1_COMPLETE, .status = 101, .keep_alive = false, .cl = -1, .headers_done = true,
	  .hdrs = "Upgrade: h2c\n",
	  .used = sizeof("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n") - 1 },
	{ .name = "101 after 100 Continue",
	  .in = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching\r\nConnection: keep-alive\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 101, .keep_alive = false, .cl = -1, .headers_done = true,
	  .hdrs = "Connection: keep-alive\n", .libcurl = "libcurl 7.88 says nothing came after the 100" },
	/* RFC 9112 6.1: faulty framing in HTTP/1.0, read but never reused. */
	{ .name = "HTTP/1.0 chunked keep-alive",
	  .in = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
		"2\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .http10 = true, .keep_alive = false, .chunked = true,
	  .cl = -1, .headers_done = true, .body = "hi" },
	{ .name = "HTTP/1.0 a coding, until close",
	  .in = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: gzip\r\n\r\nzz",
	  .eof = true, .rc = H1_COMPLETE, .status = 200, .http10 = true, .keep_alive = false,
	  .cl = -1, .headers_done = true, .body = "zz" },
	{ .name = "a coding last: until close",
	  .in = OK_HEAD "Transfer-Encoding: gzip\r\n\r\nabcdef", .eof = true,
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = false, .cl = -1, .headers_done = true,
	  .body = "abcdef" },
	{ .name = "header names of every token character",
	  .in = OK_HEAD "!#$%&'*+-.^_`|~09azAZ: x\r\nX-V: a\x01\x7f\xff\tb\r\nContent-Length: 0\r\n\r\n",
	  .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 0, .headers_done = true,
	  .hdrs = "!#$%&'*+-.^_`|~09azAZ: x\nX-V: a\x01\x7f\xff\tb\nContent-Length: 0\n" },
	{ .name = "nothing yet", .in = "", .rc = H1_MORE },
	/* status is the final answer's: 0 until that is read. */
	{ .name = "100 Continue, the final answer not yet",
	  .in = "HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\nHTTP/1.1 2", .rc = H1_MORE, .status = 0,
	  .hdrs = "" },
	{ .name = "half a status line", .in = "HTTP/1.1 2", .rc = H1_MORE },

	/* Errors. */
	{ .name = "not HTTP", .in = "SSH-2.0-OpenSSH_9.2\r\n", .rc = H1_ERROR,
	  .err = "not HTTP", .started = true },
	{ .name = "HTTP/2", .in = "HTTP/2 200\r\n\r\n", .rc = H1_ERROR, .err = "not HTTP",
	  .started = true, LC_READS },
	{ .name = "a short status line", .in = "HTTP/1.1 20\r\n", .rc = H1_ERROR, .err = "not HTTP",
	  .started = true },
	{ .name = "two line ends before the answer", .in = "\r\n\r\n" OK_HEAD "\r\n", .rc = H1_ERROR,
	  .err = "not HTTP", .started = true },
	{ .name = "status with four digits", .in = "HTTP/1.1 2000 OK\r\n\r\n", .rc = H1_ERROR,
	  .err = "bad status code", .started = true },
	{ .name = "status below 100", .in = "HTTP/1.1 099 Low\r\n\r\n", .rc = H1_ERROR,
	  .err = "bad status code", .started = true },
	{ .name = "status not digits", .in = "HTTP/1.1 2x0 OK\r\n\r\n", .rc = H1_ERROR,
	  .err = "bad status code", .started = true },
	{ .name = "header line without a colon",
	  .in = OK_HEAD "Content-Type: text/plain\r\nContent-Length 5\r\n\r\nhello", .rc = H1_ERROR,
	  .status = 200, .hdrs = "Content-Type: text/plain\n", .err = "header line without a name",
	  .started = true },
	{ .name = "header line without a name", .in = OK_HEAD ": x\r\n\r\n", .rc = H1_ERROR,
	  .status = 200, .hdrs = "", .err = "header line without a name", .started = true, LC_READS },
	{ .name = "folded header", .in = OK_HEAD "X-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .hdrs = "X-A: 1\n", .err = "folded", .started = true, LC_READS },
	{ .name = "folded header, tab", .in = OK_HEAD "X-A: 1\r\n\t2\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "folded", .started = true, LC_READS },
	{ .name = "two different content-lengths",
	  .in = OK_HEAD "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", .rc = H1_ERROR,
	  .status = 200, .err = "two different Content-Length", .started = true, LC_READS },
	{ .name = "negative content-length", .in = OK_HEAD "Content-Length: -1\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "bad Content-Length", .started = true },
	{ .name = "content-length with junk", .in = OK_HEAD "Content-Length: 3x\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "bad Content-Length", .started = true, LC_LENGTH },
	{ .name = "empty content-length", .in = OK_HEAD "Content-Length:  \r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "bad Content-Length", .started = true },
	{ .name = "content-length of 16 digits", .in = OK_HEAD "Content-Length: 1000000000000000\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "bad Content-Length", .started = true, LC_LENGTH },
	{ .name = "bad chunk size", .in = CHUNKED_HEAD "5\r\nhello\r\nzz\r\n", .rc = H1_ERROR,
	  .status = 200, .headers_done = true, .body = "hello", .err = "bad chunk size",
	  .started = true, CURL_BODY },
	{ .name = "chunk size with a sign", .in = CHUNKED_HEAD "+5\r\nhello\r\n", .rc = H1_ERROR,
	  .status = 200, .headers_done = true, .err = "bad chunk size", .started = true, CURL_BODY },
	{ .name = "chunk without a size", .in = CHUNKED_HEAD "\r\nhello\r\n", .rc = H1_ERROR,
	  .status = 200, .headers_done = true, .err = "chunk without a size", .started = true, CURL_BODY },
	{ .name = "chunk with only an extension", .in = CHUNKED_HEAD ";a=b\r\nhello\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "chunk without a size",
	  .started = true, CURL_BODY },
	{ .name = "eleven hex digits", .in = CHUNKED_HEAD "10000000000\r\n", .rc = H1_ERROR,
	  .status = 200, .headers_done = true, .err = "bad chunk size", .started = true, CURL_BODY },
	{ .name = "chunk data longer than its size",
	  .in = CHUNKED_HEAD "5\r\nhello!\r\n0\r\n\r\n", .rc = H1_ERROR, .status = 200,
	  .headers_done = true, .body = "hello", .err = "chunk data longer than its size",
	  .started = true, CURL_BODY },
	{ .name = "chunk data without its line end", .in = CHUNKED_HEAD "3\r\nabc0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .body = "abc",
	  .err = "chunk data longer than its size", .started = true, CURL_BODY },
	{ .name = "EOF before anything", .in = "", .eof = true, .rc = H1_ERROR,
	  .err = "before the headers ended", .started = false },
	{ .name = "EOF inside the status line", .in = "HTT", .eof = true, .rc = H1_ERROR,
	  .err = "before the headers ended", .started = true },
	{ .name = "EOF before the headers end", .in = OK_HEAD "Content-Le", .eof = true,
	  .rc = H1_ERROR, .status = 200, .err = "before the headers ended", .started = true, .libcurl = "libcurl 7.88 takes a head cut short for a whole one" },
	{ .name = "EOF before the blank line", .in = OK_HEAD "Content-Length: 1\r\n", .eof = true,
	  .rc = H1_ERROR, .status = 200, .err = "before the headers ended", .started = true },
	{ .name = "EOF after 100 Continue", .in = "HTTP/1.1 100 Continue\r\n\r\n", .eof = true,
	  .rc = H1_ERROR, .status = 0, .err = "before the headers ended", .started = true },
	{ .name = "EOF inside a content-length body",
	  .in = OK_HEAD "Content-Length: 10\r\n\r\nabc", .eof = true, .rc = H1_ERROR,
	  .status = 200, .headers_done = true, .body = "abc", .err = "inside the body",
	  .started = true },
	{ .name = "EOF inside a chunk", .in = CHUNKED_HEAD "5\r\nhel", .eof = true,
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .body = "hel",
	  .err = "inside the body", .started = true },
	{ .name = "EOF after the last chunk", .in = CHUNKED_HEAD "2\r\nhi\r\n0\r\n", .eof = true,
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .body = "hi",
	  .err = "inside the body", .started = true },
	{ .name = "EOF inside a trailer", .in = CHUNKED_HEAD "0\r\nX-T: 1", .eof = true,
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "inside the body",
	  .started = true },
	{ .name = "EOF after a chunk's data", .in = CHUNKED_HEAD "2\r\nhi", .eof = true,
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .body = "hi",
	  .err = "inside the body", .started = true },
	/* Issue 23: framing two readers could disagree on (RFC 9112). */
	{ .name = "content-length and chunked",
	  .in = OK_HEAD "Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "Content-Length together with Transfer-Encoding",
	  .started = true, LC_READS },
	{ .name = "chunked and content-length",
	  .in = OK_HEAD "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "Content-Length together with Transfer-Encoding",
	  .started = true, LC_READS },
	{ .name = "a coding, then content-length",
	  .in = OK_HEAD "Transfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabcdef",
	  .rc = H1_ERROR, .status = 200, .err = "Content-Length together with Transfer-Encoding",
	  .started = true, LC_READS },
	{ .name = "HTTP/1.0 content-length and chunked",
	  .in = "HTTP/1.0 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "Content-Length together with Transfer-Encoding",
	  .started = true, .libcurl = "libcurl 7.88 frames HTTP/1.0 by the length, then waits for it" },
	{ .name = "204 with both", .in = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n"
		"Transfer-Encoding: chunked\r\n\r\n",
	  .rc = H1_ERROR, .status = 204, .err = "Content-Length together with Transfer-Encoding",
	  .started = true, LC_READS },
	{ .name = "a blank before the colon", .in = OK_HEAD "Content-Length : 5\r\n\r\nhello",
	  .rc = H1_ERROR, .status = 200, .hdrs = "", .err = "blank before a header's colon",
	  .started = true, LC_READS },
	{ .name = "a tab before the colon", .in = OK_HEAD "Transfer-Encoding\t: chunked\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "blank before a header's colon", .started = true, LC_READS },
	{ .name = "a space inside a header name", .in = OK_HEAD "Content Length: 5\r\n\r\nhello",
	  .rc = H1_ERROR, .status = 200, .err = "not a token", .started = true, LC_READS },
	{ .name = "a quote inside a header name", .in = OK_HEAD "X-\"A\": 5\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "not a token", .started = true, LC_READS },
	{ .name = "a bare CR in the status line", .in = "HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n",
	  .rc = H1_ERROR, .err = "a bare CR in the status line", .started = true, LC_READS },
	{ .name = "a bare CR in a header line",
	  .in = OK_HEAD "X-A: 1\rContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
	  .rc = H1_ERROR, .status = 200, .hdrs = "", .err = "a bare CR in a header line",
	  .started = true, LC_READS },
	{ .name = "a CR before a header's CRLF", .in = OK_HEAD "X-A: 1\r\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "a bare CR in a header line", .started = true, LC_READS },
	{ .name = "a bare CR in a header name", .in = OK_HEAD "X\rA: 1\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "a bare CR in a header line", .started = true },
	{ .name = "an empty line of a bare CR", .in = OK_HEAD "Content-Length: 0\r\n\r\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "a bare CR in a header line", .started = true, LC_READS },
	{ .name = "a bare CR inside a chunk size", .in = CHUNKED_HEAD "1\r0\r\nx\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "a bare CR in a chunk size line",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "a CR before a chunk size's CRLF", .in = CHUNKED_HEAD "1\r\r\nx\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "a bare CR in a chunk size line",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "a bare CR in a chunk extension", .in = CHUNKED_HEAD "1;a\rb\r\nx\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "a bare CR in a chunk size line",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "a bare CR in a quoted extension", .in = CHUNKED_HEAD "5;a=\"b\rc\"\r\nhello\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY },
	{ .name = "a bare CR after a chunk's data", .in = CHUNKED_HEAD "1\r\nx\r\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .body = "x",
	  .err = "a bare CR after a chunk's data", .started = true, CURL_BODY, LC_READS },
	{ .name = "a bare CR in a trailer", .in = CHUNKED_HEAD "0\r\nX-T: a\rb\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "a bare CR in a trailer line",
	  .started = true, CURL_BODY },
	{ .name = "junk after a chunk size's blank", .in = CHUNKED_HEAD "2 erf\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "junk after a chunk size's tab", .in = CHUNKED_HEAD "2\terf\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an extension without a name", .in = CHUNKED_HEAD "2;\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an extension, then an empty one", .in = CHUNKED_HEAD "2;a;\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an extension without a value", .in = CHUNKED_HEAD "2;a=\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an extension of two words", .in = CHUNKED_HEAD "2;a=b c\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an extension name with a slash", .in = CHUNKED_HEAD "2;a/b\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an unbalanced quote", .in = CHUNKED_HEAD "2;a=\"b\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "an unbalanced quote, LF", .in = CHUNKED_HEAD "2;a=\"b\\\"\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "a quote after a token", .in = CHUNKED_HEAD "2;a=b\"c\"\r\nhi\r\n0\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "bad chunk extension",
	  .started = true, CURL_BODY, LC_READS },
	{ .name = "two empty lines after 100 Continue",
	  .in = "HTTP/1.1 100 Continue\r\n\r\n\r\n\r\n" OK_HEAD "Content-Length: 0\r\n\r\n",
	  .rc = H1_ERROR, .err = "not HTTP", .started = true },
	{ .name = "eleven significant hex digits after zeros",
	  .in = CHUNKED_HEAD "0000010000000000\r\n", .rc = H1_ERROR, .status = 200,
	  .headers_done = true, .err = "bad chunk size", .started = true, CURL_BODY },
	{ .name = "content-length 5, 6", .in = OK_HEAD "Content-Length: 5, 6\r\n\r\nhello",
	  .rc = H1_ERROR, .status = 200, .err = "two different Content-Length", .started = true, LC_READS },
	{ .name = "content-length 5 then 5, 6",
	  .in = OK_HEAD "Content-Length: 5\r\nContent-Length: 5, 6\r\n\r\nhello", .rc = H1_ERROR,
	  .status = 200, .err = "two different Content-Length", .started = true, LC_READS },
	{ .name = "content-length with an empty element", .in = OK_HEAD "Content-Length: 5,\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "bad Content-Length", .started = true, LC_LENGTH },
	{ .name = "content-length with a leading empty element",
	  .in = OK_HEAD "Content-Length: , 5\r\n\r\n", .rc = H1_ERROR, .status = 200,
	  .err = "bad Content-Length", .started = true },
	{ .name = "content-length 5 5", .in = OK_HEAD "Content-Length: 5 5\r\n\r\n",
	  .rc = H1_ERROR, .status = 200, .err = "bad Content-Length", .started = true, LC_LENGTH },
	{ .name = "a NUL in a header value", LIT(OK_HEAD "X-A: a\0b\r\nContent-Length: 0\r\n\r\n"),
	  .rc = H1_ERROR, .status = 200, .hdrs = "", .err = "a NUL in a header line",
	  .started = true },
	{ .name = "a NUL in a header name", LIT(OK_HEAD "X-\0A: b\r\nContent-Length: 0\r\n\r\n"),
	  .rc = H1_ERROR, .status = 200, .err = "a NUL in a header line", .started = true },
	{ .name = "a NUL in the status line", LIT("HTTP/1.1 200 O\0K\r\n\r\n"),
	  .rc = H1_ERROR, .err = "a NUL in the status line", .started = true },
	{ .name = "a NUL in a trailer", LIT(CHUNKED_HEAD "0\r\nX-T: \0\r\n\r\n"),
	  .rc = H1_ERROR, .status = 200, .headers_done = true, .err = "a NUL in a trailer line",
	  .started = true, CURL_BODY, .libcurl = "libcurl 7.88 fails it as a bad argument (43)" },
};
#define N_CASES (sizeof cases / sizeof cases[0])

struct outcome {
	int rc;
	size_t used; /* bytes of the input taken in all */
	struct seen s;
	struct h1_parser p;
};

static size_t case_len(const struct h1_case *c)
{
	return c->len ? c->len : strlen(c->in);
}

/* Feeds the case's input: first `at` bytes, then the rest in pieces of
 * `step` bytes (0: all at once). Each piece is an exact-size heap copy so
 * ASan sees a read past its end. Stops at the first result other than
 * H1_MORE; h1_eof follows when the case says the connection closes. */
static void run(const struct h1_case *c, size_t at, size_t step, struct outcome *o)
{
	size_t len = case_len(c);
	memset(&o->s, 0, sizeof o->s);
	h1_reset(&o->p, c->head);
	o->rc = H1_MORE;
	size_t pos = 0;
	while (pos < len) {
		size_t n = len - pos;
		if (pos < at)
			n = at - pos;
		else if (step && step < n)
			n = step;
		char *piece = malloc(n);
		assert_non_null(piece);
		memcpy(piece, c->in + pos, n);
		o->s.lo = piece;
		o->s.hi = piece + n;
		size_t used = n + 1;
		o->rc = h1_feed(&o->p, piece, n, &cbs, &o->s, &used);
		free(piece);
		if (used > n)
			fail_msg("%s: *used %zu of %zu bytes fed", c->name, used, n);
		if (o->rc == H1_MORE && used != n)
			fail_msg("%s: H1_MORE but *used %zu of %zu", c->name, used, n);
		pos += used;
		if (o->rc != H1_MORE)
			break;
	}
	o->used = pos;
	if (o->rc == H1_MORE && c->eof)
		o->rc = h1_eof(&o->p);
}

#define CHECK(cond, ...)                                                                    \
	do {                                                                                \
		if (!(cond)) {                                                              \
			print_error("%s (%s, split at %zu, step %zu): ", c->name, how, at, step); \
			print_error(__VA_ARGS__);                                           \
			fail_msg("%s failed", #cond);                                      \
		}                                                                           \
	} while (0)

static void check(const struct h1_case *c, const struct outcome *o, const char *how, size_t at,
		  size_t step)
{
	size_t len = case_len(c);
	CHECK(o->rc == c->rc, "rc %d, want %d (%s)\n", o->rc, c->rc, h1_error(&o->p));
	CHECK(o->p.status == c->status, "status %d, want %d\n", o->p.status, c->status);
	CHECK(o->p.headers_done == c->headers_done, "headers_done %d\n", o->p.headers_done);
	const char *want_body = c->body ? c->body : "";
	CHECK(o->s.blen == strlen(want_body) && memcmp(seen_body(&o->s), want_body, o->s.blen) == 0,
	      "body \"%s\", want \"%s\"\n", seen_body(&o->s), want_body);
	CHECK(o->p.body_bytes == o->s.blen, "body_bytes %llu, handed over %zu\n",
	      (unsigned long long)o->p.body_bytes, o->s.blen);
	CHECK(o->s.foreign == 0, "%d body calls point outside the fed piece\n", o->s.foreign);
	if (c->hdrs)
		CHECK(strcmp(seen_hdrs(&o->s), c->hdrs) == 0, "headers \"%s\", want \"%s\"\n",
		      seen_hdrs(&o->s), c->hdrs);
	/* on_status: once, for the final answer only (a 101 is one). */
	bool final = o->p.status >= 200 || o->p.status == 101;
	CHECK(o->s.status_calls == final, "%d status calls\n", o->s.status_calls);
	if (o->s.status_calls)
		CHECK(o->s.cb_status == o->p.status, "on_status got %d\n", o->s.cb_status);
	if (o->rc == H1_ERROR) {
		CHECK(c->err != NULL, "an error case needs .err\n");
		CHECK(strstr(h1_error(&o->p), c->err) != NULL, "error \"%s\", want \"%s\"\n",
		      h1_error(&o->p), c->err);
		CHECK(h1_started(&o->p) == c->started, "started %d\n", h1_started(&o->p));
		/* How the direct path counts it: as libcurl does the same bytes. */
		CURLcode want = c->curl ? c->curl : CURLE_WEIRD_SERVER_REPLY;
		if (!c->eof)
			CHECK(h1_curl_code(&o->p) == want, "curl code %d, want %d\n",
			      (int)h1_curl_code(&o->p), (int)want);
		return;
	}
	CHECK(h1_started(&o->p) == (len > 0), "started %d\n", h1_started(&o->p));
	CHECK(h1_curl_code(&o->p) == CURLE_OK, "curl code %d without an error\n",
	      (int)h1_curl_code(&o->p));
	CHECK(o->p.minor == (c->http10 ? 0 : 1), "minor %d\n", o->p.minor);
	if (!o->p.headers_done)
		return;
	CHECK(o->p.keep_alive == c->keep_alive, "keep_alive %d\n", o->p.keep_alive);
	CHECK(o->p.chunked == c->chunked, "chunked %d\n", o->p.chunked);
	CHECK(o->p.content_length == c->cl, "content_length %lld, want %lld\n",
	      (long long)o->p.content_length, (long long)c->cl);
	if (o->rc == H1_COMPLETE) {
		size_t want = c->used ? c->used : len;
		CHECK(o->used == want, "answer ended at %zu, want %zu\n", o->used, want);
	}
}

/* Whole, byte by byte, and split in two at every position (every
 * `stride`th for big inputs): the same answer each way. */
static void check_all_ways(const struct h1_case *c, size_t stride)
{
	struct outcome *whole = calloc(1, sizeof *whole), *o = calloc(1, sizeof *o);
	assert_non_null(whole);
	assert_non_null(o);
	size_t len = case_len(c);
	const char *how = "whole";
	size_t at = 0, step = 0;
	run(c, at, step, whole);
	check(c, whole, how, at, step);

	how = "byte by byte";
	step = 1;
	run(c, at, step, o);
	check(c, o, how, at, step);
	seen_free(&o->s);

	how = "two pieces";
	step = 0;
	for (at = 1; at < len; at += at + stride < len ? stride : 1) {
		run(c, at, step, o);
		check(c, o, how, at, step);
		/* A line too long may be taken in part before it is seen to be. */
		if (o->rc != H1_ERROR)
			CHECK(o->p.header_bytes == whole->p.header_bytes, "header_bytes %llu, whole %llu\n",
		      (unsigned long long)o->p.header_bytes,
		      (unsigned long long)whole->p.header_bytes);
		seen_free(&o->s);
	}
	seen_free(&whole->s);
	free(whole);
	free(o);
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_CASES; i++)
		check_all_ways(&cases[i], 1);
}


/* ---- the same bytes through libcurl ----
 * The direct path and --http-client curl must count an answer alike
 * (issue 23): each case's bytes are served once on loopback, then the
 * connection closes, and libcurl's result is set against the reader's as
 * request.c drives it: the same kind, the same status, a success's same
 * body. Cases marked .libcurl say why libcurl differs (7.88 seen; not
 * checked, its versions differ); every other case must agree. */

struct curl_got {
	CURLcode rc;
	long code;
	struct seen body;
};

static size_t curl_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct seen *s = ud;
	append(&s->body, &s->blen, &s->bcap, ptr, size * nmemb);
	return size * nmemb;
}

static void curl_read(const char *in, size_t len, bool head, struct curl_got *g)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The server: the answer, the close, then the request read
		 * to its end so that libcurl's write never fails. */
		int s = accept(l, NULL, NULL);
		for (size_t off = 0; s >= 0 && off < len;) {
			ssize_t k = write(s, in + off, len - off);
			if (k <= 0)
				_exit(1);
			off += (size_t)k;
		}
		shutdown(s, SHUT_WR);
		char d[4096];
		while (read(s, d, sizeof d) > 0)
			;
		_exit(0);
	}
	close(l);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", ntohs(a.sin_port));
	CURL *c = curl_easy_init();
	assert_non_null(c);
	memset(g, 0, sizeof *g);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &g->body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	g->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g->code);
	curl_easy_cleanup(c);
	int st = 0;
	waitpid(pid, &st, 0);
}

/* What a request is counted as (stats.h's kinds, as request.c names
 * them): a 2xx's success, "http" for another status, "truncated" for an
 * answer cut short, "other" for one that is not HTTP it reads. */
enum kind { K_OK, K_HTTP, K_TRUNCATED, K_OTHER };
static const char *const kind_names[] = { "ok", "http", "truncated", "other" };

static enum kind kind_of(CURLcode rc, long status)
{
	if (rc == CURLE_OK)
		return status >= 200 && status <= 299 ? K_OK : K_HTTP;
	/* request.c's classify_curl */
	if (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING)
		return K_TRUNCATED;
	return K_OTHER;
}

static void test_libcurl_agrees(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct outcome *o = calloc(1, sizeof *o);
	assert_non_null(o);
	int differ = 0;
	for (size_t i = 0; i < N_CASES; i++) {
		const struct h1_case *c = &cases[i];
		/* The reader as request.c drives it: the close after the
		 * bytes, an error while reading them as h1_curl_code says,
		 * a cut at the close as a cut (CURLE_PARTIAL_FILE). */
		struct h1_case open = *c;
		open.eof = false;
		run(&open, 0, 0, o);
		CURLcode rc = CURLE_OK;
		if (o->rc == H1_ERROR)
			rc = h1_curl_code(&o->p);
		else if (o->rc == H1_MORE && h1_eof(&o->p) != H1_COMPLETE)
			rc = CURLE_PARTIAL_FILE;
		enum kind mine = kind_of(rc, o->p.status);
		struct curl_got g;
		curl_read(c->in, case_len(c), c->head, &g);
		enum kind theirs = kind_of(g.rc, g.code);
		/* The same status, and for a success the same body (after a
		 * 101 libcurl reads the other protocol's bytes as its body,
		 * the reader none). */
		bool same = mine == theirs &&
			    (rc != CURLE_OK ||
			     (g.code == o->p.status &&
			      (o->p.status == 101 ||
			       (g.body.blen == o->s.blen &&
				memcmp(seen_body(&g.body), seen_body(&o->s), o->s.blen) == 0))));
		if (!same && !c->libcurl) {
			differ++;
			print_error("%s: libcurl %s (%d, HTTP %ld, %zu body bytes), the reader %s (%s)\n",
				    c->name, kind_names[theirs], (int)g.rc, g.code, g.body.blen,
				    kind_names[mine], rc ? h1_error(&o->p) : "");
		}
		seen_free(&g.body);
		seen_free(&o->s);
	}
	free(o);
	curl_global_cleanup();
	if (differ)
		fail_msg("%d cases counted otherwise by libcurl", differ);
}

/* ---- a streamed answer as llama.cpp sends it ---- */

#define LLAMA_HEAD                                                                    \
	"HTTP/1.1 200 OK\r\n"                                                         \
	"Keep-Alive: timeout=5, max=100\r\n"                                          \
	"Content-Type: text/event-stream\r\n"                                         \
	"Server: llama.cpp\r\n"                                                       \
	"Transfer-Encoding: chunked\r\n"                                              \
	"Access-Control-Allow-Origin: \r\n"                                           \
	"\r\n"

/* The SSE capture as a chunked answer: one chunk per event, as the server
 * writes one per token. */
static char *chunk_events(const char *sse, size_t len, size_t *out_len)
{
	size_t cap = sizeof LLAMA_HEAD + len * 2 + 64, n = 0;
	char *o = malloc(cap);
	assert_non_null(o);
	memcpy(o, LLAMA_HEAD, sizeof LLAMA_HEAD - 1);
	n = sizeof LLAMA_HEAD - 1;
	size_t chunks = 0;
	for (size_t i = 0; i < len;) {
		const char *end = strstr(sse + i, "\n\n");
		size_t ev = end ? (size_t)(end - (sse + i)) + 2 : len - i;
		assert_true(n + ev + 32 < cap);
		n += (size_t)sprintf(o + n, "%zx\r\n", ev);
		memcpy(o + n, sse + i, ev);
		n += ev;
		memcpy(o + n, "\r\n", 2);
		n += 2;
		i += ev;
		chunks++;
	}
	assert_true(chunks > 10);
	memcpy(o + n, "0\r\n\r\n", 5);
	n += 5;
	*out_len = n;
	return o;
}

static void test_streamed_answer(void **state)
{
	(void)state;
	size_t slen, len;
	char *sse = testutil_fixture("llamacpp", "clean_chat_stream.txt", &slen);
	char *in = chunk_events(sse, slen, &len);
	const struct h1_case c = {
		.name = "llama.cpp stream", .in = in, .len = len, .rc = H1_COMPLETE, .status = 200,
		.keep_alive = true, .chunked = true, .cl = -1, .headers_done = true, .body = sse,
		.hdrs = "Keep-Alive: timeout=5, max=100\nContent-Type: text/event-stream\n"
			"Server: llama.cpp\nTransfer-Encoding: chunked\nAccess-Control-Allow-Origin: \n",
	};
	check_all_ways(&c, 1);

	/* The counters of a whole feed. */
	struct outcome *o = calloc(1, sizeof *o);
	assert_non_null(o);
	run(&c, 0, 0, o);
	assert_int_equal(o->p.header_bytes, sizeof LLAMA_HEAD - 1);
	assert_int_equal(o->p.body_bytes, slen);
	/* One chunk, one body call: the hot path hands each token over once. */
	size_t events = 0;
	for (const char *p = sse; (p = strstr(p, "\n\n")) != NULL; p += 2)
		events++;
	assert_int_equal((size_t)o->s.body_calls, events);
	seen_free(&o->s);
	free(o);
	free(in);
	free(sse);
}

/* ---- bounds ---- */

/* An answer with one header "X-Big: aaa..." whose line (without its line
 * end) is `line` bytes, ended by `eol`. */
static char *big_line(size_t line, const char *eol, size_t *len)
{
	size_t cap = line + 128;
	char *b = malloc(cap);
	assert_non_null(b);
	size_t n = (size_t)sprintf(b, "%s", OK_HEAD "X-Big: ");
	memset(b + n, 'a', line - 7);
	n += line - 7;
	n += (size_t)sprintf(b + n, "%sContent-Length: 1%s%sx", eol, eol, eol);
	*len = n;
	return b;
}

static void test_line_bound(void **state)
{
	(void)state;
	size_t len;
	char *in = big_line(H1_LINE_MAX, "\r\n", &len);
	struct h1_case c = { .name = "a header line of 8 KiB", .in = in, .len = len,
			     .rc = H1_ERROR, .status = 200, .err = "longer than 8 KiB",
			     .started = true };
	check_all_ways(&c, 61);
	free(in);

	in = big_line(H1_LINE_MAX, "\n", &len);
	c.in = in;
	c.len = len;
	c.name = "a header line of 8 KiB, LF";
	check_all_ways(&c, 61);
	free(in);

	in = big_line(H1_LINE_MAX - 1, "\n", &len);
	c = (struct h1_case){ .name = "a header line just under 8 KiB, LF", .in = in, .len = len,
			      .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 1,
			      .headers_done = true, .body = "x" };
	check_all_ways(&c, 61);
	free(in);

	/* The same with CRLF: the "\r" is the line end's, not the line's. */
	in = big_line(H1_LINE_MAX - 1, "\r\n", &len);
	c.in = in;
	c.len = len;
	c.name = "a header line just under 8 KiB, CRLF";
	check_all_ways(&c, 61);
	free(in);

	/* But a "\r" in the line's last place that is not its end is a byte
	 * too many. */
	in = big_line(H1_LINE_MAX - 1, "\rx\r\n", &len);
	c = (struct h1_case){ .name = "a header line of 8 KiB, ending in a CR", .in = in,
			      .len = len, .rc = H1_ERROR, .status = 200,
			      .err = "longer than 8 KiB", .started = true };
	check_all_ways(&c, 61);
	free(in);

	/* A chunk-size line: H1_LINE_MAX bytes, its line end included, of
	 * zeros (no digits of the size's) or an extension, and no more. */
	for (int ext = 0; ext < 2; ext++) {
		for (size_t line = H1_LINE_MAX; line <= H1_LINE_MAX + 1; line++) {
			size_t cap = sizeof CHUNKED_HEAD + line + 32;
			char *b = malloc(cap);
			assert_non_null(b);
			size_t n = sizeof CHUNKED_HEAD - 1;
			memcpy(b, CHUNKED_HEAD, n);
			if (ext) {
				memcpy(b + n, "1;x=", 4);
				memset(b + n + 4, 'y', line - 6);
			} else {
				memset(b + n, '0', line - 3);
				b[n + line - 3] = '1';
			}
			memcpy(b + n + line - 2, "\r\nx\r\n0\r\n\r\n", 10);
			c = line == H1_LINE_MAX
				? (struct h1_case){ .name = "a chunk-size line of 8 KiB", .in = b,
						    .len = n + line + 8, .rc = H1_COMPLETE, .status = 200,
						    .keep_alive = true, .chunked = true, .cl = -1,
						    .headers_done = true, .body = "x" }
				: (struct h1_case){ .name = "a chunk-size line over 8 KiB", .in = b,
						    .len = n + line + 8, .rc = H1_ERROR, .status = 200,
						    .headers_done = true, .err = "chunk size line longer than 8 KiB",
						    .started = true, CURL_BODY };
			check_all_ways(&c, 61);
			free(b);
		}
	}

	/* A status line too. */
	char *st = malloc(H1_LINE_MAX + 16);
	assert_non_null(st);
	memcpy(st, "HTTP/1.1 200 ", 13);
	memset(st + 13, 'R', H1_LINE_MAX - 13);
	memcpy(st + H1_LINE_MAX, "\r\n\r\n", 4);
	c = (struct h1_case){ .name = "a status line of 8 KiB", .in = st, .len = H1_LINE_MAX + 4,
			      .rc = H1_ERROR, .err = "longer than 8 KiB", .started = true };
	check_all_ways(&c, 61);
	free(st);
}

/* Headers of `lines` lines "X-Hnnnn: vvv..." of `each` bytes (the last
 * `extra` more) with CRLF, after the status line, then a Content-Length
 * and a body. */
static char *many_headers(size_t lines, size_t each, size_t extra, size_t *len, size_t *head_len)
{
	size_t cap = 64 + lines * (each + 2) + extra + 64;
	char *b = malloc(cap);
	assert_non_null(b);
	size_t n = (size_t)sprintf(b, "%s", OK_HEAD);
	for (size_t i = 0; i < lines; i++) {
		n += (size_t)sprintf(b + n, "X-H%04zu: ", i);
		size_t v = each - 9 + (i == lines - 1 ? extra : 0);
		memset(b + n, 'v', v);
		n += v;
		memcpy(b + n, "\r\n", 2);
		n += 2;
	}
	n += (size_t)sprintf(b + n, "Content-Length: 2\r\n\r\n");
	*head_len = n;
	n += (size_t)sprintf(b + n, "ok");
	*len = n;
	assert_true(n < cap);
	return b;
}

static void test_headers_bound(void **state)
{
	(void)state;
	size_t len, head;
	/* 17 + 20 * 4002 + 21: over 64 KiB with every line well under 8 KiB. */
	char *in = many_headers(20, 4000, 0, &len, &head);
	assert_true(head > H1_HEADERS_MAX);
	struct h1_case c = { .name = "headers over 64 KiB", .in = in, .len = len, .rc = H1_ERROR,
			     .status = 200, .err = "larger than 64 KiB", .started = true };
	check_all_ways(&c, 997);
	free(in);

	/* Status line (17), 16 lines and "Content-Length: 2\r\n\r\n" (21) of
	 * exactly 64 KiB in all are still fine, one byte more is not. */
	size_t each = (H1_HEADERS_MAX - 17 - 21) / 16 - 2;
	size_t extra = H1_HEADERS_MAX - 17 - 21 - 16 * (each + 2);
	in = many_headers(16, each, extra, &len, &head);
	assert_int_equal(head, H1_HEADERS_MAX);
	c = (struct h1_case){ .name = "headers of exactly 64 KiB", .in = in, .len = len,
			      .rc = H1_COMPLETE, .status = 200, .keep_alive = true, .cl = 2,
			      .headers_done = true, .body = "ok" };
	check_all_ways(&c, 997);
	struct outcome *o = calloc(1, sizeof *o);
	assert_non_null(o);
	run(&c, 0, 0, o);
	assert_int_equal(o->p.header_bytes, H1_HEADERS_MAX);
	seen_free(&o->s);
	free(o);
	free(in);

	in = many_headers(16, each, extra + 1, &len, &head);
	c = (struct h1_case){ .name = "headers of 64 KiB + 1", .in = in, .len = len,
			      .rc = H1_ERROR, .status = 200, .err = "larger than 64 KiB",
			      .started = true };
	check_all_ways(&c, 997);
	free(in);
}

/* ---- two answers on one connection ---- */

/* The next answer on a kept connection may start with one empty line
 * (RFC 9112 2.2): sep is what comes between the two. */
static void back_to_back(const char *sep)
{
	const char first[] = CHUNKED_HEAD "4\r\ndata\r\n2\r\n: \r\n0\r\n\r\n";
	const char second[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
	char in[sizeof first + sizeof second + 8];
	size_t n1 = sizeof first - 1, ns = strlen(sep), len = n1 + ns + sizeof second - 1;
	assert_true(ns <= 8);
	memcpy(in, first, n1);
	memcpy(in + n1, sep, ns);
	memcpy(in + n1 + ns, second, sizeof second);
	struct h1_parser *p = malloc(sizeof *p);
	assert_non_null(p);
	/* Split in two at every position; the second feed starts where the
	 * first left off, the answer boundary falls in either. */
	for (size_t at = 0; at <= len; at++) {
		struct seen s[2] = { 0 };
		int k = 0; /* which answer */
		h1_reset(p, false);
		size_t pos = 0;
		int rc = H1_MORE;
		while (pos < len) {
			size_t end = pos < at ? at : len;
			size_t used = 0;
			s[k].lo = in + pos;
			s[k].hi = in + end;
			rc = h1_feed(p, in + pos, end - pos, &cbs, &s[k], &used);
			pos += used;
			if (rc == H1_COMPLETE && k == 0) {
				assert_int_equal(pos, n1);
				assert_int_equal(p->status, 200);
				assert_true(p->keep_alive);
				k = 1;
				h1_reset(p, false);
				continue;
			}
			if (rc != H1_MORE)
				break;
		}
		if (rc != H1_COMPLETE || k != 1)
			fail_msg("split at %zu: rc %d after answer %d", at, rc, k + 1);
		assert_int_equal(pos, len);
		assert_int_equal(p->status, 404);
		assert_int_equal(p->content_length, 9);
		assert_string_equal(seen_body(&s[0]), "data: ");
		assert_string_equal(seen_body(&s[1]), "not found");
		assert_string_equal(seen_hdrs(&s[1]), "Content-Length: 9\n");
		assert_int_equal(s[1].cb_status, 404);
		assert_int_equal(s[0].foreign + s[1].foreign, 0);
		seen_free(&s[0]);
		seen_free(&s[1]);
	}
	free(p);
}

static void test_back_to_back(void **state)
{
	(void)state;
	back_to_back("");
	back_to_back("\r\n");
	back_to_back("\n");
}

/* ---- callbacks that stop ---- */

struct stop_case {
	const char *name;
	const char *in;
	int stop_status, stop_header, stop_body;
	size_t used; /* where the stop leaves *used */
};

static const char stop_in[] = OK_HEAD "X-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "5\r\nhello\r\n1;e\r\n!\r\n0\r\nT: 1\r\n\r\n";

static void test_stops(void **state)
{
	(void)state;
	const size_t status_end = sizeof OK_HEAD - 1;
	const size_t hdr2_end = status_end + sizeof "X-A: 1\r\nTransfer-Encoding: chunked\r\n" - 1;
	const size_t body1_end = hdr2_end + sizeof "\r\n5\r\nhello" - 1;
	const size_t body2_end = body1_end + sizeof "\r\n1;e\r\n!" - 1;
	const struct stop_case sc[] = {
		{ "on_status", stop_in, 1, 0, 0, status_end },
		{ "on_header, the second", stop_in, 0, 2, 0, hdr2_end },
		{ "on_body, the first", stop_in, 0, 0, 1, body1_end },
		{ "on_body, the second", stop_in, 0, 0, 2, body2_end },
	};
	struct h1_parser *p = malloc(sizeof *p);
	assert_non_null(p);
	const size_t len = sizeof stop_in - 1;
	for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
		struct seen s = { .stop_status = sc[i].stop_status,
				  .stop_header = sc[i].stop_header,
				  .stop_body = sc[i].stop_body,
				  .lo = stop_in, .hi = stop_in + len };
		h1_reset(p, false);
		size_t used = 0;
		int rc = h1_feed(p, stop_in, len, &cbs, &s, &used);
		if (rc != H1_STOPPED || used != sc[i].used)
			fail_msg("%s: rc %d used %zu, want %d at %zu", sc[i].name, rc, used,
				 H1_STOPPED, sc[i].used);
		/* Resuming where it stopped reads the rest of the answer. */
		size_t more = 0;
		rc = h1_feed(p, stop_in + used, len - used, &cbs, &s, &more);
		assert_int_equal(rc, H1_COMPLETE);
		assert_int_equal(used + more, len);
		assert_string_equal(seen_body(&s), "hello!");
		assert_string_equal(seen_hdrs(&s), "X-A: 1\nTransfer-Encoding: chunked\n");
		assert_int_equal(s.status_calls, 1);
		assert_int_equal(p->body_bytes, 6);
		seen_free(&s);
	}

	/* A stop on the last body byte: the answer is over, the next feed
	 * (of nothing) says so. */
	const char cl[] = OK_HEAD "Content-Length: 3\r\n\r\nabc";
	struct seen s = { .stop_body = 1, .lo = cl, .hi = cl + sizeof cl - 1 };
	h1_reset(p, false);
	size_t used = 0;
	assert_int_equal(h1_feed(p, cl, sizeof cl - 1, &cbs, &s, &used), H1_STOPPED);
	assert_int_equal(used, sizeof cl - 1);
	assert_int_equal(h1_feed(p, cl + used, 0, &cbs, &s, &used), H1_COMPLETE);
	assert_int_equal(used, 0);
	assert_string_equal(seen_body(&s), "abc");
	seen_free(&s);

	/* Stops on interim answers' headers do not happen: they are not
	 * handed over. */
	const char cont[] = "HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\n" OK_HEAD "X-F: 2\r\n\r\n";
	s = (struct seen){ .stop_header = 1, .stop_status = 1 };
	h1_reset(p, false);
	assert_int_equal(h1_feed(p, cont, sizeof cont - 1, &cbs, &s, &used), H1_STOPPED);
	assert_int_equal(used, sizeof "HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\n" OK_HEAD - 1);
	assert_int_equal(s.cb_status, 200);
	assert_int_equal(s.header_calls, 0);
	seen_free(&s);
	free(p);
}

/* ---- an error stays until h1_reset ---- */

static void test_error_sticks(void **state)
{
	(void)state;
	struct h1_parser *p = malloc(sizeof *p);
	assert_non_null(p);
	struct seen s = { 0 };
	const char bad[] = CHUNKED_HEAD "g\r\n";
	const char good[] = OK_HEAD "Content-Length: 2\r\n\r\nhi";
	size_t used = 0;
	h1_reset(p, false);
	assert_int_equal(h1_feed(p, bad, sizeof bad - 1, &cbs, &s, &used), H1_ERROR);
	assert_string_equal(h1_error(p), "bad chunk size");
	/* More bytes, even a good answer, change nothing. */
	s.lo = good;
	s.hi = good + sizeof good - 1;
	assert_int_equal(h1_feed(p, good, sizeof good - 1, &cbs, &s, &used), H1_ERROR);
	assert_int_equal(used, 0);
	/* Nor does an empty feed (a caller's "anything pending?"). */
	used = 1;
	assert_int_equal(h1_feed(p, good, 0, &cbs, &s, &used), H1_ERROR);
	assert_int_equal(used, 0);
	assert_int_equal(h1_eof(p), H1_ERROR);
	assert_string_equal(h1_error(p), "bad chunk size");
	assert_int_equal(s.blen, 0);
	/* After a reset the parser reads an answer again. */
	h1_reset(p, false);
	assert_false(h1_started(p));
	assert_int_equal(h1_feed(p, good, sizeof good - 1, &cbs, &s, &used), H1_COMPLETE);
	assert_int_equal(used, sizeof good - 1);
	assert_string_equal(seen_body(&s), "hi");
	assert_string_equal(h1_error(p), "no error");
	seen_free(&s);
	free(p);
}

/* No callbacks at all: the counters still move. */
static void test_no_callbacks(void **state)
{
	(void)state;
	static const struct h1_callbacks none = { 0 };
	struct h1_parser *p = malloc(sizeof *p);
	assert_non_null(p);
	const char in[] = CHUNKED_HEAD "3\r\nabc\r\n0\r\n\r\n";
	size_t used = 0;
	h1_reset(p, false);
	assert_int_equal(h1_feed(p, in, sizeof in - 1, &none, NULL, &used), H1_COMPLETE);
	assert_int_equal(used, sizeof in - 1);
	assert_int_equal(p->body_bytes, 3);
	assert_int_equal(p->header_bytes, sizeof CHUNKED_HEAD - 1);
	/* A NULL used is allowed. */
	h1_reset(p, false);
	assert_int_equal(h1_feed(p, in, sizeof in - 1, &none, NULL, NULL), H1_COMPLETE);
	free(p);
}

/* The request head, as libcurl sends it. */
static char *head_of(const char *url, const char *const *hdrs)
{
	struct curl_slist *l = NULL;
	for (size_t i = 0; hdrs && hdrs[i]; i++)
		l = curl_slist_append(l, hdrs[i]);
	size_t len = 0;
	char *h = h1_request_head(url, l, &len);
	curl_slist_free_all(l);
	if (h)
		assert_int_equal(len, strlen(h));
	return h;
}

static void test_request_head(void **state)
{
	(void)state;
	const char *hdrs[] = {"Content-Type: application/json", "Expect:", "X-Empty;", "X-Key: a:b", NULL};
	char *h = head_of("http://127.0.0.1:8000/v1/chat/completions?api-version=2", hdrs);
	assert_non_null(h);
	assert_string_equal(h, "POST /v1/chat/completions?api-version=2 HTTP/1.1\r\n"
			       "Host: 127.0.0.1:8000\r\n"
			       "Content-Type: application/json\r\n"
			       "X-Empty:\r\n"
			       "X-Key: a:b\r\n"
			       "Accept-Encoding: identity\r\n");
	free(h);
	/* The default port is not written; an IPv6 host keeps its brackets. */
	h = head_of("http://[::1]/v1/completions", NULL);
	assert_non_null(h);
	assert_string_equal(h, "POST /v1/completions HTTP/1.1\r\nHost: [::1]\r\nAccept-Encoding: identity\r\n");
	free(h);
	/* A Host of the user's replaces the head's; "Name:" drops the head's own. */
	const char *own[] = {"Host: example.test", "Accept-Encoding:", NULL};
	h = head_of("http://10.0.0.1:9/x", own);
	assert_non_null(h);
	assert_string_equal(h, "POST /x HTTP/1.1\r\nHost: example.test\r\n");
	free(h);
	/* Any form of a Host or Accept-Encoding of the user's replaces the
	 * head's own: never two of them. */
	const char *forms[] = {"Host;", "accept-encoding : gzip", NULL};
	h = head_of("http://10.0.0.1:9/x", forms);
	assert_non_null(h);
	assert_string_equal(h, "POST /x HTTP/1.1\r\nHost:\r\naccept-encoding : gzip\r\n");
	free(h);
	/* Connection: the head has none of its own; the user's goes as it is. */
	const char *conn[] = {"Connection: close", NULL};
	h = head_of("http://10.0.0.1:9/x", conn);
	assert_non_null(h);
	assert_string_equal(h, "POST /x HTTP/1.1\r\nHost: 10.0.0.1:9\r\nConnection: close\r\n"
			       "Accept-Encoding: identity\r\n");
	free(h);
	/* The body's framing: the caller writes the Content-Length after
	 * the head, so a user's Content-Length or Transfer-Encoding (in any
	 * form) would make two framings; such a request is libcurl's, which
	 * sends the user's instead of its own (issue 23). */
	const char *framing[] = {"Content-Length: 5", "content-length:", "Content-Length;",
				 "CONTENT-LENGTH : 5", "Transfer-Encoding: chunked",
				 "transfer-encoding;", NULL};
	for (size_t i = 0; framing[i]; i++) {
		const char *one[] = {"Content-Type: application/json", framing[i], NULL};
		char *f = head_of("http://127.0.0.1:8000/v1/completions", one);
		if (f)
			fail_msg("\"%s\": the direct path's head %s", framing[i], f);
	}
	/* Names that only begin like them are anyone's. */
	const char *near[] = {"Content-Length-X: 5", "Transfer-Encodings: x", NULL};
	h = head_of("http://10.0.0.1:9/x", near);
	assert_non_null(h);
	assert_string_equal(h, "POST /x HTTP/1.1\r\nHost: 10.0.0.1:9\r\nContent-Length-X: 5\r\n"
			       "Transfer-Encodings: x\r\nAccept-Encoding: identity\r\n");
	free(h);
	/* https is the direct path's too (its TLS session, direct.h). */
	h = head_of("https://example.test/v1/completions", NULL);
	assert_non_null(h);
	assert_string_equal(h, "POST /v1/completions HTTP/1.1\r\nHost: example.test\r\nAccept-Encoding: identity\r\n");
	free(h);
	/* What the direct path leaves to libcurl. */
	assert_null(head_of("ftp://example.test/v1/completions", NULL));
	assert_null(head_of("http://user:pw@example.test/v1/completions", NULL));
	assert_null(head_of("not a url", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_libcurl_agrees),
		cmocka_unit_test(test_streamed_answer),
		cmocka_unit_test(test_line_bound),
		cmocka_unit_test(test_headers_bound),
		cmocka_unit_test(test_back_to_back),
		cmocka_unit_test(test_stops),
		cmocka_unit_test(test_error_sticks),
		cmocka_unit_test(test_no_callbacks),
		cmocka_unit_test(test_request_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
