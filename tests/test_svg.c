/* The HTML report's primitives: every markup character and control byte
 * escaped; the down-sampling of a series keeps each slice's minimum and
 * maximum (a one-second spike survives a day reduced to 480 points),
 * keeps gaps as gaps, and never writes more points than asked; a chart
 * with no known point says so instead of drawing an empty path; a
 * server's buckets are drawn as they are. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/svg.h"

/* What svg_escape makes of s; malloc'd. Not inlined: gcc -O2 then takes
 * the result for a pointer into the local `buf` (-Wdangling-pointer). */
__attribute__((noinline)) static char *escaped(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	svg_escape(f, s);
	fclose(f);
	return buf;
}

static void test_escape(void **state)
{
	(void)state;
	char *e = escaped("<script>alert(\"x\")</script>&amp;'");
	assert_string_equal(e, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;&#39;");
	free(e);
	/* Control bytes are no text: U+FFFD; tab, newline and UTF-8 stay. */
	e = escaped("a\x01" "b\x7f" "\tc\nd \xc3\xa9");
	assert_string_equal(e, "a&#xFFFD;b&#xFFFD;\tc\nd \xc3\xa9");
	free(e);
	e = escaped(NULL);
	assert_string_equal(e, "");
	free(e);
	/* Nothing markup-significant survives in any byte. */
	char all[256];
	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	e = escaped(all);
	assert_null(strpbrk(e, "<>\"'"));
	for (const char *p = strchr(e, '&'); p; p = strchr(p + 1, '&'))
		assert_true(strncmp(p, "&amp;", 5) == 0 || strncmp(p, "&lt;", 4) == 0 || strncmp(p, "&gt;", 4) == 0 ||
			    strncmp(p, "&quot;", 6) == 0 || strncmp(p, "&#39;", 5) == 0 ||
			    strncmp(p, "&#xFFFD;", 8) == 0);
	free(e);
}

static void test_downsample_keeps_extremes(void **state)
{
	(void)state;
	/* A day at 1 s: a flat 10 with one spike to 1000 and one dip to 0. */
	size_t n = 86401; /* x from 0 to 86400: slices of 180 s */
	double *x = malloc(n * sizeof *x), *v = malloc(n * sizeof *v);
	assert_non_null(x);
	assert_non_null(v);
	for (size_t i = 0; i < n; i++) {
		x[i] = (double)i;
		v[i] = 10;
	}
	v[50000] = 1000;
	v[70001] = 0;
	struct svg_point out[480];
	size_t k = svg_downsample(x, v, n, 480, out);
	assert_int_equal(k, 480);
	double hi = 0, lo = 1e9;
	size_t spike = 0;
	for (size_t i = 0; i < k; i++) {
		assert_true(out[i].lo <= out[i].v && out[i].v <= out[i].hi);
		if (i)
			assert_true(out[i].x > out[i - 1].x);
		hi = fmax(hi, out[i].hi);
		lo = fmin(lo, out[i].lo);
		if (out[i].hi == 1000)
			spike = i;
	}
	assert_true(hi == 1000);
	assert_true(lo == 0);
	/* The spike's slice is where the spike was: 180 s a slice. */
	assert_int_equal(spike, 50000 / 180);
	assert_true(fabs(out[spike].x - (50000 / 180 * 180 + 90)) < 1e-6);
	/* Its mean is the slice's mean, not the spike. */
	assert_true(fabs(out[spike].v - (179 * 10 + 1000) / 180.0) < 1e-9);
	free(x);
	free(v);
}

static void test_downsample_gaps_and_small(void **state)
{
	(void)state;
	double x[10], v[10];
	for (int i = 0; i < 10; i++) {
		x[i] = i;
		v[i] = i < 4 || i > 5 ? i : NAN;
	}
	/* Fewer samples than points: copied, the gaps with them. */
	struct svg_point out[20];
	assert_int_equal(svg_downsample(x, v, 10, 20, out), 10);
	assert_true(isnan(out[4].v) && out[3].v == 3 && out[3].lo == 3 && out[3].hi == 3);
	/* Five slices of two: the one with only unknown samples is a gap. */
	assert_int_equal(svg_downsample(x, v, 10, 5, out), 5);
	assert_true(out[0].v == 0.5 && out[0].lo == 0 && out[0].hi == 1);
	assert_true(isnan(out[2].v));
	assert_true(out[4].lo == 8 && out[4].hi == 9);
	assert_int_equal(svg_downsample(x, v, 0, 5, out), 0);
	assert_int_equal(svg_downsample(x, v, 10, 0, out), 0);
	/* All at one x: one slice. */
	double same[3] = { 5, 5, 5 }, val[3] = { 1, 2, 6 };
	assert_int_equal(svg_downsample(same, val, 3, 2, out), 1);
	assert_true(out[0].v == 3 && out[0].lo == 1 && out[0].hi == 6);
}

static char *chart(const struct svg_point *p, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct svg_line l = { "a<b", p, n, true, false };
	struct svg_mark m = { 1, "c=\"8\"", NAN };
	struct svg_chart c = { "t&t", NULL, "ms", SVG_X_TIME, 0 };
	svg_line_chart(f, &c, &l, 1, &m, 1);
	fclose(f);
	return buf;
}

static void test_chart_no_data(void **state)
{
	(void)state;
	struct svg_point gap[2] = { { 0, NAN, NAN, NAN }, { 1, NAN, NAN, NAN } };
	char *s = chart(gap, 2);
	assert_non_null(strstr(s, "no data"));
	assert_null(strstr(s, "class=\"data"));
	free(s);
	struct svg_point pts[3] = { { 0, 1, 0, 2 }, { 1, 2, 2, 2 }, { 2, 3, 3, 3 } };
	s = chart(pts, 3);
	assert_non_null(strstr(s, "data-n=\"3\""));
	assert_non_null(strstr(s, "aria-label=\"t&amp;t\""));
	assert_non_null(strstr(s, "data-label=\"c=&quot;8&quot;\" data-value=\"1\""));
	assert_null(strstr(s, "<b"));
	free(s);
}

/* The server's buckets: one equal-width bar a non-empty bucket, the
 * counts and bounds as given (the overflow bucket's +Inf included), the
 * bounds under the edges, and "no data" when every bucket is empty. */
static void test_bucket_chart(void **state)
{
	(void)state;
	struct svg_bin b[4] = { { 0, 10, 0 }, { 10, 20, 7 }, { 20, 40, 0 }, { 40, INFINITY, 2 } };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	struct svg_chart c = { "ttft", "ms", "requests", SVG_X_LINEAR, 0 };
	svg_bucket_chart(f, &c, b, 4);
	fclose(f);
	assert_non_null(strstr(buf, "data-n=\"2\" data-total=\"9\" data-counts=\"0 7 0 2\" data-le=\"10 20 40 inf\""));
	assert_non_null(strstr(buf, ">+Inf</text>"));
	assert_non_null(strstr(buf, ">20</text>"));
	/* Two bars: two closed rectangles. */
	const char *d = strstr(buf, "class=\"data bars\"");
	assert_non_null(d);
	d = strstr(d, " d=\"M");
	assert_non_null(d);
	int z = 0;
	for (const char *p = d; *p && *p != '>'; p++)
		z += *p == 'Z';
	assert_int_equal(z, 2);
	free(buf);
	struct svg_bin none[2] = { { 0, 10, 0 }, { 10, 20, 0 } };
	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	svg_bucket_chart(f, &c, none, 2);
	fclose(f);
	assert_non_null(strstr(buf, "no data"));
	assert_null(strstr(buf, "class=\"data"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_downsample_keeps_extremes),
		cmocka_unit_test(test_downsample_gaps_and_small),
		cmocka_unit_test(test_chart_no_data),
		cmocka_unit_test(test_bucket_chart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
