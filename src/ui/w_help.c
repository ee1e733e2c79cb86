#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/keys.h"
#include "infertop/widget.h"

/* The ? screen: every action of the key table, in table order. */

static void frame_box(WINDOW *w, const struct rect *r, const struct dash *d)
{
	unsigned long b = wd_attr(d, THEME_R_BORDER), n = wd_attr(d, THEME_R_NORMAL);
	const char *h = d->ascii ? "-" : "\xe2\x94\x80", *v = d->ascii ? "|" : "\xe2\x94\x82";
	const char *c[4] = {"+", "+", "+", "+"};
	if (!d->ascii) {
		c[0] = "\xe2\x94\x8c";
		c[1] = "\xe2\x94\x90";
		c[2] = "\xe2\x94\x94";
		c[3] = "\xe2\x94\x98";
	}
	for (int y = 0; y < r->h; y++)
		wd_clear_row(w, r, y, 0, n);
	for (int x = 1; x < r->w - 1; x++) {
		wd_put(w, r, 0, x, b, h);
		wd_put(w, r, r->h - 1, x, b, h);
	}
	for (int y = 1; y < r->h - 1; y++) {
		wd_put(w, r, y, 0, b, v);
		wd_put(w, r, y, r->w - 1, b, v);
	}
	wd_put(w, r, 0, 0, b, c[0]);
	wd_put(w, r, 0, r->w - 1, b, c[1]);
	wd_put(w, r, r->h - 1, 0, b, c[2]);
	wd_put(w, r, r->h - 1, r->w - 1, b, c[3]);
}

void w_help_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	frame_box(w, r, d);
	struct rect in = {r->y + 1, r->x + 2, r->h - 2, r->w - 4};
	int x = wd_put(w, r, 0, 2, wd_attr(d, THEME_R_TITLE), " infertop keys ");
	wd_put(w, r, 0, x, wd_attr(d, THEME_R_DIM), "(? or Esc closes) ");
	const int keycol = 14;
	int y = 0;
	for (int i = 0; i < KEY_ACT_N && y < in.h; i++, y++) {
		char line[256], kn[40];
		keys_help_line((enum key_action)i, d->ascii, keycol, line, sizeof line);
		/* Keys in their colour, then the text. */
		size_t klen = strcspn(line, " ");
		const struct key_def *k = keys_def((enum key_action)i);
		snprintf(kn, sizeof kn, "%.*s", (int)klen, line);
		int kx = wd_put(w, &in, y, 0, wd_attr(d, THEME_R_KEY), kn);
		if (k->alt) {
			char alt[16];
			keys_key_name(k->alt, d->ascii, alt, sizeof alt);
			wd_put(w, &in, y, kx + 1, wd_attr(d, THEME_R_KEY), alt);
		}
		wd_put(w, &in, y, keycol, wd_attr(d, THEME_R_NORMAL), k->help);
	}
	static const char *const notes[] = {
		"While typing a number: digits (and . for a rate), Backspace, Enter sets it, Esc cancels.",
		"Latency figures are in ms: window = the last --window seconds, run = since the start.",
		"A dash means unknown (no sample yet, or the server does not expose it), never zero.",
	};
	y++;
	for (size_t i = 0; i < sizeof notes / sizeof notes[0] && y < in.h; i++, y++)
		wd_put(w, &in, y, 0, wd_attr(d, THEME_R_DIM), notes[i]);
	if (y < in.h)
		wd_printf(w, &in, y, 0, wd_attr(d, THEME_R_DIM), "Theme: %s (t: next; man 5 infertop-theme)",
			  d->theme_name ? d->theme_name : "default");
}
