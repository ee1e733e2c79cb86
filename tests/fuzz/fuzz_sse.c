/* SSE parser under arbitrary bytes and arbitrary read boundaries. The first
 * three bytes pick max_event_bytes and how the rest is cut into feeds;
 * however it is cut, the events (and counters) must equal those of one
 * whole feed, and memory must stay bounded. Aborts on any difference. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ev_rec {
	enum sse_kind kind;
	size_t off; /* into the log's byte store */
	size_t len;
	char name[SSE_NAME_MAX];
	size_t name_len;
};

struct log {
	struct ev_rec *v;
	size_t n, cap;
	char *bytes;
	size_t blen, bcap;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

static int log_cb(void *ud, const struct sse_event *ev)
{
	struct log *l = ud;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = xrealloc(l->v, l->cap * sizeof *l->v);
	}
	if (l->blen + ev->len > l->bcap) {
		while (l->blen + ev->len > l->bcap)
			l->bcap = l->bcap ? 2 * l->bcap : 4096;
		l->bytes = xrealloc(l->bytes, l->bcap);
	}
	if ((ev->kind == SSE_DATA || ev->kind == SSE_DONE) && !ev->data)
		abort();
	if (ev->kind == SSE_OVERSIZE && (ev->data || ev->len))
		abort();
	if (ev->name_len >= SSE_NAME_MAX || (ev->name == NULL) != (ev->name_len == 0))
		abort();
	if (ev->kind == SSE_DONE && (ev->len != 6 || memcmp(ev->data, "[DONE]", 6) != 0))
		abort();
	struct ev_rec *e = &l->v[l->n++];
	e->kind = ev->kind;
	e->off = l->blen;
	e->len = ev->len;
	if (ev->len)
		memcpy(l->bytes + l->blen, ev->data, ev->len);
	l->blen += ev->len;
	e->name_len = ev->name_len;
	if (ev->name_len)
		memcpy(e->name, ev->name, ev->name_len);
	return 0;
}

static void log_same(const struct log *a, const struct log *b, const char *how)
{
	int same = a->n == b->n;
	for (size_t i = 0; same && i < a->n; i++) {
		const struct ev_rec *x = &a->v[i], *y = &b->v[i];
		same = x->kind == y->kind && x->len == y->len &&
		       (x->len == 0 || memcmp(a->bytes + x->off, b->bytes + y->off, x->len) == 0) &&
		       x->name_len == y->name_len && memcmp(x->name, y->name, x->name_len) == 0;
	}
	if (!same) {
		fprintf(stderr, "fuzz_sse: %s feeding differs from whole feeding\n", how);
		abort();
	}
}

static void counters_same(const struct sse_parser *a, const struct sse_parser *b)
{
	if (a->events != b->events || a->comments != b->comments || a->oversize != b->oversize)
		abort();
}

static void check_bounds(const struct sse_parser *p)
{
	if (p->cap > 2 * p->max + 2 || p->dlen > p->max || p->llen > p->max)
		abort();
}

static void log_free(struct log *l)
{
	free(l->v);
	free(l->bytes);
	memset(l, 0, sizeof *l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	/* Small limits so oversize handling is exercised; 0 = the default. */
	size_t max = data[0] == 0 ? 0 : (size_t)data[0] * 2;
	uint32_t seed = (uint32_t)data[1] << 8 | data[2];
	const char *buf = (const char *)data + 3;
	size_t len = size - 3;

	struct sse_parser p, q;
	struct log whole = { 0 }, cut = { 0 };
	if (sse_init(&p, max) != 0 || sse_init(&q, max) != 0)
		abort();

	if (sse_feed(&p, buf, len, log_cb, &whole) != 0)
		abort();
	check_bounds(&p);

	/* Two feeds. */
	size_t at = len ? seed % (len + 1) : 0;
	if (sse_feed(&q, buf, at, log_cb, &cut) != 0 ||
	    sse_feed(&q, buf + at, len - at, log_cb, &cut) != 0)
		abort();
	check_bounds(&q);
	log_same(&whole, &cut, "two-piece");
	counters_same(&p, &q);

	/* Pieces of pseudo-random sizes, each copied to an exact-size heap
	 * block so ASan sees any read past the end of a feed. */
	log_free(&cut);
	sse_reset(&q);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t pos = 0; pos < len;) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		size_t n = 1 + x % ((x >> 24) & 1 ? 7 : 300);
		if (n > len - pos)
			n = len - pos;
		char *piece = xrealloc(NULL, n);
		memcpy(piece, buf + pos, n);
		if (sse_feed(&q, piece, n, log_cb, &cut) != 0)
			abort();
		free(piece);
		check_bounds(&q);
		pos += n;
	}
	log_same(&whole, &cut, "random-piece");
	counters_same(&p, &q);

	/* Byte by byte, where it stays cheap. */
	if (len <= 4096) {
		log_free(&cut);
		sse_reset(&q);
		for (size_t pos = 0; pos < len; pos++) {
			char c = buf[pos];
			if (sse_feed(&q, &c, 1, log_cb, &cut) != 0)
				abort();
		}
		log_same(&whole, &cut, "byte-by-byte");
		counters_same(&p, &q);
	}

	log_free(&whole);
	log_free(&cut);
	sse_free(&p);
	sse_free(&q);
	return 0;
}
