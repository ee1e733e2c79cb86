#ifndef INFERTOP_SVG_H
#define INFERTOP_SVG_H

/*
 * Chart primitives of the HTML report (src/result/svg.c): inline SVG sized
 * by its viewBox (the page scales it to its width), coloured by CSS
 * classes only (the page's stylesheet picks light or dark), so a chart
 * fetches nothing and needs no script. Each chart draws its data as
 * <path class="data"> elements carrying data-n (the points drawn), and
 * its markers as <line class="mk"> with data-label and data-value (the
 * figure as computed, to 17 digits): a test reads them back against the
 * JSON. Every text passes through svg_escape.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* s with &, <, >, " and ' as character references: safe in element text
 * and in quoted attributes. Bytes that are not text (controls but tab and
 * newline) become U+FFFD. NULL writes nothing. */
void svg_escape(FILE *out, const char *s);

/* One point of a line: x, the value drawn, and the band around it (the
 * minimum and maximum of the samples it stands for). v NaN: a gap. */
struct svg_point {
	double x, v, lo, hi;
};

/* Reduces n samples (x ascending; v NaN where unknown) to at most nb
 * points, one per slice of equal x span: the slice's mean, with its
 * minimum and maximum kept as the band, so a spike stays visible however
 * long the run. A slice with no known sample is a gap (v NaN). n <= nb
 * copies the samples (band = value). Returns the points written to out
 * (nb of room). */
size_t svg_downsample(const double *x, const double *v, size_t n, size_t nb, struct svg_point *out);

/* One line of a chart: its name (the legend), its points, whether the
 * min/max band is drawn and whether each point gets a dot (sweeps). */
struct svg_line {
	const char *name;
	const struct svg_point *p;
	size_t n;
	bool band, dots;
};

/* A marker across the plot at x: a load change, a plan step, a
 * percentile, the knee. label NULL: unlabelled. value is what data-value
 * says (NaN: x). */
struct svg_mark {
	double x;
	const char *label;
	double value;
};

/* X axis kinds: seconds since the run's start (ticks as 30s, 5m, 2h), a
 * plain number, or a number on a log scale. */
enum svg_x { SVG_X_TIME, SVG_X_LINEAR, SVG_X_LOG };

struct svg_chart {
	const char *title;   /* the figure's caption and the SVG's aria-label */
	const char *x_unit;  /* under the axis, e.g. "output tok/s" */
	const char *y_unit;
	enum svg_x x;
	double y_max_hint;   /* > 0: the y axis reaches at least this */
};

/* A chart of lines over x, with markers: <figure> with the SVG and a
 * caption. Lines with no known point are left out; a chart with none
 * draws a "no data" note instead of an empty path. */
void svg_line_chart(FILE *out, const struct svg_chart *c, const struct svg_line *lines, size_t nlines,
		    const struct svg_mark *marks, size_t nmarks);

/* One bar of a histogram: the samples in (lo, hi]. */
struct svg_bin {
	double lo, hi;
	uint64_t count;
};

/* Bars on a log x axis (lo of the first bin > 0), percentile markers
 * on top. */
void svg_hist_chart(FILE *out, const struct svg_chart *c, const struct svg_bin *bins, size_t nbins,
		    const struct svg_mark *marks, size_t nmarks);

/* A server's histogram buckets as they are: one bar of equal width a
 * bucket (lo, hi] in order (hi INFINITY: the overflow bucket), the bounds
 * under the bars' edges; nothing is placed inside a bucket. The data path
 * carries data-counts and data-le (each bucket's count and upper bound). */
void svg_bucket_chart(FILE *out, const struct svg_chart *c, const struct svg_bin *bins, size_t nbins);

/* A number as an axis or table shows it: 3 significant digits, k/M past
 * ten thousand. */
void svg_num(char *buf, size_t cap, double v);

#endif
