#include "config.h"

#include "infertop/h1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
	S_STATUS,
	S_HEADER,
	S_BODY_LEN,
	S_BODY_CLOSE,
	S_CHUNK_SIZE,
	S_CHUNK_DATA,
	S_CHUNK_END,   /* the CRLF after a chunk's data */
	S_TRAILER,
	S_DONE,
	S_ERROR,
};

/* 2^40 bytes: no answer of ours comes near, and the sum cannot overflow.
 * Leading zeros are not counted: "0000000000000005" is 5. */
#define H1_CHUNK_DIGITS_MAX 10

/* Where a chunk-size line is (p->chunk_line), read byte by byte after
 * RFC 9112 7.1.1: chunk-size *( BWS ";" BWS name [ BWS "=" BWS value ] ),
 * value a token or a quoted-string, then the line end (blanks before it
 * allowed). */
enum {
	CS_START,      /* no digit yet */
	CS_SIZE,       /* in the size's digits */
	CS_AFTER,      /* blanks after the size or a value: ";" or the end next */
	CS_NAME0,      /* after ";": a name next */
	CS_NAME,
	CS_AFTER_NAME, /* blanks after a name: "=", ";" or the end next */
	CS_VAL0,       /* after "=": a value next */
	CS_TOKEN,
	CS_QUOTED,
	CS_QPAIR,      /* after a backslash in a quoted-string */
	CS_CR,         /* after a CR: only its LF may follow */
};

void h1_reset(struct h1_parser *p, bool head)
{
	p->status = 0;
	p->minor = 1;
	p->keep_alive = false;
	p->chunked = false;
	p->headers_done = false;
	p->content_length = -1;
	p->header_bytes = 0;
	p->body_bytes = 0;
	p->state = S_STATUS;
	p->err = NULL;
	p->chunk_left = 0;
	p->chunk_digits = 0;
	p->chunk_line = CS_START;
	p->head_only = head;
	p->saw_close = p->saw_keep_alive = p->saw_te = false;
	p->skipped_eol = false;
	p->llen = 0;
}

static int h1_fail(struct h1_parser *p, const char *why)
{
	p->state = S_ERROR;
	p->err = why;
	return H1_ERROR;
}

/* Takes bytes up to a line end into p->line. 1: a whole line is there
 * (its "\r\n" or "\n" not kept), 0: all bytes taken, -1: too long. */
static int h1_take_line(struct h1_parser *p, const char *buf, size_t n, size_t *i)
{
	const char *start = buf + *i;
	size_t avail = n - *i;
	const char *nl = memchr(start, '\n', avail);
	size_t take = nl ? (size_t)(nl - start) : avail;
	/* A line of H1_LINE_MAX bytes is too long, its line end not counted:
	 * the buffer's last place may hold only the "\r" of a CRLF. Whether
	 * it is one shows when the next byte comes. */
	size_t end = p->llen + take;
	if (end > H1_LINE_MAX ||
	    (end == H1_LINE_MAX && (take ? start[take - 1] : p->line[end - 1]) != '\r'))
		return -1;
	memcpy(p->line + p->llen, start, take);
	p->llen += take;
	*i += take + (nl ? 1 : 0);
	if (!nl)
		return 0;
	if (p->llen && p->line[p->llen - 1] == '\r')
		p->llen--;
	return 1;
}

/* RFC 9110 5.6.2 */
static bool h1_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* RFC 9112 2.2: a CR not before its LF makes a line invalid, and RFC 9110
 * 5.5 a NUL in a field: either is refused, not read as a space, which is
 * what a reader that splits lines at a bare CR would disagree on. */
static const char *h1_bad_bytes(const char *l, size_t len, const char *cr, const char *nul)
{
	if (memchr(l, '\r', len))
		return cr;
	if (memchr(l, '\0', len))
		return nul;
	return NULL;
}

/* An answer of its own: 2xx-5xx, and 101, after which nothing HTTP
 * follows (the other 1xx are interim, a final answer comes after them). */
static bool h1_final(int status)
{
	return status >= 200 || status == 101;
}

static bool h1_token_in(const char *v, size_t len, const char *tok)
{
	size_t tl = strlen(tok);
	size_t i = 0;
	while (i < len) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < len && v[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(v + s, tok, tl) == 0)
			return true;
	}
	return false;
}

static int h1_status_line(struct h1_parser *p, size_t len)
{
	const char *l = p->line;
	if (len < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[7] < '0' || l[7] > '9' ||
	    l[8] != ' ')
		return h1_fail(p, "the answer is not HTTP/1.x");
	if (l[9] < '1' || l[9] > '9' || l[10] < '0' || l[10] > '9' || l[11] < '0' || l[11] > '9' ||
	    (len > 12 && l[12] != ' '))
		return h1_fail(p, "bad status code");
	const char *bad = h1_bad_bytes(l, len, "a bare CR in the status line", "a NUL in the status line");
	if (bad)
		return h1_fail(p, bad);
	p->minor = l[7] - '0';
	p->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return 0;
}

static int h1_header_line(struct h1_parser *p, size_t len)
{
	const char *l = p->line;
	const char *bad = h1_bad_bytes(l, len, "a bare CR in a header line", "a NUL in a header line");
	if (bad)
		return h1_fail(p, bad);
	if (l[0] == ' ' || l[0] == '\t')
		return h1_fail(p, "folded header line");
	const char *colon = memchr(l, ':', len);
	if (!colon || colon == l)
		return h1_fail(p, "header line without a name");
	size_t nlen = (size_t)(colon - l);
	/* RFC 9112 5.1: no blank between the name and its colon; another
	 * reader would see an unknown "Content-Length " and frame the body
	 * otherwise. A name is a token. */
	if (l[nlen - 1] == ' ' || l[nlen - 1] == '\t')
		return h1_fail(p, "a blank before a header's colon");
	for (size_t i = 0; i < nlen; i++)
		if (!h1_tchar((unsigned char)l[i]))
			return h1_fail(p, "a header name that is not a token");
	const char *v = colon + 1;
	size_t vlen = len - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (nlen == 14 && strncasecmp(l, "content-length", 14) == 0) {
		/* A list of the same value ("5, 5", RFC 9110 8.6) is that
		 * value; differing ones, here or over several lines, are no
		 * length at all. */
		size_t i = 0;
		for (;;) {
			while (i < vlen && (v[i] == ' ' || v[i] == '\t'))
				i++;
			size_t s = i;
			int64_t cl = 0;
			for (; i < vlen && v[i] >= '0' && v[i] <= '9'; i++) {
				if (i - s == 15)
					return h1_fail(p, "bad Content-Length");
				cl = cl * 10 + (v[i] - '0');
			}
			if (i == s)
				return h1_fail(p, "bad Content-Length");
			while (i < vlen && (v[i] == ' ' || v[i] == '\t'))
				i++;
			if (p->content_length >= 0 && p->content_length != cl)
				return h1_fail(p, "two different Content-Length values");
			p->content_length = cl;
			if (i == vlen)
				break;
			if (v[i++] != ',')
				return h1_fail(p, "bad Content-Length");
		}
	} else if (nlen == 17 && strncasecmp(l, "transfer-encoding", 17) == 0) {
		/* Chunked only when it is the last coding; any other framing
		 * runs to the close (RFC 9112 6.3). */
		p->chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0 &&
			     (vlen == 7 || v[vlen - 8] == ',' || v[vlen - 8] == ' ' || v[vlen - 8] == '\t');
		p->saw_te = true;
	} else if (nlen == 10 && strncasecmp(l, "connection", 10) == 0) {
		if (h1_token_in(v, vlen, "close"))
			p->saw_close = true;
		if (h1_token_in(v, vlen, "keep-alive"))
			p->saw_keep_alive = true;
	}
	return 0;
}

/* The blank line after the headers: what frames the body. */
static int h1_headers_end(struct h1_parser *p)
{
	if (!h1_final(p->status)) {
		/* An interim answer (100 Continue, 103 Early Hints): the final
		 * one follows with headers of its own. status is that one's
		 * (h1.h: 0 until read), so an answer cut after the interim
		 * one has none. */
		p->status = 0;
		p->content_length = -1;
		p->chunked = p->saw_close = p->saw_keep_alive = p->saw_te = false;
		p->skipped_eol = false;
		p->state = S_STATUS;
		return 0;
	}
	if (p->status == 101) {
		/* What follows is another protocol's: the answer ends with
		 * its head, and so does the connection's use. */
		p->headers_done = true;
		p->keep_alive = false;
		p->state = S_DONE;
		return 0;
	}
	/* RFC 9112 6.3: both lengths is a smuggling sign, and two readers
	 * that frame it differently disagree on where the next answer
	 * starts. */
	if (p->saw_te && p->content_length >= 0)
		return h1_fail(p, "Content-Length together with Transfer-Encoding");
	p->headers_done = true;
	p->keep_alive = p->minor >= 1 ? !p->saw_close : (p->saw_keep_alive && !p->saw_close);
	/* RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 is faulty framing, the
	 * connection closes after it. */
	if (p->saw_te && p->minor == 0)
		p->keep_alive = false;
	if (p->head_only || p->status == 204 || p->status == 304) {
		p->state = S_DONE;
	} else if (p->chunked) {
		p->state = S_CHUNK_SIZE;
	} else if (p->content_length >= 0) {
		p->chunk_left = (uint64_t)p->content_length;
		p->state = p->chunk_left ? S_BODY_LEN : S_DONE;
	} else {
		/* No length, or a coding other than chunked last (RFC 9112
		 * 6.3): the body runs to the close. */
		p->keep_alive = false;
		p->state = S_BODY_CLOSE;
	}
	return 0;
}

static int h1_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One byte of a chunk-size line past the fast path (h1_feed): its
 * state in p->chunk_line, its length so far in p->llen. */
static int h1_chunk_line(struct h1_parser *p, unsigned char c)
{
	if (p->llen >= H1_LINE_MAX)
		return h1_fail(p, "chunk size line longer than 8 KiB");
	p->llen++;
	bool blank = c == ' ' || c == '\t';
	uint8_t next = p->chunk_line;
	switch (p->chunk_line) {
	case CS_START:
	case CS_SIZE: {
		int d = h1_hex((char)c);
		if (d >= 0) {
			/* Leading zeros are no digits of the size's. */
			if (d || p->chunk_digits) {
				if (p->chunk_digits >= H1_CHUNK_DIGITS_MAX)
					return h1_fail(p, "bad chunk size");
				p->chunk_digits++;
			}
			p->chunk_left = p->chunk_left * 16 + (uint64_t)d;
			next = CS_SIZE;
		} else if (p->chunk_line == CS_START) {
			return h1_fail(p, c == ';' || c == '\r' || c == '\n' ? "chunk without a size"
									: "bad chunk size");
		} else if (blank) {
			next = CS_AFTER;
		} else if (c == ';') {
			next = CS_NAME0;
		} else if (c != '\r' && c != '\n') {
			return h1_fail(p, "bad chunk size");
		}
		break;
	}
	case CS_AFTER:
		if (c == ';')
			next = CS_NAME0;
		else if (!blank && c != '\r' && c != '\n')
			return h1_fail(p, "bad chunk extension");
		break;
	case CS_NAME0:
		if (h1_tchar(c))
			next = CS_NAME;
		else if (!blank)
			return h1_fail(p, "bad chunk extension");
		break;
	case CS_NAME:
	case CS_AFTER_NAME:
		if (c == '=')
			next = CS_VAL0;
		else if (c == ';')
			next = CS_NAME0;
		else if (blank)
			next = CS_AFTER_NAME;
		else if (!(h1_tchar(c) && p->chunk_line == CS_NAME) && c != '\r' && c != '\n')
			return h1_fail(p, "bad chunk extension");
		break;
	case CS_VAL0:
		if (c == '"')
			next = CS_QUOTED;
		else if (h1_tchar(c))
			next = CS_TOKEN;
		else if (!blank)
			return h1_fail(p, "bad chunk extension");
		break;
	case CS_TOKEN:
		if (c == ';')
			next = CS_NAME0;
		else if (blank)
			next = CS_AFTER;
		else if (!h1_tchar(c) && c != '\r' && c != '\n')
			return h1_fail(p, "bad chunk extension");
		break;
	case CS_QUOTED:
		/* qdtext (RFC 9110 5.6.4): no CTL but a tab, so a line end
		 * inside the quotes is an unbalanced quote. */
		if (c == '"')
			next = CS_AFTER;
		else if (c == '\\')
			next = CS_QPAIR;
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			return h1_fail(p, "bad chunk extension");
		break;
	case CS_QPAIR:
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return h1_fail(p, "bad chunk extension");
		next = CS_QUOTED;
		break;
	case CS_CR:
		if (c != '\n')
			return h1_fail(p, "a bare CR in a chunk size line");
		break;
	}
	/* The line end: a CR outside quotes may only come before it. */
	if (c == '\r' && p->chunk_line != CS_QUOTED && p->chunk_line != CS_QPAIR) {
		next = CS_CR;
	} else if (c == '\n') {
		p->chunk_digits = 0;
		p->llen = 0;
		p->chunk_line = CS_START;
		p->state = p->chunk_left ? S_CHUNK_DATA : S_TRAILER;
		return 0;
	}
	p->chunk_line = next;
	return 0;
}

int h1_feed(struct h1_parser *p, const char *buf, size_t n, const struct h1_callbacks *cb,
	    void *ud, size_t *used)
{
	/* Before the loop, which runs only on bytes: an empty feed must still
	 * say error. */
	if (p->state == S_ERROR) {
		if (used)
			*used = 0;
		return H1_ERROR;
	}
	size_t i = 0;
	int rc = H1_MORE;
	while (i < n || p->state == S_DONE) {
		switch (p->state) {
		case S_STATUS:
		case S_HEADER:
		case S_TRAILER: {
			size_t before = i;
			int got = h1_take_line(p, buf, n, &i);
			if (p->state != S_TRAILER) {
				p->header_bytes += i - before;
				if (p->header_bytes > H1_HEADERS_MAX) {
					rc = h1_fail(p, "headers larger than 64 KiB");
					goto out;
				}
			}
			if (got < 0) {
				/* Bytes came, though none was kept: h1_started
				 * must not say "nothing came". */
				if (p->state != S_TRAILER)
					p->header_bytes += n - i;
				rc = h1_fail(p, "header line longer than 8 KiB");
				goto out;
			}
			if (got == 0)
				break;
			size_t len = p->llen;
			p->llen = 0;
			if (p->state == S_STATUS) {
				if (len == 0 && !p->skipped_eol) {
					/* One stray line end before a status line
					 * (RFC 9112 2.2), after an interim answer
					 * or a kept connection's last answer too. */
					p->skipped_eol = true;
					break;
				}
				if (h1_status_line(p, len) < 0) {
					rc = H1_ERROR;
					goto out;
				}
				p->state = S_HEADER;
				if (h1_final(p->status) && cb->on_status && cb->on_status(ud, p->status)) {
					rc = H1_STOPPED;
					goto out;
				}
			} else if (p->state == S_HEADER) {
				if (len == 0) {
					if (h1_headers_end(p) < 0) {
						rc = H1_ERROR;
						goto out;
					}
					break;
				}
				if (h1_header_line(p, len) < 0) {
					rc = H1_ERROR;
					goto out;
				}
				if (h1_final(p->status) && cb->on_header && cb->on_header(ud, p->line, len)) {
					rc = H1_STOPPED;
					goto out;
				}
			} else if (len == 0) {
				p->state = S_DONE;
			} else {
				const char *bad = h1_bad_bytes(p->line, len, "a bare CR in a trailer line",
							       "a NUL in a trailer line");
				if (bad) {
					rc = h1_fail(p, bad);
					goto out;
				}
			}
			break;
		}
		case S_CHUNK_SIZE: {
			/* The common case, a whole "hex\r\n" in this read, in one go:
			 * every token of a stream is a chunk of its own. */
			if (p->chunk_line == CS_START) {
				size_t j = i;
				uint64_t v = 0;
				int d;
				while (j < n && j - i < H1_CHUNK_DIGITS_MAX && (d = h1_hex(buf[j])) >= 0) {
					v = v * 16 + (uint64_t)d;
					j++;
				}
				if (j > i && j + 1 < n && buf[j] == '\r' && buf[j + 1] == '\n') {
					i = j + 2;
					p->chunk_left = v;
					p->state = v ? S_CHUNK_DATA : S_TRAILER;
					break;
				}
			}
			if (h1_chunk_line(p, (unsigned char)buf[i++]) < 0) {
				rc = H1_ERROR;
				goto out;
			}
			break;
		}
		case S_CHUNK_DATA:
		case S_BODY_LEN:
		case S_BODY_CLOSE: {
			size_t take = n - i;
			if (p->state != S_BODY_CLOSE && take > p->chunk_left)
				take = (size_t)p->chunk_left;
			p->body_bytes += take;
			const char *at = buf + i;
			i += take;
			if (p->state != S_BODY_CLOSE) {
				p->chunk_left -= take;
				if (!p->chunk_left)
					p->state = p->state == S_CHUNK_DATA ? S_CHUNK_END : S_DONE;
			}
			if (cb->on_body && cb->on_body(ud, at, take)) {
				rc = H1_STOPPED;
				goto out;
			}
			break;
		}
		case S_CHUNK_END: {
			if (p->chunk_line == CS_START && i + 1 < n && buf[i] == '\r' && buf[i + 1] == '\n') {
				i += 2;
				p->state = S_CHUNK_SIZE;
				break;
			}
			/* chunk_line is CS_START here, CS_CR after the CR. */
			char c = buf[i++];
			if (c == '\n') {
				p->chunk_line = CS_START;
				p->state = S_CHUNK_SIZE;
			} else if (c == '\r' && p->chunk_line != CS_CR) {
				p->chunk_line = CS_CR;
			} else {
				rc = h1_fail(p, c == '\r' || p->chunk_line == CS_CR
							? "a bare CR after a chunk's data"
							: "chunk data longer than its size");
				goto out;
			}
			break;
		}
		case S_DONE:
			rc = H1_COMPLETE;
			goto out;
		default:
			rc = H1_ERROR;
			goto out;
		}
	}
out:
	if (used)
		*used = i;
	return rc;
}

int h1_eof(struct h1_parser *p)
{
	if (p->state == S_BODY_CLOSE || p->state == S_DONE) {
		p->state = S_DONE;
		return H1_COMPLETE;
	}
	if (p->state != S_ERROR)
		h1_fail(p, p->headers_done ? "the connection closed inside the body"
					   : "the connection closed before the headers ended");
	return H1_ERROR;
}

bool h1_started(const struct h1_parser *p)
{
	return p->header_bytes > 0 || p->llen > 0;
}

const char *h1_error(const struct h1_parser *p)
{
	return p->err ? p->err : "no error";
}

CURLcode h1_curl_code(const struct h1_parser *p)
{
	if (p->state != S_ERROR)
		return CURLE_OK;
	return p->headers_done ? CURLE_RECV_ERROR : CURLE_WEIRD_SERVER_REPLY;
}

/* Whether the header line d ("Name: value", "Name:", "Name;") is named
 * name, as libcurl matches its own against the user's: blanks before the
 * colon are the name's. */
static bool h1_named(const char *d, const char *name)
{
	size_t nl = strlen(name);
	if (strncasecmp(d, name, nl) != 0)
		return false;
	d += nl;
	d += strspn(d, " \t");
	return *d == ':' || *d == ';';
}

char *h1_request_head(const char *url, const struct curl_slist *headers, size_t *len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *user = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
	char *head = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
	    curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		goto out;
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	/* A header of the user's replaces the request's own of that name, as
	 * libcurl does with its own; given with no value ("Name:") it is not
	 * sent at all. The body's framing stays libcurl's: with the user's
	 * Content-Length or Transfer-Encoding (which libcurl sends instead of
	 * its own length, and "chunked" makes it chunk the body) the request
	 * is not the direct path's, lest it go out with two lengths. */
	bool own_host = false, own_encoding = false;
	size_t cap = strlen(host) + strlen(path) + (query ? strlen(query) : 0) + 128;
	for (const struct curl_slist *h = headers; h; h = h->next) {
		cap += strlen(h->data) + 2;
		if (h1_named(h->data, "host"))
			own_host = true;
		else if (h1_named(h->data, "accept-encoding"))
			own_encoding = true;
		else if (h1_named(h->data, "content-length") || h1_named(h->data, "transfer-encoding"))
			goto out;
	}
	if (!(head = malloc(cap)))
		goto out;
	size_t n = (size_t)snprintf(head, cap, "POST %s%s%s HTTP/1.1\r\n", path, query ? "?" : "",
				    query ? query : "");
	if (!own_host)
		n += (size_t)snprintf(head + n, cap - n, "Host: %s%s%s\r\n", host, port ? ":" : "",
				      port ? port : "");
	for (const struct curl_slist *h = headers; h; h = h->next) {
		const char *d = h->data;
		size_t dl = strlen(d);
		const char *sep = memchr(d, ':', dl);
		if (sep && !sep[1 + strspn(sep + 1, " \t")])
			continue; /* "Name:" with nothing after: not sent */
		if (!sep && dl && d[dl - 1] == ';') {
			n += (size_t)snprintf(head + n, cap - n, "%.*s:\r\n", (int)(dl - 1), d);
			continue;
		}
		if (!sep)
			continue;
		n += (size_t)snprintf(head + n, cap - n, "%s\r\n", d);
	}
	if (!own_encoding)
		n += (size_t)snprintf(head + n, cap - n, "Accept-Encoding: identity\r\n");
	*len = n;
out:
	curl_free(scheme);
	curl_free(user);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(u);
	return head;
}

