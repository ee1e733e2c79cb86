/* The answer decoder (coding.h) under arbitrary bytes and read
 * boundaries. The first byte picks the coding (bit 0: gzip or deflate)
 * and where the rest is cut in two (the other bits, scaled to its
 * length). Fed whole, in two pieces and byte by byte, the decoded bytes
 * and the result must be the same, and never more than the limit.
 * Aborts on any difference or broken invariant. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/coding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_OUT (256u << 10)

struct out {
	char *buf;
	size_t len;
};

static int sink(void *ud, const char *data, size_t len)
{
	struct out *o = ud;
	if (o->len + len > FUZZ_MAX_OUT)
		abort(); /* the limit is checked before the sink */
	memcpy(o->buf + o->len, data, len);
	o->len += len;
	return 0;
}

/* cut: 0 whole, SIZE_MAX byte by byte, else two pieces. */
static int run(const char *header, const uint8_t *in, size_t n, size_t cut, struct out *o)
{
	struct coding c;
	char err[128];
	coding_init(&c, FUZZ_MAX_OUT);
	if (coding_header(&c, header, strlen(header), false, err, sizeof err) != CODING_OK)
		abort();
	int rc = CODING_OK;
	if (cut == 0) {
		rc = coding_feed(&c, (const char *)in, n, sink, o);
	} else if (cut == SIZE_MAX) {
		for (size_t i = 0; i < n && rc == CODING_OK; i++)
			rc = coding_feed(&c, (const char *)in + i, 1, sink, o);
	} else {
		rc = coding_feed(&c, (const char *)in, cut, sink, o);
		if (rc == CODING_OK)
			rc = coding_feed(&c, (const char *)in + cut, n - cut, sink, o);
	}
	coding_free(&c);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *header = (data[0] & 1) ? "gzip" : "deflate";
	const uint8_t *in = data + 1;
	size_t n = size - 1;
	size_t cut = n ? 1 + (size_t)(data[0] >> 1) * (n - 1) / 127 : 0;
	struct out o[3];
	size_t cuts[3] = {0, cut, SIZE_MAX};
	int rc[3];
	for (int i = 0; i < 3; i++) {
		o[i].buf = malloc(FUZZ_MAX_OUT);
		o[i].len = 0;
		if (!o[i].buf)
			abort();
		rc[i] = run(header, in, n, cuts[i] == n ? 0 : cuts[i], &o[i]);
	}
	for (int i = 1; i < 3; i++) {
		if (rc[i] != rc[0] || o[i].len != o[0].len || memcmp(o[i].buf, o[0].buf, o[0].len) != 0) {
			fprintf(stderr, "fuzz_coding: cut %zu gave %d (%zu bytes), whole %d (%zu bytes)\n", cuts[i],
				rc[i], o[i].len, rc[0], o[0].len);
			abort();
		}
	}
	for (int i = 0; i < 3; i++)
		free(o[i].buf);
	return 0;
}
