#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/keys.h"
#include "infertop/widget.h"

/* The ? screen: every action of the key table, in table order, then a few
 * notes. Texts wrap at word boundaries to the overlay's width; when they
 * do not all fit (80x24), the overlay scrolls and its last row says there
 * is more. */

#define KEYCOL 14
#define MAX_LINES 256

static const char *const notes[] = {
	"While typing a number: digits (and . for a rate), Backspace, Enter sets it, Esc cancels.",
	"Latency figures are in ms: window = the last --window seconds, run = since the start.",
	"A dash means unknown (no sample yet, or the server does not expose it), never zero.",
	"Scroll this list with Up/Down, j/k, PgUp/PgDn, Home/End.",
};
#define NNOTES (int)(sizeof notes / sizeof notes[0])

/* One row of the help: a slice of a text at a column, and for the first
 * row of a key's entry, the key's action. */
struct hline {
	int action;          /* KEY_ACT_NONE: a continuation or a note */
	const char *text;
	int len, x;
	bool dim;
};

/* Cuts text into rows of at most width bytes (the texts are ASCII),
 * breaking after the last space that fits; a word longer than the width
 * is cut, as nothing else can be done with it. */
static int wrap(const char *text, int width, int x, int action, bool dim, struct hline *out, int n, int cap)
{
	if (width < 1)
		width = 1;
	const char *s = text;
	do {
		while (*s == ' ')
			s++;
		int len = (int)strlen(s);
		if (len > width) {
			int cut = width;
			while (cut > 0 && s[cut] != ' ')
				cut--;
			len = cut > 0 ? cut : width;
		}
		if (n < cap)
			out[n] = (struct hline){action, s, len, x, dim};
		n++;
		action = KEY_ACT_NONE;
		s += len;
	} while (s[strspn(s, " ")] != '\0');
	return n;
}

/* The help's rows for a text area width columns wide (the theme line,
 * which names the current theme, is added by the drawing). */
static int help_lines(int width, struct hline *out, int cap)
{
	int n = 0;
	for (int i = 0; i < KEY_ACT_N; i++)
		n = wrap(keys_def((enum key_action)i)->help, width - KEYCOL, KEYCOL, i, false, out, n, cap);
	if (n < cap)
		out[n] = (struct hline){KEY_ACT_NONE, "", 0, 0, false};
	n++;
	for (int i = 0; i < NNOTES; i++)
		n = wrap(notes[i], width, 0, KEY_ACT_NONE, true, out, n, cap);
	return n < cap ? n : cap;
}

/* The text area inside the overlay's box (r is the widget's rectangle). */
static struct rect text_area(const struct rect *r)
{
	return (struct rect){r->y + 1, r->x + 1, r->h - 1, r->w - 2};
}

/* The colours line: how many the terminal gives and from which terminfo
 * entry, so a theme that looks off says why (256, not COLORTERM's 24-bit). */
static void colours_text(char *buf, size_t cap, const char *colours)
{
	snprintf(buf, cap, "Colours: %s. COLORTERM=truecolor asks for 24-bit (unset, TERM's own palette), "
		 "NO_COLOR=1 for none.",
		 colours && *colours ? colours : "unknown");
}

int w_help_max_top(const struct rect *r, const char *colours)
{
	struct rect in = text_area(r);
	struct hline lines[MAX_LINES];
	char ct[256];
	colours_text(ct, sizeof ct, colours);
	int n = help_lines(in.w, lines, MAX_LINES) + 1; /* + the theme line */
	n = wrap(ct, in.w, 0, KEY_ACT_NONE, true, lines, n, MAX_LINES);
	if (n > MAX_LINES)
		n = MAX_LINES;
	/* When scrolling, the last row is the "more" marker. */
	return n > in.h && in.h > 1 ? n - (in.h - 1) : 0;
}

void w_help_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	/* An overlay: its box is drawn, the panels below still show inside. */
	for (int y = 1; y < r->h; y++)
		wd_clear_row(w, r, y, 0, wd_attr(d, THEME_R_NORMAL));
	struct rect in = text_area(r);
	wd_title(w, r, d, "infertop keys", "(? or Esc closes)");
	struct hline lines[MAX_LINES];
	int n = help_lines(in.w, lines, MAX_LINES);
	char theme[160];
	snprintf(theme, sizeof theme, "Theme: %s (t: next; man 5 infertop-theme)",
		 d->theme_name ? d->theme_name : "default");
	n = wrap(theme, in.w, 0, KEY_ACT_NONE, true, lines, n, MAX_LINES);
	char ct[256];
	colours_text(ct, sizeof ct, d->colours);
	n = wrap(ct, in.w, 0, KEY_ACT_NONE, true, lines, n, MAX_LINES);
	if (n > MAX_LINES)
		n = MAX_LINES;

	bool scroll = n > in.h && in.h > 1;
	int rows = scroll ? in.h - 1 : in.h;
	int top = d->help_top;
	if (top > n - rows)
		top = n - rows;
	if (top < 0 || !scroll)
		top = 0;
	for (int y = 0; y < rows && top + y < n; y++) {
		const struct hline *l = &lines[top + y];
		char buf[256];
		snprintf(buf, sizeof buf, "%.*s", l->len, l->text);
		wd_put(w, &in, y, l->x, wd_attr(d, l->dim ? THEME_R_DIM : THEME_R_NORMAL), buf);
		if (l->action != KEY_ACT_NONE) {
			char kn[40];
			keys_names(keys_def((enum key_action)l->action), d->ascii, kn, sizeof kn);
			wd_put(w, &in, y, 0, wd_attr(d, THEME_R_KEY), kn);
		}
	}
	if (scroll) {
		char more[96];
		bool below = top + rows < n;
		const char *dn = d->ascii ? "v" : "\xe2\x96\xbc", *up = d->ascii ? "^" : "\xe2\x96\xb2";
		if (below)
			snprintf(more, sizeof more, "%s rows %d-%d of %d, more below: Down/j, PgDn", dn, top + 1, top + rows, n);
		else
			snprintf(more, sizeof more, "%s rows %d-%d of %d, the end: Up/k, PgUp, Home", up, top + 1, top + rows, n);
		wd_put(w, &in, rows, 0, wd_attr(d, THEME_R_KEY), more);
	}
}
