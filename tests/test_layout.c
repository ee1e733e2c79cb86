/* The dashboard layout, for every terminal size from 80x24 to 250x70, in
 * every view and with every flag: panels on screen, never overlapping,
 * charts big enough to read, and the panels each view is for present. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/layout.h"

static bool overlaps(const struct rect *a, const struct rect *b)
{
	return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

static int count_kind(const struct layout *l, enum panel_kind k)
{
	int n = 0;
	for (int i = 0; i < l->n; i++)
		n += l->p[i].kind == k;
	return n;
}

#define CHECK(cond, ...)                                                                       \
	do {                                                                                   \
		if (!(cond))                                                                   \
			fail_msg("%dx%d view %s flags %u: %s", cols, rows, layout_view_name(view), \
				 flags, #cond);                                                \
	} while (0)

static void check_one(int rows, int cols, enum ui_view view, unsigned flags)
{
	struct layout l, again;
	layout_compute(rows, cols, view, flags, &l);
	layout_compute(rows, cols, view, flags, &again);
	CHECK(memcmp(&l, &again, sizeof l) == 0); /* pure: same input, same output */
	CHECK(!l.too_small);
	CHECK(l.rows == rows && l.cols == cols);
	CHECK(l.n > 0 && l.n <= LAYOUT_MAX_PANELS);
	for (int i = 0; i < l.n; i++) {
		const struct panel *p = &l.p[i];
		CHECK(p->r.h >= 1 && p->r.w >= 1);
		CHECK(p->r.y >= 0 && p->r.x >= 0);
		CHECK(p->r.y + p->r.h <= rows && p->r.x + p->r.w <= cols);
		if (p->kind == PANEL_CHART) {
			CHECK(p->r.h >= LAYOUT_CHART_MIN_H && p->r.w >= LAYOUT_CHART_MIN_W);
			CHECK(p->arg >= 0 && p->arg < CHART_N);
			for (int j = 0; j < i; j++)
				CHECK(!(l.p[j].kind == PANEL_CHART && l.p[j].arg == p->arg));
		}
		CHECK(p->kind != PANEL_TOO_SMALL);
		CHECK((p->kind == PANEL_HELP) == false || (flags & LAYOUT_HELP));
		for (int j = 0; j < i; j++) {
			if (p->kind == PANEL_HELP || l.p[j].kind == PANEL_HELP)
				continue;
			if (overlaps(&p->r, &l.p[j].r))
				fail_msg("%dx%d view %s flags %u: %s overlaps %s", cols, rows, layout_view_name(view),
					 flags, layout_panel_name(p->kind), layout_panel_name(l.p[j].kind));
		}
	}
	const struct panel *h = layout_find(&l, PANEL_HEADER, -1);
	const struct panel *ld = layout_find(&l, PANEL_LOAD, -1);
	const struct panel *kb = layout_find(&l, PANEL_KEYBAR, -1);
	CHECK(h && h->r.y == 0 && h->r.w == cols);
	CHECK(ld && ld->r.y == 1 && ld->r.w == cols);
	CHECK(kb && kb->r.y == rows - 1 && kb->r.w == cols);
	CHECK(count_kind(&l, PANEL_HEADER) == 1 && count_kind(&l, PANEL_KEYBAR) == 1);
	CHECK(count_kind(&l, PANEL_HELP) == ((flags & LAYOUT_HELP) ? 1 : 0));
	CHECK(count_kind(&l, PANEL_ERRORS) == 1);

	int charts = count_kind(&l, PANEL_CHART);
	const struct panel *lat = layout_find(&l, PANEL_LATENCY, -1);
	const struct panel *srv = layout_find(&l, PANEL_SERVER, -1);
	switch (view) {
	case VIEW_OVERVIEW:
		CHECK(lat && lat->arg == PANEL_COMPACT);
		CHECK(lat->r.h >= layout_latency_rows(PANEL_COMPACT, flags) && lat->r.w >= 78);
		CHECK(srv && srv->r.h >= 3);
		/* The throughput chart and at least one more, at every size. */
		CHECK(charts >= 2 && layout_find(&l, PANEL_CHART, CHART_TOK));
		CHECK(layout_find(&l, PANEL_CHART, CHART_TTFT));
		if (rows >= 40)
			CHECK(charts == 6);
		/* Queue depth and KV usage when the server reports them; else
		 * client charts in their place. */
		if (charts >= 3)
			CHECK(!!layout_find(&l, PANEL_CHART, CHART_QUEUE) == !!(flags & LAYOUT_SERVER));
		if (charts >= 4)
			CHECK(!!layout_find(&l, PANEL_CHART, CHART_KV) == !!(flags & LAYOUT_SERVER));
		if (!(flags & LAYOUT_SERVER) && charts >= 3)
			CHECK(layout_find(&l, PANEL_CHART, CHART_ITL));
		if ((flags & LAYOUT_GPU) && cols >= 150)
			CHECK(layout_find(&l, PANEL_GPU, -1));
		if (!(flags & LAYOUT_GPU))
			CHECK(!layout_find(&l, PANEL_GPU, -1));
		break;
	case VIEW_LATENCY:
		CHECK(lat && lat->arg == PANEL_DETAIL && lat->r.h >= layout_latency_rows(PANEL_DETAIL, flags));
		CHECK(layout_find(&l, PANEL_CHART, CHART_TTFT) && layout_find(&l, PANEL_CHART, CHART_ITL));
		break;
	case VIEW_HIST:
		/* TTFT, ITL and E2E, each with a title, at least a few
		 * buckets and its bottom border. */
		CHECK(count_kind(&l, PANEL_HIST) == HIST_N);
		for (int i = 0; i < HIST_N; i++) {
			const struct panel *hp = layout_find(&l, PANEL_HIST, i);
			CHECK(hp && hp->r.h >= 5 && hp->r.w >= 40);
		}
		break;
	case VIEW_SERVER:
		CHECK(srv && srv->arg == PANEL_DETAIL && srv->r.h >= 9);
		CHECK(layout_find(&l, PANEL_CHART, CHART_QUEUE) && layout_find(&l, PANEL_CHART, CHART_KV));
		break;
	case VIEW_GPU: {
		const struct panel *g = layout_find(&l, PANEL_GPU, PANEL_DETAIL);
		CHECK(g && g->r.h >= 10 && g->r.w == cols);
		/* History charts below: a GPU's row of three and the axis. */
		const struct panel *gh = layout_find(&l, PANEL_GPU_HIST, -1);
		CHECK(gh && gh->r.h >= 6 && gh->r.w == cols && gh->r.y >= g->r.y + g->r.h);
		break;
	}
	case VIEW_ERRORS: {
		const struct panel *e = layout_find(&l, PANEL_ERRORS, PANEL_DETAIL);
		CHECK(e && e->r.h >= 10);
		CHECK(layout_find(&l, PANEL_CHART, CHART_ERR));
		break;
	}
	case VIEW_PLAN: {
		const struct panel *st = layout_find(&l, PANEL_STEPS, -1);
		/* Title, column heads and at least a few steps. */
		CHECK(st && st->r.h >= 8 && st->r.w == cols);
		CHECK(layout_find(&l, PANEL_CHART, CHART_TOK));
		break;
	}
	case VIEW_REQUESTS: {
		/* The table across the screen: tabs, heads, rows and a footer. */
		const struct panel *rq = layout_find(&l, PANEL_REQUESTS, -1);
		CHECK(rq && rq->r.h >= 12 && rq->r.w == cols);
		break;
	}
	default:
		fail();
	}
	if (flags & LAYOUT_HELP) {
		const struct panel *hp = layout_find(&l, PANEL_HELP, -1);
		CHECK(hp && hp->r.h >= 20 && hp->r.w >= 70);
	}
	/* Every focusable panel maximised: alone between the load line and
	 * the key bar, the bars kept, nothing overlapping (but help). */
	CHECK(l.focus == -1);
	int nfocus = 0;
	for (int i = 0; i < l.n; i++) {
		if (!layout_focusable(l.p[i].kind))
			continue;
		nfocus++;
		struct layout m = l;
		int k = layout_maximise(&m, i);
		CHECK(k >= 0 && k < m.n && m.focus == k);
		CHECK(m.p[k].kind == l.p[i].kind && m.p[k].arg == l.p[i].arg);
		CHECK(m.p[k].r.y == 2 && m.p[k].r.x == 0 && m.p[k].r.h == rows - 3 && m.p[k].r.w == cols);
		CHECK(layout_find(&m, PANEL_HEADER, -1) && layout_find(&m, PANEL_KEYBAR, -1));
		for (int a = 0; a < m.n; a++)
			for (int b = 0; b < a; b++)
				if (m.p[a].kind != PANEL_HELP && m.p[b].kind != PANEL_HELP)
					CHECK(!overlaps(&m.p[a].r, &m.p[b].r));
		/* A click anywhere in a panel finds it. */
		const struct rect *r = &l.p[i].r;
		int hit = layout_hit(&l, r->y + r->h - 1, r->x + r->w - 1);
		CHECK(hit == i || (hit >= 0 && l.p[hit].kind == PANEL_HELP));
	}
	/* Focus goes round every focusable panel and comes back. */
	int f = layout_focus_find(&l, PANEL_KIND_N, -1), start = f, steps = 0;
	CHECK(f >= 0 && layout_focusable(l.p[f].kind));
	do {
		f = layout_focus_step(&l, f, 1);
		steps++;
	} while (f != start && steps <= l.n);
	CHECK(steps == nfocus);
	CHECK(layout_focus_step(&l, layout_focus_step(&l, start, 1), -1) == start);
}

static void test_every_size(void **state)
{
	(void)state;
	long n = 0;
	for (int rows = LAYOUT_MIN_ROWS; rows <= 70; rows++)
		for (int cols = LAYOUT_MIN_COLS; cols <= 250; cols++)
			for (int v = 0; v < VIEW_N; v++)
				for (unsigned f = 0; f < LAYOUT_NFLAGS; f++, n++)
					check_one(rows, cols, (enum ui_view)v, f);
	assert_int_equal(n, 47L * 171 * VIEW_N * LAYOUT_NFLAGS);
}

/* Bigger than the tested range still works: nothing is sized by a constant
 * that stops fitting. */
static void test_huge(void **state)
{
	(void)state;
	for (int v = 0; v < VIEW_N; v++)
		for (unsigned f = 0; f < LAYOUT_NFLAGS; f++) {
			check_one(200, 500, (enum ui_view)v, f);
			check_one(70, 1000, (enum ui_view)v, f);
			check_one(300, 80, (enum ui_view)v, f);
		}
}

static void test_too_small(void **state)
{
	(void)state;
	for (int rows = 0; rows <= 80; rows++)
		for (int cols = 0; cols <= 260; cols++) {
			if (rows >= LAYOUT_MIN_ROWS && cols >= LAYOUT_MIN_COLS)
				continue;
			for (int v = 0; v < VIEW_N; v++) {
				struct layout l;
				layout_compute(rows, cols, (enum ui_view)v, LAYOUT_HELP | LAYOUT_GPU, &l);
				assert_true(l.too_small);
				if (rows == 0 || cols == 0) {
					assert_int_equal(l.n, 0);
					continue;
				}
				assert_int_equal(l.n, 1);
				assert_int_equal(l.p[0].kind, PANEL_TOO_SMALL);
				assert_int_equal(l.p[0].r.y, 0);
				assert_int_equal(l.p[0].r.x, 0);
				assert_int_equal(l.p[0].r.h, rows);
				assert_int_equal(l.p[0].r.w, cols);
			}
		}
}

/* At the smallest size the overview still shows four charts (the issue's
 * 80x24 test reads them); the queue row takes a row of charts. */
static void test_minimum_overview(void **state)
{
	(void)state;
	struct layout l;
	layout_compute(24, 80, VIEW_OVERVIEW, 0, &l);
	assert_int_equal(count_kind(&l, PANEL_CHART), 4);
	const struct panel *lat = layout_find(&l, PANEL_LATENCY, -1);
	assert_int_equal(lat->r.h, 8); /* boxed: two border rows */
	/* The queue row and the boxes leave room for one row of charts. */
	layout_compute(24, 80, VIEW_OVERVIEW, LAYOUT_QUEUE, &l);
	lat = layout_find(&l, PANEL_LATENCY, -1);
	assert_int_equal(lat->r.h, 9);
	assert_int_equal(count_kind(&l, PANEL_CHART), 2);
	/* Wide: latency and server side by side, GPU beside them. */
	layout_compute(40, 200, VIEW_OVERVIEW, LAYOUT_GPU, &l);
	const struct panel *srv = layout_find(&l, PANEL_SERVER, -1), *gpu = layout_find(&l, PANEL_GPU, -1);
	lat = layout_find(&l, PANEL_LATENCY, -1);
	assert_int_equal(srv->r.y, lat->r.y);
	assert_int_equal(gpu->r.y, lat->r.y);
	assert_true(srv->r.x >= lat->r.x + lat->r.w);
	assert_true(gpu->r.x >= srv->r.x + srv->r.w);
	assert_string_equal(layout_view_name(VIEW_GPU), "GPU");
	assert_string_equal(layout_panel_name(PANEL_KEYBAR), "keybar");
	assert_null(layout_find(&l, PANEL_TOO_SMALL, -1));
}

/* The sessions / cache panel: only with its flag; in the overview only
 * where a row of charts still fits below it, in the latency view under
 * the table. */
static void test_sessions_panel_place(void **state)
{
	(void)state;
	struct layout l;
	for (int v = 0; v < VIEW_N; v++) {
		layout_compute(60, 200, (enum ui_view)v, LAYOUT_GPU | LAYOUT_SERVER, &l);
		assert_null(layout_find(&l, PANEL_SESSIONS, -1));
	}
	layout_compute(24, 80, VIEW_OVERVIEW, LAYOUT_SESSIONS, &l);
	assert_null(layout_find(&l, PANEL_SESSIONS, -1));
	assert_true(count_kind(&l, PANEL_CHART) > 0);
	layout_compute(40, 100, VIEW_OVERVIEW, LAYOUT_SESSIONS, &l);
	const struct panel *p = layout_find(&l, PANEL_SESSIONS, -1);
	assert_non_null(p);
	assert_int_equal(p->r.h, LAYOUT_SESSIONS_H);
	assert_int_equal(p->r.w, 100);
	assert_true(count_kind(&l, PANEL_CHART) > 0);
	layout_compute(40, 100, VIEW_LATENCY, LAYOUT_SESSIONS, &l);
	p = layout_find(&l, PANEL_SESSIONS, -1);
	const struct panel *lat = layout_find(&l, PANEL_LATENCY, -1);
	assert_non_null(p);
	assert_int_equal(p->r.y, lat->r.y + lat->r.h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_size),
		cmocka_unit_test(test_huge),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_minimum_overview),
		cmocka_unit_test(test_sessions_panel_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
