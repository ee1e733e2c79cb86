#ifndef INFERTOP_CODING_H
#define INFERTOP_CODING_H

/* An answer's content codings undone, for both request paths (request.c):
 * the request asks for identity (a compressor would hold tokens back),
 * but a server may compress anyway. gzip (every member of it, as gunzip
 * reads it) and deflate (with or without its zlib wrapper, as libcurl
 * takes it) are decoded, from a Content-Encoding or a Transfer-Encoding
 * header; any other coding is refused by name, as are two stacked. What
 * an answer decodes to is bounded (max_out): a small answer must not cost
 * the event loop seconds of inflating gigabytes.
 *
 * Bytes in, decoded bytes to a sink; anything may be split anywhere. No
 * I/O, no clock; zlib's state is allocated at the first coding. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum coding_result {
	CODING_OK = 0,
	CODING_REFUSED = -1,  /* a coding not decoded, or a second one */
	CODING_BAD = -2,      /* the bytes do not decode */
	CODING_OVERSIZE = -3, /* they decode to more than max_out */
	CODING_NOMEM = -4,
	CODING_STOPPED = -5,  /* the sink returned nonzero */
};

struct coding {
	struct z_stream_s *z;
	uint64_t max_out;
	uint64_t out;                  /* bytes decoded so far */
	bool on;                       /* decoding this answer */
	uint8_t kind;                  /* gzip or deflate */
	bool raw;                      /* deflate without its zlib wrapper */
	uint8_t head_n;
	unsigned char head[2];         /* a deflate stream's first bytes: zlib's or raw? */
};

void coding_init(struct coding *c, uint64_t max_out);
void coding_free(struct coding *c);
/* Before each answer: no coding. */
void coding_reset(struct coding *c);
/* A header's value: "gzip", "deflate, chunked", ... ("identity", and
 * "chunked" when transfer is set, are no codings). CODING_OK, or
 * CODING_REFUSED / CODING_NOMEM with why in err. */
int coding_header(struct coding *c, const char *value, size_t len, bool transfer, char *err, size_t errcap);
/* Decodes n bytes of the answer's body into sink (ud, data, len). Past
 * the limit: the bytes up to it, then CODING_OVERSIZE. */
int coding_feed(struct coding *c, const char *in, size_t n, int (*sink)(void *ud, const char *data, size_t len),
		void *ud);

#endif
