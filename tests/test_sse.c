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

#include "infertop/sse.h"

static const char *const fixtures[] = {
	"chat_stream.txt",
	"clean_chat_stream.txt",
	"completions_stream.txt",
};
#define N_FIXTURES (sizeof fixtures / sizeof fixtures[0])

/* ---- event recording ---- */

struct ev_rec {
	enum sse_kind kind;
	char *data;
	size_t len;
	char name[SSE_NAME_MAX];
	size_t name_len;
};

struct rec {
	struct ev_rec *v;
	size_t n, cap;
	/* Where the caller's buffer lies, to see zero-copy events. */
	const char *lo, *hi;
	size_t in_caller;
};

static int rec_cb(void *ud, const struct sse_event *ev)
{
	struct rec *r = ud;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->v = realloc(r->v, r->cap * sizeof *r->v);
		assert_non_null(r->v);
	}
	struct ev_rec *e = &r->v[r->n++];
	e->kind = ev->kind;
	e->len = ev->len;
	e->data = malloc(ev->len + 1);
	assert_non_null(e->data);
	if (ev->len) {
		assert_non_null(ev->data);
		memcpy(e->data, ev->data, ev->len);
	}
	e->data[ev->len] = '\0';
	assert_true(ev->name_len < SSE_NAME_MAX);
	assert_true((ev->name == NULL) == (ev->name_len == 0));
	if (ev->name_len)
		memcpy(e->name, ev->name, ev->name_len);
	e->name[ev->name_len] = '\0';
	e->name_len = ev->name_len;
	if (ev->data && r->lo && ev->data >= r->lo && ev->data < r->hi)
		r->in_caller++;
	return 0;
}

static void rec_free(struct rec *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].data);
	free(r->v);
	memset(r, 0, sizeof *r);
}

/* Compares events as they arrive against a recorded sequence, without
 * allocating, so the every-split-point loops stay fast. */
struct chk {
	const struct rec *want;
	size_t i;
	size_t bad_at; /* first mismatching event + 1, or 0 */
};

static int chk_cb(void *ud, const struct sse_event *ev)
{
	struct chk *c = ud;
	const struct ev_rec *w = c->i < c->want->n ? &c->want->v[c->i] : NULL;
	bool same = w && w->kind == ev->kind && w->len == ev->len &&
		    (ev->len == 0 || memcmp(w->data, ev->data, ev->len) == 0) &&
		    w->name_len == ev->name_len &&
		    (ev->name_len == 0 || memcmp(w->name, ev->name, ev->name_len) == 0);
	if (!same && !c->bad_at)
		c->bad_at = c->i + 1;
	c->i++;
	return 0;
}

/* Exactly the file's size, no NUL after it (unlike testutil_fixture), so
 * ASan reports a parser read one byte past the caller's buffer. */
static char *load_fixture(const char *name, size_t *len)
{
	const char *dir = getenv("INFERTOP_FIXTURES");
	char path[4096];
	snprintf(path, sizeof path, "%s/llamacpp/%s", dir ? dir : "tests/fixtures", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open fixture %s (set INFERTOP_FIXTURES)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	char *b = malloc((size_t)n);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* The fixture with every "\n" replaced by `eol`. */
static char *convert_eol(const char *s, size_t len, const char *eol, size_t *out_len)
{
	size_t el = strlen(eol), n = 0;
	char *o = malloc(len * el + 1);
	assert_non_null(o);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\n') {
			memcpy(o + n, eol, el);
			n += el;
		} else {
			o[n++] = s[i];
		}
	}
	*out_len = n;
	return o;
}

static void feed_whole(const char *buf, size_t len, size_t max, struct rec *r)
{
	struct sse_parser p;
	assert_int_equal(sse_init(&p, max), 0);
	r->lo = buf;
	r->hi = buf + len;
	assert_int_equal(sse_feed(&p, buf, len, rec_cb, r), 0);
	sse_free(&p);
}

/* Feeds buf in pieces whose sizes come from next_size(). */
static void feed_pieces(struct sse_parser *p, const char *buf, size_t len,
			size_t (*next_size)(void *), void *state, sse_event_fn fn, void *ud)
{
	size_t pos = 0;
	while (pos < len) {
		size_t n = next_size(state);
		if (n > len - pos)
			n = len - pos;
		assert_int_equal(sse_feed(p, buf + pos, n, fn, ud), 0);
		pos += n;
	}
}

static size_t size_one(void *state)
{
	(void)state;
	return 1;
}

static size_t size_random(void *state)
{
	uint64_t *x = state;
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	uint64_t r = *x;
	/* Mostly small pieces, sometimes large ones. */
	return (r & 7) == 0 ? 1 + (size_t)(r >> 8) % 4096 : 1 + (size_t)(r >> 8) % 97;
}

static void check_split_invariance(const char *buf, size_t len, size_t max, const struct rec *want)
{
	struct sse_parser p;
	assert_int_equal(sse_init(&p, max), 0);

	for (size_t at = 0; at <= len; at++) {
		struct chk c = { .want = want };
		sse_reset(&p);
		assert_int_equal(sse_feed(&p, buf, at, chk_cb, &c), 0);
		assert_int_equal(sse_feed(&p, buf + at, len - at, chk_cb, &c), 0);
		if (c.bad_at || c.i != want->n)
			fail_msg("split at %zu: event %zu differs (got %zu events, want %zu)", at,
				 c.bad_at, c.i, want->n);
	}

	struct chk c1 = { .want = want };
	sse_reset(&p);
	feed_pieces(&p, buf, len, size_one, NULL, chk_cb, &c1);
	assert_int_equal(c1.bad_at, 0);
	assert_int_equal(c1.i, want->n);

	for (uint64_t seed = 1; seed <= 200; seed++) {
		uint64_t st = seed * 0x9E3779B97F4A7C15ULL;
		struct chk c = { .want = want };
		sse_reset(&p);
		feed_pieces(&p, buf, len, size_random, &st, chk_cb, &c);
		if (c.bad_at || c.i != want->n)
			fail_msg("random pieces seed %llu: event %zu differs", (unsigned long long)seed,
				 c.bad_at);
	}
	sse_free(&p);
}

/* The data lines of a fixture, found without the parser: every line that
 * starts with "data: ". */
static size_t fixture_data_lines(const char *buf, size_t len, const char ***lines, size_t **lens)
{
	size_t n = 0, cap = 64;
	*lines = malloc(cap * sizeof **lines);
	*lens = malloc(cap * sizeof **lens);
	assert_true(*lines && *lens);
	size_t pos = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - buf) : len;
		if (end - pos >= 6 && memcmp(buf + pos, "data: ", 6) == 0) {
			if (n == cap) {
				cap *= 2;
				*lines = realloc(*lines, cap * sizeof **lines);
				*lens = realloc(*lens, cap * sizeof **lens);
				assert_true(*lines && *lens);
			}
			(*lines)[n] = buf + pos + 6;
			(*lens)[n] = end - pos - 6;
			n++;
		}
		pos = end + 1;
	}
	return n;
}

/* ---- tests ---- */

static void test_fixtures_whole(void **state)
{
	(void)state;
	for (size_t k = 0; k < N_FIXTURES; k++) {
		size_t len;
		char *buf = load_fixture(fixtures[k], &len);
		const char **lines;
		size_t *lens;
		size_t nlines = fixture_data_lines(buf, len, &lines, &lens);
		assert_true(nlines > 2);

		struct rec r = { 0 };
		struct sse_parser p;
		assert_int_equal(sse_init(&p, 0), 0);
		r.lo = buf;
		r.hi = buf + len;
		assert_int_equal(sse_feed(&p, buf, len, rec_cb, &r), 0);
		assert_int_equal(r.n, nlines);
		assert_int_equal(p.events, nlines);
		assert_int_equal(p.comments, 0);
		assert_int_equal(p.oversize, 0);
		for (size_t i = 0; i < r.n; i++) {
			assert_int_equal(r.v[i].kind, i + 1 == r.n ? SSE_DONE : SSE_DATA);
			assert_int_equal(r.v[i].len, lens[i]);
			assert_memory_equal(r.v[i].data, lines[i], lens[i]);
			assert_int_equal(r.v[i].name_len, 0);
		}
		assert_string_equal(r.v[r.n - 1].data, "[DONE]");
		/* Whole buffer, one line per event: nothing needed copying. */
		assert_int_equal(r.in_caller, r.n);
		assert_int_equal(p.cap, 0);
		sse_free(&p);
		rec_free(&r);
		free(lines);
		free(lens);
		free(buf);
	}
}

static void test_fixtures_split(void **state)
{
	(void)state;
	static const char *const eols[] = { "\n", "\r\n", "\r" };
	for (size_t k = 0; k < N_FIXTURES; k++) {
		size_t len;
		char *buf = load_fixture(fixtures[k], &len);
		struct rec want = { 0 };
		feed_whole(buf, len, 0, &want);
		for (size_t e = 0; e < 3; e++) {
			size_t clen;
			char *conv = convert_eol(buf, len, eols[e], &clen);
			struct rec got = { 0 };
			feed_whole(conv, clen, 0, &got);
			assert_int_equal(got.n, want.n);
			for (size_t i = 0; i < want.n; i++) {
				assert_int_equal(got.v[i].kind, want.v[i].kind);
				assert_int_equal(got.v[i].len, want.v[i].len);
				assert_memory_equal(got.v[i].data, want.v[i].data, want.v[i].len);
			}
			check_split_invariance(conv, clen, 0, &want);
			rec_free(&got);
			free(conv);
		}
		rec_free(&want);
		free(buf);
	}
}

static void test_buffer_reuse(void **state)
{
	(void)state;
	size_t len;
	char *buf = load_fixture("chat_stream.txt", &len);
	struct sse_parser p;
	assert_int_equal(sse_init(&p, 0), 0);
	struct rec r = { 0 };
	feed_pieces(&p, buf, len, size_one, NULL, rec_cb, &r);
	size_t cap = p.cap;
	char *mem = p.buf;
	assert_true(cap > 0);
	assert_non_null(mem);
	uint64_t events = p.events;
	assert_int_equal(events, r.n);
	for (int round = 0; round < 3; round++) {
		sse_reset(&p);
		assert_int_equal(p.events, 0);
		rec_free(&r);
		feed_pieces(&p, buf, len, size_one, NULL, rec_cb, &r);
		assert_int_equal(p.events, events);
		assert_int_equal(p.cap, cap);
		assert_ptr_equal(p.buf, mem);
		uint64_t st = 42 + (uint64_t)round;
		sse_reset(&p);
		feed_pieces(&p, buf, len, size_random, &st, rec_cb, &r);
		assert_int_equal(p.cap, cap);
	}
	sse_free(&p);
	assert_null(p.buf);
	assert_int_equal(p.cap, 0);
	rec_free(&r);
	free(buf);
}

/* Feeds a literal whole and checks split invariance too. */
static void parse_lit(const char *s, size_t max, struct rec *r, struct sse_parser *counters)
{
	size_t len = strlen(s);
	struct sse_parser p;
	assert_int_equal(sse_init(&p, max), 0);
	assert_int_equal(sse_feed(&p, s, len, rec_cb, r), 0);
	if (counters)
		*counters = p;
	sse_free(&p);
	check_split_invariance(s, len, max, r);
}

static void test_comments_and_fields(void **state)
{
	(void)state;
	struct rec r = { 0 };
	struct sse_parser p;
	parse_lit(": keep-alive\n\n:\ndata: a\n: inside\nid: 7\nretry: 100\nfoo: bar\n\n"
		  "id: 8\nretry: 5\n\n",
		  0, &r, &p);
	assert_int_equal(p.comments, 3);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.v[0].kind, SSE_DATA);
	assert_string_equal(r.v[0].data, "a");
	rec_free(&r);

	/* One optional space only; no space is fine too. */
	parse_lit("data:x\n\ndata:  two\n\ndata: \n\n", 0, &r, NULL);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.v[0].data, "x");
	assert_string_equal(r.v[1].data, " two");
	assert_int_equal(r.v[2].len, 0);
	rec_free(&r);
}

static void test_multiline(void **state)
{
	(void)state;
	struct rec r = { 0 };
	parse_lit("data: a\ndata: b\ndata\ndata:c\n\ndata: [DONE]\ndata: x\n\n", 0, &r, NULL);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_DATA);
	assert_string_equal(r.v[0].data, "a\nb\n\nc");
	/* [DONE] only when it is the whole data. */
	assert_int_equal(r.v[1].kind, SSE_DATA);
	assert_string_equal(r.v[1].data, "[DONE]\nx");
	rec_free(&r);
}

static void test_data_without_colon(void **state)
{
	(void)state;
	struct rec r = { 0 };
	parse_lit("data\n\nevent\ndata\n\n", 0, &r, NULL);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_DATA);
	assert_int_equal(r.v[0].len, 0);
	assert_int_equal(r.v[1].len, 0);
	assert_int_equal(r.v[1].name_len, 0);
	rec_free(&r);
}

static void test_event_names(void **state)
{
	(void)state;
	struct rec r = { 0 };
	parse_lit("event: message\ndata: one\n\ndata: two\n\nevent: error\nevent: ping\n\n"
		  "data: three\nevent: late\n\n",
		  0, &r, NULL);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.v[0].name, "message");
	assert_string_equal(r.v[0].data, "one");
	/* Names do not leak into the next event, not even from an event
	 * without data. */
	assert_int_equal(r.v[1].name_len, 0);
	assert_string_equal(r.v[1].data, "two");
	assert_string_equal(r.v[2].name, "late");
	rec_free(&r);

	char longname[200] = "event: ";
	memset(longname + 7, 'n', 150);
	strcpy(longname + 157, "\ndata: x\n\n");
	parse_lit(longname, 0, &r, NULL);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.v[0].name_len, SSE_NAME_MAX - 1);
	rec_free(&r);
}

static void test_error_field(void **state)
{
	(void)state;
	struct rec r = { 0 };
	parse_lit("data: {\"a\":1}\n\nerror: model crashed\n\nerror\n\ndata: [DONE]\n\n", 0, &r,
		  NULL);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.v[0].kind, SSE_DATA);
	assert_int_equal(r.v[1].kind, SSE_ERROR_FIELD);
	assert_string_equal(r.v[1].data, "model crashed");
	assert_int_equal(r.v[2].kind, SSE_ERROR_FIELD);
	assert_int_equal(r.v[2].len, 0);
	assert_int_equal(r.v[3].kind, SSE_DONE);
	rec_free(&r);

	/* Reported at once, before the event it sits in is dispatched. */
	parse_lit("data: a\nerror: e\ndata: b\n\n", 0, &r, NULL);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_ERROR_FIELD);
	assert_string_equal(r.v[0].data, "e");
	assert_string_equal(r.v[1].data, "a\nb");
	rec_free(&r);
}

static void test_oversize(void **state)
{
	(void)state;
	char big[400];
	struct rec r = { 0 };
	struct sse_parser p;

	/* One long data line, then a normal event. */
	memset(big, 0, sizeof big);
	strcpy(big, "data: ");
	memset(big + 6, 'x', 100);
	strcat(big, "\n\ndata: ok\n\n");
	parse_lit(big, 64, &r, &p);
	assert_int_equal(p.oversize, 1);
	assert_int_equal(p.events, 1);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_OVERSIZE);
	assert_int_equal(r.v[0].len, 0);
	assert_int_equal(r.v[1].kind, SSE_DATA);
	assert_string_equal(r.v[1].data, "ok");
	rec_free(&r);

	/* Lines that fit, joined data that does not; the rest of the event
	 * (even an error line) is dropped up to the blank line. */
	memset(big, 0, sizeof big);
	for (int i = 0; i < 3; i++) {
		strcat(big, "data: ");
		memset(big + strlen(big), 'y', 30);
		strcat(big, "\n");
	}
	strcat(big, "error: hidden\n\ndata: [DONE]\n\n");
	parse_lit(big, 64, &r, &p);
	assert_int_equal(p.oversize, 1);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_OVERSIZE);
	assert_int_equal(r.v[1].kind, SSE_DONE);
	rec_free(&r);

	/* A long comment counts as a long line; a long unterminated tail is
	 * reported once and memory stays bounded. */
	memset(big, 0, sizeof big);
	big[0] = ':';
	memset(big + 1, 'c', 200);
	strcat(big, "\n\ndata: 1\n\ndata: ");
	memset(big + strlen(big), 'z', 150);
	parse_lit(big, 64, &r, &p);
	assert_int_equal(p.oversize, 2);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.v[0].kind, SSE_OVERSIZE);
	assert_string_equal(r.v[1].data, "1");
	assert_int_equal(r.v[2].kind, SSE_OVERSIZE);
	rec_free(&r);

	/* Exactly max bytes of data fits. */
	memset(big, 0, sizeof big);
	strcpy(big, "data:");
	memset(big + 5, 'w', 59);
	strcat(big, "\n\n");
	parse_lit(big, 64, &r, &p);
	assert_int_equal(p.oversize, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.v[0].len, 59);
	rec_free(&r);

	/* Joined data of exactly max bytes fits, one more does not. */
	memset(big, 0, sizeof big);
	strcpy(big, "data: ");
	memset(big + 6, 'a', 40);
	strcat(big, "\ndata: ");
	memset(big + strlen(big), 'b', 23);
	strcat(big, "\n\ndata: ");
	memset(big + strlen(big), 'c', 40);
	strcat(big, "\ndata: ");
	memset(big + strlen(big), 'd', 24);
	strcat(big, "\n\n");
	parse_lit(big, 64, &r, &p);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_DATA);
	assert_int_equal(r.v[0].len, 64);
	assert_int_equal(r.v[1].kind, SSE_OVERSIZE);
	assert_int_equal(p.oversize, 1);
	rec_free(&r);

	/* Bounded memory when a stream never ends its line. */
	assert_int_equal(sse_init(&p, 1024), 0);
	char chunk[1000];
	memset(chunk, 'q', sizeof chunk);
	assert_int_equal(sse_feed(&p, "data: ", 6, rec_cb, &r), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(sse_feed(&p, chunk, sizeof chunk, rec_cb, &r), 0);
	assert_true(p.cap <= 2 * 1024 + 2);
	assert_int_equal(p.oversize, 1);
	assert_int_equal(sse_feed(&p, "\n\ndata: after\n\n", 15, rec_cb, &r), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.v[0].kind, SSE_OVERSIZE);
	assert_string_equal(r.v[1].data, "after");
	sse_free(&p);
	rec_free(&r);
}

static void test_line_ends(void **state)
{
	(void)state;
	struct rec r = { 0 };
	/* \r at the end of one feed, \n at the start of the next: one line end. */
	struct sse_parser p;
	assert_int_equal(sse_init(&p, 0), 0);
	assert_int_equal(sse_feed(&p, "data: x\r", 8, rec_cb, &r), 0);
	assert_int_equal(sse_feed(&p, "\n", 1, rec_cb, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(sse_feed(&p, "\r", 1, rec_cb, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(sse_feed(&p, "\ndata: y\r\r", 10, rec_cb, &r), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.v[1].data, "y");
	sse_free(&p);
	rec_free(&r);

	/* "\r\n" is one line end, also between the lines of one event. */
	parse_lit("data: a\r\ndata: b\r\n\r\nevent: e\r\ndata: c\r\n\r\n", 0, &r, NULL);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.v[0].data, "a\nb");
	assert_string_equal(r.v[1].data, "c");
	assert_string_equal(r.v[1].name, "e");
	rec_free(&r);

	parse_lit("data: a\r\rdata: b\r\n\r\ndata: c\n\r\n\n", 0, &r, NULL);
	assert_int_equal(r.n, 3);
	assert_string_equal(r.v[0].data, "a");
	assert_string_equal(r.v[1].data, "b");
	assert_string_equal(r.v[2].data, "c");
	rec_free(&r);
}

static void test_incomplete_held(void **state)
{
	(void)state;
	struct rec r = { 0 };
	struct sse_parser p;
	assert_int_equal(sse_init(&p, 0), 0);
	assert_int_equal(sse_feed(&p, "data: {\"partial\"", 16, rec_cb, &r), 0);
	assert_int_equal(sse_feed(&p, "}\n", 2, rec_cb, &r), 0);
	assert_int_equal(r.n, 0);
	assert_int_equal(sse_feed(&p, "\n", 1, rec_cb, &r), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.v[0].data, "{\"partial\"}");
	/* An event without its blank line is held, not reported. */
	assert_int_equal(sse_feed(&p, "data: [DONE]\n", 13, rec_cb, &r), 0);
	assert_int_equal(r.n, 1);
	sse_free(&p);
	rec_free(&r);
}

static int stop_cb(void *ud, const struct sse_event *ev)
{
	int *seen = ud;
	(void)ev;
	return ++*seen == 2 ? 7 : 0;
}

static void test_callback_stops(void **state)
{
	(void)state;
	int seen = 0;
	struct sse_parser p;
	assert_int_equal(sse_init(&p, 0), 0);
	const char *s = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
	assert_int_equal(sse_feed(&p, s, strlen(s), stop_cb, &seen), 7);
	assert_int_equal(seen, 2);
	sse_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_whole),
		cmocka_unit_test(test_fixtures_split),
		cmocka_unit_test(test_buffer_reuse),
		cmocka_unit_test(test_comments_and_fields),
		cmocka_unit_test(test_multiline),
		cmocka_unit_test(test_data_without_colon),
		cmocka_unit_test(test_event_names),
		cmocka_unit_test(test_error_field),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_line_ends),
		cmocka_unit_test(test_incomplete_held),
		cmocka_unit_test(test_callback_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
