#include "config.h"

#include "infertop/load.h"
#include "infertop/options.h"
#include "infertop/widget.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "infertop/server.h"
#include "infertop/view.h"

const struct widget widgets[PANEL_KIND_N] = {
#define PANEL(id, name, draw, boxed, focusable) [PANEL_##id] = {name, draw, boxed},
#include "infertop/panels.def"
};

unsigned widgets_layout_flags(const struct run_view *e)
{
	unsigned f = 0;
	if (e->cfg && e->cfg->gpu_metrics_url)
		f |= LAYOUT_GPU;
	if (e->load->mode == LOAD_OPEN)
		f |= LAYOUT_QUEUE;
	if (e->server && e->server->status != SERVER_OFF)
		f |= LAYOUT_SERVER;
	if (e->stats && w_sessions_shown(e->stats))
		f |= LAYOUT_SESSIONS;
	if (w_replicas_shown(e->server))
		f |= LAYOUT_REPLICAS;
	return f;
}

bool widgets_inner(const struct panel *p, struct rect *inner)
{
	*inner = p->r;
	/* A one-line strip (the errors line at 24 rows) stays a strip. */
	if ((unsigned)p->kind >= PANEL_KIND_N || !widgets[p->kind].boxed || p->r.h < 3 || p->r.w < 8)
		return false;
	*inner = (struct rect){p->r.y, p->r.x + 1, p->r.h - 1, p->r.w - 2};
	return true;
}

void widgets_render(WINDOW *w, const struct layout *l, const struct dash *d)
{
	wattr_set(w, (attr_t)d->attr[THEME_R_NORMAL], (short)PAIR_NUMBER(d->attr[THEME_R_NORMAL]), NULL);
	wbkgdset(w, (chtype)(' ' | d->attr[THEME_R_NORMAL]));
	werase(w);
	for (int i = 0; i < l->n; i++) {
		const struct panel *p = &l->p[i];
		if ((unsigned)p->kind >= PANEL_KIND_N || !widgets[p->kind].draw)
			continue;
		struct rect in;
		if (widgets_inner(p, &in))
			wd_box(w, &p->r, d, i == l->focus);
		widgets[p->kind].draw(w, &in, p->arg, d);
	}
}

/* A run of one character, horizontal or vertical, in one curses call:
 * borders are most of a frame's cells, so not one wd_put per cell. */
static void line_of(WINDOW *w, int y, int x, int n, bool vertical, unsigned long attr, wchar_t ch)
{
	if (n <= 0)
		return;
	cchar_t cc;
	wchar_t wc[2] = {ch, 0};
	setcchar(&cc, wc, (attr_t)(attr & ~A_COLOR), (short)PAIR_NUMBER(attr), NULL);
	if (vertical)
		mvwvline_set(w, y, x, &cc, n);
	else
		mvwhline_set(w, y, x, &cc, n);
}

void wd_repeat(WINDOW *w, const struct rect *r, int y, int x, int n, unsigned long attr, wchar_t ch)
{
	if (y < 0 || y >= r->h)
		return;
	if (x < 0) {
		n += x;
		x = 0;
	}
	if (x + n > r->w)
		n = r->w - x;
	line_of(w, r->y + y, r->x + x, n, false, attr, ch);
}

void wd_box(WINDOW *w, const struct rect *r, const struct dash *d, bool focus)
{
	if (r->h < 2 || r->w < 2)
		return;
	unsigned long b = wd_attr(d, focus ? THEME_R_TITLE : THEME_R_BORDER);
	wchar_t h = d->ascii ? L'-' : 0x2500, v = d->ascii ? L'|' : 0x2502;
	/* Rounded corners, as btop draws them. */
	wchar_t c[4] = {L'+', L'+', L'+', L'+'};
	if (!d->ascii) {
		c[0] = 0x256d;
		c[1] = 0x256e;
		c[2] = 0x2570;
		c[3] = 0x256f;
	}
	int y1 = r->y + r->h - 1, x1 = r->x + r->w - 1;
	line_of(w, r->y, r->x + 1, r->w - 2, false, b, h);
	line_of(w, y1, r->x + 1, r->w - 2, false, b, h);
	line_of(w, r->y + 1, r->x, r->h - 2, true, b, v);
	line_of(w, r->y + 1, x1, r->h - 2, true, b, v);
	line_of(w, r->y, r->x, 1, false, b, c[0]);
	line_of(w, r->y, x1, 1, false, b, c[1]);
	line_of(w, y1, r->x, 1, false, b, c[2]);
	line_of(w, y1, x1, 1, false, b, c[3]);
}

struct rect wd_bottom_border(const struct rect *r)
{
	return (struct rect){r->y + r->h, r->x, 1, r->w};
}

/* Nice steps for a time axis, in seconds: 1-2-5 (and 30, the half of a
 * minute or an hour) so that ticks read -10s -20s -30s or -1m -2m, never
 * the quarter points of an odd span (-27s -14s). */
static const int64_t time_steps_s[] = {1,    2,    5,    10,    20,    30,     60,     120,   300,
				       600,  1200, 1800, 3600, 7200, 18000, 36000, 86400, 172800};

int64_t wd_time_step(int64_t span_ns, int max_ticks)
{
	size_t n = sizeof time_steps_s / sizeof time_steps_s[0];
	if (max_ticks < 1)
		max_ticks = 1;
	for (size_t i = 0; i < n; i++) {
		int64_t st = time_steps_s[i] * 1000000000LL;
		if (span_ns / st <= max_ticks)
			return st;
	}
	return time_steps_s[n - 1] * 1000000000LL;
}

void wd_fmt_tick(char *buf, size_t cap, int64_t t_ns, int64_t step_ns)
{
	/* One unit per axis, the step's: every tick is a whole number of it. */
	long long t = (long long)(t_ns / 1000000000LL), st = (long long)(step_ns / 1000000000LL);
	if (st >= 3600 && st % 3600 == 0)
		snprintf(buf, cap, "-%lldh", t / 3600);
	else if (st >= 60 && st % 60 == 0)
		snprintf(buf, cap, "-%lldm", t / 60);
	else
		snprintf(buf, cap, "-%llds", t);
}

/* "now" at the right; ticks at whole multiples of a nice step back from
 * it, each centred on its column, where it fits with two columns to
 * spare on each side. */
void wd_time_axis(WINDOW *w, const struct rect *r, int64_t span, const struct dash *d)
{
	struct rect ax = wd_bottom_border(r);
	unsigned long dim = wd_attr(d, THEME_R_DIM);
	int now_x = ax.w - 1 - 3;
	if (now_x < 1 || span <= 0)
		return;
	wd_put(w, &ax, 0, now_x, dim, "now");
	int prev_lo = now_x; /* the leftmost label so far starts here */
	/* A label is at most 5 columns ("-120s"), 2 spare on each side. */
	int64_t step = wd_time_step(span, (ax.w - 4) / 8);
	for (int64_t t = step; t <= span; t += step) {
		char lab[32];
		wd_fmt_tick(lab, sizeof lab, t, step);
		int len = wd_width(lab);
		int col = (int)lround((double)(ax.w - 1) * (1.0 - (double)t / (double)span));
		int x = col - len / 2;
		if (x < 1)
			x = 1;
		if (x + len + 2 > prev_lo)
			continue;
		wd_put(w, &ax, 0, x, dim, lab);
		prev_lo = x;
	}
}

void wd_fmt_span(char *buf, size_t cap, int64_t ns)
{
	/* Whole hours and minutes read as such ("-1h", "-1m", "-30s"). */
	double s = (double)ns / 1e9;
	if (s >= 3599.5 && (fmod(s + 0.5, 3600) < 1 || s >= 36000))
		snprintf(buf, cap, "%.0fh", s / 3600);
	else if (s >= 59.5 && (fmod(s + 0.5, 60) < 1 || s >= 99.5) && s < 5940)
		snprintf(buf, cap, "%.0fm", s / 60);
	else if (s < 99.5)
		snprintf(buf, cap, "%.0fs", s);
	else
		snprintf(buf, cap, "%.1fh", s / 3600);
}

unsigned long wd_attr(const struct dash *d, enum theme_role role)
{
	return d->attr[role];
}

const char *wd_dash(const struct dash *d)
{
	return d->ascii ? "-" : "\xe2\x80\x93";
}

const char *wd_vbar(const struct dash *d)
{
	return d->ascii ? "|" : "\xe2\x94\x82";
}

static void set_attr(WINDOW *w, unsigned long attr)
{
	wattr_set(w, (attr_t)(attr & ~A_COLOR), (short)PAIR_NUMBER(attr), NULL);
}

/* Decodes one UTF-8 character; invalid bytes become '?'. */
static size_t next_char(const char *s, wchar_t *wc, mbstate_t *st)
{
	size_t n = mbrtowc(wc, s, MB_CUR_MAX, st);
	if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
		memset(st, 0, sizeof *st);
		*wc = L'?';
		return 1;
	}
	return n;
}

int wd_width(const char *s)
{
	mbstate_t st;
	memset(&st, 0, sizeof st);
	int w = 0;
	while (*s) {
		wchar_t wc;
		s += next_char(s, &wc, &st);
		int cw = wcwidth(wc);
		w += cw < 0 ? 1 : cw;
	}
	return w;
}

void wd_truncate(char *s, int maxw, bool ascii)
{
	if (maxw <= 0) {
		s[0] = '\0';
		return;
	}
	if (wd_width(s) <= maxw)
		return;
	const char *ell = ascii ? "~" : "\xe2\x80\xa6";
	mbstate_t st;
	memset(&st, 0, sizeof st);
	int w = 0;
	char *p = s;
	while (*p) {
		wchar_t wc;
		size_t n = next_char(p, &wc, &st);
		int cw = wcwidth(wc);
		if (w + (cw < 0 ? 1 : cw) > maxw - 1)
			break;
		w += cw < 0 ? 1 : cw;
		p += n;
	}
	/* The ellipsis is at most 3 bytes and replaces at least one. */
	size_t keep = (size_t)(p - s);
	memmove(s + keep, ell, strlen(ell) + 1);
}

void wd_truncate_mid(char *s, size_t cap, int maxw, bool ascii)
{
	if (maxw <= 2 || wd_width(s) <= maxw) {
		wd_truncate(s, maxw, ascii);
		return;
	}
	/* The tail's characters, from the end, while they fit in half. */
	int tailw = (maxw - 1) / 2, headw = maxw - 1 - tailw;
	mbstate_t st;
	memset(&st, 0, sizeof st);
	const char *p = s, *tail = s + strlen(s);
	int w = 0, total = wd_width(s);
	/* Walk from the start: the head ends where headw is reached, the
	 * tail starts where what is left is at most tailw wide. */
	const char *head_end = NULL;
	while (*p) {
		wchar_t wc;
		size_t n = next_char(p, &wc, &st);
		int cw = wcwidth(wc);
		cw = cw < 0 ? 1 : cw;
		if (!head_end && w + cw > headw)
			head_end = p;
		if (total - w <= tailw) {
			tail = p;
			break;
		}
		w += cw;
		p += n;
	}
	if (!head_end)
		head_end = p;
	const char *ell = ascii ? "~" : "\xe2\x80\xa6";
	size_t keep = (size_t)(head_end - s), el = strlen(ell), tl = strlen(tail);
	/* The middle dropped is at least one byte: "~" always fits in its
	 * place, the 3-byte ellipsis when cap has the room. */
	if (keep + el + tl + 1 > cap) {
		ell = "~";
		el = 1;
	}
	memmove(s + keep + el, tail, tl + 1);
	memcpy(s + keep, ell, el);
}

int wd_put(WINDOW *w, const struct rect *r, int y, int x, unsigned long attr, const char *s)
{
	if (y < 0 || y >= r->h || x >= r->w || !s)
		return x;
	wchar_t buf[512];
	int n = 0, col = x;
	mbstate_t st;
	memset(&st, 0, sizeof st);
	while (*s && n < (int)(sizeof buf / sizeof buf[0])) {
		wchar_t wc;
		size_t len = next_char(s, &wc, &st);
		int cw = wcwidth(wc);
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		if (col + cw > r->w)
			break;
		s += len;
		if (col >= 0)
			buf[n++] = wc;
		col += cw;
	}
	if (n > 0) {
		set_attr(w, attr);
		mvwaddnwstr(w, r->y + y, r->x + (x < 0 ? 0 : x), buf, n);
	}
	return col;
}

int wd_printf(WINDOW *w, const struct rect *r, int y, int x, unsigned long attr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return wd_put(w, r, y, x, attr, buf);
}

int wd_put_right(WINDOW *w, const struct rect *r, int y, int x_end, unsigned long attr, const char *s)
{
	int x = x_end - wd_width(s);
	return wd_put(w, r, y, x < 0 ? 0 : x, attr, s);
}

void wd_clear_row(WINDOW *w, const struct rect *r, int y, int x, unsigned long attr)
{
	if (y < 0 || y >= r->h || x >= r->w)
		return;
	if (x < 0)
		x = 0;
	set_attr(w, attr);
	mvwhline(w, r->y + y, r->x + x, ' ', r->w - x);
}

int wd_title(WINDOW *w, const struct rect *r, const struct dash *d, const char *title, const char *extra)
{
	/* Over the box's top border, which keeps its colour (the focus's). */
	unsigned long b = wd_attr(d, THEME_R_BORDER);
	int x = wd_put(w, r, 0, 1, b, " ");
	x = wd_put(w, r, 0, x, wd_attr(d, THEME_R_TITLE), title);
	if (extra && *extra) {
		x = wd_put(w, r, 0, x, b, " ");
		x = wd_put(w, r, 0, x, wd_attr(d, THEME_R_DIM), extra);
	}
	return wd_put(w, r, 0, x, b, " ");
}

void wd_bar(WINDOW *w, const struct rect *r, int y, int x, int width, double frac, const struct dash *d)
{
	if (width <= 0)
		return;
	static const char *const eighths[8] = {"", "\xe2\x96\x8f", "\xe2\x96\x8e", "\xe2\x96\x8d",
					      "\xe2\x96\x8c", "\xe2\x96\x8b", "\xe2\x96\x8a", "\xe2\x96\x89"};
	unsigned long fill = wd_attr(d, THEME_R_BAR_FILL), empty = wd_attr(d, THEME_R_BAR_EMPTY);
	if (isnan(frac)) {
		for (int i = 0; i < width; i++)
			wd_put(w, r, y, x + i, empty, d->ascii ? "." : "\xe2\x96\x91");
		return;
	}
	if (frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	/* Warm colours as the bar fills: the glance that matters is "full?". */
	if (frac >= 0.95)
		fill = wd_attr(d, THEME_R_CRIT);
	else if (frac >= 0.80)
		fill = wd_attr(d, THEME_R_WARN);
	int units = (int)lround(frac * width * (d->ascii ? 1 : 8));
	for (int i = 0; i < width; i++) {
		int u = d->ascii ? units - i : units - 8 * i;
		if (d->ascii)
			wd_put(w, r, y, x + i, u > 0 ? fill : empty, u > 0 ? "#" : ".");
		else if (u >= 8)
			wd_put(w, r, y, x + i, fill, "\xe2\x96\x88");
		else if (u > 0)
			wd_put(w, r, y, x + i, fill, eighths[u]);
		else
			wd_put(w, r, y, x + i, empty, "\xe2\x96\x91");
	}
}

void wd_fmt_ms(char *buf, size_t cap, double ms)
{
	if (isnan(ms) || ms < 0)
		snprintf(buf, cap, "?");
	else if (ms < 9.995)
		snprintf(buf, cap, "%.2f", ms);
	else if (ms < 99.95)
		snprintf(buf, cap, "%.1f", ms);
	else if (ms < 9999.5)
		snprintf(buf, cap, "%.0f", ms);
	else if (ms < 99950)
		snprintf(buf, cap, "%.1fs", ms / 1000);
	else if (ms < 999500)
		snprintf(buf, cap, "%.0fs", ms / 1000);
	else
		snprintf(buf, cap, "%.0fm", ms / 60000);
}

void wd_fmt_si(char *buf, size_t cap, double v)
{
	static const char sfx[] = {'k', 'M', 'G', 'T'};
	if (isnan(v)) {
		snprintf(buf, cap, "?");
		return;
	}
	double a = fabs(v);
	if (a == floor(a) && a < 9999.5) {
		snprintf(buf, cap, "%.0f", v); /* whole numbers stay whole */
		return;
	}
	if (a < 9.995) {
		snprintf(buf, cap, "%.2f", v);
		return;
	}
	if (a < 99.95) {
		snprintf(buf, cap, "%.1f", v);
		return;
	}
	if (a < 9999.5) {
		snprintf(buf, cap, "%.0f", v);
		return;
	}
	int k = -1;
	while (a >= 999.5 && k < 3) {
		a /= 1000;
		v /= 1000;
		k++;
	}
	snprintf(buf, cap, a < 9.995 ? "%.2f%c" : a < 99.95 ? "%.1f%c" : "%.0f%c", v, sfx[k]);
}

void wd_fmt_count(char *buf, size_t cap, uint64_t n)
{
	if (n < 100000)
		snprintf(buf, cap, "%llu", (unsigned long long)n);
	else
		wd_fmt_si(buf, cap, (double)n);
}

void wd_fmt_elapsed(char *buf, size_t cap, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	long long s = ns / 1000000000LL;
	snprintf(buf, cap, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
}
