#include "config.h"

#include "infertop/coding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

enum { KIND_GZIP = 1, KIND_DEFLATE };

void coding_init(struct coding *c, uint64_t max_out)
{
	memset(c, 0, sizeof *c);
	c->max_out = max_out;
}

void coding_free(struct coding *c)
{
	if (c->z) {
		inflateEnd(c->z);
		free(c->z);
		c->z = NULL;
	}
	c->on = false;
}

void coding_reset(struct coding *c)
{
	c->on = false;
}

int coding_header(struct coding *c, const char *v, size_t len, bool transfer, char *err, size_t errcap)
{
	const char *what = transfer ? "Transfer-Encoding" : "Content-Encoding";
	for (size_t i = 0; i < len;) {
		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ',' || v[i] == '\r' || v[i] == '\n'))
			i++;
		size_t j = i;
		while (j < len && v[j] != ',' && v[j] != ' ' && v[j] != '\t' && v[j] != '\r' && v[j] != '\n')
			j++;
		const char *w = v + i;
		size_t n = j - i;
		i = j;
		if (!n || (n == 8 && strncasecmp(w, "identity", 8) == 0) ||
		    (transfer && n == 7 && strncasecmp(w, "chunked", 7) == 0))
			continue;
		int kind = (n == 4 && strncasecmp(w, "gzip", 4) == 0) || (n == 6 && strncasecmp(w, "x-gzip", 6) == 0)
				   ? KIND_GZIP
			   : n == 7 && strncasecmp(w, "deflate", 7) == 0 ? KIND_DEFLATE
									  : 0;
		if (!kind || c->on) {
			snprintf(err, errcap, "%s %s: %.*s", kind ? "a second" : "unasked", what, (int)(n > 40 ? 40 : n),
				 w);
			return CODING_REFUSED;
		}
		if (!c->z) {
			if (!(c->z = calloc(1, sizeof *c->z)) || inflateInit2(c->z, 15 + 32) != Z_OK) {
				free(c->z);
				c->z = NULL;
				snprintf(err, errcap, "out of memory for a compressed answer");
				return CODING_NOMEM;
			}
		} else {
			inflateReset2(c->z, 15 + 32); /* zlib or gzip, by its header */
		}
		c->kind = (uint8_t)kind;
		c->raw = false;
		c->head_n = 0;
		c->out = 0;
		c->on = true;
	}
	return CODING_OK;
}

/* Whether two bytes start a zlib stream (RFC 1950: deflate, a window of
 * at most 32 KiB, the check bits). */
static bool coding_zlib_head(const unsigned char *h)
{
	return (h[0] & 0x0f) == 8 && (h[0] >> 4) <= 7 && ((unsigned)h[0] << 8 | h[1]) % 31 == 0;
}

static int coding_inflate(struct coding *c, const char *in, size_t n,
			  int (*sink)(void *ud, const char *data, size_t len), void *ud)
{
	z_stream *z = c->z;
	char out[16384];
	z->next_in = (Bytef *)(uintptr_t)in;
	z->avail_in = (uInt)n;
	/* Until the input is used up and inflate has no more to give (an
	 * output buffer it filled may leave more behind, with no input
	 * left to come back for it). */
	while (n) {
		z->next_out = (Bytef *)out;
		z->avail_out = sizeof out;
		int zr = inflate(z, Z_NO_FLUSH);
		size_t got = sizeof out - z->avail_out;
		if (got) {
			/* Up to the limit exactly, however the input was cut. */
			bool over = got > c->max_out - c->out;
			if (over)
				got = (size_t)(c->max_out - c->out);
			c->out += got;
			if (got && sink(ud, out, got))
				return CODING_STOPPED;
			if (over)
				return CODING_OVERSIZE;
		}
		if (zr == Z_STREAM_END) {
			/* The next member (gzip), or stream, starts afresh. */
			inflateReset(z);
			if (!z->avail_in)
				break;
			continue;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return CODING_BAD;
		if ((zr == Z_BUF_ERROR && !got) || (!z->avail_in && z->avail_out))
			break;
	}
	return CODING_OK;
}

int coding_feed(struct coding *c, const char *in, size_t n, int (*sink)(void *ud, const char *data, size_t len),
		void *ud)
{
	/* "deflate" comes with its zlib wrapper or without (raw), as libcurl
	 * takes it: the first two bytes say which, before any is inflated. */
	if (c->kind == KIND_DEFLATE && c->head_n < sizeof c->head) {
		while (c->head_n < sizeof c->head && n) {
			c->head[c->head_n++] = (unsigned char)*in++;
			n--;
		}
		if (c->head_n < sizeof c->head)
			return CODING_OK;
		if (!coding_zlib_head(c->head)) {
			inflateReset2(c->z, -15);
			c->raw = true;
		}
		int rc = coding_inflate(c, (const char *)c->head, sizeof c->head, sink, ud);
		if (rc != CODING_OK || !n)
			return rc;
	}
	return coding_inflate(c, in, n, sink, ud);
}
