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

/* 2^40 bytes: no answer of ours comes near, and the sum cannot overflow. */
#define H1_CHUNK_DIGITS_MAX 10

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
	p->chunk_ext = false;
	p->head_only = head;
	p->saw_close = p->saw_keep_alive = false;
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
	p->minor = l[7] - '0';
	p->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return 0;
}

static int h1_header_line(struct h1_parser *p, size_t len)
{
	const char *l = p->line;
	if (l[0] == ' ' || l[0] == '\t')
		return h1_fail(p, "folded header line");
	const char *colon = memchr(l, ':', len);
	if (!colon || colon == l)
		return h1_fail(p, "header line without a name");
	size_t nlen = (size_t)(colon - l);
	const char *v = colon + 1;
	size_t vlen = len - nlen - 1;
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (nlen == 14 && strncasecmp(l, "content-length", 14) == 0) {
		if (!vlen || vlen > 15)
			return h1_fail(p, "bad Content-Length");
		int64_t cl = 0;
		for (size_t i = 0; i < vlen; i++) {
			if (v[i] < '0' || v[i] > '9')
				return h1_fail(p, "bad Content-Length");
			cl = cl * 10 + (v[i] - '0');
		}
		if (p->content_length >= 0 && p->content_length != cl)
			return h1_fail(p, "two different Content-Length headers");
		/* After a Transfer-Encoding other than chunked (-2) the
		 * length is the close's, whichever header came first. */
		if (p->content_length != -2)
			p->content_length = cl;
	} else if (nlen == 17 && strncasecmp(l, "transfer-encoding", 17) == 0) {
		/* Chunked only when it is the last coding; any other framing
		 * runs to the close (RFC 9112 6.3). */
		p->chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0 &&
			     (vlen == 7 || v[vlen - 8] == ',' || v[vlen - 8] == ' ' || v[vlen - 8] == '\t');
		if (!p->chunked)
			p->content_length = -2;
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
	if (p->status == 101)
		return h1_fail(p, "the server switched protocols unasked");
	if (p->status < 200) {
		/* An interim answer (100 Continue, 103 Early Hints): the final
		 * one follows with headers of its own. status is that one's
		 * (h1.h: 0 until read), so an answer cut after the interim
		 * one has none. */
		p->status = 0;
		p->content_length = -1;
		p->chunked = p->saw_close = p->saw_keep_alive = false;
		p->state = S_STATUS;
		return 0;
	}
	p->headers_done = true;
	p->keep_alive = p->minor >= 1 ? !p->saw_close : (p->saw_keep_alive && !p->saw_close);
	if (p->head_only || p->status == 204 || p->status == 304) {
		p->state = S_DONE;
	} else if (p->chunked) {
		p->content_length = -1;
		p->state = S_CHUNK_SIZE;
	} else if (p->content_length >= 0) {
		p->chunk_left = (uint64_t)p->content_length;
		p->state = p->chunk_left ? S_BODY_LEN : S_DONE;
	} else {
		p->content_length = -1;
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
				if (len == 0 && p->header_bytes <= 2)
					break; /* a stray line end before the answer */
				if (h1_status_line(p, len) < 0) {
					rc = H1_ERROR;
					goto out;
				}
				p->state = S_HEADER;
				if (p->status >= 200 && cb->on_status && cb->on_status(ud, p->status)) {
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
				if (p->status >= 200 && cb->on_header && cb->on_header(ud, p->line, len)) {
					rc = H1_STOPPED;
					goto out;
				}
			} else if (len == 0) {
				p->state = S_DONE;
			}
			break;
		}
		case S_CHUNK_SIZE: {
			/* The common case, a whole "hex\r\n" in this read, in one go:
			 * every token of a stream is a chunk of its own. */
			if (!p->chunk_digits && !p->chunk_ext) {
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
			char c = buf[i++];
			if (c == '\n') {
				if (!p->chunk_digits) {
					rc = h1_fail(p, "chunk without a size");
					goto out;
				}
				p->chunk_digits = 0;
				p->chunk_ext = false;
				p->state = p->chunk_left ? S_CHUNK_DATA : S_TRAILER;
			} else if (p->chunk_ext) {
				/* an extension or the line end: read and dropped */
			} else if (c == ';' || c == ' ' || c == '\t' || c == '\r') {
				/* A bare CR counts as a space (RFC 9112 2.2): it
				 * ends the size, "1\r0" is not 0x10. */
				p->chunk_ext = true;
			} else {
				int d = h1_hex(c);
				if (d < 0 || p->chunk_digits >= H1_CHUNK_DIGITS_MAX) {
					rc = h1_fail(p, "bad chunk size");
					goto out;
				}
				p->chunk_left = p->chunk_left * 16 + (uint64_t)d;
				p->chunk_digits++;
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
			if (i + 1 < n && buf[i] == '\r' && buf[i + 1] == '\n') {
				i += 2;
				p->state = S_CHUNK_SIZE;
				break;
			}
			char c = buf[i++];
			if (c == '\n') {
				p->state = S_CHUNK_SIZE;
			} else if (c != '\r') {
				rc = h1_fail(p, "chunk data longer than its size");
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

char *h1_request_head(const char *url, const struct curl_slist *headers, size_t *len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *user = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
	char *head = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || strcmp(scheme, "http") != 0 ||
	    curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		goto out;
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	curl_url_get(u, CURLUPART_QUERY, &query, 0);
	/* A header given with no value ("Name:") is not sent, and drops the
	 * request's own of that name, as libcurl does with its own. */
	bool own_host = false, own_encoding = false;
	size_t cap = strlen(host) + strlen(path) + (query ? strlen(query) : 0) + 128;
	for (const struct curl_slist *h = headers; h; h = h->next) {
		cap += strlen(h->data) + 2;
		if (strncasecmp(h->data, "host:", 5) == 0)
			own_host = true;
		else if (strncasecmp(h->data, "accept-encoding:", 16) == 0)
			own_encoding = true;
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

