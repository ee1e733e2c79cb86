#include "config.h"

/* The HTML report's charts (svg.h): lines over time or throughput with a
 * min/max band, histogram bars on a log axis, markers. Geometry only: the
 * colours are the page's CSS classes (l0.. lines, b0.. bands), so one
 * chart serves the light and the dark page and the printout. */

#include "infertop/svg.h"

#include <math.h>
#include <string.h>

/* The viewBox and the plot area inside it. */
#define W 640.0
#define H 220.0
#define PL 52.0
#define PR 12.0
#define PT 22.0
#define PB 30.0
#define NCLASSES 6

void svg_escape(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			/* A control byte is no text, and a NUL-like one
			 * would make the page invalid. */
			if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
				fputs("&#xFFFD;", out);
			else
				fputc(*p, out);
		}
	}
}

void svg_num(char *buf, size_t cap, double v)
{
	double a = fabs(v);
	if (!isfinite(v))
		snprintf(buf, cap, "-");
	else if (a >= 1e6)
		snprintf(buf, cap, "%.3gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, cap, "%.3gk", v / 1e3);
	else if (a >= 1000)
		snprintf(buf, cap, "%.0f", v);
	else
		snprintf(buf, cap, "%.3g", v);
}

size_t svg_downsample(const double *x, const double *v, size_t n, size_t nb, struct svg_point *out)
{
	if (nb == 0 || n == 0)
		return 0;
	if (n <= nb) {
		for (size_t i = 0; i < n; i++)
			out[i] = (struct svg_point){ x[i], v[i], v[i], v[i] };
		return n;
	}
	double x0 = x[0], span = x[n - 1] - x[0];
	double w = span > 0 ? span / (double)nb : 1.0;
	size_t k = 0, cur = (size_t)-1, cnt = 0;
	double sum = 0, lo = 0, hi = 0;
	/* One pass, x ascending: a slice is written when the next starts. */
	for (size_t i = 0; i <= n; i++) {
		size_t b = 0;
		if (i < n) {
			double f = (x[i] - x0) / w;
			b = f >= (double)nb ? nb - 1 : f > 0 ? (size_t)f : 0;
		}
		if (i == n || b != cur) {
			if (cur != (size_t)-1 && k < nb) {
				double mid = x0 + ((double)cur + 0.5) * w;
				out[k++] = cnt ? (struct svg_point){ mid, sum / (double)cnt, lo, hi }
					       : (struct svg_point){ mid, NAN, NAN, NAN };
			}
			if (i == n)
				break;
			cur = b;
			cnt = 0;
			sum = 0;
		}
		if (isnan(v[i]))
			continue;
		if (cnt == 0 || v[i] < lo)
			lo = v[i];
		if (cnt == 0 || v[i] > hi)
			hi = v[i];
		sum += v[i];
		cnt++;
	}
	return k;
}

/* A step of about span/n, rounded to 1, 2, 2.5 or 5 times a power of ten. */
static double nice_step(double span, int n)
{
	if (!(span > 0))
		return 1;
	double raw = span / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
}

/* Seconds as a time axis labels them: 45s, 5m, 1m30s, 2h, 1h30m. */
static void time_label(char *buf, size_t cap, double s)
{
	long t = lround(s);
	if (t < 60)
		snprintf(buf, cap, "%lds", t);
	else if (t < 3600)
		snprintf(buf, cap, t % 60 ? "%ldm%lds" : "%ldm", t / 60, t % 60);
	else
		snprintf(buf, cap, t % 3600 / 60 ? "%ldh%ldm" : "%ldh", t / 3600, t % 3600 / 60);
}

static double time_step(double span)
{
	static const double steps[] = { 1,    2,    5,    10,    15,    30,    60,    120,   300,
					600,  900,  1800, 3600,  7200,  10800, 21600, 43200, 86400 };
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if (span / steps[i] <= 6)
			return steps[i];
	return nice_step(span / 86400, 6) * 86400;
}

struct frame {
	enum svg_x kind;
	double x0, x1, y0, y1;
};

static double fx(const struct frame *f, double x)
{
	double a = f->kind == SVG_X_LOG ? log10(x) : x, b0 = f->kind == SVG_X_LOG ? log10(f->x0) : f->x0,
	       b1 = f->kind == SVG_X_LOG ? log10(f->x1) : f->x1;
	return PL + (b1 > b0 ? (a - b0) / (b1 - b0) : 0.5) * (W - PL - PR);
}

static double fy(const struct frame *f, double y)
{
	return H - PB - (f->y1 > f->y0 ? (y - f->y0) / (f->y1 - f->y0) : 0) * (H - PT - PB);
}

static void open_chart(FILE *out, const struct svg_chart *c)
{
	fputs("<figure class=\"chart\"><figcaption>", out);
	svg_escape(out, c->title);
	fputs("</figcaption>\n<svg viewBox=\"0 0 640 220\" role=\"img\" aria-label=\"", out);
	svg_escape(out, c->title);
	fputs("\" xmlns=\"http://www.w3.org/2000/svg\">\n", out);
}

/* The horizontal grid and the y tick labels. */
static void y_axis(FILE *out, const struct frame *f)
{
	char b[32];
	double ys = nice_step(f->y1 - f->y0, 4);
	fputs("<path class=\"ax\" d=\"", out);
	for (double y = f->y0; y <= f->y1 + ys * 1e-9; y += ys)
		fprintf(out, "M%.1f %.1fH%.1f", PL, fy(f, y), W - PR);
	fputs("\"/>\n", out);
	for (double y = f->y0; y <= f->y1 + ys * 1e-9; y += ys) {
		svg_num(b, sizeof b, fabs(y) < ys * 1e-9 ? 0 : y);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", PL - 4, fy(f, y) + 4, b);
	}
}

/* The units under the x axis and above the y axis. */
static void units(FILE *out, const char *x_unit, const char *y_unit)
{
	fprintf(out, "<text class=\"u\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", W - PR, H - 2);
	svg_escape(out, x_unit);
	fprintf(out, "</text>\n<text class=\"u\" x=\"%.1f\" y=\"%.1f\">", PL - 4, PT - 10);
	svg_escape(out, y_unit);
	fputs("</text>\n", out);
}

/* Grid, tick labels and axis units of the frame. */
static void axes(FILE *out, const struct svg_chart *c, const struct frame *f)
{
	char b[32];
	y_axis(out, f);
	if (f->kind == SVG_X_LOG) {
		/* Decades; 2 and 5 too when the axis spans under two. */
		bool fine = f->x1 < f->x0 * 100;
		for (double d = pow(10, floor(log10(f->x0))); d <= f->x1 * 1.0001; d *= 10) {
			for (int k = 1; k <= 5; k += k == 1 ? 1 : 3) {
				double x = d * k;
				if ((k > 1 && !fine) || x < f->x0 * 0.9999 || x > f->x1 * 1.0001)
					continue;
				svg_num(b, sizeof b, x);
				fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
					fx(f, x), H - PB + 14, b);
			}
		}
	} else {
		double xs = c->x == SVG_X_TIME ? time_step(f->x1 - f->x0) : nice_step(f->x1 - f->x0, 5);
		for (double x = ceil(f->x0 / xs) * xs; x <= f->x1 + xs * 1e-9; x += xs) {
			if (c->x == SVG_X_TIME)
				time_label(b, sizeof b, x);
			else
				svg_num(b, sizeof b, x);
			fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", fx(f, x),
				H - PB + 14, b);
		}
	}
	units(out, c->x == SVG_X_TIME ? "time since start" : c->x_unit, c->y_unit);
}

static void marks_draw(FILE *out, const struct frame *f, const struct svg_mark *m, size_t nm)
{
	size_t shown = 0;
	for (size_t i = 0; i < nm; i++)
		if (m[i].x >= f->x0 && m[i].x <= f->x1)
			shown++;
	size_t k = 0;
	for (size_t i = 0; i < nm; i++) {
		if (!(m[i].x >= f->x0 && m[i].x <= f->x1))
			continue;
		double x = fx(f, m[i].x);
		fprintf(out, "<line class=\"mk\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" data-label=\"", x, PT, x,
			H - PB);
		svg_escape(out, m[i].label);
		double val = isnan(m[i].value) ? m[i].x : m[i].value;
		char vb[32];
		svg_num(vb, sizeof vb, val);
		/* A tooltip without script: the label and the figure. */
		fprintf(out, "\" data-value=\"%.17g\"><title>", val);
		svg_escape(out, m[i].label);
		fprintf(out, " %s</title></line>\n", vb);
		/* Labels only while they fit: staggered on three rows. */
		if (m[i].label && shown <= 12) {
			bool right = x > W - PR - 60;
			fprintf(out, "<text class=\"mt\" x=\"%.1f\" y=\"%.1f\"%s>", right ? x - 3 : x + 3,
				PT + 10 + (double)(k % 3) * 11, right ? " text-anchor=\"end\"" : "");
			svg_escape(out, m[i].label);
			fputs("</text>\n", out);
		}
		k++;
	}
}

static void legend(FILE *out, const struct svg_line *lines, size_t nlines, const bool *drawn)
{
	if (nlines < 2)
		return;
	fputs("<ul class=\"lg\">", out);
	for (size_t i = 0; i < nlines; i++) {
		if (!drawn[i])
			continue;
		fprintf(out, "<li><span class=\"sw s%zu\"></span>", i % NCLASSES);
		svg_escape(out, lines[i].name);
		fputs("</li>", out);
	}
	fputs("</ul>", out);
}

static bool known(const struct svg_point *p)
{
	return isfinite(p->x) && isfinite(p->v);
}

void svg_line_chart(FILE *out, const struct svg_chart *c, const struct svg_line *lines, size_t nlines,
		    const struct svg_mark *marks, size_t nmarks)
{
	struct frame f = { c->x, INFINITY, -INFINITY, 0, c->y_max_hint > 0 ? c->y_max_hint : 0 };
	bool drawn[16] = { 0 };
	bool any = false;
	for (size_t l = 0; l < nlines && l < 16; l++) {
		for (size_t i = 0; i < lines[l].n; i++) {
			const struct svg_point *p = &lines[l].p[i];
			if (!known(p) || (c->x == SVG_X_LOG && !(p->x > 0)))
				continue;
			drawn[l] = any = true;
			f.x0 = fmin(f.x0, p->x);
			f.x1 = fmax(f.x1, p->x);
			double lo = lines[l].band && isfinite(p->lo) ? p->lo : p->v;
			double hi = lines[l].band && isfinite(p->hi) ? p->hi : p->v;
			f.y0 = fmin(f.y0, lo);
			f.y1 = fmax(f.y1, hi);
		}
	}
	open_chart(out, c);
	if (!any) {
		fputs("<text class=\"nd\" x=\"320\" y=\"110\" text-anchor=\"middle\">no data</text>\n</svg>", out);
		fputs("</figure>\n", out);
		return;
	}
	if (f.x1 <= f.x0) {
		/* One x: a little room either side. */
		double d = f.x0 != 0 ? fabs(f.x0) * 0.1 : 1;
		f.x0 -= c->x == SVG_X_LOG ? 0 : d;
		f.x1 += d;
		if (c->x == SVG_X_TIME && f.x0 < 0)
			f.x0 = 0;
	}
	if (f.y1 <= f.y0)
		f.y1 = f.y0 + 1;
	double ys = nice_step(f.y1 - f.y0, 4);
	f.y1 = ceil(f.y1 / ys - 1e-9) * ys;
	f.y0 = floor(f.y0 / ys + 1e-9) * ys;
	axes(out, c, &f);
	for (size_t l = 0; l < nlines && l < 16; l++) {
		const struct svg_line *ln = &lines[l];
		if (!drawn[l])
			continue;
		size_t cls = l % NCLASSES;
		if (ln->band) {
			/* Each run of known points: the max forward, the min back. */
			fprintf(out, "<path class=\"band b%zu\" d=\"", cls);
			for (size_t i = 0; i < ln->n;) {
				if (!known(&ln->p[i]) || !isfinite(ln->p[i].hi)) {
					i++;
					continue;
				}
				size_t j = i;
				while (j < ln->n && known(&ln->p[j]) && isfinite(ln->p[j].hi) && isfinite(ln->p[j].lo))
					j++;
				for (size_t k = i; k < j; k++)
					fprintf(out, "%c%.1f %.1f", k == i ? 'M' : 'L', fx(&f, ln->p[k].x),
						fy(&f, ln->p[k].hi));
				for (size_t k = j; k-- > i;)
					fprintf(out, "L%.1f %.1f", fx(&f, ln->p[k].x), fy(&f, ln->p[k].lo));
				fputc('Z', out);
				i = j > i ? j : i + 1;
			}
			fputs("\"/>\n", out);
		}
		size_t npts = 0;
		for (size_t i = 0; i < ln->n; i++)
			npts += known(&ln->p[i]);
		fprintf(out, "<path class=\"data l%zu\" data-n=\"%zu\" d=\"", cls, npts);
		bool pen = false;
		for (size_t i = 0; i < ln->n; i++) {
			if (!known(&ln->p[i]) || (c->x == SVG_X_LOG && !(ln->p[i].x > 0))) {
				pen = false;
				continue;
			}
			/* A lone point between gaps still shows: a zero-length
			 * segment with round caps. */
			bool lone = !pen && (i + 1 >= ln->n || !known(&ln->p[i + 1]));
			fprintf(out, "%c%.1f %.1f%s", pen ? 'L' : 'M', fx(&f, ln->p[i].x), fy(&f, ln->p[i].v),
				lone ? "h0" : "");
			pen = true;
		}
		fputs("\"><title>", out);
		svg_escape(out, ln->name);
		fputs("</title></path>\n", out);
		if (ln->dots) {
			fprintf(out, "<path class=\"dots l%zu\" d=\"", cls);
			for (size_t i = 0; i < ln->n; i++)
				if (known(&ln->p[i]))
					fprintf(out, "M%.1f %.1fh0", fx(&f, ln->p[i].x), fy(&f, ln->p[i].v));
			fputs("\"/>\n", out);
		}
	}
	marks_draw(out, &f, marks, nmarks);
	fputs("</svg>", out);
	legend(out, lines, nlines, drawn);
	fputs("</figure>\n", out);
}

void svg_hist_chart(FILE *out, const struct svg_chart *c, const struct svg_bin *bins, size_t nbins,
		    const struct svg_mark *marks, size_t nmarks)
{
	struct frame f = { SVG_X_LOG, INFINITY, -INFINITY, 0, 0 };
	size_t used = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < nbins; i++) {
		if (!(bins[i].lo > 0) || !(bins[i].hi > bins[i].lo))
			continue;
		f.x0 = fmin(f.x0, bins[i].lo);
		f.x1 = fmax(f.x1, bins[i].hi);
		f.y1 = fmax(f.y1, (double)bins[i].count);
		used += bins[i].count > 0;
		total += bins[i].count;
	}
	open_chart(out, c);
	if (!used) {
		fputs("<text class=\"nd\" x=\"320\" y=\"110\" text-anchor=\"middle\">no data</text>\n</svg></figure>\n", out);
		return;
	}
	double ys = nice_step(f.y1, 4);
	f.y1 = ceil(f.y1 / ys - 1e-9) * ys;
	axes(out, c, &f);
	fprintf(out, "<path class=\"data bars\" data-n=\"%zu\" data-total=\"%llu\" d=\"", used,
		(unsigned long long)total);
	for (size_t i = 0; i < nbins; i++) {
		if (!bins[i].count || !(bins[i].lo > 0) || !(bins[i].hi > bins[i].lo))
			continue;
		double x0 = fx(&f, bins[i].lo), x1 = fx(&f, bins[i].hi);
		if (x1 - x0 < 1)
			x1 = x0 + 1;
		fprintf(out, "M%.1f %.1fV%.1fH%.1fV%.1fZ", x0, H - PB, fy(&f, (double)bins[i].count), x1, H - PB);
	}
	fputs("\"/>\n", out);
	marks_draw(out, &f, marks, nmarks);
	fputs("</svg></figure>\n", out);
}

void svg_bucket_chart(FILE *out, const struct svg_chart *c, const struct svg_bin *bins, size_t nbins)
{
	struct frame f = { SVG_X_LINEAR, 0, (double)nbins, 0, 0 };
	size_t used = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < nbins; i++) {
		f.y1 = fmax(f.y1, (double)bins[i].count);
		used += bins[i].count > 0;
		total += bins[i].count;
	}
	open_chart(out, c);
	if (!used) {
		fputs("<text class=\"nd\" x=\"320\" y=\"110\" text-anchor=\"middle\">no data</text>\n</svg></figure>\n", out);
		return;
	}
	double ys = nice_step(f.y1, 4);
	f.y1 = ceil(f.y1 / ys - 1e-9) * ys;
	y_axis(out, &f);
	/* The bounds under the bars' edges, as many as fit. */
	size_t every = nbins / 12 + 1;
	char b[32];
	for (size_t i = 0; i <= nbins; i++) {
		if (i % every && i != nbins)
			continue;
		double v = i < nbins ? bins[i].lo : bins[nbins - 1].hi;
		if (isinf(v))
			snprintf(b, sizeof b, "+Inf");
		else
			svg_num(b, sizeof b, v);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", fx(&f, (double)i),
			H - PB + 14, b);
	}
	units(out, c->x_unit, c->y_unit);
	/* The counts and bounds as drawn, for a reader (and a test). */
	fprintf(out, "<path class=\"data bars\" data-n=\"%zu\" data-total=\"%llu\" data-counts=\"", used,
		(unsigned long long)total);
	for (size_t i = 0; i < nbins; i++)
		fprintf(out, "%s%llu", i ? " " : "", (unsigned long long)bins[i].count);
	fputs("\" data-le=\"", out);
	for (size_t i = 0; i < nbins; i++)
		fprintf(out, "%s%.17g", i ? " " : "", bins[i].hi);
	fputs("\" d=\"", out);
	for (size_t i = 0; i < nbins; i++) {
		if (!bins[i].count)
			continue;
		double x0 = fx(&f, (double)i) + 1, x1 = fx(&f, (double)i + 1) - 1;
		fprintf(out, "M%.1f %.1fV%.1fH%.1fV%.1fZ", x0, H - PB, fy(&f, (double)bins[i].count), x1, H - PB);
	}
	fputs("\"/>\n</svg></figure>\n", out);
}
