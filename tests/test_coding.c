#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "infertop/coding.h"

static const char plain[] = "data: {\"choices\":[{\"delta\":{\"content\":\" tok\"}}]}\n\n"
			    "data: {\"choices\":[{\"delta\":{\"content\":\" tok\"}}]}\n\n"
			    "data: [DONE]\n\n";

/* plain compressed with zlib's windowBits (31 gzip, 15 zlib, -15 raw). */
static size_t squeeze(const char *in, size_t n, int bits, unsigned char *out, size_t cap)
{
	z_stream z = {0};
	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t got = cap - z.avail_out;
	deflateEnd(&z);
	return got;
}

struct sink {
	char buf[1 << 16];
	size_t len;
	size_t stop_after; /* 0: never */
	size_t calls;
};

static int sink_cb(void *ud, const char *data, size_t len)
{
	struct sink *s = ud;
	assert_true(s->len + len <= sizeof s->buf);
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	return s->stop_after && ++s->calls >= s->stop_after;
}

/* Decodes in (a body of the coding named by header), cut at `cut` (0:
 * whole; 1: byte by byte; else in two at cut). */
static int decode(const char *header, const unsigned char *in, size_t n, size_t cut, uint64_t max,
		  struct sink *s)
{
	struct coding c;
	char err[128];
	coding_init(&c, max);
	int rc = coding_header(&c, header, strlen(header), false, err, sizeof err);
	assert_int_equal(rc, CODING_OK);
	assert_true(c.on);
	memset(s, 0, sizeof *s);
	if (cut == 0) {
		rc = coding_feed(&c, (const char *)in, n, sink_cb, s);
	} else if (cut == 1) {
		for (size_t i = 0; i < n && rc == CODING_OK; i++)
			rc = coding_feed(&c, (const char *)in + i, 1, sink_cb, s);
	} else {
		rc = coding_feed(&c, (const char *)in, cut, sink_cb, s);
		if (rc == CODING_OK)
			rc = coding_feed(&c, (const char *)in + cut, n - cut, sink_cb, s);
	}
	coding_free(&c);
	return rc;
}

static void expect_plain(const char *header, const unsigned char *in, size_t n, const char *want, size_t want_len)
{
	struct sink s;
	for (size_t cut = 0; cut < n; cut++) {
		assert_int_equal(decode(header, in, n, cut, 1 << 20, &s), CODING_OK);
		assert_int_equal(s.len, want_len);
		assert_memory_equal(s.buf, want, want_len);
	}
}

static void test_headers(void **state)
{
	(void)state;
	struct coding c;
	char err[128];
	coding_init(&c, 100);
	assert_int_equal(coding_header(&c, " identity\r\n", 11, false, err, sizeof err), CODING_OK);
	assert_false(c.on);
	assert_int_equal(coding_header(&c, " chunked", 8, true, err, sizeof err), CODING_OK);
	assert_false(c.on);
	assert_int_equal(coding_header(&c, " br", 3, false, err, sizeof err), CODING_REFUSED);
	assert_string_equal(err, "unasked Content-Encoding: br");
	assert_int_equal(coding_header(&c, " chunked", 8, false, err, sizeof err), CODING_REFUSED);
	assert_int_equal(coding_header(&c, " gzip, chunked\r\n", 16, true, err, sizeof err), CODING_OK);
	assert_true(c.on);
	/* Stacked codings are not undone. */
	assert_int_equal(coding_header(&c, "deflate", 7, false, err, sizeof err), CODING_REFUSED);
	assert_string_equal(err, "a second Content-Encoding: deflate");
	coding_reset(&c);
	assert_false(c.on);
	assert_int_equal(coding_header(&c, "X-GZIP", 6, false, err, sizeof err), CODING_OK);
	assert_true(c.on);
	coding_free(&c);
}

/* gzip, zlib-wrapped deflate and raw deflate, cut anywhere. */
static void test_decodes(void **state)
{
	(void)state;
	unsigned char z[1024];
	size_t n = squeeze(plain, sizeof plain - 1, 31, z, sizeof z);
	expect_plain("gzip", z, n, plain, sizeof plain - 1);
	n = squeeze(plain, sizeof plain - 1, 15, z, sizeof z);
	expect_plain("deflate", z, n, plain, sizeof plain - 1);
	n = squeeze(plain, sizeof plain - 1, -15, z, sizeof z);
	expect_plain("deflate", z, n, plain, sizeof plain - 1);
	struct sink s;
	assert_int_equal(decode("deflate", z, n, 1, 1 << 20, &s), CODING_OK);
	assert_int_equal(s.len, sizeof plain - 1);
}

/* Every gzip member, as gunzip reads them (libcurl 7.88 fails the
 * second). */
static void test_gzip_members(void **state)
{
	(void)state;
	unsigned char z[2048];
	size_t half = 60;
	size_t n = squeeze(plain, half, 31, z, sizeof z);
	n += squeeze(plain + half, sizeof plain - 1 - half, 31, z + n, sizeof z - n);
	expect_plain("gzip", z, n, plain, sizeof plain - 1);
}

/* Bytes that are not the coding named; bytes after a deflate stream
 * that are none either. */
static void test_bad(void **state)
{
	(void)state;
	struct sink s;
	const unsigned char junk[] = "this is not compressed at all";
	assert_int_equal(decode("gzip", junk, sizeof junk - 1, 0, 1 << 20, &s), CODING_BAD);
	assert_int_equal(decode("deflate", junk, sizeof junk - 1, 0, 1 << 20, &s), CODING_BAD);
	unsigned char z[1024];
	size_t n = squeeze(plain, sizeof plain - 1, 31, z, sizeof z);
	memcpy(z + n, "garbage", 7);
	assert_int_equal(decode("gzip", z, n + 7, 0, 1 << 20, &s), CODING_BAD);
	assert_int_equal(s.len, sizeof plain - 1); /* the member before it was read */
}

/* A bomb: 4 MiB of one byte from a few KiB stops at the limit, whatever
 * the cut. */
static void test_oversize(void **state)
{
	(void)state;
	size_t big = 4u << 20;
	char *in = malloc(big);
	assert_non_null(in);
	memset(in, ' ', big);
	unsigned char *z = malloc(big);
	assert_non_null(z);
	size_t n = squeeze(in, big, 31, z, big);
	assert_true(n < 16384);
	struct sink s;
	assert_int_equal(decode("gzip", z, n, 0, 50000, &s), CODING_OVERSIZE);
	assert_true(s.len <= 50000);
	assert_int_equal(decode("gzip", z, n, 1, 50000, &s), CODING_OVERSIZE);
	assert_true(s.len <= 50000);
	free(in);
	free(z);
}

/* The sink stops it. */
static void test_sink_stops(void **state)
{
	(void)state;
	unsigned char z[1024];
	size_t n = squeeze(plain, sizeof plain - 1, 31, z, sizeof z);
	struct coding c;
	char err[64];
	coding_init(&c, 1 << 20);
	assert_int_equal(coding_header(&c, "gzip", 4, false, err, sizeof err), CODING_OK);
	struct sink s = {.stop_after = 1};
	assert_int_equal(coding_feed(&c, (const char *)z, n, sink_cb, &s), CODING_STOPPED);
	coding_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers),     cmocka_unit_test(test_decodes),  cmocka_unit_test(test_gzip_members),
		cmocka_unit_test(test_bad),         cmocka_unit_test(test_oversize), cmocka_unit_test(test_sink_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
