/* The requests view's tracker (reqtrack.h): bounded sizes however many
 * requests finish, the slowest N per metric against a sorted oracle, the
 * recent ring's order, the filter, reading the live list in place; then the
 * engine feeding it against a real simulator (long streams whose ITL
 * buffer is flushed, and faults). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curses.h>

#include "infertop/layout.h"
#include "infertop/reqtrack.h"
#include "infertop/rng.h"
#include "infertop/theme.h"
#include "infertop/widget.h"
#include "enginefix.h"
#include "screenfix.h"

#define MS 1000000LL
#define S_NS (1000 * MS)

/* A finished request as the engine hands it over: the request with its
 * stamps and gaps, and its result. */
struct fake {
	struct request r;
	struct req_result res;
};

static void fake_fill(struct fake *f, struct reqtrack *t, const char *model, int64_t ttft, int64_t e2e,
		      uint32_t worst_us, bool ok)
{
	memset(f, 0, sizeof *f);
	reqtrack_start(t, &f->r, model);
	f->r.t_send = 1000 * MS;
	f->r.t_first_event = f->r.t_send + ttft / 2;
	f->r.t_first_token = f->r.t_send + ttft;
	f->r.t_last_token = f->r.t_send + e2e;
	f->r.now = f->r.t_last_token;   /* the stamp of the last bytes read */
	f->r.chunks = 20;
	f->r.prompt_estimate = 100;
	f->r.status = ok ? 200 : 503;
	f->r.status_known = true;
	f->r.n_itl = 19;
	for (size_t i = 0; i < f->r.n_itl; i++)
		f->r.itl[i] = (uint32_t)(1000 + i);
	f->r.itl[7] = worst_us;
	f->res.ok = ok;
	f->res.http_code = ok ? 200 : 503;
	f->res.err = ok ? ERR_OTHER : ERR_HTTP;
	f->res.msg = ok ? NULL : "HTTP 503: overloaded";
	f->res.ttfb_ns = ttft / 2;
	f->res.ttft_ns = ttft;
	f->res.e2e_ns = e2e;
	f->res.output_tokens = 20;
	f->res.prompt_tokens = 100;
	f->res.chunks = 20;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* 20,000 requests with random latencies: every list stays at
 * REQTRACK_N records and holds exactly the N slowest by its metric. */
static void test_bounded_and_slowest(void **state)
{
	(void)state;
	struct reqtrack *t = reqtrack_new(NULL);
	assert_non_null(t);
	enum { NREQ = 20000 };
	int64_t *ttft = malloc(NREQ * sizeof *ttft), *e2e = malloc(NREQ * sizeof *e2e), *gap = malloc(NREQ * sizeof *gap);
	assert_non_null(ttft);
	assert_non_null(e2e);
	assert_non_null(gap);
	struct rng rg;
	rng_seed(&rg, 42);
	struct fake *f = malloc(sizeof *f);
	assert_non_null(f);
	size_t nok = 0;
	for (int i = 0; i < NREQ; i++) {
		int64_t a = (int64_t)(rng_next(&rg) % (5000 * MS)) + 1;
		int64_t b = a + (int64_t)(rng_next(&rg) % (20000 * MS));
		uint32_t g = (uint32_t)(rng_next(&rg) % 2000000) + 2000;
		bool ok = rng_next(&rg) % 10 != 0;
		fake_fill(f, t, "m", a, b, g, ok);
		reqtrack_done(t, &f->r, &f->res);
		if (ok) {
			ttft[nok] = a;
			e2e[nok] = b;
			gap[nok] = g;
			nok++;
		}
		assert_true(reqtrack_count(t, RT_RECENT) <= REQTRACK_N);
		for (int l = RT_SLOW_TTFT; l <= RT_SLOW_ITL; l++)
			assert_true(reqtrack_count(t, (enum reqtrack_list)l) <= REQTRACK_N);
	}
	assert_int_equal(t->finished, NREQ);
	assert_int_equal(reqtrack_count(t, RT_RECENT), REQTRACK_N);
	qsort(ttft, nok, sizeof *ttft, cmp_desc);
	qsort(e2e, nok, sizeof *e2e, cmp_desc);
	qsort(gap, nok, sizeof *gap, cmp_desc);
	for (size_t i = 0; i < REQTRACK_N; i++) {
		assert_int_equal(reqtrack_get(t, RT_SLOW_TTFT, i)->ttft_ns, ttft[i]);
		assert_int_equal(reqtrack_get(t, RT_SLOW_E2E, i)->e2e_ns, e2e[i]);
		assert_int_equal(reqtrack_get(t, RT_SLOW_ITL, i)->worst_gap_us, gap[i]);
		/* Only successes are ranked, as in the latency statistics. */
		assert_int_equal(reqtrack_get(t, RT_SLOW_E2E, i)->phase, RT_OK);
	}
	assert_null(reqtrack_get(t, RT_SLOW_TTFT, REQTRACK_N));
	assert_null(reqtrack_get(t, RT_INFLIGHT, 0));
	/* The ring: newest first, one apart. */
	for (size_t i = 0; i < REQTRACK_N; i++)
		assert_int_equal(reqtrack_get(t, RT_RECENT, i)->seq, NREQ - i);
	/* Found by number while kept, not after. */
	assert_non_null(reqtrack_find(t, NREQ));
	assert_null(reqtrack_find(t, NREQ - REQTRACK_N - 100000));
	assert_null(reqtrack_find(t, 0));
	/* A window reset forgets the finished ones; numbers go on. */
	reqtrack_clear(t);
	for (int l = RT_SLOW_TTFT; l < RT_LIST_N; l++)
		assert_int_equal(reqtrack_count(t, (enum reqtrack_list)l), 0);
	fake_fill(f, t, "m", MS, 2 * MS, 5000, true);
	assert_int_equal(f->r.seq, NREQ + 1);
	free(f);
	free(ttft);
	free(e2e);
	free(gap);
	reqtrack_free(t);
}

/* A request the run's end cut: neither ok nor failed, in the ring as
 * "incomplete" (the requests view says so, not "failed"). */
static void test_record_incomplete(void **state)
{
	(void)state;
	struct reqtrack *t = reqtrack_new(NULL);
	struct fake *f = malloc(sizeof *f);
	assert_non_null(f);
	fake_fill(f, t, "m", 300 * MS, 900 * MS, 45000, false);
	f->res.incomplete = true;
	f->res.err = ERR_ABORTED;
	f->res.msg = "still running when the run ended";
	reqtrack_done(t, &f->r, &f->res);
	const struct reqtrack_rec *rec = reqtrack_get(t, RT_RECENT, 0);
	assert_int_equal(rec->phase, RT_INCOMPLETE);
	assert_string_equal(reqtrack_phase_name(rec->phase), "incomplete");
	free(f);
	reqtrack_free(t);
}

/* A failure: in the ring with its recorded (scrubbed) text and kind, never
 * ranked; a success's record carries its figures and last gaps. */
static void test_record(void **state)
{
	(void)state;
	struct reqtrack *t = reqtrack_new(NULL);
	struct fake *f = malloc(sizeof *f);
	assert_non_null(f);
	fake_fill(f, t, "llama-3-70b", 300 * MS, 900 * MS, 45000, false);
	reqtrack_done(t, &f->r, &f->res);
	assert_int_equal(reqtrack_count(t, RT_RECENT), 1);
	assert_int_equal(reqtrack_count(t, RT_SLOW_TTFT), 0);
	const struct reqtrack_rec *rec = reqtrack_get(t, RT_RECENT, 0);
	assert_int_equal(rec->phase, RT_FAILED);
	assert_int_equal(rec->err, ERR_HTTP);
	assert_int_equal(rec->http, 503);
	assert_string_equal(rec->msg, "HTTP 503: overloaded");
	/* A failure's E2E: until its last bytes, not -1. */
	assert_int_equal(rec->e2e_ns, 900 * MS);
	assert_string_equal(rec->model, "llama-3-70b");

	fake_fill(f, t, "llama-3-70b", 300 * MS, 900 * MS, 45000, true);
	reqtrack_done(t, &f->r, &f->res);
	rec = reqtrack_get(t, RT_RECENT, 0);
	assert_int_equal(rec->phase, RT_OK);
	assert_int_equal(rec->seq, 2);
	assert_string_equal(rec->msg, "");
	assert_int_equal(rec->ttft_ns, 300 * MS);
	assert_int_equal(rec->ttfb_ns, 150 * MS);
	assert_int_equal(rec->e2e_ns, 900 * MS);
	assert_int_equal(rec->tokens_out, 20);
	assert_int_equal(rec->tokens_in, 100);
	assert_int_equal(rec->chunks, 20);
	assert_int_equal(rec->worst_gap_us, 45000);
	assert_int_equal(rec->ngaps, 19);
	assert_int_equal(rec->gaps_us[0], 1000);
	assert_int_equal(rec->gaps_us[18], 1018);
	free(f);
	reqtrack_free(t);
}

/* The last gaps across a flush: the kept ones first, then the buffer's,
 * at most cap, newest last; the worst over both. */
static void test_gaps(void **state)
{
	(void)state;
	struct request *r = calloc(1, sizeof *r);
	assert_non_null(r);
	uint32_t out[REQTRACK_GAPS];
	assert_int_equal(reqtrack_gaps(r, out, REQTRACK_GAPS), 0);
	assert_int_equal(reqtrack_worst_gap(r), 0);
	r->n_keep = REQUEST_ITL_KEEP;
	for (uint32_t i = 0; i < REQUEST_ITL_KEEP; i++)
		r->itl_keep[i] = i + 1;
	r->itl_worst = 9999;
	r->n_itl = 10;
	for (uint32_t i = 0; i < 10; i++)
		r->itl[i] = 101 + i;
	uint32_t n = reqtrack_gaps(r, out, REQTRACK_GAPS);
	assert_int_equal(n, REQTRACK_GAPS);
	assert_int_equal(out[0], REQUEST_ITL_KEEP - (REQTRACK_GAPS - 10) + 1);
	assert_int_equal(out[REQTRACK_GAPS - 11], REQUEST_ITL_KEEP);
	assert_int_equal(out[REQTRACK_GAPS - 10], 101);
	assert_int_equal(out[REQTRACK_GAPS - 1], 110);
	assert_int_equal(reqtrack_worst_gap(r), 9999);
	r->itl[3] = 20000;
	assert_int_equal(reqtrack_worst_gap(r), 20000);
	/* A small cap takes the newest. */
	assert_int_equal(reqtrack_gaps(r, out, 4), 4);
	assert_int_equal(out[0], 107);
	assert_int_equal(out[3], 110);
	free(r);
}

static void test_filter(void **state)
{
	(void)state;
	struct reqtrack_rec rec = {.seq = 7, .phase = RT_FAILED, .http = 503, .err = ERR_TIMEOUT};
	strcpy(rec.model, "Qwen2.5-7B-Instruct");
	assert_true(reqtrack_match(&rec, ""));
	assert_true(reqtrack_match(&rec, NULL));
	assert_true(reqtrack_match(&rec, "qwen"));
	assert_true(reqtrack_match(&rec, "7b-INSTR"));
	assert_true(reqtrack_match(&rec, "fail"));
	assert_true(reqtrack_match(&rec, "timeout"));
	assert_true(reqtrack_match(&rec, "http 503"));
	assert_true(reqtrack_match(&rec, "503"));
	assert_false(reqtrack_match(&rec, "llama"));
	assert_false(reqtrack_match(&rec, "streaming"));
	assert_false(reqtrack_match(&rec, "http 500"));
	/* The error kind counts only for a failure. */
	rec.phase = RT_OK;
	assert_false(reqtrack_match(&rec, "timeout"));
	assert_true(reqtrack_match(&rec, "ok"));
	rec.phase = RT_STREAMING;
	rec.http = 0;
	assert_true(reqtrack_match(&rec, "stream"));
	assert_false(reqtrack_match(&rec, "http"));
	assert_false(reqtrack_match(&rec, "Qwen2.5-7B-Instruct-and-more"));
}

/* In flight: the owner's list read in place, never copied; a record made
 * on the fly tells the phase and the figures so far. */
static void test_live(void **state)
{
	(void)state;
	struct request *live = NULL;
	struct reqtrack *t = reqtrack_new(&live);
	struct request *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	assert_null(reqtrack_live_first(t));
	reqtrack_start(t, a, "m1");
	reqtrack_start(t, b, "m2");
	a->next = b;
	live = a;
	assert_ptr_equal(reqtrack_live_first(t), a);
	assert_ptr_equal(reqtrack_live_find(t, 2), b);
	assert_null(reqtrack_live_find(t, 3));
	a->t_send = 10 * MS;
	struct reqtrack_rec rec;
	reqtrack_rec_live(a, 15 * MS, true, &rec);
	assert_int_equal(rec.phase, RT_WAITING);
	assert_int_equal(rec.ttfb_ns, -1);
	assert_int_equal(rec.ttft_ns, -1);
	assert_int_equal(rec.e2e_ns, 5 * MS);
	a->t_first_event = 12 * MS;
	reqtrack_rec_live(a, 15 * MS, true, &rec);
	assert_int_equal(rec.phase, RT_PREFILL);
	assert_int_equal(rec.ttfb_ns, 2 * MS);
	a->t_first_token = 13 * MS;
	a->chunks = 3;
	a->n_itl = 2;
	a->itl[0] = 500;
	a->itl[1] = 700;
	reqtrack_rec_live(a, 16 * MS, true, &rec);
	assert_int_equal(rec.phase, RT_STREAMING);
	assert_int_equal(rec.ttft_ns, 3 * MS);
	assert_int_equal(rec.chunks, 3);
	assert_int_equal(rec.ngaps, 2);
	assert_int_equal(rec.worst_gap_us, 700);
	assert_string_equal(rec.model, "m1");
	/* A table row does without the gaps. */
	reqtrack_rec_live(a, 16 * MS, false, &rec);
	assert_int_equal(rec.ngaps, 0);
	assert_int_equal(rec.worst_gap_us, 700);
	/* No tracker: numbering off, nothing kept, nothing crashes. */
	reqtrack_start(NULL, a, "m1");
	assert_int_equal(a->seq, 0);
	assert_int_equal(reqtrack_count(NULL, RT_RECENT), 0);
	assert_null(reqtrack_live_first(NULL));
	free(a);
	free(b);
	reqtrack_free(t);
}

/* The engine feeds it: 550-token streams flush their ITL buffer twice
 * (549 gaps: 256 + 256 + 37 left in the buffer), so a record's 64 gaps
 * are 27 kept at the last flush and the buffer's 37; faults land in
 * the ring with their recorded text and stay out of the slowest lists. */
static void test_engine_feeds(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "2ms", "--itl", "200us", "--fail-rate", "0.2",
			     "--fail-kinds", "500", "--seed", "3", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "8", "-n", "80", "--output-tokens", "550", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	struct run_view v;
	engine_view(f->e, &v);
	const struct reqtrack *t = v.requests;
	assert_non_null(t);
	assert_null(reqtrack_live_first(t));
	assert_int_equal(t->finished, 80);
	assert_int_equal(t->next_seq, 80);
	assert_int_equal(reqtrack_count(t, RT_RECENT), REQTRACK_N);
	size_t ok = (size_t)f->e->stats->run_c.completed, failed = 80 - ok;
	print_message("ok %zu failed %zu\n", ok, failed);
	assert_true(failed > 0 && ok > REQTRACK_N);
	assert_int_equal(reqtrack_count(t, RT_SLOW_E2E), REQTRACK_N);
	uint64_t prev = UINT64_MAX;
	size_t nfail = 0;
	for (size_t i = 0; i < REQTRACK_N; i++) {
		const struct reqtrack_rec *rec = reqtrack_get(t, RT_RECENT, i);
		assert_true(rec->seq >= 1 && rec->seq <= 80);
		assert_true(rec->seq != prev);
		prev = rec->seq;
		if (rec->phase == RT_FAILED) {
			nfail++;
			assert_int_equal(rec->err, ERR_HTTP);
			assert_non_null(strstr(rec->msg, "HTTP 500"));
			assert_true(rec->e2e_ns > 0 && rec->e2e_ns < 10000 * MS);
			continue;
		}
		assert_int_equal(rec->phase, RT_OK);
		assert_string_equal(rec->model, "infertop-sim");
		assert_int_equal(rec->chunks, 550);
		assert_int_equal(rec->tokens_out, 550);
		assert_int_equal(rec->ngaps, REQTRACK_GAPS);
		/* Chunks read together have a gap of 0; 64 of them still span
		 * some time, and no more than the stream after its first token. */
		uint32_t worst = 0;
		int64_t sum = 0;
		for (uint32_t k = 0; k < rec->ngaps; k++) {
			sum += rec->gaps_us[k];
			if (rec->gaps_us[k] > worst)
				worst = rec->gaps_us[k];
		}
		assert_true(sum > 0 && sum * 1000 <= rec->e2e_ns - rec->ttft_ns + 64 * 1000);
		assert_true(rec->worst_gap_us >= worst);
		assert_true(rec->ttft_ns > 0 && rec->ttft_ns <= rec->e2e_ns);
	}
	(void)nfail;
	for (size_t i = 0; i + 1 < REQTRACK_N; i++)
		assert_true(reqtrack_get(t, RT_SLOW_E2E, i)->e2e_ns >= reqtrack_get(t, RT_SLOW_E2E, i + 1)->e2e_ns);
}

#define row_text screenfix_row

static int screen_count(int rows, const char *needle)
{
	int n = 0;
	char line[2048];
	for (int y = 0; y < rows; y++) {
		row_text(y, line, sizeof line);
		n += strstr(line, needle) != NULL;
	}
	return n;
}

/* The requests panel where the layout puts it, drawn alone (the run here
 * has no stats for the header) the way widgets_render draws it. */
static struct panel draw_requests(int rows, int cols, const struct dash *d)
{
	struct layout full, l;
	layout_compute(rows, cols, VIEW_REQUESTS, 0, &full);
	const struct panel *p = layout_find(&full, PANEL_REQUESTS, -1);
	assert_non_null(p);
	memset(&l, 0, sizeof l);
	l.rows = rows;
	l.cols = cols;
	l.focus = -1;
	l.n = 1;
	l.p[0] = *p;
	resize_term(rows, cols);
	widgets_render(stdscr, &l, d);
	return *p;
}

/* The whole requests view drawn into a real ncurses screen (on /dev/null)
 * at 80x24, 120x40 and 250x70 over 1,000 requests in flight with a long
 * model name, and over kept failures with a long message: every table row
 * ends at the panel's right border (columns cut, never run over), as many
 * rows as fit are drawn, the selection scrolls into sight, and the detail
 * reads a live request's chunk count. */
static void test_widget_fits(void **state)
{
	(void)state;
	struct screenfix sf;
	unsigned long attr[THEME_NROLES];
	assert_int_equal(screenfix_open(&sf, false, attr), 0);

	enum { NLIVE = 1000 };
	struct request *live = NULL;
	struct reqtrack *t = reqtrack_new(&live);
	struct request *rs = calloc(NLIVE, sizeof *rs);
	assert_non_null(rs);
	static const char model[] = "meta-llama/Llama-3.1-405B-Instruct-FP8-with-a-very-long-name";
	/* rs[i] is request i + 1 with i chunks. */
	for (int i = 0; i < NLIVE; i++) {
		reqtrack_start(t, &rs[i], model);
		rs[i].t_send = 10 * S_NS;
		rs[i].t_first_event = rs[i].t_first_token = rs[i].t_send + (int64_t)(i + 1) * MS;
		rs[i].chunks = (uint64_t)i;
		rs[i].next = i + 1 < NLIVE ? &rs[i + 1] : NULL;
	}
	live = &rs[0];
	struct fake *f = malloc(sizeof *f);
	assert_non_null(f);
	for (int i = 0; i < 40; i++) {
		fake_fill(f, t, model, (i + 1) * MS, (i + 100) * MS, 2000, i % 3 != 0);
		f->res.msg = "HTTP 503: the server is overloaded and asks to come back later, with a long text after it";
		reqtrack_done(t, &f->r, &f->res);
	}
	struct run_view v = {.requests = t, .state = ENGINE_RUNNING};
	struct req_ui q = {.sort = -1};
	struct dash d = {.v = &v, .attr = attr, .now = 20 * S_NS, .view = VIEW_REQUESTS, .rq = &q};
	static const int sizes[][2] = {{24, 80}, {40, 120}, {70, 250}};
	for (size_t s = 0; s < 3; s++) {
		int rows = sizes[s][0], cols = sizes[s][1];
		for (int list = RT_INFLIGHT; list < RT_LIST_N; list++) {
			q.list = list;
			struct panel pp = draw_requests(rows, cols, &d);
			const struct panel *p = &pp;
			int drawn = 0;
			char line[2048];
			for (int y = p->r.y + 2; y < p->r.y + p->r.h - 2; y++) {
				row_text(y, line, sizeof line);
				if (!strstr(line, " meta-"))
					continue;
				drawn++;
				size_t n = strlen(line), e = n >= 6 ? n - 3 : 0;
				/* The last cell is the border (3 bytes of UTF-8). */
				assert_true(e > 0 && strcmp(line + e, "\xe2\x94\x82") == 0);
				/* Cut by the columns (an ellipsis, or room to spare), not
				 * by the border. */
				line[e] = '\0';
				bool spare = e > 0 && line[e - 1] == ' ';
				bool cut = e >= 3 && strcmp(line + e - 3, "\xe2\x80\xa6") == 0;
				if (!spare && !cut)
					fail_msg("%dx%d list %d: a row runs into the border: %s", cols, rows, list, line);
				assert_null(strstr(line, "with-a-very-long-name"));
			}
			size_t want = list == RT_INFLIGHT ? NLIVE : reqtrack_count(t, (enum reqtrack_list)list);
			size_t body = (size_t)p->r.h - 4;
			if (drawn != (int)(want < body ? want : body))
				fail_msg("%dx%d list %d: %d rows drawn, %zu wanted", cols, rows, list, drawn,
					 want < body ? want : body);
			assert_int_equal(screen_count(rows, "STATUS"), 1);
			/* Every column head shows, the error's from 120 columns. */
			row_text(p->r.y + 1, line, sizeof line);
			assert_non_null(strstr(line, "MODEL"));
			assert_non_null(strstr(line, "TTFT ms"));
			assert_non_null(strstr(line, "GAP ms"));
			assert_true(cols < 120 || strstr(line, "ERROR"));
		}
	}
	/* Down past the page: the selection scrolls into sight. */
	q.list = RT_INFLIGHT;
	for (int i = 0; i < 30; i++)
		w_requests_key(&q, KEY_DOWN, &v, d.now);
	assert_int_equal(q.sel, 31);
	draw_requests(24, 80, &d);
	assert_int_equal(screen_count(24, "     31 meta"), 1);
	assert_int_equal(screen_count(24, "      1 meta"), 0);
	/* Enter: the request alone, read live; more chunks show at once. */
	w_requests_key(&q, '\r', &v, d.now);
	assert_true(q.detail);
	draw_requests(24, 80, &d);
	assert_int_equal(screen_count(24, "chunks 30"), 1);
	rs[30].chunks = 31;
	draw_requests(24, 80, &d);
	assert_int_equal(screen_count(24, "chunks 31"), 1);
	/* Gone from the live list and not kept: said so. */
	live = NULL;
	draw_requests(24, 80, &d);
	assert_int_equal(screen_count(24, "no longer kept"), 1);
	free(f);
	free(rs);
	reqtrack_free(t);
	screenfix_close(&sf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounded_and_slowest),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_record_incomplete),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_widget_fits),
		cmocka_unit_test_setup_teardown(test_engine_feeds, enginefix_setup, enginefix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
